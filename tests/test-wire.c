/*
 * Tests of the wire format: round trips of every message type, the sample
 * compression against previous stacks (several threads, evictions, names),
 * truncation at every byte offset, hostile lengths and counts, and the
 * stack table of recordings.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "test.h"
#include "wire/stalls.h"
#include "wire/wire-private.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct sw_wire_decoder *dec;
static struct sw_wire_encoder enc;

/* Encodes msg and decodes it back into out; returns the encoded size. */
static int round_trip(const struct sw_wire_msg *msg, struct sw_wire_msg *out)
{
	static uint8_t buf[SW_WIRE_MAX_MESSAGE];
	int n = sw_wire_encode(&enc, buf, sizeof(buf), msg);
	CHECK(n > 0);
	if (n <= 0)
		return n;
	struct sw_error err = {0};
	int m = sw_wire_decode(dec, buf, (size_t)n, 0, out, &err);
	if (m != n)
		fprintf(stderr, "decode: %d (%s)\n", m, sw_error_str(&err));
	CHECK_INT(m, n);
	CHECK_INT(out->type, msg->type);
	return n;
}

static void test_hello(void)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO,
				.hello = {.protocol = SW_WIRE_PROTOCOL,
					  .platform = SW_PLATFORM_IOS,
					  .agent_version = "0.1.0",
					  .arch = "arm64e",
					  .os_version = "17.4.1",
					  .device_model = "iPhone15,2",
					  .process_name = "Example",
					  .bundle_id = "com.example.app",
					  .pid = 4242,
					  .clock_numer = 125,
					  .clock_denom = 3,
					  .clock_base = 123456789012345ull,
					  .wall_ns = 1790000000000000000ull,
					  .config = {.threshold_ms = 250,
						     .interval_us = 10000,
						     .flags = SW_CONFIG_ALL_THREADS,
						     .max_depth = 512}}};
	struct sw_wire_msg out;
	round_trip(&m, &out);
	CHECK_INT(out.hello.protocol, SW_WIRE_PROTOCOL);
	CHECK_INT(out.hello.platform, SW_PLATFORM_IOS);
	CHECK_STR(out.hello.agent_version, "0.1.0");
	CHECK_STR(out.hello.arch, "arm64e");
	CHECK_STR(out.hello.os_version, "17.4.1");
	CHECK_STR(out.hello.device_model, "iPhone15,2");
	CHECK_STR(out.hello.process_name, "Example");
	CHECK_STR(out.hello.bundle_id, "com.example.app");
	CHECK_INT(out.hello.pid, 4242);
	CHECK_INT(out.hello.clock_numer, 125);
	CHECK_INT(out.hello.clock_denom, 3);
	CHECK(out.hello.clock_base == 123456789012345ull);
	CHECK(out.hello.wall_ns == 1790000000000000000ull);
	CHECK_INT(out.hello.config.threshold_ms, 250);
	CHECK_INT(out.hello.config.interval_us, 10000);
	CHECK_INT(out.hello.config.flags, SW_CONFIG_ALL_THREADS);
	CHECK_INT(out.hello.config.max_depth, 512);
	CHECK_INT(out.hello.config.present, SW_CONFIG_ALL_FIELDS);

	/* NULL strings travel as empty ones */
	m.hello.device_model = NULL;
	round_trip(&m, &out);
	CHECK_STR(out.hello.device_model, "");
	CHECK_STR(out.hello.bundle_version, "");

	m.hello.bundle_version = "2.4.1";
	round_trip(&m, &out);
	CHECK_STR(out.hello.bundle_version, "2.4.1");
	CHECK_STR(out.hello.passive, "");
}

/*
 * Rewrites a hello without its last count fields of one byte each (empty
 * strings), as an agent from before them sent it.
 */
static int older_hello(uint8_t *buf, int n, int drop)
{
	CHECK(n > 2 && n < 128 + 2); /* a one-byte length keeps the rewrite simple */
	buf[1] = (uint8_t)(buf[1] - drop);
	return n - drop;
}

/* Agents from before the trailing hello fields: readers take them as absent. */
static void test_hello_older_agents(void)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO,
				.hello = {.protocol = SW_WIRE_PROTOCOL,
					  .platform = SW_PLATFORM_LINUX,
					  .bundle_id = "app",
					  .clock_numer = 1,
					  .clock_denom = 1}};
	static uint8_t buf[256];
	for (int drop = 0; drop <= 2; drop++) {
		int n = sw_wire_encode(NULL, buf, sizeof(buf), &m);
		n = older_hello(buf, n, drop);
		struct sw_wire_msg out;
		struct sw_error err = {0};
		CHECK_INT(sw_wire_decode(dec, buf, (size_t)n, 0, &out, &err), n);
		CHECK_STR(out.hello.bundle_id, "app");
		if (drop == 0) {
			CHECK_STR(out.hello.passive, "");
			CHECK_STR(out.hello.bundle_version, "");
		} else {
			CHECK(out.hello.bundle_version == NULL);
			CHECK(drop == 1 ? out.hello.passive != NULL : out.hello.passive == NULL);
		}
	}
}

