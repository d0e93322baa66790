/*
 * Tests of the transport and the client session: address parsing and
 * connecting over a unix socket and loopback TCP; the session's handshake
 * against a scripted agent on a socketpair (hello, client hello with token
 * and configuration, decoded and checked with the wire decoder), the stream
 * with raw bytes for recording, protocol mismatch, silence, garbage and a
 * stream cut inside a message.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/error.h"
#include "session/session.h"
#include "test.h"
#include "session/transport.h"

static struct sw_wire_encoder enc;

static void put(int fd, const struct sw_wire_msg *m)
{
	uint8_t buf[8192];
	int n = sw_wire_encode(&enc, buf, sizeof(buf), m);
	CHECK(n > 0);
	if (n > 0)
		CHECK_INT(write(fd, buf, (size_t)n), n);
}

static void put_hello(int fd, uint32_t protocol)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO};
	m.hello.protocol = protocol;
	m.hello.process_name = "app";
	m.hello.pid = 99;
	m.hello.clock_numer = m.hello.clock_denom = 1;
	sw_wire_encoder_reset(&enc);
	put(fd, &m);
}

static void transport(void)
{
	struct sw_error err = {0};
	int fd;
	CHECK_INT(sw_transport_connect("nocolon", 100, &fd, &err), -EINVAL);
	CHECK_INT(sw_transport_connect("host:", 100, &fd, &err), -EINVAL);
	CHECK_INT(sw_transport_connect("[::1:80", 100, &fd, &err), -EINVAL);
	char longpath[200];
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = 'u', longpath[1] = 'n', longpath[2] = 'i', longpath[3] = 'x',
	longpath[4] = ':';
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK_INT(sw_transport_connect(longpath, 100, &fd, &err), -ENAMETOOLONG);

	char dir[] = "/tmp/sw-test-session-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char spec[160], path[128];
	snprintf(path, sizeof(path), "%s/s", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);
	CHECK(sw_transport_connect(spec, 100, &fd, &err) < 0); /* nobody listens */
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	CHECK_INT(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_INT(listen(l, 1), 0);
	CHECK_INT(sw_transport_connect(spec, 1000, &fd, &err), 0);
	close(fd);
	close(l);
	unlink(path);
	rmdir(dir);

	int t = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	CHECK_INT(bind(t, (struct sockaddr *)&in, sizeof(in)), 0);
	CHECK_INT(listen(t, 1), 0);
	getsockname(t, (struct sockaddr *)&in, &len);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", ntohs(in.sin_port));
	CHECK_INT(sw_transport_connect(spec, 1000, &fd, &err), 0);
	CHECK_INT(sw_transport_wait(fd, 10), 0);
	close(fd);
	close(t);
}

