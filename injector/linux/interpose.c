/*
 * The loop hooks on Linux: poll, ppoll, epoll_wait, epoll_pwait,
 * epoll_pwait2, select and pselect (and the fortified __poll_chk and
 * __ppoll_chk), and Tcl's Tcl_WaitForEvent, are interposed through
 * LD_PRELOAD.  On the main thread,
 * entering the wait means the loop is idle, returning means it is busy;
 * every other thread passes straight through.  The real functions come from
 * dlsym(RTLD_NEXT) the first time they are needed.
 *
 * Not every wait of the main thread is its loop waiting (loop-wait.c): a
 * wait that returns at once (a zero timeout) is passed straight through, and
 * one whose call site and wait object are not the loop's keeps the iteration
 * busy: a blocking call inside a callback is a stall.  A nested run of the
 * loop (its call site and wait object, deeper in the stack) is idle only
 * once it has waited SWA_WAIT_BLOCKED_MS without events.
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
 * A wait whose timeout is under a millisecond only peeks: Foundation's
 * run(until: Date()) computes one of a few microseconds from a limit already
 * reached, and a loop that waits for work waits longer than that.
 */
static inline bool zero_ts(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec < 1000000;
}

/* Whether ts is no longer than the first part of a split nested wait. */
static inline bool within_first(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec <= (long)SWA_WAIT_BLOCKED_NS;
}

static const struct timespec first_ts = {0, (long)SWA_WAIT_BLOCKED_NS};

/* What is left of ts after the first part, in *rest; NULL (forever) stays NULL. */
static inline const struct timespec *rest_of(const struct timespec *ts, struct timespec *rest)
{
	if (!ts)
		return NULL;
	*rest = *ts;
	rest->tv_nsec -= (long)SWA_WAIT_BLOCKED_NS; /* ts is longer than that */
	if (rest->tv_nsec < 0) {
		rest->tv_nsec += 1000000000L;
		rest->tv_sec--;
	}
	return rest;
}

/*
 * The stack address a hook's wait is known by (the "sp" of loop-wait.c),
 * without giving the hook a frame pointer: a thread blocked under a hook is
 * unwound from /proc's stack pointer and program counter alone, so the
 * hook's call-frame information must not need one (meson.build builds the
 * hooks with -fomit-frame-pointer).  __builtin_frame_address() would set one
 * up in every hook, and the unwinder's guess of it fails where the app's
 * code keeps no frame pointers (the saved one is then any value): a Python
 * main thread blocked in a callback's poll lost every frame above the hook.
 * GCC's __builtin_dwarf_cfa() is the hook's canonical frame address, with no
 * frame pointer; clang's sets one up, so there the stack pointer is read:
 * below the CFA by the hook's frame, the same for every wait of one hook.
 */
#if defined(__clang__) && defined(__x86_64__)
#define HOOK_SP(sp) __asm__ volatile("mov %%rsp, %0" : "=r"(sp))
#elif defined(__clang__) && defined(__aarch64__)
#define HOOK_SP(sp) __asm__ volatile("mov %0, sp" : "=r"(sp))
#else
#define HOOK_SP(sp) ((sp) = (uint64_t)(uintptr_t)__builtin_dwarf_cfa())
#endif

/*
 * One wait on the main thread.  A zero timeout (immediate) only peeks:
 * Foundation's run loop adds such polls every turn, and a callback that lets
 * the run loop handle its sources makes them in the middle of a stall, so
 * they pass straight through.  Else the wait's key (loop-wait.c) says what
 * it is: the loop's own wait makes the loop idle while it waits (the fast
 * path: one comparison); a call inside an iteration keeps it busy, and is
 * timed so that only waits that blocked count toward relearning; a nested
 * run of the loop (splittable waits only) first waits SWA_WAIT_BLOCKED_MS
 * while still busy (first), and only if nothing came makes the loop idle for
 * the rest of its timeout (rest): a pump whose waits return at once is no
 * wait.  The loop's own wait is own: the system call itself where there is
 * a raw_ function for it, else call.  A wait that made the loop learnt has
 * its caller's frame found once the loop is idle (swa_loop_top_pending).
 */
