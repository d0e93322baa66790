/*
 * Which detector watches the main loop on Linux.  By default the
 * interposed waits (interpose.c).  STALLWATCH_DETECTOR=runloop uses the
 * portable run-loop detector, the one the Darwin agent uses, on Core
 * Foundation as the Swift toolchain's libFoundation.so exports it
 * (CFRunLoopGetMain, CFRunLoopObserverCreate, CFRunLoopAddObserver,
 * kCFRunLoopCommonModes); STALLWATCH_DETECTOR=ping posts to libdispatch's
 * main queue.  Both are found with dlsym in a process that has them loaded,
 * and only once the main thread has waited in its loop: the agent's
 * constructor may run before Foundation's, and Core Foundation must not be
 * called before it is initialised.  The watchdog does that work on its
 * tick; without Foundation the waits report after all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "../agent.h"
#include "../detect.h"
#include "linux.h"

static bool pending; /* a detector waits for the main loop's first wait */

static void tick(void);

int swa_plat_hooks_start(void)
{
	uint32_t d = swa_cfg.detector;
	pending = d == SWA_DETECT_RUNLOOP || d == SWA_DETECT_PING;
	if (pending)
		swa_plat_hooks_tick = tick;
	return swa_linux_waits_start(pending);
}

void swa_plat_hooks_stop(void)
{
	swa_runloop_stop();
	swa_linux_waits_stop();
}

static int start_runloop(void)
{
	struct swa_cf cf;
	memset(&cf, 0, sizeof(cf));
	*(void **)&cf.get_main = dlsym(RTLD_DEFAULT, "CFRunLoopGetMain");
	*(void **)&cf.observer_create = dlsym(RTLD_DEFAULT, "CFRunLoopObserverCreate");
	*(void **)&cf.add_observer = dlsym(RTLD_DEFAULT, "CFRunLoopAddObserver");
	*(void **)&cf.invalidate = dlsym(RTLD_DEFAULT, "CFRunLoopObserverInvalidate");
	const void *const *modes = dlsym(RTLD_DEFAULT, "kCFRunLoopCommonModes");
	cf.common_modes = modes ? *modes : NULL;
	return swa_runloop_start(&cf);
}

static void (*dispatch_async_f_)(void *queue, void *ctx, void (*fn)(void *));
static void *main_queue;

static void post_main(void (*fn)(void *), void *ctx)
{
	dispatch_async_f_(main_queue, ctx, fn);
}

static int start_ping(void)
{
	*(void **)&dispatch_async_f_ = dlsym(RTLD_DEFAULT, "dispatch_async_f");
	main_queue = dlsym(RTLD_DEFAULT, "_dispatch_main_q");
	if (!dispatch_async_f_ || !main_queue)
		return -ENOSYS;
	swa_ping_start(post_main);
	return 0;
}

static void tick(void)
{
	if (!pending || !atomic_load_explicit(&swa_linux_main_waited, memory_order_relaxed))
		return;
	pending = false;
	bool ping = swa_cfg.detector == SWA_DETECT_PING;
	int r = ping ? start_ping() : start_runloop();
	if (r < 0) {
		swa_log("cannot use the %s detector (%s): watching the waits instead",
			ping ? "ping" : "runloop",
			r == -ENOSYS ? "no Foundation or libdispatch in the process"
				     : strerror(-r));
		swa_linux_waits_report();
		return;
	}
	swa_log("watching the main loop with the %s detector", ping ? "ping" : "runloop");
}
