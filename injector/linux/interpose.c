/*
 * The loop hooks on Linux: poll, ppoll, epoll_wait, epoll_pwait,
 * epoll_pwait2, select and pselect (and the fortified __poll_chk and
 * __ppoll_chk) are interposed through LD_PRELOAD.  On the main thread,
 * entering the wait means the loop is idle, returning means it is busy;
 * every other thread passes straight through.  The real functions come from
 * dlsym(RTLD_NEXT) the first time they are needed.
 *
 * Not every wait of the main thread is its loop waiting (loop-wait.c): a
 * wait that returns at once (a zero timeout) is passed straight through, and
 * so is one whose call site and wait object are not the loop's: a blocking
 * call inside a callback stays part of the busy iteration.
 *
 * pthread_exit() on the main thread counts as its loop's last wait.
 *
 * A statically linked program, a raw syscall() and an io_uring loop never
 * reach these; such loops call stallwatch_before_wait()/after_wait().
 *
 * With another detector chosen (hooks-linux.c) the waits report nothing:
 * the first one on the main thread only tells that the main loop runs, so
 * Core Foundation or libdispatch can be reached safely from then on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "../agent.h"
#include "../platform.h"
#include "linux.h"

#define EXPORT __attribute__((visibility("default")))

#define REAL(name, ret, args)                                                                      \
	static ret(*real_##name) args;                                                             \
	static ret(*get_##name(void)) args                                                         \
	{                                                                                          \
		if (!real_##name)                                                                  \
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
		return real_##name;                                                                \
	}

REAL(poll, int, (struct pollfd *, nfds_t, int))
REAL(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
REAL(__poll_chk, int, (struct pollfd *, nfds_t, int, size_t))
REAL(__ppoll_chk, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t))
REAL(epoll_wait, int, (int, struct epoll_event *, int, int))
REAL(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *))
REAL(epoll_pwait2, int, (int, struct epoll_event *, int, const struct timespec *, const sigset_t *))
REAL(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
REAL(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))
REAL(pthread_exit, void, (void *))

static _Atomic bool hooks_on;
static bool trigger_only;
_Atomic bool swa_linux_main_waited;

/*
 * The main thread, by its thread pointer: one register read and a
 * comparison on every wait, where pthread_self() is a call into the C
 * library.  Thread pointers are unique among live threads, and the main
 * thread's lives as long as the process.
 */
static _Atomic uintptr_t main_tp;

static inline bool on_main_thread(void)
{
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
	uintptr_t known = atomic_load_explicit(&main_tp, memory_order_relaxed);
	if (__builtin_expect(tp == known, 1))
		return true;
	if (known || !swa_loop_on_main_thread())
		return false;
	atomic_store_explicit(&main_tp, tp, memory_order_relaxed);
	return true;
}

static inline bool watched(void)
{
	return swa_active && atomic_load_explicit(&hooks_on, memory_order_relaxed) &&
	       on_main_thread();
}

/*
 * A wait of the loop: not one that returns at once, and from the loop's site
 * and object (or no deeper in the stack than the loop waits).  A zero
 * timeout only peeks: Foundation's run loop adds such polls every turn, and
 * a callback that lets the run loop handle its sources makes them in the
 * middle of a stall, so they are not waits.
 */
#define LOOP_WAIT(immediate, object)                                                               \
	(!(immediate) && watched() &&                                                              \
	 own_wait(swa_loop_wait_key_of(__builtin_return_address(0), (uint64_t)(object)),           \
		  (uint64_t)(uintptr_t)__builtin_frame_address(0)))

static inline bool own_wait(uint64_t key, uint64_t sp)
{
	return key == swa_loop_wait_key || swa_loop_wait_is_own(key, sp);
}

/*
 * A timeout under a millisecond peeks too: Foundation's run(until: Date())
 * computes one of a few microseconds from a limit already reached, and a
 * loop that waits for work waits longer than that.
 */
static inline bool zero_ts(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec < 1000000;
}

