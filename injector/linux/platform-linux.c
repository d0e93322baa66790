/*
 * The Linux backend's small facts: clocks, thread ids, names, CPU time and
 * scheduling state (from /proc/self/task), the thread list, priority, and
 * fault-safe reads of our own memory with process_vm_readv(), falling back
 * to a pipe (write() fails with EFAULT rather than faulting) where the
 * system call is missing, as under qemu-user.
 *
 * Everything that may run while the watchdog samples uses raw system calls
 * (open, read, getdents64) on stack buffers: no stdio, no malloc.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/rseq.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../agent.h"
#include "linux.h"
#include "wire/wire.h"

static struct swa_fd read_pipe[2] = {SWA_FD_NONE, SWA_FD_NONE};
static _Atomic int vm_readv_state; /* 0 unknown/works, 1 missing, 2 avoided (seccomp) */
static long seccomp_at_start;
static char os_version[160];
static char process_name[300];

bool swa_plat_is_main_thread(void)
{
	return swa_linux_gettid() == getpid();
}

pid_t swa_linux_gettid(void)
{
	return gettid(); /* not syscall(): the agent interposes that (guard.c) */
}

int swa_linux_read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

/*
 * glibc 2.35 and later register an rseq area for every thread, at
 * __rseq_offset from the thread pointer (__rseq_size 0 when it did not):
 * the kernel writes the thread's processor there whenever it returns to
 * it.  Weak, so that an older C library leaves the main thread's processor
 * unknown instead of the agent unloadable.
 */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static const _Atomic uint32_t *main_cpu_id; /* the main thread's rseq cpu_id */

static const char *thread_pointer(void)
{
	const char *tp;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
	tp = NULL;
#endif
	return tp;
}

void swa_plat_learn_main_cpu(void)
{
	const char *tp = thread_pointer();
	if (!tp || !&__rseq_offset || !&__rseq_size ||
	    __rseq_size < offsetof(struct rseq, cpu_id) + sizeof(uint32_t))
		return;
	main_cpu_id =
	    (const _Atomic uint32_t *)(tp + __rseq_offset + offsetof(struct rseq, cpu_id));
}

int swa_plat_main_cpu(void)
{
	if (!main_cpu_id)
		return -1;
	int32_t cpu = (int32_t)atomic_load_explicit(main_cpu_id, memory_order_relaxed);
	return cpu >= 0 ? cpu : -1; /* not registered, or registration failed */
}

void swa_plat_thread_self(struct swa_thread *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->id = ret->handle = (uint64_t)swa_linux_gettid();
}

uint64_t swa_plat_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t swa_plat_now_boot(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
}

