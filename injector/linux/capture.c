/*
 * Capturing a thread on Linux.
 *
 * A running thread gets one real-time signal (SIGRTMIN+6 unless the app
 * already handles that one; see stallwatch-agent(7)), installed with
 * SA_RESTART, and only when /proc/self/task/TID/status says it does not
 * block that signal (a blocked one would stay pending, and survive exec).
 * The signal is queued with rt_tgsigqueueinfo() and a cookie, so the
 * handler tells ours from the app's own: a handler the app installs on the
 * same signal through sigaction() or signal() is kept aside (guard.c) and
 * receives the app's signals from ours, never ours.  No signal is sent
 * while a thread of the process is in exec (swa_linux_fence_begin()), with
 * STALLWATCH_SIGNALS=never, or once the agent went passive under a seccomp
 * filter.  The handler runs on the thread itself: it copies the
 * registers from its ucontext and the live stack, from the red zone below
 * the interrupted stack pointer up to the top of the stack's mapping (at
 * most the copy's size), into the buffer the watchdog prepared, and posts
 * a semaphore.  The handler only uses memcpy, clock_gettime and sem_post,
 * all async-signal-safe.
 *
 * The signal goes to the thread's alternate stack when it has one
 * (SA_ONSTACK), and the handler needs HANDLER_ROOM bytes there beyond the
 * kernel's frame.  A thread whose alternate stack is smaller (MINSIGSTKSZ,
 * which some programs register for their own SIGSEGV handler) is never
 * signalled: guard.c sees it set through sigaltstack(), and the handler
 * itself, entered on one set another way, leaves at once; the handler's
 * frame ran 1,100 bytes past the bottom of such a stack, into the app's heap.
 *
 * A thread blocked in a system call is never signalled (that would cut
 * short its sleep or read): /proc/self/task/TID/syscall gives its stack
 * pointer and program counter, the stack is read with process_vm_readv(),
 * and the thread's run time from schedstat, read before and after, shows
 * that it did not move meanwhile.
 *
 * Stack bounds come from a snapshot of /proc/self/maps taken before a
 * round of captures (swa_plat_prepare_capture), parsed with raw reads into
 * a static table the handler searches.
 *
 * The held thread must not wait for the watchdog: the watchdog keeps off
 * the CPU the thread runs on (its affinity excludes the CPU /proc names
 * before the signal and the one the handler ran on after), so neither the
 * handler's wake-up nor the watchdog's next timer, nor the unwinding after
 * the release, preempts it; the streamer, which the watchdog wakes for each
 * sample, keeps off it too; and it waits for the handler by polling the
 * semaphore for a few microseconds before it sleeps, which usually needs no
 * wake-up at all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../agent.h"
#include "../platform.h"
#include "linux.h"

extern struct swa_thread swa_streamer_thread;

#define MAX_REGIONS 4096

struct region {
	uint64_t lo, hi;
};

static struct region regions[MAX_REGIONS];
static _Atomic size_t nregions;

enum { REQ_IDLE, REQ_SENT, REQ_COPYING, REQ_DONE };

static struct {
	_Atomic int state;
	pid_t tid;
	struct swa_capture *cap;
	uint64_t entered, left;
	int cpu;      /* where the handler ran */
	bool refused; /* the handler's alternate stack was too small: it left */
} req;

/*
 * The threads whose alternate signal stack is too small for the handler
 * (swa_linux_note_altstack()): never signalled.  A thread's slot is
 * emptied when it sets a larger one or ends.
 */
#define SMALL_ALT_MAX 64
static _Atomic pid_t small_alt[SMALL_ALT_MAX];
static _Atomic int small_alt_used; /* slots ever taken: lookups stop there */

/*
 * The bytes below the stack pointer a signal leaves alone (the x86-64
 * ABI's red zone; arm64 has none): an epilogue's call-frame information
 * may still name slots there, so stack copies start this far below it.
 */
#if defined(__x86_64__)
#define RED_ZONE 128u
#else
#define RED_ZONE 0u
#endif

#define SPIN_NS 30000u /* how long to poll for the handler before sleeping */

/*
 * The bytes of an alternate signal stack the handler needs beyond the
 * kernel's frame (it took about 1,400 on x86-64), with room to spare.
 */
#define HANDLER_ROOM 2048u

static cpu_set_t allowed;         /* the process's CPUs when the agent started */
static int avoided = -1;          /* the CPU the watchdog keeps off */
static int streamer_avoided = -1; /* the CPU the streamer keeps off */

