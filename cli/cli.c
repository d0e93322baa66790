/*
 * Helpers shared by the subcommands: one-line errors with a hint, colour
 * decisions, operand checks and the final flush of stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

int sw_cli_usage(const struct sw_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	sw_progress_clear();
	fprintf(stderr, "stallwatch %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'stallwatch %s --help'\n", cmd->name);
	return SW_EXIT_USAGE;
}

void sw_cli_error(const char *fmt, ...)
{
	va_list ap;
	sw_progress_clear();
	fputs("stallwatch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int sw_cli_fail(enum sw_failure what, int err, const char *fmt, ...)
{
	va_list ap;
	sw_progress_clear();
	fputs("stallwatch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return (int)sw_exit_status(what, err);
}

void sw_cli_warn(const char *fmt, ...)
{
	va_list ap;
	sw_progress_clear();
	fputs("stallwatch: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int sw_cli_check_args(const struct sw_cmd *cmd, int nargs)
{
	if (cmd->min_args >= 0 && nargs < cmd->min_args)
		return sw_cli_usage(cmd, "missing argument; usage: stallwatch %s %s", cmd->name,
				    cmd->usage);
	if (cmd->max_args >= 0 && nargs > cmd->max_args)
		return sw_cli_usage(cmd, "too many arguments");
	return 0;
}

int sw_cli_finish_stdout(int status)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return status;
	if (errno == EPIPE)
		return status;
	sw_cli_error("cannot write to standard output: %s", strerror(errno));
	return status ? status : (int)sw_exit_status(SW_FAIL_OUTPUT, -errno);
}

int sw_cli_parse_color(const char *arg, enum sw_color_mode *ret_mode)
{
	if (!arg || strcmp(arg, "always") == 0)
		*ret_mode = SW_COLOR_ALWAYS;
	else if (strcmp(arg, "never") == 0)
		*ret_mode = SW_COLOR_NEVER;
	else if (strcmp(arg, "auto") == 0)
		*ret_mode = SW_COLOR_AUTO;
	else
		return -EINVAL;
	return 0;
}

bool sw_cli_use_color(enum sw_color_mode mode, FILE *stream)
{
	if (mode != SW_COLOR_AUTO)
		return mode == SW_COLOR_ALWAYS;
	const char *no_color = getenv("NO_COLOR");
	if (no_color && no_color[0])
		return false;
	const char *term = getenv("TERM");
	if (term && strcmp(term, "dumb") == 0)
		return false;
	return isatty(fileno(stream));
}

int sw_cli_parse_uint(const struct sw_cmd *cmd, const char *option, const char *arg,
		      unsigned long max, unsigned long *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max)
		return sw_cli_usage(cmd, "invalid value '%s' for %s (expected 0 to %lu)", arg,
				    option, max);
	*ret = v;
	return 0;
}