static void handshake_and_stream(void)
{
	int sv[2];
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct sw_session *s;
	CHECK_INT(sw_session_new(sv[0], &s), 0);
	put_hello(sv[1], SW_WIRE_PROTOCOL);
	struct sw_wire_config cfg = {.present = SW_CONFIG_HAS_THRESHOLD, .threshold_ms = 100};
	struct sw_session_options o = {.token = "sesame", .config = &cfg, .hello_timeout_ms = 1000};
	struct sw_error err = {0};
	CHECK_INT(sw_session_start(s, &o, &err), 0);

	/* what the client sent, read back with the real decoder */
	uint8_t buf[4096];
	ssize_t n = read(sv[1], buf, sizeof(buf));
	CHECK(n > 0);
	struct sw_wire_decoder *dec;
	CHECK_INT(sw_wire_decoder_new(&dec), 0);
	struct sw_wire_msg m;
	int r = sw_wire_decode(dec, buf, (size_t)n, 0, &m, &err);
	CHECK(r > 0);
	CHECK_INT(m.type, SW_MSG_CLIENT_HELLO);
	CHECK_INT(m.client_hello.protocol, SW_WIRE_PROTOCOL);
	CHECK_STR(m.client_hello.token, "sesame");
	int r2 = sw_wire_decode(dec, buf + r, (size_t)n - (size_t)r, (uint64_t)r, &m, &err);
	CHECK(r2 > 0);
	CHECK_INT(m.type, SW_MSG_CONFIG);
	CHECK_INT(m.config.threshold_ms, 100);
	sw_wire_decoder_free(dec);

	/* the stream: the hello first, then what the agent sent, with raw bytes */
	static const uint64_t frames[] = {0x1000, 0x2000};
	struct sw_wire_msg begin = {.type = SW_MSG_STALL_BEGIN};
	begin.stall_begin.stall_id = 1;
	begin.stall_begin.context = "main loop";
	put(sv[1], &begin);
	struct sw_wire_msg sample = {.type = SW_MSG_SAMPLE};
	sample.sample.stall_id = 1;
	sample.sample.thread_id = 5;
	sample.sample.depth = 2;
	sample.sample.frames = frames;
	put(sv[1], &sample);
	put(sv[1], &sample); /* compressed against the first */
	close(sv[1]);
	uint32_t want[] = {SW_MSG_HELLO, SW_MSG_STALL_BEGIN, SW_MSG_SAMPLE, SW_MSG_SAMPLE};
	for (size_t i = 0; i < 4; i++) {
		r = sw_session_next(s, &m, 1000, &err);
		CHECK_INT(r, 1);
		CHECK_INT(m.type, want[i]);
		const uint8_t *raw;
		size_t raw_len;
		sw_session_raw(s, &raw, &raw_len);
		CHECK(raw_len > 0 && raw[0] == want[i]);
		if (i >= 2) {
			CHECK_INT(m.sample.depth, 2);
			CHECK(m.sample.depth == 2 && m.sample.frames[1] == 0x2000);
		}
	}
	CHECK_INT(sw_session_next(s, &m, 1000, &err), 0);
	sw_session_free(s);
}

static int start_with(const void *bytes, size_t len, bool close_after, int timeout_ms,
		      struct sw_error *err)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct sw_session *s;
	sw_session_new(sv[0], &s);
	if (len)
		CHECK_INT(write(sv[1], bytes, len), (long long)len);
	if (close_after)
		close(sv[1]);
	struct sw_session_options o = {.hello_timeout_ms = timeout_ms};
	int r = sw_session_start(s, &o, err);
	sw_session_free(s);
	if (!close_after)
		close(sv[1]);
	return r;
}

static void failures(void)
{
	struct sw_error err = {0};
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	put_hello(sv[1], 99);
	uint8_t buf[1024];
	ssize_t n = read(sv[0], buf, sizeof(buf));
	close(sv[0]);
	close(sv[1]);
	CHECK_INT(start_with(buf, (size_t)n, true, 1000, &err), -EPROTONOSUPPORT);
	CHECK(strstr(err.msg, "protocol 99") != NULL);
	CHECK(strstr(err.msg, "newer") != NULL); /* says which side to upgrade */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	put_hello(sv[1], SW_WIRE_PROTOCOL_OLDEST - 1);
	n = read(sv[0], buf, sizeof(buf));
	close(sv[0]);
	close(sv[1]);
	CHECK_INT(start_with(buf, (size_t)n, true, 1000, &err), -EPROTONOSUPPORT);
	CHECK(strstr(err.msg, "older") != NULL);
	CHECK_INT(start_with(NULL, 0, false, 100, &err), -ETIMEDOUT);
	CHECK_INT(start_with(NULL, 0, true, 1000, &err), -ECONNRESET);
	CHECK_INT(start_with("\x01\xff\xff\xff\xff\x7f", 6, true, 1000, &err), -EBADMSG);
	CHECK_INT(start_with(buf, (size_t)n / 2, true, 1000, &err), -EBADMSG); /* cut */
	struct sw_wire_msg other = {.type = SW_MSG_GOODBYE};
	other.goodbye.text = "bye";
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	put(sv[1], &other);
	n = read(sv[0], buf, sizeof(buf));
	close(sv[0]);
	close(sv[1]);
	CHECK_INT(start_with(buf, (size_t)n, true, 1000, &err), -EBADMSG); /* not a hello */
}

int main(void)
{
	transport();
	handshake_and_stream();
	failures();
	return sw_test_end();
}
