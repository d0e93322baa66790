/*
 * What the files of the Linux backend share.
 */
#ifndef SWA_LINUX_H
#define SWA_LINUX_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A function the agent puts in front of the C library's, for the app to call. */
#define EXPORT __attribute__((visibility("default")))

/*
 * The C library's own function that an EXPORT of the same name stands in
 * front of: REAL(poll, int, (...)) defines get_poll(), which looks it up
 * once with dlsym(RTLD_NEXT).
 */
#define REAL(name, ret, args)                                                                      \
	static ret(*real_##name) args;                                                             \
	static ret(*get_##name(void)) args                                                         \
	{                                                                                          \
		if (!real_##name)                                                                  \
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
		return real_##name;                                                                \
	}

pid_t swa_linux_gettid(void);
int swa_linux_read_file(const char *path, char *buf, size_t cap);
int swa_linux_task_path(char *buf, size_t cap, uint64_t tid, const char *file);
int swa_linux_task_state(uint64_t tid, char *ret_state);
/* The same, and the CPU the task last ran on (-1 if unknown). */
int swa_linux_task_state_cpu(uint64_t tid, char *ret_state, int *ret_cpu);
/* process_vm_readv() is missing: we run under an emulator such as qemu-user. */
bool swa_linux_emulated(void);
int swa_linux_capture_init(bool no_signals);
uint64_t swa_linux_now_ns(void);
struct sigaction;
/* The app's sigaction() on our signal: 1 when handled, 0 to pass it on (capture.c). */
int swa_linux_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Around exec: no signal of ours sent, in flight or pending; false when not fenced. */
bool swa_linux_fence_begin(void);
void swa_linux_fence_end(void);
/* Whether our signal reached the calling thread since swa_linux_signal_mark(). */
uint64_t swa_linux_signal_mark(void);
bool swa_linux_signal_hit(uint64_t mark);
/* Stops every capture for good (a seccomp filter is coming); why goes into the hello. */
void swa_linux_go_passive(const char *why);
/* Resolves the functions guard.c interposes. */
void swa_linux_guard_init(void);
long swa_linux_seccomp_filters(void);
bool swa_linux_seccomp_added(void);
/* The real-time signal used to capture running threads. */
int swa_linux_capture_signal(void);
/*
 * Thread tid's alternate signal stack is too small for the capture
 * handler (it is never signalled), or no longer is (capture.c).
 */
void swa_linux_note_altstack(pid_t tid, bool small);
/* The size an alternate signal stack needs for the capture handler: the kernel's frame and its own.
 */
size_t swa_linux_altstack_needed(void);

/* The interposed waits (interpose.c): reporting, or noting the main loop runs. */
int swa_linux_waits_start(bool only_trigger);
void swa_linux_waits_stop(void);
void swa_linux_waits_report(void);
extern _Atomic bool swa_linux_main_waited;

/* For the benchmark: when the last capture handler started and ended. */
void swa_linux_last_handler_times(uint64_t *entered, uint64_t *left);

#endif
