/*
 * Which waits of the main thread are its loop waiting.  A blocking call
 * inside a callback (subprocess.run waiting on its pipes, a recv with a
 * timeout, Node's execSync running a second libuv loop) also ends in poll
 * or epoll_wait, and must stay part of the busy iteration; a nested loop
 * that keeps serving the same events (g_main_loop_run on the default
 * context, a nested uv_run of the same loop) is idle while it waits.
 *
 * A wait is named by a key: its call site (the return address into the
 * caller of poll/epoll_wait/select) mixed with its wait object (the epoll
 * instance; poll and select sets are named by their call site alone).  The
 * loop's key is learnt from the first waits: the first key seen LEARN_WAITS
 * times; until then every wait counts as the loop's, as before.  Afterwards
 * the hooks compare the key with swa_loop_wait_key -- one comparison -- and
 * only a match makes the loop idle.  A loop that moves for good (a second
 * asyncio.run(), a new epoll instance) is learnt again once another key
 * has been waited on RELEARN_WAITS times in a row with no wait of the
 * learnt one between; the key it replaced is kept and taken back at its
 * first wait.  stallwatch-agent(7) states the rule and its limits.
 *
 * Only the main thread runs this, from the interposed calls.
 */
#include "agent.h"

#define LEARN_WAITS   3
#define RELEARN_WAITS 16
#define CANDIDATES    4

uint64_t swa_loop_wait_key;
static uint64_t previous_key;
static struct {
	uint64_t key;
	uint32_t count;
} candidates[CANDIDATES];
static uint64_t other_key, other_iteration;
static uint32_t other_count;

static bool learn(uint64_t key)
{
	size_t fewest = 0;
	for (size_t i = 0; i < CANDIDATES; i++) {
		if (candidates[i].key == key) {
			if (++candidates[i].count >= LEARN_WAITS)
				swa_loop_wait_key = key;
			return true;
		}
		if (candidates[i].count < candidates[fewest].count)
			fewest = i;
	}
	candidates[fewest].key = key;
	candidates[fewest].count = 1;
	return true;
}

bool swa_loop_wait_is_own(uint64_t key)
{
	if (!swa_loop_wait_key)
		return learn(key);
	if (key == previous_key && previous_key) {
		previous_key = swa_loop_wait_key;
		swa_loop_wait_key = key;
		other_count = 0;
		return true;
	}
	/* a wait of the learnt key in between began a new iteration */
	uint64_t iteration = atomic_load_explicit(&swa_loop_busy_since, memory_order_relaxed);
	if (key != other_key || iteration != other_iteration) {
		other_key = key;
		other_iteration = iteration;
		other_count = 0;
	}
	if (++other_count < RELEARN_WAITS)
		return false;
	previous_key = swa_loop_wait_key;
	swa_loop_wait_key = key;
	other_count = 0;
	return true;
}
