/*
 * The adapter from collector stalls to profile stalls (see report.h):
 * images are mapped to profile images once, addresses are symbolicated once
 * into runs of profile frame ids (the function and the calls inlined into
 * it, outermost first), and samples become stacks of those ids.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/hash.h"
#include "util/table-alloc.h"
#include "demangle/demangle.h"
#include "render/render-stall.h"
#include "report.h"
#include "symbols/perf-map.h"
#include "symbols/symbolicate.h"
#include "symbols/symsearch.h"
#include "util/time-units.h"

#define MAX_MISSING_TEXT 8192
/*
 * Raw stacks remembered with the profile stack (its id) they became, so
 * a stack seen again costs one hash and one compare instead of an image
 * search and an address lookup per frame and a second hash of its frame
 * ids: at most this many raw frames (8 bytes each).  Past it, stacks take
 * the per-frame path.
 */
#define MEMO_MAX_FRAMES (8u << 20)

struct image_map {
	uint32_t profile_index; /* the profile's image, which holds path, id and address */
	bool failed;            /* the symbolicator could not read it */
};

struct addr_slot {
	uint64_t hash;
	uint64_t addr;
	uint32_t key; /* the image map entry + 1, 0 for no image */
	uint32_t start, n;
	bool used, ret;
};

#define IMAGE_KEYS 256 /* images whose keys frames_at() keeps: a power of two */

struct sw_report {
	struct sw_profile *p;
	struct sw_symsearch *search;
	struct sw_symbolicator *sym;
	struct image_map *images;
	size_t nimages, images_cap;
	uint32_t *key_of; /* map entry + 1 by profile image index, 0: none yet */
	size_t key_of_cap;
	struct addr_slot *slots;
	size_t nslots, slots_cap;
	uint32_t *ids;
	size_t nids, ids_cap;
	uint32_t *stack;
	/* the raw stack memo, valid for images epoch memo_epoch */
	struct memo_slot {
		uint64_t hash;
		uint32_t raw; /* offset in memo_raw */
		uint32_t nraw;
		uint32_t leaf; /* the profile's stack */
	} * memo;
	size_t nmemo, memo_cap;
	uint64_t *memo_raw;
	size_t raw_len, raw_cap;
	uint64_t memo_epoch;
	/*
	 * Raw address (and whether it is a return address) -> its run of
	 * r->ids, for the images of memo_epoch: a new stack's frames skip the
	 * image search and the image's interning when the address was seen.
	 */
	struct raw_slot {
		uint64_t key;   /* addr << 1 | ret, + 1; 0: empty */
		uint32_t start; /* the frame id itself when n is 1 (most are) */
		/*
		 * n in the low RAW_N_BITS, the image's key (0: none) above, for
		 * the slots when the epoch ends: sixteen bytes a slot, so that
		 * the table of a long recording's addresses stays a few MB
		 */
		uint32_t n_image;
	} * raw_slots;
	size_t nraw_slots, raw_slots_cap;
	/*
	 * The profile's stack of each entry of a recording's stack table, valid
	 * when its gen is table_gen (the images epoch's number): the memo of
	 * recordings that have a table, with no frames to compare.
	 */
	struct by_table {
		uint32_t leaf, gen;
	} * by_table;
	size_t by_table_cap;
	uint32_t table_gen;
	/*
	 * The leaf of each of the current stall's distinct stacks
	 * (sw_stall_sample.stack) once known, NO_LEAF before: a stack the
	 * stall repeats skips the memo.  Samples of a stack table have no
	 * such number: they go by their entry's by_table.
	 */
	uint32_t *leaf_of;
	size_t leaf_of_cap;
	/*
	 * The map key (map_image()) of the collector's images of
	 * image_keys_epoch, by where the image lies in the collector's array:
	 * a new address skips hashing its image's path and id.
	 */
	struct image_key {
		const struct sw_stall_image *im;
		uint32_t key;
	} image_keys[IMAGE_KEYS];
	uint64_t image_keys_epoch;
	struct sw_buf missing, name, full;
	uint32_t stopped_frame; /* SW_TREE_UNWINDING_STOPPED's frame id + 1, 0 until needed */
	bool no_raw;
	/* names of code outside every image: the map, the stream's (live) or a file's */
	struct sw_perf_map *perf_map;
	bool perf_map_live;
	uint64_t perf_map_pid;   /* the live map's process */
	uint32_t perf_map_image; /* the profile image its frames go under, 0 until needed */
};

int sw_report_new(struct sw_profile *p, struct sw_symsearch *search, struct sw_report **ret)
{
	struct sw_report *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->p = p;
	r->search = search;
	r->table_gen = 1; /* no entry's yet */
	sw_buf_init(&r->missing, MAX_MISSING_TEXT);
	sw_buf_init(&r->name, 1 << 16);
	sw_buf_init(&r->full, 1 << 16);
	r->stack = malloc(SW_TREE_MAX_DEPTH * sizeof(*r->stack));
	int e = r->stack ? sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &r->sym) : -ENOMEM;
	if (e < 0) {
		sw_report_free(r);
		return e;
	}
	if (search)
		sw_symbolicator_set_symsearch(r->sym, search);
	*ret = r;
	return 0;
}

