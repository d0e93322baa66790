/*
 * `stallwatch symbolicate`: file addresses of one binary to functions,
 * files, lines and inlined calls, printed like llvm-symbolizer so the two
 * can be diffed, or as NDJSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "symbols/symbolicate.h"
#include "symbols/symsearch.h"

struct run {
	struct sw_symbolicator *sym;
	struct sw_image_ref ref;
	bool json;
	bool no_index;
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
		return sw_cli_fail(SW_FAIL_OUTPUT, r, "cannot print address 0x%llx: %s",
				   (unsigned long long)addr, strerror(-r));
	}
	fwrite(run->out.data, 1, run->out.len, stdout);
	return SW_EXIT_OK;
}

/*
 * Reads standard input in blocks, answers every complete line a block holds
 * at once (the library visits them in address order) and flushes before
 * waiting for more: a program driving us line by line still sees each
 * answer at once, and a long list goes fast.
 */
struct reader {
	char buf[1 << 20];
	size_t start, end;
	bool eof;
	unsigned long lineno;
	uint64_t addrs[1 << 19]; /* a line has at least 2 bytes */
	size_t n;
	struct sw_symbolicate_batch batch;
};

/*
 * The next complete line in the buffer (the last one at the end of input)
 * and its length, or NULL.
 */
static char *take_line(struct reader *rd, size_t *len)
{
	char *nl = memchr(rd->buf + rd->start, '\n', rd->end - rd->start);
	char *line = rd->buf + rd->start;
	if (nl) {
		*nl = '\0';
		rd->start = (size_t)(nl - rd->buf) + 1;
	} else if (rd->eof && rd->start < rd->end) {
		rd->buf[rd->end] = '\0';
		rd->start = rd->end;
	} else {
		return NULL;
	}
	rd->lineno++;
	*len = (size_t)(rd->buf + rd->start - line) - (nl != NULL);
	return line;
}

static int fill(struct reader *rd)
{
	memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
	rd->end -= rd->start;
	rd->start = 0;
	if (rd->end == sizeof(rd->buf) - 1)
		return -E2BIG;
	/* one read that may wait, then more only while it would not */
	for (bool first = true; rd->end < sizeof(rd->buf) - 1;) {
		if (!first) {
			struct pollfd p = {.fd = 0, .events = POLLIN};
			if (poll(&p, 1, 0) <= 0)
				return 0;
		}
		ssize_t n = read(0, rd->buf + rd->end, sizeof(rd->buf) - 1 - rd->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		first = false;
		rd->end += (size_t)n;
		if (n == 0) {
			rd->eof = true;
			return 0;
		}
	}
	return 0;
}

/*
 * At most this many addresses are answered at once: their frames (a few
 * hundred KiB) stay in the caches and are reused, where a whole block's
 * would take megabytes of fresh pages; the index makes a lookup cheap
 * wherever the address falls.
 */
#define SLICE 32768

/* Prints the answers of addrs[0..n), as many as the batch holds. */
static int print_slice(struct run *run, const struct sw_symbolicate_batch *b, const uint64_t *addrs,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sw_frame *f = b->frames + b->first[i];
		/*
		 * The frames were stored in address order and their names are all
		 * over the index: fetch every line of the frames of the address 16
		 * ahead, and the names of the one 8 ahead, whose frames are in.
		 */
		if (i + 16 < n) {
			const char *from = (const char *)(b->frames + b->first[i + 16]);
			const char *to =
			    (const char *)(b->frames + b->first[i + 16] + b->count[i + 16]);
			for (; from < to; from += 64)
				__builtin_prefetch(from);
			__builtin_prefetch(to - 1);
		}
		if (i + 8 < n && b->count[i + 8]) {
			const struct sw_frame *ahead = b->frames + b->first[i + 8];
			__builtin_prefetch(ahead->function);
			__builtin_prefetch(ahead->file);
		}
		int pr = run->json ? sw_symbolicate_print_json(addrs[i], f, b->count[i], &run->out)
				   : sw_symbolicate_print_text(f, b->count[i], &run->out);
		if (pr < 0) {
			return sw_cli_fail(SW_FAIL_OUTPUT, pr, "cannot print address 0x%llx: %s",
					   (unsigned long long)addrs[i], strerror(-pr));
		}
		if (run->out.len >= (1 << 16)) {
			fwrite(run->out.data, 1, run->out.len, stdout);
			sw_buf_reset(&run->out);
		}
	}
	return SW_EXIT_OK;
}

