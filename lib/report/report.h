/*
 * From agent stalls to call-tree profiles: the adapter between the stall
 * collector (stalls.h, live or from a recording), the symbolicator
 * (symbolicate.h, with the symbol search behind it) and the profile that
 * trees and renderers read (tree.h).
 *
 * Each address is symbolicated once per image and kept; names are taken
 * undemangled from the symbolicator, so the profile holds linkage names
 * for signatures, and demangled here both simplified (trees) and in full
 * (--full-names).  A sample weighs the time since the previous sample of
 * its thread in the stall (its interval); the first one weighs the
 * configured sampling interval.
 *
 * Ownership: the report borrows the profile and the symbol search (either
 * outlives it) and owns its symbolicator.
 */
#ifndef SW_REPORT_H
#define SW_REPORT_H

#include <stdbool.h>

#include "util/buf.h"
#include "util/error.h"
#include "wire/stalls.h"
#include "tree/tree.h"

struct sw_symsearch;
struct sw_report;

/* search may be NULL: images are then read from the paths the agent gave. */
int sw_report_new(struct sw_profile *p, struct sw_symsearch *search, struct sw_report **ret);
void sw_report_free(struct sw_report *r);
/*
 * Whether stalls carry the collector's raw stacks, images and sample times
 * (the NDJSON fields of render-stall.h) for formats that print them; on by
 * default.  Building them costs more than the rest of a stall, so an output
 * that never prints them turns them off.
 */
void sw_report_set_raw_stacks(struct sw_report *r, bool on);

/*
 * Where frames outside every image (code a JIT compiled) get their names:
 * the perf map at path (symbols/perf-map.h), or with path NULL the one the
 * stream's own Linux process writes, /tmp/perf-PID.map by the pid of its
 * hello (for a process on this machine: `run`).  Such frames go under an
 * image named JIT whose path is the map's; without a map, or where it has
 * no line, they stay addresses.  -ENOMEM only.
 */
int sw_report_set_perf_map(struct sw_report *r, const char *path);

/*
 * Adds a complete stall of collector c to the profile, its id qualified by
 * source (a recording or device name, or NULL).  *ret_stall lives as long
 * as the profile.
 */
int sw_report_add_stall(struct sw_report *r, const struct sw_stalls *c, const struct sw_stall *st,
			const char *source, struct sw_tree_stall **ret_stall);

/*
 * Frees what only makes later stalls cheaper: the memo of raw stacks and
 * the address caches.  For when the last stall is in and the summary's
 * trees want the room; stalls added after it rebuild them.
 */
void sw_report_drop_caches(struct sw_report *r);

/* An image as a source describes it (agent image list, MetricKit frame). */
struct sw_report_image {
	const char *path; /* NULL: found by id alone */
	const char *name; /* shown when path is NULL (MetricKit's binaryName), or NULL */
	const uint8_t *id;
	uint32_t id_len;
	bool macho;       /* id is an LC_UUID */
	const char *arch; /* NULL: the only or the host's slice */
	uint64_t load_address, text_size;
	bool system; /* known to be the system's even without a path */
	/* symbols the agent read from memory, used when the symbolicator finds none */
	const struct sw_stall_image *hints;
};

/*
 * Symbolicates addr in img (NULL: an address in no known image) into
 * profile frame ids, outermost (the function) first, then the calls
 * inlined into it.  *ret_ids stays valid until the next call.  -E2BIG
 * when img would be the profile's SW_TREE_MAX_IMAGES + 1st image.
 */
int sw_report_frames(struct sw_report *r, const struct sw_report_image *img, uint64_t addr,
		     bool return_address, const uint32_t **ret_ids, size_t *ret_n);

/*
 * The fields of a one-line JSON object {"schema":N,"type":TYPE,...} in obj,
 * without the header and braces (cut in place), for extra_json; NULL when
 * obj is not such an object.
 */
const char *sw_report_json_fields(struct sw_buf *obj, const char *type);

/*
 * Images that could not be read, one line each ("'PATH': why"), for a
 * warning; NULL when none.  Owned by the report.
 */
const char *sw_report_missing(const struct sw_report *r);
/*
 * Images with split DWARF whose split units were not all found, one line
 * each, appended to out (sw_symbolicator_split_missing()); how many.
 */
size_t sw_report_split_missing(const struct sw_report *r, struct sw_buf *out);

#endif
