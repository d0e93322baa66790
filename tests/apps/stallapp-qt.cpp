/*
 * The Qt variant of stallapp: the same steps (steps.c), each run from a
 * QTimer callback inside QCoreApplication::exec(), so the stacks go through
 * Qt's event dispatcher (GLib's main context by default, Qt's own poll loop
 * with QT_NO_GLIB=1).  Headless: no display is needed.
 *
 * One step of its own: nested:MS runs a nested QEventLoop::exec() for MS (a
 * modal dialog's loop), serving a 10 ms timer; that loop waits, so it is no
 * stall.
 */
#include <QAbstractEventDispatcher>
#include <QCoreApplication>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>
#include <ctime>
#include <unistd.h>

extern "C" {
#include "steps.h"
}

static long long now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nested(int ms)
{
	int ticks = 0;
	QEventLoop loop;
	QTimer tick;
	QObject::connect(&tick, &QTimer::timeout, [&ticks] { ticks++; });
	tick.start(10);
	QTimer::singleShot(ms, &loop, &QEventLoop::quit);
	std::printf("step nested begin %lld\n", now_ns());
	loop.exec();
	tick.stop();
	std::printf("step nested end %lld ticks=%d\n", now_ns(), ticks);
}

struct Script {
	char **steps;
	int n, next;
};

static void next_step(Script *s, int after_ms);

static void run_next(Script *s)
{
	if (s->next == s->n) {
		std::printf("done\n");
		QCoreApplication::quit();
		return;
	}
	const char *step = s->steps[s->next++];
	int ms, gap = step_gap_ms;
	if (std::sscanf(step, "idle:%d", &ms) == 1) {
		gap = ms;
	} else if (std::sscanf(step, "nested:%d", &ms) == 1) {
		nested(ms);
	} else if (run_step(step) == -1) {
		std::fprintf(stderr, "stallapp-qt: unknown step '%s'\n", step);
		QCoreApplication::exit(2);
		return;
	}
	next_step(s, gap);
}

static void next_step(Script *s, int after_ms)
{
	QTimer::singleShot(after_ms, [s] { run_next(s); });
}

int main(int argc, char **argv)
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	QCoreApplication app(argc, argv);
	std::printf("ready pid=%d dispatcher=%s\n", (int)getpid(),
		    QAbstractEventDispatcher::instance()->metaObject()->className());
	Script s = {argv + 1, argc - 1, 0};
	next_step(&s, step_gap_ms);
	return app.exec();
}