static sem_t done;
static int capture_sig;
static pid_t our_pid;
static void *cookie; /* si_value of our signals */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

/*
 * What the app installed on our signal, as it believes: two slots and an
 * index, so the handler never reads one half-written (writers take a lock).
 */
static struct sigaction app_action[2];
static _Atomic int app_slot;
static atomic_flag app_lock = ATOMIC_FLAG_INIT;

/* No signal goes out while fence > 0; sending covers check to handler's end. */
static _Atomic int fence;
static _Atomic bool sending;
static _Atomic bool passive;
static bool never;
/* the last thread our signal reached, and how many it reached in all */
static _Atomic pid_t hit_tid;
static _Atomic uint64_t hit_seq;
static const char *passive_why;

int swa_linux_capture_signal(void)
{
	return capture_sig;
}

uint64_t swa_linux_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The writable mapping holding addr: a stack's top is the end of its mapping. */
static bool find_region(uint64_t addr, struct region *ret)
{
	size_t lo = 0, hi = atomic_load_explicit(&nregions, memory_order_acquire);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < regions[mid].lo)
			hi = mid;
		else if (addr >= regions[mid].hi)
			lo = mid + 1;
		else {
			*ret = regions[mid];
			return true;
		}
	}
	return false;
}

static void regs_from_ucontext(struct swa_regs *regs, const ucontext_t *uc)
{
	memset(regs, 0, sizeof(*regs));
#if defined(__x86_64__)
	static const int map[16] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
				    REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
				    REG_R12, REG_R13, REG_R14, REG_R15};
	for (unsigned i = 0; i < 16; i++)
		swa_regs_set(regs, i, (uint64_t)uc->uc_mcontext.gregs[map[i]]);
	regs->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	swa_regs_set(regs, 16, regs->pc);
#elif defined(__aarch64__)
	for (unsigned i = 0; i < 31; i++)
		swa_regs_set(regs, i, uc->uc_mcontext.regs[i]);
	swa_regs_set(regs, 31, uc->uc_mcontext.sp);
	regs->pc = uc->uc_mcontext.pc;
#endif
}

/*
 * Bounds a stack copy: from the red zone below sp (RED_ZONE) up to the
 * end of the mapping holding sp (in *ret_region when not NULL), at most the
 * buffer's size, into cap->stack_lo and *ret_len.  False when no mapping in
 * the snapshot holds sp.  Pure arithmetic on prepared tables: safe in the signal handler.
 */
static bool stack_extent(struct swa_capture *cap, uint64_t sp, size_t *ret_len,
			 struct region *ret_region)
{
	struct region r;
	cap->stack_lo = sp;
	cap->copy_len = 0;
	if (!find_region(sp, &r))
		return false;
	if (ret_region)
		*ret_region = r;
	uint64_t lo = sp - r.lo > RED_ZONE ? sp - RED_ZONE : r.lo;
	cap->stack_lo = lo;
	cap->stack_hi = r.hi;
	size_t len = (size_t)(r.hi - lo);
	if (len > cap->copy_cap) {
		len = cap->copy_cap;
		cap->flags |= SWA_CAPTURE_PARTIAL;
	}
	*ret_len = len;
	return true;
}

/* An address in the main thread's own stack, /proc/self/maps' [stack] (0: not known). */
static _Atomic uint64_t main_stack_hint;

/*
 * The frame record, in region r, that links out of it into region home:
 * how a thread running on a stack of its own making (a goroutine's, a
 * coroutine's) came there, when the frame-pointer chain says (Go keeps it
 * across a cgo callback, from the goroutine's stack to the thread's).
 * Follows the chain from fp up, reading only r's bytes, so it is safe in
 * the handler; the record and the home address it holds, or false when the
 * chain ends or breaks before.
 */
static bool chain_leaves(uint64_t fp, const struct region *r, const struct region *home,
			 uint64_t *ret_record, uint64_t *ret_next)
{
	for (int i = 0; i < 4096 && !(fp & 7) && fp >= r->lo && fp + 16 <= r->hi; i++) {
		uint64_t next = *(const uint64_t *)(uintptr_t)fp;
		if (next >= home->lo && next + 16 <= home->hi) {
			*ret_record = fp;
			*ret_next = next;
			return true;
		}
		if (next <= fp)
			return false;
		fp = next;
	}
	return false;
}

