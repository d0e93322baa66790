/*
 * Output options and the printing of stalls for run, attach and report
 * (see output.h).  Option values are checked here; everything about
 * formats lives in lib/ (render*.c, junit.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "baseline.h"
#include "progress.h"
#include "render/junit.h"
#include "output.h"
#include "report/report.h"
#include "symbols/symsearch.h"
#include "util/time-units.h"

struct sw_output {
	const struct sw_output_options *o;
	struct sw_render_options render;
	struct sw_profile *profile;
	struct sw_symsearch *search;
	struct sw_report *report;
	struct sw_renderer *renderer;
	struct sw_buf buf;
	FILE *file;    /* where results go */
	bool own_file; /* opened for --results: closed at the end */
	unsigned long printed;
	uint64_t written; /* bytes of results written */
	bool failed;
	bool write_error;
	/* --thread NAME: whether a stall had it, else the names seen, for the message */
	bool thread_found;
	char threads_seen[256];
	struct sw_baseline *baseline;
	unsigned long known;          /* stalls printed whose signature the baseline holds */
	struct sw_examples *examples; /* NULL: the format reads every stall at its end */
};

const struct sw_opt sw_output_opts[] = {
    SW_OPT_HEADING("output:"),
    {"format", SW_OPT_FORMAT, "FORMAT",
     "tree (default), sample, ndjson, json, folded,\nspeedscope or pprof; see stallwatch-output(7)",
     "tree sample ndjson json folded speedscope pprof"},
    {"color", SW_OPT_COLOR, "WHEN", "auto (default), always or never", "auto always never"},
    {"invert", SW_OPT_INVERT, NULL, "bottom-up trees: leaf functions first, callers below", NULL},
    {"min-percent", SW_OPT_MIN_PERCENT, "P", "hide tree nodes under P% of the stall (default 0.5)",
     NULL},
    {"max-depth", SW_OPT_MAX_DEPTH, "N", "cut trees at depth N, charging deeper frames to it",
     NULL},
    {"hide-system", SW_OPT_HIDE_SYSTEM, NULL,
     "charge frames of system and toolchain libraries to their callers", NULL},
    {"flatten-recursion", SW_OPT_FLATTEN_RECURSION, NULL,
     "show a function calling itself directly once", NULL},
    {"focus", SW_OPT_FOCUS, "REGEX", "keep only samples with a function matching REGEX", NULL},
    {"exclude", SW_OPT_EXCLUDE, "REGEX", "drop samples with a function matching REGEX", NULL},
    {"thread", SW_OPT_THREAD, "WHICH", "main (default), all, or a thread name", NULL},
    {"full-names", SW_OPT_FULL_NAMES, NULL, "full Swift names instead of simplified ones", NULL},
    {"symbols", 'S', "PATH", "look for binaries and debug files in PATH too", NULL},
    {"require-symbols", SW_OPT_REQUIRE_SYMBOLS, NULL,
     "exit 6 when a frame in a known image has no name", NULL},
    {"perf-map", SW_OPT_PERF_MAP, "FILE",
     "name JIT code from the perf map FILE (/tmp/perf-PID.map;\n"
     "run reads the program's own)",
     NULL},
    {"results", SW_OPT_RESULTS, "FILE",
     "write the results to FILE (- for standard output) instead of\n"
     "standard output (run: standard error)",
     NULL},
    SW_OPT_HEADING("CI:"),
    {"duration", SW_OPT_DURATION, "SECONDS",
     "watch this long (report: stalls that began within it)", NULL},
    {"max-stalls", SW_OPT_MAX_STALLS, "N", "stop after N stalls", NULL},
    {"fail-on-stall", SW_OPT_FAIL_ON_STALL, NULL, "exit 1 when there was any stall", NULL},
    {"fail-if-longer-than", SW_OPT_FAIL_IF_LONGER_THAN, "MS",
     "exit 1 when a stall lasted longer than MS", NULL},
    {"junit", SW_OPT_JUNIT, "FILE", "write a JUnit XML report, one test case per signature", NULL},
    {"baseline", SW_OPT_BASELINE, "FILE",
     "fail and report in --junit only stalls whose signature is not\n"
     "in FILE (the NDJSON or recording of an earlier run)",
     NULL},
    SW_OPT_END,
};

