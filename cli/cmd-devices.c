/*
 * stallwatch devices: the iOS devices usbmuxd sees, with what lockdownd says
 * about each (name, product type, iOS version) and how each is connected.
 */
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "device/device-format.h"
#include "device/device.h"

static int devices_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	bool json = false;
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, true);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		if (c == SW_OPT_JSON)
			json = true;
		else if (c == 'd')
			sw_device_set_debug(true);
	}
	if (!r)
		r = sw_cli_check_args(cmd, argc - optind);
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

static const struct sw_opt devices_opts[] = {
    {"json", SW_OPT_JSON, NULL,
     "one JSON object a device (schema, type \"device\", udid, name,\n"
     "product_type, ios_version, connection, error)",
     NULL},
    {"debug", 'd', NULL, "print libimobiledevice's and libusbmuxd's debug output", NULL},
    SW_OPT_END,
};

static const struct sw_opt *const devices_tables[] = {devices_opts, NULL};

const struct sw_cmd sw_cmd_devices = {
    .name = "devices",
    .usage = "[--json]",
    .summary = "list the tethered iOS devices usbmuxd sees",
    .options = devices_tables,
    .help = "environment:\n"
	    "  STALLWATCH_DEVICE_TIMEOUT   seconds each device operation may take (10)\n"
	    "  USBMUXD_SOCKET_ADDRESS      usbmuxd's socket, as UNIX:PATH or HOST:PORT\n",
    .min_args = 0,
    .max_args = 0,
    .run = devices_run,
};