#define HOOK(object, immediate, call, own, split, first, whole, rest)                              \
	do {                                                                                       \
		if ((immediate) || !watched())                                                     \
			return call;                                                               \
		uint64_t sp_;                                                                      \
		HOOK_SP(sp_);                                                                      \
		const void *site_ = __builtin_return_address(0);                                   \
		uint64_t key_ = swa_loop_wait_key_of(site_, (uint64_t)(object), sp_);              \
		bool slow_ = key_ != swa_loop_wait_key;                                            \
		enum swa_wait kind_ =                                                              \
		    slow_ ? swa_loop_wait_kind(key_, sp_, (uint64_t)(uintptr_t)site_)              \
			  : SWA_WAIT_LOOP;                                                         \
		if (kind_ == SWA_WAIT_INNER) {                                                     \
			if (trigger_only)                                                          \
				return call;                                                       \
			uint64_t t0_ = swa_plat_now();                                             \
			int r_ = call;                                                             \
			int e_ = errno;                                                            \
			swa_loop_inner_waited(key_, sp_, t0_);                                     \
			errno = e_;                                                                \
			return r_;                                                                 \
		}                                                                                  \
		if (trigger_only) {                                                                \
			atomic_store_explicit(&swa_linux_main_waited, true, memory_order_relaxed); \
			if (__builtin_expect(slow_, 0) && swa_loop_top_pending)                    \
				swa_loop_find_top();                                               \
			return call;                                                               \
		}                                                                                  \
		bool nested_ = (split) && kind_ == SWA_WAIT_NESTED;                                \
		if (nested_) {                                                                     \
			int r_ = first;                                                            \
			if (r_ != 0 || (whole))                                                    \
				return r_; /* events, an error, or its whole timeout */            \
		}                                                                                  \
		swa_loop_before_wait();                                                            \
		if (__builtin_expect(slow_, 0) && swa_loop_top_pending)                            \
			swa_loop_find_top();                                                       \
		int r_ = nested_ ? rest : own;                                                     \
		if (__builtin_expect(r_ >= 0, 1)) {                                                \
			swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);                             \
			return r_;                                                                 \
		}                                                                                  \
		int e_ = errno;                                                                    \
		swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);                                     \
		errno = e_;                                                                        \
		return r_;                                                                         \
	} while (0)

/* The first part of a split wait, whether it is all of it, and what is left, in ms. */
#define FIRST_MS(t) ((t) < 0 || (t) > SWA_WAIT_BLOCKED_MS ? SWA_WAIT_BLOCKED_MS : (t))
#define WHOLE_MS(t) ((t) >= 0 && (t) <= SWA_WAIT_BLOCKED_MS)
#define REST_MS(t)  ((t) < 0 ? (t) : (t)-SWA_WAIT_BLOCKED_MS)

/*
 * The unwinder of the C runtime (libgcc_s), declared here as the Itanium
 * C++ ABI defines it: <unwind.h> is shadowed by the agent's own unwind.h.
 */
struct _Unwind_Context;
typedef int (*swa_trace_fn)(struct _Unwind_Context *, void *);
int _Unwind_Backtrace(swa_trace_fn fn, void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *ctx);
uintptr_t _Unwind_GetCFA(struct _Unwind_Context *ctx);
#define URC_NO_REASON    0
#define URC_END_OF_STACK 5

struct top_search {
	uint64_t site, top;
	int frames;
	bool found;
};

static int top_step(struct _Unwind_Context *ctx, void *arg)
{
	struct top_search *t = arg;
	if (t->found) {
		/* the caller's context: its CFA is the stack pointer there, the site's frame top */
		t->top = (uint64_t)_Unwind_GetCFA(ctx);
		return URC_END_OF_STACK;
	}
	t->found = (uint64_t)_Unwind_GetIP(ctx) == t->site;
	return ++t->frames < 8 ? URC_NO_REASON : URC_END_OF_STACK;
}

/*
 * The canonical frame address of the function that made a wait at site, a
 * few frames up from here: the C library's unwinder, from the main thread
 * itself (it holds nothing of the agent's); only when a wait is new to
 * loop-wait.c.
 */
static uint64_t caller_top(uint64_t site)
{
	struct top_search t = {site, 0, 0, false};
	_Unwind_Backtrace(top_step, &t);
	return t.top;
}

/*
 * The loop's own wait, made with the system call itself rather than through
 * the C library's function: the hook then returns to the app once, not
 * twice, after the kernel (where a return costs a misprediction: the return
 * predictions do not survive the kernel's side-channel mitigations), which
 * was 30 of the hook's 42 ns on the ready-poll benchmark.  Each is the
 * system call the C library itself makes (aarch64 has no poll or epoll_wait:
 * ppoll and epoll_pwait), so a seccomp filter sees no difference; unlike the
 * C library's, it is no cancellation point (stallwatch-agent(7)).  Other
 * architectures call the C library.
 */
