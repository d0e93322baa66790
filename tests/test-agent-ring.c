/*
 * Unit test of the agent's record ring: order, wrap-around with padding,
 * refusal when full, tentative writes (hold, commit, rollback), and a
 * producer and a consumer thread racing over a small ring.
 */
#include <pthread.h>
#include <stdint.h>

#include "ring.h"
#include "test.h"

static uint8_t small[256] __attribute__((aligned(8)));

static int push(struct swa_ring *r, uint16_t type, uint32_t value, size_t len)
{
	uint32_t *p = swa_ring_reserve(r, type, len);
	if (!p)
		return -1;
	*p = value;
	swa_ring_push(r);
	return 0;
}

static uint32_t pop(struct swa_ring *r, uint16_t *type)
{
	size_t len;
	const uint32_t *p = swa_ring_peek(r, type, &len);
	if (!p)
		return UINT32_MAX;
	uint32_t v = *p;
	swa_ring_pop(r);
	return v;
}

static void basics(void)
{
	struct swa_ring r;
	uint16_t type;
	swa_ring_init(&r, small, sizeof(small));
	CHECK(swa_ring_peek(&r, &type, &(size_t){0}) == NULL);
	CHECK_INT(push(&r, 3, 7, 4), 0);
	CHECK_INT(push(&r, 4, 8, 20), 0);
	CHECK_INT(pop(&r, &type), 7);
	CHECK_INT(type, 3);
	CHECK_INT(pop(&r, &type), 8);
	CHECK_INT(type, 4);
	CHECK_INT(swa_ring_used(&r), 0);
	/* too big for the ring at all */
	CHECK(swa_ring_reserve(&r, 1, 200) == NULL);
	/* fill, refuse, drain, and wrap many times */
	uint32_t next_in = 0, next_out = 0;
	for (int round = 0; round < 100; round++) {
		while (push(&r, 1, next_in, 4 + (next_in % 5) * 8) == 0)
			next_in++;
		CHECK(swa_ring_used(&r) <= sizeof(small));
		uint32_t v;
		int n = 0;
		while ((v = pop(&r, &type)) != UINT32_MAX && n++ < 3) {
			CHECK_INT(v, next_out);
			next_out++;
		}
		if (v != UINT32_MAX) {
			CHECK_INT(v, next_out);
			next_out++;
		}
	}
	while (pop(&r, &type) != UINT32_MAX)
		next_out++;
	CHECK_INT(next_out, next_in);
}

static void tentative(void)
{
	struct swa_ring r;
	uint16_t type;
	swa_ring_init(&r, small, sizeof(small));
	push(&r, 1, 1, 4);
	swa_ring_hold(&r);
	push(&r, 2, 2, 4);
	push(&r, 2, 3, 4);
	/* held records stay invisible */
	CHECK_INT(pop(&r, &type), 1);
	CHECK_INT(pop(&r, &type), UINT32_MAX);
	swa_ring_rollback(&r);
	CHECK_INT(pop(&r, &type), UINT32_MAX);
	swa_ring_hold(&r);
	uint32_t *begin = swa_ring_reserve(&r, 5, 4);
	CHECK(begin != NULL);
	swa_ring_push(&r);
	push(&r, 2, 11, 4);
	*begin = 10; /* filled in after later records, as the watchdog does */
	swa_ring_commit(&r);
	CHECK_INT(pop(&r, &type), 10);
	CHECK_INT(type, 5);
	CHECK_INT(pop(&r, &type), 11);
	CHECK_INT(pop(&r, &type), UINT32_MAX);
}

#define RACE_COUNT 200000

static struct swa_ring race;
static uint8_t race_buf[4096] __attribute__((aligned(8)));

static void *producer(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < RACE_COUNT;) {
		size_t len = 4 + (i % 13) * 8;
		uint32_t *p = swa_ring_reserve(&race, 1, len);
		if (!p)
			continue;
		for (size_t k = 0; k < len / 4; k++)
			p[k] = i;
		swa_ring_push(&race);
		i++;
	}
	return NULL;
}

static void racing(void)
{
	swa_ring_init(&race, race_buf, sizeof(race_buf));
	pthread_t t;
	pthread_create(&t, NULL, producer, NULL);
	uint32_t expect = 0;
	int bad = 0;
	while (expect < RACE_COUNT) {
		uint16_t type;
		size_t len;
		const uint32_t *p = swa_ring_peek(&race, &type, &len);
		if (!p)
			continue;
		if (len != 4 + (expect % 13) * 8)
			bad++;
		for (size_t k = 0; k < len / 4; k++)
			if (p[k] != expect)
				bad++;
		swa_ring_pop(&race);
		expect++;
	}
	pthread_join(t, NULL);
	CHECK_INT(bad, 0);
	CHECK_INT(expect, RACE_COUNT);
}

int main(void)
{
	basics();
	tentative();
	racing();
	return sw_test_end();
}
