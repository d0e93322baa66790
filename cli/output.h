/*
 * What `run`, `attach` and `report` share about output: the options that
 * choose a format and shape trees, the CI options (--max-stalls,
 * --fail-on-stall, --fail-if-longer-than, --junit), -S/--symbols, and the
 * printing of each stall as it completes, then the end of documents, the
 * summary and the exit status.  One code path for live and recorded
 * stalls is what makes `report --color=never` print what `run` printed.
 */
#ifndef SW_CLI_OUTPUT_H
#define SW_CLI_OUTPUT_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "render/render.h"
#include "wire/stalls.h"

#define SW_OUTPUT_MAX_SYMBOL_PATHS 64

struct sw_output_options {
	enum sw_format format;
	enum sw_color_mode color;
	struct sw_render_options render;
	regex_t focus, exclude;
	bool have_focus, have_exclude;
	double duration_s;        /* 0: none */
	unsigned long max_stalls; /* 0: no limit */
	bool fail_on_stall;
	unsigned long fail_longer_ms; /* with have_fail_longer */
	bool have_fail_longer;
	const char *junit;
	const char *symbols[SW_OUTPUT_MAX_SYMBOL_PATHS];
	size_t nsymbols;
	bool require_symbols;
	const char *perf_map; /* --perf-map FILE */
	bool perf_map_live;   /* run: the program's /tmp/perf-PID.map */
	const char *results;  /* --results FILE; "-": standard output */
	const char *baseline; /* --baseline FILE */
	/* where results go without --results: stdout, or stderr for run */
	bool results_to_stderr;
	/* recorded input (report): progress runs from the first stall to the end */
	bool batch;
};

/* --format, tree shaping, -S, and the CI options: a table of options.h */
extern const struct sw_opt sw_output_opts[];

void sw_output_options_init(struct sw_output_options *o);
void sw_output_options_finish(struct sw_output_options *o);

/* Handles one option; returns 0, 1 when c is not an output option, or a usage status. */
int sw_output_option(const struct sw_cmd *cmd, int c, const char *arg, struct sw_output_options *o);
/*
 * Parses the options of a verb that takes only these (report, demo): 0 with
 * optind at the first operand, else the exit status of a misuse, reported.
 */
int sw_output_parse(const struct sw_cmd *cmd, int argc, char **argv, struct sw_output_options *o);

struct sw_output;

/*
 * qualify: several sources mix, so stall ids carry their source.  Opens
 * the --results file; returns 0 or an exit status, the failure reported.
 */
int sw_output_new(const struct sw_output_options *o, bool qualify, struct sw_output **ret);
void sw_output_free(struct sw_output *out);

/*
 * Symbolicates a completed stall, prints it at once (streaming formats) and
 * flushes stdout.  Returns 1 when --max-stalls is reached, 0, or -errno.
 */
int sw_output_stall(struct sw_output *out, const struct sw_stalls *c, const struct sw_stall *st,
		    const char *source);
/* A warning: stderr, and an object in ndjson output. */
void sw_output_warning(struct sw_output *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool sw_output_full(const struct sw_output *out);
/* Bytes of results written so far (flushed). */
uint64_t sw_output_written(const struct sw_output *out);
/* The source's own fields for the NDJSON summary (see sw_profile_set_summary_extra()). */
void sw_output_set_summary_extra(struct sw_output *out, const char *json);
/* The profile behind the output, for sources that fill it directly (MetricKit). */
struct sw_profile *sw_output_profile(struct sw_output *out);
struct sw_report *sw_output_report(struct sw_output *out);
/* Prints a stall already in the profile, as sw_output_stall() does. */
int sw_output_print(struct sw_output *out, struct sw_tree_stall *ts);

/*
 * Prints the end of documents and the summary (stderr), writes --junit,
 * and returns the exit status: status when it is not 0, else 1 when a
 * --fail-* condition holds, 6 when --require-symbols failed, else 0.
 */
int sw_output_finish(struct sw_output *out, int status);
/* Whether a --fail-* condition holds for what was printed. */
bool sw_output_failed(const struct sw_output *out);

#endif
