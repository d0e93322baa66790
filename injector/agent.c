/*
 * The agent's life cycle: the constructor decides whether this is the
 * process the agent was started for (config.c), reads the configuration,
 * prepares everything sampling will need (signal handler, image list and
 * unwind indexes, ring, buffers) and starts the streamer and the watchdog
 * with every signal blocked, so the app's signals never land on them.  The
 * destructor ends a stall in progress and lets a connected client receive
 * the rest before the process goes; so does a main thread that ends
 * without ending the process (pthread_exit(), a cancellation), after which
 * the agent's threads end too.
 *
 * Nothing here prints unless STALLWATCH_LOG asks for it; a failure only
 * leaves the agent inactive, never the app broken.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"

bool swa_config_should_activate(void);
void swa_config_scrub_environment(const char *agent_path);

static void atfork_child(void)
{
	/* the child has none of our threads: the agent is off there */
	swa_active = false;
	atomic_store(&swa_loop_watched, false);
	swa_streamer_atfork_child();
	swa_plat_atfork_child();
}

/*
 * The main thread ended without ending the process (swa_loop_main_ended):
 * the loop is gone, and the agent with it.  The process ends with the
 * app's last thread (exit(0), in that thread), which the agent's threads,
 * counted among them, would outlive for ever; and a signal to the process,
 * left with threads that block every signal, would stay pending for ever.
 */
static void main_thread_ended(void)
{
	swa_agent_end(2000, "the main thread ended");
}

static int start_threads(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = swa_streamer_start();
	if (r == 0)
		r = swa_watchdog_start();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

__attribute__((constructor)) static void swa_init(void)
{
	if (!swa_config_should_activate())
		return;
	swa_config_load();
	swa_config_scrub_environment(swa_plat_agent_path());
	int r = swa_plat_init();
	if (r < 0) {
		swa_log("cannot prepare sampling: %s", strerror(-r));
		return;
	}
	if (!swa_cfg.bundle_id[0])
		snprintf(swa_cfg.bundle_id, sizeof(swa_cfg.bundle_id), "%s", swa_plat_bundle_id());
	if (!swa_cfg.bundle_version[0])
		snprintf(swa_cfg.bundle_version, sizeof(swa_cfg.bundle_version), "%s",
			 swa_plat_bundle_version());
	swa_loop_main_ended = main_thread_ended;
	swa_loop_learn_main();
	swa_clock_base = swa_plat_now();
	void *ring = malloc(swa_cfg.ring_bytes);
	if (!ring)
		return;
	swa_ring_init(&swa_ring, ring, swa_cfg.ring_bytes);
	swa_images_refresh();
	if (start_threads() < 0)
		return;
	pthread_atfork(NULL, NULL, atfork_child);
	swa_active = true;
	r = swa_plat_hooks_start();
	if (r < 0)
		swa_log("cannot watch the main loop: %s", strerror(-r));
	swa_log("agent %s active in pid %d (threshold %u ms, interval %u us)", SW_VERSION,
		(int)getpid(), atomic_load(&swa_cfg.threshold_ms),
		atomic_load(&swa_cfg.interval_us));
	if (swa_cfg.wait_ms) /* capped by the backend: never blocks an iOS launch */
		swa_streamer_wait_client(swa_cfg.wait_ms);
}

void swa_agent_end(uint32_t timeout_ms, const char *why)
{
	static atomic_bool ended;
	if (!swa_active || atomic_exchange(&ended, true))
		return;
	swa_plat_hooks_stop();
	swa_watchdog_stop();
	swa_active = false;
	swa_streamer_stop(timeout_ms, why);
}

__attribute__((destructor)) static void swa_fini(void)
{
	swa_agent_end(2000, "the process is exiting");
}
