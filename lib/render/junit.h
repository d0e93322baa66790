/*
 * JUnit XML for CI: one test case per stall signature, so a CI dashboard
 * tracks each distinct hang across runs.  A case fails when one of its
 * stalls meets the failure condition; its message names the longest stall
 * and its body is that stall's heaviest path.
 */
#ifndef SW_JUNIT_H
#define SW_JUNIT_H

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "tree/tree.h"

struct sw_junit_options {
	bool fail_on_stall;      /* any stall fails its case */
	uint64_t fail_longer_ns; /* 0: none; else stalls longer than this fail */
	bool qualify;            /* stall labels carry their source */
};

int sw_render_junit(struct sw_profile *p, const struct sw_junit_options *o, struct sw_buf *out);

#endif
