/*
 * Reading and writing .swtrace recordings (see recording.h).
 *
 * The reader pulls the file through a window of at most
 * SW_WIRE_MAX_MESSAGE plus one read's worth of bytes, so a recording of any
 * size is replayed in bounded memory, and a cut at any byte yields every
 * whole message before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/table-alloc.h"
#include "recording.h"
#include "stalls.h"
#include "table-frames.h"

#define READ_CHUNK 65536

struct sw_recording {
	int fd;
	bool own_fd;
	bool eof;
	uint8_t head[SW_RECORDING_HEADER_SIZE]; /* bytes the caller read before us */
	size_t head_len, head_pos;
	struct sw_buf window; /* unread bytes start at window.data + pos */
	size_t pos;
	uint64_t window_offset; /* file offset of window.data[0] */
	uint64_t msg_offset;
	/* the next message to prefetch (at or past pos), and the whole messages between */
	size_t ahead;
	unsigned nahead;
	unsigned version; /* the header's */
	struct sw_wire_decoder *dec;
	char warning[160];
};

/*
 * The writer keeps its own buffer rather than stdio's so that
 * sw_recording_writer_sync() knows every byte has reached the kernel
 * (write(2)) and the disk (fdatasync) when it returns.
 */
#define WRITER_BUF_MAX (256 * 1024)

/*
 * The writer's side of the stack table: each stack it added, found by its
 * hash, its frames kept in blocks (freed with the writer).
 */
struct table_slot {
	uint64_t hash;
	const uint64_t *frames;
	uint32_t depth;
	uint32_t entry; /* from 1; 0: empty */
};

struct sw_recording_writer {
	int fd;
	int error; /* first write error, -errno */
	uint8_t *buf;
	size_t len;
	/* for sw_recording_writer_message(), allocated by its first call */
	struct sw_wire_encoder *enc;
	uint8_t *msg;
	struct table_slot *slot;
	size_t slots_cap, nentries, table_frames;
	struct sw_table_frames copies; /* the entries' frames */
};

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Hands the buffered bytes to the kernel. */
static int writer_drain(struct sw_recording_writer *w)
{
	if (!w->error && w->len)
		w->error = write_all(w->fd, w->buf, w->len);
	w->len = 0;
	return w->error;
}

static int read_full(int fd, void *buf, size_t len, size_t *ret_n)
{
	size_t n = 0;
	while (n < len) {
		ssize_t r = read(fd, (char *)buf + n, len - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*ret_n = n;
	return 0;
}

/* read_full() on the recording: the caller's sniffed bytes first, then the descriptor. */
static int rec_read(struct sw_recording *rec, void *buf, size_t len, size_t *ret_n)
{
	size_t n = rec->head_len - rec->head_pos;
	if (n > len)
		n = len;
	memcpy(buf, rec->head + rec->head_pos, n);
	rec->head_pos += n;
	size_t more = 0;
	int r = n < len ? read_full(rec->fd, (char *)buf + n, len - n, &more) : 0;
	if (r < 0)
		return r;
	*ret_n = n + more;
	return 0;
}

/* The tool that undoes the compression whose magic h[0..n) starts with, or NULL. */
static const char *unpacker(const uint8_t *h, size_t n)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *tool;
	} formats[] = {{"\x1f\x8b", 2, "gunzip"},
		       {"\x28\xb5\x2f\xfd", 4, "unzstd"},
		       {"\xfd\x37\x7a\x58\x5a\x00", 6, "unxz"},
		       {"BZh", 3, "bunzip2"},
		       {"\x04\x22\x4d\x18", 4, "unlz4"}};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (n >= formats[i].len && memcmp(h, formats[i].magic, formats[i].len) == 0)
			return formats[i].tool;
	return NULL;
}

