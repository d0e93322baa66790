/*
 * The watchdog: the stall state machine and the sampler driver, on the
 * agent's own thread.
 *
 * Every sampling interval it looks at the main loop's state (loop.c).  An
 * iteration busy for one interval starts the pre-roll: the main thread is
 * sampled on the grid start + k * interval (catching up at a quarter interval
 * when a tick came late, so the count stays real), and its samples go into
 * the ring tentatively.  When the iteration has been busy for the threshold
 * the stall is declared: its begin record, reserved when the pre-roll
 * started, is filled and everything is committed.  When the loop waits
 * again the stall ends at the moment the loop noted; an iteration that ends
 * below the threshold is rolled back and costs nothing downstream.
 *
 * A process stopped by SIGSTOP or a debugger stops this thread too: a tick
 * that arrives far too late while the main thread's CPU clock barely moved
 * is time the process did not run, and it is taken out of the stall.
 * Machine suspend needs nothing: the monotonic clock stops with it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "detect.h"
#include "unwind.h"
#include "wire/wire.h"

#define COPY_CAP        (256 * 1024)
#define COPY_MAX        (1024 * 1024) /* a thread whose stack outgrew COPY_CAP: at most this */
#define WALK_MAX        16384         /* frames walked before both ends are kept */
#define OUTER_MAX       64            /* outermost frames kept of a deep stack */
#define CAPTURE_TIMEOUT 50000000ull   /* ns */
#define LATE_PAUSE      50000000ull   /* a tick this late may be a stopped process */
#define MAX_THREADS     1024
#define CACHE_THREADS   64
#define CACHE_FRAMES    128
#define REFRESH_EVERY   500000000ull

struct watch {
	bool active, committed, lost;
	uint64_t start, start_stamp, paused, next, samples, dropped, stall_id;
	uint64_t late, late_ns; /* main-thread samples taken over an interval after due */
	uint64_t cpu0, cpu0_time;
	uint64_t gap_from, gap_ns; /* the last stop taken out */
	struct swa_rec_begin *begin;
};

/* the last stack of a thread, reused while its CPU clock stands still */
struct cached_stack {
	uint64_t tid, cpu;
	uint32_t depth, flags;
	uint64_t frames[CACHE_FRAMES];
	uint32_t copy_kb; /* this thread's stack copy, when it outgrew COPY_CAP (0: COPY_CAP) */
};

void (*swa_plat_hooks_tick)(void);
static struct watch w;
static uint8_t *copy_buf, *big_copy;
static uint64_t frames[WALK_MAX];
static struct swa_thread *threads;
static struct cached_stack cache[CACHE_THREADS];
static uint64_t stall_seq;
/* a stop seen while no iteration was watched: excluded from the one running then */
static uint64_t pause_at, pause_ns;
static uint64_t last_maps;
static pthread_t thread;
static _Atomic bool stop_requested;
static struct swa_event *stopped;
struct swa_thread swa_watchdog_thread;
extern struct swa_thread swa_streamer_thread;

static struct cached_stack *cache_find(uint64_t tid, bool create)
{
	struct cached_stack *free_slot = NULL;
	for (size_t i = 0; i < CACHE_THREADS; i++) {
		if (cache[i].tid == tid)
			return &cache[i];
		if (!cache[i].tid && !free_slot)
			free_slot = &cache[i];
	}
	if (!create)
		return NULL;
	if (!free_slot)
		free_slot = &cache[tid % CACHE_THREADS];
	free_slot->tid = tid;
	free_slot->depth = 0;
	free_slot->copy_kb = 0;
	return free_slot;
}

static uint32_t wire_flags(uint32_t uflags, uint32_t cflags)
{
	uint32_t f = 0;
	if (uflags & SWA_UNWIND_TRUNCATED)
		f |= SW_SAMPLE_TRUNCATED;
	if (uflags & SWA_UNWIND_LEAF_FROM_LR)
		f |= SW_SAMPLE_LEAF_FROM_LR;
	if (uflags & SWA_UNWIND_CFI)
		f |= SW_SAMPLE_CFI;
	if (uflags & SWA_UNWIND_ASYNC)
		f |= SW_SAMPLE_ASYNC;
	if (cflags & SWA_CAPTURE_BLOCKED)
		f |= SW_SAMPLE_BLOCKED;
	if (cflags & SWA_CAPTURE_PARTIAL)
		f |= SW_SAMPLE_COPY_SHORT;
	return f;
}