static void test_other_messages(void)
{
	struct sw_wire_msg out;
	struct sw_wire_msg m = {.type = SW_MSG_IMAGE_ADDED,
				.image = {.index = 7,
					  .load_address = 0x7f1234560000ull,
					  .text_vmaddr = 0x1000,
					  .text_size = 0x2345,
					  .id_kind = SW_ID_BUILD_ID,
					  .id_len = 20,
					  .path = "/usr/lib/libglib-2.0.so.0",
					  .arch = "x86_64"}};
	for (int i = 0; i < 20; i++)
		m.image.id[i] = (uint8_t)(i * 13 + 1);
	round_trip(&m, &out);
	CHECK_INT(out.image.index, 7);
	CHECK(out.image.load_address == 0x7f1234560000ull);
	CHECK_INT(out.image.text_vmaddr, 0x1000);
	CHECK_INT(out.image.text_size, 0x2345);
	CHECK_INT(out.image.id_kind, SW_ID_BUILD_ID);
	CHECK_INT(out.image.id_len, 20);
	CHECK(memcmp(out.image.id, m.image.id, 20) == 0);
	CHECK_STR(out.image.path, "/usr/lib/libglib-2.0.so.0");
	CHECK_STR(out.image.arch, "x86_64");
	CHECK_INT(out.image.nmore_text, 0);
	/* without further segments the body is the one of protocol 1's first agents */
	static uint8_t plain[256], more[256];
	int plain_len = sw_wire_encode(NULL, plain, sizeof(plain), &m);

	/* further executable segments: after every older field, so old readers skip them */
	m.image.nmore_text = 2;
	m.image.more_text[0] = (struct sw_wire_text_range){0x4000000, 0x69};
	m.image.more_text[1] = (struct sw_wire_text_range){0x8000000, 0x1000};
	int more_len = sw_wire_encode(NULL, more, sizeof(more), &m);
	CHECK(plain_len > 0 && more_len > plain_len);
	CHECK(memcmp(plain + 2, more + 2, (size_t)plain_len - 2) == 0);
	round_trip(&m, &out);
	CHECK_INT(out.image.nmore_text, 2);
	CHECK(out.image.more_text[0].vmaddr == 0x4000000 && out.image.more_text[0].size == 0x69);
	CHECK(out.image.more_text[1].vmaddr == 0x8000000 && out.image.more_text[1].size == 0x1000);
	m.image.nmore_text = SW_WIRE_MAX_MORE_TEXT + 1;
	CHECK(sw_wire_encode(NULL, more, sizeof(more), &m) < 0);
	m.image.nmore_text = 0;

	m = (struct sw_wire_msg){.type = SW_MSG_STALL_BEGIN,
				 .stall_begin = {3, 1234, 1000000, 251000000, "poll"}};
	round_trip(&m, &out);
	CHECK_INT(out.stall_begin.stall_id, 3);
	CHECK_INT(out.stall_begin.thread_id, 1234);
	CHECK_INT(out.stall_begin.start_time, 1000000);
	CHECK_INT(out.stall_begin.detect_time, 251000000);
	CHECK_STR(out.stall_begin.context, "poll");

	m = (struct sw_wire_msg){.type = SW_MSG_STALL_END,
				 .stall_end = {.stall_id = 3,
					       .end_time = 401000000,
					       .duration_ns = 400000000,
					       .cpu_ns = 398000000,
					       .samples = 40,
					       .dropped = 2}};
	round_trip(&m, &out);
	CHECK_INT(out.stall_end.stall_id, 3);
	CHECK_INT(out.stall_end.end_time, 401000000);
	CHECK_INT(out.stall_end.duration_ns, 400000000);
	CHECK_INT(out.stall_end.cpu_ns, 398000000);
	CHECK_INT(out.stall_end.samples, 40);
	CHECK_INT(out.stall_end.dropped, 2);
	CHECK(!out.stall_end.has_late); /* an older agent's end: no late rounds known */
	CHECK_INT(out.stall_end.late, 0);

	/* the late rounds, appended: readers before them skip them, later fields are skipped */
	m.stall_end.has_late = true;
	m.stall_end.late = 3;
	m.stall_end.late_ns = 7250000;
	uint8_t end_old[64], end_new[80];
	m.stall_end.has_late = false;
	int old_len = sw_wire_encode(NULL, end_old, sizeof(end_old), &m);
	m.stall_end.has_late = true;
	int new_len = sw_wire_encode(NULL, end_new, sizeof(end_new), &m);
	CHECK(old_len > 0 && new_len > old_len);
	CHECK(memcmp(end_old + 2, end_new + 2, (size_t)old_len - 2) == 0);
	round_trip(&m, &out);
	CHECK(out.stall_end.has_late);
	CHECK_INT(out.stall_end.late, 3);
	CHECK_INT(out.stall_end.late_ns, 7250000);
	CHECK_INT(out.stall_end.dropped, 2);
	{
		/* a newer agent's field after them is skipped */
		uint8_t newer[96];
		memcpy(newer, end_new, (size_t)new_len);
		newer[new_len] = 0x2a;
		size_t body = (size_t)new_len - 2 + 1;
		CHECK(body < 0x80 && end_new[1] == body - 1); /* one-byte length */
		newer[1] = (uint8_t)body;
		struct sw_wire_decoder *d = NULL;
		struct sw_wire_msg got;
		struct sw_error err = {0};
		CHECK(sw_wire_decoder_new(&d) == 0);
		CHECK_INT(sw_wire_decode(d, newer, (size_t)new_len + 1, 0, &got, &err),
			  new_len + 1);
		CHECK(got.stall_end.has_late && got.stall_end.late == 3 &&
		      got.stall_end.late_ns == 7250000);
		/* the second of the two cut short: an error, not a guess */
		newer[1] = (uint8_t)(body - 2);
		CHECK_INT(sw_wire_decode(d, newer, (size_t)new_len - 1, 0, &got, &err), -EBADMSG);
		sw_wire_decoder_free(d);
	}

	m = (struct sw_wire_msg){
	    .type = SW_MSG_STATS,
	    .stats = {.samples = 100, .dropped = 5, .stalls = 3, .agent_cpu_ns = 12345678}};
	round_trip(&m, &out);
	CHECK_INT(out.stats.samples, 100);
	CHECK_INT(out.stats.dropped, 5);
	CHECK_INT(out.stats.stalls, 3);
	CHECK_INT(out.stats.agent_cpu_ns, 12345678);

	m = (struct sw_wire_msg){.type = SW_MSG_SYMBOL_HINT,
				 .symbol_hint = {2, 0x1f00, 0x40, "-[UIView layoutSubviews]"}};
	round_trip(&m, &out);
	CHECK_INT(out.symbol_hint.image_index, 2);
	CHECK_INT(out.symbol_hint.offset, 0x1f00);
	CHECK_INT(out.symbol_hint.size, 0x40);
	CHECK_STR(out.symbol_hint.name, "-[UIView layoutSubviews]");

	m = (struct sw_wire_msg){.type = SW_MSG_IMAGE_REMOVED, .image_removed = {9}};
	round_trip(&m, &out);
	CHECK_INT(out.image_removed.index, 9);

	m = (struct sw_wire_msg){.type = SW_MSG_GOODBYE,
				 .goodbye = {SW_GOODBYE_TOKEN, "bad token"}};
	round_trip(&m, &out);
	CHECK_INT(out.goodbye.reason, SW_GOODBYE_TOKEN);
	CHECK_STR(out.goodbye.text, "bad token");

	m = (struct sw_wire_msg){.type = SW_MSG_CONFIG_REPLY,
				 .config_reply = {false,
						  "interval below 1 ms",
						  {SW_CONFIG_ALL_FIELDS, 250, 10000, 0, 512}}};
	round_trip(&m, &out);
	CHECK(!out.config_reply.accepted);
	CHECK_STR(out.config_reply.reason, "interval below 1 ms");
	CHECK_INT(out.config_reply.config.interval_us, 10000);

	m = (struct sw_wire_msg){.type = SW_MSG_CLIENT_HELLO,
				 .client_hello = {SW_WIRE_PROTOCOL, "s3cret", "0.1.0"}};
	round_trip(&m, &out);
	CHECK_INT(out.client_hello.protocol, SW_WIRE_PROTOCOL);
	CHECK_STR(out.client_hello.token, "s3cret");
	CHECK_STR(out.client_hello.client_version, "0.1.0");

	m = (struct sw_wire_msg){.type = SW_MSG_CONFIG,
				 .config = {SW_CONFIG_HAS_INTERVAL, 0, 2000, 0, 0}};
	round_trip(&m, &out);
	CHECK_INT(out.config.present, SW_CONFIG_HAS_INTERVAL);
	CHECK_INT(out.config.interval_us, 2000);

	m = (struct sw_wire_msg){.type = SW_MSG_RECORD_INFO, .record_info = {"udid", "0000-1"}};
	round_trip(&m, &out);
	CHECK_STR(out.record_info.key, "udid");
	CHECK_STR(out.record_info.value, "0000-1");
}