static int read_header(struct sw_recording *rec, struct sw_error *err)
{
	uint8_t h[SW_RECORDING_HEADER_SIZE];
	size_t n;
	int r = rec_read(rec, h, sizeof(h), &n);
	if (r < 0)
		return sw_error_set(err, r, "%s", strerror(-r));
	if (n == 0)
		return sw_error_set(err, -EBADMSG, "empty file, not a stallwatch recording");
	const char *tool = unpacker(h, n);
	if (tool)
		return sw_error_set(
		    err, -EBADMSG,
		    "compressed, not a stallwatch recording: decompress it first (%s)", tool);
	if (memcmp(h, SW_RECORDING_MAGIC, n < 8 ? n : 8) != 0)
		return sw_error_set(err, -EBADMSG,
				    "not a stallwatch recording (bad magic at offset 0)");
	if (n < sizeof(h))
		return sw_error_set(err, -EBADMSG, "truncated header at offset %zu", n);
	unsigned version = h[8] | h[9] << 8;
	unsigned size = h[10] | h[11] << 8;
	/* every earlier version is read; a newer one is named as such */
	if (version > SW_RECORDING_VERSION)
		return sw_error_set(err, -EPROTONOSUPPORT,
				    "recording format version %u is newer than this stallwatch "
				    "reads (%u to %u): upgrade stallwatch",
				    version, SW_RECORDING_VERSION_OLDEST, SW_RECORDING_VERSION);
	if (version < SW_RECORDING_VERSION_OLDEST)
		return sw_error_set(err, -EPROTONOSUPPORT,
				    "recording format version %u is not supported (this "
				    "stallwatch reads %u to %u)",
				    version, SW_RECORDING_VERSION_OLDEST, SW_RECORDING_VERSION);
	if (size < SW_RECORDING_HEADER_SIZE)
		return sw_error_set(err, -EBADMSG, "header size %u too small at offset 10", size);
	/* a later header may be longer: skip what this reader does not know */
	for (size_t skip = size - sizeof(h); skip > 0;) {
		uint8_t tmp[256];
		size_t want = skip < sizeof(tmp) ? skip : sizeof(tmp);
		r = rec_read(rec, tmp, want, &n);
		if (r < 0)
			return sw_error_set(err, r, "%s", strerror(-r));
		if (n < want)
			return sw_error_set(err, -EBADMSG, "truncated header");
		skip -= want;
	}
	rec->window_offset = size;
	rec->version = version;
	return 0;
}

static int open_fd(int fd, bool own_fd, const void *head, size_t head_len,
		   struct sw_recording **ret, struct sw_error *err)
{
	struct sw_recording *rec =
	    head_len <= SW_RECORDING_HEADER_SIZE ? calloc(1, sizeof(*rec)) : NULL;
	if (!rec) {
		if (own_fd)
			close(fd);
		return head_len > SW_RECORDING_HEADER_SIZE
			   ? sw_error_set(err, -EINVAL, "too many sniffed bytes")
			   : sw_error_set(err, -ENOMEM, "out of memory");
	}
	rec->fd = fd;
	rec->own_fd = own_fd;
	if (head_len)
		memcpy(rec->head, head, head_len);
	rec->head_len = head_len;
	sw_buf_init(&rec->window, SW_WIRE_MAX_MESSAGE + READ_CHUNK);
	int r = sw_wire_decoder_new(&rec->dec);
	if (r < 0)
		sw_error_set(err, r, "out of memory");
	else
		r = read_header(rec, err);
	if (r >= 0 && rec->version >= 2)
		sw_wire_decoder_use_table(rec->dec);
	if (r < 0) {
		sw_recording_free(rec);
		return r;
	}
	*ret = rec;
	return 0;
}

int sw_recording_open_fd(int fd, struct sw_recording **ret, struct sw_error *err)
{
	return open_fd(fd, true, NULL, 0, ret, err);
}

int sw_recording_open_sniffed(int fd, const void *head, size_t head_len, struct sw_recording **ret,
			      struct sw_error *err)
{
	return open_fd(fd, true, head, head_len, ret, err);
}

int sw_recording_open(const char *path, struct sw_recording **ret, struct sw_error *err)
{
	if (strcmp(path, "-") == 0)
		return open_fd(STDIN_FILENO, false, NULL, 0, ret, err);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sw_error_set(err, -errno, "%s", strerror(errno));
	return open_fd(fd, true, NULL, 0, ret, err);
}

void sw_recording_free(struct sw_recording *rec)
{
	if (!rec)
		return;
	if (rec->own_fd)
		close(rec->fd);
	sw_buf_finish(&rec->window);
	sw_wire_decoder_free(rec->dec);
	free(rec);
}

/* Moves unread bytes to the front and reads one more chunk. */
static int refill(struct sw_recording *rec)
{
	struct sw_buf *w = &rec->window;
	if (rec->pos) {
		memmove(w->data, w->data + rec->pos, w->len - rec->pos);
		w->len -= rec->pos;
		rec->window_offset += rec->pos;
		rec->ahead = rec->ahead > rec->pos ? rec->ahead - rec->pos : 0;
		rec->pos = 0;
	}
	int r = sw_buf_reserve(w, READ_CHUNK);
	if (r < 0)
		return r;
	size_t n;
	r = rec_read(rec, w->data + w->len, READ_CHUNK, &n);
	if (r < 0)
		return r;
	w->len += n;
	if (n < READ_CHUNK)
		rec->eof = true;
	return 0;
}

