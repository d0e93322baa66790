/*
 * The Darwin backend's small facts: clocks (mach_absolute_time, which stops
 * while the device sleeps, and mach_continuous_time, which does not),
 * dispatch semaphores, the calling thread, priority, fault-safe reads with
 * vm_read_overwrite, sockets made close-on-exec and SIGPIPE-free with
 * fcntl and SO_NOSIGPIPE, and the facts of the hello (hw.machine, the OS
 * version, the bundle's identifier and version read once at start).
 *
 * The agent stays inert in an app without the get-task-allow entitlement
 * (a Release or TestFlight build), and samples nothing under Rosetta,
 * where thread_suspend() can deadlock the translator.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include <CoreFoundation/CoreFoundation.h>
#include <crt_externs.h>
#include <TargetConditionals.h>
#include <dispatch/dispatch.h>
#include <mach-o/dyld.h>
#include <mach/mach.h>
#include <mach/mach_time.h>

#include "darwin.h"
#include "wire/wire.h"

/* csops(2): the code-signing status of a process (libSystem exports it). */
int csops(pid_t pid, unsigned int ops, void *useraddr, size_t usersize);
#define CS_OPS_STATUS       0
#define CS_GET_TASK_ALLOW   0x00000004u
#define CS_DEBUGGED         0x10000000u
#define P_TRACED            0x00000800
#define KINFO_PROC_FLAG_OFF 32 /* kp_proc.p_flag in struct kinfo_proc (64-bit) */

static mach_timebase_info_data_t timebase;
static char os_version[64];
static char device_model[64];
static char process_name[256];
static int translated = -1;

static uint64_t ticks_to_ns(uint64_t t)
{
	/* no 128-bit division: there is no Darwin compiler-rt on the build host */
	if (timebase.numer == timebase.denom)
		return t;
	return t / timebase.denom * timebase.numer +
	       t % timebase.denom * timebase.numer / timebase.denom;
}

static uint64_t ns_to_ticks(uint64_t ns)
{
	if (timebase.numer == timebase.denom)
		return ns;
	return ns / timebase.numer * timebase.denom +
	       ns % timebase.numer * timebase.denom / timebase.numer;
}

uint64_t swa_plat_now(void)
{
	return ticks_to_ns(mach_absolute_time());
}

uint64_t swa_plat_now_boot(void)
{
	return ticks_to_ns(mach_continuous_time());
}

void swa_plat_sleep_until(uint64_t t)
{
	mach_wait_until(ns_to_ticks(t));
}

struct swa_event {
	dispatch_semaphore_t sem;
};

struct swa_event *swa_plat_event_new(void)
{
	struct swa_event *e = calloc(1, sizeof(*e));
	if (e && !(e->sem = dispatch_semaphore_create(0))) {
		free(e);
		e = NULL;
	}
	return e;
}

void swa_plat_event_signal(struct swa_event *e)
{
	if (e)
		dispatch_semaphore_signal(e->sem);
}

int swa_plat_event_wait(struct swa_event *e, uint64_t timeout_ns)
{
	if (!e)
		return -EINVAL;
	dispatch_time_t when = dispatch_time(DISPATCH_TIME_NOW, (int64_t)timeout_ns);
	return dispatch_semaphore_wait(e->sem, when) == 0 ? 0 : -ETIMEDOUT;
}

int swa_plat_self_wait_ns(uint64_t *ret)
{
	(void)ret;
	return -ENOTSUP; /* Darwin does not say how long a thread waited for a CPU */
}

bool swa_plat_traced(void)
{
	int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()};
	uint8_t info[1024];
	size_t len = sizeof(info);
	memset(info, 0, sizeof(info));
	if (sysctl(mib, 4, info, &len, NULL, 0) < 0 || len < KINFO_PROC_FLAG_OFF + 4)
		return false;
	int flag;
	memcpy(&flag, info + KINFO_PROC_FLAG_OFF, sizeof(flag));
	return (flag & P_TRACED) != 0;
}

bool swa_plat_is_main_thread(void)
{
	return pthread_main_np() == 1;
}

void swa_plat_thread_self(struct swa_thread *ret)
{
	memset(ret, 0, sizeof(*ret));
	mach_port_t port = mach_thread_self(); /* a right kept for the thread's life */
	ret->handle = port;
	ret->id = swa_darwin_thread_id(port);
	pthread_t self = pthread_self();
	uint64_t top = (uint64_t)(uintptr_t)pthread_get_stackaddr_np(self);
	ret->stack_hi = top;
	ret->stack_lo = top - pthread_get_stacksize_np(self);
}

void swa_plat_name_self(const char *name)
{
	pthread_setname_np(name);
}

void swa_plat_raise_priority(void)
{
	swa_darwin_self_port = mach_thread_self();
	pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0);
}

void swa_plat_keep_off_cpu(int cpu)
{
	(void)cpu; /* Mach has no processor affinity to set */
}

int swa_plat_main_cpu(void)
{
	return -1;
}

void swa_plat_learn_main_cpu(void)
{
}

int swa_plat_read(uint64_t addr, void *dst, size_t len)
{
	vm_size_t got = 0;
	kern_return_t kr =
	    vm_read_overwrite(mach_task_self(), (vm_address_t)addr, len, (vm_address_t)dst, &got);
	return kr == KERN_SUCCESS && got == len ? 0 : -EFAULT;
}

