/*
 * The libuv variant of stallapp: the same steps (steps.c), each run from a
 * libuv timer callback inside uv_run(), so a blocking call in a callback
 * (pollwait:MS) must be a blocked stall.
 *
 * One step of its own: nested:MS runs the same loop again from inside the
 * callback, uv_run(UV_RUN_ONCE) until a timer says MS have passed, serving
 * a 10 ms timer meanwhile (what a modal prompt built on the app's loop
 * does); that loop waits, so it is no stall.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "steps.h"

struct script {
	char **steps;
	int n, next;
	uv_timer_t timer;
};

static void tick_cb(uv_timer_t *t)
{
	(*(int *)t->data)++;
}

static void done_cb(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nested(uv_loop_t *loop, int ms)
{
	int ticks = 0, done = 0;
	uv_timer_t tick, limit;
	uv_timer_init(loop, &tick);
	uv_timer_init(loop, &limit);
	tick.data = &ticks;
	limit.data = &done;
	uv_timer_start(&tick, tick_cb, 10, 10);
	uv_timer_start(&limit, done_cb, (uint64_t)ms, 0);
	printf("step nested begin %lld\n", now_ns());
	while (!done)
		uv_run(loop, UV_RUN_ONCE);
	uv_timer_stop(&tick);
	uv_close((uv_handle_t *)&tick, NULL);
	uv_close((uv_handle_t *)&limit, NULL);
	uv_run(loop, UV_RUN_NOWAIT); /* the close callbacks, before the handles go */
	printf("step nested end %lld ticks=%d\n", now_ns(), ticks);
}

static void step_cb(uv_timer_t *t)
{
	struct script *s = t->data;
	if (s->next == s->n) {
		printf("done\n");
		uv_close((uv_handle_t *)t, NULL);
		return;
	}
	const char *step = s->steps[s->next++];
	int ms, gap = step_gap_ms;
	if (sscanf(step, "idle:%d", &ms) == 1) {
		gap = ms;
	} else if (sscanf(step, "nested:%d", &ms) == 1) {
		nested(t->loop, ms);
	} else if (run_step(step) == -1) {
		fprintf(stderr, "stallapp-uv: unknown step '%s'\n", step);
		uv_close((uv_handle_t *)t, NULL);
		return;
	}
	uv_timer_start(t, step_cb, (uint64_t)gap, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	uv_loop_t *loop = uv_default_loop();
	struct script s = {.steps = argv + 1, .n = argc - 1};
	uv_timer_init(loop, &s.timer);
	s.timer.data = &s;
	uv_timer_start(&s.timer, step_cb, (uint64_t)step_gap_ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return 0;
}
