/*
 * The run-loop detector: two CFRunLoopObservers on the main run loop, in
 * the common modes and, where it exists (iOS), UIInitializationRunLoopMode,
 * which the app runs in before its first scene is up.  One is ordered
 * first, so an iteration's clock starts before any other observer's work;
 * the other last, so the work of every other BeforeWaiting observer (Core
 * Animation commits its transaction there) counts as busy.
 *
 * AfterWaiting starts an iteration; Entry, BeforeTimers and BeforeSources
 * mark the loop busy only when it was idle (a nested run loop entered from
 * a callback must not restart the outer iteration); BeforeWaiting ends the
 * busy time; Exit does not, as the outer loop's iteration goes on.  The
 * callbacks store atomics and nothing else: the thresholds, pre-roll and
 * stall rules are the watchdog's, as with every other detector.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>

#include "agent.h"
#include "detect.h"

enum {
	ENTRY = 1u << 0,
	BEFORE_TIMERS = 1u << 1,
	BEFORE_SOURCES = 1u << 2,
	BEFORE_WAITING = 1u << 5,
	AFTER_WAITING = 1u << 6,
	EXIT = 1u << 7,
};

#define MODES 2

static const char *const mode_names[MODES] = {"kCFRunLoopCommonModes",
					      "UIInitializationRunLoopMode"};
static void *observers[MODES][2];
static struct swa_cf cf_calls;
static _Atomic bool on;

static void first(void *observer, unsigned long activity, void *info)
{
	(void)observer;
	if (!atomic_load_explicit(&on, memory_order_relaxed) || !swa_loop_learn_main())
		return;
	if (activity & AFTER_WAITING)
		swa_loop_after_wait(info);
	else if (activity & (ENTRY | BEFORE_TIMERS | BEFORE_SOURCES))
		swa_loop_busy_if_idle(info);
}

static void last(void *observer, unsigned long activity, void *info)
{
	(void)observer;
	(void)info;
	if (!atomic_load_explicit(&on, memory_order_relaxed) || !swa_loop_learn_main())
		return;
	if (activity & BEFORE_WAITING)
		swa_loop_before_wait();
}

static int add_pair(size_t m, const void *mode)
{
	void *run_loop = cf_calls.get_main();
	if (!run_loop)
		return -ENOENT;
	struct swa_cf_observer_context ctx = {.info = (void *)mode_names[m]};
	observers[m][0] = cf_calls.observer_create(
	    NULL, AFTER_WAITING | ENTRY | BEFORE_TIMERS | BEFORE_SOURCES, 1, LONG_MIN, first, &ctx);
	observers[m][1] = cf_calls.observer_create(NULL, BEFORE_WAITING, 1, LONG_MAX, last, &ctx);
	if (!observers[m][0] || !observers[m][1])
		return -ENOMEM;
	cf_calls.add_observer(run_loop, observers[m][0], mode);
	cf_calls.add_observer(run_loop, observers[m][1], mode);
	return 0;
}

int swa_runloop_start(const struct swa_cf *cf)
{
	if (!cf->get_main || !cf->observer_create || !cf->add_observer || !cf->common_modes)
		return -ENOSYS;
	cf_calls = *cf;
	atomic_store(&on, true);
	int r = add_pair(0, cf->common_modes);
	if (r == 0 && cf->init_mode)
		r = add_pair(1, cf->init_mode);
	if (r < 0)
		swa_runloop_stop();
	return r;
}

void swa_runloop_stop(void)
{
	atomic_store(&on, false);
	for (size_t m = 0; m < MODES; m++) {
		for (size_t i = 0; i < 2; i++) {
			if (observers[m][i] && cf_calls.invalidate)
				cf_calls.invalidate(observers[m][i]);
			observers[m][i] = NULL; /* the run loop keeps its own reference */
		}
	}
}
