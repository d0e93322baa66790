/*
 * stallwatch run: start a program with the agent preloaded, stream its
 * stalls until it ends, and exit with its status (timeout(1)'s convention:
 * 125 when stallwatch fails, 126 when the program cannot be executed, 127
 * when it is not found, 4 when it never loads the agent).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "host/launch.h"
#include "session/session.h"
#include "session/transport.h"
#include "watch.h"
#include "util/time-units.h"

#define HELLO_TIMEOUT_MS 5000

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

struct child {
	pid_t pid;
	bool exited;
	int status;
	struct timespec exit_time;
};

static bool reap(struct child *ch)
{
	if (ch->exited)
		return true;
	int st;
	pid_t r = waitpid(ch->pid, &st, WNOHANG);
	if (r == ch->pid) {
		ch->exited = true;
		ch->status = st;
		clock_gettime(CLOCK_MONOTONIC, &ch->exit_time);
	}
	return ch->exited;
}

/* Once the program is gone, the agent's socket closes; don't wait forever if not. */
static bool stop_after_exit(void *ctx)
{
	struct child *ch = ctx;
	if (!reap(ch))
		return false;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - ch->exit_time.tv_sec >= 3;
}

static int exit_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return SW_EXIT_RUN_FAILED;
}

static int connect_agent(struct child *ch, const char *spec, struct sw_session **ret)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int fd;
		if (sw_transport_connect(spec, 500, &fd, NULL) == 0) {
			struct sw_session *s;
			if (sw_session_new(fd, &s) < 0) {
				close(fd);
				return -ENOMEM;
			}
			*ret = s;
			return 0;
		}
		if (reap(ch))
			return -ECHILD;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - t0.tv_sec) * (long)SW_MS_PER_S +
			  (now.tv_nsec - t0.tv_nsec) / (long)SW_NS_PER_MS;
		if (ms > HELLO_TIMEOUT_MS)
			return -ETIMEDOUT;
		struct timespec pause = {0, 20000000};
		nanosleep(&pause, NULL);
	}
}

static int finish(struct child *ch, struct sw_launch *l, int status)
{
	while (!ch->exited) {
		int st;
		pid_t r = waitpid(ch->pid, &st, 0);
		if (r == ch->pid) {
			ch->exited = true;
			ch->status = st;
		} else if (r < 0 && errno != EINTR) {
			break;
		}
	}
	sw_host_launch_cleanup(l);
	if (status != SW_EXIT_OK)
		return status;
	return ch->exited ? exit_status(ch->status) : SW_EXIT_RUN_FAILED;
}

static int no_hello(struct child *ch, struct sw_launch *l, const char *prog, int why)
{
	if (why == -ECHILD)
		sw_cli_error("'%s' exited without loading the agent (a static or setuid program?); "
			     "see stallwatch-run(1)",
			     prog);
	else
		sw_cli_error("'%s' did not load the agent within %d s (a static or setuid "
			     "program, or --exe naming another program?); stopping it",
			     prog, HELLO_TIMEOUT_MS / 1000);
	if (!ch->exited) {
		kill(ch->pid, SIGTERM);
		finish(ch, l, SW_EXIT_AGENT);
	} else {
		sw_host_launch_cleanup(l);
	}
	return SW_EXIT_AGENT;
}

static int run_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    SW_WATCH_LONGOPTS,
	    {"exe", required_argument, NULL, 1100},
	    {NULL, 0, NULL, 0},
	};
	struct sw_watch_options o;
	sw_watch_options_init(&o);
	const char *exe = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:S:", longopts, NULL)) != -1) {
		if (c == 1100) {
			exe = optarg;
			continue;
		}
		int r = sw_watch_option(cmd, c, optarg, argv[optind - 1], &o);
		if (r)
			return r;
	}
	if (optind >= argc)
		return sw_cli_usage(cmd, "missing program; usage: stallwatch run %s", cmd->usage);

	char agent[PATH_MAX];
	struct sw_error err = {0};
	if (sw_host_find_agent(agent, sizeof(agent), &err) < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_RUN_FAILED;
	}
	struct sw_launch_options lo = {
	    .agent = agent,
	    .exe = exe,
	    .threshold_ms = (uint32_t)o.threshold_ms,
	    .interval_ms = (uint32_t)o.interval_ms,
	    .all_threads = o.all_threads,
	    .token = o.token,
	    .wait_ms = HELLO_TIMEOUT_MS,
	};
	struct sw_launch l;
	char **prog_argv = argv + optind;
	int r = sw_host_launch(&lo, prog_argv, &l, &err);
	if (r < 0) {
		sw_cli_error("cannot run '%s': %s", prog_argv[0], sw_error_str(&err));
		return r == -ENOENT ? SW_EXIT_RUN_NOT_FOUND : SW_EXIT_RUN_CANNOT_EXEC;
	}
	if (l.script && !exe)
		sw_cli_warn("'%s' is a script: the agent activates in its first process; name the "
			    "program to watch with --exe",
			    prog_argv[0]);
	struct child ch = {.pid = l.pid};
	child_pid = l.pid;
	struct sigaction sa = {.sa_handler = forward};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct sw_session *s = NULL;
	r = connect_agent(&ch, l.connect, &s);
	if (r < 0)
		return no_hello(&ch, &l, prog_argv[0], r);
	struct sw_session_options so = {.token = o.token, .hello_timeout_ms = HELLO_TIMEOUT_MS};
	if (sw_session_start(s, &so, &err) < 0) {
		sw_session_free(s);
		if (err.code == -EPROTONOSUPPORT) {
			sw_cli_error("cannot talk to the agent in '%s': %s", prog_argv[0],
				     sw_error_str(&err));
			kill(ch.pid, SIGTERM);
			return finish(&ch, &l, SW_EXIT_AGENT);
		}
		return no_hello(&ch, &l, prog_argv[0], -ETIMEDOUT);
	}
	int status = sw_watch_stream(s, &o, stop_after_exit, &ch, prog_argv[0]);
	sw_session_free(s);
	if (status == SW_EXIT_AGENT) {
		kill(ch.pid, SIGTERM);
		return finish(&ch, &l, SW_EXIT_AGENT);
	}
	/* --duration or --max-stalls ended the watch: the program ends with it */
	bool stopped = (o.out.duration_s || o.out.max_stalls) && !reap(&ch);
	if (stopped)
		kill(ch.pid, SIGTERM);
	sw_output_options_finish(&o.out);
	/* 1 only when the program succeeded and a --fail-* condition holds */
	if (status == SW_EXIT_STALLS || (stopped && status == SW_EXIT_OK)) {
		int rc = finish(&ch, &l, SW_EXIT_OK);
		if (stopped && rc == 128 + SIGTERM)
			rc = 0; /* we stopped it: not the program's failure */
		return rc == 0 && status == SW_EXIT_STALLS ? SW_EXIT_STALLS : rc;
	}
	/* a broken stream is our failure, not the program's */
	if (status != SW_EXIT_OK && status != SW_EXIT_SYMBOLS)
		status = SW_EXIT_RUN_FAILED;
	return finish(&ch, &l, status);
}

const struct sw_cmd sw_cmd_run = {
    .name = "run",
    .usage = "[options] [--] PROGRAM [ARGS...]",
    .summary = "run a program with the agent and report its main loop's stalls",
    .help = SW_WATCH_HELP "  --exe NAME          activate in the process running NAME (for wrapper "
			  "scripts)\n",
    .min_args = 1,
    .max_args = -1,
    .run = run_run,
};
