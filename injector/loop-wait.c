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
 * times, with the stack depth it waits at; until then every wait counts as
 * the loop's, as before.  Afterwards the hooks compare the key with
 * swa_loop_wait_key -- one comparison -- and a match makes the loop idle.
 * Any other wait is the loop's only when it waits no deeper in the stack
 * than the loop did: the loop's wait moved (a second call site of the same
 * idle code, a second asyncio.run(), a new epoll instance) and its key is
 * learnt instead.  A wait deeper down is a call made from inside an
 * iteration -- unless it waits RELEARN_WAITS times within one iteration: then
 * the loop moved deeper, and it is learnt too.  stallwatch-agent(7) states
 * the rule and its limits.
 *
 * Only the main thread runs this, from the interposed calls.
 */
#include "agent.h"

#define LEARN_WAITS   3
#define RELEARN_WAITS 16
#define CANDIDATES    4

uint64_t swa_loop_wait_key;
_Atomic uint64_t swa_loop_first_wait;
static uint64_t loop_sp; /* where the loop's wait was called from (stacks grow down) */
static uint64_t other_key, other_iteration;
static uint32_t other_count;
static struct {
	uint64_t key, sp;
	uint32_t count;
} candidates[CANDIDATES];

void swa_loop_note_first_wait(uint64_t t)
{
	uint64_t none = 0;
	atomic_compare_exchange_strong(&swa_loop_first_wait, &none, t ? t : 1);
}

static bool learn(uint64_t key, uint64_t sp)
{
	if (!atomic_load_explicit(&swa_loop_first_wait, memory_order_relaxed))
		swa_loop_note_first_wait(swa_plat_now());
	size_t fewest = 0;
	for (size_t i = 0; i < CANDIDATES; i++) {
		if (candidates[i].key == key) {
			if (sp > candidates[i].sp)
				candidates[i].sp = sp;
			if (++candidates[i].count >= LEARN_WAITS) {
				loop_sp = candidates[i].sp;
				swa_loop_wait_key = key;
			}
			return true;
		}
		if (candidates[i].count < candidates[fewest].count)
			fewest = i;
	}
	candidates[fewest].key = key;
	candidates[fewest].sp = sp;
	candidates[fewest].count = 1;
	return true;
}

/*
 * A deeper wait repeated RELEARN_WAITS times within one iteration is a loop
 * that moved deeper (or a nested loop that has become the loop): learnt.
 */
static bool moved_deeper(uint64_t key)
{
	uint64_t iteration = atomic_load_explicit(&swa_loop_busy_since, memory_order_relaxed);
	if (key != other_key || iteration != other_iteration) {
		other_key = key;
		other_iteration = iteration;
		other_count = 0;
	}
	return ++other_count >= RELEARN_WAITS;
}

bool swa_loop_wait_is_own(uint64_t key, uint64_t sp)
{
	if (!swa_loop_wait_key)
		return learn(key, sp);
	if (sp < loop_sp && !moved_deeper(key))
		return false; /* deeper than the loop waits: inside an iteration */
	swa_loop_wait_key = key;
	loop_sp = sp;
	other_count = 0;
	return true;
}