/* A stack that shares a random-length root part with a few variants. */
static uint32_t make_stack(uint64_t *frames, uint32_t variant)
{
	static const uint64_t roots[6] = {0x555555554000ull, 0x555555555100ull, 0x7ffff7a01000ull,
					  0x7ffff7a02200ull, 0x7ffff7c40000ull, 0x7ffff7c41000ull};
	uint32_t depth = 6 + (uint32_t)(rnd() % 58); /* callers hold 64 */
	for (uint32_t i = 0; i < depth; i++) {
		uint32_t from_root = depth - 1 - i;
		if (from_root < 6)
			frames[i] = roots[from_root];
		else
			frames[i] = 0x555555560000ull + from_root * 0x40 + variant * (i < 4);
	}
	frames[0] += rnd() % 64; /* the program counter wanders */
	return depth;
}

static void check_sample(uint64_t stall, uint64_t tid, const char *name, const uint64_t *frames,
			 uint32_t depth, uint32_t flags)
{
	struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
				.sample = {.stall_id = stall,
					   .time = stall * 1000 + depth,
					   .thread_id = tid,
					   .thread_name = name,
					   .flags = flags,
					   .depth = depth,
					   .frames = frames}};
	struct sw_wire_msg out;
	round_trip(&m, &out);
	CHECK_INT(out.sample.stall_id, stall);
	CHECK_INT(out.sample.time, stall * 1000 + depth);
	CHECK_INT(out.sample.thread_id, tid);
	CHECK_INT(out.sample.flags, flags);
	CHECK_INT(out.sample.depth, depth);
	CHECK(depth == 0 || memcmp(out.sample.frames, frames, depth * sizeof(*frames)) == 0);
	if (name)
		CHECK_STR(out.sample.thread_name, name);
}

