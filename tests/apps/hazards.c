/*
 * Steps that do to the agent what real apps do to the process they live in
 * (see steps.h for the format; each prints what it saw, for the test):
 *
 *   sigblock         the main thread blocks every signal and reads them from
 *                    a signalfd, as some daemons do
 *   pending          prints "pending rt=N signalfd=M": real-time signals
 *                    pending on the main thread, and those the signalfd read
 *   exec:MS          spins MS, then execve()s this program, which prints
 *                    "exec ok pending=N" (N: real-time signals pending in
 *                    the new image) and exits 0
 *   spawn:MS         the same through posix_spawn(); forkexec:MS through
 *                    fork() then execve()
 *   naps:MS:US       for MS, computes about US microseconds then nanosleep()s
 *                    US microseconds; prints "naps calls=N eintr=M"
 *   sigtoggle:MS     spins MS while a helper thread installs its own handler
 *                    on SIGRTMIN+6 and puts the previous one back, again and
 *                    again, and queues itself that signal now and then;
 *                    prints "sigtoggle foreign=N own=M sent=K", where
 *                    foreign counts signals the handler got from tgkill()
 *                    (the agent's), own those it got from sigqueue()
 *   seccomp          installs a seccomp filter on every thread that kills
 *                    the process on process_vm_readv(); prints "seccomp on"
 *   exitmain:MS      the main thread calls pthread_exit(); a helper thread
 *                    prints "helper done" and ends the process MS later
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "steps.h"

extern char **environ;

static int sfd = -1;
static long long sfd_got;

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_until(long long end)
{
	static volatile unsigned long sink;
	while (mono_ns() < end)
		sink++;
}

static int rt_pending(void)
{
	sigset_t set;
	int n = 0;
	if (sigpending(&set) < 0)
		return -1;
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		n += sigismember(&set, s) == 1;
	return n;
}

static void drain_signalfd(void)
{
	struct signalfd_siginfo si;
	while (sfd >= 0 && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		sfd_got++;
}

static void self_path(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static void exec_variant(const char *how, int ms)
{
	char self[4096];
	char *argv[] = {self, "--exec-child", NULL};
	self_path(self, sizeof(self));
	spin_until(mono_ns() + ms * 1000000LL);
	fflush(stdout);
	if (!strcmp(how, "exec")) {
		execve(self, argv, environ);
		printf("exec failed: %s\n", strerror(errno));
		return;
	}
	pid_t pid = -1;
	if (!strcmp(how, "spawn")) {
		if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0)
			pid = -1;
	} else if ((pid = fork()) == 0) {
		execve(self, argv, environ);
		_exit(127);
	}
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	printf("%s status=%d signal=%d\n", how, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
	       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void naps(int ms, int us)
{
	long long end = mono_ns() + ms * 1000000LL, calls = 0, eintr = 0;
	while (mono_ns() < end) {
		spin_until(mono_ns() + us * 1000LL);
		struct timespec ts = {0, us * 1000L};
		calls++;
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
			eintr++;
	}
	printf("naps calls=%lld eintr=%lld\n", calls, eintr);
}

static atomic_long toggle_foreign, toggle_own, toggle_sent;
static atomic_bool toggle_stop;

static void toggle_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SI_QUEUE)
		atomic_fetch_add(&toggle_own, 1);
	else
		atomic_fetch_add(&toggle_foreign, 1);
}

static void *toggler(void *arg)
{
	int sig = SIGRTMIN + 6;
	(void)arg;
	for (unsigned long i = 0; !atomic_load(&toggle_stop); i++) {
		struct sigaction mine, old;
		memset(&mine, 0, sizeof(mine));
		mine.sa_sigaction = toggle_handler;
		mine.sa_flags = SA_SIGINFO | SA_RESTART;
		sigaction(sig, &mine, &old);
		if (i % 64 == 0) {
			union sigval v = {0};
			if (sigqueue(getpid(), sig, v) == 0)
				atomic_fetch_add(&toggle_sent, 1);
		}
		sigaction(sig, &old, NULL);
	}
	return NULL;
}

static void sigtoggle(int ms)
{
	pthread_t t;
	sigset_t set, old;
	/* the queued signals go to the helper, whose handler is the one installed */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 6);
	atomic_store(&toggle_stop, false);
	pthread_create(&t, NULL, toggler, NULL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	spin_until(mono_ns() + ms * 1000000LL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	atomic_store(&toggle_stop, true);
	pthread_join(t, NULL);
	printf("sigtoggle foreign=%ld own=%ld sent=%ld\n", atomic_load(&toggle_foreign),
	       atomic_load(&toggle_own), atomic_load(&toggle_sent));
}

static void seccomp_on(void)
{
#if defined(__x86_64__)
	const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned arch = AUDIT_ARCH_AARCH64;
#else
	const unsigned arch = 0;
#endif
	struct sock_filter prog[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = sizeof(prog) / sizeof(prog[0]), .filter = prog};
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
	printf("seccomp %s\n", r == 0 ? "on" : strerror(errno));
}

static void *finish_later(void *arg)
{
	struct timespec ts = {(int)(long)arg / 1000, ((int)(long)arg % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	printf("helper done\n");
	fflush(stdout);
	exit(0);
}

int hazard_step(const char *kind, int a, int b)
{
	if (!strcmp(kind, "sigblock")) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		sfd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC);
	} else if (!strcmp(kind, "pending")) {
		int n = rt_pending();
		drain_signalfd();
		printf("pending rt=%d signalfd=%lld\n", n, sfd_got);
	} else if (!strcmp(kind, "exec") || !strcmp(kind, "spawn") || !strcmp(kind, "forkexec")) {
		exec_variant(kind, a);
	} else if (!strcmp(kind, "naps")) {
		naps(a, b);
	} else if (!strcmp(kind, "sigtoggle")) {
		sigtoggle(a);
	} else if (!strcmp(kind, "seccomp")) {
		seccomp_on();
	} else if (!strcmp(kind, "exitmain")) {
		pthread_t t;
		fflush(stdout);
		pthread_create(&t, NULL, finish_later, (void *)(long)a);
		pthread_exit(NULL);
	} else {
		return -1;
	}
	drain_signalfd();
	return 0;
}

/* The image exec:MS starts: reports what it inherited. */
int hazard_exec_child(void)
{
	printf("exec ok pending=%d\n", rt_pending());
	return 0;
}
