/*
 * Output from several devices mixed on one stream: each line says which
 * device it comes from.  Text lines get a "[UDID] " prefix; NDJSON objects
 * get "udid" as their first member.
 */
#ifndef SW_RENDER_QUALIFY_H
#define SW_RENDER_QUALIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Appends in[0, len), qualified line by line, to out; -errno on failure. */
int sw_render_qualify(struct sw_buf *out, const void *in, size_t len, const char *udid,
		      bool ndjson);

#endif
