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
	char token[256];
	uint32_t wait_ms;  /* wait this long at start for a client (run) */
	uint32_t detector; /* swa_detector (detect.h) */
	size_t ring_bytes;
	int log_fd; /* -1: silent */
};

extern struct swa_config swa_cfg;

/* Reads STALLWATCH_* into swa_cfg; 0 or -errno (with a log line) when unusable. */
int swa_config_load(void);
/* Parses "127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT" or "unix:PATH" (listen.c). */
int swa_listen_open(const char *spec, int *ret_fd, char *desc, size_t desc_len);

void swa_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the main loop's activity (loop.c) ---- */

/* 0 while the loop waits, else the monotonic ns at which the iteration began. */
extern _Atomic uint64_t swa_loop_busy_since;
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

/* The loop is about to wait: idle from now on. */
void swa_loop_before_wait(void);
/* The loop got work: an iteration begins now, in context (a string kept for good). */
void swa_loop_after_wait(const char *context);
/* The loop is working, but a running iteration keeps its start (nested run loops). */
void swa_loop_busy_if_idle(const char *context);

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

struct swa_rec_sample {
	uint64_t stall_id, time, thread_id;
	uint32_t flags, depth;
	char name[SWA_THREAD_NAME_MAX];
	uint64_t frames[];
};

struct swa_rec_begin {
	uint64_t stall_id, thread_id, start_time, detect_time;
	char context[64];
};

struct swa_rec_end {
	uint64_t stall_id, end_time, duration_ns, cpu_ns, samples, dropped;
};

struct swa_rec_image {
	uint32_t index, id_kind, id_len;
	uint64_t load_address, text_vmaddr, text_size;
	uint8_t id[32];
	char path[]; /* NUL-terminated */
};

struct swa_rec_removed {
	uint32_t index;
};

struct swa_rec_hint {
	uint32_t image_index;
	uint64_t offset, size;
	char name[]; /* NUL-terminated */
};

/* ---- symbol hints (hints.c) ---- */

/* Notes the frames of a sample that fall in images marked for hints. */
void swa_hints_note(const uint64_t *frames, uint32_t depth);
/* Resolves what was noted and pushes the hints; never while the ring is held. */
void swa_hints_flush(void);

/* Wakes the streamer after records were committed. */
void swa_streamer_wake(void);

/* ---- threads ---- */

int swa_watchdog_start(void);
int swa_streamer_start(void);
/* At exit: ends a stall in progress, lets the streamer flush for at most timeout_ms. */
void swa_watchdog_stop(void);
void swa_streamer_stop(uint32_t timeout_ms);
/* Blocks until a client said hello or timeout_ms passed. */
void swa_streamer_wait_client(uint32_t timeout_ms);
extern uint64_t swa_clock_base;
/* In a forked child: closes the sockets the child must not keep. */
void swa_streamer_atfork_child(void);

#endif
