/*
 * Tests of .swtrace recordings: write and read back, a cut at every byte
 * yields every whole message before it plus a warning, and bad headers give
 * errors that say what is wrong.  Samples written through the stack table
 * read back as they were sent, cut or whole, before and past its room.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/recording.h"
#include "wire/stalls.h"
#include "test.h"

static char dir[] = "/tmp/sw-test-recording-XXXXXX";
static char path[256];

static void write_file(const char *p, const void *data, size_t len)
{
	FILE *f = fopen(p, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_INT(fwrite(data, 1, len, f), len);
	fclose(f);
}

static uint8_t *read_file(const char *p, size_t *ret_len)
{
	FILE *f = fopen(p, "rb");
	static uint8_t data[1 << 20];
	*ret_len = f ? fread(data, 1, sizeof(data), f) : 0;
	if (f)
		fclose(f);
	return data;
}

/* Writes a recording of a hello, a stall with samples and an info line. */
static int write_recording(const char *p)
{
	struct sw_recording_writer *w;
	struct sw_error err = {0};
	CHECK_INT(sw_recording_writer_open(p, &w, &err), 0);
	CHECK_INT(sw_recording_writer_info(w, "label", "run1"), 0);

	static struct sw_wire_encoder enc;
	sw_wire_encoder_reset(&enc);
	uint8_t buf[4096];
	int count = 1;
	struct sw_wire_msg hello = {.type = SW_MSG_HELLO,
				    .hello = {.protocol = SW_WIRE_PROTOCOL, .pid = 42}};
	int n = sw_wire_encode(&enc, buf, sizeof(buf), &hello);
	sw_recording_writer_write(w, buf, (size_t)n);
	count++;
	for (int i = 0; i < 50; i++) {
		uint64_t frames[8] = {0x1000 + (uint64_t)i, 0x2000, 0x3000, 0x4000};
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.stall_id = 1,
						   .time = (uint64_t)i * 10,
						   .thread_id = 42,
						   .thread_name = "main",
						   .depth = 4,
						   .frames = frames}};
		n = sw_wire_encode(&enc, buf, sizeof(buf), &m);
		sw_recording_writer_write(w, buf, (size_t)n);
		count++;
	}
	CHECK_INT(sw_recording_writer_close(w, &err), 0);
	return count;
}

/* Reads a whole recording; returns messages read, or the error. */
static int read_recording(const char *p, const char **ret_warning, struct sw_error *err)
{
	struct sw_recording *rec;
	int r = sw_recording_open(p, &rec, err);
	if (r < 0)
		return r;
	struct sw_wire_msg m;
	int count = 0, expect_time = 0;
	while ((r = sw_recording_next(rec, &m, err)) == 1) {
		if (m.type == SW_MSG_SAMPLE) {
			CHECK_INT(m.sample.time, expect_time);
			CHECK_INT(m.sample.frames[0], 0x1000 + expect_time / 10);
			CHECK_INT(m.sample.frames[3], 0x4000);
			CHECK_STR(m.sample.thread_name, "main");
			expect_time += 10;
		}
		count++;
	}
	static char warning[256];
	const char *w = sw_recording_warning(rec);
	snprintf(warning, sizeof(warning), "%s", w ? w : "");
	*ret_warning = w ? warning : NULL;
	sw_recording_free(rec);
	return r < 0 ? r : count;
}

static void test_round_trip(void)
{
	int written = write_recording(path);
	const char *warning;
	struct sw_error err = {0};
	CHECK_INT(read_recording(path, &warning, &err), written);
	CHECK(warning == NULL);
}

