/*
 * libFuzzer target for MetricKit input: the bytes are a JSON document that
 * report would read; whatever it holds is loaded into a profile and
 * rendered as a tree and as NDJSON, so hostile trees reach the renderers.
 */
#include <stddef.h>
#include <stdint.h>

#include "report/metrickit.h"
#include "render/render.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sw_profile *p;
	struct sw_report *r;
	if (sw_profile_new(&p) < 0)
		return 0;
	if (sw_report_new(p, NULL, &r) < 0) {
		sw_profile_free(p);
		return 0;
	}
	struct sw_error err = {0};
	int n = sw_metrickit_load((const char *)data, size, p, r, "fuzz", 1, &err);
	if (n > 0) {
		struct sw_render_options o;
		sw_render_options_init(&o);
		o.tree.min_percent = 0;
		struct sw_buf out;
		sw_buf_init(&out, 0);
		for (size_t i = 0; i < sw_profile_nstalls(p); i++) {
			sw_render_tree_stall(p, sw_profile_stall(p, i), &o, &out);
			sw_render_json_stall(p, sw_profile_stall(p, i), &o, true, &out);
			sw_buf_reset(&out);
		}
		sw_buf_finish(&out);
	}
	sw_report_free(r);
	sw_profile_free(p);
	return 0;
}
