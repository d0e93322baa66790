/*
 * Private to the parser of Swift's legacy mangling, split over
 * demangle-swift-old.c (names, types, generics, entities) and
 * demangle-swift-old-global.c (thunks, specializations, witness tables,
 * metadata): the helpers only the legacy grammar needs (the rest are in
 * demangle-swift-read.h).
 */
#ifndef SW_DEMANGLE_SWIFT_OLD_H
#define SW_DEMANGLE_SWIFT_OLD_H

#include <stdio.h>
#include <string.h>

#include "demangle-swift-read.h"

#define MAX_OLD_DEPTH 150

static inline int peek2(struct swd *d)
{
	return d->pos + 1 < d->len ? (unsigned char)d->s[d->pos + 1] : 0;
}

static inline bool enter(struct swd *d)
{
	return ++d->depth <= MAX_OLD_DEPTH;
}

/* unlike the stack parser's, takes a failed (NULL) parent or kid and fails */
static inline bool add(struct swd *d, struct swn *p, struct swn *k)
{
	return p && k && swd_add(d, p, k) == 0;
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
