/*
 * The exit statuses of the stallwatch command, in one place.
 *
 * This table is the contract; stallwatch(1) documents it under EXIT
 * STATUS and tests/test-docs.py keeps the two in agreement, reading the
 * SW_STATUS_LIST below.
 */
#ifndef SW_STATUS_H
#define SW_STATUS_H

#define SW_STATUS_LIST(X)                                                                          \
	X(SW_EXIT_OK, 0, "success; no --fail-* condition met")                                     \
	X(SW_EXIT_STALLS, 1,                                                                       \
	  "stalls found and a --fail-on-stall or --fail-if-longer-than condition met")             \
	X(SW_EXIT_USAGE, 2, "usage error")                                                         \
	X(SW_EXIT_DEVICE, 3,                                                                       \
	  "device problem: no device, several and none chosen, not trusted or paired, "            \
	  "usbmuxd unavailable or unresponsive")                                                   \
	X(SW_EXIT_AGENT, 4,                                                                        \
	  "agent problem: not reachable, no hello, protocol version mismatch, refused token")      \
	X(SW_EXIT_INPUT, 5,                                                                        \
	  "bad input: unreadable recording, MetricKit file, binary or address list")               \
	X(SW_EXIT_SYMBOLS, 6, "symbols required (--require-symbols) but not found")

enum sw_exit_status {
#define SW_STATUS_ENUM(name, value, text) name = value,
	SW_STATUS_LIST(SW_STATUS_ENUM)
#undef SW_STATUS_ENUM
};

/* `run` follows timeout(1), env(1) and nohup(1) for its own failures. */
enum {
	SW_EXIT_RUN_FAILED = 125,
	SW_EXIT_RUN_CANNOT_EXEC = 126,
	SW_EXIT_RUN_NOT_FOUND = 127,
};

#endif
