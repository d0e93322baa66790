/*
 * --format json: one document holding every stall object and the summary,
 * the same objects the ndjson format prints one a line (render-ndjson.c):
 *
 *   {"schema":1,"type":"report","tool":"stallwatch 0.1.0",
 *    "stalls":[{...},...],"summary":{...}}
 *
 * The renderer writes it as it goes: the head and each stall object as the
 * stall ends, the summary at the end, so no stall waits in memory.
 */
#include "util/json-write.h"
#include "render.h"

int sw_render_json_begin(const struct sw_render_options *o, struct sw_buf *out)
{
	int r =
	    sw_buf_printf(out, "{\"schema\":%d,\"type\":\"report\",\"tool\":", SW_RENDER_SCHEMA);
	return r < 0 ? r : sw_buf_printf(out, "\"stallwatch %s\",\"stalls\":[", o->tool_version);
}

int sw_render_json_end(struct sw_profile *p, const struct sw_render_options *o, struct sw_buf *out)
{
	struct sw_summary sum;
	int r = sw_summary_compute(p, &sum);
	if (r >= 0)
		r = sw_buf_puts(out, "],\"summary\":");
	if (r >= 0)
		r = sw_render_json_summary(p, &sum, o, false, out);
	return r < 0 ? r : sw_buf_puts(out, "}\n");
}

int sw_render_json_document(struct sw_profile *p, const struct sw_render_options *o,
			    struct sw_buf *out)
{
	int r = sw_render_json_begin(o, out);
	size_t n = sw_profile_nstalls(p);
	for (size_t i = 0; i < n && r >= 0; i++) {
		if (i)
			r = sw_buf_putc(out, ',');
		if (r >= 0)
			r = sw_render_json_stall(p, sw_profile_stall(p, i), o, false, out);
	}
	return r < 0 ? r : sw_render_json_end(p, o, out);
}
