/*
 * What an operating-system backend of the agent provides to the portable
 * core (the .c files at the top of injector/).  The Linux backend lives in injector/linux/, the
 * Darwin one will live in injector/darwin/; nothing outside those folders
 * tests for the operating system.
 *
 * The shape follows the sampling contract of DESIGN.md: swa_plat_capture()
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

/* A thread as the backend names it (a kernel tid on Linux, a mach port on Darwin). */
struct swa_thread {
	uint64_t id;     /* the id samples carry */
	uint64_t handle; /* backend's own handle */
	char name[16];
	bool agent; /* one of the agent's own threads */
};

enum swa_capture_flags {
	SWA_CAPTURE_BLOCKED = 1u << 0, /* read without a signal: in a system call */
	SWA_CAPTURE_PARTIAL = 1u << 1, /* the stack copy stops before the stack's top */
};

struct swa_capture {
	struct swa_regs regs; /* registers at the moment the thread was held */
	uint64_t stack_lo;    /* live address of copy[0] */
	uint64_t stack_hi;    /* top of the thread's stack (exclusive), 0 when unknown */
	uint8_t *copy;        /* prepared by the caller */
	size_t copy_cap;
	size_t copy_len;  /* bytes of live stack in copy */
	uint32_t flags;   /* swa_capture_flags */
	uint64_t held_ns; /* how long the thread was held (diagnostics, benchmarks) */
};

enum swa_thread_state {
	SWA_THREAD_RUNNING, /* on a CPU or runnable */
	SWA_THREAD_BLOCKED, /* waiting in the kernel */
	SWA_THREAD_STOPPED, /* stopped by a signal or a debugger */
	SWA_THREAD_GONE,
};

/* Prepares what capturing needs (signal handler, proc files); once, at start. */
int swa_plat_init(void);

/* The calling thread. */
void swa_plat_thread_self(struct swa_thread *ret);
/* Whether the calling thread is the one swa_plat_init() ran on; a few ns. */
bool swa_plat_on_main_thread(void);

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

/* How long the calling thread has waited, runnable, for a CPU (0 when unknown). */
int swa_plat_self_wait_ns(uint64_t *ret);

/* CPU time a thread has used, in ns. */
int swa_plat_thread_cpu_ns(const struct swa_thread *t, uint64_t *ret);
int swa_plat_thread_state(const struct swa_thread *t, enum swa_thread_state *ret);
/* Every thread of the process; at most cap, returns how many. */
int swa_plat_list_threads(struct swa_thread *out, size_t cap);

/*
 * Refreshes what capturing needs to know about the address space (where the
 * stacks are); called by the watchdog before a round of captures, never
 * while a thread is held.
 */
int swa_plat_prepare_capture(void);

/*
 * Holds t, fills cap (registers and the copy of its live stack), releases
 * t.  Waits at most timeout_ns for a thread that has to cooperate.
 * Returns 0 or -errno (-ETIMEDOUT, -ESRCH when the thread is gone).
 */
int swa_plat_capture(const struct swa_thread *t, struct swa_capture *cap, uint64_t timeout_ns);

/* Reads len bytes at addr without ever faulting; -EFAULT when unreadable. */
int swa_plat_read(uint64_t addr, void *dst, size_t len);

#define SWA_MAX_MORE_TEXT 8

/*
 * The loaded images, delivered one by one to the callback; returns the
 * backend's change counter, so the core only rebuilds when it moved.
 */
struct swa_plat_image {
	uint64_t slide;       /* runtime address minus file address */
	uint64_t text_vmaddr; /* file address of the executable segment */
	uint64_t text_size;
	uint64_t unwind_info; /* runtime address of .eh_frame_hdr (0: none) */
	uint32_t id_kind;     /* sw_wire_id_kind */
	uint32_t id_len;
	uint8_t id[32];
	const char *path;
	bool loader; /* the dynamic loader itself */
	/* executable segments after the first (file address, size), same slide */
	uint32_t nmore_text;
	struct swa_text_range {
		uint64_t vmaddr, size;
	} more_text[SWA_MAX_MORE_TEXT];
};
typedef void (*swa_plat_image_fn)(const struct swa_plat_image *im, void *ctx);
uint64_t swa_plat_images_generation(void);
int swa_plat_images(swa_plat_image_fn fn, void *ctx);

/* Resolves what the loop hooks call, from the agent's start. */
void swa_plat_hooks_init(void);

/* Raises the calling thread's scheduling priority where allowed. */
void swa_plat_raise_priority(void);

/* The running program's file, resolved (for activation). */
int swa_plat_executable_path(char *buf, size_t cap);

/* Facts for the hello message. */
const char *swa_plat_os_version(void);
const char *swa_plat_process_name(void);
uint32_t swa_plat_platform(void); /* sw_wire_platform */

#endif
