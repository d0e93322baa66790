/*
 * Writing JSON text: the one place that escapes strings, shared by every
 * JSON-speaking renderer (ndjson, json, speedscope) and by nothing that
 * parses.
 */
#ifndef SW_JSON_WRITE_H
#define SW_JSON_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/*
 * Appends s as a JSON string with its quotes.  Control characters, quotes
 * and backslashes are escaped; bytes that are not valid UTF-8 become
 * U+FFFD, so the output is always valid JSON whatever the input.  NULL
 * appends null.
 */
int sw_json_string(struct sw_buf *b, const char *s);
/* Appends ,"key": (the comma unless first is set, which is then cleared). */
int sw_json_key(struct sw_buf *b, int *first, const char *key);
/* A number of milliseconds from nanoseconds, with up to 3 decimals. */
int sw_json_ms(struct sw_buf *b, uint64_t ns);
/*
 * The same with exactly 3 decimals, as printf's "%.3f" prints ns / 1e6
 * (a double), only faster: sample times are most of a long stall's NDJSON.
 */
int sw_json_ms3(struct sw_buf *b, uint64_t ns);
int sw_json_u64(struct sw_buf *b, uint64_t v);
/* "0x1a2b", as "0x%" PRIx64 prints it, in quotes. */
int sw_json_hex(struct sw_buf *b, uint64_t v);

#endif
