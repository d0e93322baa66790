/*
 * stallwatch report: print recordings (.swtrace) and MetricKit hang
 * diagnostics (JSON) again, in any format and with any tree option.  A
 * recording goes through the same collector and output code as a live
 * session, so with --color=never it prints byte for byte what `run -o`
 * printed.  Several files merge into one output, stall ids qualified by
 * the device a recording came from ("UDID#3", as `attach --all-devices`
 * printed them) or else by the file's name ("run2#3").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "report/metrickit.h"
#include "output.h"
#include "wire/recording.h"
#include "render/render-stall.h"
#include "report/report.h"
#include "tree/tree.h"
#include "util/time-units.h"

#define SOURCE_MAX 128

/* "runs/run2.swtrace" -> "run2" */
static void source_name(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/');
	base = base && base[1] ? base + 1 : path;
	snprintf(out, size, "%s", base);
	char *dot = strrchr(out, '.');
	if (dot && dot != out)
		*dot = 0;
}

/* Whether the stall began within --duration of the agent's start. */
static bool in_duration(const struct sw_output_options *o, const struct sw_stalls *c,
			const struct sw_stall *st)
{
	return !o->duration_s ||
	       (double)sw_stalls_ns(c, st->start_time) <= o->duration_s * (double)SW_NS_PER_S;
}

/*
 * What report may write for what it reads (stallwatch-report(1), LIMITS):
 * recordings share frames between samples and stalls, so a few hundred
 * kilobytes can describe gigabytes of deep trees; this bounds the output
 * the way decompressors bound a bomb's ratio.  A real recording prints a
 * few times its size.
 */
#define OUTPUT_BASE  ((uint64_t)256 << 20)
#define OUTPUT_RATIO 64

struct budget {
	uint64_t read; /* bytes of the files before this one */
	bool spent;    /* past the limit: no further file is read */
};

/* Whether the results so far pass the limit for what has been read. */
static bool over_budget(struct sw_output *out, const struct budget *b, uint64_t read_here)
{
	return sw_output_written(out) > OUTPUT_BASE + OUTPUT_RATIO * (b->read + read_here);
}

static int output_limit(const char *path, const struct sw_recording *rec, const struct sw_stall *st,
			struct budget *b)
{
	b->spent = true;
	return sw_cli_fail(
	    SW_FAIL_INPUT, -E2BIG,
	    "cannot print '%s' past byte %llu (stall #%llu): more output than 256 MiB "
	    "and %d bytes for every byte read, a limit of stallwatch-report(1)",
	    path, (unsigned long long)sw_recording_offset(rec), (unsigned long long)st->id,
	    OUTPUT_RATIO);
}

/*
 * A limit (stallwatch-report(1), LIMITS) or memory ran out at the message
 * just read: one line naming it and where, and reading stops.
 */
static int over_limit(struct sw_output *out, const struct sw_stalls *c, const char *path,
		      const struct sw_recording *rec, const struct sw_stall *st, int e)
{
	if (e == -ENOMEM)
		return sw_cli_fail(SW_FAIL_INPUT, e, "out of memory reading '%s' at byte %llu",
				   path, (unsigned long long)sw_recording_offset(rec));
	const char *limit = st ? sw_profile_limit(sw_output_profile(out)) : sw_stalls_limit(c);
	char stall[48] = "";
	if (st)
		snprintf(stall, sizeof(stall), " (stall #%llu)", (unsigned long long)st->id);
	return sw_cli_fail(SW_FAIL_INPUT, e, "cannot read '%s' past byte %llu%s: %s%s", path,
			   (unsigned long long)sw_recording_offset(rec), stall,
			   e == -E2BIG && limit ? limit : strerror(-e),
			   e == -E2BIG ? ", a limit of stallwatch-report(1)" : "");
}

/*
 * Prints the stalls still open, cut off by the end of their agent's stream
 * (the recording's, or an exec's).  Returns an exit status, and
 * sets *full or *stop when the output or a limit ends the reading.
 */
static int print_open(struct sw_output *out, const struct sw_output_options *o, struct sw_stalls *c,
		      const char *path, struct sw_recording *rec, const char *source,
		      struct budget *budget, bool *full, bool *stop)
{
	const struct sw_stall *st;
	int status = SW_EXIT_OK;
	while (!*full && !*stop && (st = sw_stalls_flush(c))) {
		if (!in_duration(o, c, st))
			continue;
		int r = sw_output_stall(out, c, st, source);
		*full = r == 1;
		if (r < 0) {
			status = over_limit(out, c, path, rec, st, r);
			*stop = true;
		} else if (r == 0 && over_budget(out, budget, sw_recording_offset(rec))) {
			status = output_limit(path, rec, st, budget);
			*stop = true;
		}
	}
	return status;
}