/* Bytes a caller read to sniff the file, handed back, read as if never taken. */
static void test_sniffed(void)
{
	struct sw_recording *rec;
	struct sw_error err = {0};
	struct sw_wire_msg m;
	CHECK_INT(sw_recording_open(path, &rec, &err), 0);
	int whole = 0;
	while (sw_recording_next(rec, &m, &err) == 1)
		whole++;
	uint64_t last = sw_recording_offset(rec);
	sw_recording_free(rec);
	static const size_t sniffed[] = {0, 1, 8, SW_RECORDING_HEADER_SIZE};
	for (size_t i = 0; i < sizeof(sniffed) / sizeof(sniffed[0]); i++) {
		uint8_t head[SW_RECORDING_HEADER_SIZE];
		int fd = open(path, O_RDONLY);
		CHECK(fd >= 0 && read(fd, head, sniffed[i]) == (ssize_t)sniffed[i]);
		CHECK_INT(sw_recording_open_sniffed(fd, head, sniffed[i], &rec, &err), 0);
		int n = 0;
		while (sw_recording_next(rec, &m, &err) == 1)
			n++;
		CHECK_INT(n, whole);
		CHECK_INT(sw_recording_offset(rec), last);
		CHECK(sw_recording_warning(rec) == NULL);
		sw_recording_free(rec);
	}
	uint8_t more[SW_RECORDING_HEADER_SIZE + 1] = {0};
	CHECK_INT(sw_recording_open_sniffed(open(path, O_RDONLY), more, sizeof(more), &rec, &err),
		  -EINVAL);
}

static void test_every_cut(void)
{
	size_t len;
	uint8_t *data = read_file(path, &len);
	uint8_t *copy = malloc(len);
	memcpy(copy, data, len);
	char cut_path[300];
	snprintf(cut_path, sizeof(cut_path), "%s/cut.swtrace", dir);

	/* whole messages, from a full read */
	struct sw_recording *rec;
	struct sw_error err = {0};
	CHECK_INT(sw_recording_open(path, &rec, &err), 0);
	size_t nends = 0;
	struct sw_wire_msg m;
	while (sw_recording_next(rec, &m, &err) == 1)
		nends++;
	sw_recording_free(rec);

	int bad = 0, warned = 0;
	for (size_t cut = SW_RECORDING_HEADER_SIZE; cut <= len; cut++) {
		write_file(cut_path, copy, cut);
		const char *warning;
		int got = read_recording(cut_path, &warning, &err);
		if (got < 0) {
			bad++;
			continue;
		}
		/* every message before the cut, and a warning exactly when inside one */
		if (warning) {
			warned++;
			if (!strstr(warning, "offset"))
				bad++;
		}
		if (cut == len && (warning || got != (int)nends))
			bad++;
	}
	CHECK_INT(bad, 0);
	CHECK(warned > 0);
	free(copy);
}

/* The count of messages read must grow by one at each message boundary. */
static void test_cut_counts(void)
{
	size_t len;
	uint8_t *data = read_file(path, &len);
	uint8_t *copy = malloc(len);
	memcpy(copy, data, len);
	char cut_path[300];
	snprintf(cut_path, sizeof(cut_path), "%s/cut2.swtrace", dir);
	int previous = 0, decreases = 0, jumps = 0;
	for (size_t cut = SW_RECORDING_HEADER_SIZE; cut <= len; cut++) {
		write_file(cut_path, copy, cut);
		const char *warning;
		struct sw_error err = {0};
		int got = read_recording(cut_path, &warning, &err);
		if (got < previous)
			decreases++;
		if (got > previous + 1)
			jumps++;
		/* a prefix that ends on a boundary has no warning */
		if (got == previous + 1 && warning)
			jumps++;
		previous = got;
	}
	CHECK_INT(decreases, 0);
	CHECK_INT(jumps, 0);
	free(copy);
}

