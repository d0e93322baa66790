/*
 * Renderers: a profile's stalls as text for people (tree, sample) and for
 * tools (ndjson, json, folded, speedscope, pprof).  stallwatch-output(7)
 * documents every format.
 *
 * Streaming formats (tree, sample, ndjson, folded) print each stall when it
 * ends, so live sessions show stalls at once; json prints its head and each
 * stall object as the stall ends too, and its summary at the end; speedscope
 * prints each stall's profiles as the stall ends and the shared frames at
 * the end; pprof prints everything at the end.  Either way the output
 * for the same profile is the same, which is what lets `report` reprint a
 * recording byte for byte.
 *
 * Renderers append to a caller's sw_buf and never print.
 */
#ifndef SW_RENDER_H
#define SW_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "tree/tree.h"

enum sw_format {
	SW_FORMAT_TREE,
	SW_FORMAT_SAMPLE,
	SW_FORMAT_NDJSON,
	SW_FORMAT_JSON,
	SW_FORMAT_FOLDED,
	SW_FORMAT_SPEEDSCOPE,
	SW_FORMAT_PPROF,
};

/* The NDJSON/JSON schema version (stallwatch-output(7)). */
#define SW_RENDER_SCHEMA 1

/*
 * The deepest level the tree and sample formats indent to: deeper lines keep
 * that indentation and name their depth ("[depth 80] "), so a recursion
 * thousands of frames deep prints in lines of bounded width.
 */
#define SW_RENDER_MAX_INDENT 64

int sw_format_parse(const char *name, enum sw_format *ret);
const char *sw_format_name(enum sw_format f);
/* Whether the format prints the collector's raw stacks (ndjson and json do). */
bool sw_format_has_raw_stacks(enum sw_format f);
/* Whether the format reads every stall's samples again at its end (pprof does). */
bool sw_format_rereads_stalls(enum sw_format f);
/* "tree, sample, ndjson, ..." for help texts. */
const char *sw_format_list(void);

struct sw_render_options {
	struct sw_tree_options tree;
	bool color;   /* ANSI colour in tree and sample output */
	bool qualify; /* prefix stall ids with their source: "run2#3" */
	const char *tool_version;
	/*
	 * Optional: takes what a renderer wrote so far, at points where it no
	 * longer reads it back (pprof's compressed profile, megabytes, at the
	 * end), writes it and empties the buffer; < 0 stops the rendering.  A
	 * renderer may also hand it a buffer of its own after draining the
	 * output (a stall's raw stacks, written without a copy).
	 */
	int (*drain)(void *ctx, struct sw_buf *out);
	void *drain_ctx;
};

void sw_render_options_init(struct sw_render_options *o);

/* The top signatures of a run, heaviest total first. */
#define SW_SUMMARY_TOP 5

struct sw_summary_sig {
	uint64_t signature;
	size_t stalls;
	uint64_t total_ns;
	const struct sw_tree_stall *example; /* the longest stall with it */
};

struct sw_summary {
	size_t stalls;
	uint64_t total_ns; /* sum of the stalls' durations */
	const struct sw_tree_stall *worst;
	struct sw_summary_sig top[SW_SUMMARY_TOP];
	size_t ntop;
	size_t nsignatures;
	bool counts_only;
	/* stalls with samples the agent took late, and the lateness in all */
	size_t late_stalls;
	uint64_t late_ns;
};

/* Computes the summary of every stall in the profile. */
int sw_summary_compute(struct sw_profile *p, struct sw_summary *ret);
/*
 * The frame that best explains a stall, for the summary's "e.g." and the
 * JUnit test case names: the function of the app's own code (not a system
 * image, named, not inlined) that the most time is charged to, each
 * sample's time going to the nearest such function on its stack, so that
 * time in system libraries and inlined helpers counts for their caller.
 * Without a named one (a stripped app), the same among its sub_<hex>;
 * without those, the deepest frame of the heaviest path.  NULL: no samples.
 */
const struct sw_tree_frame *sw_render_culprit(struct sw_profile *p, const struct sw_tree_stall *s);
/*
 * The stalls that may still be an example of their signature, which is all
 * of them the summary and JUnit read again: per signature, the first stall
 * of the greatest weight (sw_summary_compute()) and the first of the longest
 * duration (JUnit's).  Given every stall once it is printed, in the order
 * they were added, it lets the samples of the others go
 * (sw_tree_stall_drop_samples()): a long session keeps the samples of one
 * or two stalls per signature.  Only for formats that do not read every
 * stall again at their end (sw_format_rereads_stalls()).
 */
struct sw_examples;
int sw_examples_new(struct sw_examples **ret);
void sw_examples_free(struct sw_examples *x);
/* s was printed: it keeps its samples while it may be an example; others let theirs go. */
void sw_examples_printed(struct sw_examples *x, struct sw_profile *p, struct sw_tree_stall *s);

