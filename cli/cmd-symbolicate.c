/*
 * `stallwatch symbolicate`: file addresses of one binary to functions,
 * files, lines and inlined calls, printed like llvm-symbolizer so the two
 * can be diffed, or as NDJSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "symbols/symbolicate.h"
#include "symbols/symsearch.h"
#include "util/thread.h"

struct helper;

struct run {
	struct sw_symbolicator *sym;
	struct sw_symsearch *ss;
	unsigned flags;
	struct sw_image_ref ref;
	bool json;
	bool no_index;
	struct sw_buf out;
	struct helper *helper; /* answers part of each large block */
	bool helper_tried;
	struct share *share; /* the block shared with it */
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

/* The buffer of standard output. */
#define OUT_BUFFER (256 << 10)

/* What one fill() reads at most, unless a line is longer. */
#define BLOCK (256 << 10)

static int fill(struct reader *rd)
{
	memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
	rd->end -= rd->start;
	rd->start = 0;
	if (rd->end == sizeof(rd->buf) - 1)
		return -E2BIG;
	/*
	 * A block at a time, the whole buffer only for a line longer than a
	 * block: fewer fresh pages for the text and its addresses, which cost
	 * more than the reads.
	 */
	size_t limit = rd->end < BLOCK ? BLOCK : sizeof(rd->buf) - 1;
	/* one read that may wait, then more only while it would not */
	for (bool first = true; rd->end < limit;) {
		if (!first) {
			struct pollfd p = {.fd = 0, .events = POLLIN};
			if (poll(&p, 1, 0) <= 0)
				return 0;
		}
		ssize_t n = read(0, rd->buf + rd->end, limit - rd->end);
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
/* Appends the answers of addrs[0..n) to out, writing out whenever it is large when flush is set. */
/* One address's answer, written out whenever the buffer is large when flush is set. */
static int print_answer(bool json, uint64_t addr, const struct sw_frame *f, size_t n,
			struct sw_buf *out, bool flush)
{
	int pr = json ? sw_symbolicate_print_json(addr, f, n, out)
		      : sw_symbolicate_print_text(f, n, out);
	if (flush && out->len >= (1 << 16)) {
		fwrite(out->data, 1, out->len, stdout);
		sw_buf_reset(out);
	}
	return pr;
}

static int print_slice(bool json, const struct sw_symbolicate_batch *b, const uint64_t *addrs,
		       size_t n, struct sw_buf *out, bool flush, size_t *ret_printed)
{
	size_t i;
	int pr = 0;
	for (i = 0; i < n && pr >= 0; i++) {
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
		pr = print_answer(json, addrs[i], f, b->count[i], out, flush);
	}
	*ret_printed = pr < 0 ? i - 1 : i;
	return pr;
}

/* What answering a range of addresses came to. */
struct answers {
	int r;        /* 0, or the lookup's -errno (err says more) */
	int pr;       /* 0, or printing's -errno */
	uint64_t bad; /* the address that could not be printed */
	struct sw_error err;
};

/*
 * Addresses whose ranges are found together, and how far ahead of its
 * turn a range's names are fetched.
 */
#define TABLE_SLICE 512
#define AHEAD       8

/*
 * Answers addrs[0..n) from the image's range table, in input order: a
 * lookup there costs the same wherever the address falls, so there is
 * nothing to sort and no frames to keep.  The ranges of a slice are found
 * first, together, so that their loads from memory overlap.
 */
static void answer_table(struct sw_symbolicator *sym, const struct sw_symbolicate_table *t,
			 bool json, const uint64_t *addrs, size_t n, struct sw_buf *out, bool flush,
			 struct answers *a)
{
	struct sw_frame frames[SW_SYMBOLICATE_MAX_FRAMES];
	uint32_t ranges[TABLE_SLICE];
	for (size_t at = 0; at < n; at += TABLE_SLICE) {
		size_t k = n - at < TABLE_SLICE ? n - at : TABLE_SLICE;
		const uint64_t *v = addrs + at;
		sw_symbolicate_table_find(t, v, k, ranges);
		for (size_t i = 0; i < k; i++) {
			if (i + AHEAD < k)
				sw_symbolicate_table_prefetch(t, ranges[i + AHEAD]);
			int got = sw_symbolicate_table_frames(sym, t, ranges[i], v[i], frames);
			int pr = print_answer(json, v[i], frames, (size_t)got, out, flush);
			if (pr < 0) {
				a->pr = pr;
				a->bad = v[i];
				return;
			}
		}
	}
}

/*
 * Answers addrs[0..n) slice by slice, up to the first that fails,
 * appending to out (written whenever it is large when flush is set); from
 * the range table t when it is given (another symbolicator's, which the
 * threads share), else from sym's own.
 */
static void answer_range(struct sw_symbolicator *sym, const struct sw_image_ref *ref,
			 const struct sw_symbolicate_table *t, bool json, const uint64_t *addrs,
			 size_t n, struct sw_symbolicate_batch *batch, struct sw_buf *out,
			 bool flush, struct answers *a)
{
	*a = (struct answers){0};
	if (!t)
		t = sw_symbolicator_table(sym, ref, NULL);
	if (t) {
		answer_table(sym, t, json, addrs, n, out, flush, a);
		return;
	}
	for (size_t at = 0; at < n && !a->r && !a->pr; at += SLICE) {
		size_t k = n - at < SLICE ? n - at : SLICE, done, printed;
		a->r = sw_symbolicate_file_addrs(sym, ref, addrs + at, k, batch, &done, &a->err);
		a->pr = print_slice(json, batch, addrs + at, done, out, flush, &printed);
		if (a->pr < 0)
			a->bad = addrs[at + printed];
	}
}

/*
 * A block of addresses shared out between the main thread and the
 * helper's (below), CHUNK addresses at a time: each answers the chunks it
 * takes with its own symbolicator into a buffer of the chunk's, and
 * whoever finishes a chunk writes out, in input order, every chunk done so
 * far, up to the first that failed.  Taking chunks as they come keeps both
 * busy to the end, however unevenly they go.
 */
#define CHUNK 2048
/* A read this large starts the helper: a list of addresses, not a program asking one by one. */
#define HELPER_READ (64 << 10)

/* Output buffers, kept from block to block. */
struct spare {
	struct sw_buf buf;
	struct spare *next;
};

struct chunk {
	struct spare *out; /* NULL: none could be had */
	bool done;
	struct answers a;
};

/* The most chunks a block has: the reader's addresses. */
#define MAX_CHUNKS ((1u << 19) / CHUNK + 1)

struct share {
	pthread_mutex_t lock;
	pthread_cond_t more; /* the helper waits here for addresses being read */
	const struct sw_image_ref *ref;
	const struct sw_symbolicate_table *table; /* the main thread's, read by both */
	bool json;
	const uint64_t *addrs;
	size_t n;       /* addresses read so far */
	bool complete;  /* all of them */
	size_t next;    /* the next chunk to take */
	size_t written; /* chunks written out */
	size_t failed;  /* the first chunk that failed, SIZE_MAX while none has */
	struct spare *spares;
	struct chunk chunks[MAX_CHUNKS];
};

/* Writes out the chunks done from the first not written yet. Called locked. */
static void write_done(struct share *sh)
{
	while (sh->written < sh->next && sh->written <= sh->failed &&
	       sh->chunks[sh->written].done) {
		struct spare *sp = sh->chunks[sh->written++].out;
		if (!sp)
			continue;
		fwrite(sp->buf.data, 1, sp->buf.len, stdout);
		sp->next = sh->spares;
		sh->spares = sp;
	}
}

/*
 * Takes and answers chunks of sh with sym until none is left, waiting for
 * addresses still being read (only the helper calls it before they all are).
 */
static void share_work(struct share *sh, struct sw_symbolicator *sym,
		       struct sw_symbolicate_batch *batch)
{
	pthread_mutex_lock(&sh->lock);
	while (sh->next < sh->failed) {
		size_t ready = sh->complete ? (sh->n + CHUNK - 1) / CHUNK : sh->n / CHUNK;
		if (sh->next >= ready) {
			if (sh->complete)
				break;
			pthread_cond_wait(&sh->more, &sh->lock);
			continue;
		}
		size_t k = sh->next++, at = k * CHUNK;
		size_t len = sh->n - at < CHUNK ? sh->n - at : CHUNK;
		struct spare *sp = sh->spares;
		if (sp)
			sh->spares = sp->next;
		else if ((sp = calloc(1, sizeof(*sp))))
			sw_buf_init(&sp->buf, 0);
		pthread_mutex_unlock(&sh->lock);

		struct answers a = {.pr = -ENOMEM, .bad = sh->addrs[at]};
		if (sp) {
			sw_buf_reset(&sp->buf);
			sw_buf_reserve(&sp->buf, len * 96);
			answer_range(sym, sh->ref, sh->table, sh->json, sh->addrs + at, len, batch,
				     &sp->buf, false, &a);
		}

		pthread_mutex_lock(&sh->lock);
		sh->chunks[k] = (struct chunk){.out = sp, .done = true, .a = a};
		if ((a.r || a.pr) && k < sh->failed)
			sh->failed = k;
		write_done(sh);
	}
	pthread_mutex_unlock(&sh->lock);
}

/*
 * The helper: a thread with a symbolicator of its own, which takes part in
 * every block shared while it runs.  Only when the image came whole from
 * the cache folder (sw_symbolicator_image_cached()): opening it again then
 * costs a millisecond, where a first run would parse DWARF twice (it
 * shares its parsing out among the processors instead).  It is started
 * when input comes in large reads and opens its image while the main
 * thread reads the addresses; a block shared before it is ready goes on
 * without it.
 */
struct helper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct share *share; /* posted by the main thread, taken by the helper */
	bool busy;           /* the helper is working on a block */
	bool quit;
	/* the helper's own */
	unsigned flags;
	const struct sw_image_ref *ref;
	bool table; /* the image has a range table: the blocks bring it, no image to open */
	struct sw_symsearch *ss; /* only while it opens the image, which the main thread has done */
	struct sw_symbolicator *sym;
	struct sw_symbolicate_batch batch;
};

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	bool ok = sw_symbolicator_new(h->flags, &h->sym) == 0;
	if (ok) {
		sw_symbolicator_set_symsearch(h->sym, h->ss);
		ok = h->table || sw_symbolicator_image_cached(h->sym, h->ref);
	}
	pthread_mutex_lock(&h->lock);
	while (ok && !h->quit) {
		if (!h->share) {
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		struct share *sh = h->share;
		h->share = NULL;
		h->busy = true;
		pthread_mutex_unlock(&h->lock);
		share_work(sh, h->sym, &h->batch);
		pthread_mutex_lock(&h->lock);
		h->busy = false;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	if (h->sym)
		sw_symbolicator_set_cache_dir(h->sym, NULL); /* it read nothing worth keeping */
	sw_symbolicator_free(h->sym);
	sw_symbolicate_batch_finish(&h->batch);
	return NULL;
}

/* Starts the helper once, when the image is cached and there is another processor. */
static void helper_start(struct run *run)
{
	if (run->helper_tried)
		return;
	run->helper_tried = true;
	if (sw_processors() < 2 || !sw_symbolicator_image_cached(run->sym, &run->ref))
		return;
	struct helper *h = calloc(1, sizeof(*h));
	if (!h)
		return;
	h->flags = run->flags;
	h->ref = &run->ref;
	h->table = sw_symbolicator_table(run->sym, &run->ref, NULL) != NULL;
	h->ss = run->ss;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	if (sw_thread_start(&h->thread, helper_main, h) != 0) {
		free(h);
		return;
	}
	run->helper = h;
}

/* Tells the helper to end once it is done, so that it frees what it has while we free ours. */
static void helper_quit(struct helper *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->quit = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static void helper_free(struct helper *h)
{
	if (!h)
		return;
	helper_quit(h);
	pthread_join(h->thread, NULL);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->cond);
	free(h);
}

/*
 * Shares out the block about to be read with the helper, which answers
 * its chunks as they are read; NULL when there is no helper.
 */
static struct share *share_begin(struct run *run, struct reader *rd)
{
	struct helper *h = run->helper;
	if (!h)
		return NULL;
	struct share *sh = run->share;
	if (!sh) {
		if (!(sh = run->share = calloc(1, sizeof(*sh))))
			return NULL;
		pthread_mutex_init(&sh->lock, NULL);
		pthread_cond_init(&sh->more, NULL);
		sh->ref = &run->ref;
		sh->table = sw_symbolicator_table(run->sym, &run->ref, NULL);
		sh->json = run->json;
	}
	sh->addrs = rd->addrs;
	sh->n = sh->next = sh->written = 0;
	sh->complete = false;
	sh->failed = SIZE_MAX;
	memset(sh->chunks, 0, sizeof(sh->chunks));
	pthread_mutex_lock(&h->lock);
	h->share = sh;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return sh;
}

/* Another chunk's addresses are read. */
static void share_more(struct share *sh, size_t n)
{
	pthread_mutex_lock(&sh->lock);
	sh->n = n;
	pthread_cond_broadcast(&sh->more);
	pthread_mutex_unlock(&sh->lock);
}

/* All n addresses are read: answers what the helper has not taken, then waits for it. */
static void share_end(struct run *run, struct share *sh, struct reader *rd, struct answers *ret)
{
	struct helper *h = run->helper;
	pthread_mutex_lock(&sh->lock);
	sh->n = rd->n;
	sh->complete = true;
	pthread_cond_broadcast(&sh->more);
	pthread_mutex_unlock(&sh->lock);

	share_work(sh, run->sym, &rd->batch);

	/* withdrawn if the helper has not taken it; else wait for its last chunk */
	pthread_mutex_lock(&h->lock);
	h->share = NULL;
	while (h->busy)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	*ret = sh->failed != SIZE_MAX ? sh->chunks[sh->failed].a : (struct answers){0};
}

static void share_free(struct share *sh)
{
	if (!sh)
		return;
	while (sh->spares) {
		struct spare *next = sh->spares->next;
		sw_buf_finish(&sh->spares->buf);
		free(sh->spares);
		sh->spares = next;
	}
	pthread_mutex_destroy(&sh->lock);
	pthread_cond_destroy(&sh->more);
	free(sh);
}

/* Answers the block read, with the helper when it was shared (sh). */
static int answer(struct run *run, struct reader *rd, struct share *sh)
{
	struct answers a;
	sw_buf_reset(&run->out);
	if (sh)
		share_end(run, sh, rd, &a);
	else
		answer_range(run->sym, &run->ref, NULL, run->json, rd->addrs, rd->n, &rd->batch,
			     &run->out, true, &a);
	fwrite(run->out.data, 1, run->out.len, stdout);
	sw_buf_reset(&run->out);
	rd->n = 0;
	if (a.pr < 0) {
		return sw_cli_fail(SW_FAIL_OUTPUT, a.pr, "cannot print address 0x%llx: %s",
				   (unsigned long long)a.bad, strerror(-a.pr));
	}
	if (a.r < 0) {
		sw_cli_error("cannot read '%s': %s", run->ref.path, sw_error_str(&a.err));
		return SW_EXIT_INPUT;
	}
	return SW_EXIT_OK;
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
		/* a large block is answered by the helper too, as it is read */
		struct share *sh = rd->end - rd->start >= HELPER_READ ? share_begin(run, rd) : NULL;
		while (status == SW_EXIT_OK) {
			/* most lines are just an address; take_line() reads the others */
			size_t k = sw_symbolicate_scan_line(rd->buf + rd->start, rd->buf + rd->end,
							    &rd->addrs[rd->n]);
			if (k) {
				rd->start += k;
				rd->lineno++;
			} else {
				if (!(line = take_line(rd, &len)))
					break;
				while (len > 0 && line[len - 1] == '\r')
					line[--len] = '\0';
				if (len == 0)
					continue;
				if (sw_symbolicate_parse_addr(line, &rd->addrs[rd->n]) < 0) {
					status = answer(run, rd, sh);
					sh = NULL;
					if (status == SW_EXIT_OK)
						sw_cli_error(
						    "cannot read standard input, line %lu: '%s' "
						    "is not a hexadecimal address",
						    rd->lineno, line);
					status = SW_EXIT_INPUT;
					break;
				}
			}
			if (++rd->n % CHUNK == 0 && sh)
				share_more(sh, rd->n);
		}
		if (status == SW_EXIT_OK && (rd->n || sh))
			status = answer(run, rd, sh);
		if (status != SW_EXIT_OK || rd->eof)
			break;
		fflush(stdout);
		r = fill(rd);
		if (r == 0 && rd->end - rd->start >= HELPER_READ)
			helper_start(run);
		if (r < 0) {
			sw_cli_error("cannot read standard input, line %lu: %s", rd->lineno + 1,
				     r == -E2BIG ? "longer than the limit of 1048575 bytes"
						 : strerror(-r));
			status = SW_EXIT_INPUT;
		}
	}
	helper_quit(run->helper);
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

/* Split DWARF whose .dwo files or package were not found: the answers lack its functions. */
static void warn_split(const struct sw_symbolicator *sym)
{
	struct sw_buf miss;
	sw_buf_init(&miss, 0);
	if (sw_symbolicator_split_missing(sym, &miss))
		fprintf(stderr,
			"stallwatch: warning: split DWARF not found (their addresses have the line "
			"table's file and line only, no inlined calls):\n%s",
			sw_buf_str(&miss));
	sw_buf_finish(&miss);
}

static int symbolicate_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct run run = {0};
	/* the range tables are written by a child in the background (save_in_background()) */
	unsigned flags = SW_SYMBOLICATE_DSYM_BESIDE_ONLY | SW_SYMBOLICATE_TABLES;
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
	run.flags = flags;
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
	run.ss = ss;
	struct sw_error err = {0};
	int status = SW_EXIT_OK;
	/* opened now to name what is wrong at once; with a range table, nothing else is read */
	if (!sw_symbolicator_table(run.sym, &run.ref, &err) && err.code < 0) {
		sw_cli_error("cannot read '%s': %s", run.ref.path, sw_error_str(&err));
		status = SW_EXIT_INPUT;
	}
	sw_buf_init(&run.out, 0);
	/*
	 * Answers leave in writes of OUT_BUFFER bytes, not a 4 KiB flush and
	 * a write of whole blocks for every chunk: a write costs the kernel
	 * as much as 20 KB of copying, and an answer is flushed anyway
	 * before more input is waited for.
	 */
	static char out_buffer[OUT_BUFFER];
	setvbuf(stdout, out_buffer, _IOFBF, sizeof(out_buffer));
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
	warn_split(run.sym);
	helper_free(run.helper);
	share_free(run.share);
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
     "neither read nor write the DWARF index, the symbol cache and the range\ntable in the "
     "cache folder (also: STALLWATCH_NO_INDEX=1)",
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
	    "(~/.cache/stallwatch/dwarf) so that later runs skip parsing it, and its answers\n"
	    "by address range are kept in .../stallwatch/ranges for later runs to read.\n",
    .min_args = 0,
    .max_args = -1,
    .run = symbolicate_run,
};