void swa_plat_sleep_until(uint64_t t)
{
	struct timespec ts = {.tv_sec = (time_t)(t / SWA_NS_PER_S),
			      .tv_nsec = (long)(t % SWA_NS_PER_S)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct swa_event {
	sem_t sem;
};

struct swa_event *swa_plat_event_new(void)
{
	struct swa_event *e = calloc(1, sizeof(*e));
	if (e && sem_init(&e->sem, 0, 0) < 0) {
		free(e);
		e = NULL;
	}
	return e;
}

void swa_plat_event_signal(struct swa_event *e)
{
	if (e)
		sem_post(&e->sem);
}

int swa_plat_event_wait(struct swa_event *e, uint64_t timeout_ns)
{
	if (!e)
		return -EINVAL;
	uint64_t deadline = swa_plat_now() + timeout_ns;
	struct timespec ts = {.tv_sec = (time_t)(deadline / SWA_NS_PER_S),
			      .tv_nsec = (long)(deadline % SWA_NS_PER_S)};
	for (;;) {
		if (sem_clockwait(&e->sem, CLOCK_MONOTONIC, &ts) == 0)
			return 0;
		if (errno != EINTR)
			return -ETIMEDOUT;
	}
}

int swa_plat_self_wait_ns(uint64_t *ret)
{
	char buf[128];
	if (swa_linux_read_file("/proc/thread-self/schedstat", buf, sizeof(buf)) <= 0)
		return -ENOENT;
	char *p = strchr(buf, ' ');
	if (!p)
		return -EINVAL;
	*ret = strtoull(p + 1, NULL, 10);
	return 0;
}

bool swa_plat_traced(void)
{
	/* only asked where waits are unknown, which Linux always knows */
	return false;
}

int swa_plat_thread_cpu_ns(const struct swa_thread *t, uint64_t *ret)
{
	/* the kernel's per-thread CPU clock id, as pthread_getcpuclockid() makes it */
	clockid_t cid = (clockid_t)((~(unsigned)t->handle << 3) | 6);
	struct timespec ts;
	if (clock_gettime(cid, &ts) < 0)
		return -errno;
	*ret = (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
	return 0;
}

int swa_linux_task_path(char *buf, size_t cap, uint64_t tid, const char *file)
{
	int n = snprintf(buf, cap, "/proc/self/task/%llu/%s", (unsigned long long)tid, file);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int swa_linux_task_state_cpu(uint64_t tid, char *ret_state, int *ret_cpu)
{
	char path[64], buf[512];
	swa_linux_task_path(path, sizeof(path), tid, "stat");
	int n = swa_linux_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	const char *paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ' || !paren[2])
		return -EINVAL;
	*ret_state = paren[2];
	if (ret_cpu) {
		/* "processor" is field 39; the state after the name is field 3 */
		const char *p = paren + 2;
		for (int field = 3; field < 39 && p; field++)
			if ((p = strchr(p, ' ')))
				p++;
		*ret_cpu = p ? atoi(p) : -1;
	}
	return 0;
}

int swa_linux_task_state(uint64_t tid, char *ret_state)
{
	return swa_linux_task_state_cpu(tid, ret_state, NULL);
}

int swa_plat_thread_state(const struct swa_thread *t, enum swa_thread_state *ret)
{
	char st;
	int r = swa_linux_task_state(t->handle, &st);
	if (r == -ENOENT || r == -ESRCH) {
		*ret = SWA_THREAD_GONE;
		return 0;
	}
	if (r < 0)
		return r;
	switch (st) {
	case 'R':
		*ret = SWA_THREAD_RUNNING;
		break;
	case 'S':
	case 'D':
	case 'I':
		*ret = SWA_THREAD_BLOCKED;
		break;
	case 'T':
	case 't':
		*ret = SWA_THREAD_STOPPED;
		break;
	default:
		*ret = SWA_THREAD_GONE;
		break;
	}
	return 0;
}

void swa_plat_name_self(const char *name)
{
	/* the kernel keeps 15 bytes; prctl would refuse nothing, it cuts */
	char cut[16];
	snprintf(cut, sizeof(cut), "%s", name);
	pthread_setname_np(pthread_self(), cut);
}

static void thread_name(uint64_t tid, char name[SWA_THREAD_NAME_MAX])
{
	char path[64], buf[32];
	swa_linux_task_path(path, sizeof(path), tid, "comm");
	int n = swa_linux_read_file(path, buf, sizeof(buf));
	if (n < 0)
		n = 0;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 15)
		n = 15;
	memcpy(name, buf, (size_t)n);
	name[n] = '\0';
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int swa_plat_list_threads(struct swa_thread *out, size_t cap)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long len = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (len <= 0)
			break;
		for (long off = 0; off < len;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			char *end;
			unsigned long long tid = strtoull(d->d_name, &end, 10);
			if (*end || d->d_name[0] == '.' || n == cap)
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			out[n].id = out[n].handle = tid;
			thread_name(tid, out[n].name);
			n++;
		}
	}
	close(fd);
	return (int)n;
}

int swa_plat_socket(int domain, int type)
{
	int fd = socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	return fd < 0 ? -errno : fd;
}

int swa_plat_accept(int listen_fd)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int swa_plat_pipe(int fds[2])
{
	return pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0 ? -errno : 0;
}

long swa_plat_send(int fd, const void *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n < 0 ? -errno : n;
}

void swa_plat_release_threads(struct swa_thread *threads, size_t n)
{
	(void)threads; /* thread ids are plain numbers here: nothing is held */
	(void)n;
}

/*
 * A fair-scheduled thread may ask for a short time slice (Linux 6.12 and
 * later, no privilege needed): the scheduler then runs it soon after it
 * wakes, ahead of the busy threads with the default slice, which is what a
 * watchdog that wakes every millisecond for microseconds needs.  Older
 * kernels refuse, and nothing changes.
 */
static void short_slice(void)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} attr = {.size = 48, .policy = SCHED_OTHER, .runtime = 100000};
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)swa_linux_gettid());
	attr.nice = errno ? 0 : nice;
	syscall(SYS_sched_setattr, 0, &attr, 0u);
}

void swa_plat_raise_priority(void)
{
	/* its timers fire when asked, not up to 50 us later (the default slack) */
	prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);
	struct sched_param sp = {.sched_priority = 1};
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		return;
	/* without privilege: a nicer value for everyone else is all we may ask */
	setpriority(PRIO_PROCESS, (id_t)swa_linux_gettid(), -5);
	short_slice();
}

