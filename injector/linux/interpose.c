/*
 * The loop hooks on Linux: poll, ppoll, epoll_wait, epoll_pwait,
 * epoll_pwait2, select and pselect (and the fortified __poll_chk and
 * __ppoll_chk) are interposed through LD_PRELOAD.  On the main thread,
 * entering the wait means the loop is idle, returning means it is busy;
 * every other thread passes straight through.  The real functions come from
 * dlsym(RTLD_NEXT) the first time they are needed.
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
#include <signal.h>
#include <stdatomic.h>
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

static _Atomic bool hooks_on;
static bool trigger_only;
_Atomic bool swa_linux_main_waited;

static inline bool watched(void)
{
	return swa_active && atomic_load_explicit(&hooks_on, memory_order_relaxed) &&
	       swa_loop_on_main_thread();
}

#define HOOK(hookname, call)                                                                       \
	do {                                                                                       \
		if (!watched())                                                                    \
			return call;                                                               \
		if (trigger_only) {                                                                \
			atomic_store_explicit(&swa_linux_main_waited, true, memory_order_relaxed); \
			return call;                                                               \
		}                                                                                  \
		swa_loop_before_wait();                                                            \
		int r_ = call;                                                                     \
		int e_ = errno;                                                                    \
		swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);                                     \
		errno = e_;                                                                        \
		return r_;                                                                         \
	} while (0)

/*
 * A zero timeout only peeks: Foundation's run loop adds such polls every
 * turn and a callback that lets the run loop handle its sources makes them
 * in the middle of a stall, so they are not waits and pass straight through.
 */
#define PEEK(zero, call)                                                                           \
	do {                                                                                       \
		if (zero)                                                                          \
			return call;                                                               \
	} while (0)

static inline bool ts_zero(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec == 0;
}

static inline bool tv_zero(const struct timeval *tv)
{
	return tv && tv->tv_sec == 0 && tv->tv_usec == 0;
}

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
	PEEK(timeout == 0, f(fds, n, timeout));
	HOOK("poll", f(fds, n, timeout));
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		size_t len);

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, int, size_t) = get___poll_chk();
	MISSING(f);
	PEEK(timeout == 0, f(fds, n, timeout, len));
	HOOK("poll", f(fds, n, timeout, len));
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = get_ppoll();
	MISSING(f);
	PEEK(ts_zero(ts), f(fds, n, ts, mask));
	HOOK("ppoll", f(fds, n, ts, mask));
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		       const sigset_t *mask, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
	    get___ppoll_chk();
	MISSING(f);
	PEEK(ts_zero(ts), f(fds, n, ts, mask, len));
	HOOK("ppoll", f(fds, n, ts, mask, len));
}

EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	int (*f)(int, struct epoll_event *, int, int) = get_epoll_wait();
	MISSING(f);
	PEEK(timeout == 0, f(ep, ev, max, timeout));
	HOOK("epoll_wait", f(ep, ev, max, timeout));
}

EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, int, const sigset_t *) = get_epoll_pwait();
	MISSING(f);
	PEEK(timeout == 0, f(ep, ev, max, timeout, m));
	HOOK("epoll_pwait", f(ep, ev, max, timeout, m));
}

EXPORT int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts,
			const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *) =
	    get_epoll_pwait2();
	MISSING(f);
	PEEK(ts_zero(ts), f(ep, ev, max, ts, m));
	HOOK("epoll_pwait2", f(ep, ev, max, ts, m));
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, struct timeval *) = get_select();
	MISSING(f);
	PEEK(tv_zero(tv), f(n, r, w, e, tv));
	HOOK("select", f(n, r, w, e, tv));
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		   const sigset_t *m)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
	    get_pselect();
	MISSING(f);
	PEEK(ts_zero(ts), f(n, r, w, e, ts, m));
	HOOK("pselect", f(n, r, w, e, ts, m));
}

/*
 * Resolves every real function up front, from the agent's constructor, and
 * turns the hooks on: reporting, or only noting the main loop's first wait.
 */
int swa_linux_waits_start(bool only_trigger)
{
	trigger_only = only_trigger;
	get_poll();
	get_ppoll();
	get___poll_chk();
	get___ppoll_chk();
	get_epoll_wait();
	get_epoll_pwait();
	get_epoll_pwait2();
	get_select();
	get_pselect();
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
