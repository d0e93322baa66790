#include <errno.h>
#include "render.h"
int sw_render_sample_stall(struct sw_profile *p, struct sw_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out) { return -ENOTSUP; }
int sw_render_speedscope(struct sw_profile *p, const struct sw_render_options *o,
			 struct sw_buf *out) { return -ENOTSUP; }
int sw_render_pprof(struct sw_profile *p, const struct sw_render_options *o, struct sw_buf *out) { return -ENOTSUP; }
