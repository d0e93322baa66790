/*
 * Starting a program with the agent loaded (`stallwatch run`): the one
 * piece of the host side that depends on the operating system, one file per
 * system (launch-linux.c; launch-darwin.c will use DYLD_INSERT_LIBRARIES).
 */
#ifndef SW_HOST_LAUNCH_H
#define SW_HOST_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

struct sw_launch_options {
	const char *agent;     /* the agent library's path */
	const char *exe;       /* the program to activate in (NULL: PROGRAM itself) */
	uint32_t threshold_ms; /* 0: the agent's default */
	uint32_t interval_ms;  /* 0: the agent's default */
	bool all_threads;
	const char *token; /* NULL: none */
	uint32_t wait_ms;  /* how long the agent waits for us before main() */
};

struct sw_launch {
	pid_t pid;
	char dir[256];      /* private directory holding the socket */
	char connect[300];  /* what sw_transport_connect() takes */
	char program[4096]; /* the program's file, found as execvp finds it */
	bool script;        /* PROGRAM is a script and no exe was named */
	/* when the program started, in clock ticks after boot (/proc/PID/stat); 0: unknown */
	unsigned long long start_ticks;
};

/*
 * Finds the agent: $STALLWATCH_AGENT, else beside an installed command
 * (relative to the command's own path), else in a build tree, else the
 * configured install directory.  Fills buf with its path.
 */
int sw_host_find_agent(char *buf, size_t cap, struct sw_error *err);

/*
 * Starts argv[0] with the agent on a private unix socket.  Returns 0, or
 * -ENOENT when the program is not found, another -errno when it cannot be
 * executed (err says why), after which nothing is left running.
 */
int sw_host_launch(const struct sw_launch_options *o, char *const argv[], struct sw_launch *ret,
		   struct sw_error *err);

/*
 * The processes of this launch that still run exe (the watched program's
 * executable, as /proc/PID/exe names it) besides watched: the children
 * the program forked, daemons among them, in which the agent is off.  A
 * process is taken for one when it started after the launch, has the
 * agent at agent mapped, and its environment names no other launch's
 * socket (a fork keeps the block the agent scrubbed only the index of;
 * a daemon that writes its title over it names none, and is taken).  Any
 * user's process whose /proc files we may read is looked at (a worker
 * that changed its user after a fork is still the program's).  Their
 * ids go to pids (at most max); returns how many there are, more than
 * max when some did not fit.  Exited ones and zombies are not counted.
 */
size_t sw_host_launch_forked(const struct sw_launch *l, const char *agent, pid_t watched,
			     const char *exe, pid_t *pids, size_t max);

/* The executable pid runs, as /proc/PID/exe names it, in buf; "" when unknown. */
void sw_host_process_exe(pid_t pid, char *buf, size_t cap);

/*
 * The CPU time pid's main thread and the whole process (every thread, those
 * ended too) have used, in ns, at the clock tick's resolution; false when
 * its /proc files cannot be read (it has ended, or is another user's).
 */
bool sw_host_process_cpu(pid_t pid, uint64_t *ret_main_ns, uint64_t *ret_all_ns);

/* Whether pid has ended: gone, or a zombie not reaped yet. */
bool sw_host_process_ended(pid_t pid);

/* Removes the private directory. */
void sw_host_launch_cleanup(struct sw_launch *l);

#endif