/*
 * How many messages ahead of the one just decoded the reader fetches what
 * decoding will read at random (a sample's stack table entry): the next
 * one only left most of the decoder's time waiting on that entry.
 */
#define PREFETCH_AHEAD 8

/* Keeps the prefetches PREFETCH_AHEAD messages ahead, as far as the window holds them whole. */
static void prefetch_ahead(struct sw_recording *rec)
{
	const struct sw_buf *w = &rec->window;
	if (rec->nahead)
		rec->nahead--; /* the message just decoded was the first of them */
	if (rec->ahead < rec->pos) {
		rec->ahead = rec->pos;
		rec->nahead = 0;
	}
	while (rec->nahead < PREFETCH_AHEAD && rec->ahead < w->len) {
		size_t n =
		    sw_wire_decoder_prefetch(rec->dec, w->data + rec->ahead, w->len - rec->ahead);
		if (!n)
			break;
		rec->ahead += n;
		rec->nahead++;
	}
}

int sw_recording_next(struct sw_recording *rec, struct sw_wire_msg *msg, struct sw_error *err)
{
	for (;;) {
		struct sw_buf *w = &rec->window;
		uint64_t offset = rec->window_offset + rec->pos;
		int n = 0;
		if (w->len > rec->pos)
			n = sw_wire_decode(rec->dec, w->data + rec->pos, w->len - rec->pos, offset,
					   msg, err);
		if (n < 0)
			return n;
		if (n > 0) {
			rec->msg_offset = offset;
			rec->pos += (size_t)n;
			prefetch_ahead(rec);
			return 1;
		}
		if (rec->eof) {
			if (w->len > rec->pos)
				snprintf(rec->warning, sizeof(rec->warning),
					 "recording ends inside the %s message at offset %llu "
					 "(%zu bytes after the last whole message)",
					 sw_wire_type_name(w->data[rec->pos]),
					 (unsigned long long)offset, w->len - rec->pos);
			return 0;
		}
		int r = refill(rec);
		if (r < 0)
			return sw_error_set(err, r, "read error at offset %llu: %s",
					    (unsigned long long)offset, strerror(-r));
	}
}

uint64_t sw_recording_offset(const struct sw_recording *rec)
{
	return rec->msg_offset;
}

const char *sw_recording_warning(const struct sw_recording *rec)
{
	return rec->warning[0] ? rec->warning : NULL;
}

