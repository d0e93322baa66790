/*
 * Call trees in the style of Instruments' Time Profiler, built from
 * symbolicated samples.
 *
 * A profile (struct sw_profile) holds everything a run produced, in a form
 * that knows nothing of the wire, the symbolicator or MetricKit: interned
 * images and frames, the distinct stacks (each a run of frames, root to leaf),
 * and the stalls with their threads and weighted samples.  Adapters fill it
 * (report.c from recordings and live streams, metrickit.c from MetricKit
 * JSON); renderers read it.
 *
 * A tree (struct sw_tree) is built from the samples of one or more stalls
 * under the display options (--invert, --hide-system, --focus, ...): one
 * node per call path, merged by function, with total and self weight in
 * nanoseconds.  Weights add up: a node's total is its self plus its
 * children's totals, and the roots' totals sum to the samples' weights.
 *
 * A stall's signature hashes its heaviest path (Instruments' Heaviest Stack
 * Trace, taken from the stall's own thread with no display option applied)
 * by image file name and linkage name only, so ASLR, rebuilds, line changes
 * and demangler changes leave it alone.  System frames below the deepest
 * frame outside system images are left out (libc or libm internals would
 * otherwise split one hang into several signatures), but for those of the
 * runtime the program hands its work to (sw_tree_runtime_image()).  The
 * hash is 64-bit FNV-1a over "image\0linkage\0" for each frame from the
 * root, with "?" standing for an
 * unknown image or function name; a frame with the same image and name as
 * the one before it (direct recursion) enters once, so how deep a recursion
 * went does not split a hang.  Samples whose unwinding stopped early
 * (under SW_TREE_UNWINDING_STOPPED) are left out: the heaviest of the other
 * roots starts the path.
 *
 * Ownership: the profile owns every string and array it hands out; they
 * live until sw_profile_free().  A tree refers to its profile's frames and
 * must be freed before the profile.
 */
#ifndef SW_TREE_H
#define SW_TREE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* Ceilings on what outside input can grow. */
#define SW_TREE_MAX_DEPTH   8192u      /* frames per sample, inline frames included */
#define SW_TREE_MAX_FRAMES  (1u << 24) /* distinct frames in a profile */
#define SW_TREE_MAX_STACKS  (1u << 26) /* distinct stack prefixes in the trie, and tree nodes */
#define SW_TREE_MAX_STALLS  (1u << 20)
#define SW_TREE_MAX_IMAGES  65536u
#define SW_TREE_MAX_THREADS 4096u
#define SW_TREE_MAX_SAMPLES ((size_t)1 << 28) /* per stall */

struct sw_tree_image {
	const char *name; /* file name ("libc.so.6"); never NULL */
	const char *path; /* as the agent or payload gave it, or NULL */
	uint8_t id[32];   /* UUID or GNU build-id */
	uint32_t id_len;
	uint64_t load_address; /* run-time address of the text segment */
	uint64_t text_size;    /* 0 when unknown */
	bool system;           /* set by the profile from path: see sw_tree_path_is_system() */
};

struct sw_tree_frame {
	uint32_t image;        /* index of the image + 1, 0 when unknown */
	const char *linkage;   /* linkage (mangled) name; NULL when unknown */
	const char *name;      /* display name (Swift simplified); NULL: linkage or address */
	const char *full_name; /* display name in full; NULL: name */
	const char *file;      /* source file, or NULL */
	uint32_t line;         /* 0 when unknown */
	uint64_t address;      /* run-time address of the sample (the call, not the return) */
	uint64_t offset;       /* from the function's symbol; meaningful with has_offset */
	bool has_offset;
	bool inlined; /* an inlined call: the frame before it (its caller) contains it */
	bool hinted;  /* named by the agent's symbol hint (an image in memory only) */
};

/*
 * The root under which report.c puts samples whose unwinding stopped before
 * the thread's entry: a frame of no image with this name and no linkage
 * name.  Signatures leave it out (sw_tree_frame_is_stopped()).
 */
