/*
 * JUnit XML for CI: one test case per stall signature, so a CI dashboard
 * tracks each distinct hang across runs.  A case is named by the function
 * that explains its stalls (sw_render_culprit()) with the signature beside
 * it: "spin_ms (app) sig 7f09e01574df5857".  It fails when one of its
 * stalls meets the failure condition; the failure's message names the
 * longest stall and its text is that stall's heaviest path.  Cases that
 * pass carry no body (the Ant schema allows none); their paths go to the
 * suite's system-out.  The file is valid against both the Ant-style schema
 * of Ant's JUnit tasks and the one Jenkins reads (tests/data/junit/).
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
	const char *timestamp;   /* when: "2026-11-23T18:32:00" (UTC, no zone) */
	const char *hostname;    /* where: a name, never empty */
	/* --baseline: signatures it holds are known hangs, which never fail */
	bool (*known)(const void *ctx, uint64_t signature);
	const void *known_ctx;
};

int sw_render_junit(struct sw_profile *p, const struct sw_junit_options *o, struct sw_buf *out);

#endif
