/*
 * `stallwatch symbolicate`: file addresses of one binary to functions,
 * files, lines and inlined calls, printed like llvm-symbolizer so the two
 * can be diffed, or as NDJSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "symbolicate.h"

struct run {
	struct sw_symbolicator *sym;
	struct sw_image_ref ref;
	bool json;
	struct sw_buf out;
};

static int one(struct run *run, const char *text, const char *where)
{
	uint64_t addr;
	if (sw_symbolicate_parse_addr(text, &addr) < 0) {
		sw_cli_error("cannot read %s: '%s' is not a hexadecimal address", where, text);
		return SW_EXIT_INPUT;
	}
	struct sw_frame frames[SW_SYMBOLICATE_MAX_FRAMES];
	struct sw_error err = {0};
	int n = sw_symbolicate_file_addr(run->sym, &run->ref, addr, frames,
					 SW_SYMBOLICATE_MAX_FRAMES, &err);
	if (n < 0) {
		sw_cli_error("cannot read '%s': %s", run->ref.path, sw_error_str(&err));
		return SW_EXIT_INPUT;
	}
	sw_buf_reset(&run->out);
	int r = run->json ? sw_symbolicate_print_json(addr, frames, (size_t)n, &run->out)
			  : sw_symbolicate_print_text(frames, (size_t)n, &run->out);
	if (r < 0) {
		sw_cli_error("cannot print address 0x%llx: %s", (unsigned long long)addr,
			     strerror(-r));
		return SW_EXIT_INPUT;
	}
	fwrite(run->out.data, 1, run->out.len, stdout);
	return SW_EXIT_OK;
}

static int from_stdin(struct run *run)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	int status = SW_EXIT_OK;
	ssize_t len;
	while (status == SW_EXIT_OK && (len = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		char where[64];
		snprintf(where, sizeof(where), "standard input, line %lu", lineno);
		status = one(run, line, where);
		/* a reader driving us line by line (as llvm-symbolizer is driven) sees each answer */
		if (status == SW_EXIT_OK && fflush(stdout) != 0)
			break;
	}
	free(line);
	return status;
}

static int symbolicate_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"exe", required_argument, NULL, 'e'},
		{"arch", required_argument, NULL, 'a'},
		{"dsym", required_argument, NULL, 'd'},
		{"no-inlines", no_argument, NULL, 'I'},
		{"no-demangle", no_argument, NULL, 'D'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	struct run run = {0};
	unsigned flags = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "e:", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			run.ref.path = optarg;
			break;
		case 'a':
			run.ref.arch = optarg;
			break;
		case 'd':
			run.ref.debug_path = optarg;
			break;
		case 'I':
			flags |= SW_SYMBOLICATE_NO_INLINES;
			break;
		case 'D':
			flags |= SW_SYMBOLICATE_NO_DEMANGLE;
			break;
		case 'j':
			run.json = true;
			break;
		default:
			if (optopt)
				return sw_cli_usage(cmd, "option '-%c' is unknown or needs a value",
						    optopt);
			return sw_cli_usage(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!run.ref.path)
		return sw_cli_usage(cmd, "missing -e FILE");
	int r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	if (sw_symbolicator_new(flags, &run.sym) < 0) {
		sw_cli_error("out of memory");
		return SW_EXIT_INPUT;
	}
	const struct sw_object *obj;
	struct sw_error err = {0};
	int status = SW_EXIT_OK;
	if (sw_symbolicator_image(run.sym, &run.ref, &obj, &err) < 0) {
		sw_cli_error("cannot read '%s': %s", run.ref.path, sw_error_str(&err));
		status = SW_EXIT_INPUT;
	}
	sw_buf_init(&run.out, 0);
	if (status == SW_EXIT_OK && optind < argc) {
		for (int i = optind; i < argc && status == SW_EXIT_OK; i++) {
			char where[64];
			snprintf(where, sizeof(where), "argument %d", i - optind + 1);
			status = one(&run, argv[i], where);
		}
	} else if (status == SW_EXIT_OK) {
		status = from_stdin(&run);
	}
	sw_buf_finish(&run.out);
	sw_symbolicator_free(run.sym);
	return sw_cli_finish_stdout(status);
}

const struct sw_cmd sw_cmd_symbolicate = {
	.name = "symbolicate",
	.usage = "-e FILE [--arch ARCH] [--dsym PATH] [--no-inlines] [--no-demangle] [--json] "
		 "[ADDR ...]",
	.summary = "print the function, file, line and inlined calls of file addresses",
	.help = "  -e, --exe FILE    the binary (ELF, Mach-O or universal) the addresses belong to\n"
		"      --arch ARCH   the slice of a universal binary (arm64, arm64e, x86_64, ...)\n"
		"      --dsym PATH   the debug information: a dSYM bundle, its DWARF file, or a\n"
		"                    separate ELF debug file\n"
		"      --no-inlines  one frame per address: no inlined calls\n"
		"      --no-demangle print names as the file has them\n"
		"      --json        one JSON object per address (\"schema\":1, \"type\":\"address\")\n"
		"\n"
		"ADDR: file (unslid) addresses in hexadecimal, with or without 0x, taken as\n"
		"given; read from standard input, one per line, when none is given.\n",
	.min_args = 0,
	.max_args = -1,
	.run = symbolicate_run,
};