static void test_samples(void)
{
	static uint8_t buf[SW_WIRE_MAX_MESSAGE];
	uint64_t frames[SW_WIRE_MAX_FRAMES];
	char names[100][16];
	for (int i = 0; i < 100; i++)
		snprintf(names[i], sizeof(names[i]), "worker-%d", i);

	/* 100 threads interleaved: more than the encoder keeps, fewer than the decoder */
	for (int round = 0; round < 5000; round++) {
		uint64_t tid = 1000 + rnd() % 100;
		uint32_t depth = make_stack(frames, (uint32_t)(rnd() % 3));
		const char *name = rnd() % 4 ? names[tid - 1000] : NULL;
		check_sample((uint64_t)round / 100, tid, name, frames, depth,
			     (uint32_t)(rnd() % 32));
	}

	/* a name sent once is remembered by the decoder */
	uint32_t depth = make_stack(frames, 0);
	check_sample(1, 5, "renderer", frames, depth, 0);
	struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
				.sample = {.thread_id = 5, .depth = depth, .frames = frames}},
			   out;
	round_trip(&m, &out);
	CHECK_STR(out.sample.thread_name, "renderer");

	/* both ends of a deep stack: the count of frames left out rides along */
	memset(&out, 0x5a, sizeof(out));
	m.sample.flags = SW_SAMPLE_ELIDED | SW_SAMPLE_COPY_SHORT | SW_SAMPLE_CFI;
	m.sample.elided = 2497;
	m.sample.elided_at = depth - 1;
	round_trip(&m, &out);
	CHECK_INT(out.sample.flags, SW_SAMPLE_ELIDED | SW_SAMPLE_COPY_SHORT | SW_SAMPLE_CFI);
	CHECK_INT(out.sample.elided, 2497);
	CHECK_INT(out.sample.elided_at, depth - 1);
	CHECK_INT(out.sample.depth, depth);
	m.sample.flags = 0;
	memset(&out, 0x5a, sizeof(out));
	round_trip(&m, &out);
	CHECK_INT(out.sample.flags, 0);
	CHECK_INT(out.sample.elided, 0);
	m.sample.flags = SW_SAMPLE_ELIDED;
	m.sample.elided_at = depth + 1; /* past the stack */
	CHECK_INT(sw_wire_encode(&enc, buf, sizeof(buf), &m), -EINVAL);
	m.sample.flags = 0;
	m.sample.elided = 0;
	m.sample.elided_at = 0;

	/* empty, maximal and deeper-than-the-encoder-keeps stacks */
	check_sample(2, 6, NULL, frames, 0, SW_SAMPLE_TRUNCATED);
	for (uint32_t i = 0; i < SW_WIRE_MAX_FRAMES; i++)
		frames[i] = rnd();
	check_sample(2, 6, NULL, frames, SW_WIRE_MAX_FRAMES, 0);
	check_sample(2, 6, NULL, frames, SW_WIRE_MAX_FRAMES, 0);
	check_sample(2, 6, NULL, frames + 1, SW_WIRE_ENCODER_FRAMES, 0);
	check_sample(2, 6, NULL, frames + 2, SW_WIRE_ENCODER_FRAMES, 0);

	/* deltas of every length, one to ten bytes, both signs, at every place in a word */
	for (uint32_t shift = 0; shift < 8; shift++) {
		uint64_t f = 0x7f0000000000ull;
		for (uint32_t i = 0; i < 200; i++) {
			uint64_t d = (1ull << ((i * 7 + shift) % 64)) - (i % 3);
			f = i % 2 ? f - d : f + d;
			frames[i] = f;
		}
		check_sample(3, 7, NULL, frames + shift, 200 - shift, 0);
	}

	/* over the limit */
	m.sample.depth = SW_WIRE_MAX_FRAMES + 1;
	CHECK_INT(sw_wire_encode(&enc, buf, sizeof(buf), &m), -EINVAL);
}

