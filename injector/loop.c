/*
 * The main loop's activity, as cheap as it can be: each iteration reads the
 * clock once when the wait returns and stores two relaxed atomics (the
 * iteration's start, then 0 when it waits again).  Only while the watchdog
 * watches an iteration (pre-roll or stall) does the loop also note when it
 * waited, so the stall's end is exact rather than the watchdog's next tick:
 * the first wait only, which also ends the watching, since a watchdog late
 * in a long sampling round would otherwise find the time of a later wait.
 */
#include "agent.h"
#include "stallwatch.h"

_Atomic uint64_t swa_loop_busy_since;
_Atomic bool swa_loop_watched;
_Atomic uint64_t swa_loop_waited_at;
struct swa_thread swa_main_thread;
bool swa_active;

void swa_loop_before_wait(const char *hook)
{
	(void)hook;
	if (atomic_load_explicit(&swa_loop_watched, memory_order_relaxed)) {
		/* rare: only while a stall is watched; published before the end */
		atomic_store_explicit(&swa_loop_watched, false, memory_order_relaxed);
		atomic_store_explicit(&swa_loop_waited_at, swa_plat_now(), memory_order_relaxed);
		atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_release);
		return;
	}
	atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_relaxed);
}

void swa_loop_after_wait(void)
{
	atomic_store_explicit(&swa_loop_busy_since, swa_plat_now(), memory_order_relaxed);
}

/* The public hooks check the thread themselves; the interposed calls already did. */
__attribute__((visibility("default"))) void stallwatch_before_wait(void)
{
	if (swa_active && swa_plat_on_main_thread())
		swa_loop_before_wait("api");
}

__attribute__((visibility("default"))) void stallwatch_after_wait(void)
{
	if (swa_active && swa_plat_on_main_thread())
		swa_loop_after_wait();
}
