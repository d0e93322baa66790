/*
 * The stall collector: fed with decoded agent messages, from a live session
 * or from a recording (sw_recording_next), it keeps track of the agent's
 * hello, configuration, images and counters, and hands out each stall once
 * it is complete: its begin, every sample, its end.  Live and recorded input
 * go through this one path, so both print the same.
 */
#ifndef SW_STALLS_H
#define SW_STALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"
#include "wire.h"

struct sw_stall_sample {
	uint64_t time; /* agent ticks since the hello's clock_base */
	uint64_t thread_id;
	uint32_t flags; /* sw_wire_sample_flags */
	uint32_t depth;
	const uint64_t *frames; /* leaf first; samples of the same stack share it */
	uint64_t hash;          /* sw_stalls_stack_hash() of the stack, which readers may key on */
	/*
	 * SW_SAMPLE_ELIDED: elided frames left out between frames[elided_at - 1]
	 * and [elided_at] (at most UINT32_MAX: a sample is 64 bytes)
	 */
	uint32_t elided_at;
	uint32_t elided;
	/*
	 * Which of its stall's distinct stacks (frames) it has, from 0;
	 * SW_STALL_TABLE_STACK for a sample of a recording's stack table,
	 * whose entry (table) tells its stacks apart.
	 */
	uint32_t stack;
	uint32_t table; /* a recording's: its stack table entry (sw_wire_sample.table), 0: none */
	const char *thread_name; /* owned by the collector */
};
#define SW_STALL_TABLE_STACK UINT32_MAX
_Static_assert(sizeof(struct sw_stall_sample) <= 64, "a stall's sample fills one cache line");

struct sw_stall {
	uint64_t id;
	uint64_t thread_id;
	uint64_t start_time, detect_time, end_time; /* agent ticks */
	uint64_t duration_ns, cpu_ns;
	uint64_t samples; /* sampling rounds the agent counted */
	uint64_t dropped;
	/* sw_wire_stall_end's late samples and their lateness (has_late: the agent says) */
	bool has_late;
	uint64_t late, late_ns;
	char context[64];
	size_t nsamples;
	struct sw_stall_sample *sample;
	size_t samples_cap;             /* private */
	bool ended;                     /* false for a stall cut off by the end of the stream */
	bool cut;                       /* it reached a limit: later samples are left out */
	struct sw_stall_stacks *stacks; /* private: each distinct stack once */
};

/* A symbol the agent read from memory (symbol-hint): offset from the image's load address. */
struct sw_stall_hint {
	uint64_t offset, size;
	char *name;
	size_t seq; /* arrival order: the first of an offset is kept */
};

struct sw_stall_image {
	uint32_t index;
	uint64_t load_address, text_vmaddr, text_size;
	uint32_t id_kind, id_len;
	uint8_t id[SW_WIRE_MAX_ID];
	char *path, *arch;
	bool removed;
	struct sw_stall_hint *hints; /* sorted by offset when a stall is handed out */
	size_t nhints;
	bool unsorted;       /* hints were appended out of order since */
	uint32_t nmore_text; /* further executable segments, same slide */
	struct sw_wire_text_range more_text[SW_WIRE_MAX_MORE_TEXT];
};

struct sw_stalls_info {
	bool have_hello;
	uint32_t platform;
	uint64_t pid;
	char process_name[256], bundle_id[256], arch[32], agent_version[64];
	char bundle_version[64]; /* "" from agents before the field, or apps without one */
	uint64_t clock_numer, clock_denom, clock_base, wall_ns;
	struct sw_wire_config config; /* in force, from the hello and config replies */
	struct sw_wire_stats stats;   /* the last counters the agent sent */
	bool have_goodbye;
	uint32_t goodbye_reason;
	char goodbye_text[256];
	uint64_t orphans; /* samples and ends of stalls whose begin we never saw */
	/* why the agent samples nothing (its hello, or a sample saying so), or "" */
	char passive[128];
};

struct sw_stalls;

int sw_stalls_new(struct sw_stalls **ret);
void sw_stalls_free(struct sw_stalls *c);

/*
 * Feeds one message.  Returns 1 and sets *ret_stall when it completed a
 * stall (owned by the collector, valid until the next call), 0 otherwise,
 * -E2BIG when a ceiling was hit (the stall is then cut), -ENOMEM.  The
 * frames of a sample from a recording's stack table are kept, not copied:
 * the recording must outlive the collector.
 */
int sw_stalls_feed(struct sw_stalls *c, const struct sw_wire_msg *m,
		   const struct sw_stall **ret_stall);
/* Which ceiling the last -E2BIG reached, in words ("more than 64 stalls open at once"). */
const char *sw_stalls_limit(const struct sw_stalls *c);
/* At the end of the stream: the next stall left open, or NULL (owned as above). */
const struct sw_stall *sw_stalls_flush(struct sw_stalls *c);

const struct sw_stalls_info *sw_stalls_info(const struct sw_stalls *c);
/* The image holding addr (the newest one when ranges were reused), or NULL. */
const struct sw_stall_image *sw_stalls_image_at(const struct sw_stalls *c, uint64_t addr);
/* How many images sw_stalls_image_at() can answer with (removed ones too). */
size_t sw_stalls_nimages(const struct sw_stalls *c);
/*
 * Whether the unwinding of a sample stopped before the thread's entry: cut
 * for another reason than the depth limit (a frame it could not step over).
 */
bool sw_stalls_sample_stopped(const struct sw_stalls *c, const struct sw_stall_sample *s);
/*
 * A hash of a stack's frames, never 0 (its top bit is set, which leaves
 * the low bits tables index by alone): the collector computes it once per
 * sample.
 */
static inline uint64_t sw_stalls_stack_hash(const uint64_t *frames, uint32_t depth)
{
	return sw_hash_u64s(frames, depth, depth) | 1ull << 63;
}
/* The hint of im holding offset (from its load address), or NULL. */
const struct sw_stall_hint *sw_stalls_hint_at(const struct sw_stall_image *im, uint64_t offset);
/* Whether the agent watched the program's main loop, from its last stats. */
enum sw_stalls_watched {
	SW_WATCHED_UNKNOWN, /* an agent from before it said */
	SW_WATCHED_YES,     /* the loop waited early enough */
	SW_WATCHED_NEVER,   /* the program never waited in a loop the agent sees */
	SW_WATCHED_LATE,    /* its loop first waited a threshold or more after the start */
};
/* Also sets *ret_first_ns to when the loop first waited (ns since the agent's start). */
enum sw_stalls_watched sw_stalls_watched(const struct sw_stalls *c, uint64_t *ret_first_ns);
/* The advice that goes with an answer other than YES (a sentence, no final stop), or NULL. */
const char *sw_stalls_watched_advice(enum sw_stalls_watched w);
/*
 * A number that changes whenever what sw_stalls_image_at() would answer may
 * change (an image added or removed), unique across the process's
 * collectors, never 0: callers key caches of image lookups by it.
 */
uint64_t sw_stalls_images_epoch(const struct sw_stalls *c);
/* Converts agent ticks to nanoseconds. */
uint64_t sw_stalls_ns(const struct sw_stalls *c, uint64_t ticks);

#endif