void sw_report_free(struct sw_report *r)
{
	if (!r)
		return;
	sw_symbolicator_free(r->sym);
	free(r->images);
	free(r->key_of);
	free(r->slots);
	free(r->raw_slots);
	free(r->ids);
	free(r->stack);
	free(r->leaf_of);
	free(r->memo);
	free(r->memo_raw);
	free(r->by_table);
	sw_perf_map_free(r->perf_map);
	sw_buf_finish(&r->missing);
	sw_buf_finish(&r->name);
	sw_buf_finish(&r->full);
	free(r);
}

void sw_report_drop_caches(struct sw_report *r)
{
	free(r->slots);
	free(r->raw_slots);
	free(r->ids);
	free(r->memo);
	free(r->memo_raw);
	free(r->by_table);
	r->slots = NULL;
	r->raw_slots = NULL;
	r->ids = NULL;
	r->memo = NULL;
	r->memo_raw = NULL;
	r->by_table = NULL;
	r->by_table_cap = 0;
	r->nslots = r->slots_cap = r->nraw_slots = r->raw_slots_cap = 0;
	r->nids = r->ids_cap = r->nmemo = r->memo_cap = r->raw_len = r->raw_cap = 0;
}

void sw_report_set_raw_stacks(struct sw_report *r, bool on)
{
	r->no_raw = !on;
}

int sw_report_set_perf_map(struct sw_report *r, const char *path)
{
	sw_perf_map_free(r->perf_map);
	r->perf_map = NULL;
	r->perf_map_image = 0;
	r->perf_map_live = !path;
	return path ? sw_perf_map_new(path, 0, &r->perf_map) : 0;
}

/* The live map of the stream's process, when it is a Linux process with a pid. */
static int live_perf_map(struct sw_report *r, const struct sw_stalls_info *in)
{
	if (!in->have_hello || in->platform != SW_PLATFORM_LINUX || !in->pid ||
	    (r->perf_map && in->pid == r->perf_map_pid))
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%llu.map", (unsigned long long)in->pid);
	sw_perf_map_free(r->perf_map); /* its names are the profile's now */
	r->perf_map = NULL;
	r->perf_map_image = 0;
	r->perf_map_pid = in->pid;
	/* a file from before the process started is another process's, of the same pid */
	int64_t started = (int64_t)(in->wall_ns / SW_NS_PER_S);
	return sw_perf_map_new(path, started > 1 ? started - 1 : 0, &r->perf_map);
}

/* The frame of a perf map's line for addr in *f and its image (profile index), or 0. */
static int perf_map_frame(struct sw_report *r, uint64_t addr, bool ret, struct sw_frame *f,
			  uint32_t *ret_image)
{
	uint64_t start;
	const char *name = sw_perf_map_lookup(r->perf_map, addr - (ret ? 1 : 0), &start);
	if (!name)
		return 0;
	if (!r->perf_map_image) {
		/* one name for every process's map: signatures stay the same from run to run */
		struct sw_tree_image ti = {.name = "JIT", .path = sw_perf_map_path(r->perf_map)};
		uint32_t idx;
		int e = sw_profile_image(r->p, &ti, &idx);
		if (e < 0)
			return e;
		r->perf_map_image = idx;
	}
	*f = (struct sw_frame){.function = name, .offset = addr - start, .flags = SW_FRAME_SYMBOL};
	*ret_image = r->perf_map_image;
	return 1;
}

const char *sw_report_missing(const struct sw_report *r)
{
	/* the buffer keeps room for its terminator: sw_buf_str() never grows it */
	return r->missing.len ? sw_buf_str((struct sw_buf *)&r->missing) : NULL;
}

