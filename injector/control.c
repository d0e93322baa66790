/*
 * The agent's side of the client messages: CLIENT_HELLO and CONFIG, read
 * from the bytes a client sent.  The agent links only the wire encoder from
 * lib/ (its decoder allocates); these two bodies are small and fixed by
 * stallwatch-format(5): CLIENT_HELLO is the magic "SWCL", the protocol
 * version, the token and the client's version; CONFIG is five ULEB128
 * numbers.  The bytes come from outside: every read is bounded.
 */
#include <errno.h>
#include <string.h>

#include "control.h"

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t uleb(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static void str(struct rd *r, char *dst, size_t cap)
{
	uint64_t len = uleb(r);
	if (r->bad || len > (uint64_t)(r->end - r->p) || len >= cap) {
		r->bad = true;
		dst[0] = '\0';
		return;
	}
	memcpy(dst, r->p, (size_t)len);
	dst[len] = '\0';
	r->p += len;
}

int swa_control_parse(const uint8_t *buf, size_t len, struct swa_control_msg *msg)
{
	struct rd r = {buf, buf + len, false};
	if (len < 2)
		return 0;
	uint8_t type = *r.p++;
	uint64_t body = uleb(&r);
	if (r.bad)
		return len > 6 ? -EBADMSG : 0;
	if (body > SWA_CONTROL_MAX_BODY)
		return -EMSGSIZE;
	if (body > (uint64_t)(r.end - r.p))
		return 0;
	size_t total = (size_t)(r.p - buf) + (size_t)body;
	struct rd b = {r.p, r.p + body, false};
	memset(msg, 0, sizeof(*msg));
	msg->type = type;
	switch (type) {
	case SW_MSG_CLIENT_HELLO:
		if (body < 4 || memcmp(b.p, "SWCL", 4) != 0)
			return -EBADMSG;
		b.p += 4;
		msg->protocol = (uint32_t)uleb(&b);
		str(&b, msg->token, sizeof(msg->token));
		str(&b, msg->client_version, sizeof(msg->client_version));
		break;
	case SW_MSG_CONFIG:
		msg->config.present = (uint32_t)uleb(&b);
		msg->config.threshold_ms = (uint32_t)uleb(&b);
		msg->config.interval_us = (uint32_t)uleb(&b);
		msg->config.flags = (uint32_t)uleb(&b);
		msg->config.max_depth = (uint32_t)uleb(&b);
		break;
	default:
		break; /* unknown: skipped by its length */
	}
	return b.bad ? -EBADMSG : (int)total;
}
