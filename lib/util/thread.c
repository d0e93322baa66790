/* Threads started away from their creator (thread.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <unistd.h>

#include "thread.h"

unsigned sw_processors(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

int sw_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	cpu_set_t allowed, elsewhere;
	int cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return pthread_create(thread, NULL, fn, arg);
	elsewhere = allowed;
	CPU_CLR(cpu, &elsewhere);
	pthread_attr_t attr;
	if (CPU_COUNT(&elsewhere) == 0 || pthread_attr_init(&attr) != 0)
		return pthread_create(thread, NULL, fn, arg);
	int r = pthread_attr_setaffinity_np(&attr, sizeof(elsewhere), &elsewhere);
	r = r == 0 ? pthread_create(thread, &attr, fn, arg) : pthread_create(thread, NULL, fn, arg);
	pthread_attr_destroy(&attr);
	/* placed now: widening the set again does not move it back */
	if (r == 0)
		pthread_setaffinity_np(*thread, sizeof(allowed), &allowed);
	return r;
}
