/*
 * The main-loop detectors a backend can start besides its own hooks: the
 * run-loop observers (Core Foundation, on Darwin and wherever a Foundation
 * with CFRunLoop is loaded) and the main-queue ping (libdispatch).  Both
 * are portable: they reach Core Foundation and libdispatch only through the
 * function pointers the backend resolved (directly on Darwin, with dlsym on
 * Linux), and their callbacks only store atomics.
 */
#ifndef SWA_DETECT_H
#define SWA_DETECT_H

#include <stdbool.h>
#include <stdint.h>

enum swa_detector {
	SWA_DETECT_DEFAULT = 0, /* the backend's choice */
	SWA_DETECT_WAITS,       /* Linux: the interposed poll/epoll/select */
	SWA_DETECT_RUNLOOP,     /* CFRunLoopObservers on the main run loop */
	SWA_DETECT_PING,        /* a function posted to the main queue */
};

/* Core Foundation's run-loop calls, as the backend found them (opaque pointers). */
typedef void (*swa_cf_observer_fn)(void *observer, unsigned long activity, void *info);

struct swa_cf_observer_context {
	long version;
	void *info;
	const void *(*retain)(const void *info);
	void (*release)(const void *info);
	const void *(*copy_description)(const void *info);
};

struct swa_cf {
	void *(*get_main)(void);
	void *(*observer_create)(const void *allocator, unsigned long activities,
				 unsigned char repeats, long order, swa_cf_observer_fn callout,
				 struct swa_cf_observer_context *context);
	void (*add_observer)(void *run_loop, void *observer, const void *mode);
	void (*invalidate)(void *observer); /* CFRunLoopObserverInvalidate */
	const void *common_modes;           /* kCFRunLoopCommonModes */
	const void *init_mode;              /* UIInitializationRunLoopMode, NULL where none */
};

/* Adds the observers to the main run loop; 0 or -errno. */
int swa_runloop_start(const struct swa_cf *cf);
void swa_runloop_stop(void);

/* libdispatch's asynchronous call on the main queue, as the backend found it. */
typedef void (*swa_post_main_fn)(void (*fn)(void *), void *ctx);

/* Starts the ping detector: the watchdog calls swa_ping_tick() every tick. */
void swa_ping_start(swa_post_main_fn post);
void swa_ping_tick(uint64_t now);
bool swa_ping_active(void);

#endif
