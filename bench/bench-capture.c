/*
 * Benchmark of the agent's capture on Linux: the time the handler spends
 * inside the sampled thread (measured inside, from its first to its last
 * instruction's clock read) for stacks 16, 64 and 256 frames deep, with the
 * signal's delivery latency (tgkill to handler entry) beside it as a
 * property of the machine, and the unwinding that follows on the watchdog.
 * Target: a median of at most 5 us inside the handler at 64 frames.
 *
 * The unwinding is timed per frame twice, in alternate rounds: with the
 * rows kept by program counter (a stack sampled again) and with them
 * forgotten first (swa_cfi_invalidate: every frame's CFA program parsed
 * again from .eh_frame, pages still cached).  Baseline: the unwinder that
 * read .eh_frame a byte at a time and kept no rows, 36-58 us for 67 frames
 * here (0.54-0.87 us per frame), and the capture itself (delivery and
 * handler).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include "agent.h"
#include "linux/linux.h"
#include "unwind.h"

#define ROUNDS       2000
#define OLD_FRAME_NS 540.0 /* the byte-at-a-time unwinder's best median per frame */

static _Atomic int depth_reached;
static _Atomic int quit;
static volatile unsigned long sink;

__attribute__((noinline)) static int recurse(int n)
{
	volatile char pad[24];
	pad[0] = (char)n;
	if (n <= 1) {
		atomic_store(&depth_reached, 1);
		while (!atomic_load_explicit(&quit, memory_order_relaxed))
			sink++;
		return pad[0];
	}
	return recurse(n - 1) + pad[0];
}

static void *runner(void *arg)
{
	swa_plat_thread_self(arg);
	recurse(*(int *)((struct swa_thread *)arg + 1));
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint8_t copy[256 * 1024];
static uint64_t frames[600];
static uint8_t ring_buf[1 << 16];

static void bench(int depth)
{
	struct {
		struct swa_thread t;
		int depth;
	} arg = {.depth = depth};
	atomic_store(&depth_reached, 0);
	atomic_store(&quit, 0);
	pthread_t th;
	pthread_create(&th, NULL, runner, &arg);
	while (!atomic_load(&depth_reached))
		usleep(100);
	swa_plat_prepare_capture();
	static uint64_t inside[ROUNDS], latency[ROUNDS], unwind[ROUNDS], cold[ROUNDS];
	uint32_t got_depth = 0;
	int n = 0, ncold = 0;
	for (int i = 0; i < ROUNDS; i++) {
		struct swa_capture cap = {.copy = copy, .copy_cap = sizeof(copy)};
		uint64_t sent = swa_plat_now();
		if (swa_plat_capture(&arg.t, &cap, 100000000) < 0 ||
		    (cap.flags & SWA_CAPTURE_BLOCKED))
			continue;
		uint64_t entered, left;
		swa_linux_last_handler_times(&entered, &left);
		inside[n] = left - entered;
		latency[n] = entered - sent;
		uint32_t flags;
		if (i & 1) {
			swa_cfi_invalidate();
			uint64_t u0 = swa_plat_now();
			swa_unwind(&cap, frames, 512, &flags);
			cold[ncold++] = swa_plat_now() - u0;
		}
		uint64_t u0 = swa_plat_now();
		got_depth = swa_unwind(&cap, frames, 512, &flags);
		unwind[n] = swa_plat_now() - u0;
		n++;
	}
	atomic_store(&quit, 1);
	pthread_join(th, NULL);
	qsort(inside, (size_t)n, sizeof(uint64_t), cmp);
	qsort(latency, (size_t)n, sizeof(uint64_t), cmp);
	qsort(unwind, (size_t)n, sizeof(uint64_t), cmp);
	printf("capture %3d frames (unwound %3u): inside handler median %6.2f us p90 %6.2f us | "
	       "delivery median %6.2f us p90 %6.2f us | unwind median %6.2f us\n",
	       depth, got_depth, inside[n / 2] / 1e3, inside[n * 9 / 10] / 1e3,
	       latency[n / 2] / 1e3, latency[n * 9 / 10] / 1e3, unwind[n / 2] / 1e3);
	qsort(cold, (size_t)ncold, sizeof(uint64_t), cmp);
	double warm_frame = (double)unwind[n / 2] / got_depth,
	       cold_frame = (double)cold[ncold / 2] / got_depth;
	printf("unwind %3u frames: per frame %5.0f ns with rows kept, %5.0f ns rows forgotten | "
	       "vs the byte-at-a-time unwinder (%.0f ns): %.2f and %.2f | whole unwind vs "
	       "capture (delivery + handler): %.2f and %.2f\n",
	       got_depth, warm_frame, cold_frame, OLD_FRAME_NS, warm_frame / OLD_FRAME_NS,
	       cold_frame / OLD_FRAME_NS,
	       (double)unwind[n / 2] / (double)(latency[n / 2] + inside[n / 2]),
	       (double)cold[ncold / 2] / (double)(latency[n / 2] + inside[n / 2]));
	if (depth == 64)
		printf("capture-64 inside-handler median / target 5 us: %.2f\n",
		       inside[n / 2] / 5e3);
}

int main(void)
{
	swa_ring_init(&swa_ring, ring_buf, sizeof(ring_buf));
	if (swa_plat_init() < 0)
		return 1;
	swa_images_refresh();
	bench(16);
	bench(64);
	bench(256);
	return 0;
}