#define SW_TREE_UNWINDING_STOPPED "<unwinding stopped>"
bool sw_tree_frame_is_stopped(const struct sw_tree_frame *f);
/*
 * The linkage name of the node between the outermost and the innermost
 * frames of a stack too deep to keep whole; its display name says how many
 * frames were left out.  Signatures see only the linkage name, so any number
 * of frames left out is one path.  Signatures from rule 2 on (which also
 * leave out <unwinding stopped>) say so in the JSON's signature_version.
 */
#define SW_TREE_FRAMES_LEFT_OUT "<frames left out>"
/*
 * The root the heaviest path of signatures and culprits starts at: t's
 * heaviest, not the marker; when every stack stopped, the marker's heaviest
 * child.
 */
struct sw_tree;
struct sw_profile;
uint32_t sw_tree_signature_root(const struct sw_profile *p, const struct sw_tree *t);
/*
 * The runtime the program hands its work to on t's heaviest path from root
 * (sw_tree_signature_root()), when the app's own code on the path is its
 * entry alone: above the C library's start (_start) and one function below
 * it (main), from which the path enters a system image it entered
 * nowhere above and never comes back to the app's own code.  That is an
 * interpreter in a shared library (libtcl under tclsh, libperl, a shared
 * libpython, running the app's own code, a script) or a toolkit stalled in
 * itself (gtk_main, UIApplicationMain), and its frames count as the app's
 * for signatures and culprits.  Returns its image id, or UINT32_MAX when
 * there is none (a callback of the app's below a system frame: the app's
 * own code is at work, and what it calls is a leaf call).
 */
uint32_t sw_tree_runtime_image(const struct sw_profile *p, const struct sw_tree *t, uint32_t root);

struct sw_tree_thread {
	uint64_t id;
	const char *name; /* "" when unknown */
	bool main;        /* the stalled thread */
};

/* What is known of a stall besides its samples; strings are copied. */
struct sw_tree_stall_info {
	uint64_t id;
	const char *source; /* the device or recording qualifying the id when several mix */
	const char *kind;   /* "busy", "blocked", "hang", ... */
	const char *mode;   /* the loop context (run-loop mode, hook name), or NULL */
	uint64_t thread_id;
	uint64_t start_wall_ns; /* Unix time, 0 when unknown */
	uint64_t duration_ns;
	uint64_t cpu_ns;
	uint64_t samples; /* as the agent counted them */
	uint64_t dropped;
	/* samples the agent took over an interval late (sw_wire_stall_end), and their lateness */
	uint64_t late, late_ns;
	bool counts_only; /* weights are sample counts, not ns (MetricKit without a duration) */
	/* why the stalled thread's samples have no stacks (the agent said), or NULL */
	const char *unsampled;
	/*
	 * The source's own NDJSON fields ("pid":1,"process":"x",...; no braces),
	 * printed first in the stall object instead of the common fields they
	 * cover (id, thread, context, duration_ms, sampled_ms, cpu_ms, samples,
	 * dropped, kind), or NULL.
	 */
	const char *extra_json;
	const char *metadata_json; /* a JSON value printed as "metadata" (MetricKit's), or NULL */
};

struct sw_tree_sample {
	uint32_t stack;  /* the profile's stack (sw_profile_stack_id()), 0: empty stack */
	uint32_t thread; /* index into the stall's threads */
	uint64_t weight; /* ns, or a count for counts_only stalls */
};

struct sw_tree_stall {
	struct sw_tree_stall_info info;
	struct sw_tree_thread *threads;
	uint32_t nthreads;
	struct sw_tree_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t sampled;      /* sum of the weights of the stalled thread's samples */
	uint64_t main_samples; /* how many samples of the stalled thread */
	uint64_t signature;
	bool has_signature;
	bool samples_dropped;  /* sw_tree_stall_drop_samples(): no tree of it can be built */
	size_t extra_json_cap; /* private: the size of info.extra_json's block, 0: not known */
	size_t extra_json_len; /* strlen(info.extra_json) when taken, 0: not known */
};

