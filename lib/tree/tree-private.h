/*
 * The inside of struct sw_profile, shared by tree.c (storage) and
 * tree-build.c (trees, heaviest paths, signatures).
 */
#ifndef SW_TREE_PRIVATE_H
#define SW_TREE_PRIVATE_H

#include "tree.h"
#include "util/spare.h"

#define SW_FNV_OFFSET 0xcbf29ce484222325ull

/* Frame ids the whole-stack cache may keep (32 MiB). */
#define SW_TREE_POOL_MAX ((size_t)8 << 20)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(8) char data[];
};

struct sw_frame_entry {
	struct sw_tree_frame f;
	uint64_t func; /* what tree nodes merge by: image and function (or address) */
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
	uint32_t *frame_fid;      /* frames[i]'s function as a dense id (below), packed */
	const char **frame_shown; /* the name frames[i] is shown under, packed */
	size_t nframes, frames_cap;
	uint32_t *frame_table; /* frame index + 1, 0: empty */
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
	 * The trie: stack i is frame stacks[i].frame called from stack
	 * stacks[i].parent.
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
	/* the previous sample's frames, their stacks and path hashes (tree.c) */
	uint32_t *last_frames, *last_stacks, *last_paths;
	size_t last_depth, last_cap;

	/* whole stacks seen before: hash -> leaf, frames kept in a bounded pool */
	struct whole_slot {
		uint64_t hash;
		uint64_t pool_off;
		uint32_t leaf, depth;
	} * whole;
	size_t nwhole, whole_cap;
	uint32_t *pool;
	size_t pool_len, pool_cap;
	/*
	 * The frames of the stacks samples end in (trie leaves), root first, in
	 * the same pool: tree builds read a stack at any depth without walking
	 * the trie.  A leaf the pool had no room for is walked instead.
	 */
	struct path_slot {
		uint32_t leaf, depth; /* leaf 0: empty */
		uint64_t pool_off;
	} * paths;
	size_t npaths, paths_cap;

	struct sw_tree_stall **stalls;
	size_t nstalls, stalls_cap;

	const char *summary_extra;

	/*
	 * Tree building's scratch (tree-build.c): per frame and per function,
	 * kept zero between builds.
	 */
	uint32_t *split_frame_slot, *split_fid_kid;
	size_t split_frames_cap, split_funcs_cap;
	/* the last tree's size in nodes, whole [0] and expanded in part [1]: a first guess */
	size_t nodes_hint[2];

	/*
	 * The largest node array of a tree freed, for the next build: a whole
	 * tree of a long stall is tens of MB, new pages each time otherwise.
	 */
	struct sw_spare spare_nodes;
	/* the same for a stall's extra_json (sw_tree_stall_drop_extra_json()) */
	struct sw_spare spare_text;
	/* and for a tree's names (sw_tree_node_names()) */
	struct sw_spare spare_names;

	/* the last default tree built (sw_tree_stall_default_tree()) */
	const struct sw_tree_stall *cached_stall;
	struct sw_tree *cached_tree;
};

/* The frames of trie stack leaf, root first, when the pool holds them; NULL otherwise. */
const uint32_t *sw_profile_path(const struct sw_profile *p, uint32_t leaf, size_t *ret_depth);

/* FNV-1a, continuing from h. */
uint64_t sw_tree_hash_bytes(uint64_t h, const void *data, size_t len);

#endif