static int answer(struct run *run, struct reader *rd)
{
	int status = SW_EXIT_OK, r = 0;
	struct sw_error err = {0};
	sw_buf_reset(&run->out);
	for (size_t at = 0; status == SW_EXIT_OK && r == 0 && at < rd->n; at += SLICE) {
		size_t n = rd->n - at < SLICE ? rd->n - at : SLICE, done;
		r = sw_symbolicate_file_addrs(run->sym, &run->ref, rd->addrs + at, n, &rd->batch,
					      &done, &err);
		status = print_slice(run, &rd->batch, rd->addrs + at, done);
	}
	fwrite(run->out.data, 1, run->out.len, stdout);
	sw_buf_reset(&run->out);
	rd->n = 0;
	if (status == SW_EXIT_OK && r < 0) {
		sw_cli_error("cannot read '%s': %s", run->ref.path, sw_error_str(&err));
		return SW_EXIT_INPUT;
	}
	return status;
}

static int from_stdin(struct run *run)
{
	struct reader *rd = calloc(1, sizeof(*rd));
	if (!rd) {
		return sw_cli_fail(SW_FAIL_INPUT, -ENOMEM, "out of memory");
	}
	int status = SW_EXIT_OK, r = 0;
	while (status == SW_EXIT_OK) {
		char *line;
		size_t len;
		while (status == SW_EXIT_OK) {
			/* most lines are just an address; take_line() reads the others */
			size_t k = sw_symbolicate_scan_line(rd->buf + rd->start, rd->buf + rd->end,
							    &rd->addrs[rd->n]);
			if (k) {
				rd->start += k;
				rd->lineno++;
				rd->n++;
				continue;
			}
			if (!(line = take_line(rd, &len)))
				break;
			while (len > 0 && line[len - 1] == '\r')
				line[--len] = '\0';
			if (len == 0)
				continue;
			if (sw_symbolicate_parse_addr(line, &rd->addrs[rd->n]) < 0) {
				status = answer(run, rd);
				if (status == SW_EXIT_OK)
					sw_cli_error(
					    "cannot read standard input, line %lu: '%s' is not a "
					    "hexadecimal address",
					    rd->lineno, line);
				status = SW_EXIT_INPUT;
				break;
			}
			rd->n++;
		}
		if (status == SW_EXIT_OK && rd->n)
			status = answer(run, rd);
		if (status != SW_EXIT_OK || rd->eof)
			break;
		fflush(stdout);
		r = fill(rd);
		if (r < 0) {
			sw_cli_error("cannot read standard input, line %lu: %s", rd->lineno + 1,
				     r == -E2BIG ? "longer than the limit of 1048575 bytes"
						 : strerror(-r));
			status = SW_EXIT_INPUT;
		}
	}
	sw_symbolicate_batch_finish(&rd->batch);
	free(rd);
	return status;
}

/*
 * A first run's index (megabytes, synced before it is renamed into place)
 * is written by a detached child once every answer is out, so that the
 * command returns as soon as it has answered, and at the idle scheduling
 * class, so that it does not slow the next command down; where fork fails
 * the symbolicator writes it itself.
 */
static void save_in_background(struct sw_symbolicator *sym)
{
	if (!sw_symbolicator_index_pending(sym))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		/* housekeeping: it runs when nothing else wants the processor */
		struct sched_param none = {0};
		sched_setscheduler(0, SCHED_IDLE, &none);
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		sw_symbolicator_save_indexes(sym);
		_exit(0);
	}
	if (pid > 0)
		sw_symbolicator_set_cache_dir(sym, NULL); /* the child writes them */
}

