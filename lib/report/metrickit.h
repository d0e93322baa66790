/*
 * MetricKit hang diagnostics as stalls: Apple's call stack tree JSON
 * (MXCallStackTree.JSONRepresentation) read into a profile, so `report`
 * prints them like any stall.
 *
 * Accepted: a bare call stack tree ({"callStacks":[...],
 * "callStackPerThread":...}); a diagnostic payload whose "hangDiagnostics"
 * entries carry "callStackTree" and "diagnosticMetaData"; an array of
 * payloads.  Each tree becomes one stall; each call stack a thread, the
 * "threadAttributed" one being the stall's thread.  Root frames are the
 * outermost callers; a frame's self count is its sampleCount minus its
 * children's.  Weights are the counts scaled so that the stall's total is
 * the "hangDuration" of the metadata when there is one, else plain sample
 * counts (the stall is then counts_only).  Frames are symbolicated by
 * binaryUUID through the report (so with --symbols); where that fails a
 * frame is named "binaryName + offset".
 *
 * The input is hostile: sizes, nesting and counts are bounded and every
 * malformation is an error naming where it is, never a crash.
 */
#ifndef SW_METRICKIT_H
#define SW_METRICKIT_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "report.h"
#include "tree/tree.h"

#define SW_METRICKIT_MAX_INPUT  ((size_t)256 << 20)
#define SW_METRICKIT_MAX_FRAMES (1u << 20) /* frame objects in one input */
#define SW_METRICKIT_MAX_DEPTH  1024u      /* nested subFrames */
#define SW_METRICKIT_MAX_TREES  65536u     /* call stack trees (stalls) in one input */

/*
 * Reads data[0..len) and adds its stalls to p, numbered from first_id, with
 * source as their qualifier.  Returns how many stalls were added, -ENOTSUP
 * when built without JSON support, or -EBADMSG with err saying what is
 * wrong and where.  Nothing is added on failure.
 */
int sw_metrickit_load(const char *data, size_t len, struct sw_profile *p, struct sw_report *r,
		      const char *source, uint64_t first_id, struct sw_error *err);

/* Whether data looks like JSON rather than a recording (its first non-space byte). */
int sw_metrickit_sniff(const uint8_t *data, size_t len);

#endif
