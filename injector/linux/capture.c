/*
 * Capturing a thread on Linux.
 *
 * A running thread gets one real-time signal (SIGRTMIN+6 unless the app
 * already handles that one; see stallwatch-agent(7)), installed with
 * SA_RESTART.  The handler runs on the thread itself: it copies the
 * registers from its ucontext and the live stack, from the interrupted stack
 * pointer up to the top of the stack's mapping (at most the copy's size),
 * into the buffer the watchdog prepared, and posts a semaphore.  The
 * handler only uses memcpy, clock_gettime and sem_post, all async-signal-safe.
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
 */
#include <errno.h>
#include <fcntl.h>
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

#include "../platform.h"
#include "linux.h"

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
} req;

static sem_t done;
static int capture_sig;
static pid_t our_pid;

int swa_linux_capture_signal(void)
{
	return capture_sig;
}

static uint64_t now_ns(void)
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
 * Bounds a stack copy: from sp up to the end of the mapping holding it, at
 * most the buffer's size.  False when no mapping in the snapshot holds sp.
 * Pure arithmetic on prepared tables: safe in the signal handler.
 */
static bool stack_extent(struct swa_capture *cap, uint64_t sp, size_t *ret_len)
{
	struct region r;
	cap->stack_lo = sp;
	cap->copy_len = 0;
	if (!find_region(sp, &r))
		return false;
	cap->stack_hi = r.hi;
	size_t len = (size_t)(r.hi - sp);
	if (len > cap->copy_cap) {
		len = cap->copy_cap;
		cap->flags |= SWA_CAPTURE_PARTIAL;
	}
	*ret_len = len;
	return true;
}

static void copy_stack(struct swa_capture *cap, uint64_t sp)
{
	size_t len;
	if (!stack_extent(cap, sp, &len)) {
		cap->stack_hi = 0;
		cap->flags |= SWA_CAPTURE_PARTIAL;
		return;
	}
	memcpy(cap->copy, (const void *)(uintptr_t)sp, len);
	cap->copy_len = len;
}

static void handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	(void)sig;
	if (si->si_code != SI_TKILL || si->si_pid != our_pid)
		goto out;
	if ((pid_t)syscall(SYS_gettid) != req.tid)
		goto out;
	int expected = REQ_SENT;
	if (!atomic_compare_exchange_strong(&req.state, &expected, REQ_COPYING))
		goto out;
	req.entered = now_ns();
	struct swa_capture *cap = req.cap;
	regs_from_ucontext(&cap->regs, ucv);
	copy_stack(cap, cap->regs.r[SWA_REG_SP]);
	req.left = now_ns();
	atomic_store(&req.state, REQ_DONE);
	sem_post(&done);
out:
	errno = saved_errno;
}

/* Takes the first real-time signal from SIGRTMIN+6 on that nobody handles. */
int swa_linux_capture_init(void)
{
	our_pid = getpid();
	if (sem_init(&done, 0, 0) < 0)
		return -errno;
	for (int sig = SIGRTMIN + 6; sig <= SIGRTMAX - 4; sig++) {
		struct sigaction old;
		if (sigaction(sig, NULL, &old) < 0)
			continue;
		if (old.sa_handler != SIG_DFL)
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		if (sigaction(sig, &sa, NULL) < 0)
			return -errno;
		capture_sig = sig;
		return 0;
	}
	return -EBUSY;
}

static bool handler_installed(void)
{
	struct sigaction cur;
	return sigaction(capture_sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == handler;
}

/* Parses /proc/self/maps in pieces into the table of writable mappings. */
int swa_plat_prepare_capture(void)
{
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
	if (!stack_extent(cap, sp, &len)) {
		/* a stack newer than our snapshot of the mappings: look again */
		swa_plat_prepare_capture();
		if (!stack_extent(cap, sp, &len))
			return -EFAULT;
	}
	if (swa_plat_read(sp, cap->copy, len) < 0)
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
		uint64_t t0 = now_ns();
		int r = copy_remote(cap, sp);
		cap->held_ns = now_ns() - t0;
		if (r < 0)
			return r;
		if (!have_sched)
			return 0;
		if (read_u64s(sched_path, after, 1, NULL) == 1 && after[0] == before[0])
			return 0;
	}
	return -EAGAIN;
}

static int capture_signal(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns)
{
	if (!capture_sig || !handler_installed())
		return -EPERM; /* the app took our signal: never send it theirs */
	cap->flags = 0;
	req.cap = cap;
	req.tid = (pid_t)t->handle;
	atomic_store(&req.state, REQ_SENT);
	if (syscall(SYS_tgkill, our_pid, (pid_t)t->handle, capture_sig) < 0) {
		atomic_store(&req.state, REQ_IDLE);
		return -errno;
	}
	uint64_t deadline = now_ns() + timeout_ns;
	for (;;) {
		struct timespec ts = {.tv_sec = (time_t)(deadline / SWA_NS_PER_S),
				      .tv_nsec = (long)(deadline % SWA_NS_PER_S)};
		if (sem_clockwait(&done, CLOCK_MONOTONIC, &ts) == 0)
			break;
		if (errno == EINTR)
			continue;
		int expected = REQ_SENT;
		if (atomic_compare_exchange_strong(&req.state, &expected, REQ_IDLE))
			return -ETIMEDOUT; /* a late signal finds nothing to do */
		/* the handler is copying right now: it finishes in microseconds */
		deadline = now_ns() + 100000000u;
	}
	atomic_store(&req.state, REQ_IDLE);
	cap->held_ns = req.left - req.entered;
	return 0;
}

int swa_plat_capture(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns)
{
	/* a thread caught between states is looked at again, never signalled in a wait */
	for (int attempt = 0; attempt < 2; attempt++) {
		char st;
		int r = swa_linux_task_state(t->handle, &st);
		if (r < 0)
			return r == -ENOENT ? -ESRCH : r;
		switch (st) {
		case 'R':
			r = capture_signal(t, cap, timeout_ns);
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
