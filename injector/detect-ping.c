/*
 * The ping detector: every interval, when the last ping was answered, the
 * watchdog posts a function to the main queue (dispatch_async_f) and marks
 * the loop busy from that moment; the function, run by the main thread,
 * marks it idle.  A ping left unanswered past the threshold is a stall,
 * measured from the post (up to one interval late).  It sees what the
 * run-loop observers cannot, such as a long dispatch_sync to the main queue
 * or work outside any run-loop callback, at the price of waking the main
 * thread every interval; stallwatch-agent(7) weighs the two.
 */
#include "agent.h"
#include "detect.h"

static swa_post_main_fn post_main;
static _Atomic bool outstanding;

static void pong(void *ctx)
{
	(void)ctx;
	if (!swa_loop_learn_main())
		return;
	swa_loop_before_wait();
	atomic_store_explicit(&outstanding, false, memory_order_release);
}

void swa_ping_start(swa_post_main_fn post)
{
	post_main = post;
}

bool swa_ping_active(void)
{
	return post_main != NULL;
}

void swa_ping_tick(uint64_t now)
{
	(void)now;
	if (!post_main || atomic_load_explicit(&outstanding, memory_order_acquire))
		return;
	atomic_store_explicit(&outstanding, true, memory_order_relaxed);
	swa_loop_after_wait("main queue");
	post_main(pong, NULL);
}