struct sw_profile;

int sw_profile_new(struct sw_profile **ret);
void sw_profile_free(struct sw_profile *p);

/* Interns an image; *ret_index is the image's index + 1 (what frames store). */
int sw_profile_image(struct sw_profile *p, const struct sw_tree_image *img, uint32_t *ret_index);
/* Interns a frame (every field counts); *ret_id identifies it in samples. */
int sw_profile_frame(struct sw_profile *p, const struct sw_tree_frame *f, uint32_t *ret_id);

const struct sw_tree_image *sw_profile_get_image(const struct sw_profile *p, uint32_t index);
const struct sw_tree_frame *sw_profile_get_frame(const struct sw_profile *p, uint32_t id);
size_t sw_profile_nimages(const struct sw_profile *p);
size_t sw_profile_nframes(const struct sw_profile *p);
/*
 * Stack ids below this are dense (the stacks of the pool); the others
 * (deep stacks past the pool, in the trie) are not: what a renderer keeps
 * per stack fits an array this long.
 */
size_t sw_profile_dense_stacks(const struct sw_profile *p);

/* Adds a stall (info is copied); the pointer lives as long as the profile. */
int sw_profile_add_stall(struct sw_profile *p, const struct sw_tree_stall_info *info,
			 struct sw_tree_stall **ret);
size_t sw_profile_nstalls(const struct sw_profile *p);
/*
 * Takes back the stall added last, which a limit stopped half-filled: it is
 * neither printed nor counted in the summary.
 */
void sw_profile_drop_last_stall(struct sw_profile *p);
/*
 * Lets go of the stall's extra_json once printed (the raw stacks of a long
 * stall are megabytes): the profile keeps the largest such block for
 * sw_profile_take_spare_text(), so the next stall's raw stacks need no new
 * pages.
 */
void sw_tree_stall_drop_extra_json(struct sw_profile *p, struct sw_tree_stall *s);
/* A block an extra_json left (NULL when none), *ret_cap bytes, now the caller's. */
char *sw_profile_take_spare_text(struct sw_profile *p, size_t *ret_cap);
/*
 * Frees the samples of a stall that no tree will be built of again (printed,
 * and not an example of its signature): its info, counts and signature
 * stay.  Building a tree of it afterwards fails with -ESTALE.
 */
void sw_tree_stall_drop_samples(struct sw_profile *p, struct sw_tree_stall *s);
/*
 * Gives the stall json (malloc'ed, len bytes before its terminator, cap
 * bytes or 0 when not known; the stall frees it) as its extra_json,
 * without a copy.
 */
void sw_tree_stall_take_extra_json(struct sw_tree_stall *s, char *json, size_t len, size_t cap);
/* Which ceiling (SW_TREE_MAX_*) the last -E2BIG reached, in words, or NULL. */
const char *sw_profile_limit(const struct sw_profile *p);

/* The source's own fields for the NDJSON summary (as extra_json above), or NULL. */
int sw_profile_set_summary_extra(struct sw_profile *p, const char *json);
const char *sw_profile_summary_extra(const struct sw_profile *p);
struct sw_tree_stall *sw_profile_stall(const struct sw_profile *p, size_t i);

/* Finds or adds a thread of the stall; a non-empty name replaces an empty one. */
int sw_tree_stall_thread(struct sw_profile *p, struct sw_tree_stall *s, uint64_t tid,
			 const char *name, uint32_t *ret_index);

/*
 * Adds one sample: frames are frame ids from the root (outermost caller) to
 * the leaf.  Depth 0 is allowed (an empty stack still weighs).
 */
int sw_tree_stall_add_sample(struct sw_profile *p, struct sw_tree_stall *s, uint32_t thread,
			     const uint32_t *frames, size_t depth, uint64_t weight);

