/*
 * What the parts of the agent's portable core share: configuration, the
 * main loop's activity state, the image list, the record ring and the two
 * threads (watchdog, streamer).  Internal: every symbol is hidden and
 * prefixed swa_.
 */
#ifndef SWA_AGENT_H
#define SWA_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "platform.h"
#include "ring.h"

#define SWA_DEFAULT_THRESHOLD_MS 250
#define SWA_DEFAULT_INTERVAL_US  10000
#define SWA_MIN_INTERVAL_US      1000
#define SWA_DEFAULT_MAX_DEPTH    512
#define SWA_MAX_DEPTH            4096
#define SWA_DEFAULT_RING_KB      1024

struct swa_config {
	/* changed by the streamer when a client configures; read by the watchdog */
	_Atomic uint32_t threshold_ms;
	_Atomic uint32_t interval_us;
	_Atomic uint32_t max_depth;
	_Atomic bool all_threads;
	/* fixed at start */
	char listen[256];
	char bundle_id[256];
	char bundle_version[64];
	char token[256];
	uint32_t wait_ms;  /* wait this long at start for a client (run) */
	uint32_t detector; /* swa_detector (detect.h) */
	bool no_signals;   /* STALLWATCH_SIGNALS=never: sample only threads waiting in the kernel */
	bool connection_proves; /* STALLWATCH_PROOF=connection: no token asked (simulators) */
	size_t ring_bytes;
	int log_fd; /* -1: silent */
};

extern struct swa_config swa_cfg;

/* Reads STALLWATCH_* into swa_cfg; 0 or -errno (with a log line) when unusable. */
int swa_config_load(void);
/*
 * What an exec of the process the agent runs in hands the new image, so
 * that the agent goes on there (the same process: a wrapper script's
 * shell, env(1) or a version manager's shim that execs the real program):
 * the preload entry naming the agent ("LD_PRELOAD=/path"), STALLWATCH_PID
 * naming this process, and the agent's other variables as it found them.
 * False when the agent is inactive here (a child of fork or vfork included).
 */
struct swa_exec_vars {
	const char *preload;
	const char *pid;
	char *const *vars;
	size_t nvars;
};
bool swa_config_exec_vars(struct swa_exec_vars *ret);
/* Parses "127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT" or "unix:PATH" (listen.c). */
int swa_listen_open(const char *spec, int *ret_fd, char *desc, size_t desc_len);

void swa_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A descriptor the agent opened, with what it was then (descriptor.c):
 * every use goes through swa_fd_get(), which forgets a number the app
 * closed or reused and returns -1 for it.
 */
struct swa_fd {
	_Atomic int fd; /* -1: none */
	_Atomic uint64_t dev, ino;
	_Atomic uint32_t type;
};
#define SWA_FD_NONE                                                                                \
	{                                                                                          \
		.fd = -1                                                                           \
	}
/* Remembers fd as ours; returns it, or -1 (fd is then left alone). */
int swa_fd_adopt(struct swa_fd *d, int fd);
/* The descriptor while it is still the agent's, else -1 (and forgotten). */
int swa_fd_get(struct swa_fd *d);
/* Whether it is still the agent's, without forgetting it (any thread). */
bool swa_fd_ours(const struct swa_fd *d);
/* Closes it if it is still the agent's; forgets it either way. */
void swa_fd_close(struct swa_fd *d);
/* Notes in the log that a descriptor was lost (config.c). */
void swa_log_lost(int fd);

/* ---- the main loop's activity (loop.c) ---- */

/*
 * 0 while the loop waits, else a stamp of when the iteration began: equal
 * stamps are the same iteration; swa_loop_stamp_ns() gives its monotonic ns.
 */
extern _Atomic uint64_t swa_loop_busy_since;
/* The watchdog, each tick: calibrates the cheap clock the loop stamps with. */
void swa_loop_calibrate(void);
/* A stamp in monotonic ns (on the watchdog's thread, after swa_loop_calibrate). */
uint64_t swa_loop_stamp_ns(uint64_t stamp);
/* Set by the watchdog while it watches an iteration: the loop then notes when it waits. */
extern _Atomic bool swa_loop_watched;
extern _Atomic uint64_t swa_loop_waited_at;
/* What the iteration runs in (a run-loop mode, "main loop"): a static string. */
extern _Atomic(const char *) swa_loop_context;
extern struct swa_thread swa_main_thread;
extern bool swa_active;

/*
 * Whether the main thread is known: the constructor learns it when it runs
 * there, else the first loop hook that runs on it (a dlopen() from another
 * thread must not make that thread "main").  Nothing is sampled before.
 */
extern _Atomic bool swa_main_known;
/*
 * The app went to the background (true) or came back: the watchdog ends a
 * stall in progress and watches nothing while the app is not in front.
 */