static void push_sample(const struct swa_thread *t, uint64_t time, const uint64_t *fr,
			uint32_t depth, uint32_t flags, uint64_t elided, uint32_t elided_at)
{
	size_t len = sizeof(struct swa_rec_sample) + depth * sizeof(uint64_t);
	struct swa_rec_sample *rec =
	    w.lost ? NULL : swa_ring_reserve(&swa_ring, SW_MSG_SAMPLE, len);
	if (!rec) {
		w.dropped++;
		atomic_fetch_add(&swa_dropped, 1);
		return;
	}
	rec->stall_id = w.stall_id;
	rec->time = time;
	rec->thread_id = t->id;
	rec->flags = flags;
	rec->depth = depth;
	rec->elided = elided;
	rec->elided_at = elided_at;
	memcpy(rec->name, t->name, sizeof(rec->name));
	memcpy(rec->frames, fr, depth * sizeof(uint64_t));
	swa_ring_push(&swa_ring);
	atomic_fetch_add(&swa_samples_total, 1);
}

/*
 * Whether a frame lies outside every known image, and the list may be
 * re-read now: not more than ten times a second, and never while the
 * thread is inside the dynamic loader (a dlopen() holding its lock would
 * hold the watchdog too).
 */
static bool unknown_image(uint32_t depth)
{
	static uint64_t last;
	bool unknown = false;
	for (uint32_t i = 0; i < depth; i++) {
		if (swa_images_loader_at(frames[i]))
			return false;
		if (!swa_images_find(i ? frames[i] - 1 : frames[i]))
			unknown = true;
	}
	uint64_t now = swa_plat_now();
	if (!unknown || now - last < 100000000u)
		return false;
	last = now;
	return true;
}

/*
 * A capture of the main thread in its wait hook's slow path: the frames
 * below the hook (the agent deciding what the wait is, the C runtime's
 * unwinder) go, and the stack ends at the hook, where the app waits.  The
 * hook is the frame just inside its call site; depth is kept when the site
 * is not among the innermost frames.
 */
static uint32_t end_at_hook(uint64_t site, uint32_t depth)
{
	enum { HOOK_FRAMES = 16 }; /* the hook's callees, with the C runtime's unwinder */
	for (uint32_t k = 1; k < depth && k < HOOK_FRAMES; k++)
		if (frames[k] == site) {
			memmove(frames, &frames[k - 1], (depth - (k - 1)) * sizeof(frames[0]));
			return depth - (k - 1);
		}
	return depth;
}

/*
 * A stack deeper than max keeps both ends: its innermost frames (the
 * culprit) and its outermost (main, the thread's entry), and says how many
 * were left out between them.
 */
static uint32_t keep_ends(uint32_t depth, uint32_t max, uint64_t *ret_elided, uint32_t *ret_at)
{
	*ret_elided = 0;
	*ret_at = 0;
	if (depth <= max || max < 4)
		return depth <= max ? depth : max;
	uint32_t outer = max / 8 > OUTER_MAX ? OUTER_MAX : (max / 8 ? max / 8 : 1);
	uint32_t inner = max - outer;
	memmove(&frames[inner], &frames[depth - outer], outer * sizeof(frames[0]));
	*ret_elided = depth - max;
	*ret_at = inner;
	return max;
}

