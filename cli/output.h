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

#include <getopt.h>
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
};

/* getopt_long entries (values 1200-1229, 'S'); "S:" goes in the short options. */
#define SW_OUTPUT_LONGOPTS                                                                         \
	{"format", required_argument, NULL, 1200}, {"color", required_argument, NULL, 1201},       \
	    {"invert", no_argument, NULL, 1202}, {"min-percent", required_argument, NULL, 1203},   \
	    {"max-depth", required_argument, NULL, 1204},                                          \
	    {"hide-system", no_argument, NULL, 1205},                                              \
	    {"flatten-recursion", no_argument, NULL, 1206},                                        \
	    {"focus", required_argument, NULL, 1207}, {"exclude", required_argument, NULL, 1208},  \
	    {"thread", required_argument, NULL, 1209}, {"full-names", no_argument, NULL, 1210},    \
	    {"duration", required_argument, NULL, 1211},                                           \
	    {"max-stalls", required_argument, NULL, 1212},                                         \
	    {"fail-on-stall", no_argument, NULL, 1213},                                            \
	    {"fail-if-longer-than", required_argument, NULL, 1214},                                \
	    {"junit", required_argument, NULL, 1215}, {"symbols", required_argument, NULL, 'S'},   \
	{                                                                                          \
		"require-symbols", no_argument, NULL, 1216                                         \
	}

#define SW_OUTPUT_HELP                                                                             \
	"output:\n"                                                                                \
	"  --format FORMAT         tree (default), sample, ndjson, json, folded,\n"                \
	"                          speedscope or pprof; see stallwatch-output(7)\n"                \
	"  --color WHEN            auto (default), always or never\n"                              \
	"  --invert                bottom-up trees: leaf functions first, callers below\n"         \
	"  --min-percent P         hide tree nodes under P% of the stall (default 0.5)\n"          \
	"  --max-depth N           cut trees at depth N, charging deeper frames to it\n"           \
	"  --hide-system           charge frames of system libraries to their callers\n"           \
	"  --flatten-recursion     show a function calling itself directly once\n"                 \
	"  --focus REGEX           keep only samples with a function matching REGEX\n"             \
	"  --exclude REGEX         drop samples with a function matching REGEX\n"                  \
	"  --thread WHICH          main (default), all, or a thread name\n"                        \
	"  --full-names            full Swift names instead of simplified ones\n"                  \
	"  -S, --symbols PATH      look for binaries and debug files in PATH too\n"                \
	"  --require-symbols       exit 6 when an image's symbols cannot be found\n"               \
	"CI:\n"                                                                                    \
	"  --duration SECONDS      watch this long (report: stalls that began within it)\n"        \
	"  --max-stalls N          stop after N stalls\n"                                          \
	"  --fail-on-stall         exit 1 when there was any stall\n"                              \
	"  --fail-if-longer-than MS  exit 1 when a stall lasted longer than MS\n"                  \
	"  --junit FILE            write a JUnit XML report, one test case per signature\n"

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

/* qualify: several sources mix, so stall ids carry their source. */
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