/*
 * For the main thread on another stack than its own: the other stack up to
 * the frame record that links home, then its own stack from there up to its
 * top (cap->home_lo, home_len bytes after the first copy's), so the walk goes
 * on into the frames that called over.  Without it, the copy ran from sp to
 * the end of the mapping holding the other stack: Go's goroutine stacks are
 * in its heap, and the main thread copied a megabyte of it per sample.
 * False when that is not the case here.
 */
static bool copy_two_stacks(struct swa_capture *cap, const struct region *r, uint64_t sp,
			    uint64_t fp, size_t len)
{
	struct region home;
	uint64_t record, next;
	/* sp's mapping holds the main thread's stack (most samples): no second lookup */
	uint64_t hint = atomic_load_explicit(&main_stack_hint, memory_order_relaxed);
	if (!hint || (hint >= r->lo && hint < r->hi) || fp < sp || !find_region(hint, &home) ||
	    !chain_leaves(fp, r, &home, &record, &next) || record + 16 - cap->stack_lo > len)
		return false;
	size_t first = (size_t)(record + 16 - cap->stack_lo);
	uint64_t lo = next - home.lo > RED_ZONE ? next - RED_ZONE : home.lo;
	size_t room = cap->copy_cap - first, home_len = (size_t)(home.hi - lo);
	cap->flags &= ~(uint32_t)SWA_CAPTURE_PARTIAL; /* the first stack is whole up to the link */
	if (home_len > room) {
		home_len = room;
		cap->flags |= SWA_CAPTURE_PARTIAL;
	}
	memcpy(cap->copy, (const void *)(uintptr_t)cap->stack_lo, first);
	memcpy(cap->copy + first, (const void *)(uintptr_t)lo, home_len);
	cap->copy_len = first;
	cap->home_lo = lo;
	cap->home_len = home_len;
	cap->stack_hi = home.hi; /* the home stack lies above: mmap places no stack over it */
	return true;
}

static void copy_stack(struct swa_capture *cap, uint64_t sp, uint64_t fp, bool main_thread)
{
	size_t len;
	struct region r;
	cap->home_lo = 0;
	cap->home_len = 0;
	if (!stack_extent(cap, sp, &len, &r)) {
		cap->stack_hi = 0;
		cap->flags |= SWA_CAPTURE_PARTIAL;
		return;
	}
	if (main_thread && copy_two_stacks(cap, &r, sp, fp, len))
		return;
	memcpy(cap->copy, (const void *)(uintptr_t)cap->stack_lo, len);
	cap->copy_len = len;
}

/* The app's own signal on our number: what its action would have done. */
__attribute__((noinline)) static void forward(int sig, siginfo_t *si, void *ucv)
{
	const struct sigaction *a = &app_action[atomic_load(&app_slot)];
	if (a->sa_flags & SA_SIGINFO) {
		if (a->sa_sigaction)
			a->sa_sigaction(sig, si, ucv);
	} else if (a->sa_handler == SIG_DFL) {
		/* a real-time signal's default: the process ends, as without us */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		real_sigaction(sig, &dfl, NULL);
		tgkill(our_pid, gettid(), sig);
	} else if (a->sa_handler != SIG_IGN) {
		a->sa_handler(sig);
	}
}

static bool small_altstack(pid_t tid)
{
	int used = atomic_load(&small_alt_used);
	for (int i = 0; i < used; i++)
		if (atomic_load(&small_alt[i]) == tid)
			return true;
	return false;
}

void swa_linux_note_altstack(pid_t tid, bool small)
{
	int used = atomic_load(&small_alt_used);
	for (int i = 0; i < used; i++)
		if (atomic_load(&small_alt[i]) == tid) {
			if (!small)
				atomic_store(&small_alt[i], 0);
			return;
		}
	if (!small)
		return;
	for (int i = 0; i < SMALL_ALT_MAX; i++) {
		pid_t free_slot = 0;
		if (atomic_compare_exchange_strong(&small_alt[i], &free_slot, tid)) {
			for (int u = atomic_load(&small_alt_used); u < i + 1;)
				atomic_compare_exchange_weak(&small_alt_used, &u, i + 1);
			return;
		}
	}
	/* full: the handler still leaves such a stack at once */
}

