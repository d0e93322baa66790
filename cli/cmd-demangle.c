/*
 * `stallwatch demangle`: demangles Swift, C++ and Rust symbol names (and the
 * C names of Emacs's native Lisp code) given as
 * arguments, or filters standard input replacing every mangled name found
 * in the text (like c++filt and swift-demangle), so it can sit in a pipe
 * behind any log.  The demanglers live in lib/demangle*.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "demangle/demangle.h"

/* Input is read and filtered in pieces of this size, whatever the line length. */
#define CHUNK (64 * 1024)

static int write_out(const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n)
		return -EIO;
	return 0;
}

static int demangle_args(int argc, char **argv, unsigned flags)
{
	struct sw_buf out;
	sw_buf_init(&out, 16u << 20);
	for (int i = 0; i < argc; i++) {
		sw_buf_reset(&out);
		int r = sw_demangle(argv[i], flags, &out);
		if (r > 0)
			r = write_out(out.data, out.len);
		else
			r = write_out(argv[i], strlen(argv[i]));
		if (r < 0 || putchar('\n') == EOF)
			break;
	}
	sw_buf_finish(&out);
	return sw_cli_finish_stdout(SW_EXIT_OK);
}

static int demangle_stdin(unsigned flags)
{
	static char buf[2 * CHUNK];
	size_t have = 0;
	struct sw_buf out;
	sw_buf_init(&out, 16u << 20);
	int status = SW_EXIT_OK;
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sw_cli_error("cannot read standard input: %s", strerror(errno));
			status = SW_EXIT_INPUT;
			break;
		}
		have += (size_t)n;
		bool eof = n == 0;
		/* filter what cannot end inside a symbol; keep the rest for later */
		size_t take = eof ? have : sw_demangle_split(buf, have);
		if (take == 0 && have >= CHUNK)
			take = have; /* one "symbol" this long is not one */
		if (take) {
			sw_buf_reset(&out);
			if (sw_demangle_filter(buf, take, flags, &out) < 0 ||
			    write_out(out.data, out.len) < 0)
				break;
			memmove(buf, buf + take, have - take);
			have -= take;
			if (fflush(stdout) != 0)
				break;
		}
		if (eof)
			break;
	}
	sw_buf_finish(&out);
	return sw_cli_finish_stdout(status);
}

static int demangle_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	unsigned flags = 0;
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, true);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1)
		flags |= c == 's' ? SW_DEMANGLE_SIMPLIFIED : SW_DEMANGLE_NO_CXX;
	int i = optind;
	if (!r)
		r = sw_cli_check_args(cmd, argc - i);
	if (r)
		return r;
	if (i < argc)
		return demangle_args(argc - i, argv + i, flags);
	return demangle_stdin(flags);
}

static const struct sw_opt demangle_opts[] = {
    {"simplified", 's', NULL, "Swift names in the short style of swift-demangle --simplified",
     NULL},
    {"no-cxx", SW_OPT_NO_CXX, NULL, "leave C++ (Itanium) names alone", NULL},
    SW_OPT_END,
};

static const struct sw_opt *const demangle_tables[] = {demangle_opts, NULL};

const struct sw_cmd sw_cmd_demangle = {
    .name = "demangle",
    .usage = "[--simplified] [--no-cxx] [NAME ...]",
    .summary =
	"demangle Swift, C++, Rust and Emacs native-code names, or filter them in text on standard "
	"input",
    .options = demangle_tables,
    .min_args = 0,
    .max_args = -1,
    .run = demangle_run,
};
