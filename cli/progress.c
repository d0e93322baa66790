/*
 * Progress on standard error for long work (see progress.h): one line,
 * "stallwatch: symbolicating stall #3 (12 s)", redrawn every half second by
 * a thread once the work has taken a second, and erased when it ends or
 * before any other message.  Only on a terminal: a pipe or a file gets
 * nothing, so logs and tests stay clean.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "util/time-units.h"

#define REDRAW_MS 500

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static char text[256];
static struct timespec since;
static bool busy, shown, started, enabled, decided;
static long after_ms = 1000;

static long elapsed_ms(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(sw_timespec_ms(&now) - sw_timespec_ms(&since));
}

/* Erases the line; called with lock held. */
static void erase_locked(void)
{
	if (shown)
		fputs("\r\033[K", stderr);
	shown = false;
}

/* Draws the line; called with lock held. */
static void draw_locked(void)
{
	long ms = busy ? elapsed_ms() : 0;
	if (!busy || ms < after_ms)
		return;
	fprintf(stderr, "\r\033[Kstallwatch: %s (%ld s)", text, ms / (long)SW_MS_PER_S);
	fflush(stderr);
	shown = true;
}

static void *ticker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		sw_timespec_add_ms(&until, REDRAW_MS);
		pthread_cond_timedwait(&changed, &lock, &until);
		draw_locked();
	}
	return NULL;
}

static bool decide(void)
{
	if (decided)
		return enabled;
	decided = true;
	const char *term = getenv("TERM");
	enabled = isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
	const char *after = getenv("STALLWATCH_PROGRESS_AFTER_MS");
	if (after && *after)
		after_ms = strtol(after, NULL, 10);
	return enabled;
}

void sw_progress(const char *fmt, ...)
{
	pthread_mutex_lock(&lock);
	if (!decide()) {
		pthread_mutex_unlock(&lock);
		return;
	}
	if (!busy)
		clock_gettime(CLOCK_MONOTONIC, &since);
	busy = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!started) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&t, &attr, ticker, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	draw_locked();
	pthread_mutex_unlock(&lock);
}

void sw_progress_done(void)
{
	pthread_mutex_lock(&lock);
	busy = false;
	erase_locked();
	pthread_mutex_unlock(&lock);
}

void sw_progress_clear(void)
{
	pthread_mutex_lock(&lock);
	erase_locked();
	pthread_mutex_unlock(&lock);
}