void swa_loop_set_background(bool background);
extern _Atomic bool swa_loop_background;

/* Learns the main thread when the caller is it; true when known. */
bool swa_loop_learn_main(void);
/* Whether the caller is the main thread, once known; a few ns. */
bool swa_loop_on_main_thread(void);

#define SWA_LOOP_DEFAULT_CONTEXT "main loop"

/*
 * The two hooks are inline: an interposed wait pays their loads and stores,
 * not two calls.  A stamp from the cycle counter carries SWA_STAMP_TICKS;
 * swa_loop_stamp_ticks says the watchdog has calibrated the counter.
 */
#define SWA_STAMP_TICKS (1ull << 63)
extern _Atomic bool swa_loop_stamp_ticks;
/* The rare half of swa_loop_before_wait(): a watched iteration ends. */
void swa_loop_end_watched(void);

static inline uint64_t swa_loop_read_ticks(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0; /* never read: swa_loop_stamp_ticks stays false */
#endif
}

/* The loop is about to wait: idle from now on. */
static inline void swa_loop_before_wait(void)
{
	if (__builtin_expect(atomic_load_explicit(&swa_loop_watched, memory_order_relaxed), 0))
		swa_loop_end_watched();
	else
		atomic_store_explicit(&swa_loop_busy_since, 0, memory_order_relaxed);
}

/* The loop got work: an iteration begins now, in context (a string kept for good). */
static inline void swa_loop_after_wait(const char *context)
{
	if (atomic_load_explicit(&swa_loop_context, memory_order_relaxed) != context)
		atomic_store_explicit(&swa_loop_context, context, memory_order_relaxed);
	uint64_t stamp = atomic_load_explicit(&swa_loop_stamp_ticks, memory_order_relaxed)
			     ? swa_loop_read_ticks() | SWA_STAMP_TICKS
			     : swa_plat_now();
	atomic_store_explicit(&swa_loop_busy_since, stamp, memory_order_relaxed);
}
/* The loop is working, but a running iteration keeps its start (nested run loops). */
void swa_loop_busy_if_idle(const char *context);

/* ---- which waits are the loop's (loop-wait.c); main thread only ---- */

/*
 * When the main loop was first seen waiting (monotonic ns), 0 until then:
 * set by the first interposed wait, or by the watchdog when it first sees an
 * iteration begin (the explicit hooks, run-loop observers).  Sent in stats,
 * so "0 stalls" can say whether anything was watched.
 */
extern _Atomic uint64_t swa_loop_first_wait;
void swa_loop_note_first_wait(uint64_t t);

/* The learnt key of the loop's own wait, 0 while still learning. */
extern uint64_t swa_loop_wait_key;

/* What a wait whose key is not swa_loop_wait_key is to the loop. */
enum swa_wait {
	SWA_WAIT_LOOP,   /* the loop's own wait: idle while it waits */
	SWA_WAIT_NESTED, /* the loop's, deeper in the stack: idle once it blocked */
	SWA_WAIT_INNER,  /* a call inside an iteration: busy */
};
/*
 * How long a wait must last to have blocked, rather than found events ready
 * or been woken by a deadline already reached: long enough for another
 * thread's wake-up on a loaded machine (Foundation pumps its run loop that
 * way), short beside a nested loop's timers.
 */
#define SWA_WAIT_BLOCKED_MS 5
#define SWA_WAIT_BLOCKED_NS (SWA_WAIT_BLOCKED_MS * 1000000ull)
/*
 * The slow path: sp is the stack address the wait was called from, site
 * the return address into its caller.
 */
enum swa_wait swa_loop_wait_kind(uint64_t key, uint64_t sp, uint64_t site);
/*
 * Set by the platform: the top of the frame of the function that called a
 * wait at site (its canonical frame address), 0 if unknown.  Slow path only.
 */
extern uint64_t (*swa_loop_caller_top)(uint64_t site);
/*
 * Set by agent.c: called on the main thread as it ends without ending the
 * process (pthread_exit(), a cancellation; returning from main() calls
 * exit() instead), from the destructor of a thread-specific value the main
 * thread gets when it is learnt.
 */
extern void (*swa_loop_main_ended)(void);
/*
 * The call site of the wait that made the loop learnt, while its frame's top
 * is still to find, else 0: unwinding takes tens of microseconds the first
 * time, so the hook calls swa_loop_find_top() once the loop is idle, from
 * the same frame (the wait's caller is still its caller), and the time is
 * no part of the stall that may have just ended.
 */
