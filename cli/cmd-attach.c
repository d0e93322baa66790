/*
 * stallwatch attach --connect HOST:PORT|unix:PATH: stream the stalls of an
 * app whose agent is already running (started with LD_PRELOAD by hand, or
 * on a device through a forwarded port).  Ends when the app ends, or on
 * Ctrl-C, printing what was complete.  attach BUNDLE-ID reaches an app on a
 * tethered iOS device instead (attach-device.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach-device.h"
#include "host/token.h"
#include "cli.h"
#include "session/session.h"
#include "session/transport.h"
#include "watch.h"

/* Read by every device's thread with --all-devices: an atomic, lock-free. */
static atomic_int interrupted;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, 1);
}

static bool stop_on_signal(void *ctx)
{
	(void)ctx;
	return atomic_load(&interrupted) != 0;
}

/*
 * A --connect address that cannot name an agent is a misuse (2), caught
 * before connecting: unix:PATH with a path that fits a socket address, or
 * HOST:PORT / [V6ADDR]:PORT with a port from 1 to 65535.
 */
static int check_address(const struct sw_cmd *cmd, const char *spec)
{
	if (strncmp(spec, "unix:", 5) == 0) {
		size_t len = strlen(spec + 5);
		if (len == 0 || len >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return sw_cli_usage(cmd,
					    "invalid address '%s': the socket path is empty "
					    "or too long",
					    spec);
		return 0;
	}
	const char *colon = strrchr(spec, ':');
	const char *close = strchr(spec, ']');
	bool bracketed = spec[0] == '[';
	if (!colon || colon == spec || (bracketed && (!close || close + 1 != colon)) ||
	    (!bracketed && (close || strchr(spec, ':') != colon)))
		return sw_cli_usage(cmd,
				    "invalid address '%s' (HOST:PORT, [V6ADDR]:PORT or "
				    "unix:PATH)",
				    spec);
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port == 0 || port > 65535 || colon[1] == '-' ||
	    colon[1] == '+')
		return sw_cli_usage(cmd, "invalid port in address '%s' (1 to 65535)", spec);
	return 0;
}

/* Why the token the agent refused may be missing: where attach looked for it. */
static void token_hint(const char *file, int r)
{
	if (!file[0])
		return;
	if (r == -ENOENT)
		fprintf(stderr,
			"stallwatch: no token file '%s': the agent writes it for the app's user "
			"only; attach as that user, with the app's XDG_RUNTIME_DIR, or pass "
			"--token\n",
			file);
	else if (r < 0)
		fprintf(stderr, "stallwatch: cannot read the token file '%s': %s\n", file,
			strerror(-r));
}

static int attach_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct sw_watch_options o;
	sw_watch_options_init(&o);
	struct sw_attach_device_options dev = {0};
	bool device_option = false;
	const char *connect_to = NULL;
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, false);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		if (c == 'c') {
			connect_to = optarg;
			continue;
		}
		int dr = sw_attach_device_option(cmd, c, optarg, &dev);
		if (dr == 0) {
			device_option = true;
			continue;
		}
		if (dr != 1)
			return dr;
		r = sw_watch_option(cmd, c, optarg, &o);
		if (r)
			return r;
	}
	if (!r)
		r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	if (connect_to && (optind < argc || device_option))
		return sw_cli_usage(cmd, "--connect does not take a bundle id or device options");
	if (dev.all_devices && dev.udid)
		return sw_cli_usage(cmd, "--all-devices and -u exclude each other");
	if (dev.dylib && !dev.launch)
		return sw_cli_usage(cmd, "--dylib goes with --launch");
	if (!connect_to && optind == argc)
		return sw_cli_usage(cmd, "give a bundle id, or --connect HOST:PORT or unix:PATH");
	if (connect_to && (r = check_address(cmd, connect_to)) != 0)
		return r;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	if (!connect_to) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		dev.bundle_id = argv[optind];
		return sw_cli_finish_stdout(sw_attach_device(&dev, &o, stop_on_signal, NULL));
	}
	int fd;
	struct sw_error err = {0};
	if (sw_transport_connect(connect_to, 5000, &fd, &err) < 0) {
		sw_cli_error("cannot reach the agent at '%s': %s", connect_to, sw_error_str(&err));
		return SW_EXIT_AGENT;
	}
	struct sw_session *s;
	if (sw_session_new(fd, &s) < 0) {
		close(fd);
		return sw_cli_fail(SW_FAIL_AGENT, -ENOMEM, "out of memory");
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
	/* the agent's own token, from the file only this user can read */
	char token[256], token_file[4200] = "";
	const char *tok = o.token;
	int token_r = 0;
	if (!tok) {
		token_r = sw_host_agent_token(connect_to, token, sizeof(token), token_file,
					      sizeof(token_file));
		tok = token_r == 0 ? token : NULL;
	}
	struct sw_session_options so = {.token = tok, .config = cfg.present ? &cfg : NULL};
	if (sw_session_start(s, &so, &err) < 0) {
		sw_cli_error("cannot talk to the agent at '%s': %s", connect_to,
			     sw_error_str(&err));
		if (err.code == -EACCES && !o.token)
			token_hint(token_file, token_r);
		sw_session_free(s);
		return SW_EXIT_AGENT;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int status = sw_watch_stream(s, &o, stop_on_signal, NULL, connect_to);
	sw_session_free(s);
	return sw_cli_finish_stdout(status);
}

static const struct sw_opt attach_opts[] = {
    {"connect", 'c', "ADDR", "the agent's address: HOST:PORT or unix:PATH", NULL},
    SW_OPT_END,
};

static const struct sw_opt *const attach_tables[] = {
    attach_opts, sw_attach_device_opts, sw_watch_opts, sw_output_opts, NULL,
};

const struct sw_cmd sw_cmd_attach = {
    .name = "attach",
    .usage = "BUNDLE-ID [-u UDID] [--wait SECONDS] [--all-devices] [--launch] [options]\n"
	     "       stallwatch attach --connect HOST:PORT|unix:PATH [options]",
    .summary = "stream the stalls of an app whose agent is already running",
    .options = attach_tables,
    .help = "BUNDLE-ID: attach to this app on a tethered iOS device, through usbmuxd.\n",
    .min_args = 0,
    .max_args = 1,
    .run = attach_run,
};