void sw_output_options_init(struct sw_output_options *o)
{
	*o = (struct sw_output_options){.format = SW_FORMAT_TREE, .color = SW_COLOR_AUTO};
	sw_render_options_init(&o->render);
}

void sw_output_options_finish(struct sw_output_options *o)
{
	if (o->have_focus)
		regfree(&o->focus);
	if (o->have_exclude)
		regfree(&o->exclude);
	o->have_focus = o->have_exclude = false;
}

static int parse_regex(const struct sw_cmd *cmd, const char *opt, const char *arg, regex_t *re,
		       bool *have)
{
	if (*have)
		regfree(re);
	*have = false;
	int e = regcomp(re, arg, REG_EXTENDED | REG_NOSUB);
	if (e) {
		char msg[128];
		regerror(e, re, msg, sizeof(msg));
		return sw_cli_usage(cmd, "invalid regular expression '%s' for %s: %s", arg, opt,
				    msg);
	}
	*have = true;
	return 0;
}

static int parse_double(const struct sw_cmd *cmd, const char *opt, const char *arg, double max,
			double *ret)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0) || v > max)
		return sw_cli_usage(cmd, "invalid value '%s' for %s (expected 0 to %g)", arg, opt,
				    max);
	*ret = v;
	return 0;
}

int sw_output_option(const struct sw_cmd *cmd, int c, const char *arg, struct sw_output_options *o)
{
	struct sw_tree_options *t = &o->render.tree;
	unsigned long v;
	switch (c) {
	case SW_OPT_FORMAT:
		if (sw_format_parse(arg, &o->format) < 0)
			return sw_cli_usage(cmd, "unknown format '%s' (%s)", arg, sw_format_list());
		return 0;
	case SW_OPT_COLOR:
		if (sw_cli_parse_color(arg, &o->color) < 0)
			return sw_cli_usage(
			    cmd, "invalid value '%s' for --color (auto, always, never)", arg);
		return 0;
	case SW_OPT_INVERT:
		t->invert = true;
		return 0;
	case SW_OPT_MIN_PERCENT:
		return parse_double(cmd, "--min-percent", arg, 100, &t->min_percent);
	case SW_OPT_MAX_DEPTH:
		if (sw_cli_parse_uint(cmd, "--max-depth", arg, SW_TREE_MAX_DEPTH, &v))
			return SW_EXIT_USAGE;
		t->max_depth = (uint32_t)v;
		return 0;
	case SW_OPT_HIDE_SYSTEM:
		t->hide_system = true;
		return 0;
	case SW_OPT_FLATTEN_RECURSION:
		t->flatten_recursion = true;
		return 0;
	case SW_OPT_FOCUS:
		return parse_regex(cmd, "--focus", arg, &o->focus, &o->have_focus);
	case SW_OPT_EXCLUDE:
		return parse_regex(cmd, "--exclude", arg, &o->exclude, &o->have_exclude);
	case SW_OPT_THREAD:
		t->thread = !strcmp(arg, "main")  ? SW_THREAD_MAIN
			    : !strcmp(arg, "all") ? SW_THREAD_ALL
						  : SW_THREAD_NAME;
		t->thread_name = arg;
		return 0;
	case SW_OPT_FULL_NAMES:
		t->full_names = true;
		return 0;
	case SW_OPT_DURATION:
		if (parse_double(cmd, "--duration", arg, 365 * 86400.0, &o->duration_s))
			return SW_EXIT_USAGE;
		if (o->duration_s <= 0)
			return sw_cli_usage(cmd, "--duration must be more than 0");
		return 0;
	case SW_OPT_MAX_STALLS:
		if (sw_cli_parse_uint(cmd, "--max-stalls", arg, 1000000000, &o->max_stalls))
			return SW_EXIT_USAGE;
		if (o->max_stalls == 0)
			return sw_cli_usage(cmd, "--max-stalls must be at least 1");
		return 0;
	case SW_OPT_FAIL_ON_STALL:
		o->fail_on_stall = true;
		return 0;
	case SW_OPT_FAIL_IF_LONGER_THAN:
		if (sw_cli_parse_uint(cmd, "--fail-if-longer-than", arg, 86400000,
				      &o->fail_longer_ms))
			return SW_EXIT_USAGE;
		o->have_fail_longer = true;
		return 0;
	case SW_OPT_JUNIT:
		o->junit = arg;
		return 0;
	case 'S':
		if (o->nsymbols == SW_OUTPUT_MAX_SYMBOL_PATHS)
			return sw_cli_usage(cmd, "too many --symbols paths (at most %d)",
					    SW_OUTPUT_MAX_SYMBOL_PATHS);
		o->symbols[o->nsymbols++] = arg;
		return 0;
	case SW_OPT_REQUIRE_SYMBOLS:
		o->require_symbols = true;
		return 0;
	case SW_OPT_PERF_MAP:
		o->perf_map = arg;
		return 0;
	case SW_OPT_RESULTS:
		o->results = arg;
		return 0;
	case SW_OPT_BASELINE:
		o->baseline = arg;
		return 0;
	}
	return 1;
}

