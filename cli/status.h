/*
 * The exit statuses of the stallwatch command, in one place, and the one
 * function that turns a failure into one of them.
 *
 * stallwatch(1) documents the table under EXIT STATUS and
 * tests/test-docs.py keeps the two in agreement, reading SW_STATUS_LIST
 * below; it also checks that every page's EXIT STATUS names only these.
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
	X(SW_EXIT_SYMBOLS, 6, "symbols required (--require-symbols) but not found")                \
	X(SW_EXIT_OUTPUT, 7,                                                                       \
	  "the results cannot be written: their file or stream, a recording (-o), the --junit "    \
	  "file")                                                                                  \
	X(SW_EXIT_SOFTWARE, 8, "stallwatch itself failed: out of memory")

enum sw_exit_status {
#define SW_STATUS_ENUM(name, value, text) name = value,
	SW_STATUS_LIST(SW_STATUS_ENUM)
#undef SW_STATUS_ENUM
};

/*
 * `run` follows timeout(1), env(1) and nohup(1) for its own failures that
 * have no status above: no agent found, a broken stream.
 */
enum {
	SW_EXIT_RUN_FAILED = 125,
	SW_EXIT_RUN_CANNOT_EXEC = 126,
	SW_EXIT_RUN_NOT_FOUND = 127,
};

/* What was being done when something failed: the status depends on it. */
enum sw_failure {
	SW_FAIL_USAGE,
	SW_FAIL_DEVICE,
	SW_FAIL_AGENT,
	SW_FAIL_INPUT, /* reading a recording, a binary, standard input */
	SW_FAIL_SYMBOLS,
	SW_FAIL_OUTPUT, /* writing results, a recording, a JUnit file */
};

/*
 * The exit status of a failure: what failed decides, except that running
 * out of memory is stallwatch's own failure whatever it was doing.  err is
 * a negative errno or 0.
 */
enum sw_exit_status sw_exit_status(enum sw_failure what, int err);

#endif
