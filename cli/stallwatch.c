/*
 * The stallwatch command: the table of subcommands and the dispatcher.
 *
 * Each verb lives in its own cmd-<verb>.c; this file only finds it, handles
 * the global --help and --version, and suggests the nearest verb for a typo.
 */
#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commit.h"
#include "config.h"
#include "wire/wire.h"

extern const struct sw_cmd sw_cmd_help;
extern const struct sw_cmd sw_cmd_devices;
extern const struct sw_cmd sw_cmd_demangle;
extern const struct sw_cmd sw_cmd_symbolicate;
extern const struct sw_cmd sw_cmd_run;
extern const struct sw_cmd sw_cmd_attach;
extern const struct sw_cmd sw_cmd_report;
extern const struct sw_cmd sw_cmd_demo;
extern const struct sw_cmd sw_cmd_completion;
extern const struct sw_cmd sw_cmd_doctor;
extern const struct sw_cmd sw_cmd_inject;

const struct sw_cmd *const sw_cmd_table[] = {
    &sw_cmd_help,   &sw_cmd_demangle, &sw_cmd_symbolicate, &sw_cmd_devices,
    &sw_cmd_run,    &sw_cmd_attach,   &sw_cmd_report,      &sw_cmd_demo,
    &sw_cmd_doctor, &sw_cmd_inject,   &sw_cmd_completion,  NULL,
};

static const char *progname = "stallwatch";

const struct sw_cmd *sw_cmd_find(const char *name)
{
	for (size_t i = 0; sw_cmd_table[i]; i++)
		if (strcmp(sw_cmd_table[i]->name, name) == 0)
			return sw_cmd_table[i];
	return NULL;
}

/* Damerau-free Levenshtein distance, enough to catch a typo in a verb. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static const char *nearest_verb(const char *name)
{
	const char *best = NULL;
	size_t best_distance = SIZE_MAX;
	for (size_t i = 0; sw_cmd_table[i]; i++) {
		const char *verb = sw_cmd_table[i]->name;
		size_t d = edit_distance(name, verb);
		if (strncmp(name, verb, strlen(name)) == 0 && strlen(name) >= 2)
			d = 1;
		if (d < best_distance) {
			best_distance = d;
			best = verb;
		}
	}
	return best_distance <= 2 ? best : NULL;
}

static void print_main_help(FILE *out)
{
	fprintf(out, "usage: %s [--version] [--help] <command> [<args>]\n\n", progname);
	fprintf(out, "Find out why an app's main thread stops answering.\n\ncommands:\n");
	for (size_t i = 0; sw_cmd_table[i]; i++)
		fprintf(out, "  %-12s %s\n", sw_cmd_table[i]->name, sw_cmd_table[i]->summary);
	fprintf(out,
		"\nRun '%s help <command>' or '%s <command> --help' for a command's options.\n"
		"See stallwatch(1).\n",
		progname, progname);
}

#ifndef SW_HAVE_JANSSON
#define SW_HAVE_JANSSON 0
#endif

/* What this build can do, as +name or -name (what `meson setup` summarises). */
static const struct {
	const char *name;
	bool built;
} features[] = {
    {"device", SW_HAVE_DEVICE},    {"debuginfod", SW_HAVE_DEBUGINFOD},
    {"pprof-gzip", SW_HAVE_ZLIB},  {"metrickit", SW_HAVE_JANSSON},
    {"libiberty", SW_HAVE_IBERTY},
};

static void print_version(void)
{
	printf("stallwatch %s (commit %s, protocol %d)\nfeatures:", SW_VERSION, SW_COMMIT,
	       SW_WIRE_PROTOCOL);
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		printf(" %c%s", features[i].built ? '+' : '-', features[i].name);
	putchar('\n');
}

void sw_cli_print_help(const struct sw_cmd *cmd, FILE *out)
{
	fprintf(out, "usage: %s %s %s\n\n%s\n", progname, cmd->name, cmd->usage, cmd->summary);
	fputc('\n', out);
	sw_opt_print_help(cmd, out);
	if (cmd->help && cmd->help[0])
		fprintf(out, "\n%s", cmd->help);
	fprintf(out, "\nSee stallwatch-%s(1).\n", cmd->name);
}

static int help_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0) {
		const struct sw_cmd *verb = sw_cmd_find(argv[1]);
		if (!verb) {
			const char *near = nearest_verb(argv[1]);
			if (near)
				return sw_cli_usage(cmd, "unknown command '%s'; did you mean '%s'?",
						    argv[1], near);
			return sw_cli_usage(cmd, "unknown command '%s'", argv[1]);
		}
		sw_cli_print_help(verb, stdout);
		return sw_cli_finish_stdout(SW_EXIT_OK);
	}
	if (argc > 2)
		return sw_cli_usage(cmd, "too many arguments");
	print_main_help(stdout);
	return sw_cli_finish_stdout(SW_EXIT_OK);
}

const struct sw_cmd sw_cmd_help = {
    .name = "help",
    .usage = "[COMMAND]",
    .summary = "show the help of the command or of one subcommand",
    .min_args = 0,
    .max_args = 1,
    .run = help_run,
};

int main(int argc, char **argv)
{
	/* A closed pipe ends us quietly through EPIPE on write, not a signal. */
	signal(SIGPIPE, SIG_IGN);
#if defined(__GLIBC__)
	/*
	 * Blocks of a megabyte and more are mapped on their own, always: a
	 * table that doubles frees its old copy to the system, not into a hole
	 * in the heap, where glibc's moving threshold put it (20 MB of holes
	 * in a long report).  Buffers that large are kept for reuse instead.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif

	if (argc < 2) {
		print_main_help(stderr);
		return SW_EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
		print_main_help(stdout);
		return sw_cli_finish_stdout(SW_EXIT_OK);
	}
	if (strcmp(verb, "--version") == 0 || strcmp(verb, "-V") == 0) {
		print_version();
		return sw_cli_finish_stdout(SW_EXIT_OK);
	}
	if (verb[0] == '-') {
		sw_cli_error("unknown option '%s'", verb);
		fprintf(stderr, "try '%s --help'\n", progname);
		return SW_EXIT_USAGE;
	}
	const struct sw_cmd *cmd = sw_cmd_find(verb);
	if (!cmd) {
		const char *near = nearest_verb(verb);
		if (near)
			sw_cli_error("'%s' is not a command; did you mean '%s'?", verb, near);
		else
			sw_cli_error("'%s' is not a command", verb);
		fprintf(stderr, "try '%s --help'\n", progname);
		return SW_EXIT_USAGE;
	}
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			sw_cli_print_help(cmd, stdout);
			return sw_cli_finish_stdout(SW_EXIT_OK);
		}
	}
	return cmd->run(cmd, argc - 1, argv + 1);
}