int sw_output_parse(const struct sw_cmd *cmd, int argc, char **argv, struct sw_output_options *o)
{
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, false);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		r = sw_output_option(cmd, c, optarg, o);
		if (r)
			return r == 1 ? sw_cli_usage(cmd, "unknown option") : r;
	}
	return r;
}

/*
 * Writes what b holds and empties it (a write error is reported at the
 * end).  One write(2) for all of it, not stdio's: fwrite() sent a record
 * longer than its buffer in two, and a program run with its output on the
 * same pipe or terminal (run --results -) printed its lines in between,
 * into the middle of an NDJSON record.
 */
static void write_out(struct sw_output *out, struct sw_buf *b)
{
	sw_progress_clear(); /* results and progress may share a terminal */
	if (fflush(out->file) != 0)
		out->write_error = true;
	int fd = fileno(out->file);
	for (size_t done = 0; done < b->len;) {
		ssize_t n = write(fd, b->data + done, b->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			out->write_error = true;
			break;
		}
		done += (size_t)n;
	}
	out->written += b->len;
	sw_buf_reset(b);
}

static void flush(struct sw_output *out)
{
	write_out(out, &out->buf);
}

/*
 * The renderers' drain: writes what they wrote so far, or a long text they
 * hand over whole instead of copying it into the buffer.
 */
static int drain(void *ctx, struct sw_buf *b)
{
	write_out(ctx, b);
	return 0;
}

