/*
 * What an operating-system backend of the agent provides to the portable
 * core (the .c files at the top of injector/).  The Linux backend lives in
 * injector/linux/, the Darwin one (iOS, the simulator, macOS) in
 * injector/darwin/; nothing outside those folders tests for the operating
 * system.
 *
 * The shape follows the sampling contract (HACKING.md, "The agent's
 * contracts": capture while held, unwind after release): swa_plat_capture()
 * holds one thread, copies its registers and the live part of its stack
 * into buffers the caller prepared, releases it, and returns; the core
 * unwinds the copy afterwards, with no thread held.  On Linux "holding" is
 * the thread running our signal handler (or, for a thread blocked in a system
 * call, not touching it at all); on Darwin it is thread_suspend(),
 * thread_get_state() and one vm_read_overwrite() before thread_resume().
 */
#ifndef SWA_PLATFORM_H
#define SWA_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"

/* The agent's time units (the host's are in lib/util/time-units.h). */
#define SWA_NS_PER_US 1000ull
#define SWA_NS_PER_MS 1000000ull
#define SWA_NS_PER_S  1000000000ull
/* Room for a thread's name with its NUL: Darwin's are up to 63 bytes, Linux's 15. */
#define SWA_THREAD_NAME_MAX 64

/* A thread as the backend names it (a kernel tid on Linux, a mach port on Darwin). */
struct swa_thread {
	uint64_t id;     /* the id samples carry */
	uint64_t handle; /* backend's own handle */
	char name[SWA_THREAD_NAME_MAX];
	/*
	 * The thread's stack, known before it is held (Darwin takes them from
	 * pthread_get_stackaddr_np when threads are listed, since nothing
	 * that takes a lock may run once a thread is held); 0 when the backend
	 * finds them itself while capturing (Linux: its snapshot of the maps).
	 */
	uint64_t stack_lo, stack_hi;
	bool agent; /* one of the agent's own threads */
};

enum swa_capture_flags {
	/*
	 * The thread was waiting when it was held: Linux reads it without a
	 * signal in a system call, Darwin sees a waiting run state.
	 */
	SWA_CAPTURE_BLOCKED = 1u << 0,
	SWA_CAPTURE_PARTIAL = 1u << 1, /* the stack copy stops before the stack's top */
	/* the thread is still where it was: its stack may be read live beyond the copy */
	SWA_CAPTURE_STILL = 1u << 2,
};

struct swa_capture {
	struct swa_regs regs; /* registers at the moment the thread was held */
	uint64_t stack_lo;    /* live address of copy[0] */
	uint64_t stack_hi;    /* top of the thread's stack (exclusive), 0 when unknown */
	uint8_t *copy;        /* prepared by the caller */
	size_t copy_cap;
	size_t copy_len;    /* bytes of live stack in copy */
	uint32_t flags;     /* swa_capture_flags */
	uint64_t held_ns;   /* how long the thread was held (diagnostics, benchmarks) */
	uint64_t held_at;   /* monotonic ns when it was held, 0 when not known */
	uint64_t hook_site; /* swa_loop_hook_site then, where the thread reads it (agent.h) */
	/*
	 * A thread on another stack than its own (a goroutine's) that linked
	 * home: home_len bytes of its own stack from home_lo on, in copy after
	 * the first copy_len (Linux's main thread); stack_hi is then that
	 * stack's top.  0 otherwise.
	 */
	uint64_t home_lo;
	size_t home_len;
};

enum swa_thread_state {
	SWA_THREAD_RUNNING, /* on a CPU or runnable */
	SWA_THREAD_BLOCKED, /* waiting in the kernel */
	SWA_THREAD_STOPPED, /* stopped by a signal or a debugger */
	SWA_THREAD_GONE,
};

/* Prepares what capturing needs (signal handler, proc files); once, at start. */
int swa_plat_init(void);

/* In a child of fork(), where the agent is off: lets go of what swa_plat_init() opened. */
void swa_plat_atfork_child(void);

/* The calling thread. */
void swa_plat_thread_self(struct swa_thread *ret);
/*
 * Names the calling thread (Darwin can only name the caller; a name longer
 * than the system allows is cut).  Sampled threads' names come from the
 * backend's thread list, never from a call that takes a thread-list lock.
 */
void swa_plat_name_self(const char *name);
/*
 * Whether the calling thread is the process's main thread, asked of the
 * system (Darwin: pthread_main_np; Linux: its tid is the pid).  The core
 * asks once, then compares pthread_self() with what it learned.
 */
