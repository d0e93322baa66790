/*
 * Private to the parser of Swift's legacy mangling, split over
 * demangle-swift-old.c (names, types, generics, entities) and
 * demangle-swift-old-global.c (thunks, specializations, witness tables,
 * metadata): the reading helpers both use.
 */
#ifndef SW_DEMANGLE_SWIFT_OLD_H
#define SW_DEMANGLE_SWIFT_OLD_H

#include <stdio.h>
#include <string.h>

#include "demangle-swift.h"

#define MAX_OLD_DEPTH 150

static inline int peek(struct swd *d)
{
	return d->pos < d->len ? (unsigned char)d->s[d->pos] : 0;
}

static inline int peek2(struct swd *d)
{
	return d->pos + 1 < d->len ? (unsigned char)d->s[d->pos + 1] : 0;
}

static inline int next(struct swd *d)
{
	return d->pos < d->len ? (unsigned char)d->s[d->pos++] : 0;
}

static inline bool nextif(struct swd *d, char c)
{
	if (d->pos < d->len && d->s[d->pos] == c) {
		d->pos++;
		return true;
	}
	return false;
}

static inline bool isdig(int c)
{
	return c >= '0' && c <= '9';
}

static inline bool enter(struct swd *d)
{
	return ++d->depth <= MAX_OLD_DEPTH;
}

static inline int64_t natural(struct swd *d)
{
	if (!isdig(peek(d)))
		return -1;
	int64_t v = 0;
	while (isdig(peek(d))) {
		v = v * 10 + (next(d) - '0');
		if (v > ((int64_t)1 << 40))
			return -1;
	}
	return v;
}

/* index ::= '_' | natural '_' (N+1) */
static inline int64_t index_(struct swd *d)
{
	if (nextif(d, '_'))
		return 0;
	int64_t v = natural(d);
	if (v < 0 || !nextif(d, '_'))
		return -1;
	return v + 1;
}

static inline struct swn *node(struct swd *d, enum swk k)
{
	return swd_node(d, k);
}

static inline struct swn *with(struct swd *d, enum swk k, struct swn *a, struct swn *b)
{
	if (!a)
		return NULL;
	return swd_with(d, k, a, b);
}

static inline bool add(struct swd *d, struct swn *p, struct swn *k)
{
	return p && k && swd_add(d, p, k) == 0;
}

static inline struct swn *text_node(struct swd *d, enum swk k, const char *t)
{
	return swd_text(d, k, t, strlen(t));
}

static inline struct swn *settext(struct swn *n, const char *t)
{
	if (n) {
		n->text = t;
		n->tlen = (uint16_t)strlen(t);
	}
	return n;
}

static inline bool add_subst(struct swd *d, struct swn *n)
{
	if (!n || d->nsubst >= SWD_MAX_SUBST)
		return false;
	d->subst[d->nsubst++] = n;
	return true;
}

struct swn *swo_context(struct swd *d);
struct swn *swo_entity(struct swd *d);
struct swn *swo_global(struct swd *d);
struct swn *swo_identifier(struct swd *d, enum swk want);
struct swn *swo_module(struct swd *d);
struct swn *swo_protocol_name(struct swd *d);
struct swn *swo_type(struct swd *d);
/* generic-signature ::= generic-param-count* ('R' requirement*)? 'r' */
struct swn *swd_old_sig(struct swd *d);

#endif
