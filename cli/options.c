/*
 * The option tables of the subcommands turned into what getopt_long wants
 * and into the OPTIONS part of --help (see options.h).
 */
#include <string.h>

#include "cli.h"
#include "options.h"

static const struct sw_opt help_row = {"help", 'h', NULL, "show this help", NULL};

bool sw_opt_takes_file(const struct sw_opt *opt)
{
	return opt->arg && !opt->values &&
	       (strstr(opt->arg, "FILE") || strstr(opt->arg, "PATH") || strstr(opt->arg, "DIR"));
}

void sw_opt_each(const struct sw_cmd *cmd, void (*fn)(const struct sw_opt *opt, void *ctx),
		 void *ctx)
{
	for (size_t t = 0; cmd->options && cmd->options[t]; t++)
		for (const struct sw_opt *o = cmd->options[t]; o->name || o->help; o++)
			if (o->name)
				fn(o, ctx);
	fn(&help_row, ctx);
}

static void add_getopt(const struct sw_opt *opt, void *ctx)
{
	struct sw_getopt *g = ctx;
	size_t n = 0;
	while (g->longopts[n].name)
		n++;
	if (n == SW_GETOPT_MAX)
		return; /* caught by test-docs: the option would be missing from --help's parse */
	g->longopts[n] =
	    (struct option){opt->name, opt->arg ? required_argument : no_argument, NULL, opt->key};
	if (opt->key < 128) {
		size_t len = strlen(g->shortopts);
		g->shortopts[len++] = (char)opt->key;
		if (opt->arg)
			g->shortopts[len++] = ':';
		g->shortopts[len] = 0;
	}
}

void sw_getopt_init(struct sw_getopt *g, const struct sw_cmd *cmd, bool in_order)
{
	memset(g, 0, sizeof(*g));
	/* ':' first: a missing value is told apart from an unknown option */
	strcpy(g->shortopts, in_order ? "+:" : ":");
	sw_opt_each(cmd, add_getopt, g);
	optind = 1;
	opterr = 0;
}

int sw_getopt_next(struct sw_getopt *g, const struct sw_cmd *cmd, int argc, char **argv,
		   int *ret_key)
{
	int c = getopt_long(argc, argv, g->shortopts, g->longopts, NULL);
	if (c == -1)
		return 0;
	const char *last = argv[optind - 1];
	if (c == ':')
		return sw_cli_usage(cmd, "option '%s' needs a value", last);
	if (c == '?') {
		if (optopt && optopt < 128 && strncmp(last, "--", 2) != 0)
			return sw_cli_usage(cmd, "unknown option '-%c'", optopt);
		return sw_cli_usage(cmd, "unknown option '%s'", last);
	}
	*ret_key = c;
	return 1;
}

/* "  -S, --symbols PATH" or "      --format FORMAT" */
static int left_column(const struct sw_opt *o, char *buf, size_t size)
{
	char shortname[8] = "    ";
	if (o->key < 128)
		snprintf(shortname, sizeof(shortname), "-%c, ", o->key);
	return snprintf(buf, size, "  %s--%s%s%s", shortname, o->name, o->arg ? " " : "",
			o->arg ? o->arg : "");
}

#define HELP_COLUMN 26

static void print_row(const struct sw_opt *o, FILE *out)
{
	char left[96];
	int w = left_column(o, left, sizeof(left));
	fputs(left, out);
	const char *h = o->help;
	if (w + 2 > HELP_COLUMN)
		fputs("  ", out);
	else
		fprintf(out, "%*s", HELP_COLUMN - w, "");
	for (;;) {
		const char *nl = strchr(h, '\n');
		size_t len = nl ? (size_t)(nl - h) : strlen(h);
		fprintf(out, "%.*s\n", (int)len, h);
		if (!nl)
			break;
		h = nl + 1;
		fprintf(out, "%*s", HELP_COLUMN, "");
	}
}

void sw_opt_print_help(const struct sw_cmd *cmd, FILE *out)
{
	fputs("options:\n", out);
	print_row(&help_row, out);
	for (size_t t = 0; cmd->options && cmd->options[t]; t++)
		for (const struct sw_opt *o = cmd->options[t]; o->name || o->help; o++) {
			if (o->name)
				print_row(o, out);
			else
				fprintf(out, "%s\n", o->help);
		}
}
