/*
 * Cache files (the DWARF index, the symbol cache), written so that readers
 * see the whole old file or the whole new one, never part of either: the
 * parts are written to a temporary file beside path, synced, and renamed
 * over path; and mapped whole by their readers.
 */
#ifndef SW_UTIL_PUBLISH_H
#define SW_UTIL_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw_part {
	const void *data;
	size_t len;
};

/*
 * Writes the parts in order, each padded with zeros to a multiple of 8
 * bytes when pad8 is set, then publishes the file at path.  0 or -errno.
 */
int sw_publish(const char *path, const struct sw_part *parts, size_t n, int pad8);

/*
 * Maps the regular file at path read-only, whole, when its size is within
 * [min, max]: 0, or -errno (-EINVAL for another kind of file or size).
 * munmap(*ret, *ret_size) releases it.
 */
int sw_map_whole(const char *path, size_t min, uint64_t max, void **ret, size_t *ret_size);

/* The size of the file sw_publish() with pad8 writes from parts of these lengths. */
uint64_t sw_padded_size(const struct sw_part *parts, size_t n);

/*
 * Where each of n parts of the given lengths starts in a mapped file of
 * size bytes that begins with a header of header_len bytes, as
 * sw_publish() with pad8 laid them out: false unless they fill it exactly.
 */
bool sw_map_parts(const void *map, size_t size, size_t header_len, const uint64_t *lens, size_t n,
		  const void **starts);

#endif
