/*
 * The bounded ring between the watchdog (the only producer) and the
 * streamer (the only consumer): variable-length records, 8-byte aligned,
 * in one buffer allocated at start.  Nothing here allocates, locks or
 * blocks; a record that does not fit is refused and the caller counts it as
 * dropped.
 *
 * The producer may write tentatively (swa_ring_hold): records written after
 * the hold stay invisible to the consumer until swa_ring_commit(), and
 * swa_ring_rollback() forgets them.  The watchdog keeps a stall's pre-roll
 * samples that way, so they cost nothing when the iteration ends before the
 * threshold.
 */
#ifndef SWA_RING_H
#define SWA_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct swa_ring {
	uint8_t *buf;
	size_t cap;            /* a power of two */
	_Atomic uint64_t head; /* consumer: next record to read */
	_Atomic uint64_t tail; /* producer: end of the committed records */
	uint64_t wpos;         /* producer: end of the written records */
	bool held;
	uint64_t pending; /* producer: end of the record being written */
};

struct swa_ring_rec {
	uint32_t len;  /* payload bytes */
	uint16_t type; /* 0 is padding */
	uint16_t pad;
};

/* buf of cap bytes (a power of two, at least 256) owned by the caller. */
void swa_ring_init(struct swa_ring *r, void *buf, size_t cap);

/*
 * Reserves a record of len payload bytes and returns where to write it, or
 * NULL when the ring is full.  The record becomes visible with
 * swa_ring_push() (committed unless the ring is held).
 */
void *swa_ring_reserve(struct swa_ring *r, uint16_t type, size_t len);
void swa_ring_push(struct swa_ring *r);
void swa_ring_hold(struct swa_ring *r);
void swa_ring_commit(struct swa_ring *r);
void swa_ring_rollback(struct swa_ring *r);

/* Consumer: the oldest committed record (payload, type, len), or NULL. */
const void *swa_ring_peek(struct swa_ring *r, uint16_t *ret_type, size_t *ret_len);
void swa_ring_pop(struct swa_ring *r);
/* Bytes committed and not yet consumed. */
size_t swa_ring_used(struct swa_ring *r);

#endif