static void test_bad_headers(void)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/bad.swtrace", dir);
	const char *warning;
	struct sw_error err = {0};

	write_file(p, "hello world, not a trace", 24);
	CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "not a stallwatch recording") != NULL);

	write_file(p, "SWTRACE\0\1\0", 10);
	CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "truncated header") != NULL);

	/* an empty file, a cut magic, and a compressed recording say what they are */
	write_file(p, "", 0);
	CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "empty") != NULL);
	write_file(p, "SWTR", 4);
	CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "truncated header") != NULL);
	static const struct {
		const char *magic;
		size_t len;
		const char *tool;
	} packed[] = {{"\x1f\x8b\x08\0\0\0\0\0\0\x03", 10, "gunzip"},
		      {"\x28\xb5\x2f\xfd\0\0\0\0\0\0", 10, "unzstd"},
		      {"\xfd\x37\x7a\x58\x5a\0\0\0\0\0", 10, "unxz"},
		      {"BZh91AY&SY", 10, "bunzip2"}};
	for (size_t i = 0; i < sizeof(packed) / sizeof(packed[0]); i++) {
		write_file(p, packed[i].magic, packed[i].len);
		CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
		CHECK(strstr(sw_error_str(&err), "compressed") != NULL);
		CHECK(strstr(sw_error_str(&err), packed[i].tool) != NULL);
	}

	uint8_t v9[16] = "SWTRACE";
	v9[8] = 9;
	v9[10] = 16;
	write_file(p, v9, sizeof(v9));
	CHECK_INT(read_recording(p, &warning, &err), -EPROTONOSUPPORT);
	CHECK(strstr(sw_error_str(&err), "version 9") != NULL);
	CHECK(strstr(sw_error_str(&err), "newer") != NULL);

	/* a longer header from a later writer is skipped */
	uint8_t longer[24 + 3] = "SWTRACE";
	longer[8] = 1;
	longer[10] = 24;
	longer[24] = SW_MSG_IMAGE_REMOVED;
	longer[25] = 1;
	longer[26] = 3;
	write_file(p, longer, sizeof(longer));
	CHECK_INT(read_recording(p, &warning, &err), 1);

	/* a corrupt message names its offset */
	uint8_t corrupt[16 + 4] = "SWTRACE";
	corrupt[8] = 1;
	corrupt[10] = 16;
	memcpy(corrupt + 16, (uint8_t[]){SW_MSG_SAMPLE, 0xff, 0xff, 0x7f}, 4);
	write_file(p, corrupt, sizeof(corrupt));
	CHECK_INT(read_recording(p, &warning, &err), -EBADMSG);
	CHECK(strstr(sw_error_str(&err), "offset 17") != NULL);

	CHECK_INT(read_recording("/nonexistent/x.swtrace", &warning, &err), -ENOENT);
}

/*
 * What a table recording holds: two connections of three threads whose
 * samples draw on eight stacks (one elided, one empty), each thread adding
 * several, the second connection naming stacks the first added.
 */
#define TABLE_MSGS 64
static struct sw_wire_msg table_msgs[TABLE_MSGS];
static uint64_t table_frames[8][12];
static uint32_t table_depth[8] = {12, 9, 12, 3, 5, 12, 7, 0};

static size_t make_table_msgs(void)
{
	for (int k = 0; k < 8; k++)
		for (uint32_t i = 0; i < table_depth[k]; i++)
			table_frames[k][i] = 0x7f0000001000 + 0x100 * (uint64_t)(i + k * (i < 2));
	size_t n = 0;
	for (int conn = 0; conn < 2; conn++) {
		table_msgs[n++] =
		    (struct sw_wire_msg){.type = SW_MSG_HELLO,
					 .hello = {.protocol = SW_WIRE_PROTOCOL, .pid = 42 + conn}};
		table_msgs[n++] = (struct sw_wire_msg){
		    .type = SW_MSG_STALL_BEGIN, .stall_begin = {.stall_id = 1, .thread_id = 1}};
		for (int i = 0; i < 20; i++) {
			int k = conn ? (i * 7 + 3) % 4 : (i * 3) % 8;
			struct sw_wire_sample s = {.stall_id = 1,
						   .time = (uint64_t)(conn * 100 + i),
						   .thread_id = 1 + (uint64_t)(i % 3),
						   .thread_name = i % 3 ? "worker" : "main",
						   .depth = table_depth[k],
						   .frames = table_frames[k]};
			if (k == 2) {
				s.flags = SW_SAMPLE_ELIDED;
				s.elided = 500;
				s.elided_at = 6;
			}
			table_msgs[n++] = (struct sw_wire_msg){.type = SW_MSG_SAMPLE, .sample = s};
		}
		table_msgs[n++] = (struct sw_wire_msg){
		    .type = SW_MSG_STALL_END, .stall_end = {.stall_id = 1, .end_time = 99}};
	}
	return n;
}

