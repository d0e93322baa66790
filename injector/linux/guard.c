/*
 * What the app does that the agent's sampling must step aside for,
 * interposed through LD_PRELOAD like the loop hooks:
 *
 * - exec: every exec function (and posix_spawn) first fences the sampler
 *   (capture.c): no signal of ours is sent, none is in flight and none is
 *   left pending on the calling thread when the new image starts, since
 *   the new image has no handler and a real-time signal would kill it.  A
 *   failed exec lifts the fence again.  An exec of the process the agent
 *   runs in hands the new image the agent's variables back
 *   (exec_env()): the agent goes on there.
 * - sigaction(), signal(), bsd_signal() on the agent's signal: the app's
 *   action is kept aside and gets the app's signals, never the agent's.
 * - sigaltstack(), and syscall(SYS_sigaltstack, ...): a thread that sets
 *   an alternate signal stack too small for the agent's handler
 *   (swa_linux_altstack_needed()) is never sent the agent's signal; it
 *   would run past the stack's bottom.  A thread-specific key's destructor
 *   forgets the thread when it ends.
 * - a seccomp filter, through prctl() or syscall(SYS_seccomp, ...): the
 *   agent goes passive before the filter exists, since it cannot know what
 *   the filter forbids.
 * - the sleeps a signal cuts short even with SA_RESTART (nanosleep,
 *   clock_nanosleep, usleep, sleep, sem_timedwait, sem_clockwait): when
 *   our signal is what interrupted them, they go on waiting for the time
 *   that is left, so the app never sees that EINTR.  A thread the agent
 *   signals just as it enters one of them is the race that /proc cannot
 *   close; this closes it for these calls.
 *
 * The real functions come from dlsym(RTLD_NEXT) at the agent's start.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../agent.h"
#include "../platform.h"
#include "linux.h"

REAL(execve, int, (const char *, char *const[], char *const[]))
REAL(execvpe, int, (const char *, char *const[], char *const[]))
REAL(fexecve, int, (int, char *const[], char *const[]))
REAL(execveat, int, (int, const char *, char *const[], char *const[], int))
REAL(posix_spawn, int,
     (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
      char *const[], char *const[]))
REAL(posix_spawnp, int,
     (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
      char *const[], char *const[]))
REAL(sigaction, int, (int, const struct sigaction *, struct sigaction *))
REAL(sigaltstack, int, (const stack_t *, stack_t *))
REAL(prctl, int, (int, unsigned long, unsigned long, unsigned long, unsigned long))
REAL(syscall, long, (long, long, long, long, long, long, long))
REAL(nanosleep, int, (const struct timespec *, struct timespec *))
REAL(clock_nanosleep, int, (clockid_t, int, const struct timespec *, struct timespec *))
REAL(sem_timedwait, int, (sem_t *, const struct timespec *))
REAL(sem_clockwait, int, (sem_t *, clockid_t, const struct timespec *))

extern char **environ;

#define MISSING(fn)                                                                                \
	do {                                                                                       \
		if (!(fn)) {                                                                       \
			errno = ENOSYS;                                                            \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/* Runs call with the sampler fenced; returns only when it failed. */
#define FENCED(call)                                                                               \
	do {                                                                                       \
		bool f_ = swa_linux_fence_begin();                                                 \
		int r_ = call;                                                                     \
		int e_ = errno;                                                                    \
		if (f_)                                                                            \
			swa_linux_fence_end();                                                     \
		errno = e_;                                                                        \
		return r_;                                                                         \
	} while (0)

/* Whether entry is the environment variable var ("VAR=...", var_len bytes of name). */
static bool is_var(const char *entry, const char *var, size_t var_len)
{
	return strncmp(entry, var, var_len) == 0 && entry[var_len] == '=';
}

/*
 * envp with the agent's variables and preload entry put back
 * (swa_config_exec_vars()), NULL when this is not the process it runs in:
 * an array mapped for the call, *ret_size bytes, unmapped after a failed
 * exec.  mmap, not malloc: an exec may come where malloc may not.
 */