int sw_output_new(const struct sw_output_options *o, bool qualify, struct sw_output **ret)
{
	struct sw_output *out = calloc(1, sizeof(*out));
	if (!out)
		return sw_cli_fail(SW_FAIL_OUTPUT, -ENOMEM, "out of memory");
	out->o = o;
	out->file = o->results_to_stderr ? stderr : stdout;
	if (o->results && strcmp(o->results, "-") != 0) {
		out->file = fopen(o->results, "we");
		if (!out->file) {
			int e = -errno;
			free(out);
			return sw_cli_fail(SW_FAIL_OUTPUT, e, "cannot write '%s': %s", o->results,
					   strerror(-e));
		}
		out->own_file = true;
	} else if (o->results) {
		out->file = stdout;
	}
	if (o->baseline) {
		int s = sw_baseline_load(o->baseline, o, &out->baseline);
		if (s) {
			if (out->own_file)
				fclose(out->file);
			free(out);
			return s;
		}
	}
	out->render = o->render;
	out->render.qualify = qualify;
	out->render.color = sw_cli_use_color(o->color, out->file);
	out->render.tree.focus = o->have_focus ? &o->focus : NULL;
	out->render.tree.exclude = o->have_exclude ? &o->exclude : NULL;
	out->render.drain = drain;
	out->render.drain_ctx = out;
	sw_buf_init(&out->buf, 0);
	int e = sw_profile_new(&out->profile);
	if (e >= 0)
		e = sw_symsearch_new(&out->search);
	for (size_t i = 0; i < o->nsymbols && e >= 0; i++) {
		struct stat st;
		/* a missing path may be a typo or a folder not mounted: the rest still helps */
		if (stat(o->symbols[i], &st) < 0)
			sw_cli_warn("-S '%s': %s; searching the other places", o->symbols[i],
				    strerror(errno));
		else
			e = sw_symsearch_add_path(out->search, o->symbols[i]);
	}
	if (e >= 0) {
		sw_symsearch_add_env(out->search);
		sw_symsearch_add_host(out->search);
		e = sw_report_new(out->profile, out->search, &out->report);
	}
	if (e >= 0)
		sw_report_set_raw_stacks(out->report, sw_format_has_raw_stacks(o->format));
	struct stat st_map;
	if (e >= 0 && o->perf_map && stat(o->perf_map, &st_map) < 0)
		sw_cli_warn("--perf-map '%s': %s; JIT frames stay addresses", o->perf_map,
			    strerror(errno));
	if (e >= 0 && (o->perf_map || o->perf_map_live))
		e = sw_report_set_perf_map(out->report, o->perf_map);
	if (e >= 0)
		e = sw_renderer_new(o->format, &out->render, &out->renderer);
	if (e >= 0 && !sw_format_rereads_stalls(o->format))
		e = sw_examples_new(&out->examples);
	if (e < 0) {
		sw_output_free(out);
		return sw_cli_fail(SW_FAIL_OUTPUT, e, "cannot prepare the output: %s",
				   strerror(-e));
	}
	*ret = out;
	return 0;
}

void sw_output_free(struct sw_output *out)
{
	if (!out)
		return;
	sw_renderer_free(out->renderer);
	sw_examples_free(out->examples);
	sw_report_free(out->report);
	sw_symsearch_free(out->search);
	sw_profile_free(out->profile);
	sw_buf_finish(&out->buf);
	if (out->own_file)
		fclose(out->file);
	sw_baseline_free(out->baseline);
	free(out);
}

uint64_t sw_output_written(const struct sw_output *out)
{
	return out->written;
}

static bool stall_fails(const struct sw_output_options *o, const struct sw_tree_stall *s)
{
	if (o->fail_on_stall)
		return true;
	return o->have_fail_longer &&
	       s->info.duration_ns > (uint64_t)o->fail_longer_ms * SW_NS_PER_MS;
}

void sw_output_set_summary_extra(struct sw_output *out, const char *json)
{
	sw_profile_set_summary_extra(out->profile, json);
}

struct sw_profile *sw_output_profile(struct sw_output *out)
{
	return out->profile;
}

struct sw_report *sw_output_report(struct sw_output *out)
{
	return out->report;
}

int sw_output_stall(struct sw_output *out, const struct sw_stalls *c, const struct sw_stall *st,
		    const char *source)
{
	if (sw_output_full(out))
		return 1;
	struct sw_tree_stall *ts;
	/* the first stall of an image may start a long symbol search */
	sw_progress("symbolicating stall %lu", out->printed + 1);
	int e = sw_report_add_stall(out->report, c, st, source, &ts);
	if (!out->o->batch)
		sw_progress_done(); /* live: the wait for the next stall is no work */
	if (e < 0)
		return e;
	return sw_output_print(out, ts);
}

/* Notes whether ts has the thread --thread NAME asks for, or which names it has. */
static void note_threads(struct sw_output *out, const struct sw_tree_stall *ts)
{
	const struct sw_tree_options *t = &out->o->render.tree;
	if (t->thread != SW_THREAD_NAME || out->thread_found)
		return;
	for (uint32_t i = 0; i < ts->nthreads; i++) {
		const char *name = ts->threads[i].name[0] ? ts->threads[i].name : "(unnamed)";
		if (strcmp(name, t->thread_name) == 0) {
			out->thread_found = true;
			return;
		}
		char *seen = out->threads_seen;
		size_t len = strlen(seen), n = strlen(name);
		char quoted[96];
		snprintf(quoted, sizeof(quoted), "'%s'", name);
		if (!strstr(seen, quoted) && len + n + 5 < sizeof(out->threads_seen))
			snprintf(seen + len, sizeof(out->threads_seen) - len, "%s%s",
				 len ? ", " : "", quoted);
	}
}

