/*
 * The agent's single-producer, single-consumer record ring (see ring.h).
 * Positions grow without wrapping (64 bits do not overflow); the offset in
 * the buffer is the position modulo the capacity.  A record never straddles
 * the end of the buffer: when it would, a padding record fills the rest.
 */
#include <string.h>

#include "ring.h"

#define HDR sizeof(struct swa_ring_rec)

static size_t rec_size(size_t len)
{
	return (HDR + len + 7) & ~(size_t)7;
}

void swa_ring_init(struct swa_ring *r, void *buf, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->cap = cap;
}

static struct swa_ring_rec *rec_at(struct swa_ring *r, uint64_t pos)
{
	return (struct swa_ring_rec *)(r->buf + (pos & (r->cap - 1)));
}

void *swa_ring_reserve(struct swa_ring *r, uint16_t type, size_t len)
{
	size_t need = rec_size(len);
	if (need > r->cap / 2)
		return NULL;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t pos = r->wpos;
	size_t to_end = r->cap - (pos & (r->cap - 1));
	size_t pad = to_end < need ? to_end : 0;
	if (pos + pad + need - head > r->cap)
		return NULL;
	if (pad) {
		struct swa_ring_rec *p = rec_at(r, pos);
		p->len = (uint32_t)(pad - HDR);
		p->type = 0;
		pos += pad;
	}
	struct swa_ring_rec *rec = rec_at(r, pos);
	rec->len = (uint32_t)len;
	rec->type = type;
	rec->pad = 0;
	/* the padding becomes part of the ring only when the record is pushed */
	r->pending = pos + need;
	return rec + 1;
}

void swa_ring_push(struct swa_ring *r)
{
	r->wpos = r->pending;
	if (!r->held)
		atomic_store_explicit(&r->tail, r->wpos, memory_order_release);
}

void swa_ring_hold(struct swa_ring *r)
{
	r->held = true;
}

void swa_ring_commit(struct swa_ring *r)
{
	r->held = false;
	atomic_store_explicit(&r->tail, r->wpos, memory_order_release);
}

void swa_ring_rollback(struct swa_ring *r)
{
	r->held = false;
	r->wpos = atomic_load_explicit(&r->tail, memory_order_relaxed);
}

const void *swa_ring_peek(struct swa_ring *r, uint16_t *ret_type, size_t *ret_len)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	while (head != tail) {
		struct swa_ring_rec *rec = rec_at(r, head);
		if (rec->type != 0) {
			*ret_type = rec->type;
			*ret_len = rec->len;
			return rec + 1;
		}
		head += rec_size(rec->len);
		atomic_store_explicit(&r->head, head, memory_order_release);
	}
	return NULL;
}

void swa_ring_pop(struct swa_ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	struct swa_ring_rec *rec = rec_at(r, head);
	atomic_store_explicit(&r->head, head + rec_size(rec->len), memory_order_release);
}

size_t swa_ring_used(struct swa_ring *r)
{
	return (size_t)(atomic_load_explicit(&r->tail, memory_order_acquire) -
			atomic_load_explicit(&r->head, memory_order_acquire));
}