bool swa_plat_is_main_thread(void);

/* Monotonic clock in ns that stops while the machine sleeps, and one that does not. */
uint64_t swa_plat_now(void);
uint64_t swa_plat_now_boot(void);
/* Sleeps until the monotonic time t (ns); returns early only on error. */
void swa_plat_sleep_until(uint64_t t);

/*
 * A one-shot event between the agent's threads (a semaphore on Linux, a
 * dispatch semaphore on Darwin).  Signalling is async-signal-safe.
 */
struct swa_event;
struct swa_event *swa_plat_event_new(void);
void swa_plat_event_signal(struct swa_event *e);
/* 0 once signalled, -ETIMEDOUT after timeout_ns. */
int swa_plat_event_wait(struct swa_event *e, uint64_t timeout_ns);

/*
 * How long the calling thread has waited, runnable, for a CPU; -ENOTSUP
 * where the system cannot tell (Darwin), which the watchdog must not take
 * for "no wait": a starved watchdog would look like a stopped process.
 */
int swa_plat_self_wait_ns(uint64_t *ret);
/* Whether a debugger traces the process now (where waits are unknown). */
bool swa_plat_traced(void);

/* CPU time a thread has used, in ns. */
int swa_plat_thread_cpu_ns(const struct swa_thread *t, uint64_t *ret);
int swa_plat_thread_state(const struct swa_thread *t, enum swa_thread_state *ret);
/*
 * Every thread of the process; at most cap, returns how many.  What a
 * listing holds (Darwin: a send right per thread) is given back with
 * swa_plat_release_threads() after each round, never while one is held.
 */
int swa_plat_list_threads(struct swa_thread *out, size_t cap);
void swa_plat_release_threads(struct swa_thread *threads, size_t n);

/*
 * Refreshes what capturing needs to know about the address space (where the
 * stacks are); called by the watchdog before a round of captures, never
 * while a thread is held.
 */
int swa_plat_prepare_capture(void);

/*
 * Holds t, fills cap (registers and the copy of its live stack), releases
 * t.  Waits at most timeout_ns for a thread that has to cooperate.
 * Returns 0 or -errno (-ETIMEDOUT; -ESRCH when the thread is gone, which
 * on Darwin is KERN_TERMINATED or MACH_SEND_INVALID_DEST; -ENOTSUP when
 * the backend cannot capture it, -EPERM when it must not).  The stack copy
 * is bounded by t->stack_lo/stack_hi when the backend gave them.  For a
 * thread left unsampled on purpose the error says why: -EACCES it blocks
 * the signal capturing needs, -ECANCELED it runs and the agent sends no
 * signals (STALLWATCH_SIGNALS=never), -ESHUTDOWN the agent is passive
 * (swa_plat_passive_reason()).
 */
int swa_plat_capture(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns);

/* Reads len bytes at addr without ever faulting; -EFAULT when unreadable. */
int swa_plat_read(uint64_t addr, void *dst, size_t len);

#define SWA_MAX_MORE_TEXT 8

/*
 * The loaded images, delivered one by one to the callback; returns the
 * backend's change counter, so the core only rebuilds when it moved.
 */
enum swa_unwind_kind {
	SWA_UNWIND_KIND_NONE = 0,
	SWA_UNWIND_KIND_EH_FRAME_HDR = 1, /* ELF: unwind_info is .eh_frame_hdr */
	SWA_UNWIND_KIND_MACHO = 2,        /* Mach-O: __unwind_info (compact) and/or __eh_frame */
};

struct swa_plat_image {
	uint64_t slide;       /* runtime address minus file address */
	uint64_t text_vmaddr; /* file address of the executable segment */
	uint64_t text_size;
	uint32_t unwind_kind; /* swa_unwind_kind */
	uint64_t unwind_info; /* runtime address of .eh_frame_hdr or __unwind_info (0: none) */
	uint64_t unwind_info_size;
	uint64_t eh_frame; /* Mach-O: runtime address of __eh_frame (0: none) */
	uint64_t eh_frame_size;
	uint32_t id_kind; /* sw_wire_id_kind: build id (ELF), LC_UUID (Mach-O) */
	uint32_t id_len;
	uint8_t id[32];
	const char *path;
	bool loader;      /* the dynamic loader itself */
	bool memory_only; /* no file the host could read (the vDSO): the agent sends hints */
	/* executable segments after the first (file address, size), same slide */
	uint32_t nmore_text;
	struct swa_text_range {
		uint64_t vmaddr, size;
	} more_text[SWA_MAX_MORE_TEXT];
};
typedef void (*swa_plat_image_fn)(const struct swa_plat_image *im, void *ctx);

