/*
 * The options of each subcommand, as data: one row of {long name, key,
 * argument, help} per option.  From these rows come the getopt_long table
 * and short option string, the OPTIONS part of `--help`, and the bash, zsh
 * and fish completions (completion.c), so the three cannot drift;
 * tests/test-docs.py holds the man pages to --help.
 *
 * A key is the short option's letter when there is one, else a named
 * SW_OPT_* value above 255, so the parsers switch on names, not numbers.
 */
#ifndef SW_CLI_OPTIONS_H
#define SW_CLI_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

enum sw_opt_key {
	SW_OPT_FIRST_LONG = 256,
	/* output (output.c) */
	SW_OPT_FORMAT,
	SW_OPT_COLOR,
	SW_OPT_INVERT,
	SW_OPT_MIN_PERCENT,
	SW_OPT_MAX_DEPTH,
	SW_OPT_HIDE_SYSTEM,
	SW_OPT_FLATTEN_RECURSION,
	SW_OPT_FOCUS,
	SW_OPT_EXCLUDE,
	SW_OPT_THREAD,
	SW_OPT_FULL_NAMES,
	SW_OPT_DURATION,
	SW_OPT_MAX_STALLS,
	SW_OPT_FAIL_ON_STALL,
	SW_OPT_FAIL_IF_LONGER_THAN,
	SW_OPT_JUNIT,
	SW_OPT_REQUIRE_SYMBOLS,
	SW_OPT_PERF_MAP,
	SW_OPT_BASELINE,
	/* watch (watch.c) */
	SW_OPT_THRESHOLD,
	SW_OPT_INTERVAL,
	SW_OPT_ALL_THREADS,
	SW_OPT_TOKEN,
	/* run */
	SW_OPT_EXE,
	SW_OPT_RESULTS,
	/* attach to a device (attach-device.c) */
	SW_OPT_WAIT,
	SW_OPT_ALL_DEVICES,
	SW_OPT_LAUNCH,
	SW_OPT_DYLIB,
	/* inject */
	SW_OPT_WEAK,
	SW_OPT_REMOVE,
	/* devices, symbolicate, demangle */
	SW_OPT_JSON,
	SW_OPT_ARCH,
	SW_OPT_DSYM,
	SW_OPT_NO_INLINES,
	SW_OPT_NO_DEMANGLE,
	SW_OPT_NO_CXX,
	SW_OPT_NO_INDEX,
};

struct sw_opt {
	/*
	 * NULL with help set: a heading ("CI:") printed before the rows after
	 * it; NULL with help NULL: the end of the table.
	 */
	const char *name;
	int key;          /* a letter for -X, else an SW_OPT_* value */
	const char *arg;  /* the argument's name in --help, NULL for none */
	const char *help; /* '\n' starts a continuation line */
	/* what the argument can be, for completion: space-separated words,
	   or NULL for anything (a file when arg names one) */
	const char *values;
};

#define SW_OPT_HEADING(text)                                                                       \
	{                                                                                          \
		NULL, 0, NULL, text, NULL                                                          \
	}
#define SW_OPT_END                                                                                 \
	{                                                                                          \
		NULL, 0, NULL, NULL, NULL                                                          \
	}

/* Whether the argument is completed as a file name (FILE, PATH, DIR). */
bool sw_opt_takes_file(const struct sw_opt *opt);

#define SW_GETOPT_MAX 64

/* The getopt_long tables built from a command's option tables. */
struct sw_getopt {
	struct option longopts[SW_GETOPT_MAX + 1];
	char shortopts[2 * SW_GETOPT_MAX + 2];
};

struct sw_cmd;

/*
 * Builds g from cmd->options; in_order stops at the first operand (run's
 * program, demangle's names) instead of permuting.  Resets optind.
 */
void sw_getopt_init(struct sw_getopt *g, const struct sw_cmd *cmd, bool in_order);
/*
 * The next option's key into *ret_key: 1, or 0 at the end of the options,
 * or the usage status (2) of an unknown option or a missing value, reported.
 */
int sw_getopt_next(struct sw_getopt *g, const struct sw_cmd *cmd, int argc, char **argv,
		   int *ret_key);

/* Prints the option rows of cmd, headings included, as --help shows them. */
void sw_opt_print_help(const struct sw_cmd *cmd, FILE *out);

/* Calls fn for every option row of cmd (headings skipped), --help last. */
void sw_opt_each(const struct sw_cmd *cmd, void (*fn)(const struct sw_opt *opt, void *ctx),
		 void *ctx);

#endif
