/*
 * Threads for work shared out among processors (DWARF units, halves of a
 * list of addresses).
 */
#ifndef SW_UTIL_THREAD_H
#define SW_UTIL_THREAD_H

#include <pthread.h>

/* The processors this process may run on (at least 1). */
unsigned sw_processors(void);

/*
 * pthread_create() with default attributes, but the thread starts on a
 * processor other than the caller's when it may run on one: Linux puts a
 * process's first new thread beside its creator and moves it at the next
 * balancing tick (3.5 ms on a two-processor machine), which is as long as
 * the work it was made for.  The thread may run anywhere afterwards.
 */
int sw_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
