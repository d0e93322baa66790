/*
 * stallwatch devices: the iOS devices usbmuxd sees, with what lockdownd says
 * about each (name, product type, iOS version) and how each is connected.
 */
#include <getopt.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "device/device-format.h"
#include "device/device.h"

static int devices_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	static const struct option options[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"debug", no_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hd", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'd':
			sw_device_set_debug(true);
			break;
		default:
			return sw_cli_usage(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	unsigned timeout_ms;
	if (sw_device_timeout_from_env(&timeout_ms) < 0) {
		sw_cli_error("invalid STALLWATCH_DEVICE_TIMEOUT '%s' (seconds, up to 3600)",
			     getenv("STALLWATCH_DEVICE_TIMEOUT"));
		return SW_EXIT_USAGE;
	}

	struct sw_error err = {0};
	struct sw_device_info *devices = NULL;
	size_t count = 0;
	r = sw_device_list(timeout_ms, true, &devices, &count, &err);
	if (r < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_DEVICE;
	}
	int status = SW_EXIT_OK;
	for (size_t i = 0; i < count; i++) {
		if (devices[i].info_status) {
			sw_cli_warn("%s", devices[i].info_error);
			/* Over Wi-Fi, lockdownd may want a session: not a fault. */
			if (devices[i].conn & SW_DEVICE_USB)
				status = SW_EXIT_DEVICE;
		}
	}
	if (json)
		sw_device_print_json(stdout, devices, count);
	else
		sw_device_print_text(stdout, devices, count, isatty(STDOUT_FILENO));
	if (count == 0)
		fputs("stallwatch: no devices attached\n", stderr);
	free(devices);
	return sw_cli_finish_stdout(status);
}

const struct sw_cmd sw_cmd_devices = {
    .name = "devices",
    .usage = "[--json]",
    .summary = "list the tethered iOS devices usbmuxd sees",
    .help = "options:\n"
	    "  --json       one JSON object a device (schema, type \"device\", udid, name,\n"
	    "               product_type, ios_version, connection, error)\n"
	    "  -d, --debug  print libimobiledevice's and libusbmuxd's debug output\n"
	    "  -h, --help   show this help\n"
	    "\n"
	    "environment:\n"
	    "  STALLWATCH_DEVICE_TIMEOUT   seconds each device operation may take (10)\n"
	    "  USBMUXD_SOCKET_ADDRESS      usbmuxd's socket, as UNIX:PATH or HOST:PORT\n",
    .min_args = 0,
    .max_args = 0,
    .run = devices_run,
};