/* Repeated stacks must cost far less than their raw size. */
static void test_compression(void)
{
	uint64_t frames[64];
	static uint8_t buf[1 << 16];
	sw_wire_encoder_reset(&enc);
	size_t bytes = 0, nframes = 0;
	for (int i = 0; i < 1000; i++) {
		uint32_t depth = make_stack(frames, (uint32_t)(i % 3));
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.stall_id = 1,
						   .time = 1000000000ull + i * 10000000ull,
						   .thread_id = 4321,
						   .depth = depth,
						   .frames = frames}};
		int n = sw_wire_encode(&enc, buf, sizeof(buf), &m);
		CHECK(n > 0);
		bytes += (size_t)n;
		nframes += depth;
	}
	printf("compression: %.2f bytes per frame\n", (double)bytes / (double)nframes);
	CHECK(bytes * 2 < nframes * 8);
}

/* -ENOSPC leaves the encoder as it was, so a retry with room decodes. */
static void test_nospace(void)
{
	uint64_t frames[64];
	uint8_t small[6];
	static uint8_t buf[4096];
	uint32_t depth = make_stack(frames, 0);
	struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
				.sample = {.thread_id = 77, .depth = depth, .frames = frames}},
			   out;
	round_trip(&m, &out);
	frames[0] += 4;
	CHECK_INT(sw_wire_encode(&enc, small, sizeof(small), &m), -ENOSPC);
	int n = sw_wire_encode(&enc, buf, sizeof(buf), &m);
	struct sw_error err = {0};
	CHECK_INT(sw_wire_decode(dec, buf, (size_t)n, 0, &out, &err), n);
	CHECK(memcmp(out.sample.frames, frames, depth * 8) == 0);

	/* a sample encoded but never delivered: forget, and the next goes whole */
	frames[0] += 4;
	CHECK(sw_wire_encode(&enc, buf, sizeof(buf), &m) > 0);
	sw_wire_encoder_forget(&enc, 77);
	frames[0] += 4;
	n = sw_wire_encode(&enc, buf, sizeof(buf), &m);
	CHECK_INT(sw_wire_decode(dec, buf, (size_t)n, 0, &out, &err), n);
	CHECK(memcmp(out.sample.frames, frames, depth * 8) == 0);
}

/* Builds a stream of every kind of message into buf; returns its length. */
static size_t build_stream(uint8_t *buf, size_t cap, size_t *ret_count)
{
	uint64_t frames[64];
	size_t len = 0, count = 0;
	sw_wire_encoder_reset(&enc);
	struct sw_wire_msg msgs[] = {
	    {.type = SW_MSG_HELLO, .hello = {.protocol = 1, .agent_version = "x", .pid = 9}},
	    {.type = SW_MSG_IMAGE_ADDED, .image = {.index = 1, .path = "/bin/app"}},
	    {.type = SW_MSG_STALL_BEGIN, .stall_begin = {1, 2, 3, 4, "poll"}},
	};
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++, count++)
		len += (size_t)sw_wire_encode(&enc, buf + len, cap - len, &msgs[i]);
	for (int i = 0; i < 30; i++, count++) {
		uint32_t depth = make_stack(frames, (uint32_t)i % 2);
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.stall_id = 1,
						   .time = (uint64_t)i,
						   .thread_id = 2 + (uint64_t)i % 3,
						   .thread_name = "main",
						   .depth = depth,
						   .frames = frames}};
		len += (size_t)sw_wire_encode(&enc, buf + len, cap - len, &m);
	}
	struct sw_wire_msg end = {
	    .type = SW_MSG_STALL_END,
	    .stall_end = {
		.stall_id = 1, .end_time = 5, .duration_ns = 6, .cpu_ns = 7, .samples = 30}};
	len += (size_t)sw_wire_encode(&enc, buf + len, cap - len, &end);
	count++;
	*ret_count = count;
	return len;
}