size_t swa_linux_altstack_needed(void)
{
	/* the kernel's frame (AT_MINSIGSTKSZ, where the kernel says), at least the old 2 KiB */
	long frame = sysconf(_SC_MINSIGSTKSZ);
	return (size_t)(frame > 2048 ? frame : 2048) + HANDLER_ROOM;
}

/* The agent's work for its own signal, on the thread it reached. */
__attribute__((noinline)) static void capture_here(void *ucv)
{
	pid_t self = gettid();
	atomic_store(&hit_tid, self);
	atomic_fetch_add(&hit_seq, 1);
	if (self != req.tid)
		return;
	int expected = REQ_SENT;
	if (!atomic_compare_exchange_strong(&req.state, &expected, REQ_COPYING))
		return;
	req.entered = swa_linux_now_ns();
	req.cpu = sched_getcpu();
	struct swa_capture *cap = req.cap;
	regs_from_ucontext(&cap->regs, ucv);
	/* the held thread's own view: set only while the main thread's hook classifies a wait */
	cap->hook_site = atomic_load_explicit(&swa_loop_hook_site, memory_order_relaxed);
	copy_stack(cap, cap->regs.r[SWA_REG_SP], cap->regs.r[SWA_REG_FP], self == our_pid);
	req.left = swa_linux_now_ns();
	atomic_store(&req.state, REQ_DONE);
	sem_post(&done);
}

/*
 * Our signal reached a thread on an alternate stack with less than
 * HANDLER_ROOM bytes left under the kernel's frame: the thread is noted
 * and the watchdog told, with nothing more on that stack than this frame.
 */
__attribute__((noinline)) static void refuse_here(void)
{
	pid_t self = gettid();
	swa_linux_note_altstack(self, true);
	atomic_store(&hit_tid, self);
	atomic_fetch_add(&hit_seq, 1);
	int expected = REQ_SENT;
	if (self == req.tid && atomic_compare_exchange_strong(&req.state, &expected, REQ_COPYING)) {
		req.refused = true;
		atomic_store(&req.state, REQ_DONE);
		sem_post(&done);
	}
}

/* Whether the handler runs on an alternate stack with less than HANDLER_ROOM bytes left. */
static inline bool altstack_short(const ucontext_t *uc)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)uc->uc_stack.ss_sp;
	return !(uc->uc_stack.ss_flags & SS_DISABLE) && sp >= lo &&
	       sp - lo < uc->uc_stack.ss_size && sp - lo < HANDLER_ROOM;
}

/*
 * Kept small: on an alternate stack its frame is all that runs before the
 * room left is checked (the work is in functions not inlined here).
 */
static void handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	if (si->si_code != SI_QUEUE || si->si_pid != our_pid || si->si_value.sival_ptr != cookie)
		forward(sig, si, ucv);
	else if (altstack_short(ucv))
		refuse_here();
	else
		capture_here(ucv);
	errno = saved_errno;
}

/* Moves thread tid (0: the caller) off cpu, unless it keeps off it already. */
static void keep_off(pid_t tid, int cpu, int *kept_off)
{
	if (cpu == *kept_off)
		return;
	cpu_set_t set = allowed;
	CPU_CLR(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set) == 0)
		*kept_off = cpu;
}

/*
 * Moves the watchdog (the caller) and the streamer off cpu, when another
 * is allowed: the streamer wakes for every sample the watchdog hands it,
 * and on the held thread's CPU that wake-up would preempt it.
 */
static void avoid_cpu(int cpu)
{
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2)
		return;
	keep_off(0, cpu, &avoided);
	pid_t streamer = (pid_t)swa_streamer_thread.handle; /* 0 until it runs */
	if (streamer > 0)
		keep_off(streamer, cpu, &streamer_avoided);
}

void swa_plat_keep_off_cpu(int cpu)
{
	avoid_cpu(cpu);
}

