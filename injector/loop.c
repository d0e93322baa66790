/*
 * The main loop's activity, as cheap as it can be: each iteration reads the
 * clock once when the wait returns and stores two relaxed atomics (the
 * iteration's start, then 0 when it waits again).  Only while the watchdog
 * watches an iteration (pre-roll or stall) does the loop also note when it
 * waited, so the stall's end is exact rather than the watchdog's next tick.
 *
 * The hook that starts an iteration names its context (the run-loop mode
 * on Darwin, "main loop" for the waits interposed on Linux): a pointer to
 * a string that lives as long as the process, stored only when it changes.
 * A run loop's Entry, BeforeTimers and BeforeSources mark the loop busy
 * only when it was idle: a nested run loop entered from a callback must not
 * restart the outer iteration's clock.
 */
#include <pthread.h>

#include "agent.h"
#include "stallwatch.h"

_Atomic uint64_t swa_loop_busy_since;
_Atomic bool swa_loop_watched;
_Atomic uint64_t swa_loop_waited_at;
_Atomic(const char *) swa_loop_context;
struct swa_thread swa_main_thread;
bool swa_active;
_Atomic bool swa_main_known;
_Atomic bool swa_loop_background;
static pthread_t main_pthread;

void swa_loop_set_background(bool background)
{
	atomic_store(&swa_loop_background, background);
}

bool swa_loop_learn_main(void)
{
	if (atomic_load_explicit(&swa_main_known, memory_order_acquire))
		return true;
	if (!swa_plat_is_main_thread())
		return false;
	swa_plat_thread_self(&swa_main_thread);
	main_pthread = pthread_self();
	/* published after the thread's description, which the watchdog reads */
	atomic_store_explicit(&swa_main_known, true, memory_order_release);
	return true;
}

bool swa_loop_on_main_thread(void)
{
	if (!atomic_load_explicit(&swa_main_known, memory_order_acquire))
		return swa_loop_learn_main() && pthread_equal(pthread_self(), main_pthread);
	return pthread_equal(pthread_self(), main_pthread);
}

void swa_loop_before_wait(void)
{
	if (atomic_load_explicit(&swa_loop_watched, memory_order_relaxed)) {
		/* rare: only while a stall is watched; published before the end */
		atomic_store_explicit(&swa_loop_waited_at, swa_plat_now(), memory_order_relaxed);
		atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_release);
		return;
	}
	atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_relaxed);
}

static inline void note_context(const char *context)
{
	if (atomic_load_explicit(&swa_loop_context, memory_order_relaxed) != context)
		atomic_store_explicit(&swa_loop_context, context, memory_order_relaxed);
}

void swa_loop_after_wait(const char *context)
{
	note_context(context);
	atomic_store_explicit(&swa_loop_busy_since, swa_plat_now(), memory_order_relaxed);
}

void swa_loop_busy_if_idle(const char *context)
{
	if (atomic_load_explicit(&swa_loop_busy_since, memory_order_relaxed))
		return;
	swa_loop_after_wait(context);
}

/* The public hooks check the thread themselves; the interposed calls already did. */
__attribute__((visibility("default"))) void stallwatch_before_wait(void)
{
	if (swa_active && swa_loop_on_main_thread())
		swa_loop_before_wait();
}

__attribute__((visibility("default"))) void stallwatch_after_wait(void)
{
	if (swa_active && swa_loop_on_main_thread())
		swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);
}