/* The human summary the commands print on stderr. */
int sw_summary_text(const struct sw_profile *p, const struct sw_summary *sum,
		    const struct sw_render_options *o, struct sw_buf *out);

/* "#3" or, with o->qualify and a source, "run2#3". */
void sw_tree_stall_label(const struct sw_tree_stall *s, bool qualify, char *buf, size_t size);

struct sw_renderer;

int sw_renderer_new(enum sw_format f, const struct sw_render_options *o, struct sw_renderer **ret);
void sw_renderer_free(struct sw_renderer *r);
enum sw_format sw_renderer_format(const struct sw_renderer *r);

/* Appends what the format prints as the stall ends (nothing for documents). */
int sw_renderer_stall(struct sw_renderer *r, struct sw_profile *p, struct sw_tree_stall *s,
		      struct sw_buf *out);
/* Appends a warning object (ndjson only; others leave warnings to stderr). */
int sw_renderer_warning(struct sw_renderer *r, const char *text, struct sw_buf *out);
/* Appends what the format prints at the end: a document, ndjson's summary. */
int sw_renderer_end(struct sw_renderer *r, struct sw_profile *p, struct sw_buf *out);

/* ---- the formats (render-*.c), for render.c and tests ---- */

int sw_render_tree_stall(struct sw_profile *p, struct sw_tree_stall *s,
			 const struct sw_render_options *o, struct sw_buf *out);
int sw_render_sample_stall(struct sw_profile *p, struct sw_tree_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out);
/* One stall object (no newline); with_header adds "schema" and "type". */
int sw_render_json_stall(struct sw_profile *p, struct sw_tree_stall *s,
			 const struct sw_render_options *o, bool with_header, struct sw_buf *out);
int sw_render_json_summary(struct sw_profile *p, const struct sw_summary *sum,
			   const struct sw_render_options *o, bool with_header, struct sw_buf *out);
int sw_render_json_document(struct sw_profile *p, const struct sw_render_options *o,
			    struct sw_buf *out);
/* The document in pieces: its head, then stall objects separated by ',', then its end. */
int sw_render_json_begin(const struct sw_render_options *o, struct sw_buf *out);
int sw_render_json_end(struct sw_profile *p, const struct sw_render_options *o, struct sw_buf *out);
int sw_render_folded_stall(struct sw_profile *p, struct sw_tree_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out);
/* The same, keeping the frames' texts from one stall to the next. */
struct sw_folded;
int sw_folded_new(const struct sw_render_options *o, struct sw_folded **ret);
void sw_folded_free(struct sw_folded *c);
int sw_folded_stall(struct sw_folded *c, struct sw_profile *p, struct sw_tree_stall *s,
		    const struct sw_render_options *o, struct sw_buf *out);
int sw_render_speedscope(struct sw_profile *p, const struct sw_render_options *o,
			 struct sw_buf *out);
/* The same in pieces: each stall's profiles, then the shared frames and the end. */
struct sw_speedscope;
int sw_speedscope_new(const struct sw_render_options *o, struct sw_speedscope **ret);
void sw_speedscope_free(struct sw_speedscope *c);
int sw_speedscope_stall(struct sw_speedscope *c, struct sw_profile *p, struct sw_tree_stall *s,
			struct sw_buf *out);
int sw_speedscope_end(struct sw_speedscope *c, struct sw_buf *out);
/* -ENOTSUP when built without zlib. */
int sw_render_pprof(struct sw_profile *p, const struct sw_render_options *o, struct sw_buf *out);

/*
 * The trees a stall shows under the options: one for the selected thread
 * or threads, or one per thread with --thread all.  Fills trees[0..max)
 * with the thread index each is for (-1: several together) in
 * ret_threads; returns how many, or -errno.  Nodes under expand_percent
 * may be left unexpanded (see struct sw_tree_options): a renderer passes
 * what it shows, --min-percent, or 0 when it prints every node.  Free each
 * with sw_tree_free().
 */
int sw_render_stall_trees(struct sw_profile *p, struct sw_tree_stall *s,
			  const struct sw_tree_options *o, double expand_percent,
			  struct sw_tree **trees, long *threads, size_t max);
/*
 * The same stall's distinct stacks as the trees would take them, for
 * renderers that print every path whole: paths[0..max), free each with
 * sw_tree_paths_free().
 */
int sw_render_stall_paths(struct sw_profile *p, struct sw_tree_stall *s,
			  const struct sw_tree_options *opts, struct sw_tree_paths **paths,
			  long *threads, size_t max);

/*
 * s made safe for a terminal line: control characters (newlines, escapes)
 * become spaces.  Returns s itself when it is clean, else a copy in buf.
 */
const char *sw_render_clean(const char *s, char *buf, size_t size);

/* The last component of a source path, as trees show it ("steps.c"). */
const char *sw_render_file_name(const char *path);

/* A weight for people: "412.3 ms", or "41 samples" for counts. */
void sw_render_weight(uint64_t w, bool counts, char *buf, size_t size);

#endif