int sw_recording_writer_open(const char *path, struct sw_recording_writer **ret,
			     struct sw_error *err)
{
	struct sw_recording_writer *w = calloc(1, sizeof(*w));
	uint8_t *buf = malloc(WRITER_BUF_MAX);
	if (!w || !buf) {
		free(w);
		free(buf);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	w->buf = buf;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0) {
		int r = sw_error_set(err, -errno, "%s", strerror(errno));
		free(w->buf);
		free(w);
		return r;
	}
	uint8_t h[SW_RECORDING_HEADER_SIZE] = {0};
	memcpy(h, SW_RECORDING_MAGIC, 8);
	h[8] = SW_RECORDING_VERSION;
	h[10] = SW_RECORDING_HEADER_SIZE;
	sw_recording_writer_write(w, h, sizeof(h));
	if (sw_recording_writer_sync(w) < 0) {
		int r = sw_error_set(err, w->error, "%s", strerror(-w->error));
		close(w->fd);
		free(w->buf);
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

int sw_recording_writer_write(struct sw_recording_writer *w, const void *data, size_t len)
{
	if (w->error)
		return w->error;
	if (w->len + len > WRITER_BUF_MAX && writer_drain(w) < 0)
		return w->error;
	if (len > WRITER_BUF_MAX) {
		w->error = write_all(w->fd, data, len);
		return w->error;
	}
	memcpy(w->buf + w->len, data, len);
	w->len += len;
	return 0;
}

static int table_grow(struct sw_recording_writer *w)
{
	size_t cap = w->slots_cap ? w->slots_cap * 2 : 8192;
	struct table_slot *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < w->slots_cap; i++) {
		if (!w->slot[i].entry)
			continue;
		size_t j = w->slot[i].hash & (cap - 1);
		while (t[j].entry)
			j = (j + 1) & (cap - 1);
		t[j] = w->slot[i];
	}
	free(w->slot);
	w->slot = t;
	w->slots_cap = cap;
	return 0;
}

/*
 * The slot of the table's entry for s's stack, or of the empty slot where
 * it would go; NULL: out of memory.
 */
static struct table_slot *table_find(struct sw_recording_writer *w, const struct sw_wire_sample *s,
				     uint64_t h)
{
	if (w->nentries * 2 >= w->slots_cap && table_grow(w) < 0)
		return NULL;
	size_t j = h & (w->slots_cap - 1);
	for (; w->slot[j].entry; j = (j + 1) & (w->slots_cap - 1))
		if (w->slot[j].hash == h && w->slot[j].depth == s->depth &&
		    !memcmp(w->slot[j].frames, s->frames, s->depth * sizeof(*s->frames)))
			break;
	return &w->slot[j];
}

int sw_recording_writer_message(struct sw_recording_writer *w, const struct sw_wire_msg *m,
				const void *raw, size_t len)
{
	if (w->error)
		return w->error;
	if (!w->enc) {
		w->enc = malloc(sizeof(*w->enc));
		w->msg = malloc(SW_WIRE_MAX_MESSAGE);
		if (!w->enc || !w->msg)
			return -ENOMEM;
		sw_wire_encoder_reset(w->enc);
	}
	if (m->type == SW_MSG_HELLO)
		sw_wire_encoder_reset(w->enc); /* as a reader's decoder does */
	if (m->type != SW_MSG_SAMPLE && raw)
		return sw_recording_writer_write(w, raw, len);

	struct sw_wire_msg copy = *m;
	struct sw_wire_sample *s = &copy.sample;
	struct table_slot *slot = NULL;
	const uint64_t *kept = NULL;
	uint64_t h = 0;
	if (m->type == SW_MSG_SAMPLE) {
		s->table = 0;
		s->table_add = false;
	}
	/* a sample without a stack, or past the table's room, sends its frames */
	if (m->type == SW_MSG_SAMPLE && s->depth) {
		h = sw_stalls_stack_hash(s->frames, s->depth);
		if (!(slot = table_find(w, s, h)))
			return -ENOMEM;
		if (slot->entry) {
			s->table = slot->entry;
		} else if (w->nentries < SW_WIRE_TABLE_MAX_STACKS &&
			   w->table_frames + s->depth <= SW_WIRE_TABLE_MAX_FRAMES) {
			if (!(kept = sw_table_frames_copy(&w->copies, s->frames, s->depth)))
				return -ENOMEM;
			s->table = (uint32_t)w->nentries + 1;
			s->table_add = true;
		}
	}
	int n = sw_wire_encode(w->enc, w->msg, SW_WIRE_MAX_MESSAGE, &copy);
	if (n < 0)
		return n;
	if (kept) { /* the entry exists once a reader can have it */
		*slot = (struct table_slot){h, kept, s->depth, s->table};
		w->nentries++;
		w->table_frames += s->depth;
	}
	return sw_recording_writer_write(w, w->msg, (size_t)n);
}

int sw_recording_writer_sync(struct sw_recording_writer *w)
{
	if (writer_drain(w) < 0)
		return w->error;
	/* a pipe or terminal cannot be synced, and need not be */
	if (fdatasync(w->fd) < 0 && errno != EINVAL && errno != EROFS)
		w->error = -errno;
	return w->error;
}

int sw_recording_writer_info(struct sw_recording_writer *w, const char *key, const char *value)
{
	uint8_t buf[2 * SW_WIRE_MAX_STRING + 32];
	struct sw_wire_msg msg = {.type = SW_MSG_RECORD_INFO,
				  .record_info = {.key = key, .value = value}};
	int n = sw_wire_encode(NULL, buf, sizeof(buf), &msg);
	if (n < 0)
		return n;
	return sw_recording_writer_write(w, buf, (size_t)n);
}

int sw_recording_writer_close(struct sw_recording_writer *w, struct sw_error *err)
{
	if (!w)
		return 0;
	int r = sw_recording_writer_sync(w);
	if (close(w->fd) < 0 && !r)
		r = -errno;
	free(w->buf);
	free(w->enc);
	free(w->msg);
	free(w->slot);
	sw_table_frames_free(&w->copies);
	free(w);
	if (r < 0)
		return sw_error_set(err, r, "%s", strerror(-r));
	return 0;
}