int sw_output_print(struct sw_output *out, struct sw_tree_stall *ts)
{
	int e;
	if (sw_output_full(out))
		return 1;
	note_threads(out, ts);
	out->printed++;
	if (out->baseline &&
	    sw_baseline_has(out->baseline, sw_tree_stall_signature(out->profile, ts)))
		out->known++; /* a known hang: it fails nothing */
	else
		out->failed |= stall_fails(out->o, ts);
	e = sw_renderer_stall(out->renderer, out->profile, ts, &out->buf);
	flush(out);
	/* printed (ndjson and json stream their stall objects): nothing reads it again */
	if (sw_format_has_raw_stacks(out->o->format))
		sw_tree_stall_drop_extra_json(out->profile, ts);
	/* the summary and --junit read only examples again: the others' samples go */
	if (out->examples)
		sw_examples_printed(out->examples, out->profile, ts);
	if (e < 0)
		return e;
	return sw_output_full(out) ? 1 : 0;
}

bool sw_output_full(const struct sw_output *out)
{
	return out->o->max_stalls && out->printed >= out->o->max_stalls;
}

void sw_output_warning(struct sw_output *out, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sw_cli_warn("%s", text);
	if (sw_renderer_warning(out->renderer, text, &out->buf) >= 0)
		flush(out);
}

bool sw_output_failed(const struct sw_output *out)
{
	return out->failed;
}

static bool known_signature(const void *ctx, uint64_t sig)
{
	return sw_baseline_has(ctx, sig);
}

static int write_junit(struct sw_output *out)
{
	struct sw_buf x;
	sw_buf_init(&x, 0);
	char stamp[32], host[256] = "";
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = 0;
	struct sw_junit_options jo = {
	    .timestamp = stamp,
	    .hostname = host,
	    .fail_on_stall = out->o->fail_on_stall || !out->o->have_fail_longer,
	    .fail_longer_ns =
		out->o->have_fail_longer ? (uint64_t)out->o->fail_longer_ms * SW_NS_PER_MS : 0,
	    .qualify = out->render.qualify,
	    .known = out->baseline ? known_signature : NULL,
	    .known_ctx = out->baseline,
	};
	int e = sw_render_junit(out->profile, &jo, &x);
	FILE *f = e < 0 ? NULL : fopen(out->o->junit, "w");
	if (f) {
		if (fwrite(x.data, 1, x.len, f) != x.len)
			e = -EIO;
		if (fclose(f) != 0)
			e = -errno;
	} else if (e >= 0) {
		e = -errno;
	}
	if (e < 0)
		sw_cli_error("cannot write '%s': %s", out->o->junit, strerror(-e));
	sw_buf_finish(&x);
	return e;
}

/* "sub_1a2b" is the symbolicator's name for a function start with no name. */
static bool synthetic_name(const char *name)
{
	if (strncmp(name, "sub_", 4) != 0 || !name[4])
		return false;
	return strspn(name + 4, "0123456789abcdef") == strlen(name + 4);
}

/*
 * For --require-symbols: counts the frames of the printed stalls that lie
 * in a known image yet have no name (none, or a sub_<hex> stand-in), and
 * names the first.  Frames outside every image (JIT code) do not count, nor
 * does the vDSO, whose symbols no file on disk holds.
 */
