/*
 * The GDB remote serial protocol's packet framing, as debugserver speaks it:
 * "$payload#xx" with xx the modulo-256 sum of the payload in hex, '+' and
 * '-' acknowledgements, "O..." console output and "E..." errors.  Only what
 * launching an app needs; the bytes come from a device and are treated as
 * hostile.
 */
#ifndef SW_GDB_REMOTE_H
#define SW_GDB_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The longest payload we accept from debugserver. */
#define SW_GDB_MAX_PAYLOAD 16384u

/*
 * Frames payload[0, len) as "$payload#xx" into buf.  Returns the frame's
 * length, or -ENOSPC when cap is too small; -EINVAL when the payload holds
 * '$', '#' or '}' (we never need escaping).
 */
int sw_gdb_frame(const char *payload, size_t len, char *buf, size_t cap);

/*
 * Finds the first packet in buf[0, len), skipping acknowledgements and noise
 * before its '$'.  Returns 1 with the payload copied (NUL-terminated) into
 * out and *ret_used set to the bytes consumed; 0 when no whole packet is
 * there yet (*ret_used then says how much noise can be dropped); -EBADMSG
 * with err naming the offset on a bad checksum or a payload longer than
 * out_cap - 1 or SW_GDB_MAX_PAYLOAD.
 */
int sw_gdb_parse(const char *buf, size_t len, char *out, size_t out_cap, size_t *ret_used,
		 struct sw_error *err);

/* Hex-encodes s[0, len) into out (2 * len + 1 bytes). */
void sw_gdb_hex(const char *s, size_t len, char *out);

#endif
