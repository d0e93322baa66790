/*
 * Private to the two parsers of the Swift demangler (the current mangling,
 * demangle-swift-parse.h, and the legacy one, demangle-swift-old.h): the
 * helpers that read the name and make nodes, the same in both grammars.
 */
#ifndef SW_DEMANGLE_SWIFT_READ_H
#define SW_DEMANGLE_SWIFT_READ_H

#include <string.h>

#include "demangle-swift.h"

static inline int peek(struct swd *d)
{
	return d->pos < d->len ? (unsigned char)d->s[d->pos] : 0;
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

/* NATURAL: -1 if there is none or it is absurdly large. */
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

/* INDEX ::= '_' | NATURAL '_' (N+1) */
static inline int64_t demangle_index(struct swd *d)
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
	/* the first operand is never optional */
	return a ? swd_with(d, k, a, b) : NULL;
}

static inline struct swn *text_node(struct swd *d, enum swk k, const char *t)
{
	return swd_text(d, k, t, strlen(t));
}

/* Sets n's text to the NUL-terminated t (not copied); passes NULL through. */
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

/* A K_SPECIAL ("text kid") or K_PREFIX ("textkid") node; NULL if kid is. */
struct swn *swd_special(struct swd *d, const char *text, struct swn *kid);
struct swn *swd_prefix(struct swd *d, const char *text, struct swn *kid);

/*
 * The builtin type a letter stands for on its own ('w': "Builtin.Word"), or
 * NULL; the legacy mangling has fewer of them.
 */
const char *swd_builtin_name(int c, bool legacy);

/*
 * Reads option letters (letters[i] sets bits[i]) while each sets a bit not
 * yet set; returns the bits.
 */
unsigned swd_option_set(struct swd *d, const char *letters, const unsigned char *bits);
/* The operator kind a fixity letter ('p', 'P', 'i') gives, or K_COUNT. */
enum swk swd_fixity(int c);
/* The representation a metatype letter ('t', 'T', 'o') gives, or NULL. */
const char *swd_metatype_repr(int c);

/*
 * The value witness function a two-letter code names, or NULL; the legacy
 * mangling has all of them but the last two (single-payload enum tags).
 */
const char *swd_value_witness(int a, int b, bool legacy);

#endif
