/*
 * The main loop's activity, as cheap as it can be: each iteration reads the
 * clock once when the wait returns and stores two relaxed atomics (the
 * iteration's start, then 0 when it waits again).  Only while the watchdog
 * watches an iteration (pre-roll or stall) does the loop also note when it
 * waited, so the stall's end is exact rather than the watchdog's next tick:
 * the first wait only, which also ends the watching, since a watchdog late
 * in a long sampling round would otherwise find the time of a later wait.
 *
 * The hook that starts an iteration names its context (the run-loop mode
 * on Darwin, "main loop" for the waits interposed on Linux): a pointer to
 * a string that lives as long as the process, stored only when it changes.
 * A run loop's Entry, BeforeTimers and BeforeSources mark the loop busy
 * only when it was idle: a nested run loop entered from a callback must not
 * restart the outer iteration's clock.
 *
 * The clock read is the processor's cycle counter (rdtsc, cntvct_el0: a
 * dozen ns where clock_gettime costs thirty) once the watchdog has
 * calibrated it against the monotonic clock; until then, or where the
 * counter does not tick at a constant rate, the monotonic clock itself.  A
 * stamp from the counter carries SWA_STAMP_TICKS; only the watchdog turns
 * stamps into ns, against an anchor it takes each tick, so the rate's error
 * applies to the iteration's age alone (microseconds in a long stall).
 */
#include <pthread.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

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

#define CALIBRATE_NS 50000000ull /* the shortest baseline for a rate */

_Atomic bool swa_loop_stamp_ticks; /* the counter is calibrated: stamps use it */
static struct {
	bool usable, started, rebased;
	uint64_t base_ticks, base_ns; /* the first pair: the rate's baseline */
	uint64_t ticks, ns;           /* the last pair: the conversions' anchor */
	double ns_per_tick;
} cal;

/* Whether the counter ticks at one rate whatever the power state. */
static bool ticks_constant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return false;
	return (d >> 8) & 1; /* invariant TSC */
#else
	return true; /* the generic timer */
#endif
}

/* A counter reading and the monotonic time at it: the closest of three pairs. */
static void read_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = swa_loop_read_ticks(), n = swa_plat_now(), t1 = swa_loop_read_ticks();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*ticks = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

void swa_loop_calibrate(void)
{
	if (!cal.started) {
		cal.started = true;
		cal.usable = ticks_constant();
		if (cal.usable)
			read_pair(&cal.base_ticks, &cal.base_ns);
		cal.rebased = true; /* no rate to compare with yet */
		return;
	}
	if (!cal.usable)
		return;
	read_pair(&cal.ticks, &cal.ns);
	if (cal.ns - cal.base_ns < CALIBRATE_NS || cal.ticks <= cal.base_ticks)
		return;
	double rate = (double)(cal.ns - cal.base_ns) / (double)(cal.ticks - cal.base_ticks);
	if (!cal.rebased && (rate > cal.ns_per_tick * 1.001 || rate < cal.ns_per_tick * 0.999)) {
		/* the counter's rate moved (a suspend?): the monotonic clock until it is steady */
		cal.rebased = true;
		cal.base_ticks = cal.ticks;
		cal.base_ns = cal.ns;
		atomic_store_explicit(&swa_loop_stamp_ticks, false, memory_order_relaxed);
		return;
	}
	cal.rebased = false;
	cal.ns_per_tick = rate;
	atomic_store_explicit(&swa_loop_stamp_ticks, true, memory_order_relaxed);
}

uint64_t swa_loop_stamp_ns(uint64_t stamp)
{
	if (!(stamp & SWA_STAMP_TICKS) || !cal.ns_per_tick)
		return stamp;
	int64_t dt = (int64_t)((stamp & ~SWA_STAMP_TICKS) - (cal.ticks & ~SWA_STAMP_TICKS));
	return cal.ns + (uint64_t)(int64_t)((double)dt * cal.ns_per_tick);
}

void swa_loop_set_background(bool background)
{
	atomic_store(&swa_loop_background, background);
}

void (*swa_loop_main_ended)(void);
static pthread_key_t main_key;

static void main_thread_gone(void *value)
{
	(void)value;
	if (swa_loop_main_ended)
		swa_loop_main_ended();
}

bool swa_loop_learn_main(void)
{
	if (atomic_load_explicit(&swa_main_known, memory_order_acquire))
		return true;
	if (!swa_plat_is_main_thread())
		return false;
	swa_plat_thread_self(&swa_main_thread);
	swa_plat_learn_main_cpu();
	main_pthread = pthread_self();
	if (pthread_key_create(&main_key, main_thread_gone) == 0)
		pthread_setspecific(main_key, &main_key);
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

/* Only while a stall is watched: the end is published before busy_since's 0. */
void swa_loop_end_watched(void)
{
	atomic_store_explicit(&swa_loop_watched, false, memory_order_relaxed);
	atomic_store_explicit(&swa_loop_waited_at, swa_plat_now(), memory_order_relaxed);
	atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_release);
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