static char *const *exec_env(char *const envp[], size_t *ret_size)
{
	struct swa_exec_vars v;
	if (!swa_config_exec_vars(&v))
		return NULL;
	const char *var = swa_plat_preload_variable();
	size_t var_len = strlen(var), n = 0, text = strlen(v.preload) + 2;
	const char *rest = NULL; /* the app's own preload entries, after ours */
	for (char *const *e = envp; e && *e; e++, n++)
		if (is_var(*e, var, var_len))
			rest = *e + var_len + 1;
	text += rest ? strlen(rest) : 0;
	size_t slots = n + v.nvars + 3;
	size_t size = slots * sizeof(char *) + text;
	char **out = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (out == MAP_FAILED)
		return NULL;
	/* without snprintf, which an exec from a signal handler may not call */
	char *preload = (char *)(out + slots), *p = preload;
	size_t len = strlen(v.preload);
	memcpy(p, v.preload, len);
	p += len;
	if (rest && *rest) {
		*p++ = ':';
		len = strlen(rest);
		memcpy(p, rest, len);
		p += len;
	}
	*p = '\0';
	size_t k = 0;
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, "STALLWATCH_", 11) != 0 && !is_var(*e, var, var_len))
			out[k++] = *e;
	out[k++] = preload;
	/*
	 * The new image waits for a client before main() only when one reads
	 * now: a client that went away (a run killed) would else cost every
	 * exec of the app that wait
	 */
	bool reader = swa_streamer_has_client();
	for (size_t i = 0; i < v.nvars; i++)
		if (reader || !is_var(v.vars[i], "STALLWATCH_WAIT_MS", 18))
			out[k++] = v.vars[i];
	out[k++] = (char *)v.pid;
	out[k] = NULL;
	*ret_size = size;
	return out;
}

/* How long an exec that the agent follows waits for the streamer to send what it holds. */
#define EXEC_DRAIN_MS 100

/*
 * Around every exec call: the environment it passes (envp, or envp with the
 * agent's variables put back when this is the process the agent runs in,
 * exec_env(): the new image, the same process, is watched on), the sampler
 * fenced, and what was sampled sent to the client first.
 */
struct exec_guard {
	char *const *env;
	char *const *followed; /* mapped by exec_env(), or NULL */
	size_t size;
	bool fenced;
};

static void exec_begin(struct exec_guard *g, char *const envp[])
{
	g->followed = exec_env(envp, &g->size);
	g->env = g->followed ? g->followed : envp;
	g->fenced = swa_linux_fence_begin();
	if (g->followed)
		swa_streamer_drain(EXEC_DRAIN_MS);
}

/* After an exec that failed (the only kind that returns); keeps errno. */
static void exec_end(struct exec_guard *g)
{
	int e = errno;
	if (g->fenced)
		swa_linux_fence_end();
	if (g->followed)
		munmap((void *)g->followed, g->size);
	errno = e;
}

/* Runs call, an exec whose environment is env, between exec_begin() and exec_end(). */
#define FENCED_EXEC(envp, env, call)                                                               \
	do {                                                                                       \
		struct exec_guard g_;                                                              \
		exec_begin(&g_, (envp));                                                           \
		char *const *env = g_.env;                                                         \
		int r_ = call;                                                                     \
		exec_end(&g_);                                                                     \
		return r_;                                                                         \
	} while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	MISSING(get_execve());
	FENCED_EXEC(envp, env, real_execve(path, argv, env));
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	MISSING(get_execvpe());
	FENCED_EXEC(envp, env, real_execvpe(file, argv, env));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	MISSING(get_fexecve());
	FENCED_EXEC(envp, env, real_fexecve(fd, argv, env));
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	MISSING(get_execveat());
	FENCED_EXEC(envp, env, real_execveat(dirfd, path, argv, env, flags));
}

/* The list of an execl call as an array on the stack; ret_envp gets execle's. */
#define LIST_ARGV(first, ap, argv, ret_envp)                                                       \
	do {                                                                                       \
		size_t n_ = 1;                                                                     \
		va_list c_;                                                                        \
		va_copy(c_, ap);                                                                   \
		while (va_arg(c_, char *))                                                         \
			n_++;                                                                      \
		va_end(c_);                                                                        \
		argv = alloca((n_ + 1) * sizeof(char *));                                          \
		argv[0] = (char *)(first);                                                         \
		for (size_t i_ = 1; i_ <= n_; i_++)                                                \
			argv[i_] = va_arg(ap, char *);                                             \
		char ***e_ = (ret_envp);                                                           \
		if (e_)                                                                            \
			*e_ = va_arg(ap, char **);                                                 \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, arg);
	LIST_ARGV(arg, ap, argv, (char ***)NULL);
	va_end(ap);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, arg);
	LIST_ARGV(arg, ap, argv, (char ***)NULL);
	va_end(ap);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;
	va_list ap;
	va_start(ap, arg);
	LIST_ARGV(arg, ap, argv, &envp);
	va_end(ap);
	return execve(path, argv, envp);
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!get_posix_spawn())
		return ENOSYS;
	FENCED(real_posix_spawn(pid, path, fa, attr, argv, envp));
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!get_posix_spawnp())
		return ENOSYS;
	FENCED(real_posix_spawnp(pid, file, fa, attr, argv, envp));
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (swa_linux_app_sigaction(sig, act, old))
		return 0;
	MISSING(get_sigaction());
	return real_sigaction(sig, act, old);
}

static pthread_key_t small_alt_key;
static bool small_alt_key_made;

