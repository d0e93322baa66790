/*
 * The demo app of `stallwatch demo`: a small program with a poll(2) main
 * loop, like a GUI or server, whose iterations stall in a few named
 * functions, the way real apps do: parsing a file on the main thread,
 * decoding images, waiting for the disk, waiting for another thread.  It runs for
 * about three seconds, narrating on stderr, and exits 0.  Built with frame
 * pointers and debug info so its trees show functions, files and lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

NOINLINE static uint64_t checksum_line(const char *line, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)line[i]) * 1099511628211ull;
	return h;
}

/* Busy: a "config file" parsed on the main thread. */
NOINLINE static void parse_config_file(int ms)
{
	char line[256];
	uint64_t end = now_ms() + (uint64_t)ms;
	for (unsigned n = 0; now_ms() < end; n++) {
		int len = snprintf(line, sizeof(line), "key%u = value %u # comment", n, n * 7);
		sink += checksum_line(line, (size_t)len);
	}
}

NOINLINE static double blur_pixel(int x, int y)
{
	double acc = 0;
	for (int k = 0; k < 64; k++)
		acc += sin(x * 0.01 + k) * cos(y * 0.01 - k);
	return acc;
}

NOINLINE static void decode_thumbnail(int size)
{
	for (int y = 0; y < size; y++)
		for (int x = 0; x < size; x++)
			sink += (uint64_t)(blur_pixel(x, y) * 1000);
}

/* Busy: images decoded synchronously, nested calls. */
NOINLINE static void load_thumbnails(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (now_ms() < end)
		decode_thumbnail(24);
}

/* Blocked: waiting for the disk in the kernel. */
NOINLINE static void save_document(int ms)
{
	char path[] = "/tmp/stallwatch-demo-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		if (write(fd, "demo", 4) == 4)
			fsync(fd);
		close(fd);
	}
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL); /* a slow disk */
}

/* Blocked: waiting on the main thread for a worker that never signals. */
NOINLINE static void wait_for_worker(int ms)
{
	sem_t done;
	sem_init(&done, 0, 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(&done, &until) < 0 && errno == EINTR)
		;
	sem_destroy(&done);
}

static void idle(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (now_ms() < end)
		poll(NULL, 0, 20);
}

int main(void)
{
	static const struct {
		const char *what;
		void (*fn)(int);
		int ms;
	} steps[] = {
	    {"parsing the configuration on the main thread", parse_config_file, 400},
	    {"decoding thumbnails on the main thread", load_thumbnails, 600},
	    {"saving the document synchronously", save_document, 350},
	    {"waiting for a worker thread", wait_for_worker, 300},
	    {"decoding thumbnails again", load_thumbnails, 300},
	};
	fprintf(stderr, "stallwatch-demo: a main loop that stalls %zu times\n",
		sizeof(steps) / sizeof(steps[0]));
	idle(300);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		fprintf(stderr, "stallwatch-demo: %s (%d ms)\n", steps[i].what, steps[i].ms);
		steps[i].fn(steps[i].ms);
		idle(250);
	}
	return 0;
}