/* Takes the first real-time signal from SIGRTMIN+6 on that nobody handles. */
int swa_linux_capture_init(bool no_signals)
{
	our_pid = getpid();
	never = no_signals;
	*(void **)&real_sigaction = dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction)
		real_sigaction = sigaction;
	uint64_t seed = swa_linux_now_ns() ^ ((uint64_t)(uintptr_t)&seed << 16) ^ (uint64_t)our_pid;
	cookie = (void *)(uintptr_t)(seed * 0x9e3779b97f4a7c15ull | 1);
	for (int i = 0; i < 2; i++)
		app_action[i].sa_handler = SIG_DFL;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		CPU_ZERO(&allowed);
	if (sem_init(&done, 0, 0) < 0)
		return -errno;
	for (int sig = SIGRTMIN + 6; sig <= SIGRTMAX - 4; sig++) {
		struct sigaction old;
		if (real_sigaction(sig, NULL, &old) < 0)
			continue;
		if (old.sa_handler != SIG_DFL)
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = handler;
		/*
		 * On the thread's alternate stack when it has one: the thread may
		 * be on a small stack of its own making (a goroutine's, a
		 * coroutine's) with less room than the kernel's signal frame
		 * takes.  Go and Rust give every thread such a stack for this.
		 */
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigfillset(&sa.sa_mask);
		if (real_sigaction(sig, &sa, NULL) < 0)
			return -errno;
		capture_sig = sig;
		return 0;
	}
	return -EBUSY;
}

static bool handler_installed(void)
{
	struct sigaction cur;
	return real_sigaction(capture_sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == handler;
}

/*
 * sigaction() on our signal, as the app sees it: it gets and sets the
 * action kept aside, our handler stays.  1 when done here, 0 when the call
 * is not about our signal (or our handler is gone) and goes to the C library.
 */
int swa_linux_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!capture_sig || sig != capture_sig || !handler_installed())
		return 0;
	while (atomic_flag_test_and_set(&app_lock))
		;
	int cur = atomic_load(&app_slot);
	if (old)
		*old = app_action[cur];
	if (act) {
		app_action[!cur] = *act;
		atomic_store(&app_slot, !cur);
	}
	atomic_flag_clear(&app_lock);
	return 1;
}

/*
 * Before exec (or a seccomp filter): no signal of ours is sent from now on,
 * the one in flight has been handled or timed out, and one pending on this
 * thread (it blocks the signal) is taken back.  False in a vfork() child,
 * which shares our memory but is not the process we sample.
 */
bool swa_linux_fence_begin(void)
{
	if (!capture_sig || getpid() != our_pid)
		return false;
	atomic_fetch_add(&fence, 1);
	while (atomic_load(&sending))
		sched_yield();
	sigset_t pending, only;
	if (sigpending(&pending) == 0 && sigismember(&pending, capture_sig) == 1) {
		sigemptyset(&only);
		sigaddset(&only, capture_sig);
		struct timespec zero = {0, 0};
		siginfo_t si;
		if (sigtimedwait(&only, &si, &zero) == capture_sig &&
		    (si.si_code != SI_QUEUE || si.si_value.sival_ptr != cookie))
			/* the app's own: put it back */
			syscall(SYS_rt_tgsigqueueinfo, our_pid, gettid(), capture_sig, &si);
	}
	return true;
}

uint64_t swa_linux_signal_mark(void)
{
	return atomic_load(&hit_seq);
}

/*
 * Whether our signal reached the calling thread since mark (and so may be
 * why its call failed with EINTR).  Another thread reached after it hides
 * it: the caller then sees the EINTR, as it would without this check.
 */
bool swa_linux_signal_hit(uint64_t mark)
{
	return atomic_load(&hit_seq) != mark && atomic_load(&hit_tid) == gettid();
}

void swa_linux_fence_end(void)
{
	atomic_fetch_sub(&fence, 1);
}

/* From now on nothing that a seccomp filter may forbid: no signal, no read. */
void swa_linux_go_passive(const char *why)
{
	if (atomic_exchange(&passive, true))
		return;
	passive_why = why;
	bool fenced = swa_linux_fence_begin();
	if (fenced)
		swa_linux_fence_end();
}

const char *swa_plat_passive_reason(void)
{
	return atomic_load(&passive) ? passive_why : NULL;
}