int swa_plat_read(uint64_t addr, void *dst, size_t len)
{
	if (len == 0)
		return 0;
	if (!atomic_load_explicit(&vm_readv_state, memory_order_relaxed) && !seccomp_at_start) {
		struct iovec local = {.iov_base = dst, .iov_len = len};
		struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
		ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0 || errno != ENOSYS)
			return -EFAULT;
		atomic_store(&vm_readv_state, 1);
	}
	/* the fallback: the kernel copies through the pipe or says EFAULT */
	int in = swa_fd_get(&read_pipe[0]), out_fd = swa_fd_get(&read_pipe[1]);
	if (in < 0 || out_fd < 0)
		return -EFAULT; /* the app took them: no fallback any more */
	uint8_t *out = dst;
	while (len) {
		size_t chunk = len < 4096 ? len : 4096;
		ssize_t w = write(out_fd, (const void *)(uintptr_t)addr, chunk);
		if (w <= 0)
			return -EFAULT;
		size_t got = 0;
		while (got < (size_t)w) {
			ssize_t r = read(in, out + got, (size_t)w - got);
			if (r <= 0)
				return -EIO;
			got += (size_t)r;
		}
		out += w;
		addr += (uint64_t)w;
		len -= (size_t)w;
	}
	return 0;
}

/* How many seccomp filters the main thread is under (1 for strict mode), from /proc. */
long swa_linux_seccomp_filters(void)
{
	char buf[2048];
	if (swa_linux_read_file("/proc/self/status", buf, sizeof(buf)) <= 0)
		return 0;
	const char *n = strstr(buf, "\nSeccomp_filters:\t");
	if (n)
		return strtol(n + 18, NULL, 10);
	const char *mode = strstr(buf, "\nSeccomp:\t");
	return mode && mode[10] != '0';
}

/* Whether a filter came since the start, installed in a way guard.c did not see. */
bool swa_linux_seccomp_added(void)
{
	return swa_linux_seccomp_filters() > seccomp_at_start;
}

bool swa_linux_emulated(void)
{
	return atomic_load(&vm_readv_state) == 1;
}

int swa_plat_executable_path(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	if (n <= 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

const char *swa_plat_os_version(void)
{
	return os_version;
}

const char *swa_plat_process_name(void)
{
	return process_name;
}

const char *swa_plat_device_model(void)
{
	return "";
}

const char *swa_plat_bundle_id(void)
{
	return process_name;
}

const char *swa_plat_bundle_version(void)
{
	return "";
}

const char *swa_plat_agent_path(void)
{
	Dl_info info;
	return dladdr(&read_pipe, &info) ? info.dli_fname : NULL;
}

char **swa_plat_environ(void)
{
	extern char **environ;
	return environ;
}

const char *swa_plat_preload_variable(void)
{
	return "LD_PRELOAD";
}

bool swa_plat_debuggable(void)
{
	return true; /* whoever can preload a library could ptrace the process anyway */
}

uint32_t swa_plat_max_start_wait_ms(void)
{
	return 60000;
}

uint32_t swa_plat_platform(void)
{
	return SW_PLATFORM_LINUX;
}

void swa_plat_atfork_child(void)
{
	/* the checked close: a descriptor the app already took over stays the app's */
	swa_fd_close(&read_pipe[0]);
	swa_fd_close(&read_pipe[1]);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/*
 * The name the process goes by, as ps(1) and top(1) show it: the name it
 * was started as (comm, the base name of the file the kernel exec'd:
 * redis-server, where the executable is redis-check-rdb, or a script's
 * own name), in full from argv[0] where comm stops at 15 bytes, and the
 * executable's name where comm is only the start of it (python3 runs
 * python3.11).
 */
static void name_process(void)
{
	char comm[32], exe[256], argv0[256];
	int n = swa_linux_read_file("/proc/self/comm", comm, sizeof(comm));
	comm[n > 0 ? strcspn(comm, "\n") : 0] = '\0';
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	const char *name = base_name(exe);
	size_t clen = strlen(comm);
	if (clen && strncmp(name, comm, clen) != 0) {
		name = comm;
		/* TASK_COMM_LEN: comm keeps the first 15 bytes */
		if (clen == 15 &&
		    swa_linux_read_file("/proc/self/cmdline", argv0, sizeof(argv0)) > 0 &&
		    strncmp(base_name(argv0), comm, clen) == 0)
			name = base_name(argv0);
	}
	snprintf(process_name, sizeof(process_name), "%s", name);
}

int swa_plat_init(void)
{
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(os_version, sizeof(os_version), "%s %s", u.sysname, u.release);
	name_process();
	int p[2];
	if (swa_plat_pipe(p) == 0) {
		swa_fd_adopt(&read_pipe[0], p[0]);
		swa_fd_adopt(&read_pipe[1], p[1]);
	}
	/*
	 * Under a filter from the start (a container's, a sandbox's) the agent
	 * cannot know whether process_vm_readv() is allowed: it reads through
	 * its pipe instead.  Else probe once, so the fallback is known before
	 * anything is held.
	 */
	seccomp_at_start = swa_linux_seccomp_filters();
	uint64_t probe = 0, v = 0;
	if (!seccomp_at_start)
		swa_plat_read((uint64_t)(uintptr_t)&probe, &v, sizeof(v));
	return swa_linux_capture_init(swa_cfg.no_signals);
}