/* Samples thread t; returns the sample's time (0 when the thread is gone). */
static uint64_t sample_thread(const struct swa_thread *t, uint32_t max)
{
	uint64_t cpu = 0;
	bool have_cpu = swa_plat_thread_cpu_ns(t, &cpu) == 0;
	struct cached_stack *c = cache_find(t->id, have_cpu);
	if (c && have_cpu && c->depth && c->cpu == cpu && c->depth <= max) {
		uint64_t now = swa_plat_now();
		push_sample(t, now, c->frames, c->depth, c->flags, 0, 0);
		return now;
	}
	struct swa_capture cap = {.copy = copy_buf, .copy_cap = COPY_CAP};
	if (c && c->copy_kb && (big_copy || (big_copy = malloc(COPY_MAX)))) {
		cap.copy = big_copy; /* no thread is held while we allocate */
		cap.copy_cap = (size_t)c->copy_kb * 1024;
	}
	uint64_t time = swa_plat_now();
	int r = swa_plat_capture(t, &cap, CAPTURE_TIMEOUT);
	uint32_t depth = 0, flags = SW_SAMPLE_TRUNCATED, elided_at = 0;
	uint64_t elided = 0;
	if (r == -ESRCH)
		return 0;
	if (r == 0) {
		uint32_t uflags;
		/* the whole copy, so a deep stack keeps its outermost frames too */
		depth = swa_unwind(&cap, frames, WALK_MAX, &uflags);
		if (unknown_image(depth)) {
			/* a library loaded since the last look: learn it, unwind the copy again */
			swa_images_refresh();
			depth = swa_unwind(&cap, frames, WALK_MAX, &uflags);
		}
		flags = wire_flags(uflags, cap.flags);
		if (cap.hook_site && t == &swa_main_thread)
			depth = end_at_hook(cap.hook_site, depth);
		uint32_t walked = depth;
		depth = keep_ends(depth, max, &elided, &elided_at);
		if (elided)
			flags |= SW_SAMPLE_ELIDED;
		else if (depth < walked)
			flags |= SW_SAMPLE_TRUNCATED; /* a limit too small to keep both ends */
		swa_hints_note(frames, depth);        /* the thread is released: reading is safe */
		if (c && (cap.flags & SWA_CAPTURE_PARTIAL) && !(cap.flags & SWA_CAPTURE_BLOCKED))
			/* let the copy reach the top next time, within COPY_MAX */
			c->copy_kb = cap.copy_cap * 2 > COPY_MAX
					 ? COPY_MAX / 1024
					 : (uint32_t)(cap.copy_cap * 2 / 1024);
		if (cap.held_at > time)
			time = cap.held_at; /* a preempted thread answers late: its stack is from
					       then */
	} else if (r == -ENOTSUP) {
		flags |= SW_SAMPLE_BLOCKED;
	} else if (r == -EACCES) {
		flags = SW_SAMPLE_SIGNAL_BLOCKED;
	} else if (r == -ECANCELED) {
		flags = SW_SAMPLE_NO_SIGNAL;
	} else if (r == -ESHUTDOWN) {
		flags = SW_SAMPLE_PASSIVE;
	} else if (r == -ENOSPC) {
		flags = SW_SAMPLE_SMALL_ALTSTACK;
	}
	push_sample(t, time, frames, depth, flags, elided, elided_at);
	if (c && r == 0 && depth <= CACHE_FRAMES && !elided) {
		c->cpu = cpu;
		c->depth = depth;
		c->flags = flags;
		memcpy(c->frames, frames, depth * sizeof(uint64_t));
	} else if (c) {
		c->depth = 0;
	}
	return time;
}

/* Samples a round; returns the main thread's sample's time (0: none). */
static uint64_t sample_round(void)
{
	uint32_t max = atomic_load(&swa_cfg.max_depth);
	uint64_t at = sample_thread(&swa_main_thread, max);
	if (atomic_load(&swa_cfg.all_threads) && threads) {
		int n = swa_plat_list_threads(threads, MAX_THREADS);
		for (int i = 0; i < n; i++) {
			uint64_t id = threads[i].id;
			if (id == swa_main_thread.id || id == swa_watchdog_thread.id ||
			    id == swa_streamer_thread.id)
				continue;
			sample_thread(&threads[i], max);
		}
		if (n > 0)
			swa_plat_release_threads(threads, (size_t)n);
	}
	w.samples++;
	return at;
}