/* Writes the messages through the table, or encoded as the agent sends them (raw). */
static void write_table_recording(const char *p, size_t n, bool raw)
{
	struct sw_recording_writer *w;
	struct sw_error err = {0};
	CHECK_INT(sw_recording_writer_open(p, &w, &err), 0);
	static struct sw_wire_encoder enc;
	static uint8_t buf[65536];
	for (size_t i = 0; i < n; i++) {
		if (table_msgs[i].type == SW_MSG_HELLO)
			sw_wire_encoder_reset(&enc);
		int len = sw_wire_encode(&enc, buf, sizeof(buf), &table_msgs[i]);
		CHECK(len > 0);
		CHECK_INT(raw ? sw_recording_writer_write(w, buf, (size_t)len)
			      : sw_recording_writer_message(w, &table_msgs[i], buf, (size_t)len),
			  0);
	}
	CHECK_INT(sw_recording_writer_close(w, &err), 0);
}

/*
 * Reads p back, checking each message against table_msgs; returns the
 * messages read (-1 at the first that differs) and counts the samples that
 * added to the table and named it.
 */
static int read_table_recording(const char *p, int *adds, int *names, const char **warning)
{
	struct sw_recording *rec;
	struct sw_error err = {0};
	*adds = *names = 0;
	if (sw_recording_open(p, &rec, &err) < 0)
		return -1;
	struct sw_wire_msg m;
	int count = 0, r;
	while ((r = sw_recording_next(rec, &m, &err)) == 1) {
		const struct sw_wire_msg *want = &table_msgs[count];
		if (m.type != want->type)
			break;
		if (m.type == SW_MSG_SAMPLE) {
			const struct sw_wire_sample *a = &m.sample, *b = &want->sample;
			if (a->time != b->time || a->thread_id != b->thread_id ||
			    a->depth != b->depth || a->flags != b->flags ||
			    a->elided != b->elided || a->elided_at != b->elided_at ||
			    strcmp(a->thread_name, b->thread_name) ||
			    memcmp(a->frames, b->frames, a->depth * sizeof(*a->frames)))
				break;
			*adds += a->table_add;
			*names += a->table && !a->table_add;
		}
		count++;
	}
	*warning = sw_recording_warning(rec) ? "warned" : NULL;
	sw_recording_free(rec);
	return r == 0 ? count : -1;
}

static void test_table(void)
{
	size_t n = make_table_msgs();
	char raw_path[300], cut_path[300];
	snprintf(raw_path, sizeof(raw_path), "%s/raw.swtrace", dir);
	snprintf(cut_path, sizeof(cut_path), "%s/tcut.swtrace", dir);
	write_table_recording(path, n, false);
	write_table_recording(raw_path, n, true);

	/* seven stacks added once each (not the empty one), the 31 other samples with frames name
	 * them */
	int adds, names;
	const char *warning;
	CHECK_INT(read_table_recording(path, &adds, &names, &warning), (int)n);
	CHECK_INT(adds, 7);
	CHECK_INT(names, 31);
	CHECK(warning == NULL);
	size_t len, raw_len;
	read_file(raw_path, &raw_len);
	CHECK_INT(read_table_recording(raw_path, &adds, &names, &warning), (int)n);
	CHECK_INT(adds + names, 0);
	uint8_t *data = read_file(path, &len);
	CHECK(len < raw_len);

	/* cut anywhere: every whole message before the cut, each as it was sent */
	uint8_t *copy = malloc(len);
	memcpy(copy, data, len);
	int previous = 0, bad = 0;
	for (size_t cut = SW_RECORDING_HEADER_SIZE; cut <= len; cut++) {
		write_file(cut_path, copy, cut);
		int got = read_table_recording(cut_path, &adds, &names, &warning);
		if (got < previous || got > previous + 1 || (cut == len) != (got == (int)n))
			bad++;
		previous = got;
	}
	CHECK_INT(bad, 0);

	/*
	 * the collector keeps a stack's frames past the samples that follow
	 * it; the table's samples go by their entry, the others by a number
	 * of the stall's own
	 */
	struct sw_recording *rec;
	struct sw_stalls *c;
	struct sw_error err = {0};
	CHECK_INT(sw_recording_open(path, &rec, &err), 0);
	CHECK_INT(sw_stalls_new(&c), 0);
	struct sw_wire_msg m;
	const struct sw_stall *st;
	int stalls = 0, wrong = 0, numbered = 0, misnumbered = 0;
	for (size_t i = 0; sw_recording_next(rec, &m, &err) == 1; i++) {
		if (sw_stalls_feed(c, &m, &st) != 1)
			continue;
		stalls++;
		CHECK_INT(st->nsamples, 20);
		for (size_t k = 0; k < st->nsamples && k < 20; k++) {
			const struct sw_stall_sample *x = &st->sample[k];
			const struct sw_wire_sample *want = &table_msgs[i - 20 + k].sample;
			wrong +=
			    x->depth != want->depth ||
			    memcmp(x->frames, want->frames, want->depth * sizeof(*want->frames));
			numbered += !x->table;
			misnumbered +=
			    x->table ? x->stack != SW_STALL_TABLE_STACK : x->stack >= st->nsamples;
		}
	}
	CHECK_INT(stalls, 2);
	CHECK_INT(wrong, 0);
	CHECK_INT(numbered, 2); /* the empty stacks, which the table leaves out */
	CHECK_INT(misnumbered, 0);
	sw_stalls_free(c);
	sw_recording_free(rec);
	free(copy);
}

