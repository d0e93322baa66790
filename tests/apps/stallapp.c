/*
 * A poll loop that stalls on command, for the agent's integration tests:
 * `stallapp [--child] STEP...` runs each step (steps.c) in its own loop
 * iteration with idle time between them, then exits 0.  With --child it
 * reports whether the agent is loaded in it (it should not be: the agent
 * leaves children alone).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "steps.h"

static void idle_ms(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long end = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + ms;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long long now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
		if (now >= end)
			break;
		poll(NULL, 0, (int)(end - now < 20 ? end - now : 20));
	}
}

int main(int argc, char **argv)
{
	int first = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--exec-child"))
		return hazard_exec_child();
	if (argc > 1 && !strcmp(argv[1], "--child")) {
		first = 2;
		printf("child agent=%s preload=%s\n",
		       dlsym(RTLD_DEFAULT, "stallwatch_before_wait") ? "loaded" : "absent",
		       getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
	}
	printf("ready pid=%d\n", (int)getpid());
	for (int i = first; i < argc; i++) {
		int n = 0, ms = 0;
		if (sscanf(argv[i], "burst:%d:%d", &n, &ms) == 2) {
			for (int k = 0; k < n; k++) {
				idle_ms(5);
				char step[32];
				snprintf(step, sizeof(step), "hitch:%d", ms);
				run_step(step);
			}
			continue;
		}
		if (!strncmp(argv[i], "idle:", 5)) {
			idle_ms(atoi(argv[i] + 5));
			continue;
		}
		idle_ms(step_gap_ms);
		if (run_step(argv[i]) == -1) {
			fprintf(stderr, "stallapp: unknown step '%s'\n", argv[i]);
			return 2;
		}
	}
	idle_ms(step_gap_ms);
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			printf("rss %s", line + 6);
	if (f)
		fclose(f);
	printf("done\n");
	return 0;
}
