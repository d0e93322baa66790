/*
 * --baseline FILE: the signatures of an earlier run, so that CI fails on a
 * new hang and not on a known one (see baseline.h).  FILE is NDJSON (the
 * "signature" of each stall object, with its "signature_version") or a
 * recording, whose stalls are symbolicated here and signed by this build.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "cli.h"
#include "report/report.h"
#include "symbols/symsearch.h"
#include "wire/recording.h"
#include "wire/stalls.h"

#define MAX_LINE (64u << 20)

struct sw_baseline {
	uint64_t *sigs; /* sorted */
	size_t n, cap;
};

static int add(struct sw_baseline *b, uint64_t sig)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		uint64_t *s = realloc(b->sigs, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		b->sigs = s;
		b->cap = cap;
	}
	b->sigs[b->n++] = sig;
	return 0;
}

/* The value after "key": in a JSON object line, as a number or a quoted hex string. */
static bool field(const char *line, const char *key, int base, uint64_t *ret)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p)
		return false;
	p += strlen(pat);
	if (*p == '"')
		p++;
	char *end;
	*ret = strtoull(p, &end, base);
	return end != p;
}

/* One stall object a line; 1 when the file is not NDJSON at all. */
static int load_ndjson(struct sw_baseline *b, const char *path, FILE *f, long *ret_version)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int r = 0, objects = 0;
	while (r >= 0 && (len = getline(&line, &cap, f)) >= 0) {
		if (len == 0 || line[0] != '{')
			continue;
		objects++;
		uint64_t sig, version = 1; /* NDJSON from before the field: version 1 */
		if (!strstr(line, "\"type\":\"stall\"") || !field(line, "signature", 16, &sig))
			continue;
		field(line, "signature_version", 10, &version);
		if (*ret_version < 0)
			*ret_version = (long)version;
		else if (*ret_version != (long)version)
			*ret_version = 0; /* mixed: refused below */
		r = add(b, sig);
	}
	free(line);
	return r < 0 ? r : objects ? 0 : 1;
}

/* A recording: its stalls signed by this build, as report would sign them. */
static int load_recording(struct sw_baseline *b, const char *path,
			  const struct sw_output_options *o, struct sw_error *err)
{
	struct sw_recording *rec = NULL;
	struct sw_profile *p = NULL;
	struct sw_symsearch *ss = NULL;
	struct sw_report *rep = NULL;
	struct sw_stalls *c = NULL;
	int r = sw_recording_open(path, &rec, err);
	if (r >= 0 &&
	    (sw_profile_new(&p) < 0 || sw_symsearch_new(&ss) < 0 || sw_stalls_new(&c) < 0))
		r = sw_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; r >= 0 && i < o->nsymbols; i++)
		sw_symsearch_add_path(ss, o->symbols[i]);
	if (r >= 0) {
		sw_symsearch_add_env(ss);
		sw_symsearch_add_host(ss);
		r = sw_report_new(p, ss, &rep);
	}
	for (;;) {
		struct sw_wire_msg m;
		const struct sw_stall *st = NULL;
		struct sw_tree_stall *ts;
		if (r < 0 || (r = sw_recording_next(rec, &m, err)) <= 0)
			break;
		if (sw_stalls_feed(c, &m, &st) == 1 &&
		    (r = sw_report_add_stall(rep, c, st, NULL, &ts)) >= 0)
			r = add(b, sw_tree_stall_signature(p, ts));
	}
	sw_report_free(rep);
	sw_stalls_free(c);
	sw_symsearch_free(ss);
	sw_profile_free(p);
	sw_recording_free(rec);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int sw_baseline_load(const char *path, const struct sw_output_options *o, struct sw_baseline **ret)
{
	struct sw_baseline *b = calloc(1, sizeof(*b));
	if (!b)
		return sw_cli_fail(SW_FAIL_INPUT, -ENOMEM, "out of memory");
	FILE *f = fopen(path, "re");
	char head[8] = {0};
	if (!f || fread(head, 1, sizeof(head), f) == 0) {
		int e = -errno;
		if (f)
			fclose(f);
		sw_baseline_free(b);
		return sw_cli_fail(SW_FAIL_INPUT, e, "cannot read the baseline '%s': %s", path,
				   f ? "it is empty" : strerror(-e));
	}
	rewind(f);
	long version = -1;
	struct sw_error err = {0};
	int r;
	if (memcmp(head, "SWTRACE", 7) == 0) {
		fclose(f);
		r = load_recording(b, path, o, &err);
		version = SW_SIGNATURE_VERSION;
	} else {
		r = load_ndjson(b, path, f, &version);
		fclose(f);
		if (r == 1)
			sw_error_set(&err, -EINVAL, "neither NDJSON nor a recording");
		if (r == 1)
			r = -EINVAL;
		else if (r < 0)
			sw_error_set(&err, r, "%s", strerror(-r));
	}
	if (r < 0) {
		sw_baseline_free(b);
		return sw_cli_fail(SW_FAIL_INPUT, r, "cannot read the baseline '%s': %s", path,
				   sw_error_str(&err));
	}
	if (version >= 0 && version != SW_SIGNATURE_VERSION) {
		sw_baseline_free(b);
		char was[32];
		snprintf(was, sizeof(was), version ? "version %ld" : "mixed versions", version);
		return sw_cli_fail(
		    SW_FAIL_INPUT, 0,
		    "the baseline '%s' holds signatures of %s; this stallwatch makes "
		    "version %d: record a new baseline",
		    path, was, SW_SIGNATURE_VERSION);
	}
	qsort(b->sigs, b->n, sizeof(*b->sigs), cmp_u64);
	*ret = b;
	return 0;
}

void sw_baseline_free(struct sw_baseline *b)
{
	if (!b)
		return;
	free(b->sigs);
	free(b);
}

bool sw_baseline_has(const struct sw_baseline *b, uint64_t sig)
{
	return b && bsearch(&sig, b->sigs, b->n, sizeof(*b->sigs), cmp_u64) != NULL;
}

size_t sw_baseline_count(const struct sw_baseline *b)
{
	return b ? b->n : 0;
}