/*
 * The same in two steps, for callers that meet one stack many times and
 * remember what it became: the stack id of frames[0..depth) (interned
 * once; 0 for the empty stack), then one sample of that stack.
 */
int sw_profile_stack_id(struct sw_profile *p, const uint32_t *frames, size_t depth, uint32_t *ret);
int sw_tree_stall_add_stack(struct sw_profile *p, struct sw_tree_stall *s, uint32_t thread,
			    uint32_t stack, uint64_t weight);

/*
 * The frames of a stack of the profile, root first, into
 * frames[0..max).  Returns the depth; when it exceeds max nothing is written.
 */
size_t sw_profile_stack(const struct sw_profile *p, uint32_t stack, uint32_t *frames, size_t max);

/* True for images of the operating system: see tree.c for the list. */
bool sw_tree_path_is_system(const char *path);
/* True for the agent's image and the kernel's virtual shared objects (system too). */
bool sw_tree_path_is_agent_or_kernel(const char *path);
/*
 * True for a source file of the toolchain's library, which is compiled
 * into the app but is not its own code: system headers (C++ templates, in
 * /usr/include or an SDK's or toolchain's usr/include) and Rust's standard
 * library (official builds name its sources /rustc/COMMIT/library/..., its
 * vendored crates /rust/deps/...), Go's standard library (GOROOT/src/PACKAGE/...,
 * or PACKAGE/... under -trimpath) with the compiler's wrappers and cgo's
 * glue.  Signatures and culprits pass over such frames as they pass over
 * system images.
 */
bool sw_tree_source_is_toolchain(const char *file);
/* The same for frame id of the profile, decided once when the frame was added. */
bool sw_profile_frame_toolchain(const struct sw_profile *p, uint32_t id);
/*
 * True for a source file of a dependency compiled into the app, in the
 * folder its package manager put it in: Cargo's registry and git
 * checkouts (Rust), the Go module cache or a MODULE@VERSION/... name under
 * -trimpath, SwiftPM's and Xcode's package checkouts, CocoaPods, Carthage,
 * vcpkg and Conan.  Signatures and culprits pass over such frames too; only
 * --hide-system keeps them, which hides the system's code only.
 */
bool sw_tree_source_is_dependency(const char *file);
/*
 * Whether frame id is the code of a library compiled into the app, not the
 * app's own: the toolchain's or a dependency's (the two above).
 */
bool sw_profile_frame_compiled_in(const struct sw_profile *p, uint32_t id);

/* ---- trees ---- */

enum sw_thread_select {
	SW_THREAD_MAIN, /* the stalled thread (default) */
	SW_THREAD_ALL,  /* every thread, one tree each */
	SW_THREAD_NAME, /* threads called thread_name */
};

struct sw_tree_options {
	bool invert;            /* bottom-up: leaf functions as roots, callers below */
	double min_percent;     /* display: hide nodes under this share of the total */
	uint32_t max_depth;     /* 0: no limit; deeper frames are charged to depth max_depth */
	bool hide_system;       /* frames of system images are charged to their callers */
	bool flatten_recursion; /* a function calling itself directly shows once */
	bool full_names;        /* full Swift names instead of simplified ones */
	const regex_t *focus;   /* keep only samples with a frame matching it */
	const regex_t *exclude; /* drop samples with a frame matching it */
	enum sw_thread_select thread;
	const char *thread_name; /* SW_THREAD_NAME */
	/*
	 * Build only what is shown: a node under this share of the tree's
	 * samples (t->all, as --min-percent counts) is left unexpanded (its
	 * weights are whole, its children left out), except on the heaviest
	 * path.  0 (the default) builds the whole tree.
	 */
	double expand_percent;
};

/* expand_percent for a tree whose heaviest path is all that is read. */
#define SW_TREE_EXPAND_HEAVIEST 1000.0

void sw_tree_options_init(struct sw_tree_options *o);

