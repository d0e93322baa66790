/*
 * Tests for threads started away from their creator (util/thread.c): the
 * thread runs its function with its argument, may afterwards run on every
 * processor the process may, and starts when the process has only one.
 * Which processor it starts on is the scheduler's to keep, not this
 * test's to race for.
 */
#include <sched.h>
#include <stdbool.h>

#include "util/thread.h"
#include "test.h"

static void *twice(void *arg)
{
	return (void *)((unsigned long)arg * 2);
}

/* Starts one thread: its result, and whether its processors are the process's. */
static unsigned long start_one(unsigned long arg, bool *same_set)
{
	pthread_t t;
	CHECK_INT(sw_thread_start(&t, twice, (void *)arg), 0);
	cpu_set_t process, thread;
	CHECK_INT(sched_getaffinity(0, sizeof(process), &process), 0);
	CHECK_INT(pthread_getaffinity_np(t, sizeof(thread), &thread), 0);
	*same_set = CPU_EQUAL(&process, &thread);
	void *ret = NULL;
	CHECK_INT(pthread_join(t, &ret), 0);
	return (unsigned long)ret;
}

int main(void)
{
	cpu_set_t all;
	CHECK_INT(sched_getaffinity(0, sizeof(all), &all), 0);
	CHECK_INT(sw_processors(), CPU_COUNT(&all));
	bool same = false;
	for (unsigned long i = 1; i <= 20; i++) {
		CHECK_INT(start_one(i, &same), 2 * i);
		CHECK(same);
	}
	/* one processor: nowhere else to start, so where we are */
	cpu_set_t one;
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	}
	CHECK_INT(sched_setaffinity(0, sizeof(one), &one), 0);
	CHECK_INT(sw_processors(), 1);
	CHECK_INT(start_one(21, &same), 42);
	CHECK(same);
	return sw_test_end();
}
