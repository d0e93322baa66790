/*
 * The stream loop of `run` and `attach` (see watch.h): session messages go
 * to the recording byte for byte, and through the stall collector to the
 * renderer, one stall at a time, flushed as it completes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wire/recording.h"
#include "render/render-stall.h"
#include "report/report.h"
#include "tree/tree.h"
#include "wire/stalls.h"
#include "watch.h"
#include "util/time-units.h"

void sw_watch_options_init(struct sw_watch_options *o)
{
	*o = (struct sw_watch_options){0};
	sw_output_options_init(&o->out);
}

const struct sw_opt sw_watch_opts[] = {
    {"threshold", SW_OPT_THRESHOLD, "MS", "report iterations busy this long (default 250)", NULL},
    {"interval", SW_OPT_INTERVAL, "MS", "sampling interval (default 10, at least 1)", NULL},
    {"all-threads", SW_OPT_ALL_THREADS, NULL, "sample every thread of the process during a stall",
     NULL},
    {"output", 'o', "FILE", "also record the stream to FILE (.swtrace)", NULL},
    {"token", SW_OPT_TOKEN, "TOKEN", "the token the agent expects", NULL},
    SW_OPT_END,
};

int sw_watch_option(const struct sw_cmd *cmd, int c, const char *arg, struct sw_watch_options *o)
{
	unsigned long v;
	int r = sw_output_option(cmd, c, arg, &o->out);
	if (r != 1)
		return r;
	switch (c) {
	case SW_OPT_THRESHOLD:
		if (sw_cli_parse_uint(cmd, "--threshold", arg, 3600000, &v))
			return SW_EXIT_USAGE;
		if (v == 0)
			return sw_cli_usage(cmd, "--threshold must be at least 1");
		o->threshold_ms = v;
		return 0;
	case SW_OPT_INTERVAL:
		if (sw_cli_parse_uint(cmd, "--interval", arg, 10000, &v))
			return SW_EXIT_USAGE;
		if (v == 0)
			return sw_cli_usage(cmd, "--interval must be at least 1");
		o->interval_ms = v;
		return 0;
	case SW_OPT_ALL_THREADS:
		o->all_threads = true;
		return 0;
	case 'o':
		o->output = arg;
		return 0;
	case SW_OPT_TOKEN:
		o->token = arg;
		return 0;
	}
	return sw_cli_usage(cmd, "unknown option");
}

/* The collector's own summary fields go into the NDJSON summary object. */
static void summary_extra(struct sw_output *out, const struct sw_stalls *c, uint64_t stalls)
{
	struct sw_buf b;
	sw_buf_init(&b, 0);
	if (sw_render_ndjson_summary(&b, c, stalls) == 0)
		sw_output_set_summary_extra(out, sw_report_json_fields(&b, "summary"));
	sw_buf_finish(&b);
}

/* "0 stalls" also when nothing was watched: says which, and what to do. */
static void say_watched(const struct sw_stalls *c, uint64_t stalls)
{
	uint64_t first_ns;
	enum sw_stalls_watched w = sw_stalls_watched(c, &first_ns);
	if (w == SW_WATCHED_NEVER)
		fprintf(
		    stderr,
		    "stallwatch: nothing was watched: the program never waited in an event loop "
		    "the agent sees (poll, epoll, select or the explicit hooks)\n");
	else if (w == SW_WATCHED_LATE)
		fprintf(
		    stderr,
		    "stallwatch: its loop first waited %.0f ms after the start: the time before "
		    "was not watched%s\n",
		    first_ns / 1e6, stalls ? "" : " (0 stalls covers the rest only)");
	const char *advice = sw_stalls_watched_advice(w);
	if (advice)
		fprintf(stderr, "stallwatch: %s\n", advice);
}

/* Several streams may share one output (attach --all-devices). */
static void lock(const struct sw_watch_options *o)
{
	if (o->shared_lock)
		pthread_mutex_lock(o->shared_lock);
}

static void unlock(const struct sw_watch_options *o)
{
	if (o->shared_lock)
		pthread_mutex_unlock(o->shared_lock);
}

