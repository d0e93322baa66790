/*
 * .swtrace recordings: a file header followed by the agent's messages as
 * they crossed the wire, plus RECORD_INFO messages the host adds (device,
 * label).  From format version 2 the samples are encoded again against the
 * recording's stack table (sw_recording_writer_message()).  `report` replays a recording through
 * the same code that prints a live stream, so both print the same.
 *
 * The header is 16 bytes: the magic "SWTRACE\0", the format version and the
 * header size as little-endian 16-bit numbers, and 4 bytes of flags (zero).
 * A reader skips header bytes it does not know, up to the header size, and
 * reads every format version from SW_RECORDING_VERSION_OLDEST on; the
 * messages carry their own protocol version in each hello.
 */
#ifndef SW_RECORDING_H
#define SW_RECORDING_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "wire.h"

#define SW_RECORDING_MAGIC          "SWTRACE"
#define SW_RECORDING_VERSION        2
#define SW_RECORDING_VERSION_OLDEST 1
#define SW_RECORDING_HEADER_SIZE    16

struct sw_recording;
struct sw_recording_writer;

/*
 * Opens a recording for reading ("-" is standard input).  The file is read
 * as it is consumed, never whole.
 */
int sw_recording_open(const char *path, struct sw_recording **ret, struct sw_error *err);
/* The same for an open descriptor, which the recording then owns. */
int sw_recording_open_fd(int fd, struct sw_recording **ret, struct sw_error *err);
/*
 * The same for a descriptor whose first head_len bytes (at most
 * SW_RECORDING_HEADER_SIZE) the caller already read to sniff what it is
 * (a pipe cannot seek back): they are read first, from head.
 */
int sw_recording_open_sniffed(int fd, const void *head, size_t head_len, struct sw_recording **ret,
			      struct sw_error *err);
void sw_recording_free(struct sw_recording *rec);

/*
 * Reads the next message: 1 with msg filled (valid until the next call), 0 at
 * the end, -errno with err naming the offset when the file is not a valid
 * recording past that point.  A file cut inside a message ends with 0 and
 * sw_recording_warning() saying where.
 */
int sw_recording_next(struct sw_recording *rec, struct sw_wire_msg *msg, struct sw_error *err);

/* The offset of the message sw_recording_next() returned last. */
uint64_t sw_recording_offset(const struct sw_recording *rec);

/* NULL, or why the recording ended early ("truncated message at offset N"). */
const char *sw_recording_warning(const struct sw_recording *rec);

/* Creates (or truncates) path and writes the header. */
int sw_recording_writer_open(const char *path, struct sw_recording_writer **ret,
			     struct sw_error *err);
/*
 * Appends raw agent bytes exactly as received (buffered: see _sync).  A
 * recording takes its samples either this way or through
 * sw_recording_writer_message(), never both: they differ in what each
 * sample refers to.
 */
int sw_recording_writer_write(struct sw_recording_writer *w, const void *data, size_t len);
/*
 * Appends a message the agent sent (m decoded; raw and len its bytes as
 * received, or NULL to encode m).  Samples are encoded again against the
 * recording's stack table: a stack met before is written as the number of
 * its entry, a new one whole and added to the table, so that a reader
 * decodes and compares each distinct stack once.  The rest go as received.
 */
int sw_recording_writer_message(struct sw_recording_writer *w, const struct sw_wire_msg *m,
				const void *raw, size_t len);
/*
 * Writes out everything appended so far and waits until it is on disk
 * (fdatasync), so a crash after this leaves it in the file.  Returns the
 * first write error met, if any.
 */
int sw_recording_writer_sync(struct sw_recording_writer *w);
/* Appends a RECORD_INFO message (between whole agent messages only). */
int sw_recording_writer_info(struct sw_recording_writer *w, const char *key, const char *value);
/* Flushes and closes; returns the first write error met, if any.  Frees w. */
int sw_recording_writer_close(struct sw_recording_writer *w, struct sw_error *err);

#endif
