/*
 * What every subcommand of the stallwatch command shares: its table entry and
 * the few helpers that keep messages, colour and exit statuses uniform.
 *
 * A subcommand lives in cli/cmd-<verb>.c and exports one `const struct
 * sw_cmd sw_cmd_<verb>`, listed once in sw_cmd_table[] (stallwatch.c).
 */
#ifndef SW_CLI_H
#define SW_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "options.h"
#include "status.h"

struct sw_cmd {
	const char *name;
	const char *usage;   /* the argument synopsis after the verb */
	const char *summary; /* one line for `stallwatch --help` */
	/* the option tables (options.h), NULL-terminated; --help is implied */
	const struct sw_opt *const *options;
	const char *help; /* printed by --help after the options: operands, environment */
	int min_args;     /* operands after options; -1 for no limit */
	int max_args;
	/* argv[0] is the verb; returns an exit status */
	int (*run)(const struct sw_cmd *cmd, int argc, char **argv);
};

extern const struct sw_cmd *const sw_cmd_table[];

const struct sw_cmd *sw_cmd_find(const char *name);

/* Prints "stallwatch VERB: MESSAGE" and the --help hint to stderr; returns 2. */
int sw_cli_usage(const struct sw_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "stallwatch: MESSAGE" to stderr. */
void sw_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "stallwatch: MESSAGE"; returns sw_exit_status(what, err). */
int sw_cli_fail(enum sw_failure what, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sw_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sw_cli_print_help(const struct sw_cmd *cmd, FILE *out);
/* Checks operand counts after option parsing; returns 0 or a usage error (2). */
int sw_cli_check_args(const struct sw_cmd *cmd, int nargs);
/* Flushes stdout; reports a write error (not a closed pipe) once. */
int sw_cli_finish_stdout(int status);

enum sw_color_mode { SW_COLOR_AUTO, SW_COLOR_ALWAYS, SW_COLOR_NEVER };
int sw_cli_parse_color(const char *arg, enum sw_color_mode *ret_mode);
bool sw_cli_use_color(enum sw_color_mode mode, FILE *stream);

/* Parses a non-negative integer option with a name for the error message. */
int sw_cli_parse_uint(const struct sw_cmd *cmd, const char *option, const char *arg,
		      unsigned long max, unsigned long *ret);

#endif