static void watch_begin(uint64_t start, uint64_t now)
{
	memset(&w, 0, sizeof(w));
	w.active = true;
	w.start = start;
	w.stall_id = ++stall_seq;
	atomic_store(&swa_loop_waited_at, 0);
	atomic_store(&swa_loop_watched, true);
	if (now - last_maps > REFRESH_EVERY || !last_maps) {
		swa_plat_prepare_capture();
		last_maps = now;
	}
	swa_ring_hold(&swa_ring);
	w.begin = swa_ring_reserve(&swa_ring, SW_MSG_STALL_BEGIN, sizeof(*w.begin));
	if (w.begin)
		swa_ring_push(&swa_ring);
	else
		w.lost = true;
	if (pause_at && start < pause_at)
		/* only the part of the stop after the iteration began: it ended about pause_at */
		w.paused = pause_at - start < pause_ns ? pause_at - start : pause_ns;
	pause_at = pause_ns = 0;
	swa_plat_thread_cpu_ns(&swa_main_thread, &w.cpu0);
	w.cpu0_time = now;
	w.next = now;
}

static void commit(uint64_t now)
{
	if (w.lost) {
		swa_ring_rollback(&swa_ring);
		return;
	}
	w.begin->stall_id = w.stall_id;
	w.begin->thread_id = swa_main_thread.id;
	w.begin->start_time = w.start;
	w.begin->detect_time = now;
	const char *context = atomic_load_explicit(&swa_loop_context, memory_order_relaxed);
	snprintf(w.begin->context, sizeof(w.begin->context), "%s",
		 context ? context : SWA_LOOP_DEFAULT_CONTEXT);
	swa_ring_commit(&swa_ring);
	w.committed = true;
	atomic_store(&swa_stall_open, true);
	swa_images_refresh(); /* announces images learnt during the pre-roll */
	swa_hints_flush();
	atomic_fetch_add(&swa_stalls_total, 1);
	swa_streamer_wake();
}

static void watch_end(uint64_t end, uint64_t now)
{
	uint64_t threshold = (uint64_t)atomic_load(&swa_cfg.threshold_ms) * SWA_NS_PER_MS;
	if (w.gap_ns && end <= w.gap_from && w.paused >= w.gap_ns)
		w.paused -= w.gap_ns; /* it ended before the stop */
	uint64_t duration = end - w.start > w.paused ? end - w.start - w.paused : 0;
	atomic_store(&swa_loop_watched, false);
	atomic_store(&swa_stall_open, false);
	w.active = false;
	if (!w.committed) {
		if (duration < threshold || w.lost) {
			swa_ring_rollback(&swa_ring);
			if (w.lost)
				atomic_fetch_add(&swa_dropped, 1);
			else
				stall_seq--; /* ids count reported stalls only */
			return;
		}
		commit(now);
	}
	/* the loop was idle after end: its CPU time belongs to [cpu0_time, end] */
	uint64_t cpu1 = w.cpu0, window = end > w.cpu0_time ? end - w.cpu0_time : 0;
	swa_plat_thread_cpu_ns(&swa_main_thread, &cpu1);
	/* the first interval went by before we looked: assume it ran like the rest */
	uint64_t cpu = cpu1 - w.cpu0;
	if (window > 0)
		cpu = (uint64_t)((double)cpu * (double)duration / (double)window);
	if (cpu > duration)
		cpu = duration;
	struct swa_rec_end *rec = swa_ring_reserve(&swa_ring, SW_MSG_STALL_END, sizeof(*rec));
	if (!rec) {
		atomic_fetch_add(&swa_dropped, 1);
		return;
	}
	*rec = (struct swa_rec_end){.stall_id = w.stall_id,
				    .end_time = end,
				    .duration_ns = duration,
				    .cpu_ns = cpu,
				    .samples = w.samples,
				    .dropped = w.dropped,
				    .late = w.late,
				    .late_ns = w.late_ns};
	swa_ring_push(&swa_ring);
	swa_hints_flush(); /* after the release: the threads run again */
	swa_streamer_wake();
}

