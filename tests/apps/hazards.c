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
 *   exitmain:MS[:1|:2]  the main thread calls pthread_exit(); a helper
 *                    thread prints "helper done" and ends the process MS
 *                    later with exit(0), or with :1 only ends itself, the
 *                    last of the app's threads (the process then ends as
 *                    with exit(0), pthread_exit(3) says); with :2 the main
 *                    thread waits in pause() and the helper cancels it
 *                    first, then ends itself
 *   fdreuse:MS       closes every descriptor from 3 up, as daemons do, and
 *                    opens its own in their place (a pipe, a listening TCP
 *                    socket on 0.0.0.0, its log file $STALLAPP_LOG, fillers);
 *                    stalls MS with 796 bytes in its pipe, then prints
 *                    "fdreuse pipe=N accept=ok|hung log=clean|dirty
 *                    agent_cpu_ms=M": the bytes it read back, whether it
 *                    accepted its own connection, whether its log holds
 *                    only its lines, and the CPU time of the agent's
 *                    threads (sw-*) over one idle second after that
 *   fdreuse:MS:1     closes them and opens nothing; prints "fdclose
 *                    agent_cpu_ms=M" after the stall and an idle second
 *   auxv             finds the auxiliary vector as Go's runtime does, past
 *                    the end of the environment the kernel laid out after
 *                    argv; prints "auxv real" (the vector the kernel gave),
 *                    "auxv empty" (Go then reads /proc/self/auxv) or "auxv
 *                    other" (what it took for the vector is not)
 *   exitnow:MS       spins MS, prints "exitnow end NS" (CLOCK_MONOTONIC) and
 *                    ends the process with _exit(), as Go's runtime does (no
 *                    atexit handler, no destructor runs: what the agent had
 *                    not sent by then is lost)
 *   altstack:MS      installs an alternate signal stack, as Go and Rust do
 *                    on every thread, and spins MS on a coroutine's stack of
 *                    1 KiB above a guard page, as a goroutine with little
 *                    room left would; prints "altstack ok" after it
 *   smallalt:MS[:1]  sets an alternate signal stack as small as programs
 *                    set for their own SIGSEGV handler (MINSIGSTKSZ, or the
 *                    kernel's frame and 256 bytes where that is more), above
 *                    8 KiB of a known pattern, through sigaltstack() (with
 *                    :1, the C library's syscall() found by dlsym() on
 *                    libc itself, as a runtime that makes its own system
 *                    calls does), spins MS and prints "smallalt clean" or
 *                    "smallalt dirty N": N bytes below the stack written
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
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
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
	sigset_t set;
	(void)arg;
	/* created with the signal blocked (below): the queued signals come here */
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
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
	/*
	 * The queued signals go to the helper, whose handler is the one
	 * installed.  Blocked here before the helper exists: the kernel offers
	 * a process's signal to its main thread first, which would take one
	 * sent before it blocked them after the helper had put the old action
	 * back (the default, which ends the process, with or without an agent).
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 6);
	atomic_store(&toggle_stop, false);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pthread_create(&t, NULL, toggler, NULL);
	spin_until(mono_ns() + ms * 1000000LL);
	/*
	 * Unblocked only once the helper is done: the kernel gives a signal the
	 * helper queues to this thread first when it takes them, and one could
	 * arrive after the helper put the default action back (which ends the
	 * process, with or without an agent).
	 */
	atomic_store(&toggle_stop, true);
	pthread_join(t, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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

static pthread_t main_thread;

/* How exitmain's helper ends it all, MS later (exitmain's third field). */
struct finish {
	long ms;
	int how; /* 0: exit(0); 1: it ends itself; 2: it cancels the main thread first */
};

static void *finish_later(void *arg)
{
	struct finish *f = arg;
	if (f->how == 2)
		pthread_cancel(main_thread);
	struct timespec ts = {f->ms / 1000, (f->ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	printf("helper done\n");
	fflush(stdout);
	if (f->how == 0)
		exit(0);
	return NULL;
}

/* CPU time of the threads named sw-* (the agent's), in ms. */
static long agent_cpu_ms(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long ticks = 0;
	while (d && (e = readdir(d))) {
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		char *name = strchr(buf, '('), *rest = strrchr(buf, ')');
		if (!name || !rest || strncmp(name + 1, "sw-", 3))
			continue;
		unsigned long ut = 0, st = 0;
		/* after ") S": ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt */
		sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
		ticks += (long)(ut + st);
	}
	if (d)
		closedir(d);
	return ticks * 1000 / sysconf(_SC_CLK_TCK);
}

static void fdclose(int ms)
{
	syscall(SYS_close_range, 3u, ~0u, 0u);
	spin_until(mono_ns() + ms * 1000000LL);
	struct timespec pause = {0, 300000000}, second = {1, 0};
	nanosleep(&pause, NULL);
	long cpu0 = agent_cpu_ms();
	nanosleep(&second, NULL);
	printf("fdclose agent_cpu_ms=%ld\n", agent_cpu_ms() - cpu0);
}

static void fdreuse(int ms)
{
	syscall(SYS_close_range, 3u, ~0u, 0u);
	int p[2], fill[12];
	for (int i = 0; i < 2; i++)
		fill[i] = open("/dev/null", O_RDONLY);
	if (pipe(p) < 0)
		return;
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	int srv = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	bind(srv, (struct sockaddr *)&sa, sizeof(sa));
	listen(srv, 4);
	getsockname(srv, (struct sockaddr *)&sa, &len);
	const char *logpath = getenv("STALLAPP_LOG");
	int log = logpath ? open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600) : -1;
	for (int i = 2; i < 12; i++)
		fill[i] = open("/dev/null", O_RDONLY);
	char data[796];
	memset(data, 'x', sizeof(data));
	ssize_t put = write(p[1], data, sizeof(data));
	(void)put;
	dprintf(log, "app line 1\n");
	spin_until(mono_ns() + ms * 1000000LL); /* a stall: the agent samples, wakes, logs */
	struct timespec pause = {0, 300000000};
	nanosleep(&pause, NULL);
	long got = 0;
	ssize_t n;
	while ((n = read(p[0], data, sizeof(data))) > 0)
		got += n;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	connect(c, (struct sockaddr *)&sa, sizeof(sa));
	struct pollfd pfd = {.fd = srv, .events = POLLIN};
	int conn = poll(&pfd, 1, 1000) == 1 ? accept4(srv, NULL, NULL, SOCK_NONBLOCK) : -1;
	dprintf(log, "app line 2\n");
	long cpu0 = agent_cpu_ms();
	struct timespec second = {1, 0};
	nanosleep(&second, NULL);
	long cpu = agent_cpu_ms() - cpu0;
	char text[4096] = "";
	int rd = logpath ? open(logpath, O_RDONLY) : -1;
	n = rd >= 0 ? read(rd, text, sizeof(text) - 1) : 0;
	text[n > 0 ? n : 0] = '\0';
	bool clean = !strcmp(text, "app line 1\napp line 2\n");
	printf("fdreuse pipe=%ld accept=%s log=%s agent_cpu_ms=%ld\n", got,
	       conn >= 0 ? "ok" : "hung", clean ? "clean" : "dirty", cpu);
	if (!clean)
		printf("fdreuse log: %s\n", text);
	/* the app's descriptors stay open: the agent must leave them alone until exit */
	(void)fill;
	(void)c;
}

/* argv as the kernel laid it out, from the C library's call of constructors */
static int start_argc;
static char **start_argv;

__attribute__((constructor)) static void keep_start(int argc, char **argv)
{
	start_argc = argc;
	start_argv = argv;
}

/*
 * The auxiliary vector found past the environment's end, as Go's runtime
 * finds it (it reads the page size there), compared with the kernel's.
 */
static void auxv_walk(void)
{
	unsigned long real[512];
	int fd = open("/proc/self/auxv", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, real, sizeof(real)) : -1;
	if (fd >= 0)
		close(fd);
	if (!start_argv || n <= 0) {
		printf("auxv unknown\n");
		return;
	}
	char **p = start_argv + start_argc + 1;
	while (*p)
		p++;
	const unsigned long *v = (const unsigned long *)(p + 1);
	size_t words = 0;
	while (words + 2 <= sizeof(real) / sizeof(real[0]) && v[words] != AT_NULL)
		words += 2;
	words += 2;
	const char *what = "other";
	if (v[0] == AT_NULL)
		what = "empty";
	else if (words * sizeof(*v) == (size_t)n && !memcmp(v, real, (size_t)n))
		what = "real";
	printf("auxv %s\n", what);
}

static ucontext_t outer, inner;
static int inner_ms;

static void inner_spin(void)
{
	spin_until(mono_ns() + inner_ms * 1000000LL);
}

static void altstack(int ms)
{
	static char alt[65536];
	stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt)};
	long page = sysconf(_SC_PAGESIZE);
	char *mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || mprotect(mem, (size_t)page, PROT_NONE) < 0 ||
	    sigaltstack(&ss, NULL) < 0 || getcontext(&inner) < 0) {
		printf("altstack setup failed: %s\n", strerror(errno));
		return;
	}
	/* 1 KiB above the guard page: less than a signal frame with the FPU state */
	inner.uc_stack.ss_sp = mem + page;
	inner.uc_stack.ss_size = 1024;
	inner.uc_link = &outer;
	inner_ms = ms;
	makecontext(&inner, inner_spin, 0);
	if (swapcontext(&outer, &inner) < 0) {
		printf("altstack swap failed: %s\n", strerror(errno));
		return;
	}
	printf("altstack ok\n");
}