#if defined(__x86_64__) || defined(__aarch64__)
#include <sys/syscall.h>
#define SIGSET_BYTES 8 /* the kernel's sigset_t */

static inline long raw6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
#else
	register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
			 x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e,
			 x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#endif
}

static inline int raw_result(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

static inline int raw_poll(struct pollfd *fds, nfds_t n, int timeout)
{
#if defined(__x86_64__)
	return raw_result(raw6(SYS_poll, (long)fds, (long)n, timeout, 0, 0, 0));
#else
	struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
	return raw_result(
	    raw6(SYS_ppoll, (long)fds, (long)n, timeout < 0 ? 0 : (long)&ts, 0, SIGSET_BYTES, 0));
#endif
}

/* ppoll's timeout is const: the kernel writes what is left into a copy. */
static inline int raw_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
			    const sigset_t *mask)
{
	struct timespec copy = ts ? *ts : (struct timespec){0};
	return raw_result(
	    raw6(SYS_ppoll, (long)fds, (long)n, ts ? (long)&copy : 0, (long)mask, SIGSET_BYTES, 0));
}

static inline int raw_epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
#if defined(__x86_64__)
	return raw_result(raw6(SYS_epoll_wait, ep, (long)ev, max, timeout, 0, 0));
#else
	return raw_result(raw6(SYS_epoll_pwait, ep, (long)ev, max, timeout, 0, SIGSET_BYTES));
#endif
}

static inline int raw_epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
				  const sigset_t *m)
{
	return raw_result(raw6(SYS_epoll_pwait, ep, (long)ev, max, timeout, (long)m, SIGSET_BYTES));
}
#else /* the C library's, as for every other wait */
#define raw_poll(fds, n, timeout)                get_poll()(fds, n, timeout)
#define raw_ppoll(fds, n, ts, mask)              get_ppoll()(fds, n, ts, mask)
#define raw_epoll_wait(ep, ev, max, timeout)     get_epoll_wait()(ep, ev, max, timeout)
#define raw_epoll_pwait(ep, ev, max, timeout, m) get_epoll_pwait()(ep, ev, max, timeout, m)
#endif

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
	HOOK(0, timeout == 0, f(fds, n, timeout), raw_poll(fds, n, timeout), true,
	     f(fds, n, FIRST_MS(timeout)), WHOLE_MS(timeout), f(fds, n, REST_MS(timeout)));
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		size_t len);

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, int, size_t) = get___poll_chk();
	MISSING(f);
	HOOK(0, timeout == 0, f(fds, n, timeout, len), f(fds, n, timeout, len), true,
	     f(fds, n, FIRST_MS(timeout), len), WHOLE_MS(timeout),
	     f(fds, n, REST_MS(timeout), len));
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = get_ppoll();
	MISSING(f);
	struct timespec rest;
	HOOK(0, zero_ts(ts), f(fds, n, ts, mask), raw_ppoll(fds, n, ts, mask), true,
	     f(fds, n, &first_ts, mask), within_first(ts), f(fds, n, rest_of(ts, &rest), mask));
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		       const sigset_t *mask, size_t len)
{
	int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
	    get___ppoll_chk();
	MISSING(f);
	struct timespec rest;
	HOOK(0, zero_ts(ts), f(fds, n, ts, mask, len), f(fds, n, ts, mask, len), true,
	     f(fds, n, &first_ts, mask, len), within_first(ts),
	     f(fds, n, rest_of(ts, &rest), mask, len));
}

EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	int (*f)(int, struct epoll_event *, int, int) = get_epoll_wait();
	MISSING(f);
	HOOK(ep + 1, timeout == 0, f(ep, ev, max, timeout), raw_epoll_wait(ep, ev, max, timeout),
	     true, f(ep, ev, max, FIRST_MS(timeout)), WHOLE_MS(timeout),
	     f(ep, ev, max, REST_MS(timeout)));
}

EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, int, const sigset_t *) = get_epoll_pwait();
	MISSING(f);
	HOOK(ep + 1, timeout == 0, f(ep, ev, max, timeout, m),
	     raw_epoll_pwait(ep, ev, max, timeout, m), true, f(ep, ev, max, FIRST_MS(timeout), m),
	     WHOLE_MS(timeout), f(ep, ev, max, REST_MS(timeout), m));
}

