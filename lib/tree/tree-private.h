/*
 * The inside of struct sw_profile, shared by tree.c (storage) and
 * tree-build.c (trees, heaviest paths, signatures).
 */
#ifndef SW_TREE_PRIVATE_H
#define SW_TREE_PRIVATE_H

#include "tree.h"
#include "util/spare.h"

#define SW_FNV_OFFSET 0xcbf29ce484222325ull

/* Frame ids the pool of stacks may keep (32 MiB); the trie takes the stacks beyond. */
#define SW_TREE_POOL_MAX ((size_t)8 << 20)
/* The bit that marks a stack id as the trie's. */
#define SW_STACK_TRIE (1u << 31)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(8) char data[];
};

struct sw_frame_entry {
	struct sw_tree_frame f;
	uint64_t func;   /* what tree nodes merge by: image and function (or address) */
	bool toolchain;  /* sw_tree_source_is_toolchain(f.file), found once */
	bool dependency; /* sw_tree_source_is_dependency(f.file), found once */
};

struct sw_profile {
	const char *limit; /* the last ceiling reached, for sw_profile_limit() */
	struct arena_chunk *arena;
	const char **strings;
	size_t nstrings, strings_cap;

	struct sw_tree_image *images;
	size_t nimages, images_cap;
	uint32_t *image_table; /* image index (1-based) by hash, 0: empty */
	size_t image_table_cap;

	struct sw_frame_entry *frames;
	/*
	 * frames[i]'s function as a dense id (below), packed, beside the slot
	 * tree building keeps for the frame while it splits a node (zero
	 * between splits): a split reads both for every stack it groups, and
	 * side by side they are one cache miss, not two.
	 */
	struct sw_frame_fid {
		uint32_t fid, slot;
	} * frame_fid;
	const char **frame_shown; /* the name frames[i] is shown under, packed */
	size_t nframes, frames_cap;
	/*
	 * frame index + 1 in the low FRAME_SLOT_ID_BITS, 0: empty; the top bits
	 * the frame's hash's: a probe passes over another frame's slot without
	 * reading the frame (a cache miss each, most of the lookup's time)
	 */
	uint32_t *frame_table;
	size_t frame_table_cap;

	/*
	 * Function ids: the distinct keys tree nodes merge frames by
	 * (sw_frame_entry.func), numbered densely so that the trie and tree
	 * builds compare and hash 32 bits.
	 */
	uint64_t *funcs;
	size_t nfuncs, funcs_cap;
	uint32_t *func_table; /* function id + 1, 0: empty */
	size_t func_table_cap;

	/*
	 * Distinct stacks: each stored once, root first, as a run of frame ids
	 * in the pool.  Stack i (from 1; 0 is the empty stack) is runs[i], found
	 * by the hash of its frames in run_table (tree.c).  A sample's stack is
	 * then one read, whatever its depth.
	 */
	uint32_t *pool;
	size_t pool_len, pool_cap;
	struct stack_run {
		uint32_t off, depth;
	} * runs;
	size_t nruns, runs_cap;
	struct run_slot {
		uint32_t id;   /* 0: empty */
		uint32_t hash; /* the low bits of the stack's hash, which place it */
	} * run_table;
	size_t run_table_cap;
	/* the previous stack looked up: its frames and the hash of each prefix */
	uint32_t *seen_frames;
	uint64_t *seen_hash;
	size_t seen_depth, seen_cap;

	/*
	 * The trie, for the stacks a full pool has no room for (ids with
	 * SW_STACK_TRIE): deep stacks that differ near the leaf share their
	 * prefix in it instead of repeating it.  Stack i is frame
	 * stacks[i].frame called from stack stacks[i].parent.
	 */
	struct sw_trie_stack {
		uint32_t parent, frame;
	} * stacks;
	size_t nstacks, stacks_cap;
	/*
	 * A bit per stack: set once it has a child.  Below a stack without
	 * one every frame is new, and is added without looking it up.
	 */
	uint64_t *has_child;
	/*
	 * (parent, frame) -> stack, open addressing from a hash of the
	 * stack's whole path (tree.c): a slot holds only the stack (0: empty),
	 * whose key is read from stacks[] (a quarter of the memory of keeping
	 * keys in the table: millions of stacks).
	 */
	uint32_t *stack_table;
	size_t stack_table_cap;
	/* the previous trie stack's frames, their stacks and path hashes (tree.c) */
	uint32_t *last_frames, *last_stacks, *last_paths;
	size_t last_depth, last_cap;

	struct sw_tree_stall **stalls;
	size_t nstalls, stalls_cap;

	const char *summary_extra;

	/*
	 * Tree building's scratch (tree-build.c): per function (per frame, it
	 * is in frame_fid), kept zero between builds.
	 */
	uint32_t *split_fid_kid;
	size_t split_funcs_cap;
	/* the hash of each pool stack's functions (sw_tree_paths_merge()), 0: not yet */
	uint64_t *stack_funcs;
	size_t stack_funcs_cap;
	/* the last tree's size in nodes, whole [0] and expanded in part [1]: a first guess */
	size_t nodes_hint[2];

	/*
	 * The largest node array of a tree freed, for the next build: a whole
	 * tree of a long stall is tens of MB, new pages each time otherwise.
	 */
	struct sw_spare spare_nodes;
	/* the same for a stall's extra_json (sw_tree_stall_drop_extra_json()) */
	struct sw_spare spare_text;
	/* and for sw_tree_paths_merge()'s table (folded: one a stall, 512 KB for 10k paths) */
	struct sw_spare spare_merge;

	/* the last default tree built (sw_tree_stall_default_tree()) */
	const struct sw_tree_stall *cached_stall;
	struct sw_tree *cached_tree;
};

/* The frames of stack, root first, when the pool holds them; NULL for the trie's and 0. */
const uint32_t *sw_profile_path(const struct sw_profile *p, uint32_t stack, size_t *ret_depth);

/* FNV-1a, continuing from h. */
uint64_t sw_tree_hash_bytes(uint64_t h, const void *data, size_t len);

#endif
