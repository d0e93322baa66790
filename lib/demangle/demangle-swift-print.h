/*
 * Private to the printer of the Swift demangler, split over
 * demangle-swift-print.c (names, entities, types) and
 * demangle-swift-print-global.c (thunks, specializations, witness tables,
 * conformances): the output state and the helpers both use.
 */
#ifndef SW_DEMANGLE_SWIFT_PRINT_H
#define SW_DEMANGLE_SWIFT_PRINT_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "demangle-swift.h"

struct pr {
	struct sw_buf *out;
	bool simp;
	bool nested; /* no sugar for bound generic types */
	int err;
	unsigned depth;
};

static inline void put(struct pr *p, const char *s, size_t n)
{
	struct sw_buf *b = p->out;
	/* fast path: room in the buffer and under its ceiling */
	if (b->len + n < b->cap && b->len + n <= b->max && !p->err) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
		return;
	}
	if (p->err)
		return;
	int r = sw_buf_append(b, s, n);
	if (r < 0)
		p->err = r;
}

/* strlen of a literal folds to a constant */
#define puts_(p, s) put((p), (s), strlen(s))

static inline void putn(struct pr *p, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, v);
	put(p, b, (size_t)n);
}

static inline void text(struct pr *p, const struct swn *n)
{
	if (!n) {
		p->err = -EINVAL;
		return;
	}
	put(p, n->text, n->tlen);
}

/*
 * A node printed as fixed text around its first kid or two: pre, kids[0],
 * then mid and kids[1] if mid is set, then post if set.  Tables of these,
 * indexed by kind, stand for the switch arms that would only do that.
 */
struct pr_around {
	const char *pre, *mid, *post;
};

void swd_pr_print(struct pr *p, const struct swn *n);
/* Prints n by its row of table (K_COUNT rows); false if its row is empty. */
bool swd_pr_around(struct pr *p, const struct swn *n, const struct pr_around *table);
void swd_pr_sig(struct pr *p, const struct swn *sig);
void swd_pr_join(struct pr *p, const struct swn *list, const char *sep);
void swd_pr_subset(struct pr *p, uint64_t bits);
void swd_pr_name(struct pr *p, const struct swn *name);
/* Prints the global-level nodes; false if n is none of them. */
bool swd_print_global(struct pr *p, const struct swn *n);

#endif
