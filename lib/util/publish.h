/*
 * Writing a cache file so that readers see the whole old file or the whole
 * new one, never part of either: the parts are written to a temporary file
 * beside path, synced, and renamed over path.  Used by the DWARF index and
 * the symbol cache.
 */
#ifndef SW_UTIL_PUBLISH_H
#define SW_UTIL_PUBLISH_H

#include <stddef.h>

struct sw_part {
	const void *data;
	size_t len;
};

/*
 * Writes the parts in order, each padded with zeros to a multiple of 8
 * bytes when pad8 is set, then publishes the file at path.  0 or -errno.
 */
int sw_publish(const char *path, const struct sw_part *parts, size_t n, int pad8);

#endif