/*
 * The symbol holding pc in a memory_only image (the vDSO on Linux, the
 * dyld shared cache on Darwin), from the image's own symbol table in
 * memory: its runtime address, size and NUL-terminated name.  Never called while a thread is held.
 * 0, -ENOENT or -ENOSYS.
 */
int swa_plat_memory_symbol(uint64_t pc, uint64_t *ret_addr, uint64_t *ret_size, char *name,
			   size_t cap);
uint64_t swa_plat_images_generation(void);
int swa_plat_images(swa_plat_image_fn fn, void *ctx);

/*
 * Starts the backend's loop hooks (resolves the interposed calls, adds
 * run-loop observers); called once swa_plat_init() succeeded, so the clock
 * they read is ready.  swa_plat_hooks_stop() makes them inert again.
 */
int swa_plat_hooks_start(void);
void swa_plat_hooks_stop(void);
/* Set by a backend's hooks: called by the watchdog every tick, on its thread. */
extern void (*swa_plat_hooks_tick)(void);

/*
 * Descriptors the agent owns: close-on-exec from birth (atomically where
 * the system allows, so a child exec'd meanwhile never inherits one) and
 * non-blocking.  Writes never raise SIGPIPE.  Each returns the descriptor
 * (or 0 for the pipe) or -errno.
 */
int swa_plat_socket(int domain, int type);
int swa_plat_accept(int listen_fd);
int swa_plat_pipe(int fds[2]);
long swa_plat_send(int fd, const void *buf, size_t len);

/*
 * Who may connect (stallwatch-agent(7)).  A client proves itself with the
 * token, or by the connection itself where the system vouches for it.
 * swa_plat_publish_token() makes a token when none was given and puts it
 * where the app's user alone can read it (Linux: a file named after the
 * listening address); swa_plat_unpublish_token() removes it at exit.
 * swa_plat_connection_proves() says whether a connection needs no token
 * (Darwin: it came through usbmuxd).
 */
int swa_plat_publish_token(const char *listen_desc, char *token, size_t cap);
void swa_plat_unpublish_token(void);
bool swa_plat_connection_proves(int fd);

/* Raises the calling thread's scheduling priority where allowed (Linux: no timer slack). */
void swa_plat_raise_priority(void);

/*
 * Keeps the watchdog (the caller) and the streamer off processor cpu, where
 * the loop runs, so that their wake-ups do not preempt it; nothing where
 * there is no other processor or threads cannot be kept off one (Darwin).
 */
void swa_plat_keep_off_cpu(int cpu);
/*
 * The processor the main thread runs on, or last ran on, -1 when unknown:
 * one load, from any thread, once swa_plat_learn_main_cpu() ran on the
 * main thread (Linux: the processor number the kernel keeps in the main
 * thread's rseq area, which glibc 2.35 and later registers for every
 * thread; unknown without it, and on Darwin).
 */
int swa_plat_main_cpu(void);
void swa_plat_learn_main_cpu(void);

/* The process's environment (a dylib on Darwin cannot name environ). */
char **swa_plat_environ(void);
/* The variable that preloads the agent: LD_PRELOAD, DYLD_INSERT_LIBRARIES. */
const char *swa_plat_preload_variable(void);
/*
 * Whether the app may be watched at all: Darwin requires the get-task-allow
 * entitlement (a Debug build), so a Release or TestFlight build that still
 * carries the agent opens nothing.  Always true on Linux.
 */
bool swa_plat_debuggable(void);
/* The longest the constructor may wait for a client (0: never, iOS launches). */
uint32_t swa_plat_max_start_wait_ms(void);

/* The agent library's own file, or NULL (to scrub it from the preload variable). */
const char *swa_plat_agent_path(void);

/* The running program's file, resolved (for activation). */
int swa_plat_executable_path(char *buf, size_t cap);

/* Why the agent samples nothing (a seccomp filter), or NULL while it samples. */
const char *swa_plat_passive_reason(void);

/* Facts for the hello message. */
const char *swa_plat_os_version(void);
const char *swa_plat_device_model(void); /* hw.machine on Darwin, "" on Linux */
const char *swa_plat_process_name(void);
/* The bundle's identifier and version (Darwin), else the process name and "". */
const char *swa_plat_bundle_id(void);
const char *swa_plat_bundle_version(void);
uint32_t swa_plat_platform(void); /* sw_wire_platform */

#endif
