/*
 * What `run` and `attach` share: their common options and the loop that
 * reads an agent's stream, records it, and prints each stall as it ends.
 */
#ifndef SW_CLI_WATCH_H
#define SW_CLI_WATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cli.h"
#include "output.h"
#include "session/session.h"

struct sw_watch_options {
	unsigned long threshold_ms, interval_ms; /* 0: not given */
	bool all_threads;
	const char *output; /* -o FILE.swtrace */
	const char *token;
	struct sw_output_options out; /* --format, tree and CI options (output.h) */
	/*
	 * A stream from a device: its stalls carry the UDID as their source
	 * (NDJSON "source", ids qualified as UDID#N where several mix), and the
	 * recording records the UDID and the device's name.
	 */
	const char *source;
	const char *device_udid, *device_name;
	/*
	 * Streams that print through one output (attach --all-devices): used
	 * under shared_lock, and finished by its owner, not by the stream.
	 */
	struct sw_output *shared;
	pthread_mutex_t *shared_lock;
	struct sw_watch_result *result; /* filled when not NULL */
	/*
	 * Called once when the stream has ended, after the count of stalls,
	 * with limit true when --duration or --max-stalls ended it (the
	 * program goes on): true when it said what became of the program's
	 * loop (run: a daemon or the workers the program forked), which is
	 * then not said to be unwatched.
	 */
	bool (*explain_end)(void *ctx, const struct sw_stalls *c, bool limit);
	void *explain_ctx;
	/*
	 * Called when the stream ends without a goodbye (the process exec'd,
	 * or died): the started session of the agent in the process's next
	 * image, or NULL.  The watch goes on with it: one collector, one
	 * recording, one output; the stream frees it.
	 */
	struct sw_session *(*next_stream)(void *ctx);
	void *next_ctx;
};

struct sw_watch_result {
	uint64_t stalls;
	bool goodbye; /* the agent said goodbye: the stream did not just break off */
	/* what ended the watch before the stream did: "--max-stalls", "--duration" or NULL */
	const char *limit;
};

void sw_watch_options_init(struct sw_watch_options *o);

/* The options run and attach take besides sw_output_opts (options.h). */
extern const struct sw_opt sw_watch_opts[];

/*
 * Handles option key c once the verb's own options are ruled out: one of
 * the shared options (0), or a misuse reported (its exit status).
 */
int sw_watch_option(const struct sw_cmd *cmd, int c, const char *arg, struct sw_watch_options *o);

/* Seconds since t0 on the monotonic clock: how --duration counts. */
double sw_watch_elapsed_s(const struct timespec *t0);

/*
 * Reads the session until the stream ends or stop() says so, printing every
 * stall on stdout and recording to o->output.  Returns an exit status:
 * 0, 4 (the agent refused us or spoke another protocol), 5 (broken stream),
 * or 125-like failures are the caller's to map.
 */
int sw_watch_stream(struct sw_session *s, const struct sw_watch_options *o, bool (*stop)(void *ctx),
		    void *ctx, const char *what);

#endif
