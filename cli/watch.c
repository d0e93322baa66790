/*
 * The stream loop of `run` and `attach` (see watch.h): session messages go
 * to the recording byte for byte, and through the stall collector to the
 * renderer, one stall at a time, flushed as it completes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "recording.h"
#include "render-stall.h"
#include "stalls.h"
#include "watch.h"

int sw_watch_option(const struct sw_cmd *cmd, int c, const char *arg, struct sw_watch_options *o)
{
	unsigned long v;
	switch (c) {
	case 1001:
		if (sw_cli_parse_uint(cmd, "--threshold", arg, 3600000, &v))
			return SW_EXIT_USAGE;
		if (v == 0)
			return sw_cli_usage(cmd, "--threshold must be at least 1");
		o->threshold_ms = v;
		return 0;
	case 1002:
		if (sw_cli_parse_uint(cmd, "--interval", arg, 10000, &v))
			return SW_EXIT_USAGE;
		if (v == 0)
			return sw_cli_usage(cmd, "--interval must be at least 1");
		o->interval_ms = v;
		return 0;
	case 1003:
		o->all_threads = true;
		return 0;
	case 'o':
		o->output = arg;
		return 0;
	case 1004:
		if (!strcmp(arg, "raw"))
			o->format = SW_WATCH_RAW;
		else if (!strcmp(arg, "ndjson"))
			o->format = SW_WATCH_NDJSON;
		else
			return sw_cli_usage(cmd, "unknown format '%s' (raw or ndjson)", arg);
		return 0;
	case 1005:
		o->token = arg;
		return 0;
	}
	return 1;
}

static int print_stall(const struct sw_stalls *c, const struct sw_stall *st,
		       const struct sw_watch_options *o)
{
	struct sw_buf out;
	sw_buf_init(&out, 0);
	int r = o->format == SW_WATCH_NDJSON ? sw_render_ndjson_stall(&out, c, st)
					     : sw_render_raw_stall(&out, c, st);
	if (r == 0 && out.len)
		fwrite(out.data, 1, out.len, stdout);
	fflush(stdout);
	sw_buf_finish(&out);
	return r;
}

int sw_watch_stream(struct sw_session *s, const struct sw_watch_options *o,
		    bool (*stop)(void *ctx), void *ctx, const char *what)
{
	struct sw_stalls *c;
	struct sw_recording_writer *rec = NULL;
	struct sw_error err = {0};
	int status = SW_EXIT_OK;
	if (sw_stalls_new(&c) < 0) {
		sw_cli_error("out of memory");
		return SW_EXIT_RUN_FAILED;
	}
	if (o->output && sw_recording_writer_open(o->output, &rec, &err) < 0) {
		sw_cli_error("cannot write '%s': %s", o->output, sw_error_str(&err));
		sw_stalls_free(c);
		return SW_EXIT_INPUT;
	}
	uint64_t stalls = 0;
	for (;;) {
		struct sw_wire_msg m;
		sw_error_clear(&err);
		int r = sw_session_next(s, &m, 200, &err);
		if (r == -EAGAIN || r == -EINTR) {
			if (stop && stop(ctx))
				break;
			continue;
		}
		if (r == 0)
			break;
		if (r < 0) {
			sw_cli_error("cannot read the stream of %s: %s", what, sw_error_str(&err));
			status = SW_EXIT_INPUT;
			break;
		}
		if (rec) {
			const uint8_t *raw;
			size_t len;
			sw_session_raw(s, &raw, &len);
			if (sw_recording_writer_write(rec, raw, len) < 0) {
				sw_cli_error("cannot write '%s': %s", o->output, strerror(errno));
				status = SW_EXIT_INPUT;
				break;
			}
		}
		const struct sw_stall *st = NULL;
		r = sw_stalls_feed(c, &m, &st);
		if (r == -E2BIG)
			sw_cli_warn("a stall from %s exceeded a limit and was cut", what);
		if (r == 1) {
			stalls++;
			print_stall(c, st, o);
		}
		if (m.type == SW_MSG_GOODBYE) {
			const struct sw_stalls_info *in = sw_stalls_info(c);
			if (in->goodbye_reason == SW_GOODBYE_TOKEN ||
			    in->goodbye_reason == SW_GOODBYE_PROTOCOL) {
				sw_cli_error("%s refused the connection: %s", what, in->goodbye_text);
				status = SW_EXIT_AGENT;
			} else if (in->goodbye_reason == SW_GOODBYE_REPLACED) {
				sw_cli_warn("%s: %s", what, in->goodbye_text);
			}
		}
		if (stop && stop(ctx))
			break;
	}
	const struct sw_stall *st;
	while ((st = sw_stalls_flush(c)))
		print_stall(c, st, o);
	const struct sw_stalls_info *in = sw_stalls_info(c);
	if (o->format == SW_WATCH_NDJSON && in->have_hello) {
		struct sw_buf out;
		sw_buf_init(&out, 0);
		if (sw_render_ndjson_summary(&out, c, stalls) == 0)
			fwrite(out.data, 1, out.len, stdout);
		fflush(stdout);
		sw_buf_finish(&out);
	}
	if (in->stats.dropped)
		sw_cli_warn("%s dropped %llu records (a slow reader or no reader)", what,
			    (unsigned long long)in->stats.dropped);
	fprintf(stderr, "stallwatch: %llu stall%s from %s (pid %llu)\n", (unsigned long long)stalls,
		stalls == 1 ? "" : "s", in->process_name[0] ? in->process_name : what,
		(unsigned long long)in->pid);
	if (rec && sw_recording_writer_close(rec, &err) < 0 && status == SW_EXIT_OK) {
		sw_cli_error("cannot write '%s': %s", o->output, sw_error_str(&err));
		status = SW_EXIT_INPUT;
	}
	sw_stalls_free(c);
	return status;
}