EXPORT int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts,
			const sigset_t *m)
{
	int (*f)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *) =
	    get_epoll_pwait2();
	MISSING(f);
	struct timespec rest;
	HOOK(ep + 1, zero_ts(ts), f(ep, ev, max, ts, m), f(ep, ev, max, ts, m), true,
	     f(ep, ev, max, &first_ts, m), within_first(ts), f(ep, ev, max, rest_of(ts, &rest), m));
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, struct timeval *) = get_select();
	MISSING(f);
	/* the sets and timeval change on return: a nested select is not split */
	HOOK(0, tv && !tv->tv_sec && !tv->tv_usec, f(n, r, w, e, tv), f(n, r, w, e, tv), false, 0,
	     true, 0);
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		   const sigset_t *m)
{
	int (*f)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
	    get_pselect();
	MISSING(f);
	HOOK(0, zero_ts(ts), f(n, r, w, e, ts, m), f(n, r, w, e, ts, m), false, 0, true, 0);
}

/*
 * Tcl's notifier (tclsh, Tk, Python's tkinter): Tcl_DoOneEvent waits in
 * Tcl_WaitForEvent, which libtcl calls through its PLT, and the threaded
 * notifier waits there on a condition variable while a thread of its own
 * selects: no wait of the main thread above ever sees the loop.  The first
 * Tcl_WaitForEvent of the main thread makes it the loop's wait, and the
 * waits above pass straight through from then on: a sleep or a select
 * inside a callback (Tcl's own `after MS` among them) keeps the iteration
 * busy.  A nested loop (vwait, tkwait: a modal dialog) waits here too, and
 * is idle while it waits, as the app answers meanwhile.  A zero timeout
 * (update, TCL_DONT_WAIT) only peeks.
 */
struct swa_tcl_time {
	long sec, usec; /* Tcl_Time */
};
static bool other_detector; /* chosen at start: Tcl's waits report nothing either */
static bool tcl_loop;
static int (*real_Tcl_WaitForEvent)(const struct swa_tcl_time *);

EXPORT int Tcl_WaitForEvent(const struct swa_tcl_time *t);

/*
 * libtcl's own Tcl_WaitForEvent.  Past this library when libtcl is in the
 * global scope (tclsh); else from the library that called (or, through
 * Tcl's stubs table, one that needs libtcl): Python's _tkinter loads
 * libtcl with dlopen, locally, where RTLD_NEXT does not look.
 */
static int (*get_Tcl_WaitForEvent(const void *caller))(const struct swa_tcl_time *)
{
	if (real_Tcl_WaitForEvent)
		return real_Tcl_WaitForEvent;
	void *f = dlsym(RTLD_NEXT, "Tcl_WaitForEvent");
	Dl_info info;
	if (!f && dladdr(caller, &info) && info.dli_fname) {
		void *lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
		if (lib) {
			f = dlsym(lib, "Tcl_WaitForEvent");
			dlclose(lib); /* RTLD_NOLOAD took a reference of its own */
		}
	}
	*(void **)&real_Tcl_WaitForEvent = f;
	if (real_Tcl_WaitForEvent == Tcl_WaitForEvent)
		real_Tcl_WaitForEvent = NULL;
	return real_Tcl_WaitForEvent;
}

EXPORT int Tcl_WaitForEvent(const struct swa_tcl_time *t)
{
	int (*f)(const struct swa_tcl_time *) = get_Tcl_WaitForEvent(__builtin_return_address(0));
	if (!f)
		return -1; /* Tcl's error: no libtcl called this one */
	if ((t && t->sec == 0 && t->usec < 1000) || other_detector || !watched())
		return f(t);
	if (__builtin_expect(!tcl_loop, 0)) {
		tcl_loop = true;
		trigger_only = true; /* the main thread's own waits are no longer the loop's */
		swa_loop_note_first_wait(swa_plat_now());
	}
	swa_loop_before_wait();
	int r = f(t);
	swa_loop_after_wait(SWA_LOOP_DEFAULT_CONTEXT);
	return r;
}

/*
 * A main thread that ends with pthread_exit() leaves its iteration busy
 * for good: it waits forever, as far as the watchdog is concerned.  (The
 * agent then ends as the thread does: agent.c.)
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
	other_detector = only_trigger;
	swa_loop_caller_top = caller_top;
	/*
	 * the unwinder's first call binds its symbols and finds its first
	 * objects (tens of microseconds): paid here, not at a wait
	 */
	caller_top(0);
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
	trigger_only = tcl_loop;
	other_detector = false;
}