static size_t unnamed_frames(struct sw_output *out, char *example, size_t size)
{
	size_t n = 0;
	for (uint32_t id = 0; id < sw_profile_nframes(out->profile); id++) {
		const struct sw_tree_frame *f = sw_profile_get_frame(out->profile, id);
		if (!f || !f->image || (f->linkage && !synthetic_name(f->linkage)))
			continue;
		const struct sw_tree_image *im = sw_profile_get_image(out->profile, f->image);
		if (!im || strncmp(im->name, "linux-vdso", 10) == 0 ||
		    strncmp(im->name, "linux-gate", 10) == 0)
			continue;
		if (n++ == 0 && f->linkage)
			snprintf(example, size, "%s in %s", f->linkage, im->name);
		else if (n == 1)
			snprintf(example, size, "0x%llx in %s", (unsigned long long)f->address,
				 im->name);
	}
	return n;
}

/* A results file that could not be written fails the command (a closed pipe does not). */
static int finish_file(struct sw_output *out, int status)
{
	if (out->file == stdout)
		return status; /* sw_cli_finish_stdout's */
	bool bad = fflush(out->file) != 0 || ferror(out->file) || out->write_error;
	if (out->own_file) {
		bad |= fclose(out->file) != 0;
		out->own_file = false;
		out->file = stderr;
	}
	if (!bad || errno == EPIPE)
		return status;
	int s = sw_cli_fail(SW_FAIL_OUTPUT, -errno, "cannot write '%s': %s",
			    out->o->results ? out->o->results : "standard error", strerror(errno));
	return status ? status : s;
}

int sw_output_finish(struct sw_output *out, int status)
{
	sw_progress_done();
	/* every stall is in: the end of documents and the summary build trees in their room */
	sw_report_drop_caches(out->report);
	int e = sw_renderer_end(out->renderer, out->profile, &out->buf);
	flush(out);
	if (e < 0) {
		int s = sw_cli_fail(SW_FAIL_OUTPUT, e, "cannot render the %s output: %s",
				    sw_format_name(out->o->format), strerror(-e));
		if (!status)
			status = s;
	}
	const char *missing = sw_report_missing(out->report);
	if (missing)
		fprintf(stderr, "stallwatch: warning: symbols not found for:\n%s", missing);
	sw_buf_reset(&out->buf);
	if (sw_report_split_missing(out->report, &out->buf))
		fprintf(stderr,
			"stallwatch: warning: split DWARF not found (frames there have no "
			"inlined calls):\n%s",
			sw_buf_str(&out->buf));
	sw_buf_reset(&out->buf);
	struct sw_summary sum;
	if (sw_summary_compute(out->profile, &sum) >= 0) {
		sw_buf_reset(&out->buf);
		struct sw_render_options human = out->render;
		human.color = false;
		if (sw_summary_text(out->profile, &sum, &human, &out->buf) >= 0)
			fwrite(out->buf.data, 1, out->buf.len, stderr);
		sw_buf_reset(&out->buf);
	}
	if (out->baseline)
		fprintf(stderr, "stallwatch: %lu of %lu stall%s known from the baseline '%s'\n",
			out->known, out->printed, out->printed == 1 ? "" : "s", out->o->baseline);
	if (out->o->junit && (e = write_junit(out)) < 0 && !status)
		status = sw_exit_status(SW_FAIL_OUTPUT, e);
	status = finish_file(out, status);
	status = sw_cli_finish_stdout(status);
	if (status)
		return status;
	const struct sw_tree_options *t = &out->o->render.tree;
	if (t->thread == SW_THREAD_NAME && out->printed && !out->thread_found)
		return sw_cli_fail(
		    SW_FAIL_USAGE, 0,
		    "--thread: no stall has a thread named '%s' (threads: %s; "
		    "threads besides the stalled one are sampled with --all-threads)",
		    t->thread_name, out->threads_seen);
	if (out->o->require_symbols) {
		char example[256];
		size_t n = unnamed_frames(out, example, sizeof(example));
		if (n)
			return sw_cli_fail(SW_FAIL_SYMBOLS, 0,
					   "--require-symbols: %zu frame%s in known images %s no "
					   "name (%s)",
					   n, n == 1 ? "" : "s", n == 1 ? "has" : "have", example);
		if (missing)
			return SW_EXIT_SYMBOLS;
	}
	return out->failed ? SW_EXIT_STALLS : SW_EXIT_OK;
}