static int symbolicate_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct run run = {0};
	unsigned flags = SW_SYMBOLICATE_DSYM_BESIDE_ONLY;
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, false);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		switch (c) {
		case 'e':
			run.ref.path = optarg;
			break;
		case SW_OPT_ARCH:
			run.ref.arch = optarg;
			break;
		case SW_OPT_DSYM:
			run.ref.debug_path = optarg;
			break;
		case SW_OPT_NO_INLINES:
			flags |= SW_SYMBOLICATE_NO_INLINES;
			break;
		case SW_OPT_NO_DEMANGLE:
			flags |= SW_SYMBOLICATE_NO_DEMANGLE;
			break;
		case SW_OPT_JSON:
			run.json = true;
			break;
		case SW_OPT_NO_INDEX:
			run.no_index = true;
			break;
		}
	}
	if (r)
		return r;
	if (!run.ref.path)
		return sw_cli_usage(cmd, "missing -e FILE");
	r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	if (sw_symbolicator_new(flags, &run.sym) < 0) {
		return sw_cli_fail(SW_FAIL_INPUT, -ENOMEM, "out of memory");
	}
	if (run.no_index)
		sw_symbolicator_set_cache_dir(run.sym, NULL);
	/* without --dsym, debug files are looked for where the symbol search looks */
	struct sw_symsearch *ss = NULL;
	if (!run.ref.debug_path && sw_symsearch_new(&ss) >= 0) {
		sw_symsearch_add_env(ss);
		sw_symsearch_add_host(ss);
		sw_symbolicator_set_symsearch(run.sym, ss);
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
	status = sw_cli_finish_stdout(status);
	save_in_background(run.sym);
	sw_symbolicator_free(run.sym);
	sw_symsearch_free(ss);
	return sw_cli_finish_stdout(status);
}

static const struct sw_opt symbolicate_opts[] = {
    {"exe", 'e', "FILE", "the binary (ELF, Mach-O or universal) the addresses belong to", NULL},
    {"arch", SW_OPT_ARCH, "ARCH", "the slice of a universal binary (arm64, arm64e, x86_64, ...)",
     NULL},
    {"dsym", SW_OPT_DSYM, "PATH",
     "the debug information: a dSYM bundle, its DWARF file, or a\nseparate ELF debug file", NULL},
    {"no-inlines", SW_OPT_NO_INLINES, NULL, "one frame per address: no inlined calls", NULL},
    {"no-demangle", SW_OPT_NO_DEMANGLE, NULL, "print names as the file has them", NULL},
    {"json", SW_OPT_JSON, NULL, "one JSON object per address (\"schema\":1, \"type\":\"address\")",
     NULL},
    {"no-index", SW_OPT_NO_INDEX, NULL,
     "neither read nor write the DWARF index and the symbol cache in the cache\nfolder (also: "
     "STALLWATCH_NO_INDEX=1)",
     NULL},
    SW_OPT_END,
};

static const struct sw_opt *const symbolicate_tables[] = {symbolicate_opts, NULL};

const struct sw_cmd sw_cmd_symbolicate = {
    .name = "symbolicate",
    .usage = "-e FILE [--arch ARCH] [--dsym PATH] [--no-inlines] [--no-demangle] [--json] "
	     "[--no-index] [ADDR ...]",
    .summary = "print the function, file, line and inlined calls of file addresses",
    .options = symbolicate_tables,
    .help = "ADDR: file (unslid) addresses in hexadecimal, with or without 0x, taken as\n"
	    "given; read from standard input, one per line, when none is given.\n"
	    "The DWARF of each binary is indexed once in $XDG_CACHE_HOME/stallwatch/dwarf\n"
	    "(~/.cache/stallwatch/dwarf) so that later runs skip parsing it.\n",
    .min_args = 0,
    .max_args = -1,
    .run = symbolicate_run,
};
