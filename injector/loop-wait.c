/*
 * Which waits of the main thread are its loop waiting.  A blocking call
 * inside a callback (subprocess.run waiting on its pipes, a recv with a
 * timeout, Node's execSync running a second libuv loop) also ends in poll
 * or epoll_wait, and must stay part of the busy iteration; a nested loop
 * that keeps serving the same events (g_main_loop_run on the default
 * context, a nested QEventLoop::exec or uv_run of the same loop) is idle
 * while it waits.
 *
 * A wait is named by its place, the base -- its call site (the return
 * address into the caller of poll/epoll_wait/select) mixed with its wait
 * object (the epoll instance; poll and select sets are named by their call
 * site alone) -- and by the stack address it was called from; the key mixes
 * all three.  The loop's place is learnt from the first waits: the first
 * base seen LEARN_WAITS times, at the shallowest stack address it waited
 * at; until then every wait counts as the loop's, as before.  Afterwards
 * the hooks compare the key with swa_loop_wait_key -- one comparison -- and
 * a match makes the loop idle.  Any other wait is:
 *
 *  - the loop's, when it waits no deeper in the stack than the loop did:
 *    the loop's wait moved (a second call site of the same idle code, a
 *    second asyncio.run(), a new epoll instance) and its key is learnt;
 *  - a nested run of the loop, when it has the loop's base but waits deeper
 *    (a modal g_main_loop_run, a run loop pumped from a callback): idle once
 *    it has blocked SWA_WAIT_BLOCKED_NS, busy until then (interpose.c splits the
 *    wait), so a pump whose waits return at once stays one stall;
 *  - else a call made from inside an iteration, which keeps it busy --
 *    unless RELEARN_WAITS of them with one key block within one iteration:
 *    then the loop moved deeper, and it is learnt.  Only waits that blocked
 *    (returned after SWA_WAIT_BLOCKED_NS or more) count, so a callback that
 *    reads a child's output through many polls that find data ready is not
 *    taken for a loop.
 *
 * stallwatch-agent(7) states the rule and its limits.  Only the main thread
 * runs this, from the interposed calls.
 */
#include "agent.h"

#define LEARN_WAITS   3
#define RELEARN_WAITS 16
#define CANDIDATES    4

uint64_t swa_loop_wait_key;
_Atomic uint64_t swa_loop_first_wait;
static uint64_t loop_sp;   /* where the loop's wait was called from (stacks grow down) */
static uint64_t loop_top;  /* the top of the frame that called it (its CFA), 0 if unknown */
static uint64_t loop_base; /* its call site and wait object */
static uint64_t inner_key, inner_top; /* the last wait found inside an iteration */
static uint64_t other_key, other_top, other_iteration;
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

uint64_t (*swa_loop_caller_top)(uint64_t site);

uint64_t swa_loop_top_pending;
static uint64_t pending_rise; /* how far the learnt wait's sp lies above this wait's */

static void set_loop(uint64_t base, uint64_t sp, uint64_t top)
{
	swa_loop_top_pending = 0;
	loop_base = base;
	loop_sp = sp;
	loop_top = top;
	inner_key = 0;
	other_count = 0;
	swa_loop_wait_key = base ^ swa_loop_wait_sp_mix(sp);
}

_Atomic uint64_t swa_loop_hook_site;

/*
 * The top of the frame that made a wait at site, sp: 0 if unknown.  While
 * the unwinder runs, the site is published: a sample taken then ends at the
 * hook.
 */
static uint64_t caller_top(uint64_t site)
{
	if (!swa_loop_caller_top)
		return 0;
	atomic_store_explicit(&swa_loop_hook_site, site, memory_order_relaxed);
	uint64_t top = swa_loop_caller_top(site);
	atomic_store_explicit(&swa_loop_hook_site, 0, memory_order_relaxed);
	return top;
}

static enum swa_wait learn(uint64_t base, uint64_t sp, uint64_t site)
{
	if (!atomic_load_explicit(&swa_loop_first_wait, memory_order_relaxed))
		swa_loop_note_first_wait(swa_plat_now());
	size_t fewest = 0;
	for (size_t i = 0; i < CANDIDATES; i++) {
		if (candidates[i].key == base) {
			if (sp > candidates[i].sp)
				candidates[i].sp = sp;
			if (++candidates[i].count >= LEARN_WAITS) {
				/*
				 * the same caller at its shallowest: its frame's top
				 * moves with it, and is found once the loop is idle
				 * (swa_loop_find_top())
				 */
				set_loop(base, candidates[i].sp, 0);
				swa_loop_top_pending = site;
				pending_rise = candidates[i].sp - sp;
			}
			return SWA_WAIT_LOOP;
		}
		if (candidates[i].count < candidates[fewest].count)
			fewest = i;
	}
	candidates[fewest].key = base;
	candidates[fewest].sp = sp;
	candidates[fewest].count = 1;
	return SWA_WAIT_LOOP;
}

void swa_loop_find_top(void)
{
	uint64_t top = caller_top(swa_loop_top_pending);
	swa_loop_top_pending = 0;
	if (top)
		loop_top = top + pending_rise;
}

enum swa_wait swa_loop_wait_kind(uint64_t key, uint64_t sp, uint64_t site)
{
	uint64_t base = key ^ swa_loop_wait_sp_mix(sp);
	if (!swa_loop_wait_key)
		return learn(base, sp, site);
	if (base == loop_base) {
		if (sp < loop_sp)
			return SWA_WAIT_NESTED;
		/* the same call, no deeper: the loop's wait moved up */
		set_loop(base, sp, loop_top ? loop_top + (sp - loop_sp) : 0);
		return SWA_WAIT_LOOP;
	}
	if (key == inner_key)
		return SWA_WAIT_INNER;
	/*
	 * Another call: deeper when the frame that made it ends below the one
	 * that waits for the loop (frames differ in size: libuv's holds 12 KiB
	 * of events, more than a callback's whole stack), else by the stack
	 * addresses the waits were called from.
	 */
	uint64_t top = caller_top(site);
	if (top && loop_top ? top < loop_top : sp < loop_sp) {
		inner_key = key;
		inner_top = top;
		return SWA_WAIT_INNER;
	}
	set_loop(base, sp, top); /* no deeper than the loop waits: the loop's wait moved */
	return SWA_WAIT_LOOP;
}

/*
 * A deeper wait that blocked, RELEARN_WAITS times with one key within one
 * iteration, is a loop that moved deeper (or a nested loop with its own wait
 * object that has become the loop): learnt, for its next wait.
 */
void swa_loop_inner_waited(uint64_t key, uint64_t sp, uint64_t t0)
{
	if (swa_plat_now() - t0 < SWA_WAIT_BLOCKED_NS)
		return; /* it found events ready: no wait at all */
	uint64_t iteration = atomic_load_explicit(&swa_loop_busy_since, memory_order_relaxed);
	if (key != other_key || iteration != other_iteration) {
		other_key = key;
		other_top = key == inner_key ? inner_top : 0;
		other_iteration = iteration;
		other_count = 0;
	}
	if (++other_count >= RELEARN_WAITS)
		set_loop(key ^ swa_loop_wait_sp_mix(sp), sp, other_top);
}