static void small_altstack(int ms, bool raw)
{
	enum { BELOW = 8192 };
	long frame = (long)getauxval(AT_MINSIGSTKSZ) + 256;
	size_t size = frame > 2048 ? (size_t)frame : 2048;
	static unsigned char mem[BELOW + 65536];
	if (size > sizeof(mem) - BELOW) {
		printf("smallalt setup failed: a frame of %ld bytes\n", frame);
		return;
	}
	memset(mem, 0xa5, BELOW + size);
	stack_t ss = {.ss_sp = mem + BELOW, .ss_size = size};
	int r;
	if (raw) {
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		long (*libc_syscall)(long, ...) = NULL;
		if (libc) /* POSIX's way past -Wpedantic's object-to-function pointer rule */
			*(void **)&libc_syscall = dlsym(libc, "syscall");
		r = libc_syscall ? (int)libc_syscall(SYS_sigaltstack, &ss, NULL) : -1;
	} else {
		r = sigaltstack(&ss, NULL);
	}
	if (r < 0) {
		printf("smallalt setup failed: %s\n", strerror(errno));
		return;
	}
	/* kept to the end, as programs keep theirs: the stall's samples all come while it is set */
	spin_until(mono_ns() + ms * 1000000LL);
	size_t low = 0;
	while (low < BELOW && mem[low] == 0xa5)
		low++;
	if (low == BELOW)
		printf("smallalt clean\n");
	else
		printf("smallalt dirty %zu\n", BELOW - low);
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
	} else if (!strcmp(kind, "fdreuse")) {
		if (b == 1)
			fdclose(a);
		else
			fdreuse(a);
	} else if (!strcmp(kind, "auxv")) {
		auxv_walk();
	} else if (!strcmp(kind, "exitnow")) {
		spin_until(mono_ns() + a * 1000000LL);
		printf("exitnow end %lld\n", mono_ns());
		fflush(stdout);
		_exit(0);
	} else if (!strcmp(kind, "altstack")) {
		altstack(a);
	} else if (!strcmp(kind, "smallalt")) {
		small_altstack(a, b == 1);
	} else if (!strcmp(kind, "exitmain")) {
		static struct finish f;
		pthread_t t;
		f = (struct finish){a, b};
		main_thread = pthread_self();
		fflush(stdout);
		pthread_create(&t, NULL, finish_later, &f);
		/* with :2, pause() is the cancellation point where the helper's cancel ends it */
		if (b == 2)
			for (;;)
				pause();
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