static void record_device(struct sw_recording_writer *rec, const struct sw_watch_options *o)
{
	if (!rec || !o->device_udid)
		return;
	sw_recording_writer_info(rec, "udid", o->device_udid);
	if (o->device_name && o->device_name[0])
		sw_recording_writer_info(rec, "device_name", o->device_name);
}

/* The limits already warned about: each is said once per stream. */
struct warned {
	const char *limit[8];
	size_t n;
};

/*
 * A limit of stallwatch-report(1) reached (e, -E2BIG, with its words in
 * limit): a warning the first time, and the stream goes on.  Running out of
 * memory is said once too, and makes the status 8.
 */
static void over_limit(struct sw_output *out, const struct sw_watch_options *o, struct warned *w,
		       const char *what, const char *limit, int e, int *status)
{
	if (e != -E2BIG || !limit)
		limit = strerror(-e);
	for (size_t i = 0; i < w->n; i++)
		if (w->limit[i] == limit)
			return;
	if (w->n < sizeof(w->limit) / sizeof(w->limit[0]))
		w->limit[w->n++] = limit;
	lock(o);
	if (e == -E2BIG)
		sw_output_warning(out, "%s: %s, a limit of stallwatch-report(1): left out", what,
				  limit);
	else
		sw_output_warning(out, "%s: %s", what, limit);
	unlock(o);
	if (e == -ENOMEM && *status == SW_EXIT_OK)
		*status = SW_EXIT_SOFTWARE;
}

double sw_watch_elapsed_s(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / (double)SW_NS_PER_S;
}

/*
 * Prints the stalls still open, cut off by the end of their agent's
 * stream; they count.  Returns whether --max-stalls was reached.
 */
static bool print_open(struct sw_output *out, const struct sw_watch_options *o, struct sw_stalls *c,
		       uint64_t *stalls, struct warned *w, const char *what, int *status)
{
	const struct sw_stall *st;
	bool full = false;
	while (!full && (st = sw_stalls_flush(c))) {
		(*stalls)++;
		lock(o);
		int e = sw_output_stall(out, c, st, o->source);
		unlock(o);
		full = e == 1;
		if (e < 0) {
			(*stalls)--;
			over_limit(out, o, w, what, sw_profile_limit(sw_output_profile(out)), e,
				   status);
		}
	}
	return full;
}