/* Prints the stalls of rec, which it frees. */
static int recording(struct sw_output *out, const struct sw_output_options *o, const char *path,
		     struct sw_recording *rec, const char *source, bool summary,
		     struct budget *budget)
{
	/*
	 * A label or device (UDID) the recorder noted names the source better
	 * than the file, as the live stream named it; source is NULL for a lone
	 * file without one.
	 */
	char named[SOURCE_MAX];
	bool labelled = false;
	struct sw_stalls *c;
	struct sw_error err = {0};
	if (sw_stalls_new(&c) < 0) {
		sw_recording_free(rec);
		return sw_cli_fail(SW_FAIL_INPUT, -ENOMEM, "out of memory");
	}
	int status = SW_EXIT_OK;
	uint64_t stalls = 0;
	bool full = false, stop = false;
	for (;;) {
		struct sw_wire_msg m;
		int r = sw_recording_next(rec, &m, &err);
		if (r == 0)
			break;
		if (r < 0) {
			sw_cli_error("cannot read '%s': %s", path, sw_error_str(&err));
			status = SW_EXIT_INPUT;
			break;
		}
		if (m.type == SW_MSG_RECORD_INFO && m.record_info.value[0] &&
		    (!strcmp(m.record_info.key, "label") ||
		     (!strcmp(m.record_info.key, "udid") && !labelled))) {
			labelled |= !strcmp(m.record_info.key, "label");
			snprintf(named, sizeof(named), "%s", m.record_info.value);
			source = named;
		}
		/* another agent's hello (an exec): the stalls the last one left open end here */
		if (m.type == SW_MSG_HELLO && sw_stalls_info(c)->have_hello &&
		    (status = print_open(out, o, c, path, rec, source, budget, &full, &stop)) !=
			SW_EXIT_OK)
			break;
		if (full)
			break;
		const struct sw_stall *st = NULL;
		r = sw_stalls_feed(c, &m, &st);
		if (r == 1) {
			stalls++;
			if (in_duration(o, c, st)) {
				r = sw_output_stall(out, c, st, source);
				full = r == 1;
			}
		}
		if (r < 0) {
			if (st)
				stalls--; /* stopped at a limit: neither printed nor counted */
			status = over_limit(out, c, path, rec, st, r);
			stop = true;
			break;
		}
		if (r == 0 && st && over_budget(out, budget, sw_recording_offset(rec))) {
			status = output_limit(path, rec, st, budget);
			stop = true;
			break;
		}
		if (full)
			break;
	}
	/* past a limit the stalls still open are incomplete: left out */
	if (!full && !stop) {
		int e = print_open(out, o, c, path, rec, source, budget, &full, &stop);
		status = status == SW_EXIT_OK ? e : status;
	}
	const char *warning = sw_recording_warning(rec);
	/* a cut after whole stalls is worth their printing; one before any is bad input */
	if (warning && stalls == 0 && status == SW_EXIT_OK)
		status =
		    sw_cli_fail(SW_FAIL_INPUT, 0,
				"cannot read '%s': it ends early, before any complete stall: %s",
				path, warning);
	else if (warning)
		sw_output_warning(out, "'%s' ends early: %s", path, warning);
	if (summary && sw_stalls_info(c)->have_hello) {
		struct sw_buf b;
		sw_buf_init(&b, 0);
		if (sw_render_ndjson_summary(&b, c, stalls) == 0)
			sw_output_set_summary_extra(out, sw_report_json_fields(&b, "summary"));
		sw_buf_finish(&b);
	}
	budget->read += sw_recording_offset(rec);
	sw_stalls_free(c);
	sw_recording_free(rec);
	return status;
}

