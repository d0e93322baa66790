/*
 * Printing single stalls as they complete, before symbolication exists:
 * NDJSON (one object per stall, stallwatch-format(5)), appended to a buffer
 * the caller writes out.
 */
#ifndef SW_RENDER_STALL_H
#define SW_RENDER_STALL_H

#include "util/buf.h"
#include "wire/stalls.h"

#define SW_NDJSON_SCHEMA 1

/* One line: {"schema":1,"type":"stall",...}\n */
int sw_render_ndjson_stall(struct sw_buf *out, const struct sw_stalls *c, const struct sw_stall *s);
/* The same line's fields after "type", without braces or newline ("id":1,...). */
int sw_render_ndjson_stall_fields(struct sw_buf *out, const struct sw_stalls *c,
				  const struct sw_stall *s);

/* The last line of an NDJSON stream: {"type":"summary"} with the agent's counters. */
int sw_render_ndjson_summary(struct sw_buf *out, const struct sw_stalls *c, uint64_t stalls);

/* The figures a stall's NDJSON object carries. */
struct sw_stall_figures {
	double duration_ms, cpu_ms, sampled_ms, interval_ms;
	const char *kind;           /* "busy" or "blocked" */
	bool truncated;             /* some sample was cut */
	uint64_t unwinding_stopped; /* the stalled thread's samples whose unwinding stopped early */
	uint64_t main_samples;
};
void sw_stall_figures(const struct sw_stalls *c, const struct sw_stall *s,
		      struct sw_stall_figures *ret);

#endif