/* Parses /proc/self/maps in pieces into the table of writable mappings. */
int swa_plat_prepare_capture(void)
{
	if (atomic_load(&passive))
		return -EPERM;
	if (swa_linux_seccomp_added()) {
		swa_linux_go_passive("a seccomp filter appeared");
		return -EPERM;
	}
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static char buf[16384];
	static struct region next[MAX_REGIONS];
	size_t len = 0, n = 0;
	for (;;) {
		ssize_t got = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		buf[len] = '\0';
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', len - (size_t)(line - buf)))) {
			*nl = '\0';
			char *end;
			uint64_t lo = strtoull(line, &end, 16);
			uint64_t hi = *end == '-' ? strtoull(end + 1, &end, 16) : 0;
			size_t line_len = (size_t)(nl - line);
			if (hi > lo && line_len > 7 && !memcmp(nl - 7, "[stack]", 7))
				atomic_store_explicit(&main_stack_hint, hi - 8,
						      memory_order_relaxed);
			if (*end == ' ' && end[1] == 'r' && end[2] == 'w' && hi > lo &&
			    n < MAX_REGIONS) {
				if (n && next[n - 1].hi == lo)
					next[n - 1].hi =
					    hi; /* adjacent writable mappings: one stack */
				else
					next[n++] = (struct region){lo, hi};
			}
			line = nl + 1;
		}
		size_t rest = len - (size_t)(line - buf);
		memmove(buf, line, rest);
		len = rest;
	}
	close(fd);
	/* captures happen on this thread only, after this returns */
	atomic_store(&nregions, 0);
	memcpy(regions, next, n * sizeof(regions[0]));
	atomic_store_explicit(&nregions, n, memory_order_release);
	return 0;
}

static int read_u64s(const char *path, uint64_t *vals, size_t max, bool *running)
{
	char buf[256];
	int n = swa_linux_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	if (running && strncmp(buf, "running", 7) == 0) {
		*running = true;
		return 0;
	}
	size_t count = 0;
	char *p = buf;
	while (count < max && *p && *p != '\n') {
		char *end;
		vals[count++] = (uint64_t)strtoll(p, &end, 0);
		if (end == p)
			break;
		p = end;
		while (*p == ' ')
			p++;
	}
	return (int)count;
}

static int copy_remote(struct swa_capture *cap, uint64_t sp)
{
	size_t len;
	if (!stack_extent(cap, sp, &len, NULL)) {
		/* a stack newer than our snapshot of the mappings: look again */
		swa_plat_prepare_capture();
		if (!stack_extent(cap, sp, &len, NULL))
			return -EFAULT;
	}
	if (swa_plat_read(cap->stack_lo, cap->copy, len) < 0)
		return -EFAULT;
	cap->copy_len = len;
	return 0;
}

/*
 * A thread in a system call: registers from /proc, the stack by reading,
 * and run time unchanged before and after, else it moved under us.
 */
static int capture_blocked(const struct swa_thread *t, struct swa_capture *cap)
{
	char sched_path[64], sys_path[64];
	swa_linux_task_path(sched_path, sizeof(sched_path), t->handle, "schedstat");
	swa_linux_task_path(sys_path, sizeof(sys_path), t->handle, "syscall");
	if (swa_linux_emulated())
		return -ENOTSUP; /* /proc describes the emulator's thread, not the guest's */
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t before[1] = {0}, after[1] = {0}, sys[9];
		bool running = false;
		int have_sched = read_u64s(sched_path, before, 1, NULL) == 1;
		int n = read_u64s(sys_path, sys, 9, &running);
		if (running)
			return -EAGAIN;
		if (n < 3)
			return n < 0 ? n : -EINVAL;
		uint64_t sp = sys[n - 2], pc = sys[n - 1];
		memset(&cap->regs, 0, sizeof(cap->regs));
		cap->regs.pc = pc;
		swa_regs_set(&cap->regs, SWA_REG_SP, sp);
#if defined(__x86_64__)
		swa_regs_set(&cap->regs, 16, pc);
#endif
		cap->flags = SWA_CAPTURE_BLOCKED | SWA_CAPTURE_STILL;
		uint64_t t0 = swa_linux_now_ns();
		int r = copy_remote(cap, sp);
		cap->held_ns = swa_linux_now_ns() - t0;
		if (r < 0)
			return r;
		if (!have_sched)
			return 0;
		if (read_u64s(sched_path, after, 1, NULL) == 1 && after[0] == before[0])
			return 0;
	}
	return -EAGAIN;
}

static int send_signal(pid_t tid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = capture_sig;
	si.si_code = SI_QUEUE;
	si.si_pid = our_pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = cookie;
	return (int)syscall(SYS_rt_tgsigqueueinfo, our_pid, tid, capture_sig, &si);
}

/* Polls for the handler's post a little: a thread running elsewhere answers in microseconds. */
static bool handler_done_soon(void)
{
	uint64_t until = swa_linux_now_ns() + SPIN_NS;
	do {
		for (int i = 0; i < 64; i++) {
			if (sem_trywait(&done) == 0)
				return true;
#if defined(__x86_64__)
			__builtin_ia32_pause();
#elif defined(__aarch64__)
			__asm__ volatile("yield");
#endif
		}
	} while (swa_linux_now_ns() < until);
	return false;
}

