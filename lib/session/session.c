/*
 * The client side of the wire protocol (see session.h): a buffered reader
 * over the socket feeding the wire decoder, with a ceiling on what it
 * buffers (one message at most SW_WIRE_MAX_MESSAGE).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/buf.h"
#include "config.h"
#include "session.h"
#include "transport.h"

struct sw_session {
	int fd;
	struct sw_wire_decoder *dec;
	struct sw_buf in;
	size_t pos;         /* start of undecoded bytes in in */
	uint64_t offset;    /* stream offset of in.data[0] */
	const uint8_t *raw; /* last message */
	size_t raw_len;
	bool have_pending; /* the hello, decoded by start, not yet returned */
	struct sw_wire_msg pending;
	bool eof;
};

int sw_session_new(int fd, struct sw_session **ret)
{
	struct sw_session *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int r = sw_wire_decoder_new(&s->dec);
	if (r < 0) {
		free(s);
		return r;
	}
	sw_buf_init(&s->in, SW_WIRE_MAX_MESSAGE * 2);
	s->fd = fd;
	*ret = s;
	return 0;
}

void sw_session_free(struct sw_session *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	sw_wire_decoder_free(s->dec);
	sw_buf_finish(&s->in);
	free(s);
}

static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(struct sw_session *s, const struct sw_wire_msg *m)
{
	uint8_t buf[SW_WIRE_MAX_STRING * 3];
	int n = sw_wire_encode(NULL, buf, sizeof(buf), m);
	if (n < 0)
		return n;
	return send_all(s->fd, buf, (size_t)n);
}

int sw_session_configure(struct sw_session *s, const struct sw_wire_config *config)
{
	struct sw_wire_msg m = {.type = SW_MSG_CONFIG, .config = *config};
	return send_msg(s, &m);
}

/* Reads more bytes, compacting the buffer first. */
static int fill(struct sw_session *s, int timeout_ms)
{
	if (s->pos > 0) {
		memmove(s->in.data, s->in.data + s->pos, s->in.len - s->pos);
		s->in.len -= s->pos;
		s->offset += s->pos;
		s->pos = 0;
	}
	int r = sw_transport_wait(s->fd, timeout_ms);
	if (r < 0)
		return r;
	if (r == 0)
		return -EAGAIN;
	r = sw_buf_reserve(&s->in, 65536);
	if (r < 0)
		return r;
	ssize_t n = recv(s->fd, s->in.data + s->in.len, 65536, 0);
	if (n < 0)
		return errno == EINTR ? -EINTR : -errno;
	if (n == 0) {
		s->eof = true;
		return 0;
	}
	s->in.len += (size_t)n;
	return 1;
}

static int decode(struct sw_session *s, struct sw_wire_msg *msg, int timeout_ms,
		  struct sw_error *err)
{
	for (;;) {
		int r = 0;
		if (s->in.len > s->pos) /* nothing buffered yet: in.data may be NULL */
			r = sw_wire_decode(s->dec, s->in.data + s->pos, s->in.len - s->pos,
					   s->offset + s->pos, msg, err);
		if (r < 0)
			return r;
		if (r > 0) {
			s->raw = s->in.data + s->pos;
			s->raw_len = (size_t)r;
			s->pos += (size_t)r;
			return 1;
		}
		if (s->eof)
			return 0;
		r = fill(s, timeout_ms);
		if (r < 0)
			return r;
		if (r == 0 && s->in.len > s->pos)
			return sw_error_set(err, -EBADMSG,
					    "stream ends inside a message at offset %llu",
					    (unsigned long long)(s->offset + s->pos));
	}
}

int sw_session_start(struct sw_session *s, const struct sw_session_options *o, struct sw_error *err)
{
	int timeout = o && o->hello_timeout_ms ? o->hello_timeout_ms : 5000;
	struct sw_wire_msg m;
	int r = decode(s, &m, timeout, err);
	if (r == -EAGAIN)
		return sw_error_set(err, -ETIMEDOUT, "no hello within %d ms", timeout);
	if (r == 0)
		return sw_error_set(err, -ECONNRESET, "connection closed before the hello");
	if (r < 0)
		return r;
	if (m.type != SW_MSG_HELLO)
		return sw_error_set(err, -EBADMSG, "expected a hello, got %s",
				    sw_wire_type_name(m.type));
	/* the decoder refused a protocol it cannot read; we answer in the
	 * agent's, which every agent accepts, as an older one knows no other */
	s->pending = m;
	s->have_pending = true;
	struct sw_wire_msg hello = {.type = SW_MSG_CLIENT_HELLO};
	hello.client_hello.protocol = m.hello.protocol;
	hello.client_hello.token = o && o->token ? o->token : "";
	hello.client_hello.client_version = SW_VERSION;
	r = send_msg(s, &hello);
	if (r == 0 && o && o->config)
		r = sw_session_configure(s, o->config);
	if (r < 0)
		return sw_error_set(err, r, "cannot send the client hello: %s", strerror(-r));
	return 0;
}

int sw_session_next(struct sw_session *s, struct sw_wire_msg *msg, int timeout_ms,
		    struct sw_error *err)
{
	if (s->have_pending) {
		s->have_pending = false;
		*msg = s->pending;
		return 1;
	}
	return decode(s, msg, timeout_ms, err);
}

const struct sw_wire_hello *sw_session_hello(const struct sw_session *s)
{
	return s->have_pending ? &s->pending.hello : NULL;
}

void sw_session_raw(const struct sw_session *s, const uint8_t **ret_data, size_t *ret_len)
{
	*ret_data = s->raw;
	*ret_len = s->raw_len;
}
