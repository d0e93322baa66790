/*
 * The stall collector (see stalls.h).  Input is whatever an agent or a file
 * says: open stalls, samples per stall, the frames of the open stalls'
 * distinct stacks and images all have ceilings, and a sample or an end for a
 * stall whose begin we never saw (dropped, or sent before we connected) is
 * counted and skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stalls.h"
#include "util/hash.h"
#include "util/table-alloc.h"
#include "util/spare.h"

#define MAX_OPEN    64
#define MAX_SAMPLES (1u << 20)
#define MAX_HELD    (1u << 22) /* frames of distinct stacks in open stalls */
#define MAX_IMAGES  8192
#define MAX_NAMES   4096

struct sw_stalls {
	struct sw_stalls_info info;
	struct sw_stall *open[MAX_OPEN];
	size_t nopen;
	struct sw_stall *done;            /* handed out last; freed on the next call */
	struct sw_spare spare;            /* a sample array a stall freed, for the next stall */
	struct frame_block *spare_blocks; /* frame blocks stalls freed, for the next */
	size_t held;                      /* frames of the distinct stacks of the open stalls */
	struct sw_stall_image *images;
	size_t nimages;
	char **names; /* interned thread names */
	size_t nnames;
	uint64_t epoch;    /* see sw_stalls_images_epoch() */
	const char *limit; /* see sw_stalls_limit() */
	/* the counters of the agents of earlier images of the process (an exec) */
	struct sw_wire_stats earlier;
	bool waited_earlier; /* the loop waited in an earlier image */
	struct image_index *index;
};

/*
 * The executable ranges of every image, sorted by start, so that finding a
 * frame's image costs a binary search, not a scan over up to 8192 images.
 * Built on the first lookup after the images changed (a new epoch).
 */
struct image_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint32_t image;  /* index into images */
};

struct image_index {
	struct image_range *r;
	uint64_t *reach; /* reach[i]: the highest hi of r[0..i], to stop a scan down */
	size_t n, cap;
	uint64_t epoch;
};

/* A ceiling was reached: remembered for sw_stalls_limit(). */
static int over(struct sw_stalls *c, const char *what)
{
	c->limit = what;
	return -E2BIG;
}

const char *sw_stalls_limit(const struct sw_stalls *c)
{
	return c->limit;
}

static uint64_t next_epoch(void)
{
	static _Atomic uint64_t last;
	return ++last;
}

uint64_t sw_stalls_images_epoch(const struct sw_stalls *c)
{
	return c->epoch;
}

int sw_stalls_new(struct sw_stalls **ret)
{
	struct sw_stalls *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->epoch = next_epoch();
	c->index = calloc(1, sizeof(*c->index));
	if (!c->index) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

/*
 * The distinct stacks of a stall, each stored once: samples that repeat a
 * stack (a stuck thread, sent as "same as before" in a few bytes) share
 * its frames, so memory follows what was sent rather than depth x samples.
 */
struct sw_stall_stacks {
	struct stack_slot {
		uint64_t hash;
		const uint64_t *frames; /* in a block */
		uint32_t depth;
		uint32_t index; /* in the order the stall's samples first had it */
	} * slot;
	size_t cap, n;
	size_t held; /* frames in all */
	/* the frames, in blocks freed with the stall (a malloc a stack cost 4% of a report) */
	struct frame_block *blocks;
};

struct frame_block {
	struct frame_block *next;
	size_t used, cap;
	uint64_t frames[];
};

#define FRAME_BLOCK (size_t)65536 /* frames: half a megabyte */

/*
 * Room for n frames in t's blocks, in a spare block when one fits; NULL:
 * out of memory.
 */
static uint64_t *block_frames(struct sw_stall_stacks *t, struct frame_block **spare, size_t n)
{
	struct frame_block *b = t->blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > FRAME_BLOCK ? n : FRAME_BLOCK;
		if (cap == FRAME_BLOCK && *spare) {
			b = *spare;
			*spare = b->next;
		} else {
			b = malloc(sizeof(*b) + cap * sizeof(b->frames[0]));
			if (!b)
				return NULL;
		}
		*b = (struct frame_block){.next = t->blocks, .cap = cap};
		t->blocks = b;
	}
	b->used += n;
	return b->frames + b->used - n;
}