/*
 * Time the process did not run (SIGSTOP, a debugger) is not a stall.  The
 * watchdog stops with the process, so it sees a gap between two ticks far
 * longer than it planned; the gap is a stop when, over it, the main thread
 * barely used the CPU and the watchdog itself barely waited for one (a
 * watchdog that was merely starved by a busy machine waited runnable).  The
 * gap goes to the iteration being watched, or to the next one watched if it
 * began before the gap.
 */
static struct {
	uint64_t tick, own, wait;
	uint64_t cpu; /* the main thread's CPU time when the watchdog last slept */
} prev;

/*
 * Whether a late tick was a stop rather than a starved watchdog.
 *
 * On Linux a stop is a signal that every thread takes itself: a thread
 * waiting in poll or on a futex is woken to stop and runs again to go on.  So
 * a main thread that did not run at all since the watchdog slept was not
 * stopped, however long the watchdog was kept away: a hypervisor that took
 * the machine's processors, or an uninterruptible wait of the watchdog, shows
 * as no time it waited for a processor, and must not take a blocked main
 * thread's stall away.  (A thread in an uninterruptible wait stops only when
 * the wait ends; its time then counts, as an unknown should.)
 *
 * Where the system cannot say how long we waited for a CPU (Darwin, where a
 * stop suspends threads without running them), a starved watchdog and a
 * stopped process look alike: only a debugger that is attached right now
 * makes it a stop, so an unknown never hides a stall.
 */
static bool stopped_not_starved(uint64_t gap, uint64_t interval, uint64_t wait, uint64_t own,
				bool wait_unknown, bool main_ran)
{
	if (wait_unknown)
		return swa_plat_traced();
	return main_ran && (wait - prev.wait + own - prev.own) * 2 < gap - interval;
}

/* Returns whether the gap since the last tick was a stop. */
static bool account_pause(uint64_t now, uint64_t interval)
{
	static unsigned ticks;
	uint64_t cpu = prev.cpu, own = prev.own, wait = prev.wait;
	uint64_t gap = prev.tick ? now - prev.tick : 0;
	bool suspicious = gap > 2 * interval + LATE_PAUSE, stop = false;
	if (suspicious)
		swa_plat_thread_cpu_ns(&swa_main_thread, &cpu);
	swa_plat_thread_cpu_ns(&swa_watchdog_thread, &own);
	/* a proc file read: every tick only while watching, else every tenth */
	static bool wait_unknown;
	if (!wait_unknown && (w.active || suspicious || ++ticks % 10 == 0))
		wait_unknown = swa_plat_self_wait_ns(&wait) == -ENOTSUP;
	if (suspicious && (cpu - prev.cpu) * 2 < gap &&
	    stopped_not_starved(gap, interval, wait, own, wait_unknown, cpu != prev.cpu)) {
		uint64_t lost = gap - interval;
		swa_log("a stop of %llu ms: not counted in stalls",
			(unsigned long long)(lost / SWA_NS_PER_MS));
		if (w.active) {
			/* unless the watched iteration turns out to have ended before it */
			uint64_t part = now - w.start < lost ? now - w.start : lost;
			w.paused += part;
			w.gap_from = prev.tick;
			w.gap_ns = part;
		}
		/* an iteration begun before the stop and not watched yet */
		pause_ns += lost;
		pause_at = now;
		stop = true;
	}
	prev.tick = now;
	prev.own = own;
	prev.wait = wait;
	return stop;
}

/*
 * One look at the loop, after a stop (after_stop) or not; returns when to
 * look next.
 */
