/*
 * --baseline FILE: the stall signatures of an earlier run (NDJSON or a
 * recording), so that --fail-on-stall, --fail-if-longer-than and --junit
 * count only stalls whose signature is new: a device farm fails a build on
 * a new hang, not on a known one.  A baseline whose signatures were made
 * under another SW_SIGNATURE_VERSION is refused.
 */
#ifndef SW_CLI_BASELINE_H
#define SW_CLI_BASELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output.h"

struct sw_baseline;

/* Reads path (o gives -S for a recording's symbols); 0, or an exit status, reported. */
int sw_baseline_load(const char *path, const struct sw_output_options *o, struct sw_baseline **ret);
void sw_baseline_free(struct sw_baseline *b);
/* Whether sig is known; false for a NULL baseline. */
bool sw_baseline_has(const struct sw_baseline *b, uint64_t sig);
size_t sw_baseline_count(const struct sw_baseline *b);

#endif