size_t sw_report_split_missing(const struct sw_report *r, struct sw_buf *out)
{
	return r->sym ? sw_symbolicator_split_missing(r->sym, out) : 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* The map entry (index + 1) of an image, added when new; -E2BIG past the profile's limit. */
static int map_image(struct sw_report *r, const struct sw_report_image *im, uint32_t *ret_key)
{
	struct sw_tree_image ti = {
	    .name = im->path ? base_name(im->path) : im->name,
	    .path = im->path,
	    .id_len = im->id_len <= sizeof(ti.id) ? im->id_len : 0,
	    .load_address = im->load_address,
	    .text_size = im->text_size,
	    .system = im->system,
	};
	if (im->id)
		memcpy(ti.id, im->id, ti.id_len);
	uint32_t idx;
	int e = sw_profile_image(r->p, &ti, &idx);
	if (e < 0)
		return e;
	if (idx < r->key_of_cap && r->key_of[idx]) {
		*ret_key = r->key_of[idx];
		return 0;
	}
	if (idx >= r->key_of_cap) {
		size_t cap = r->key_of_cap ? r->key_of_cap : 64;
		while (cap <= idx)
			cap *= 2;
		uint32_t *k = realloc(r->key_of, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		memset(k + r->key_of_cap, 0, (cap - r->key_of_cap) * sizeof(*k));
		r->key_of = k;
		r->key_of_cap = cap;
	}
	if (r->nimages == r->images_cap) {
		size_t cap = r->images_cap ? r->images_cap * 2 : 64;
		struct image_map *n = realloc(r->images, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->images = n;
		r->images_cap = cap;
	}
	r->images[r->nimages++] = (struct image_map){idx, false};
	r->key_of[idx] = (uint32_t)r->nimages;
	*ret_key = (uint32_t)r->nimages;
	return 0;
}

/* Demangled names: simplified into r->name, full into r->full; NULL when not mangled. */
static void demangled(struct sw_report *r, const char *linkage, const char **ret_name,
		      const char **ret_full)
{
	*ret_name = *ret_full = NULL;
	if (!linkage)
		return;
	sw_buf_reset(&r->name);
	sw_buf_reset(&r->full);
	if (sw_demangle(linkage, SW_DEMANGLE_SIMPLIFIED, &r->name) == 1)
		*ret_name = sw_buf_str(&r->name);
	if (sw_demangle(linkage, 0, &r->full) == 1)
		*ret_full = sw_buf_str(&r->full);
}

static void note_missing(struct sw_report *r, struct image_map *m, const struct sw_report_image *im,
			 const struct sw_error *err)
{
	if (m->failed)
		return;
	m->failed = true;
	/* the kernel's vDSO has no file to read: not worth a warning */
	if (im->path &&
	    (!strncmp(im->path, "linux-vdso", 10) || !strncmp(im->path, "linux-gate", 10)))
		return;
	char id[65] = "", line[1024];
	if (im->id_len)
		sw_symsearch_id_str(im->id, im->id_len, im->macho, id);
	const char *what = im->path ? im->path : im->name ? im->name : "?";
	snprintf(line, sizeof(line), "  %s%s%s: %s\n", what, id[0] ? " " : "", id,
		 sw_error_str(err));
	/* one line per image, however many load addresses a payload gave it */
	if (!r->missing.len || !strstr(sw_buf_str(&r->missing), line))
		sw_buf_puts(&r->missing, line);
}

/* Room for n more frame ids in r->ids. */
static int ids_reserve(struct sw_report *r, size_t n)
{
	if (r->nids + n <= r->ids_cap)
		return 0;
	size_t cap = r->ids_cap ? r->ids_cap * 2 : 1024;
	while (cap < r->nids + n)
		cap *= 2;
	uint32_t *ids = realloc(r->ids, cap * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	r->ids = ids;
	r->ids_cap = cap;
	return 0;
}

/* Symbolicates addr into profile frame ids appended to r->ids; returns how many. */
static int symbolicate(struct sw_report *r, const struct sw_report_image *im, uint32_t key,
		       uint64_t addr, bool ret)
{
	struct image_map *m = key ? &r->images[key - 1] : NULL;
	struct sw_frame frames[SW_SYMBOLICATE_MAX_FRAMES];
	int n = 0;
	if (m && !m->failed) {
		struct sw_image_ref ref = {
		    .path = im->path,
		    .id = im->id_len ? im->id : NULL,
		    .id_len = im->id_len,
		    .arch = im->arch && im->arch[0] ? im->arch : NULL,
		    .load_addr = im->load_address,
		};
		struct sw_error err = {0};
		n = sw_symbolicate(r->sym, &ref, addr, ret, frames, SW_SYMBOLICATE_MAX_FRAMES,
				   &err);
		if (n < 0)
			note_missing(r, m, im, &err);
	}
	bool hinted = false;
	uint32_t jit_image = 0;
	if (n <= 0 && !im && r->perf_map) {
		/* code outside every image: a JIT's, named by its perf map */
		n = perf_map_frame(r, addr, ret, &frames[0], &jit_image);
		if (n < 0)
			return n;
	}
	if (n <= 0 && im && im->hints) {
		/* nothing better: the name the agent read from the image in memory */
		const struct sw_stall_hint *h =
		    sw_stalls_hint_at(im->hints, addr - (ret ? 1 : 0) - im->load_address);
		if (h) {
			frames[0] = (struct sw_frame){
			    .function = h->name,
			    .offset = addr - im->load_address - h->offset,
			    .flags = SW_FRAME_SYMBOL,
			};
			n = 1;
			hinted = true;
		}
	}
	if (n <= 0) {
		frames[0] = (struct sw_frame){0};
		n = 1;
	}
	if (ids_reserve(r, (size_t)n) < 0)
		return -ENOMEM;
	/* the symbolicator gives the innermost inlined call first: reverse */
	for (int k = n - 1; k >= 0; k--) {
		const struct sw_frame *f = &frames[k];
		struct sw_tree_frame tf = {
		    .image = m ? m->profile_index : jit_image,
		    .linkage = f->function,
		    .file = f->file,
		    .line = f->line,
		    .address = addr,
		    .offset = f->offset,
		    .has_offset = (f->flags & SW_FRAME_SYMBOL) && k == n - 1,
		    .inlined = k < n - 1,
		    .hinted = hinted,
		};
		demangled(r, f->function, &tf.name, &tf.full_name);
		int e = sw_profile_frame(r->p, &tf, &r->ids[r->nids]);
		if (e < 0)
			return e;
		r->nids++;
	}
	return n;
}

static uint64_t slot_hash(uint32_t key, uint64_t addr, bool ret)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull ^ addr ^ ((uint64_t)ret << 63);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static int grow_slots(struct sw_report *r)
{
	size_t cap = r->slots_cap ? r->slots_cap * 2 : 4096;
	struct addr_slot *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < r->slots_cap; i++) {
		if (!r->slots[i].used)
			continue;
		size_t j = r->slots[i].hash & (cap - 1);
		while (t[j].used)
			j = (j + 1) & (cap - 1);
		t[j] = r->slots[i];
	}
	free(r->slots);
	r->slots = t;
	r->slots_cap = cap;
	return 0;
}

/*
 * The slot of (key, addr, ret): found (used) or free for it, or NULL
 * when the table cannot grow.
 */
static struct addr_slot *addr_slot(struct sw_report *r, uint32_t key, uint64_t addr, bool ret,
				   uint64_t *ret_hash)
{
	if (r->nslots * 2 >= r->slots_cap && grow_slots(r) < 0)
		return NULL;
	uint64_t h = slot_hash(key, addr, ret);
	size_t j = h & (r->slots_cap - 1);
	for (; r->slots[j].used; j = (j + 1) & (r->slots_cap - 1)) {
		const struct addr_slot *s = &r->slots[j];
		if (s->hash == h && s->addr == addr && s->key == key && s->ret == ret)
			break;
	}
	*ret_hash = h;
	return &r->slots[j];
}

/*
 * The run of frame ids of addr in the image of key (0: none) into
 * *ret_start and its length: from the slots when an earlier lookup put it
 * there, else symbolicated, and put there unless it is to wait for the
 * epoch's end (keep false, while the slots are empty).
 */
static int frames_of(struct sw_report *r, const struct sw_report_image *im, uint32_t key,
		     uint64_t addr, bool ret, bool keep, uint32_t *ret_start)
{
	uint64_t h = 0;
	struct addr_slot *s = NULL;
	if (keep || r->nslots) {
		if (!(s = addr_slot(r, key, addr, ret, &h)))
			return -ENOMEM;
		if (s->used) {
			*ret_start = s->start;
			return (int)s->n;
		}
	}
	uint32_t start = (uint32_t)r->nids;
	int n = symbolicate(r, im, key, addr, ret);
	if (n < 0)
		return n;
	if (s) {
		*s = (struct addr_slot){h, addr, key, start, (uint32_t)n, true, ret};
		r->nslots++;
	}
	*ret_start = start;
	return n;
}

int sw_report_frames(struct sw_report *r, const struct sw_report_image *im, uint64_t addr, bool ret,
		     const uint32_t **ret_ids, size_t *ret_n)
{
	uint32_t key = 0, start;
	int e = im ? map_image(r, im, &key) : 0;
	int n = e < 0 ? e : frames_of(r, im, key, addr, ret, true, &start);
	if (n < 0)
		return n;
	*ret_ids = r->ids + start;
	*ret_n = (size_t)n;
	return 0;
}

#define RAW_N_BITS    8
#define RAW_N_MAX     ((1u << RAW_N_BITS) - 1)
#define RAW_IMAGE_MAX (UINT32_MAX >> RAW_N_BITS)

static uint32_t raw_n(const struct raw_slot *rs)
{
	return rs->n_image & RAW_N_MAX;
}

static uint32_t raw_image(const struct raw_slot *rs)
{
	return rs->n_image >> RAW_N_BITS;
}

/*
 * The images epoch ends: what its addresses came to goes to the slots,
 * by image, where the next epochs find it (frames_at() skips the slots
 * while they are empty: most recordings have a single epoch).
 */
static int raw_slots_to_slots(struct sw_report *r)
{
	for (size_t i = 0; i < r->raw_slots_cap; i++) {
		const struct raw_slot *rs = &r->raw_slots[i];
		if (!rs->key)
			continue;
		uint64_t addr = (rs->key - 1) >> 1, h;
		bool ret = (rs->key - 1) & 1;
		struct addr_slot *s = addr_slot(r, raw_image(rs), addr, ret, &h);
		if (!s)
			return -ENOMEM;
		if (s->used)
			continue;
		/* a run of one is the frame id itself in the raw slot; the slots want it in ids */
		uint32_t start = rs->start;
		if (raw_n(rs) == 1) {
			if (ids_reserve(r, 1) < 0)
				return -ENOMEM;
			start = (uint32_t)r->nids;
			r->ids[r->nids++] = rs->start;
		}
		*s = (struct addr_slot){h, addr, raw_image(rs), start, raw_n(rs), true, ret};
		r->nslots++;
	}
	return 0;
}

/* The frame id of the node standing for n frames left out of a deep stack. */
static int left_out(struct sw_report *r, uint64_t n)
{
	char name[64];
	snprintf(name, sizeof(name), "<%" PRIu64 " frames left out>", n);
	struct sw_tree_frame f = {.linkage = SW_TREE_FRAMES_LEFT_OUT, .name = name}; /* interned */
	uint32_t id;
	int e = sw_profile_frame(r->p, &f, &id);
	return e < 0 ? e : (int)id;
}

static int grow_raw_slots(struct sw_report *r)
{
	size_t cap = r->raw_slots_cap ? r->raw_slots_cap * 2 : 4096;
	struct raw_slot *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < r->raw_slots_cap; i++) {
		if (!r->raw_slots[i].key)
			continue;
		size_t j = slot_hash(0, r->raw_slots[i].key, false) & (cap - 1);
		while (t[j].key)
			j = (j + 1) & (cap - 1);
		t[j] = r->raw_slots[i];
	}
	free(r->raw_slots);
	r->raw_slots = t;
	r->raw_slots_cap = cap;
	return 0;
}

/* map_image() of the collector's image im, which ri describes, kept for its epoch. */
static int image_key(struct sw_report *r, const struct sw_stalls *c,
		     const struct sw_stall_image *im, const struct sw_report_image *ri,
		     uint32_t *ret_key)
{
	uint64_t epoch = sw_stalls_images_epoch(c);
	if (epoch != r->image_keys_epoch) {
		memset(r->image_keys, 0, sizeof(r->image_keys));
		r->image_keys_epoch = epoch;
	}
	/* the collector's images are one array: neighbours take neighbouring entries */
	struct image_key *k = &r->image_keys[(uintptr_t)im / sizeof(*im) & (IMAGE_KEYS - 1)];
	if (k->im == im) {
		*ret_key = k->key;
		return 0;
	}
	int e = map_image(r, ri, ret_key);
	if (e >= 0)
		*k = (struct image_key){im, *ret_key};
	return e;
}

/* A raw slot's key: the address and whether it is a return address, never 0. */
static uint64_t raw_key(uint64_t addr, bool ret)
{
	return (addr << 1 | ret) + 1;
}

/* The frame ids of a raw address under the collector's current images. */
static int frames_at(struct sw_report *r, const struct sw_stalls *c, uint64_t addr, bool ret,
		     const uint32_t **ret_ids, size_t *ret_n)
{
	if (r->nraw_slots * 4 >= r->raw_slots_cap * 3 && grow_raw_slots(r) < 0)
		return -ENOMEM;
	uint64_t key = raw_key(addr, ret);
	size_t j = slot_hash(0, key, false) & (r->raw_slots_cap - 1);
	for (; r->raw_slots[j].key; j = (j + 1) & (r->raw_slots_cap - 1))
		if (r->raw_slots[j].key == key && (addr << 1 >> 1) == addr) {
			const struct raw_slot *rs = &r->raw_slots[j];
			*ret_n = raw_n(rs);
			*ret_ids = *ret_n == 1 ? &rs->start : r->ids + rs->start;
			return 0;
		}
	const struct sw_stall_image *im = sw_stalls_image_at(c, addr);
	struct sw_report_image ri;
	if (im)
		ri = (struct sw_report_image){
		    .path = im->path,
		    .id = im->id,
		    .id_len = im->id_len,
		    .macho = im->id_kind == SW_ID_UUID,
		    .arch = im->arch,
		    .load_address = im->load_address,
		    .text_size = im->text_size,
		    .hints = im->nhints ? im : NULL,
		};
	if (!im && r->perf_map_live) {
		int e = live_perf_map(r, sw_stalls_info(c));
		if (e < 0)
			return e;
	}
	/* an address with its top bit set does not fit the key: looked up each time */
	if ((addr << 1 >> 1) != addr)
		return sw_report_frames(r, im ? &ri : NULL, addr, ret, ret_ids, ret_n);
	uint32_t image = 0, start;
	int e = im ? image_key(r, c, im, &ri, &image) : 0;
	/* the slots are filled when the epoch ends: till then, only what an earlier one left */
	int n = e < 0 ? e : frames_of(r, im ? &ri : NULL, image, addr, ret, false, &start);
	if (n < 0)
		return n;
	*ret_ids = r->ids + start;
	*ret_n = (size_t)n;
	/* keys are map entries, one per profile image */
	_Static_assert(SW_SYMBOLICATE_MAX_FRAMES <= RAW_N_MAX, "a raw slot holds every run");
	_Static_assert(SW_TREE_MAX_IMAGES <= RAW_IMAGE_MAX, "a raw slot holds every image key");
	r->raw_slots[j] = (struct raw_slot){key, n == 1 ? r->ids[start] : start,
					    (uint32_t)n | image << RAW_N_BITS};
	r->nraw_slots++;
	return 0;
}

/* How many raw slots ahead of its lookups convert() fetches. */
#define RAW_AHEAD 16

/*
 * The raw slot frame k of smp starts its probe at, for a prefetch (made
 * by the caller: GCC drops the call of a function that only prefetches).
 */
static const struct raw_slot *raw_home(const struct sw_report *r, const struct sw_stall_sample *smp,
				       uint32_t k)
{
	uint64_t key = raw_key(smp->frames[k], k > 0);
	return &r->raw_slots[slot_hash(0, key, false) & (r->raw_slots_cap - 1)];
}

/* Converts a sample's raw frames (leaf first) to profile frame ids (root first) in r->stack. */
static int convert(struct sw_report *r, const struct sw_stalls *c,
		   const struct sw_stall_sample *smp, size_t *ret_depth)
{
	size_t depth = 0;
	int e;
	if (sw_stalls_sample_stopped(c, smp)) {
		/* a partial stack: under one marked root, not beside the thread's entry */
		if (!r->stopped_frame) {
			struct sw_tree_frame f = {.name = SW_TREE_UNWINDING_STOPPED};
			uint32_t id;
			if ((e = sw_profile_frame(r->p, &f, &id)) < 0)
				return e;
			r->stopped_frame = id + 1;
		}
		r->stack[depth++] = r->stopped_frame - 1;
	}
	/*
	 * the slots of the first RAW_AHEAD addresses first, in the order the
	 * lookups below take them (the root first), then each lookup fetches
	 * the slot RAW_AHEAD after its own: a few loads in flight all along,
	 * not a whole stack's, which filled the core's miss buffers and left
	 * the prefetches themselves waiting
	 */
	if (r->raw_slots_cap)
		for (uint32_t k = smp->depth; k-- > 0 && k + RAW_AHEAD >= smp->depth;)
			__builtin_prefetch(raw_home(r, smp, k));
	/* frames are leaf first; every frame but the leaf is a return address */
	for (uint32_t k = smp->depth; k-- > 0;) {
		if (k >= RAW_AHEAD && r->raw_slots_cap)
			__builtin_prefetch(raw_home(r, smp, k - RAW_AHEAD));
		if ((smp->flags & SW_SAMPLE_ELIDED) && k + 1 == smp->elided_at && smp->elided) {
			/* the outermost frames are in: one node says how many came between */
			if ((e = left_out(r, smp->elided)) < 0)
				return e;
			if (depth < SW_TREE_MAX_DEPTH)
				r->stack[depth++] = (uint32_t)e;
		}
		const uint32_t *ids;
		size_t n;
		e = frames_at(r, c, smp->frames[k], k > 0, &ids, &n);
		if (e < 0)
			return e;
		if (depth + n > SW_TREE_MAX_DEPTH)
			break;
		/* most addresses are one frame: a call to memcpy would cost more than the copy */
		for (size_t i = 0; i < n; i++)
			r->stack[depth++] = ids[i];
	}
	*ret_depth = depth;
	return 0;
}

static int grow_memo(struct sw_report *r)
{
	size_t cap = r->memo_cap ? r->memo_cap * 2 : 4096;
	struct memo_slot *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < r->memo_cap; i++) {
		if (!r->memo[i].hash)
			continue;
		size_t j = r->memo[i].hash & (cap - 1);
		while (t[j].hash)
			j = (j + 1) & (cap - 1);
		t[j] = r->memo[i];
	}
	free(r->memo);
	r->memo = t;
	r->memo_cap = cap;
	return 0;
}

static bool memo_reserve(void **arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : 65536;
	while (n < need)
		n *= 2;
	void *a = realloc(*arr, n * size);
	if (!a)
		return false;
	*arr = a;
	*cap = n;
	return true;
}

/* Remembers a converted stack while there is room; failing to is harmless. */
static void memo_add(struct sw_report *r, size_t j, uint64_t h, const struct sw_stall_sample *smp,
		     uint32_t leaf)
{
	if (r->raw_len + smp->depth > MEMO_MAX_FRAMES ||
	    !memo_reserve((void **)&r->memo_raw, &r->raw_cap, r->raw_len + smp->depth,
			  sizeof(*r->memo_raw)))
		return;
	memcpy(r->memo_raw + r->raw_len, smp->frames, smp->depth * sizeof(*r->memo_raw));
	r->memo[j] = (struct memo_slot){h, (uint32_t)r->raw_len, smp->depth, leaf};
	r->raw_len += smp->depth;
	r->nmemo++;
}

/* Converts a sample's stack to the profile's stack (its id). */
static int convert_leaf(struct sw_report *r, const struct sw_stalls *c,
			const struct sw_stall_sample *smp, uint32_t *ret)
{
	size_t depth;
	int e = convert(r, c, smp, &depth);
	return e < 0 ? e : sw_profile_stack_id(r->p, r->stack, depth, ret);
}

#define NO_LEAF UINT32_MAX

/*
 * The memo's hash of a sample's raw stack (the collector's, never 0: it
 * marks an empty slot), its slot fetched unless the stall had the stack
 * before: samples are looked at a few ahead of their turn, so the memo's
 * random reads overlap.
 */
static uint64_t memo_fetch(const struct sw_report *r, const struct sw_stall_sample *smp)
{
	uint64_t h = smp->hash ? smp->hash : sw_stalls_stack_hash(smp->frames, smp->depth);
	if (smp->table) {
		if (smp->table <= r->by_table_cap)
			__builtin_prefetch(&r->by_table[smp->table - 1]);
	} else if (r->leaf_of[smp->stack] == NO_LEAF && r->memo_cap) {
		__builtin_prefetch(&r->memo[h & (r->memo_cap - 1)]);
	}
	return h;
}

/* Fetches the raw frames the memo's first slot for h holds, when it is h's and needed. */
static void memo_fetch_frames(const struct sw_report *r, const struct sw_stall_sample *smp,
			      uint64_t h)
{
	if (!r->memo_cap || smp->table || r->leaf_of[smp->stack] != NO_LEAF)
		return;
	const struct memo_slot *m = &r->memo[h & (r->memo_cap - 1)];
	if (m->hash != h)
		return;
	const char *raw = (const char *)(r->memo_raw + m->raw);
	for (size_t off = 0; off < m->nraw * sizeof(*r->memo_raw); off += 64)
		__builtin_prefetch(raw + off);
}

/* The profile's stack of a sample with a stack table entry, converted once per images epoch. */
static int table_leaf(struct sw_report *r, const struct sw_stalls *c,
		      const struct sw_stall_sample *smp, uint32_t *ret)
{
	if (smp->table > r->by_table_cap) {
		size_t cap = r->by_table_cap ? r->by_table_cap : 4096;
		while (cap < smp->table)
			cap *= 2;
		struct by_table *t = realloc(r->by_table, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + r->by_table_cap, 0, (cap - r->by_table_cap) * sizeof(*t));
		r->by_table = t;
		r->by_table_cap = cap;
	}
	struct by_table *b = &r->by_table[smp->table - 1];
	if (b->gen != r->table_gen) {
		int e = convert_leaf(r, c, smp, &b->leaf);
		if (e < 0)
			return e;
		b->gen = r->table_gen;
	}
	*ret = b->leaf;
	return 0;
}

/*
 * The profile's stack of a sample whose raw stack hashes to h: from the
 * memo when the same raw stack was seen under the same images, else
 * converted and remembered.
 */
static int stack_leaf(struct sw_report *r, const struct sw_stalls *c,
		      const struct sw_stall_sample *smp, uint64_t h, uint32_t *ret)
{
	uint64_t epoch = sw_stalls_images_epoch(c);
	if (epoch != r->memo_epoch) {
		if (r->memo)
			memset(r->memo, 0, r->memo_cap * sizeof(*r->memo));
		r->nmemo = r->raw_len = 0;
		int e = raw_slots_to_slots(r);
		if (e < 0)
			return e;
		if (r->raw_slots)
			memset(r->raw_slots, 0, r->raw_slots_cap * sizeof(*r->raw_slots));
		r->nraw_slots = 0;
		r->memo_epoch = epoch;
		r->table_gen++;
	}
	/* the memo knows raw frames only: not how many were left out, nor a stop */
	if ((smp->flags & SW_SAMPLE_ELIDED) || sw_stalls_sample_stopped(c, smp))
		return convert_leaf(r, c, smp, ret);
	if (smp->table)
		return table_leaf(r, c, smp, ret);
	uint32_t *known = &r->leaf_of[smp->stack];
	if (*known != NO_LEAF) {
		*ret = *known;
		return 0;
	}
	if (r->nmemo * 2 >= r->memo_cap && grow_memo(r) < 0)
		return -ENOMEM;
	size_t j = h & (r->memo_cap - 1);
	for (; r->memo[j].hash; j = (j + 1) & (r->memo_cap - 1)) {
		const struct memo_slot *m = &r->memo[j];
		if (m->hash == h && m->nraw == smp->depth &&
		    !memcmp(r->memo_raw + m->raw, smp->frames, smp->depth * sizeof(uint64_t))) {
			*known = *ret = m->leaf;
			return 0;
		}
	}
	int e = convert_leaf(r, c, smp, ret);
	if (e < 0)
		return e;
	memo_add(r, j, h, smp, *ret);
	*known = *ret;
	return 0;
}

static int add_sample(struct sw_report *r, const struct sw_stalls *c, struct sw_tree_stall *ts,
		      const struct sw_stall_sample *smp, uint64_t h, uint64_t weight)
{
	uint32_t thread;
	int e = sw_tree_stall_thread(r->p, ts, smp->thread_id, smp->thread_name, &thread);
	if (e < 0)
		return e;
	uint32_t leaf;
	e = stack_leaf(r, c, smp, h, &leaf);
	if (e < 0)
		return e;
	return sw_tree_stall_add_stack(r->p, ts, thread, leaf, weight);
}

const char *sw_report_json_fields(struct sw_buf *obj, const char *type)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "{\"schema\":%d,\"type\":\"%s\",", SW_NDJSON_SCHEMA, type);
	const char *text = sw_buf_str(obj);
	size_t n = strlen(prefix);
	if (obj->len < n + 2 || strncmp(text, prefix, n) != 0)
		return NULL;
	size_t end = obj->len;
	while (end > n && (text[end - 1] == '\n' || text[end - 1] == '}'))
		if (text[--end] == '}')
			break;
	obj->data[end] = 0;
	return text + n;
}