static uint64_t tick(uint64_t now, bool after_stop)
{
	uint64_t interval = (uint64_t)atomic_load(&swa_cfg.interval_us) * SWA_NS_PER_US;
	uint64_t threshold = (uint64_t)atomic_load(&swa_cfg.threshold_ms) * SWA_NS_PER_MS;
	if (swa_plat_hooks_tick)
		swa_plat_hooks_tick();
	if (atomic_load_explicit(&swa_loop_background, memory_order_relaxed)) {
		/* a suspended app is not a stalled one: what ran before counts, no more */
		if (w.active)
			watch_end(now, now);
		return now + interval;
	}
	if (swa_ping_active())
		swa_ping_tick(now);
	uint64_t stamp = atomic_load_explicit(&swa_loop_busy_since, memory_order_acquire);
	uint64_t busy = stamp ? swa_loop_stamp_ns(stamp) : 0;
	if (busy > now)
		busy = now; /* a stamp just taken, within the counter's rounding */
	if (busy && !atomic_load_explicit(&swa_loop_first_wait, memory_order_relaxed))
		swa_loop_note_first_wait(busy); /* an iteration began: the loop had waited */
	if (!atomic_load_explicit(&swa_main_known, memory_order_acquire))
		return now + interval; /* no loop to watch before the main thread is known */
	/* off the loop's processor before an iteration there turns into a stall */
	int main_cpu = swa_plat_main_cpu();
	if (main_cpu >= 0)
		swa_plat_keep_off_cpu(main_cpu);
	if (w.active) {
		if (stamp != w.start_stamp) {
			/* when the loop noted its wait; the tick may have begun before it */
			uint64_t at = atomic_load(&swa_loop_waited_at);
			watch_end(at >= w.start ? at : now, now);
			return now; /* look again at once: a new iteration may be running */
		}
		if (now >= w.next) {
			/*
			 * a sample taken over an interval after it was due: this
			 * thread was woken or scheduled late, or the sampled thread
			 * answered the signal late (its CPU was taken); the agent's
			 * own work moves w.next, so the lateness is the machine's
			 */
			uint64_t due = w.next, at = sample_round();
			if (w.samples > 1 && !after_stop && at > due + interval) {
				w.late++;
				w.late_ns += at - due;
			}
			uint64_t grid = w.start + w.paused + (w.samples + 1) * interval;
			uint64_t soonest = swa_plat_now() + interval / 4;
			w.next = grid > soonest ? grid : soonest;
		}
		uint64_t busy_for = now - w.start > w.paused ? now - w.start - w.paused : 0;
		if (!w.committed && !w.lost && busy_for >= threshold)
			commit(now);
		return w.next;
	}
	if (busy && busy <= now) {
		if (now >= busy + interval) {
			watch_begin(busy, now);
			w.start_stamp = stamp;
			return now;
		}
		return busy + interval;
	}
	static uint64_t last_refresh;
	if (now - last_refresh > REFRESH_EVERY) {
		swa_images_refresh();
		last_refresh = now;
	}
	return now + interval;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	swa_plat_name_self("sw-watchdog");
	swa_plat_thread_self(&swa_watchdog_thread);
	swa_plat_raise_priority();
	for (;;) {
		uint64_t now = swa_plat_now();
		if (atomic_load(&stop_requested)) {
			if (w.active)
				watch_end(now, now);
			break;
		}
		/* before tick() uses now: a stop since the last look is known first */
		bool stop =
		    account_pause(now, (uint64_t)atomic_load(&swa_cfg.interval_us) * SWA_NS_PER_US);
		swa_loop_calibrate(); /* before tick() converts the loop's stamp */
		uint64_t next = tick(now, stop);
		/* after this tick's samples: the main thread's own time from here on */
		swa_plat_thread_cpu_ns(&swa_main_thread, &prev.cpu);
		if (next > now)
			swa_plat_sleep_until(next);
	}
	swa_plat_event_signal(stopped);
	return NULL;
}

int swa_watchdog_start(void)
{
	copy_buf = malloc(COPY_CAP);
	threads = calloc(MAX_THREADS, sizeof(*threads));
	if (!copy_buf || !threads)
		return -ENOMEM;
	stopped = swa_plat_event_new();
	if (!stopped)
		return -ENOMEM;
	swa_plat_prepare_capture();
	last_maps = swa_plat_now();
	int r = pthread_create(&thread, NULL, watchdog_main, NULL);
	if (r)
		return -r;
	pthread_detach(thread);
	return 0;
}

void swa_watchdog_stop(void)
{
	atomic_store(&stop_requested, true);
	uint64_t interval = (uint64_t)atomic_load(&swa_cfg.interval_us) * SWA_NS_PER_US;
	swa_plat_event_wait(stopped, interval + 200000000u);
}