extern uint64_t swa_loop_top_pending;
void swa_loop_find_top(void);
/*
 * The call site of the wait whose hook unwinds the main thread to place it
 * (swa_loop_caller_top, from the slow path), else 0.  A sample taken
 * meanwhile ends at the hook (watchdog.c): the app is at its wait, the rest
 * is the agent's.
 */
extern _Atomic uint64_t swa_loop_hook_site;
/* After an SWA_WAIT_INNER wait that began at t0 (swa_plat_now()) returned. */
void swa_loop_inner_waited(uint64_t key, uint64_t sp, uint64_t t0);

static inline uint64_t swa_loop_wait_sp_mix(uint64_t sp)
{
	return sp * 0xff51afd7ed558ccdull;
}

/*
 * A wait's key: its call site mixed with its wait object (0 when it has
 * none) and the stack address it was called from.
 */
static inline uint64_t swa_loop_wait_key_of(const void *site, uint64_t object, uint64_t sp)
{
	return (uint64_t)(uintptr_t)site ^ (object * 0x9e3779b97f4a7c15ull) ^
	       swa_loop_wait_sp_mix(sp);
}

/* ---- images (images.c) ---- */

/* Re-reads the image list when the backend says it changed; pushes records. */
int swa_images_refresh(void);
/* Whether pc lies in the dynamic loader (whose lock a refresh would take). */
bool swa_images_loader_at(uint64_t pc);
/* Pushes an IMAGE_ADDED record for every image into the caller (streamer, on connect). */
typedef void (*swa_image_fn)(const void *rec, size_t len, void *ctx);
void swa_images_each(swa_image_fn fn, void *ctx);

/* ---- the ring and its records ---- */

extern struct swa_ring swa_ring;
extern _Atomic uint64_t swa_dropped; /* records refused by the ring */
extern _Atomic uint64_t swa_samples_total;
extern _Atomic uint64_t swa_stalls_total;
/* A stall is being sampled: its iteration passed the threshold and has not ended. */
extern _Atomic bool swa_stall_open;

struct swa_rec_sample {
	uint64_t stall_id, time, thread_id;
	uint32_t flags, depth;
	uint64_t elided; /* SW_SAMPLE_ELIDED: frames left out before frames[elided_at] */
	uint32_t elided_at;
	char name[SWA_THREAD_NAME_MAX];
	uint64_t frames[];
};

struct swa_rec_begin {
	uint64_t stall_id, thread_id, start_time, detect_time;
	char context[64];
};

struct swa_rec_end {
	uint64_t stall_id, end_time, duration_ns, cpu_ns, samples, dropped;
	uint64_t late, late_ns; /* main-thread samples taken over an interval late, lateness */
};

struct swa_rec_image {
	uint32_t index, id_kind, id_len;
	uint64_t load_address, text_vmaddr, text_size;
	uint8_t id[32];
	uint32_t nmore_text;
	struct swa_text_range more_text[SWA_MAX_MORE_TEXT];
	char path[]; /* NUL-terminated */
};

struct swa_rec_removed {
	uint32_t index;
};

struct swa_rec_hint {
	uint32_t image_index;
	uint64_t offset, size; /* from the image's load address */
	char name[];           /* NUL-terminated */
};

/* Symbol hints for frames in memory-only images (hints.c; watchdog thread). */
void swa_hints_note(const uint64_t *frames, uint32_t depth);
/* Pushes the hints held back while the ring was held. */
void swa_hints_flush(void);

/* Wakes the streamer after records were committed. */
void swa_streamer_wake(void);

/* ---- threads ---- */

int swa_watchdog_start(void);
int swa_streamer_start(void);
/*
 * Ends the agent (agent.c): the hooks go inert, a stall in progress ends,
 * the streamer sends what it holds for at most timeout_ms and says goodbye
 * with why, and the agent's threads end.  At exit, and when the main thread
 * ends on its own (pthread_exit(), a cancellation): the process must end
 * with the app's last thread, which the agent's would outlive.  The first
 * call does it; later ones return at once.
 */
void swa_agent_end(uint32_t timeout_ms, const char *why);
/* The watchdog's and the streamer's parts of it. */
void swa_watchdog_stop(void);
void swa_streamer_stop(uint32_t timeout_ms, const char *why);
/* Whether a client is connected and proven: what the agent samples has a reader. */
bool swa_streamer_has_client(void);
/*
 * Before an exec: lets the streamer send what the ring holds to the client,
 * waiting at most timeout_ms, so the new image's client has it all.
 */
void swa_streamer_drain(uint32_t timeout_ms);
/* Blocks until a client said hello or timeout_ms passed. */
void swa_streamer_wait_client(uint32_t timeout_ms);
extern uint64_t swa_clock_base;
/* In a forked child: closes the sockets the child must not keep. */
void swa_streamer_atfork_child(void);

#endif