struct sw_tree_node {
	/* representative frame: the one with most weight in the node (ties: the first interned) */
	uint32_t frame;
	uint32_t parent;      /* node index, UINT32_MAX for roots */
	uint32_t first_child; /* UINT32_MAX: none; children are sorted heaviest first */
	uint32_t next_sibling;
	uint32_t depth; /* 0 for roots */
	uint64_t total, self;
	uint64_t samples;      /* how many samples pass through the node */
	uint64_t self_samples; /* how many end in it */
};

struct sw_tree {
	const struct sw_profile *profile;
	struct sw_tree_node *nodes; /* a node's parent comes before it */
	uint32_t nnodes;
	uint32_t first_root; /* UINT32_MAX when empty; roots are sorted heaviest first */
	uint64_t total;      /* sum of the weights of the samples kept */
	uint64_t all;        /* sum of the weights of the samples selected, before focus/exclude */
	uint64_t nsamples;   /* samples kept */
	bool counts_only;
	double expand_percent; /* as built: nodes under it may have no children */
	/* private */
	unsigned refs;
	size_t nodes_cap;
};

/*
 * Builds the tree of the samples of stalls[0..n) on the threads opts
 * selects (for SW_THREAD_ALL, pass thread_filter >= 0 to take only that
 * thread index of a single stall; -1 takes every thread together).
 */
int sw_tree_build(const struct sw_profile *p, struct sw_tree_stall *const *stalls, size_t n,
		  const struct sw_tree_options *opts, long thread_filter, struct sw_tree **ret);
/*
 * The distinct stacks of the samples sw_tree_build() would take, as it
 * takes them (rewritten and cut by the options), without the tree: for
 * renderers that print every path whole (folded, pprof), to which a tree
 * of hundreds of thousands of nodes a stall adds only its order.
 */
struct sw_tree_path {
	const uint32_t *path; /* frame ids, root first */
	uint32_t depth;       /* > 0: stacks left with no frame only count in the totals */
	uint32_t stack;       /* the profile's stack, when the options left it whole; else 0 */
	uint64_t weight, count;
};

struct sw_tree_paths {
	const struct sw_profile *profile;
	struct sw_tree_path *paths; /* in the order their stacks first appear */
	size_t n;
	uint64_t total, all, nsamples; /* as struct sw_tree's */
	bool counts_only;
};

int sw_tree_paths_build(const struct sw_profile *p, struct sw_tree_stall *const *stalls, size_t n,
			const struct sw_tree_options *opts, long thread_filter,
			struct sw_tree_paths **ret);
/*
 * Merges the paths whose frames are of the same functions, one by one, as
 * a tree merges them into one node: the first keeps its place and frames,
 * and takes the others' weights and counts.
 */
int sw_tree_paths_merge(struct sw_tree_paths *ps);
void sw_tree_paths_free(struct sw_tree_paths *ps);

/*
 * Drops a reference to t (trees from sw_tree_stall_default_tree() are
 * shared).  Trees go before their profile, which keeps the largest
 * node array a freed tree had for the next build.
 */
void sw_tree_free(struct sw_tree *t);

/*
 * The stall's tree with no structural option (main thread, nothing
 * rewritten or filtered), shared by the signature, the heaviest path and
 * default renderings, expanded at least down to expand_percent (0: whole):
 * the profile keeps the last one built, as renderers work a stall at a
 * time.  Free with sw_tree_free().
 */
int sw_tree_stall_default_tree(const struct sw_profile *p, struct sw_tree_stall *s,
			       double expand_percent, struct sw_tree **ret);

/* Whether o builds the same tree as no options (--min-percent is display only). */
bool sw_tree_options_structural_default(const struct sw_tree_options *o);

/* Whether a node passes --min-percent (roots and children alike). */
bool sw_tree_node_visible(const struct sw_tree *t, const struct sw_tree_node *n,
			  const struct sw_tree_options *opts);

/*
 * A preorder walk without recursion: the node after i, into i's children
 * only when descend is true; UINT32_MAX at the end.  Inline: renderers
 * walk every node of large trees.
 */