/* A gap between samples this much past two intervals may be a stop (as the agent judges). */
#define STOP_GAP_NS 50000000ull

/* What the agent said about samples without a stack. */
static const char *unsampled_reason(uint32_t flags)
{
	if (flags & SW_SAMPLE_PASSIVE)
		return "the agent is passive under a seccomp filter";
	if (flags & SW_SAMPLE_SIGNAL_BLOCKED)
		return "the thread blocks the agent's signal";
	if (flags & SW_SAMPLE_SMALL_ALTSTACK)
		return "the thread's alternate signal stack is too small for the agent's signal";
	if (flags & SW_SAMPLE_NO_SIGNAL)
		return "the thread was running and the agent sends no signals";
	return NULL;
}

int sw_report_add_stall(struct sw_report *r, const struct sw_stalls *c, const struct sw_stall *st,
			const char *source, struct sw_tree_stall **ret_stall)
{
	const struct sw_stalls_info *in = sw_stalls_info(c);
	uint64_t interval = in->config.interval_us ? (uint64_t)in->config.interval_us * SW_NS_PER_US
						   : 10 * SW_NS_PER_MS;
	uint64_t blocked = 0, main = 0, last_time = st->start_time;
	uint32_t why = 0;
	for (size_t i = 0; i < st->nsamples; i++) {
		if (st->sample[i].thread_id != st->thread_id)
			continue;
		main++;
		blocked += !!(st->sample[i].flags & SW_SAMPLE_BLOCKED);
		last_time = st->sample[i].time;
		if (!st->sample[i].depth)
			why |= st->sample[i].flags;
	}
	uint64_t duration =
	    st->ended ? st->duration_ns : sw_stalls_ns(c, last_time - st->start_time);
	bool runnable = main && blocked * 2 < main;
	struct sw_tree_stall_info info = {
	    .id = st->id,
	    .source = source,
	    /* busy: the thread had the CPU half the time, or was mostly runnable */
	    .kind = st->cpu_ns * 2 >= duration || runnable ? "busy" : "blocked",
	    .mode = st->context[0] ? st->context : NULL,
	    .thread_id = st->thread_id,
	    .start_wall_ns = in->wall_ns ? in->wall_ns + sw_stalls_ns(c, st->start_time) : 0,
	    .duration_ns = duration,
	    .cpu_ns = st->cpu_ns,
	    .samples = st->ended ? st->samples : main,
	    .dropped = st->dropped,
	    .late = st->late,
	    .late_ns = st->late_ns,
	    .unsampled = unsampled_reason(why),
	};
	/*
	 * the collector's own NDJSON fields (raw stacks, images, times) come
	 * first: megabytes for a long stall, handed to the stall, not copied,
	 * written into the block a printed stall's fields left
	 */
	struct sw_buf raw;
	sw_buf_init(&raw, 0);
	if (!r->no_raw) {
		size_t cap;
		char *spare = sw_profile_take_spare_text(r->p, &cap);
		sw_buf_adopt(&raw, spare, cap);
	}
	int e = r->no_raw ? 0 : sw_render_ndjson_stall_fields(&raw, c, st);
	if (e >= 0 && !r->no_raw && !sw_buf_str(&raw))
		e = -ENOMEM;
	struct sw_tree_stall *ts;
	if (e >= 0)
		e = sw_profile_add_stall(r->p, &info, &ts);
	if (e >= 0 && !r->no_raw) {
		size_t len = raw.len, cap = raw.cap;
		sw_tree_stall_take_extra_json(ts, sw_buf_detach(&raw, NULL), len, cap);
	}
	sw_buf_finish(&raw);
	if (e < 0)
		return e;
	uint32_t idx;
	e = sw_tree_stall_thread(r->p, ts, st->thread_id, NULL, &idx);
	/* no stall has more distinct stacks than samples */
	if (e >= 0 && st->nsamples > r->leaf_of_cap) {
		uint32_t *l = realloc(r->leaf_of, st->nsamples * sizeof(*l));
		if (l) {
			r->leaf_of = l;
			r->leaf_of_cap = st->nsamples;
		}
		e = l ? 0 : -ENOMEM;
	}
	if (e >= 0 && st->nsamples)
		memset(r->leaf_of, 0xff, st->nsamples * sizeof(*r->leaf_of));
	/*
	 * each sample weighs the time since the previous one of its thread; the
	 * time between the stall's start and end that its duration leaves out is
	 * a stop the agent took out (SIGSTOP, a debugger), and the gap that
	 * spans it weighs that much less, as the header's duration counts it
	 */
	uint64_t span = st->ended && st->end_time > st->start_time
			    ? sw_stalls_ns(c, st->end_time - st->start_time)
			    : 0;
	uint64_t paused = span > duration ? span - duration : 0;
	if (paused < 2 * interval)
		paused = 0;
	struct last {
		uint64_t tid, time, longest;
		size_t at; /* the sample after the thread's longest gap */
	} lasts[64];
	size_t nlasts = 0;
	/* the memo hashes of the next MEMO_AHEAD samples, by index modulo MEMO_AHEAD */
	enum { MEMO_AHEAD = 16 };
	uint64_t hashes[MEMO_AHEAD];
	for (int pass = paused ? 0 : 1; pass < 2 && e >= 0; pass++) {
		for (size_t k = 0; k < nlasts; k++)
			lasts[k].time = 0;
		for (size_t i = 0; pass == 1 && i < MEMO_AHEAD && i < st->nsamples; i++)
			hashes[i] = memo_fetch(r, &st->sample[i]);
		for (size_t i = 0; i < st->nsamples && e >= 0; i++) {
			const struct sw_stall_sample *smp = &st->sample[i];
			uint64_t h = pass == 1 ? hashes[i % MEMO_AHEAD] : 0;
			if (pass == 1 && i + MEMO_AHEAD < st->nsamples)
				hashes[i % MEMO_AHEAD] = memo_fetch(r, &st->sample[i + MEMO_AHEAD]);
			if (pass == 1 && i + MEMO_AHEAD / 2 < st->nsamples)
				memo_fetch_frames(r, &st->sample[i + MEMO_AHEAD / 2],
						  hashes[(i + MEMO_AHEAD / 2) % MEMO_AHEAD]);
			size_t k = 0;
			while (k < nlasts && lasts[k].tid != smp->thread_id)
				k++;
			uint64_t w = interval;
			if (k < nlasts && lasts[k].time && smp->time > lasts[k].time)
				w = sw_stalls_ns(c, smp->time - lasts[k].time);
			if (k == nlasts && nlasts < 64)
				lasts[nlasts++] =
				    (struct last){.tid = smp->thread_id, .at = SIZE_MAX};
			if (k == nlasts)
				k = SIZE_MAX; /* past 64 threads: weighed by the interval */
			else
				lasts[k].time = smp->time;
			if (pass == 0 && k != SIZE_MAX && w > lasts[k].longest) {
				lasts[k].longest = w;
				lasts[k].at = i;
			}
			/* the stop lies in the thread's longest gap: it loses that much, once */
			if (pass == 1 && paused && k != SIZE_MAX && lasts[k].at == i &&
			    w > 2 * interval + STOP_GAP_NS)
				w = w > paused + interval ? w - paused : interval;
			if (pass == 1)
				e = add_sample(r, c, ts, smp, h, w);
		}
	}
	if (e < 0) {
		sw_profile_drop_last_stall(r->p); /* past a limit: not printed, not counted */
		return e;
	}
	*ret_stall = ts;
	return 0;
}
