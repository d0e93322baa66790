/*
 * stallwatch attach --connect HOST:PORT|unix:PATH: stream the stalls of an
 * app whose agent is already running (started with LD_PRELOAD by hand, or
 * on a device through a forwarded port).  Ends when the app ends, or on
 * Ctrl-C, printing what was complete.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "transport.h"
#include "watch.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static bool stop_on_signal(void *ctx)
{
	(void)ctx;
	return interrupted;
}

static int attach_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    SW_WATCH_LONGOPTS,
	    {"connect", required_argument, NULL, 'c'},
	    {NULL, 0, NULL, 0},
	};
	struct sw_watch_options o;
	sw_watch_options_init(&o);
	const char *connect_to = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:c:S:", longopts, NULL)) != -1) {
		if (c == 'c') {
			connect_to = optarg;
			continue;
		}
		if (c == '?' || c == ':')
			return sw_cli_usage(cmd, "unknown option or missing value: '%s'",
					    argv[optind - 1]);
		int r = sw_watch_option(cmd, c, optarg, &o);
		if (r == 1)
			return sw_cli_usage(cmd, "unknown option");
		if (r)
			return r;
	}
	int r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	if (!connect_to)
		return sw_cli_usage(cmd, "--connect HOST:PORT or --connect unix:PATH is required "
					 "(device attach comes later)");
	int fd;
	struct sw_error err = {0};
	if (sw_transport_connect(connect_to, 5000, &fd, &err) < 0) {
		sw_cli_error("cannot reach the agent at '%s': %s", connect_to, sw_error_str(&err));
		return SW_EXIT_AGENT;
	}
	struct sw_session *s;
	if (sw_session_new(fd, &s) < 0) {
		close(fd);
		sw_cli_error("out of memory");
		return SW_EXIT_AGENT;
	}
	struct sw_wire_config cfg = {0};
	if (o.threshold_ms) {
		cfg.present |= SW_CONFIG_HAS_THRESHOLD;
		cfg.threshold_ms = (uint32_t)o.threshold_ms;
	}
	if (o.interval_ms) {
		cfg.present |= SW_CONFIG_HAS_INTERVAL;
		cfg.interval_us = (uint32_t)o.interval_ms * 1000;
	}
	if (o.all_threads) {
		cfg.present |= SW_CONFIG_HAS_FLAGS;
		cfg.flags = SW_CONFIG_ALL_THREADS;
	}
	struct sw_session_options so = {.token = o.token, .config = cfg.present ? &cfg : NULL};
	if (sw_session_start(s, &so, &err) < 0) {
		sw_cli_error("cannot talk to the agent at '%s': %s", connect_to,
			     sw_error_str(&err));
		sw_session_free(s);
		return SW_EXIT_AGENT;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int status = sw_watch_stream(s, &o, stop_on_signal, NULL, connect_to);
	sw_session_free(s);
	return sw_cli_finish_stdout(status);
}

const struct sw_cmd sw_cmd_attach = {
    .name = "attach",
    .usage = "--connect HOST:PORT|unix:PATH [options]",
    .summary = "stream the stalls of an app whose agent is already running",
    .help = "  -c, --connect ADDR  the agent's address: HOST:PORT or unix:PATH\n" SW_WATCH_HELP,
    .min_args = 0,
    .max_args = 0,
    .run = attach_run,
};