static inline uint32_t sw_tree_preorder_next(const struct sw_tree *t, uint32_t i, bool descend)
{
	if (descend && t->nodes[i].first_child != UINT32_MAX)
		return t->nodes[i].first_child;
	while (i != UINT32_MAX && t->nodes[i].next_sibling == UINT32_MAX)
		i = t->nodes[i].parent;
	return i == UINT32_MAX ? UINT32_MAX : t->nodes[i].next_sibling;
}

/*
 * The heaviest path from a root, following the heaviest child each step
 * (ties broken by image and linkage name): node indices root first into
 * path[0..max); returns the length.
 */
size_t sw_tree_heaviest(const struct sw_tree *t, uint32_t *path, size_t max);

/*
 * The version of the signature's recipe, written beside signatures in
 * NDJSON ("signature_version") and checked by --baseline: bump it whenever
 * a change makes the same hang hash differently, so that baselines made
 * before the change are refused instead of matching nothing.  2: deep
 * stacks keep both ends, and <unwinding stopped> is left out.  3: direct
 * recursion enters once.  4: a stall whose every stack stopped unwinding
 * is signed by the partial stacks' heaviest path (before, all such stalls
 * had one signature, that of an empty path).  5: the frames of the runtime
 * the program hands its work to (sw_tree_runtime_image()) count as the
 * app's own (before, every stall of a tclsh script had the
 * signature of its main()).  6: the toolchain's library compiled into the
 * app (sw_tree_source_is_toolchain()) is left out below the app's own
 * code, as system images are (before, one hang of a Rust program split
 * into as many signatures as std internals were heaviest).  7: so is Go's
 * standard library, with the compiler's wrappers and cgo's glue (before,
 * a Go program's one hang split by which of sort's internals was heaviest).
 * 8: so are the dependencies compiled into the app (sw_tree_source_is_dependency():
 * before, a hang in a Go module or a Rust crate split by which of its
 * internals was heaviest).  9: the path ends at the deepest frame that
 * holds more than half of the stall's time (before, whether a leaf took a
 * single sample could split one hang).
 */
#define SW_SIGNATURE_VERSION 9

/*
 * Computes (once) and returns the stall's signature: the heaviest path of
 * its main thread with no display option applied.
 */
uint64_t sw_tree_stall_signature(const struct sw_profile *p, struct sw_tree_stall *s);

/*
 * Rewriting single stacks as trees do (focus, exclude, hide-system,
 * flatten-recursion, invert, max-depth), for renderers that keep samples
 * apart (speedscope's time order).  sw_tree_rewrite() works in place on
 * frames[0..depth) and returns the new depth, or -1 when options drop the
 * sample.  The rewriter borrows p and o.
 */
struct sw_tree_rewriter;
int sw_tree_rewriter_new(const struct sw_profile *p, const struct sw_tree_options *o,
			 struct sw_tree_rewriter **ret);
void sw_tree_rewriter_free(struct sw_tree_rewriter *rw);
long sw_tree_rewrite(struct sw_tree_rewriter *rw, uint32_t *frames, size_t depth);

/* Whether the options (and thread_filter, as in sw_tree_build()) take a sample. */
bool sw_tree_sample_selected(const struct sw_tree_stall *s, const struct sw_tree_sample *smp,
			     const struct sw_tree_options *o, long thread_filter);

/* What tree nodes merge frames by: a hash of image and function. */
uint64_t sw_profile_frame_func(const struct sw_profile *p, uint32_t id);

/*
 * The name a frame is shown under: never NULL; "???" for an unknown
 * function in a known image, "0x..." for an address in no known image.
 * sw_profile_frame_name() gives the same for frame id, without reading the
 * frame (renderers name millions of nodes); NULL for no such frame.
 */
const char *sw_profile_frame_name(const struct sw_profile *p, uint32_t id, bool full);
const char *sw_tree_frame_name(const struct sw_profile *p, const struct sw_tree_frame *f, bool full,
			       char *scratch, size_t scratch_size);

#endif