/* Past the table's room, new stacks go whole and the table's stay named. */
static void test_table_full(void)
{
	struct sw_recording_writer *w;
	struct sw_error err = {0};
	CHECK_INT(sw_recording_writer_open(path, &w, &err), 0);
	static uint64_t frames[SW_WIRE_MAX_FRAMES];
	uint32_t full = SW_WIRE_TABLE_MAX_FRAMES / SW_WIRE_MAX_FRAMES;
	/* stacks 0 .. full - 1 fill it, then 0 is named, full and full + 1 find no room */
	uint32_t after[] = {0, full, full + 1, 0, full};
	struct sw_wire_msg hello = {.type = SW_MSG_HELLO, .hello = {.protocol = SW_WIRE_PROTOCOL}};
	CHECK_INT(sw_recording_writer_message(w, &hello, NULL, 0), 0);
	for (uint32_t i = 0; i < full + 5; i++) {
		uint32_t k = i < full ? i : after[i - full];
		for (uint32_t d = 0; d < SW_WIRE_MAX_FRAMES; d++)
			frames[d] = 0x400000 + 16 * (uint64_t)d + k;
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.stall_id = 1,
						   .time = k,
						   .thread_id = 1,
						   .depth = SW_WIRE_MAX_FRAMES,
						   .frames = frames}};
		CHECK_INT(sw_recording_writer_message(w, &m, NULL, 0), 0);
	}
	CHECK_INT(sw_recording_writer_close(w, &err), 0);

	struct sw_recording *rec;
	CHECK_INT(sw_recording_open(path, &rec, &err), 0);
	struct sw_wire_msg m;
	uint32_t i = 0;
	int wrong = 0;
	while (sw_recording_next(rec, &m, &err) == 1) {
		if (m.type != SW_MSG_SAMPLE)
			continue;
		uint32_t k = m.sample.time;
		for (uint32_t d = 0; d < m.sample.depth; d++)
			wrong += m.sample.frames[d] != 0x400000 + 16 * (uint64_t)d + k;
		/* the entry, from 1: added while there is room, else none */
		uint32_t want = k < full ? k + 1 : 0;
		wrong += m.sample.table != want || m.sample.table_add != (i < full);
		i++;
	}
	CHECK_INT(i, full + 5);
	CHECK_INT(wrong, 0);
	sw_recording_free(rec);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/a.swtrace", dir);
	test_round_trip();
	test_sniffed();
	test_every_cut();
	test_cut_counts();
	test_bad_headers();
	test_table();
	test_table_full();
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return sw_test_end();
}
