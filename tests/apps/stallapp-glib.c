/*
 * The GLib variant of stallapp: the same steps (steps.c), each run from a
 * GLib timeout callback inside g_main_loop_run(), so the stacks the agent
 * reports must go through GLib's own frames -- which Debian builds without
 * frame pointers, so only call-frame information gets through them.
 *
 * One step of its own: nested:MS runs a nested g_main_loop_run() on the
 * default context for MS (a modal dialog's loop), serving a 10 ms timer;
 * that loop waits, so it is no stall.
 */
#include <glib.h>
#include <stdio.h>
#include <unistd.h>

#include "steps.h"

struct script {
	char **steps;
	int n, next;
	GMainLoop *loop;
};

static gboolean step_cb(gpointer data);

static void schedule(struct script *s, int ms)
{
	g_timeout_add((guint)ms, step_cb, s);
}

static gboolean tick_cb(gpointer data)
{
	(*(int *)data)++;
	return G_SOURCE_CONTINUE;
}

static gboolean quit_cb(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static void nested(int ms)
{
	int ticks = 0;
	GMainLoop *loop = g_main_loop_new(NULL, FALSE);
	guint tick = g_timeout_add(10, tick_cb, &ticks);
	g_timeout_add((guint)ms, quit_cb, loop);
	printf("nested begin\n");
	g_main_loop_run(loop);
	g_source_remove(tick);
	g_main_loop_unref(loop);
	printf("nested end ticks=%d\n", ticks);
}

static gboolean step_cb(gpointer data)
{
	struct script *s = data;
	if (s->next == s->n) {
		printf("done\n");
		g_main_loop_quit(s->loop);
		return G_SOURCE_REMOVE;
	}
	const char *step = s->steps[s->next++];
	int ms;
	if (sscanf(step, "idle:%d", &ms) == 1) {
		schedule(s, ms);
		return G_SOURCE_REMOVE;
	}
	if (sscanf(step, "nested:%d", &ms) == 1) {
		nested(ms);
		schedule(s, step_gap_ms);
		return G_SOURCE_REMOVE;
	}
	if (run_step(step) == -1) {
		fprintf(stderr, "stallapp-glib: unknown step '%s'\n", step);
		g_main_loop_quit(s->loop);
		return G_SOURCE_REMOVE;
	}
	schedule(s, step_gap_ms);
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	struct script s = {.steps = argv + 1, .n = argc - 1, .loop = g_main_loop_new(NULL, FALSE)};
	schedule(&s, step_gap_ms);
	g_main_loop_run(s.loop);
	g_main_loop_unref(s.loop);
	return 0;
}