static int stacks_grow(struct sw_stall_stacks *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct stack_slot *slot = sw_table_alloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i].frames)
			continue;
		size_t j = t->slot[i].hash & (cap - 1);
		while (slot[j].frames)
			j = (j + 1) & (cap - 1);
		slot[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

/*
 * The stored copy of m's frames and its index, added when new (*added: the
 * frames copied); NULL: out of memory.  Samples of a recording's stack
 * table never come here: their entry is their stack.
 */
static const uint64_t *stacks_get(struct sw_stall_stacks *t, struct frame_block **spare,
				  const struct sw_wire_sample *m, uint64_t h, size_t *added,
				  uint32_t *index)
{
	const uint64_t *frames = m->frames;
	uint32_t depth = m->depth;
	*added = 0;
	if (t->n * 2 >= t->cap && stacks_grow(t) < 0)
		return NULL;
	size_t j = h & (t->cap - 1);
	for (; t->slot[j].frames; j = (j + 1) & (t->cap - 1)) {
		const struct stack_slot *x = &t->slot[j];
		if (x->depth == depth && x->hash == h &&
		    !memcmp(x->frames, frames, depth * sizeof(*frames))) {
			*index = x->index;
			return x->frames;
		}
	}
	uint64_t *copy = block_frames(t, spare, depth ? depth : 1);
	if (!copy)
		return NULL;
	if (depth)
		memcpy(copy, frames, depth * sizeof(*copy));
	t->held += depth;
	*added = depth;
	*index = (uint32_t)t->n;
	t->slot[j] = (struct stack_slot){h, copy, depth, *index};
	t->n++;
	return copy;
}

/*
 * Frees s; its frame blocks of the standard size become c's spares.  A
 * stall's blocks (up to 64 of them, 32 MB) freed to the heap went back to
 * the system at its top and were faulted in again for the next stall: a
 * third of the time of a report of deep stalls.
 */
static void stall_free(struct sw_stalls *c, struct sw_stall *s)
{
	if (!s)
		return;
	if (s->stacks) {
		for (struct frame_block *b = s->stacks->blocks, *next; b; b = next) {
			next = b->next;
			if (b->cap == FRAME_BLOCK) {
				b->next = c->spare_blocks;
				c->spare_blocks = b;
			} else {
				free(b);
			}
		}
		free(s->stacks->slot);
		free(s->stacks);
	}
	free(s->sample);
	free(s);
}

void sw_stalls_free(struct sw_stalls *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nopen; i++)
		stall_free(c, c->open[i]);
	stall_free(c, c->done);
	for (size_t i = 0; i < c->nimages; i++) {
		free(c->images[i].path);
		free(c->images[i].arch);
		for (size_t k = 0; k < c->images[i].nhints; k++)
			free(c->images[i].hints[k].name);
		free(c->images[i].hints);
	}
	free(c->spare.block);
	for (struct frame_block *b = c->spare_blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(c->images);
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	free(c->index->r);
	free(c->index->reach);
	free(c->index);
	free(c);
}

const struct sw_stalls_info *sw_stalls_info(const struct sw_stalls *c)
{
	return &c->info;
}

uint64_t sw_stalls_ns(const struct sw_stalls *c, uint64_t ticks)
{
	if (!c->info.clock_denom || (c->info.clock_numer == 1 && c->info.clock_denom == 1))
		return ticks;
	return (uint64_t)((__uint128_t)ticks * c->info.clock_numer / c->info.clock_denom);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

static const char *intern(struct sw_stalls *c, const char *name)
{
	if (!name || !name[0])
		return "";
	for (size_t i = 0; i < c->nnames; i++)
		if (strcmp(c->names[i], name) == 0)
			return c->names[i];
	if (c->nnames == MAX_NAMES)
		return "";
	char **names = realloc(c->names, (c->nnames + 1) * sizeof(*names));
	if (!names)
		return "";
	c->names = names;
	char *dup = strdup(name);
	if (!dup)
		return "";
	c->names[c->nnames++] = dup;
	return dup;
}

/*
 * The hello of another agent than the last: the process exec'd (the same
 * pid, the agent started again) or another process.  Its images are new:
 * the old ones stay for what was sampled before, newer ones win their
 * ranges.  The counters add up, and a loop that waited in an earlier
 * image was watched.
 */
static void another_agent(struct sw_stalls *c)
{
	struct sw_stalls_info *in = &c->info;
	for (size_t i = 0; i < c->nimages; i++)
		c->images[i].removed = true;
	c->epoch = next_epoch();
	/* the counters are the sums so far; the loop's first wait is the old clock's */
	c->waited_earlier |= in->stats.has_loop && in->stats.loop_first_wait;
	in->stats.loop_first_wait = 0;
	c->earlier = in->stats;
	in->have_goodbye = false;
	in->goodbye_reason = 0;
	in->goodbye_text[0] = '\0';
}

static void on_hello(struct sw_stalls *c, const struct sw_wire_hello *h)
{
	struct sw_stalls_info *in = &c->info;
	/* a new stream: stalls still open belong to the old one */
	for (size_t i = 0; i < c->nopen; i++)
		stall_free(c, c->open[i]);
	c->nopen = 0;
	c->held = 0;
	if (in->have_hello && (h->pid != in->pid || h->clock_base != in->clock_base))
		another_agent(c);
	in->have_hello = true;
	in->platform = h->platform;
	in->pid = h->pid;
	copy_str(in->process_name, sizeof(in->process_name), h->process_name);
	copy_str(in->bundle_id, sizeof(in->bundle_id), h->bundle_id);
	copy_str(in->bundle_version, sizeof(in->bundle_version),
		 h->bundle_version ? h->bundle_version : "");
	copy_str(in->arch, sizeof(in->arch), h->arch);
	copy_str(in->agent_version, sizeof(in->agent_version), h->agent_version);
	in->clock_numer = h->clock_numer;
	in->clock_denom = h->clock_denom;
	in->clock_base = h->clock_base;
	in->wall_ns = h->wall_ns;
	in->config = h->config;
	copy_str(in->passive, sizeof(in->passive), h->passive ? h->passive : "");
}

static int on_image(struct sw_stalls *c, const struct sw_wire_image *im)
{
	struct sw_stall_image *slot = NULL;
	c->epoch = next_epoch();
	for (size_t i = 0; i < c->nimages; i++) {
		struct sw_stall_image *x = &c->images[i];
		if (x->load_address == im->load_address && x->text_size == im->text_size &&
		    strcmp(x->path, im->path ? im->path : "") == 0) {
			slot = x; /* the same image again (a later client's full list) */
			break;
		}
	}
	if (!slot) {
		if (c->nimages == MAX_IMAGES)
			return over(c, "more than 8192 images");
		struct sw_stall_image *images =
		    realloc(c->images, (c->nimages + 1) * sizeof(*images));
		if (!images)
			return -ENOMEM;
		c->images = images;
		slot = &c->images[c->nimages++];
		memset(slot, 0, sizeof(*slot));
		slot->path = strdup(im->path ? im->path : "");
		slot->arch = strdup(im->arch ? im->arch : "");
		if (!slot->path || !slot->arch)
			return -ENOMEM;
	}
	slot->index = im->index;
	slot->load_address = im->load_address;
	slot->text_vmaddr = im->text_vmaddr;
	slot->text_size = im->text_size;
	slot->id_kind = im->id_kind;
	slot->id_len = im->id_len <= SW_WIRE_MAX_ID ? im->id_len : 0;
	memcpy(slot->id, im->id, slot->id_len);
	slot->removed = false;
	slot->nmore_text = im->nmore_text <= SW_WIRE_MAX_MORE_TEXT ? im->nmore_text : 0;
	memcpy(slot->more_text, im->more_text, slot->nmore_text * sizeof(slot->more_text[0]));
	return 0;
}

#define MAX_HINTS 65536 /* per image */

/* Keeps a hint with the image that has its index now, sorted, once. */
static int hint_cmp(const void *a, const void *b)
{
	const struct sw_stall_hint *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts hints appended out of order and drops those of an offset already seen. */
static void sort_hints(struct sw_stall_image *im)
{
	if (!im->unsorted)
		return;
	qsort(im->hints, im->nhints, sizeof(*im->hints), hint_cmp);
	size_t n = 0;
	for (size_t k = 0; k < im->nhints; k++) {
		if (n && im->hints[n - 1].offset == im->hints[k].offset)
			free(im->hints[k].name);
		else
			im->hints[n++] = im->hints[k];
	}
	im->nhints = n;
	for (size_t k = 0; k < n; k++)
		im->hints[k].seq = k;
	im->unsorted = false;
}

/*
 * Keeps a hint with the image that has its index now, once.  Hints come
 * mostly in order; one out of order is appended and the list sorted before
 * a stall is handed out, so no order of them costs more than n log n.
 */
static int on_hint(struct sw_stalls *c, const struct sw_wire_symbol_hint *h)
{
	struct sw_stall_image *im = NULL;
	for (size_t i = 0; i < c->nimages; i++)
		if (c->images[i].index == h->image_index && !c->images[i].removed)
			im = &c->images[i];
	if (!im || !h->name || !h->name[0])
		return 0;
	if (im->nhints && !im->unsorted && im->hints[im->nhints - 1].offset == h->offset)
		return 0;
	if (im->nhints == MAX_HINTS)
		sort_hints(im);
	if (im->nhints == MAX_HINTS)
		return over(c, "more than 65536 symbol hints for one image");
	if ((im->nhints & (im->nhints - 1)) == 0) {
		size_t cap = im->nhints ? im->nhints * 2 : 16;
		struct sw_stall_hint *hints = realloc(im->hints, cap * sizeof(*hints));
		if (!hints)
			return -ENOMEM;
		im->hints = hints;
	}
	char *name = strdup(h->name);
	if (!name)
		return -ENOMEM;
	if (im->nhints && im->hints[im->nhints - 1].offset >= h->offset)
		im->unsorted = true;
	im->hints[im->nhints] = (struct sw_stall_hint){h->offset, h->size, name, im->nhints};
	im->nhints++;
	return 0;
}

const struct sw_stall_hint *sw_stalls_hint_at(const struct sw_stall_image *im, uint64_t offset)
{
	/* the last hint at or below offset */
	size_t lo = 0, hi = im->nhints;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (im->hints[mid].offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		const struct sw_stall_hint *x = &im->hints[lo - 1];
		return offset - x->offset < (x->size ? x->size : 1) ? x : NULL;
	}
	return NULL;
}

static void on_image_removed(struct sw_stalls *c, uint32_t index)
{
	/* kept for addresses already sampled; a newer image at the range wins */
	c->epoch = next_epoch();
	for (size_t i = 0; i < c->nimages; i++)
		if (c->images[i].index == index && !c->images[i].removed)
			c->images[i].removed = true;
}

/* Whether addr lies in one of im's executable segments. */
static bool image_holds(const struct sw_stall_image *im, uint64_t addr)
{
	if (addr >= im->load_address && addr - im->load_address < im->text_size)
		return true;
	for (uint32_t i = 0; i < im->nmore_text; i++) {
		/* the same slide as the first segment's */
		uint64_t lo = im->load_address + (im->more_text[i].vmaddr - im->text_vmaddr);
		if (addr >= lo && addr - lo < im->more_text[i].size)
			return true;
	}
	return false;
}

enum sw_stalls_watched sw_stalls_watched(const struct sw_stalls *c, uint64_t *ret_first_ns)
{
	const struct sw_wire_stats *st = &c->info.stats;
	*ret_first_ns = 0;
	if (!st->has_loop)
		return SW_WATCHED_UNKNOWN;
	if (!st->loop_first_wait)
		return c->waited_earlier ? SW_WATCHED_YES : SW_WATCHED_NEVER;
	*ret_first_ns = sw_stalls_ns(c, st->loop_first_wait - 1);
	uint64_t threshold =
	    (uint64_t)(c->info.config.threshold_ms ? c->info.config.threshold_ms : 250);
	return *ret_first_ns >= threshold * 1000000 ? SW_WATCHED_LATE : SW_WATCHED_YES;
}

const char *sw_stalls_watched_advice(enum sw_stalls_watched w)
{
	switch (w) {
	case SW_WATCHED_NEVER:
		return "if it has an event loop that waits another way (a blocking read(2) of a "
		       "terminal, as zsh waits at its prompt; io_uring; a condition "
		       "variable; a static binary), call stallwatch_before_wait() and "
		       "stallwatch_after_wait() from <stallwatch/stallwatch.h> around its wait; "
		       "see stallwatch-agent(7)";
	case SW_WATCHED_LATE:
		return "to watch the start too, call stallwatch_after_wait() from "
		       "<stallwatch/stallwatch.h> first thing in main(): the start then counts as "
		       "an iteration of the loop; see stallwatch-agent(7)";
	default:
		return NULL;
	}
}

#define SW_DEFAULT_MAX_DEPTH 512 /* the agent's, for recordings whose hello lacks it */

bool sw_stalls_sample_stopped(const struct sw_stalls *c, const struct sw_stall_sample *s)
{
	uint32_t max = c->info.config.max_depth ? c->info.config.max_depth : SW_DEFAULT_MAX_DEPTH;
	if (s->flags & SW_SAMPLE_ELIDED)
		return s->flags &
		       SW_SAMPLE_TRUNCATED; /* agents that elide never cut at the limit */
	return (s->flags & SW_SAMPLE_TRUNCATED) && s->depth < max;
}

/* Which image answers for an address both hold: one still loaded, else the newer. */
static bool prefer(const struct sw_stall_image *best, const struct sw_stall_image *im)
{
	return !best || best->removed || !im->removed;
}

static const struct sw_stall_image *scan_images(const struct sw_stalls *c, uint64_t addr)
{
	const struct sw_stall_image *best = NULL;
	for (size_t i = 0; i < c->nimages; i++) {
		const struct sw_stall_image *im = &c->images[i];
		if (image_holds(im, addr) && prefer(best, im))
			best = im;
	}
	return best;
}

static int add_range(struct image_index *x, uint64_t lo, uint64_t size, uint32_t image)
{
	if (!size || lo + size < lo)
		return 0; /* empty or wrapping: no address can be in it */
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct image_range *r = realloc(x->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		x->r = r;
		x->cap = cap;
	}
	x->r[x->n++] = (struct image_range){lo, lo + size, image};
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct image_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->image < y->image ? -1 : x->image > y->image;
}

static int build_index(const struct sw_stalls *c, struct image_index *x)
{
	x->n = 0;
	for (size_t i = 0; i < c->nimages; i++) {
		const struct sw_stall_image *im = &c->images[i];
		if (add_range(x, im->load_address, im->text_size, (uint32_t)i) < 0)
			return -ENOMEM;
		for (uint32_t k = 0; k < im->nmore_text; k++) {
			uint64_t lo =
			    im->load_address + (im->more_text[k].vmaddr - im->text_vmaddr);
			if (add_range(x, lo, im->more_text[k].size, (uint32_t)i) < 0)
				return -ENOMEM;
		}
	}
	qsort(x->r, x->n, sizeof(*x->r), by_start);
	free(x->reach);
	x->reach = malloc((x->n ? x->n : 1) * sizeof(*x->reach));
	if (!x->reach)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++)
		x->reach[i] = i && x->reach[i - 1] > x->r[i].hi ? x->reach[i - 1] : x->r[i].hi;
	x->epoch = c->epoch;
	return 0;
}

const struct sw_stall_image *sw_stalls_image_at(const struct sw_stalls *c, uint64_t addr)
{
	struct image_index *x = c->index;
	if (x->epoch != c->epoch && build_index(c, x) < 0) {
		x->epoch = 0;
		return scan_images(c, addr); /* out of memory: the slow way still answers */
	}
	/* the last range starting at or below addr, then down while one may reach it */
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct sw_stall_image *best = NULL;
	for (size_t i = lo; i-- > 0 && x->reach[i] > addr;) {
		const struct sw_stall_image *im = &c->images[x->r[i].image];
		if (addr < x->r[i].hi &&
		    (!best || (im > best ? prefer(best, im) : !prefer(im, best))))
			best = im;
	}
	return best;
}

size_t sw_stalls_nimages(const struct sw_stalls *c)
{
	return c->nimages;
}

static size_t find_open(struct sw_stalls *c, uint64_t id)
{
	for (size_t i = 0; i < c->nopen; i++)
		if (c->open[i]->id == id)
			return i;
	return SIZE_MAX;
}

static int on_begin(struct sw_stalls *c, const struct sw_wire_stall_begin *b)
{
	if (find_open(c, b->stall_id) != SIZE_MAX)
		return 0;
	if (c->nopen == MAX_OPEN)
		return over(c, "more than 64 stalls open at once");
	struct sw_stall *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->id = b->stall_id;
	s->thread_id = b->thread_id;
	s->start_time = b->start_time;
	s->detect_time = b->detect_time;
	copy_str(s->context, sizeof(s->context), b->context);
	s->stacks = calloc(1, sizeof(*s->stacks));
	if (!s->stacks) {
		free(s);
		return -ENOMEM;
	}
	s->sample = sw_spare_take(&c->spare, 0, &s->samples_cap);
	c->open[c->nopen++] = s;
	return 0;
}

static int on_sample(struct sw_stalls *c, const struct sw_wire_sample *m)
{
	size_t i = find_open(c, m->stall_id);
	if (i == SIZE_MAX) {
		c->info.orphans++;
		return 0;
	}
	struct sw_stall *s = c->open[i];
	if ((m->flags & SW_SAMPLE_PASSIVE) && !c->info.passive[0])
		copy_str(c->info.passive, sizeof(c->info.passive), "it went passive");
	if (s->cut)
		return 0;
	if (s->nsamples == MAX_SAMPLES || c->held + m->depth > MAX_HELD) {
		s->cut = true; /* said once; the rest of its samples are left out */
		return over(c, s->nsamples == MAX_SAMPLES
				   ? "more than 1048576 samples in one stall"
				   : "more than 4194304 frames of distinct stacks in open stalls");
	}
	if (s->nsamples == s->samples_cap) {
		size_t cap = s->samples_cap ? s->samples_cap * 2 : 16;
		struct sw_stall_sample *n = realloc(s->sample, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->sample = n;
		s->samples_cap = cap;
	}
	struct sw_stall_sample *x = &s->sample[s->nsamples];
	x->time = m->time;
	x->thread_id = m->thread_id;
	x->flags = m->flags;
	x->depth = m->depth;
	x->elided = 0;
	if (m->flags & SW_SAMPLE_ELIDED)
		x->elided = m->elided < UINT32_MAX ? (uint32_t)m->elided : UINT32_MAX;
	x->elided_at = m->flags & SW_SAMPLE_ELIDED ? m->elided_at : 0;
	x->thread_name = intern(c, m->thread_name);
	size_t added = 0;
	x->table = m->table;
	if (m->table) {
		/* the entry is the stack: its frames are the decoder's, the number its own */
		x->hash = m->table_hash;
		x->frames = m->frames;
		x->stack = SW_STALL_TABLE_STACK;
	} else {
		x->hash = sw_stalls_stack_hash(m->frames, m->depth);
		x->frames = stacks_get(s->stacks, &c->spare_blocks, m, x->hash, &added, &x->stack);
		if (!x->frames)
			return -ENOMEM;
	}
	s->nsamples++;
	c->held += added;
	return 0;
}

static const struct sw_stall *take(struct sw_stalls *c, size_t i)
{
	if (c->done) {
		sw_spare_keep(&c->spare, c->done->sample, c->done->samples_cap);
		c->done->sample = NULL;
	}
	stall_free(c, c->done);
	for (size_t k = 0; k < c->nimages; k++)
		sort_hints(&c->images[k]);
	c->done = c->open[i];
	c->open[i] = c->open[c->nopen - 1];
	c->held -= c->done->stacks ? c->done->stacks->held : 0;
	c->nopen--;
	return c->done;
}

int sw_stalls_feed(struct sw_stalls *c, const struct sw_wire_msg *m,
		   const struct sw_stall **ret_stall)
{
	switch (m->type) {
	case SW_MSG_HELLO:
		on_hello(c, &m->hello);
		return 0;
	case SW_MSG_IMAGE_ADDED:
		return on_image(c, &m->image);
	case SW_MSG_IMAGE_REMOVED:
		on_image_removed(c, m->image_removed.index);
		return 0;
	case SW_MSG_STALL_BEGIN:
		return on_begin(c, &m->stall_begin);
	case SW_MSG_SAMPLE:
		return on_sample(c, &m->sample);
	case SW_MSG_STALL_END: {
		size_t i = find_open(c, m->stall_end.stall_id);
		if (i == SIZE_MAX) {
			c->info.orphans++;
			return 0;
		}
		struct sw_stall *s = c->open[i];
		s->end_time = m->stall_end.end_time;
		s->duration_ns = m->stall_end.duration_ns;
		s->cpu_ns = m->stall_end.cpu_ns;
		s->samples = m->stall_end.samples;
		s->dropped = m->stall_end.dropped;
		s->has_late = m->stall_end.has_late;
		s->late = m->stall_end.late;
		s->late_ns = m->stall_end.late_ns;
		s->ended = true;
		*ret_stall = take(c, i);
		return 1;
	}
	case SW_MSG_STATS:
		c->info.stats = m->stats;
		c->info.stats.samples += c->earlier.samples;
		c->info.stats.dropped += c->earlier.dropped;
		c->info.stats.stalls += c->earlier.stalls;
		c->info.stats.agent_cpu_ns += c->earlier.agent_cpu_ns;
		return 0;
	case SW_MSG_SYMBOL_HINT:
		return on_hint(c, &m->symbol_hint);
	case SW_MSG_CONFIG_REPLY:
		c->info.config = m->config_reply.config;
		return 0;
	case SW_MSG_GOODBYE:
		c->info.have_goodbye = true;
		c->info.goodbye_reason = m->goodbye.reason;
		copy_str(c->info.goodbye_text, sizeof(c->info.goodbye_text), m->goodbye.text);
		return 0;
	default:
		return 0;
	}
}

const struct sw_stall *sw_stalls_flush(struct sw_stalls *c)
{
	if (!c->nopen)
		return NULL;
	return take(c, 0);
}