/* A thread that set a small alternate stack ends: its id may come back for another. */
static void small_alt_gone(void *v)
{
	(void)v;
	swa_linux_note_altstack(gettid(), false);
}

/* After the calling thread set its alternate stack to ss (when it did). */
static void note_altstack(const stack_t *ss)
{
	if (!ss)
		return;
	bool small = !(ss->ss_flags & SS_DISABLE) && ss->ss_size < swa_linux_altstack_needed();
	swa_linux_note_altstack(gettid(), small);
	if (small && small_alt_key_made)
		pthread_setspecific(small_alt_key, (void *)1);
}

EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	MISSING(get_sigaltstack());
	int r = real_sigaltstack(ss, old);
	if (r == 0)
		note_altstack(ss);
	return r;
}

static sighandler_t set_handler(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	return sigaction(sig, &sa, &old) < 0 ? SIG_ERR : old.sa_handler;
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return set_handler(sig, h);
}

sighandler_t bsd_signal(int sig, sighandler_t h);
EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h);
}

EXPORT int prctl(int option, ...)
{
	va_list ap;
	unsigned long a[4];
	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		swa_linux_go_passive("the app installed a seccomp filter");
	MISSING(get_prctl());
	return real_prctl(option, a[0], a[1], a[2], a[3]);
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	MISSING(get_syscall());
	if (nr == SYS_seccomp &&
	    (a[0] == SECCOMP_SET_MODE_FILTER || a[0] == SECCOMP_SET_MODE_STRICT))
		swa_linux_go_passive("the app installed a seccomp filter");
	else if (nr == SYS_prctl && a[0] == PR_SET_SECCOMP)
		swa_linux_go_passive("the app installed a seccomp filter");
	if (nr == SYS_sigaltstack) {
		long r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (r == 0)
			note_altstack((const stack_t *)a[0]);
		return r;
	}
	if (nr == SYS_execve || nr == SYS_execveat) {
		int at = nr == SYS_execve ? 2 : 3; /* the environment's argument */
		struct exec_guard g;
		exec_begin(&g, (char *const *)a[at]);
		a[at] = (long)g.env;
		long r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		exec_end(&g);
		return r;
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	MISSING(get_nanosleep());
	if (!req)
		return real_nanosleep(req, rem);
	struct timespec left = *req, r;
	for (;;) {
		uint64_t mark = swa_linux_signal_mark();
		int ret = real_nanosleep(&left, &r);
		if (ret == 0 || errno != EINTR || !swa_linux_signal_hit(mark)) {
			if (ret < 0 && errno == EINTR && rem)
				*rem = r;
			return ret;
		}
		left = r;
	}
}

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
			   struct timespec *rem)
{
	if (!get_clock_nanosleep())
		return ENOSYS;
	if (!req)
		return real_clock_nanosleep(clock, flags, req, rem);
	struct timespec left = *req, r;
	for (;;) {
		uint64_t mark = swa_linux_signal_mark();
		int ret = real_clock_nanosleep(clock, flags, &left, &r);
		if (ret != EINTR || !swa_linux_signal_hit(mark)) {
			if (ret == EINTR && rem && !(flags & TIMER_ABSTIME))
				*rem = r;
			return ret;
		}
		if (!(flags & TIMER_ABSTIME))
			left = r;
	}
}

EXPORT int usleep(useconds_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	return nanosleep(&ts, NULL);
}

EXPORT unsigned int sleep(unsigned int s)
{
	struct timespec ts = {(time_t)s, 0}, rem = {0, 0};
	if (nanosleep(&ts, &rem) == 0)
		return 0;
	return (unsigned int)rem.tv_sec + (rem.tv_nsec > 0);
}

EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	MISSING(get_sem_timedwait());
	for (;;) {
		uint64_t mark = swa_linux_signal_mark();
		int ret = real_sem_timedwait(sem, abstime);
		if (ret == 0 || errno != EINTR || !swa_linux_signal_hit(mark))
			return ret;
	}
}

EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
	MISSING(get_sem_clockwait());
	for (;;) {
		uint64_t mark = swa_linux_signal_mark();
		int ret = real_sem_clockwait(sem, clock, abstime);
		if (ret == 0 || errno != EINTR || !swa_linux_signal_hit(mark))
			return ret;
	}
}

/* Resolves every real function up front, from the agent's constructor. */
void swa_linux_guard_init(void)
{
	get_execve();
	get_execvpe();
	get_fexecve();
	get_execveat();
	get_posix_spawn();
	get_posix_spawnp();
	get_sigaction();
	get_sigaltstack();
	small_alt_key_made = pthread_key_create(&small_alt_key, small_alt_gone) == 0;
	get_prctl();
	get_syscall();
	get_nanosleep();
	get_clock_nanosleep();
	get_sem_timedwait();
	get_sem_clockwait();
}