static int capture_signal(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns,
			  int cpu)
{
	if (!capture_sig || !handler_installed())
		return -EBUSY; /* the app took our signal with a raw system call */
	if (small_altstack((pid_t)t->handle))
		return -ENOSPC;
	avoid_cpu(cpu);
	cap->flags = 0;
	req.cap = cap;
	req.tid = (pid_t)t->handle;
	req.refused = false;
	atomic_store(&sending, true);
	if (atomic_load(&fence) || atomic_load(&passive)) {
		atomic_store(&sending, false);
		return -EAGAIN; /* a thread is in exec */
	}
	atomic_store(&req.state, REQ_SENT);
	if (send_signal((pid_t)t->handle) < 0) {
		int e = errno;
		atomic_store(&req.state, REQ_IDLE);
		atomic_store(&sending, false);
		return -e;
	}
	uint64_t deadline = swa_linux_now_ns() + timeout_ns;
	for (bool spun = false;; spun = true) {
		if (!spun && handler_done_soon())
			break;
		struct timespec ts = {.tv_sec = (time_t)(deadline / SWA_NS_PER_S),
				      .tv_nsec = (long)(deadline % SWA_NS_PER_S)};
		if (sem_clockwait(&done, CLOCK_MONOTONIC, &ts) == 0)
			break;
		if (errno == EINTR)
			continue;
		int expected = REQ_SENT;
		if (atomic_compare_exchange_strong(&req.state, &expected, REQ_IDLE)) {
			atomic_store(&sending, false);
			return -ETIMEDOUT; /* a late signal finds nothing to do */
		}
		/* the handler is copying right now: it finishes in microseconds */
		deadline = swa_linux_now_ns() + 100000000u;
	}
	atomic_store(&req.state, REQ_IDLE);
	atomic_store(&sending, false);
	if (req.refused)
		return -ENOSPC;
	cap->held_ns = req.left - req.entered;
	cap->held_at = req.entered;
	avoid_cpu(req.cpu); /* the next timer's wake-up and the unwinding: elsewhere */
	return 0;
}

/* The thread's state letter and blocked signals, from one read of its status. */
static int task_status(uint64_t tid, char *ret_state, uint64_t *ret_blocked)
{
	char path[64], buf[2048];
	swa_linux_task_path(path, sizeof(path), tid, "status");
	int n = swa_linux_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	const char *st = strstr(buf, "\nState:\t"), *blk = strstr(buf, "\nSigBlk:\t");
	if (!st || !blk)
		return -EINVAL;
	*ret_state = st[8];
	*ret_blocked = strtoull(blk + 9, NULL, 16);
	return 0;
}

int swa_plat_capture(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns)
{
	if (atomic_load(&passive))
		return -ESHUTDOWN;
	/* a thread caught between states is looked at again, never signalled in a wait */
	for (int attempt = 0; attempt < 2; attempt++) {
		char st;
		uint64_t blocked;
		int cpu = -1;
		int r = task_status(t->handle, &st, &blocked);
		if (r < 0)
			return r == -ENOENT ? -ESRCH : r;
		switch (st) {
		case 'R':
			if (never)
				return -ECANCELED;
			if (capture_sig && (blocked >> (capture_sig - 1)) & 1)
				return -EACCES;
			/*
			 * The status took long to read: look again with the cheaper stat,
			 * so that a thread entering a wait meanwhile is not cut short.
			 */
			if (swa_linux_task_state_cpu(t->handle, &st, &cpu) < 0 || st != 'R')
				continue;
			r = capture_signal(t, cap, timeout_ns, cpu);
			if (r == 0 && !cap->stack_hi && attempt == 0) {
				/* a stack newer than our snapshot of the mappings: again */
				swa_plat_prepare_capture();
				continue;
			}
			return r;
		case 'S':
		case 'D':
			r = capture_blocked(t, cap);
			if (r != -EAGAIN)
				return r;
			break;
		case 'Z':
		case 'X':
			return -ESRCH;
		default: /* stopped, traced */
			return -EAGAIN;
		}
	}
	return -EAGAIN;
}

/* For the benchmark: when the last handler ran, in monotonic ns. */
void swa_linux_last_handler_times(uint64_t *entered, uint64_t *left)
{
	*entered = req.entered;
	*left = req.left;
}