/* Reads fd to its end, after the bytes already in b. */
static int read_all(int fd, struct sw_buf *b, struct sw_error *err)
{
	for (;;) {
		int r = sw_buf_reserve(b, 65536);
		if (r < 0)
			return sw_error_set(err, r, "larger than %zu MiB", b->max >> 20);
		ssize_t n = read(fd, b->data + b->len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sw_error_set(err, -errno, "%s", strerror(errno));
		if (n == 0)
			return 0;
		b->len += (size_t)n;
	}
}

static int metrickit(struct sw_output *out, const char *path, const struct sw_buf *data,
		     const char *source, uint64_t *next_id)
{
	struct sw_profile *p = sw_output_profile(out);
	struct sw_error err = {0};
	size_t before = sw_profile_nstalls(p);
	int n = sw_metrickit_load((const char *)data->data, data->len, p, sw_output_report(out),
				  source, *next_id, &err);
	if (n < 0) {
		sw_cli_error("cannot read '%s': %s", path, sw_error_str(&err));
		return SW_EXIT_INPUT;
	}
	*next_id += (uint64_t)n;
	for (size_t i = before; i < sw_profile_nstalls(p); i++)
		if (sw_output_print(out, sw_profile_stall(p, i)) == 1)
			break;
	return SW_EXIT_OK;
}

/* Reads up to size bytes, fewer only at the end of the input. */
static ssize_t read_head(int fd, uint8_t *head, size_t size)
{
	size_t got = 0;
	while (got < size) {
		ssize_t n = read(fd, head + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * A recording starts with its magic; anything starting like JSON is
 * MetricKit.  The first bytes are read once and handed on, so standard input
 * ("-") can be either.
 */
static int one_file(struct sw_output *out, const struct sw_output_options *o, const char *path,
		    const char *source, bool summary, uint64_t *next_id, struct budget *budget)
{
	int fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
	uint8_t head[8];
	ssize_t got = fd < 0 ? -1 : read_head(fd, head, sizeof(head));
	if (got < 0) {
		sw_cli_error("cannot read '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return SW_EXIT_INPUT;
	}
	struct sw_error err = {0};
	if (!sw_metrickit_sniff(head, (size_t)got)) {
		struct sw_recording *rec;
		if (sw_recording_open_sniffed(fd, head, (size_t)got, &rec, &err) < 0) {
			sw_cli_error("cannot read '%s': %s", path, sw_error_str(&err));
			return SW_EXIT_INPUT;
		}
		return recording(out, o, path, rec, source, summary, budget);
	}
	struct sw_buf data;
	sw_buf_init(&data, SW_METRICKIT_MAX_INPUT);
	int r = sw_buf_append(&data, head, (size_t)got);
	if (r < 0)
		sw_error_set(&err, r, "out of memory");
	else
		r = read_all(fd, &data, &err);
	close(fd);
	int status;
	if (r < 0) {
		status =
		    sw_cli_fail(SW_FAIL_INPUT, r, "cannot read '%s': %s", path, sw_error_str(&err));
	} else {
		status = metrickit(out, path, &data, source, next_id);
	}
	sw_buf_finish(&data);
	return status;
}

static int report_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct sw_output_options o;
	sw_output_options_init(&o);
	int r = sw_output_parse(cmd, argc, argv, &o);
	if (!r)
		r = sw_cli_check_args(cmd, argc - optind);
	if (r) {
		sw_output_options_finish(&o);
		return r;
	}
	int nfiles = argc - optind;
	o.batch = true;
	struct sw_output *out;
	r = sw_output_new(&o, nfiles > 1, &out);
	if (r) {
		sw_output_options_finish(&o);
		return r;
	}
	int status = SW_EXIT_OK;
	uint64_t next_id = 1;
	struct budget budget = {0};
	for (int i = optind; i < argc && !sw_output_full(out) && !budget.spent; i++) {
		char source[SOURCE_MAX];
		source_name(argv[i], source, sizeof(source));
		int s = one_file(out, &o, argv[i], nfiles > 1 ? source : NULL, nfiles == 1,
				 &next_id, &budget);
		if (s && !status)
			status = s;
	}
	status = sw_output_finish(out, status);
	sw_output_free(out);
	sw_output_options_finish(&o);
	return status;
}

static const struct sw_opt *const report_tables[] = {sw_output_opts, NULL};

const struct sw_cmd sw_cmd_report = {
    .name = "report",
    .usage = "[options] FILE...",
    .summary = "print recordings and MetricKit hang diagnostics as call trees",
    .help = "FILE is a recording (.swtrace, from run -o or attach -o) or MetricKit JSON\n"
	    "(a call stack tree or a diagnostic payload); - reads standard input.\n",
    .options = report_tables,
    .min_args = 1,
    .max_args = -1,
    .run = report_run,
};
