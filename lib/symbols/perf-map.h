/*
 * Names of just-in-time compiled code from a perf map: the text file a JIT
 * writes for profilers, /tmp/perf-PID.map by convention (Node and V8 with
 * --perf-basic-prof, Python 3.12 with -X perf, the JVM through an agent,
 * LuaJIT, .NET).  Each line is "START SIZE NAME": start and size in
 * hexadecimal (with or without 0x), the name to the end of the line.  The
 * JIT appends while the process runs, and may reuse an address range for
 * new code: the later line covering an address wins, as perf takes it.
 */
#ifndef SW_PERF_MAP_H
#define SW_PERF_MAP_H

#include <stdint.h>

struct sw_perf_map;

/*
 * A map to be read from path when first looked up in; -ENOMEM only.  A
 * file last written before not_before (Unix seconds; 0: any) names
 * nothing: it is an earlier process's that had the same pid.
 */
int sw_perf_map_new(const char *path, int64_t not_before, struct sw_perf_map **ret);
void sw_perf_map_free(struct sw_perf_map *m);

/*
 * The name of the code at addr and its start (*ret_start), or NULL when no
 * line covers it.  An address not covered reads what the file gained since
 * the last look first.  Lines that do not parse are skipped; a file that
 * cannot be read names nothing.  The name lives as long as the map.
 */
const char *sw_perf_map_lookup(struct sw_perf_map *m, uint64_t addr, uint64_t *ret_start);

/* The path the map reads. */
const char *sw_perf_map_path(const struct sw_perf_map *m);

#endif