int swa_plat_prepare_capture(void)
{
	return 0; /* stack bounds come with the thread list */
}

int swa_plat_capture(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns)
{
	(void)timeout_ns; /* thread_suspend needs no cooperation: nothing to wait for */
	if (swa_darwin_translated())
		return -ENOTSUP;
	int r = swa_darwin_capture(t, cap);
	cap->held_ns = ticks_to_ns(cap->held_ns);
	return r;
}

static int cloexec_nosigpipe(int fd, bool socket)
{
	int one = 1;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    (socket && setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one)) < 0)) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int swa_plat_socket(int domain, int type)
{
	int fd = socket(domain, type, 0);
	return fd < 0 ? -errno : cloexec_nosigpipe(fd, true);
}

int swa_plat_accept(int listen_fd)
{
	int fd = accept(listen_fd, NULL, NULL);
	return fd < 0 ? -errno : cloexec_nosigpipe(fd, true);
}

int swa_plat_pipe(int fds[2])
{
	if (pipe(fds) < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		if (cloexec_nosigpipe(fds[i], false) < 0) {
			close(fds[1 - i]);
			return -EIO;
		}
	}
	return 0;
}

long swa_plat_send(int fd, const void *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_DONTWAIT);
	return n < 0 ? -errno : n;
}

bool swa_darwin_translated(void)
{
	if (translated < 0) {
		int v = 0;
		size_t len = sizeof(v);
		translated = sysctlbyname("sysctl.proc_translated", &v, &len, NULL, 0) == 0 && v;
	}
	return translated == 1;
}

char **swa_plat_environ(void)
{
	return *_NSGetEnviron();
}

const char *swa_plat_preload_variable(void)
{
	return "DYLD_INSERT_LIBRARIES";
}

bool swa_plat_debuggable(void)
{
	uint32_t flags = 0;
	if (csops(getpid(), CS_OPS_STATUS, &flags, sizeof(flags)) < 0)
		return false;
	return (flags & (CS_GET_TASK_ALLOW | CS_DEBUGGED)) != 0;
}

uint32_t swa_plat_max_start_wait_ms(void)
{
#if TARGET_OS_IPHONE && !TARGET_OS_SIMULATOR
	return 0; /* the watchdog kills an app whose launch takes too long */
#else
	return 60000;
#endif
}

const char *swa_plat_agent_path(void)
{
	/* the image whose header is ours, from dyld's list (not dladdr, which we may not import) */
	extern const struct mach_header __dso_handle;
	for (uint32_t i = 0, n = _dyld_image_count(); i < n; i++)
		if (_dyld_get_image_header(i) == &__dso_handle)
			return _dyld_get_image_name(i);
	return NULL;
}

int swa_plat_executable_path(char *buf, size_t cap)
{
	char raw[1024];
	uint32_t size = sizeof(raw);
	if (_NSGetExecutablePath(raw, &size) != 0)
		return -ENAMETOOLONG;
	char resolved[1024];
	snprintf(buf, cap, "%s", realpath(raw, resolved) ? resolved : raw);
	return 0;
}

/*
 * On iOS host and app share no secret: a connection through usbmuxd is the
 * proof.  Until this backend tells usbmuxd's connections from others on
 * the device, every loopback connection counts as one (stallwatch-agent(7)
 * says so).
 */
int swa_plat_publish_token(const char *listen_desc, char *token, size_t cap)
{
	(void)listen_desc;
	(void)token;
	(void)cap;
	return 0;
}

void swa_plat_unpublish_token(void)
{
}

bool swa_plat_connection_proves(int fd)
{
	(void)fd;
	return true;
}

/* Darwin has no seccomp: the agent is never passive there. */
const char *swa_plat_passive_reason(void)
{
	return NULL;
}

const char *swa_plat_os_version(void)
{
	return os_version;
}

const char *swa_plat_device_model(void)
{
	return device_model;
}

const char *swa_plat_process_name(void)
{
	return process_name;
}

uint32_t swa_plat_platform(void)
{
#if TARGET_OS_SIMULATOR
	return SW_PLATFORM_IOS_SIMULATOR;
#elif TARGET_OS_IPHONE
	return SW_PLATFORM_IOS;
#else
	return SW_PLATFORM_MACOS;
#endif
}

static void sysctl_string(const char *name, char *buf, size_t cap)
{
	size_t len = cap - 1;
	if (sysctlbyname(name, buf, &len, NULL, 0) < 0)
		len = 0;
	buf[len < cap ? len : cap - 1] = '\0';
}

void swa_plat_atfork_child(void)
{
	/* nothing swa_plat_init() opened is a descriptor */
}

int swa_plat_init(void)
{
	kern_return_t kr = mach_timebase_info(&timebase);
	if (kr != KERN_SUCCESS || !timebase.numer || !timebase.denom)
		return -EIO;
	char version[32];
	sysctl_string("kern.osproductversion", version, sizeof(version));
#if TARGET_OS_IPHONE
	snprintf(os_version, sizeof(os_version), "iOS %s", version);
#else
	snprintf(os_version, sizeof(os_version), "macOS %s", version);
#endif
	sysctl_string("hw.machine", device_model, sizeof(device_model));
	snprintf(process_name, sizeof(process_name), "%s", getprogname());
	swa_darwin_read_bundle();
	swa_darwin_images_start();
	return 0;
}
