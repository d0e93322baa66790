/*
 * A client session with an agent: the agent's hello, our hello (protocol,
 * optional token) and configuration, then the decoded stream.  The session
 * owns the socket.  Raw bytes of every message are available for recording,
 * so a .swtrace holds exactly what crossed the wire.
 */
#ifndef SW_SESSION_H
#define SW_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "wire/wire.h"

struct sw_session;

struct sw_session_options {
	const char *token;                   /* NULL: none */
	const struct sw_wire_config *config; /* NULL: keep the agent's */
	int hello_timeout_ms;                /* 0: 5000 */
};

/* Takes ownership of fd (closed by sw_session_free). */
int sw_session_new(int fd, struct sw_session **ret);
void sw_session_free(struct sw_session *s);

/*
 * Waits for the agent's hello, checks its protocol, and sends ours (in the
 * agent's protocol version) and the configuration.  -ETIMEDOUT: no hello;
 * -EPROTONOSUPPORT: a protocol version this stallwatch does not read, such
 * as a newer agent's (err says which); -EBADMSG: not an agent.  The hello is the first
 * message sw_session_next() returns.
 */
int sw_session_start(struct sw_session *s, const struct sw_session_options *o,
		     struct sw_error *err);

/*
 * The agent's hello once sw_session_start() succeeded, valid until the first
 * sw_session_next() (which returns it); NULL after that.  For checks such as
 * the bundle id before the stream is consumed.
 */
const struct sw_wire_hello *sw_session_hello(const struct sw_session *s);

/*
 * The next message: 1 with msg filled (valid until the next call), 0 at the
 * end of the stream, -EAGAIN when timeout_ms (-1: none) passed, -EINTR when
 * a signal arrived, -errno with err on a broken stream.
 */
int sw_session_next(struct sw_session *s, struct sw_wire_msg *msg, int timeout_ms,
		    struct sw_error *err);

/* The bytes of the message sw_session_next() returned last. */
void sw_session_raw(const struct sw_session *s, const uint8_t **ret_data, size_t *ret_len);

/* Sends a configuration change (a CONFIG_REPLY follows in the stream). */
int sw_session_configure(struct sw_session *s, const struct sw_wire_config *config);

#endif
