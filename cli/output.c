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
	unsigned long printed;
	bool failed;
	bool write_error;
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
	case 1200:
		if (sw_format_parse(arg, &o->format) < 0)
			return sw_cli_usage(cmd, "unknown format '%s' (%s)", arg, sw_format_list());
		return 0;
	case 1201:
		if (sw_cli_parse_color(arg, &o->color) < 0)
			return sw_cli_usage(
			    cmd, "invalid value '%s' for --color (auto, always, never)", arg);
		return 0;
	case 1202:
		t->invert = true;
		return 0;
	case 1203:
		return parse_double(cmd, "--min-percent", arg, 100, &t->min_percent);
	case 1204:
		if (sw_cli_parse_uint(cmd, "--max-depth", arg, SW_TREE_MAX_DEPTH, &v))
			return SW_EXIT_USAGE;
		t->max_depth = (uint32_t)v;
		return 0;
	case 1205:
		t->hide_system = true;
		return 0;
	case 1206:
		t->flatten_recursion = true;
		return 0;
	case 1207:
		return parse_regex(cmd, "--focus", arg, &o->focus, &o->have_focus);
	case 1208:
		return parse_regex(cmd, "--exclude", arg, &o->exclude, &o->have_exclude);
	case 1209:
		t->thread = !strcmp(arg, "main")  ? SW_THREAD_MAIN
			    : !strcmp(arg, "all") ? SW_THREAD_ALL
						  : SW_THREAD_NAME;
		t->thread_name = arg;
		return 0;
	case 1210:
		t->full_names = true;
		return 0;
	case 1211:
		if (parse_double(cmd, "--duration", arg, 365 * 86400.0, &o->duration_s))
			return SW_EXIT_USAGE;
		if (o->duration_s <= 0)
			return sw_cli_usage(cmd, "--duration must be more than 0");
		return 0;
	case 1212:
		if (sw_cli_parse_uint(cmd, "--max-stalls", arg, 1000000000, &o->max_stalls))
			return SW_EXIT_USAGE;
		if (o->max_stalls == 0)
			return sw_cli_usage(cmd, "--max-stalls must be at least 1");
		return 0;
	case 1213:
		o->fail_on_stall = true;
		return 0;
	case 1214:
		if (sw_cli_parse_uint(cmd, "--fail-if-longer-than", arg, 86400000,
				      &o->fail_longer_ms))
			return SW_EXIT_USAGE;
		o->have_fail_longer = true;
		return 0;
	case 1215:
		o->junit = arg;
		return 0;
	case 'S':
		if (o->nsymbols == SW_OUTPUT_MAX_SYMBOL_PATHS)
			return sw_cli_usage(cmd, "too many --symbols paths (at most %d)",
					    SW_OUTPUT_MAX_SYMBOL_PATHS);
		o->symbols[o->nsymbols++] = arg;
		return 0;
	case 1216:
		o->require_symbols = true;
		return 0;
	}
	return 1;
}

int sw_output_parse(const struct sw_cmd *cmd, int argc, char **argv, struct sw_output_options *o)
{
	static const struct option longopts[] = {
	    SW_OUTPUT_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "S:", longopts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return sw_cli_usage(cmd, "unknown option or missing value: '%s'",
					    argv[optind - 1]);
		int r = sw_output_option(cmd, c, optarg, o);
		if (r)
			return r == 1 ? sw_cli_usage(cmd, "unknown option") : r;
	}
	return 0;
}

int sw_output_new(const struct sw_output_options *o, bool qualify, struct sw_output **ret)
{
	struct sw_output *out = calloc(1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	out->o = o;
	out->render = o->render;
	out->render.qualify = qualify;
	out->render.color = sw_cli_use_color(o->color, stdout);
	out->render.tree.focus = o->have_focus ? &o->focus : NULL;
	out->render.tree.exclude = o->have_exclude ? &o->exclude : NULL;
	sw_buf_init(&out->buf, 0);
	int e = sw_profile_new(&out->profile);
	if (e >= 0)
		e = sw_symsearch_new(&out->search);
	for (size_t i = 0; i < o->nsymbols && e >= 0; i++)
		e = sw_symsearch_add_path(out->search, o->symbols[i]);
	if (e >= 0) {
		sw_symsearch_add_env(out->search);
		sw_symsearch_add_host(out->search);
		e = sw_report_new(out->profile, out->search, &out->report);
	}
	if (e >= 0)
		sw_report_set_raw_stacks(out->report, sw_format_has_raw_stacks(o->format));
	if (e >= 0)
		e = sw_renderer_new(o->format, &out->render, &out->renderer);
	if (e < 0) {
		sw_output_free(out);
		return e;
	}
	*ret = out;
	return 0;
}

void sw_output_free(struct sw_output *out)
{
	if (!out)
		return;
	sw_renderer_free(out->renderer);
	sw_report_free(out->report);
	sw_symsearch_free(out->search);
	sw_profile_free(out->profile);
	sw_buf_finish(&out->buf);
	free(out);
}

/* Writes and empties the buffer; a closed pipe is not an error worth repeating. */
static void flush(struct sw_output *out)
{
	if (out->buf.len && fwrite(out->buf.data, 1, out->buf.len, stdout) != out->buf.len)
		out->write_error = true;
	fflush(stdout);
	sw_buf_reset(&out->buf);
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
	int e = sw_report_add_stall(out->report, c, st, source, &ts);
	if (e < 0)
		return e;
	return sw_output_print(out, ts);
}

int sw_output_print(struct sw_output *out, struct sw_tree_stall *ts)
{
	int e;
	if (sw_output_full(out))
		return 1;
	out->printed++;
	out->failed |= stall_fails(out->o, ts);
	e = sw_renderer_stall(out->renderer, out->profile, ts, &out->buf);
	flush(out);
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

static int write_junit(struct sw_output *out)
{
	struct sw_buf x;
	sw_buf_init(&x, 0);
	struct sw_junit_options jo = {
	    .fail_on_stall = out->o->fail_on_stall || !out->o->have_fail_longer,
	    .fail_longer_ns =
		out->o->have_fail_longer ? (uint64_t)out->o->fail_longer_ms * SW_NS_PER_MS : 0,
	    .qualify = out->render.qualify,
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

int sw_output_finish(struct sw_output *out, int status)
{
	int e = sw_renderer_end(out->renderer, out->profile, &out->buf);
	flush(out);
	if (e < 0) {
		sw_cli_error("cannot render the %s output: %s", sw_format_name(out->o->format),
			     strerror(-e));
		if (!status)
			status = SW_EXIT_INPUT;
	}
	const char *missing = sw_report_missing(out->report);
	if (missing)
		fprintf(stderr, "stallwatch: warning: symbols not found for:\n%s", missing);
	struct sw_summary sum;
	if (sw_summary_compute(out->profile, &sum) >= 0) {
		sw_buf_reset(&out->buf);
		struct sw_render_options human = out->render;
		human.color = false;
		if (sw_summary_text(out->profile, &sum, &human, &out->buf) >= 0)
			fwrite(out->buf.data, 1, out->buf.len, stderr);
		sw_buf_reset(&out->buf);
	}
	if (out->o->junit && write_junit(out) < 0 && !status)
		status = SW_EXIT_INPUT;
	status = sw_cli_finish_stdout(status);
	if (status)
		return status;
	if (out->o->require_symbols && missing)
		return SW_EXIT_SYMBOLS;
	return out->failed ? SW_EXIT_STALLS : SW_EXIT_OK;
}