int sw_watch_stream(struct sw_session *s, const struct sw_watch_options *o, bool (*stop)(void *ctx),
		    void *ctx, const char *what)
{
	struct sw_session *cur = s; /* the stream of the process's latest image */
	struct sw_stalls *c;
	struct sw_output *out = NULL;
	struct sw_recording_writer *rec = NULL;
	struct sw_error err = {0};
	int status = SW_EXIT_OK;
	if (o->shared)
		out = o->shared;
	if (sw_stalls_new(&c) < 0)
		return sw_cli_fail(SW_FAIL_OUTPUT, -ENOMEM, "out of memory");
	if (!out && (status = sw_output_new(&o->out, false, &out)) != 0) {
		sw_stalls_free(c);
		return status;
	}
	if (o->output && sw_recording_writer_open(o->output, &rec, &err) < 0) {
		sw_stalls_free(c);
		if (!o->shared)
			sw_output_free(out);
		return sw_cli_fail(SW_FAIL_OUTPUT, err.code, "cannot write '%s': %s", o->output,
				   sw_error_str(&err));
	}
	record_device(rec, o);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t stalls = 0;
	bool full = false;
	const char *limit = NULL;
	struct warned warned = {0};
	for (;;) {
		struct sw_wire_msg m;
		sw_error_clear(&err);
		if (o->out.duration_s && sw_watch_elapsed_s(&t0) >= o->out.duration_s) {
			limit = "--duration";
			break;
		}
		int r = sw_session_next(cur, &m, 200, &err);
		if (r == -EAGAIN || r == -EINTR) {
			if (stop && stop(ctx))
				break;
			continue;
		}
		if (r == 0) {
			/* no goodbye: the process exec'd (or died); its next image may go on */
			struct sw_session *next = !sw_stalls_info(c)->have_goodbye && o->next_stream
						      ? o->next_stream(o->next_ctx)
						      : NULL;
			if (!next)
				break;
			if (cur != s)
				sw_session_free(cur);
			cur = next;
			continue;
		}
		if (r < 0) {
			sw_cli_error("cannot read the stream of %s: %s", what, sw_error_str(&err));
			status = SW_EXIT_INPUT;
			break;
		}
		/* another agent's hello (an exec): what the last one left open ends here */
		if (m.type == SW_MSG_HELLO && sw_stalls_info(c)->have_hello &&
		    print_open(out, o, c, &stalls, &warned, what, &status)) {
			limit = "--max-stalls";
			break;
		}
		if (rec) {
			const uint8_t *raw;
			size_t len;
			sw_session_raw(cur, &raw, &len);
			int w = sw_recording_writer_message(rec, &m, raw, len);
			if (w < 0) {
				status = sw_cli_fail(SW_FAIL_OUTPUT, w, "cannot write '%s': %s",
						     o->output, strerror(-w));
				break;
			}
		}
		const struct sw_stall *st = NULL;
		r = sw_stalls_feed(c, &m, &st);
		if (r < 0)
			over_limit(out, o, &warned, what, sw_stalls_limit(c), r, &status);
		if (r == 1) {
			stalls++;
			/* a printed stall must survive a crash of the command */
			int w = rec ? sw_recording_writer_sync(rec) : 0;
			if (w < 0) {
				sw_cli_error("cannot write '%s': %s", o->output, strerror(-w));
				status = SW_EXIT_INPUT;
				break;
			}
			lock(o);
			int e = sw_output_stall(out, c, st, o->source);
			unlock(o);
			full = e == 1;
			if (e < 0) {
				stalls--; /* left out: neither printed nor counted */
				over_limit(out, o, &warned, what,
					   sw_profile_limit(sw_output_profile(out)), e, &status);
			}
		}
		if (m.type == SW_MSG_GOODBYE) {
			const struct sw_stalls_info *in = sw_stalls_info(c);
			if (in->goodbye_reason == SW_GOODBYE_TOKEN ||
			    in->goodbye_reason == SW_GOODBYE_PROTOCOL) {
				sw_cli_error("%s refused the connection: %s", what,
					     in->goodbye_text);
				status = SW_EXIT_AGENT;
			} else if (in->goodbye_reason == SW_GOODBYE_REPLACED) {
				sw_cli_warn("%s: %s", what, in->goodbye_text);
			}
		}
		if (full)
			limit = "--max-stalls";
		if (full || (stop && stop(ctx)))
			break;
	}
	if (cur != s)
		sw_session_free(cur);
	if (rec)
		sw_recording_writer_sync(rec); /* a failure is reported by the close below */
	if (!full)
		print_open(out, o, c, &stalls, &warned, what, &status);
	const struct sw_stalls_info *in = sw_stalls_info(c);
	/* A shared output's summary covers every stream: its owner finishes it. */
	if (in->have_hello && !o->shared)
		summary_extra(out, c, stalls);
	if (in->passive[0])
		sw_cli_warn("the agent in '%s' sampled nothing, passive under a seccomp filter: %s",
			    in->process_name, in->passive);
	if (in->stats.dropped)
		sw_cli_warn("%s dropped %llu records (a slow reader or no reader)", what,
			    (unsigned long long)in->stats.dropped);
	fprintf(stderr, "stallwatch: %llu stall%s from %s (pid %llu)\n", (unsigned long long)stalls,
		stalls == 1 ? "" : "s", in->process_name[0] ? in->process_name : what,
		(unsigned long long)in->pid);
	if (in->have_hello && !(o->explain_end && o->explain_end(o->explain_ctx, c, limit)))
		say_watched(c, stalls);
	if (rec && sw_recording_writer_close(rec, &err) < 0 && status == SW_EXIT_OK) {
		status = sw_cli_fail(SW_FAIL_OUTPUT, err.code, "cannot write '%s': %s", o->output,
				     sw_error_str(&err));
	}
	if (o->result) {
		o->result->stalls = stalls;
		o->result->goodbye = in->have_goodbye;
		o->result->limit = limit;
	}
	if (!o->shared) {
		status = sw_output_finish(out, status);
		sw_output_free(out);
	}
	sw_stalls_free(c);
	return status;
}