/* Decodes a whole prefix; returns messages decoded, or -1 on an error. */
static int decode_all(const uint8_t *buf, size_t len, size_t *ret_used)
{
	size_t pos = 0;
	int count = 0;
	struct sw_wire_msg m;
	struct sw_error err = {0};
	sw_wire_decoder_reset(dec);
	for (;;) {
		int n = sw_wire_decode(dec, buf + pos, len - pos, pos, &m, &err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		pos += (size_t)n;
		count++;
	}
	*ret_used = pos;
	return count;
}

static void test_truncation(void)
{
	static uint8_t buf[1 << 16];
	size_t count;
	size_t len = build_stream(buf, sizeof(buf), &count);
	size_t used = 0;
	CHECK_INT(decode_all(buf, len, &used), count);
	CHECK_INT(used, len);

	/* message boundaries, to know how many whole messages each prefix holds */
	size_t bounds[256], nb = 0, pos = 0;
	struct sw_wire_msg m;
	sw_wire_decoder_reset(dec);
	while (pos < len) {
		int n = sw_wire_decode(dec, buf + pos, len - pos, pos, &m, NULL);
		pos += (size_t)n;
		bounds[nb++] = pos;
	}
	int bad = 0;
	for (size_t cut = 0; cut <= len; cut++) {
		size_t whole = 0;
		while (whole < nb && bounds[whole] <= cut)
			whole++;
		int got = decode_all(buf, cut, &used);
		if (got != (int)whole || used != (whole ? bounds[whole - 1] : 0))
			bad++;
	}
	CHECK_INT(bad, 0);
}

static void expect_error(const uint8_t *buf, size_t len, const char *needle)
{
	struct sw_wire_msg m;
	struct sw_error err = {0};
	sw_wire_decoder_reset(dec);
	int n = sw_wire_decode(dec, buf, len, 100, &m, &err);
	CHECK_INT(n, -EBADMSG);
	CHECK(strstr(sw_error_str(&err), needle) != NULL);
	CHECK(strstr(sw_error_str(&err), "offset 1") != NULL);
	if (!strstr(sw_error_str(&err), needle))
		fprintf(stderr, "  got: %s\n", sw_error_str(&err));
}

/* Encodes m with e and decodes it with d: the decoder's answer (the size, or an error). */
static int table_trip(struct sw_wire_encoder *e, struct sw_wire_decoder *d,
		      const struct sw_wire_msg *m, struct sw_wire_msg *out, struct sw_error *err)
{
	static uint8_t buf[SW_WIRE_MAX_MESSAGE];
	int n = sw_wire_encode(e, buf, sizeof(buf), m);
	CHECK(n > 0);
	return n > 0 ? sw_wire_decode(d, buf, (size_t)n, 1000, out, err) : n;
}

/* A sample of tid with frames, adding (add) or naming table entry table, or neither (0). */
static struct sw_wire_msg table_sample(uint64_t tid, const uint64_t *frames, uint32_t depth,
				       uint32_t table, bool add)
{
	return (struct sw_wire_msg){.type = SW_MSG_SAMPLE,
				    .sample = {.stall_id = 1,
					       .time = 7,
					       .thread_id = tid,
					       .depth = depth,
					       .frames = frames,
					       .table = table,
					       .table_add = add}};
}

/*
 * Samples that add stacks to a recording's table and name them after, on
 * several threads: each decodes to its frames, its entry and the entry's
 * hash, and a thread's next stack is compressed against the entry it named.
 */
static void test_table(void)
{
	struct sw_wire_decoder *td;
	CHECK_INT(sw_wire_decoder_new(&td), 0);
	sw_wire_decoder_use_table(td);
	static struct sw_wire_encoder e;
	sw_wire_encoder_reset(&e);
	uint64_t a[64], b[64], c[64];
	uint32_t na = make_stack(a, 1), nb = make_stack(b, 2);
	memcpy(c, a, sizeof(c));
	c[0] += 4; /* a's caller, another line */
	struct {
		uint64_t tid;
		const uint64_t *frames;
		uint32_t depth, table;
		bool add;
	} steps[] = {
	    {1, a, na, 1, true},  {2, b, nb, 2, true},  {2, a, na, 1, false},
	    {2, c, na, 0, false}, {1, b, nb, 2, false}, {1, b, nb, 2, false},
	    {3, a, na, 1, false}, {3, c, na, 3, true},  {2, c, na, 3, false},
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct sw_wire_msg m = table_sample(steps[i].tid, steps[i].frames, steps[i].depth,
						    steps[i].table, steps[i].add),
				   out;
		struct sw_error err = {0};
		int n = table_trip(&e, td, &m, &out, &err);
		CHECK(n > 0);
		if (n <= 0) {
			fprintf(stderr, "step %zu: %s\n", i, sw_error_str(&err));
			continue;
		}
		CHECK_INT(out.sample.depth, steps[i].depth);
		CHECK(!memcmp(out.sample.frames, steps[i].frames, steps[i].depth * sizeof(a[0])));
		CHECK_INT(out.sample.table, steps[i].table);
		CHECK_INT(out.sample.table_add, steps[i].add);
		CHECK_INT(out.sample.table_hash,
			  steps[i].table ? sw_stalls_stack_hash(steps[i].frames, steps[i].depth)
					 : 0);
		CHECK_INT(out.sample.rest_len, 0);
		/* a name costs a few bytes where the frames cost hundreds */
		if (steps[i].table && !steps[i].add)
			CHECK(n < 16);
		/* the stack after an entry is sent as its difference from the entry */
		if (i == 3)
			CHECK(n < 24);
	}

	/* bytes a newer writer appended come back, and go out again */
	static uint8_t buf[SW_WIRE_MAX_MESSAGE];
	struct sw_wire_msg m = table_sample(1, a, na, 1, false), out;
	m.sample.rest = (const uint8_t *)"\x05\x06\x07";
	m.sample.rest_len = 3;
	int n = sw_wire_encode(&e, buf, sizeof(buf), &m);
	CHECK_INT(sw_wire_decode(td, buf, (size_t)n, 0, &out, NULL), n);
	CHECK_INT(out.sample.rest_len, 3);
	CHECK(out.sample.rest_len == 3 && !memcmp(out.sample.rest, "\x05\x06\x07", 3));
	CHECK_INT(out.sample.table, 1);

	/* outside a recording with a table, the same message is refused */
	struct sw_error err = {0};
	sw_wire_decoder_reset(dec);
	CHECK_INT(sw_wire_decode(dec, buf, (size_t)n, 500, &out, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "stack table entry outside") != NULL);
	CHECK(strstr(sw_error_str(&err), "offset 5") != NULL);

	/* an entry not sent yet, and one whose depth is not the sample's */
	m = table_sample(1, a, na, 9, false);
	CHECK_INT(table_trip(&e, td, &m, &out, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "stack table entry out of range") != NULL);
	m = table_sample(1, a, na - 1, 1, false);
	CHECK_INT(table_trip(&e, td, &m, &out, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "frame count unlike") != NULL);

	/* an entry named beside frames relative to the previous stack (flags 0x2200) */
	m = table_sample(1, a, na, 1, false);
	m.sample.thread_id = 5; /* one byte, like the stall and the time */
	n = sw_wire_encode(&e, buf, sizeof(buf), &m);
	CHECK_INT(buf[5] | buf[6] << 7, SW_SAMPLE_WIRE_TABLE_REF | 0x80);
	buf[6] |= SW_SAMPLE_WIRE_REF >> 7;
	CHECK_INT(sw_wire_decode(td, buf, (size_t)n, 0, &out, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "named beside frames") != NULL);
	sw_wire_decoder_free(td);
}

/* A table takes SW_WIRE_TABLE_MAX_FRAMES frames and SW_WIRE_TABLE_MAX_STACKS stacks, no more. */
static void test_table_limits(void)
{
	static uint64_t deep[SW_WIRE_MAX_FRAMES];
	static struct sw_wire_encoder e;
	struct sw_wire_decoder *td;
	struct sw_wire_msg out;
	struct sw_error err = {0};
	for (int limit = 0; limit < 2; limit++) {
		CHECK_INT(sw_wire_decoder_new(&td), 0);
		sw_wire_decoder_use_table(td);
		sw_wire_encoder_reset(&e);
		uint32_t depth = limit == 0 ? SW_WIRE_MAX_FRAMES : 1;
		uint32_t count = limit == 0 ? SW_WIRE_TABLE_MAX_FRAMES / SW_WIRE_MAX_FRAMES
					    : SW_WIRE_TABLE_MAX_STACKS;
		int bad = 0;
		for (uint32_t i = 0; i < count; i++) {
			for (uint32_t k = 0; k < depth; k++)
				deep[k] = 0x400000 + k * 16 + i;
			struct sw_wire_msg m = table_sample(1, deep, depth, i + 1, true);
			if (table_trip(&e, td, &m, &out, &err) <= 0 || out.sample.table != i + 1)
				bad++;
		}
		CHECK_INT(bad, 0);
		deep[0] = 1;
		struct sw_wire_msg m = table_sample(1, deep, 1, count + 1, true);
		CHECK_INT(table_trip(&e, td, &m, &out, &err), -EBADMSG);
		CHECK(strstr(sw_error_str(&err), "stack table past its limit") != NULL);
		sw_wire_decoder_free(td);
	}
}

static void test_hostile(void)
{
	/* length over the limit, and a length that does not end */
	expect_error((const uint8_t[]){SW_MSG_SAMPLE, 0xff, 0xff, 0x7f}, 4, "over the limit");
	expect_error((const uint8_t[]){SW_MSG_SAMPLE, 0xff, 0xff, 0xff, 0x01}, 5, "length");
	/* a string longer than its body */
	expect_error((const uint8_t[]){SW_MSG_GOODBYE, 3, 0, 50, 'a'}, 5, "truncated string");
	/* a number running off the body */
	expect_error((const uint8_t[]){SW_MSG_STATS, 2, 0x80, 0x80}, 4, "truncated number");
	/* too many frames */
	expect_error((const uint8_t[]){SW_MSG_SAMPLE, 7, 1, 1, 1, 0, 0x81, 0x40, 0}, 9,
		     "too many frames");
	/* a reference to a stack never sent */
	expect_error((const uint8_t[]){SW_MSG_SAMPLE, 7, 1, 1, 1, 0x80, 0x04, 1, 0}, 9,
		     "unknown previous stack");
	/* a hello without its magic */
	expect_error((const uint8_t[]){SW_MSG_HELLO, 4, 'S', 'W', 'A', 'X'}, 6, "bad magic");
	/* shared frames beyond the previous stack */
	{
		static uint8_t buf[256];
		uint64_t f[2] = {1, 2};
		sw_wire_encoder_reset(&enc);
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.thread_id = 1, .depth = 2, .frames = f}};
		int n = sw_wire_encode(&enc, buf, sizeof(buf), &m);
		uint8_t bad[] = {SW_MSG_SAMPLE, 7, 0, 0, 1, 0x80, 0x04, 5, 5};
		memcpy(buf + n, bad, sizeof(bad));
		struct sw_wire_msg out;
		struct sw_error err = {0};
		sw_wire_decoder_reset(dec);
		CHECK_INT(sw_wire_decode(dec, buf, (size_t)n, 0, &out, &err), n);
		CHECK_INT(sw_wire_decode(dec, buf + n, sizeof(bad), (uint64_t)n, &out, &err),
			  -EBADMSG);
		CHECK(strstr(sw_error_str(&err), "shared frame count") != NULL);
	}

	/* unknown types are skipped by their length */
	uint8_t unknown[] = {200, 3, 1, 2, 3, SW_MSG_IMAGE_REMOVED, 1, 4};
	struct sw_wire_msg m;
	CHECK_INT(sw_wire_decode(dec, unknown, sizeof(unknown), 0, &m, NULL), 5);
	CHECK_INT(m.type, 200);
	CHECK_INT(sw_wire_decode(dec, unknown + 5, 3, 5, &m, NULL), 3);
	CHECK_INT(m.image_removed.index, 4);

	/* a known message with trailing newer fields reads fine */
	uint8_t longer[] = {SW_MSG_IMAGE_REMOVED, 3, 9, 0xaa, 0xbb};
	CHECK_INT(sw_wire_decode(dec, longer, sizeof(longer), 0, &m, NULL), 5);
	CHECK_INT(m.image_removed.index, 9);

	/* random garbage never crashes and never claims more than it was given */
	static uint8_t junk[4096];
	for (int round = 0; round < 20000; round++) {
		size_t len = 1 + rnd() % sizeof(junk);
		for (size_t i = 0; i < len; i++)
			junk[i] = (uint8_t)rnd();
		junk[0] = (uint8_t)(1 + rnd() % 12);
		if (len > 2)
			junk[1] &= 0x7f;
		int n = sw_wire_decode(dec, junk, len, 0, &m, NULL);
		CHECK(n <= (int)len);
	}
}

int main(void)
{
	if (sw_wire_decoder_new(&dec) < 0)
		return 1;
	sw_wire_encoder_reset(&enc);
	test_hello();
	test_hello_older_agents();
	test_other_messages();
	test_samples();
	test_compression();
	test_nospace();
	test_truncation();
	test_hostile();
	test_table();
	test_table_limits();
	sw_wire_decoder_free(dec);
	return sw_test_end();
}