#define HOOK(hookname, loop_wait, call)                                                            \
	do {                                                                                       \
		if (!(loop_wait))                                                                  \
			return call;                                                               \
		if (trigger_only) {                                                                \
			atomic_store_explicit(&swa_linux_main_waited, true, memory_order_relaxed); \
			return call;                                                               \
		}                                                                                  \
		swa_loop_before_wait();                                                            \
		int r_ = call;                                                                     \
		if (__builtin_expect(r_ >= 0, 1)) {                                                \
			swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);                             \
			return r_;                                                                 \
		}                                                                                  \
		int e_ = errno;                                                                    \
		swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);                                     \
		errno = e_;                                                                        \
		return r_;                                                                         \
	} while (0)

#define MISSING(fn)                                                                                \
	do {                                                                                       \
		if (!(fn)) {                                                                       \
			errno = ENOSYS;                                                            \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	int (*f)(struct pollfd *, nfds_t, int) = get_poll();
	MISSING(f);
	HOOK("poll", LOOP_WAIT(timeout == 0, 0), f(fds, n, timeout));
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		size_t len);

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, int, size_t) = get___poll_chk();
	MISSING(f);
	HOOK("poll", LOOP_WAIT(timeout == 0, 0), f(fds, n, timeout, len));
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = get_ppoll();
	MISSING(f);
	HOOK("ppoll", LOOP_WAIT(zero_ts(ts), 0), f(fds, n, ts, mask));
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		       const sigset_t *mask, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
	    get___ppoll_chk();
	MISSING(f);
	HOOK("ppoll", LOOP_WAIT(zero_ts(ts), 0), f(fds, n, ts, mask, len));
}

EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	int (*f)(int, struct epoll_event *, int, int) = get_epoll_wait();
	MISSING(f);
	HOOK("epoll_wait", LOOP_WAIT(timeout == 0, ep + 1), f(ep, ev, max, timeout));
}

EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, int, const sigset_t *) = get_epoll_pwait();
	MISSING(f);
	HOOK("epoll_pwait", LOOP_WAIT(timeout == 0, ep + 1), f(ep, ev, max, timeout, m));
}

EXPORT int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts,
			const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *) =
	    get_epoll_pwait2();
	MISSING(f);
	HOOK("epoll_pwait2", LOOP_WAIT(zero_ts(ts), ep + 1), f(ep, ev, max, ts, m));
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, struct timeval *) = get_select();
	MISSING(f);
	HOOK("select", LOOP_WAIT(tv && !tv->tv_sec && !tv->tv_usec, 0), f(n, r, w, e, tv));
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		   const sigset_t *m)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
	    get_pselect();
	MISSING(f);
	HOOK("pselect", LOOP_WAIT(zero_ts(ts), 0), f(n, r, w, e, ts, m));
}

/*
 * A main thread that ends with pthread_exit() leaves its iteration busy
 * for good: it waits forever, as far as the watchdog is concerned.
 */
EXPORT void pthread_exit(void *ret)
{
	void (*f)(void *) = get_pthread_exit();
	if (watched() && !trigger_only)
		swa_loop_before_wait();
	if (f)
		f(ret);
	for (;;)
		abort();
}

/*
 * Resolves every real function up front, from the agent's constructor, and
 * turns the hooks on: reporting, or only noting the main loop's first wait.
 */
int swa_linux_waits_start(bool only_trigger)
{
	trigger_only = only_trigger;
	swa_linux_guard_init();
	get_poll();
	get_ppoll();
	get___poll_chk();
	get___ppoll_chk();
	get_epoll_wait();
	get_epoll_pwait();
	get_epoll_pwait2();
	get_select();
	get_pselect();
	get_pthread_exit();
	atomic_store(&hooks_on, true);
	return 0;
}

void swa_linux_waits_stop(void)
{
	atomic_store(&hooks_on, false);
}

/* Another detector could not start: the waits report after all. */
void swa_linux_waits_report(void)
{
	trigger_only = false;
}
