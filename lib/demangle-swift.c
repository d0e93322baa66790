/*
 * The parser of Swift's current mangling ($s, $S, _T0, @__swiftmacro_),
 * written from the grammar in Swift's docs/ABI/Mangling.rst.
 *
 * The mangling is postfix: operands come first and an operator then says
 * what they are ("4Test3FooC": two identifiers, then 'C' makes a class of
 * them).  So the parser is a stack machine: each operator pops its operands
 * and pushes one node; at the end the stack holds the global's parts.  There
 * is no recursion on input structure here, so depth is bounded by the stack
 * size; nodes come from the bounded arena (demangle-swift-node.c).
 */
#include <stdio.h>
#include <string.h>

#include "demangle-swift.h"

#define FAIL NULL

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

static inline bool islow(int c)
{
	return c >= 'a' && c <= 'z';
}

static inline bool isup(int c)
{
	return c >= 'A' && c <= 'Z';
}

/* NATURAL: -1 if there is none or it is absurdly large. */
static int64_t natural(struct swd *d)
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
static int64_t demangle_index(struct swd *d)
{
	if (nextif(d, '_'))
		return 0;
	int64_t v = natural(d);
	if (v < 0 || !nextif(d, '_'))
		return -1;
	return v + 1;
}

static bool push(struct swd *d, struct swn *n)
{
	if (!n || d->nstack >= SWD_MAX_STACK)
		return false;
	d->stack[d->nstack++] = n;
	return true;
}

static struct swn *top(struct swd *d)
{
	return d->nstack ? d->stack[d->nstack - 1] : NULL;
}

static struct swn *pop(struct swd *d)
{
	return d->nstack ? d->stack[--d->nstack] : NULL;
}

static struct swn *pop_kind(struct swd *d, enum swk k)
{
	struct swn *t = top(d);
	if (t && t->kind == k)
		return pop(d);
	return NULL;
}

static struct swn *pop_type(struct swd *d)
{
	struct swn *t = top(d);
	if (swd_is_type(t))
		return pop(d);
	return NULL;
}

static bool add_subst(struct swd *d, struct swn *n)
{
	if (!n || d->nsubst >= SWD_MAX_SUBST)
		return false;
	d->subst[d->nsubst++] = n;
	return true;
}

static struct swn *node(struct swd *d, enum swk k)
{
	return swd_node(d, k);
}

static struct swn *with(struct swd *d, enum swk k, struct swn *a, struct swn *b)
{
	return swd_with(d, k, a, b);
}

static struct swn *with3(struct swd *d, enum swk k, struct swn *a, struct swn *b, struct swn *c)
{
	struct swn *n = swd_with(d, k, a, b);
	if (n && c && swd_add(d, n, c) < 0)
		return NULL;
	return n;
}

static bool add(struct swd *d, struct swn *p, struct swn *k)
{
	return swd_add(d, p, k) == 0;
}

static struct swn *text_node(struct swd *d, enum swk k, const char *t)
{
	return swd_text(d, k, t, strlen(t));
}

static bool is_decl_name(const struct swn *n)
{
	if (!n)
		return false;
	switch (n->kind) {
	case K_IDENT:
	case K_LOCAL_NAME:
	case K_PRIVATE_NAME:
	case K_RELATED_NAME:
	case K_PREFIX_OP:
	case K_POSTFIX_OP:
	case K_INFIX_OP:
	case K_MACRO_EXPANSION:
		return true;
	default:
		return false;
	}
}

static bool is_entity(const struct swn *n)
{
	if (!n)
		return false;
	switch (n->kind) {
	case K_CLASS:
	case K_STRUCT:
	case K_ENUM:
	case K_PROTOCOL:
	case K_TYPEALIAS:
	case K_OTHER_NOMINAL:
	case K_FUNCTION:
	case K_VARIABLE:
	case K_SUBSCRIPT:
	case K_CONSTRUCTOR:
	case K_ALLOCATOR:
	case K_DESTRUCTOR:
	case K_DEALLOCATOR:
	case K_ISO_DEALLOCATOR:
	case K_IVAR_INIT:
	case K_IVAR_DESTROYER:
	case K_EXPL_CLOSURE:
	case K_IMPL_CLOSURE:
	case K_DEFAULT_ARG:
	case K_INITIALIZER:
	case K_PW_BACKING_INIT:
	case K_PW_INIT_PROJECTED:
	case K_FIELD_INIT_ACCESSOR:
	case K_GENERIC_PARAM_DECL:
	case K_ENUM_ELEMENT:
	case K_MACRO:
	case K_MACRO_EXPANSION:
	case K_ACCESSOR:
	case K_STATIC:
	case K_EXTENSION:
	case K_ANON_CONTEXT:
	case K_UNKNOWN_CONTEXT:
	case K_OPAQUE_RETURN:
	case K_RUNTIME_ATTR_GEN:
		return true;
	default:
		return false;
	}
}

static struct swn *pop_module(struct swd *d)
{
	struct swn *t = top(d);
	if (!t)
		return NULL;
	if (t->kind == K_MODULE)
		return pop(d);
	if (t->kind == K_IDENT) {
		pop(d);
		return swd_text(d, K_MODULE, t->text, t->tlen);
	}
	return NULL;
}

static struct swn *pop_context(struct swd *d)
{
	struct swn *m = pop_module(d);
	if (m)
		return m;
	struct swn *t = top(d);
	if (t && is_entity(t))
		return pop(d);
	return NULL;
}

static struct swn *pop_decl_name(struct swd *d)
{
	struct swn *t = top(d);
	if (t && is_decl_name(t) && t->kind != K_MACRO_EXPANSION)
		return pop(d);
	return NULL;
}

static bool is_protocol(const struct swn *n)
{
	return n && n->kind == K_PROTOCOL;
}

static struct swn *pop_protocol(struct swd *d)
{
	struct swn *t = top(d);
	if (!t)
		return NULL;
	if (swd_is_type(t)) {
		if (!is_protocol(t))
			return NULL;
		return pop(d);
	}
	struct swn *name = pop_decl_name(d);
	if (!name)
		return NULL;
	struct swn *ctx = pop_context(d);
	if (!ctx)
		return NULL;
	return with(d, K_PROTOCOL, ctx, name);
}

/* ------------------------------------------------------------------ */
/* identifiers */

static bool word_start(int c)
{
	return c != 0 && !isdig(c) && c != '_';
}

static bool word_end(int c, int prev)
{
	return c == '_' || c == 0 || (!isup(prev) && isup(c));
}

static void add_words(struct swd *d, const char *s, size_t n)
{
	int start = -1;
	for (size_t i = 0; i <= n; i++) {
		int c = i < n ? (unsigned char)s[i] : 0;
		if (start >= 0 && word_end(c, (unsigned char)s[i - 1])) {
			if ((int)i - start >= 2 && d->nwords < 26 && i - (size_t)start < 256) {
				d->words[d->nwords] = s + start;
				d->wordlen[d->nwords] = (uint8_t)(i - (size_t)start);
				d->nwords++;
			}
			start = -1;
		}
		if (start < 0 && word_start(c))
			start = (int)i;
	}
}

/* Punycode digit with Swift's alphabet: a-z 0..25, A-J 26..35. */
static int puny_digit(int c)
{
	if (islow(c))
		return c - 'a';
	if (c >= 'A' && c <= 'J')
		return c - 'A' + 26;
	return -1;
}

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* RFC 3492 decoding with '_' as delimiter; appends UTF-8 to out. */
bool swd_punycode(const char *in, size_t n, char *out, size_t *olen, size_t ocap)
{
	enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700 };
	uint32_t cps[1024];
	size_t ncp = 0;
	size_t delim = n;
	for (size_t i = n; i > 0; i--) {
		if (in[i - 1] == '_') {
			delim = i - 1;
			break;
		}
	}
	size_t pos = 0;
	if (delim < n) {
		for (size_t i = 0; i < delim; i++) {
			if ((unsigned char)in[i] >= 0x80 || ncp >= 1024)
				return false;
			cps[ncp++] = (unsigned char)in[i];
		}
		pos = delim + 1;
	}
	uint32_t cp = 0x80, bias = 72;
	uint64_t i = 0;
	while (pos < n) {
		uint64_t oldi = i, w = 1;
		for (uint32_t k = BASE;; k += BASE) {
			if (pos >= n)
				return false;
			int dg = puny_digit((unsigned char)in[pos++]);
			if (dg < 0)
				return false;
			i += (uint64_t)dg * w;
			if (i > 0x7fffffff)
				return false;
			uint32_t t = k <= bias ? TMIN : (k >= bias + TMAX ? TMAX : k - bias);
			if ((uint32_t)dg < t)
				break;
			w *= BASE - t;
			if (w > 0x7fffffff)
				return false;
		}
		/* adapt */
		uint64_t delta = (i - oldi) / (oldi == 0 ? DAMP : 2);
		delta += delta / (ncp + 1);
		uint32_t k = 0;
		while (delta > ((BASE - TMIN) * TMAX) / 2) {
			delta /= BASE - TMIN;
			k += BASE;
		}
		bias = (uint32_t)(k + (BASE - TMIN + 1) * delta / (delta + SKEW));
		if (ncp >= 1024)
			return false;
		cp += (uint32_t)(i / (ncp + 1));
		if (cp > 0x10ffff)
			return false;
		i %= (ncp + 1);
		memmove(cps + i + 1, cps + i, (ncp - i) * sizeof(cps[0]));
		cps[i] = cp;
		ncp++;
		i++;
	}
	size_t o = 0;
	for (size_t j = 0; j < ncp; j++) {
		if (o + 4 > ocap)
			return false;
		/* ASCII that is not an identifier character travels as U+D8xx */
		if (cps[j] >= 0xd800 && cps[j] < 0xd880)
			out[o++] = (char)(cps[j] - 0xd800);
		else
			o += put_utf8(out + o, cps[j]);
	}
	*olen = o;
	return true;
}

static struct swn *identifier(struct swd *d)
{
	bool words = false, puny = false;
	int c = peek(d);
	if (!isdig(c))
		return NULL;
	if (c == '0') {
		next(d);
		if (nextif(d, '0'))
			puny = true;
		else
			words = true;
	}
	char buf[1024];
	size_t blen = 0;
	const char *direct = NULL;
	size_t dlen = 0;
	int pieces = 0;
	do {
		while (words && (islow(peek(d)) || isup(peek(d)))) {
			int ch = next(d);
			unsigned idx;
			if (islow(ch)) {
				idx = (unsigned)(ch - 'a');
			} else {
				idx = (unsigned)(ch - 'A');
				words = false;
			}
			if (idx >= d->nwords || blen + d->wordlen[idx] > sizeof(buf))
				return NULL;
			memcpy(buf + blen, d->words[idx], d->wordlen[idx]);
			blen += d->wordlen[idx];
			pieces += 2;
		}
		if (nextif(d, '0'))
			break;
		int64_t n = natural(d);
		if (n <= 0)
			return NULL;
		if (puny)
			nextif(d, '_');
		if ((uint64_t)n > d->len - d->pos)
			return NULL;
		const char *slice = d->s + d->pos;
		d->pos += (size_t)n;
		if (puny) {
			size_t olen;
			if (!swd_punycode(slice, (size_t)n, buf + blen, &olen, sizeof(buf) - blen))
				return NULL;
			blen += olen;
			pieces += 2;
		} else {
			if (pieces == 0 && !words) {
				direct = slice;
				dlen = (size_t)n;
			} else {
				if (blen + (size_t)n > sizeof(buf))
					return NULL;
				memcpy(buf + blen, slice, (size_t)n);
				blen += (size_t)n;
			}
			pieces++;
			add_words(d, slice, (size_t)n);
		}
	} while (words);
	struct swn *id;
	if (direct && pieces == 1) {
		id = swd_text(d, K_IDENT, direct, dlen);
	} else {
		if (blen == 0)
			return NULL;
		char *t = swd_alloc(d, blen);
		if (!t)
			return NULL;
		memcpy(t, buf, blen);
		id = swd_text(d, K_IDENT, t, blen);
	}
	if (!add_subst(d, id))
		return NULL;
	return id;
}

/* identifier 'o' fixity: operator characters are spelled as letters */
static struct swn *operator_ident(struct swd *d)
{
	struct swn *id = pop_kind(d, K_IDENT);
	if (!id)
		return NULL;
	enum swk k;
	switch (next(d)) {
	case 'p':
		k = K_PREFIX_OP;
		break;
	case 'P':
		k = K_POSTFIX_OP;
		break;
	case 'i':
		k = K_INFIX_OP;
		break;
	default:
		return NULL;
	}
	char *t = swd_alloc(d, id->tlen ? id->tlen : 1);
	if (!t)
		return NULL;
	for (unsigned i = 0; i < id->tlen; i++) {
		unsigned char c = (unsigned char)id->text[i];
		char m = swd_operator_char((char)c);
		if (m)
			t[i] = m;
		else if (c >= 0x80 || c == '_' || c == '$' || isdig(c) || isup(c) || islow(c))
			t[i] = (char)c;
		else
			return NULL;
	}
	return swd_text(d, k, t, id->tlen);
}

/* ------------------------------------------------------------------ */
/* substitutions */

static bool push_subst(struct swd *d, int64_t idx, int64_t repeat)
{
	if (idx < 0 || (uint64_t)idx >= d->nsubst || repeat > SWD_MAX_STACK)
		return false;
	for (int64_t i = 0; i < repeat; i++)
		if (!push(d, d->subst[idx]))
			return false;
	return true;
}

static bool substitution(struct swd *d)
{
	for (;;) {
		int64_t n = natural(d);
		if (nextif(d, '_')) {
			/* 'A' INDEX: substitution N+26, only as the whole operator */
			return push_subst(d, (n < 0 ? 0 : n + 1) + 26, 1);
		}
		if (n == 0)
			return false;
		int64_t rep = n < 0 ? 1 : n;
		int c = next(d);
		if (islow(c)) {
			if (!push_subst(d, c - 'a', rep))
				return false;
			continue;
		}
		if (isup(c))
			return push_subst(d, c - 'A', rep);
		return false;
	}
}

static struct swn *standard_type(struct swd *d, char c, bool second)
{
	const char *name = swd_known_type(c, second);
	if (!name)
		return NULL;
	struct swn *mod = text_node(d, K_MODULE, "Swift");
	struct swn *id = text_node(d, K_IDENT, name);
	return with(d, swd_known_kind(c, second), mod, id);
}

static bool known_substitution(struct swd *d)
{
	int64_t rep = natural(d);
	if (rep == 0)
		return false;
	if (rep < 0)
		rep = 1;
	if (rep > SWD_MAX_STACK)
		return false;
	int c = next(d);
	struct swn *n = NULL;
	if (c == 'o') {
		n = text_node(d, K_MODULE, "__C");
	} else if (c == 'C') {
		n = text_node(d, K_MODULE, "__C_Synthesized");
	} else if (c == 'g') {
		struct swn *t = pop_type(d);
		if (!t)
			return false;
		struct swn *opt = standard_type(d, 'q', false);
		struct swn *tl = with(d, K_TYPE_LIST, t, NULL);
		n = with(d, K_BOUND_GENERIC, opt, tl);
		if (!add_subst(d, n))
			return false;
	} else if (c == 'c') {
		n = standard_type(d, (char)next(d), true);
	} else {
		n = standard_type(d, (char)c, false);
	}
	if (!n)
		return false;
	for (int64_t i = 0; i < rep; i++)
		if (!push(d, n))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* generic parameters and signatures */

static struct swn *param_type(struct swd *d, uint64_t depth, uint64_t idx)
{
	struct swn *n = node(d, K_PARAM_TYPE);
	if (!n)
		return NULL;
	n->index = idx;
	n->index2 = depth;
	return n;
}

/* GENERIC-PARAM-INDEX */
static struct swn *generic_param_index(struct swd *d)
{
	if (nextif(d, 'd')) {
		int64_t depth = demangle_index(d);
		int64_t idx = demangle_index(d);
		if (depth < 0 || idx < 0)
			return NULL;
		return param_type(d, (uint64_t)depth + 1, (uint64_t)idx);
	}
	if (nextif(d, 'z'))
		return param_type(d, 0, 0);
	if (nextif(d, 's')) {
		struct swn *n = param_type(d, 0, 0);
		if (n)
			n->text = "Self", n->tlen = 4;
		return n;
	}
	int64_t idx = demangle_index(d);
	if (idx < 0)
		return NULL;
	return param_type(d, 0, (uint64_t)idx + 1);
}

static bool is_requirement(const struct swn *n)
{
	if (!n)
		return false;
	switch (n->kind) {
	case K_REQ_CONF:
	case K_REQ_SAME:
	case K_REQ_BASE:
	case K_REQ_LAYOUT:
	case K_REQ_INVERSE:
	case K_REQ_SHAPE:
	case K_PACK_MARK:
	case K_VALUE_MARK:
		return true;
	default:
		return false;
	}
}

static struct swn *generic_signature(struct swd *d, bool counts)
{
	struct swn *sig = node(d, K_SIG);
	if (!sig)
		return NULL;
	if (counts) {
		while (!nextif(d, 'l')) {
			int64_t c = 0;
			if (!nextif(d, 'z')) {
				c = demangle_index(d);
				if (c < 0)
					return NULL;
				c++;
			}
			if (c > 10000 || !add(d, sig, swd_index(d, K_PARAM_COUNT, (uint64_t)c)))
				return NULL;
		}
	} else {
		if (!add(d, sig, swd_index(d, K_PARAM_COUNT, 1)))
			return NULL;
	}
	unsigned nparams = sig->nkids;
	/* requirements were pushed in order; pop them back to front */
	unsigned first = d->nstack;
	while (first > 0 && is_requirement(d->stack[first - 1]))
		first--;
	for (unsigned i = first; i < d->nstack; i++) {
		if (d->stack[i]->kind == K_PACK_MARK || d->stack[i]->kind == K_VALUE_MARK)
			continue;
		if (!add(d, sig, d->stack[i]))
			return NULL;
	}
	/* markers go right after the counts, flagged for the printer */
	for (unsigned i = first; i < d->nstack; i++) {
		if (d->stack[i]->kind != K_PACK_MARK && d->stack[i]->kind != K_VALUE_MARK)
			continue;
		if (!add(d, sig, d->stack[i]))
			return NULL;
	}
	(void)nparams;
	d->nstack = first;
	if (sig->nkids == 0)
		return sig;
	return sig;
}

/* assoc-type-name ::= identifier protocol? */
static struct swn *pop_assoc_name(struct swd *d)
{
	struct swn *proto = NULL;
	struct swn *t = top(d);
	if (t && swd_is_type(t)) {
		if (!is_protocol(t))
			return NULL;
		proto = pop(d);
	}
	struct swn *id = pop_kind(d, K_IDENT);
	if (!id)
		return NULL;
	struct swn *ref = with(d, K_ASSOC_REF, id, proto);
	return ref;
}

static struct swn *pop_assoc_path(struct swd *d)
{
	struct swn *list = node(d, K_TYPE_LIST);
	if (!list)
		return NULL;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *a = pop_assoc_name(d);
		if (!a || !add(d, list, a))
			return NULL;
	} while (!first);
	/* reverse */
	for (unsigned i = 0, j = list->nkids - 1; list->nkids && i < j; i++, j--) {
		struct swn *x = list->kids[i];
		list->kids[i] = list->kids[j];
		list->kids[j] = x;
	}
	return list;
}

static struct swn *dep_member_chain(struct swd *d, struct swn *base, struct swn *path)
{
	for (unsigned i = 0; i < path->nkids; i++) {
		base = with(d, K_DEP_MEMBER, base, path->kids[i]);
		if (!base)
			return NULL;
	}
	return base;
}

static struct swn *requirement(struct swd *d, int c)
{
	struct swn *subject = NULL, *other = NULL;
	enum swk k;
	struct swn *path = NULL;
	/* the layout / inverse forms read extra data after the operator */
	switch (c) {
	case 'v': { /* pack marker */
		struct swn *p = generic_param_index(d);
		return with(d, K_PACK_MARK, p, NULL);
	}
	case 'V': {
		struct swn *t = pop_type(d);
		struct swn *p = generic_param_index(d);
		return with(d, K_VALUE_MARK, p, t);
	}
	case 'i':
	case 'I':
	case 'j':
	case 'J': {
		struct swn *s = NULL;
		if (c == 'I') {
			s = pop_type(d);
		} else if (c == 'j') {
			path = pop_assoc_name(d);
		} else if (c == 'J') {
			path = pop_assoc_path(d);
		}
		int64_t bit = demangle_index(d);
		if (bit < 0)
			return NULL;
		if (c != 'I') {
			s = generic_param_index(d);
			if (!s)
				return NULL;
			if (c == 'j')
				s = with(d, K_DEP_MEMBER, s, path);
			else if (c == 'J')
				s = dep_member_chain(d, s, path);
			if (path && !add_subst(d, s))
				return NULL;
		}
		struct swn *r = with(d, K_REQ_INVERSE, s, NULL);
		if (r)
			r->index = (uint64_t)bit;
		return r;
	}
	case 'h': {
		struct swn *t = pop_type(d);
		struct swn *p = generic_param_index(d);
		return with(d, K_REQ_SHAPE, p, t);
	}
	default:
		break;
	}
	if (!strchr("RpPQbcCBstTSlmML", c) || c == 0) {
		d->pos--;
		c = 'R';
	}
	/* conformance (protocol), base class / same type / layout (type) */
	bool proto = (c == 'R' || c == 'p' || c == 'P' || c == 'Q');
	bool layout = (c == 'l' || c == 'm' || c == 'M' || c == 'L');
	switch (c) {
	case 'R':
	case 'p':
	case 'P':
	case 'Q':
		k = K_REQ_CONF;
		break;
	case 'b':
	case 'c':
	case 'C':
	case 'B':
		k = K_REQ_BASE;
		break;
	case 's':
	case 't':
	case 'T':
	case 'S':
		k = K_REQ_SAME;
		break;
	case 'l':
	case 'm':
	case 'M':
	case 'L':
		k = K_REQ_LAYOUT;
		break;
	default:
		return NULL;
	}
	/* subject */
	switch (c) {
	case 'R':
	case 'b':
	case 's':
	case 'l':
		break;
	case 'p':
	case 'c':
	case 't':
	case 'm':
		path = pop_assoc_name(d);
		if (!path)
			return NULL;
		break;
	case 'P':
	case 'C':
	case 'T':
		path = pop_assoc_path(d);
		if (!path)
			return NULL;
		break;
	case 'Q':
	case 'B':
	case 'S':
	case 'L':
		subject = pop_type(d);
		if (!subject)
			return NULL;
		break;
	case 'M':
		/* RM is both "assoc path + param" and "substitution"; the
		 * substitution form has a type on top */
		if (swd_is_type(top(d)) && !is_protocol(top(d)) && top(d)->kind != K_PROTOCOL) {
			subject = pop_type(d);
		} else {
			path = pop_assoc_path(d);
			if (!path)
				return NULL;
		}
		break;
	}
	if (!layout) {
		other = proto ? pop_protocol(d) : pop_type(d);
		if (!other)
			return NULL;
	}
	if (!subject) {
		struct swn *p = generic_param_index(d);
		if (!p)
			return NULL;
		if (path && path->kind == K_ASSOC_REF)
			subject = with(d, K_DEP_MEMBER, p, path);
		else if (path)
			subject = dep_member_chain(d, p, path);
		else
			subject = p;
		if (!subject || (path && !add_subst(d, subject)))
			return NULL;
	}
	if (layout) {
		struct swn *r = with(d, K_REQ_LAYOUT, subject, NULL);
		if (!r)
			return NULL;
		int lc = next(d);
		const char *name = NULL;
		int nsizes = 0;
		switch (lc) {
		case 'U':
			name = "_UnknownLayout";
			break;
		case 'R':
			name = "_RefCountedObject";
			break;
		case 'N':
			name = "_NativeRefCountedObject";
			break;
		case 'C':
			name = "AnyObject";
			break;
		case 'D':
			name = "_NativeClass";
			break;
		case 'T':
			name = "_Trivial";
			break;
		case 'B':
			name = "_BridgeObject";
			break;
		case 'S':
			name = "_TrivialStride";
			break;
		case 'E':
			name = "_Trivial";
			nsizes = 2;
			break;
		case 'e':
			name = "_Trivial";
			nsizes = 1;
			break;
		case 'M':
			name = "_TrivialAtMost";
			nsizes = 2;
			break;
		case 'm':
			name = "_TrivialAtMost";
			nsizes = 1;
			break;
		default:
			return NULL;
		}
		r->text = name;
		r->tlen = (uint16_t)strlen(name);
		if (nsizes >= 1) {
			int64_t sz = demangle_index(d);
			if (sz < 0)
				return NULL;
			r->index = (uint64_t)sz;
			r->flags |= SWF_HAS_INDEX;
		}
		if (nsizes >= 2) {
			int64_t al = demangle_index(d);
			if (al < 0)
				return NULL;
			r->index2 = (uint64_t)al;
			r->flags |= SWF_MUTABLE; /* has alignment */
		}
		return r;
	}
	return with(d, k, subject, other);
}

/* ------------------------------------------------------------------ */
/* types */

enum { M_ASYNC = 1, M_SENDABLE, M_THROWS, M_TYPED_THROWS, M_DIFF, M_ISOLATION, M_SENDING };

static struct swn *marker(struct swd *d, int code, const char *text, struct swn *kid)
{
	struct swn *n = node(d, K_ATTR_TYPE);
	if (!n)
		return NULL;
	n->index = (uint64_t)code;
	if (text) {
		n->text = text;
		n->tlen = (uint16_t)strlen(text);
	}
	if (kid && !add(d, n, kid))
		return NULL;
	return n;
}

static struct swn *pop_marker(struct swd *d, int code)
{
	struct swn *t = top(d);
	if (t && t->kind == K_ATTR_TYPE && t->index == (uint64_t)code)
		return pop(d);
	return NULL;
}

static struct swn *pop_params(struct swd *d)
{
	if (pop_kind(d, K_EMPTY_LIST))
		return node(d, K_TUPLE);
	return pop_type(d);
}

/* function-signature: result params async? sendable? throws? diff? isolation? sending? */
static struct swn *pop_function_type(struct swd *d, const char *conv)
{
	struct swn *fn = node(d, K_FUNC);
	if (!fn)
		return NULL;
	fn->text = conv;
	fn->tlen = conv ? (uint16_t)strlen(conv) : 0;
	struct swn *m;
	struct swn *extra[4];
	unsigned nextra = 0;
	if (pop_marker(d, M_SENDING))
		fn->flags |= SWFN_SENDING;
	if ((m = pop_marker(d, M_ISOLATION))) {
		if (m->nkids)
			extra[nextra++] = with(d, K_GLOBAL_ACTOR, m->kids[0], NULL);
		else if (m->text && m->text[0] == 'i')
			fn->flags |= SWFN_ISO_ANY;
		else
			fn->flags |= SWFN_NONSENDING;
	}
	if ((m = pop_marker(d, M_DIFF)))
		extra[nextra++] = m;
	if (pop_marker(d, M_THROWS))
		fn->flags |= SWFN_THROWS;
	else if ((m = pop_marker(d, M_TYPED_THROWS)))
		extra[nextra++] = with(d, K_TYPED_THROWS, m->kids[0], NULL);
	if (pop_marker(d, M_SENDABLE))
		fn->flags |= SWFN_SENDABLE;
	if (pop_marker(d, M_ASYNC))
		fn->flags |= SWFN_ASYNC;
	struct swn *params = pop_params(d);
	struct swn *result = pop_params(d);
	if (!params || !result || !add(d, fn, params) || !add(d, fn, result))
		return NULL;
	for (unsigned i = 0; i < nextra; i++)
		if (!add(d, fn, extra[i]))
			return NULL;
	return fn;
}

static const struct swn *strip_dep(const struct swn *t)
{
	while (t && t->kind == K_DEP_GENERIC_TYPE && t->nkids == 2)
		t = t->kids[1];
	return t;
}

/* label-list before a function type: 'y' (none) or one label or '_' per parameter */
static bool pop_labels(struct swd *d, const struct swn *type, struct swn **ret)
{
	*ret = NULL;
	if (d->old_mangling)
		return true; /* Swift 4.0 kept labels in the parameter tuple */
	if (pop_kind(d, K_EMPTY_LIST)) {
		*ret = node(d, K_LABEL_LIST);
		return *ret != NULL;
	}
	const struct swn *fn = strip_dep(type);
	if (!fn || fn->kind != K_FUNC)
		return true;
	const struct swn *params = fn->kids[0];
	unsigned n = params->kind == K_TUPLE ? params->nkids : 1;
	if (n == 0)
		return true;
	struct swn *list = node(d, K_LABEL_LIST);
	if (!list)
		return false;
	if (d->nstack < n)
		return false;
	bool any = false;
	for (unsigned i = d->nstack - n; i < d->nstack; i++) {
		struct swn *l = d->stack[i];
		if (l->kind != K_IDENT && l->kind != K_FIRST_MARK)
			return false;
		any |= l->kind == K_IDENT;
		if (!add(d, list, l))
			return false;
	}
	d->nstack -= n;
	if (!any)
		list->nkids = 0;
	*ret = list;
	return true;
}

static struct swn *pop_tuple(struct swd *d)
{
	struct swn *tup = node(d, K_TUPLE);
	if (!tup)
		return NULL;
	if (pop_kind(d, K_EMPTY_LIST))
		return tup;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *el = node(d, K_TUPLE_ELEM);
		if (!el)
			return NULL;
		if (pop_kind(d, K_VARIADIC_MARK))
			el->flags |= SWF_VARIADIC;
		struct swn *label = pop_kind(d, K_IDENT);
		struct swn *t = pop_type(d);
		if (!t)
			return NULL;
		if (label && !add(d, el, label))
			return NULL;
		if (!add(d, el, t) || !add(d, tup, el))
			return NULL;
	} while (!first);
	for (unsigned i = 0, j = tup->nkids - 1; i < j; i++, j--) {
		struct swn *x = tup->kids[i];
		tup->kids[i] = tup->kids[j];
		tup->kids[j] = x;
	}
	return tup;
}

static struct swn *pop_type_list(struct swd *d)
{
	struct swn *list = node(d, K_TYPE_LIST);
	if (!list)
		return NULL;
	if (pop_kind(d, K_EMPTY_LIST))
		return list;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *t = pop_type(d);
		if (!t || !add(d, list, t))
			return NULL;
	} while (!first);
	for (unsigned i = 0, j = list->nkids - 1; i < j; i++, j--) {
		struct swn *x = list->kids[i];
		list->kids[i] = list->kids[j];
		list->kids[j] = x;
	}
	return list;
}

static struct swn *pop_proto_list(struct swd *d)
{
	struct swn *list = node(d, K_PROTO_LIST);
	if (!list)
		return NULL;
	if (pop_kind(d, K_EMPTY_LIST))
		return list;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *p = pop_protocol(d);
		if (!p || !add(d, list, p))
			return NULL;
	} while (!first);
	for (unsigned i = 0, j = list->nkids - 1; i < j; i++, j--) {
		struct swn *x = list->kids[i];
		list->kids[i] = list->kids[j];
		list->kids[j] = x;
	}
	return list;
}

static bool is_conformance(const struct swn *n)
{
	if (!n)
		return false;
	switch (n->kind) {
	case K_CONC_CONF:
	case K_DEP_CONF_ROOT:
	case K_DEP_CONF_INHERITED:
	case K_DEP_CONF_ASSOC:
	case K_DEP_CONF_OPAQUE:
	case K_PACK_CONF:
		return true;
	default:
		return false;
	}
}

static struct swn *pop_retroactive(struct swd *d)
{
	struct swn *list = NULL;
	while (top(d) && top(d)->kind == K_RETRO) {
		if (!list && !(list = node(d, K_TYPE_LIST)))
			return NULL;
		if (!add(d, list, pop(d)))
			return NULL;
	}
	if (list) {
		for (unsigned i = 0, j = list->nkids - 1; i < j; i++, j--) {
			struct swn *x = list->kids[i];
			list->kids[i] = list->kids[j];
			list->kids[j] = x;
		}
	}
	return list;
}

/* (type* '_')* type* after a 'y': lists innermost first */
static int pop_bound_lists(struct swd *d, struct swn **lists, int max, struct swn **retro)
{
	*retro = pop_retroactive(d);
	int n = 0;
	for (;;) {
		if (n >= max)
			return -1;
		struct swn *list = node(d, K_TYPE_LIST);
		if (!list)
			return -1;
		unsigned first = d->nstack;
		while (first > 0 && swd_is_type(d->stack[first - 1]))
			first--;
		for (unsigned i = first; i < d->nstack; i++)
			if (!add(d, list, d->stack[i]))
				return -1;
		d->nstack = first;
		lists[n++] = list;
		if (pop_kind(d, K_EMPTY_LIST))
			return n;
		if (!pop_kind(d, K_FIRST_MARK))
			return -1;
	}
}

static bool consumes_args(enum swk k)
{
	switch (k) {
	case K_VARIABLE:
	case K_SUBSCRIPT:
	case K_IMPL_CLOSURE:
	case K_EXPL_CLOSURE:
	case K_DEFAULT_ARG:
	case K_INITIALIZER:
	case K_PW_BACKING_INIT:
	case K_PW_INIT_PROJECTED:
	case K_STATIC:
		return false;
	default:
		return true;
	}
}

static struct swn *copy_node(struct swd *d, const struct swn *n)
{
	struct swn *c = node(d, (enum swk)n->kind);
	if (!c)
		return NULL;
	c->flags = n->flags;
	c->text = n->text;
	c->tlen = n->tlen;
	c->index = n->index;
	c->index2 = n->index2;
	for (unsigned i = 0; i < n->nkids; i++)
		if (!add(d, c, n->kids[i]))
			return NULL;
	return c;
}

static struct swn *bind_args(struct swd *d, struct swn *nom, struct swn **lists, int n, int *idx,
			     unsigned depth)
{
	if (!nom || nom->nkids == 0 || *idx >= n || depth > 64)
		return NULL;
	struct swn *ctx = nom->kids[0];
	bool consumes = consumes_args((enum swk)nom->kind);
	struct swn *args = lists[*idx];
	if (consumes)
		(*idx)++;
	if (*idx < n) {
		struct swn *bound;
		if (ctx->kind == K_EXTENSION && ctx->nkids >= 2) {
			struct swn *inner = bind_args(d, ctx->kids[1], lists, n, idx, depth + 1);
			bound = copy_node(d, ctx);
			if (!inner || !bound)
				return NULL;
			bound->kids[1] = inner;
		} else {
			bound = bind_args(d, ctx, lists, n, idx, depth + 1);
		}
		struct swn *copy = copy_node(d, nom);
		if (!bound || !copy)
			return NULL;
		copy->kids[0] = bound;
		nom = copy;
	}
	if (!consumes || args->nkids == 0)
		return nom;
	return with(d, K_BOUND_GENERIC, nom, args);
}

static struct swn *bound_generic(struct swd *d)
{
	struct swn *lists[32];
	struct swn *retro;
	int n = pop_bound_lists(d, lists, 32, &retro);
	if (n < 0)
		return NULL;
	struct swn *nom = pop_type(d);
	if (!nom)
		return NULL;
	int idx = 0;
	struct swn *b = bind_args(d, nom, lists, n, &idx, 0);
	if (!b)
		return NULL;
	if (retro && b->kind == K_BOUND_GENERIC && !add(d, b, retro))
		return NULL;
	return b;
}

static struct swn *builtin(struct swd *d)
{
	int c = next(d);
	const char *name = NULL;
	char buf[64];
	switch (c) {
	case 'b':
		name = "Builtin.BridgeObject";
		break;
	case 'B':
		name = "Builtin.UnsafeValueBuffer";
		break;
	case 'c':
		name = "Builtin.RawUnsafeContinuation";
		break;
	case 'D':
		name = "Builtin.DefaultActorStorage";
		break;
	case 'd':
		name = "Builtin.NonDefaultDistributedActorStorage";
		break;
	case 'e':
		name = "Builtin.Executor";
		break;
	case 'I':
		name = "Builtin.IntLiteral";
		break;
	case 'j':
		name = "Builtin.Job";
		break;
	case 'P':
		name = "Builtin.PackIndex";
		break;
	case 'O':
		name = "Builtin.UnknownObject";
		break;
	case 'o':
		name = "Builtin.NativeObject";
		break;
	case 'p':
		name = "Builtin.RawPointer";
		break;
	case 't':
		name = "Builtin.SILToken";
		break;
	case 'w':
		name = "Builtin.Word";
		break;
	case 'A':
		name = "Builtin.ImplicitActor";
		break;
	case 'f':
	case 'i': {
		int64_t size = demangle_index(d) - 1;
		if (size <= 0 || size > 4096)
			return NULL;
		snprintf(buf, sizeof(buf), "Builtin.%s%d", c == 'f' ? "FPIEEE" : "Int", (int)size);
		break;
	}
	case 'v': {
		int64_t elts = natural(d);
		if (elts <= 0 || elts > 4096 || !nextif(d, '_'))
			return NULL;
		struct swn *t = pop_type(d);
		if (!t || t->kind != K_BUILTIN || t->tlen < 8 || t->tlen > 40)
			return NULL;
		snprintf(buf, sizeof(buf), "Builtin.Vec%dx%.*s", (int)elts, (int)(t->tlen - 8),
			 t->text + 8);
		break;
	}
	case 'V': {
		struct swn *elt = pop_type(d);
		struct swn *cnt = pop_type(d);
		if (!elt || !cnt)
			return NULL;
		return with(d, K_BUILTIN_FIXED_ARRAY, cnt, elt);
	}
	default:
		return NULL;
	}
	if (name)
		return text_node(d, K_BUILTIN, name);
	size_t l = strlen(buf);
	char *t = swd_alloc(d, l);
	if (!t)
		return NULL;
	memcpy(t, buf, l);
	return swd_text(d, K_BUILTIN, t, l);
}

/* ------------------------------------------------------------------ */
/* impl function types: type* generic-signature? 'I' FUNC-ATTRIBUTES '_' */

static const char *param_convention(int c)
{
	switch (c) {
	case 'i':
		return "@in";
	case 'c':
		return "@in_constant";
	case 'l':
		return "@inout";
	case 'b':
		return "@inout_aliasable";
	case 'n':
		return "@in_guaranteed";
	case 'X':
		return "@in_cxx";
	case 'x':
		return "@owned";
	case 'y':
		return "@unowned";
	case 'g':
		return "@guaranteed";
	case 'e':
		return "@deallocating";
	case 'v':
		return "@pack_owned";
	case 'p':
		return "@pack_guaranteed";
	case 'm':
		return "@pack_inout";
	default:
		return NULL;
	}
}

static const char *result_convention(int c)
{
	switch (c) {
	case 'r':
		return "@out";
	case 'o':
		return "@owned";
	case 'd':
		return "@unowned";
	case 'u':
		return "@unowned_inner_pointer";
	case 'a':
		return "@autoreleased";
	case 'k':
		return "@pack_out";
	case 'l':
		return "@guaranteed_address";
	case 'g':
		return "@guaranteed";
	case 'm':
		return "@inout";
	default:
		return NULL;
	}
}

static struct swn *impl_subs(struct swd *d, bool pattern)
{
	struct swn *lists[8];
	struct swn *retro;
	int n = pop_bound_lists(d, lists, 8, &retro);
	if (n != 1)
		return NULL;
	struct swn *subs = node(d, K_IMPL_SUBS);
	if (!subs)
		return NULL;
	if (pattern) {
		struct swn *sig = pop_kind(d, K_SIG);
		if (!sig || !add(d, subs, sig))
			return NULL;
	}
	if (!add(d, subs, lists[0]))
		return NULL;
	if (retro && !add(d, subs, retro))
		return NULL;
	return subs;
}

static bool impl_attr(struct swd *d, struct swn *fn, const char *text)
{
	return add(d, fn, text_node(d, K_IMPL_ATTR, text));
}

static struct swn *impl_function(struct swd *d)
{
	struct swn *fn = node(d, K_IMPL_FUNC);
	if (!fn)
		return NULL;
	struct swn *pat = NULL, *inv = NULL;
	if (nextif(d, 's') && !(pat = impl_subs(d, true)))
		return NULL;
	if (nextif(d, 'I') && !(inv = impl_subs(d, false)))
		return NULL;
	struct swn *sig = pop_kind(d, K_SIG);
	if (sig && nextif(d, 'P'))
		sig->flags |= SWF_MUTABLE; /* pseudogeneric */
	if (nextif(d, 'e') && !impl_attr(d, fn, "@escaping"))
		return NULL;
	if (nextif(d, 'A') && !impl_attr(d, fn, "@isolated(any)"))
		return NULL;
	if (nextif(d, 'N') && !impl_attr(d, fn, "nonisolated(nonsending)"))
		return NULL;
	if (nextif(d, 'O') && !impl_attr(d, fn, "@called_once"))
		return NULL;
	const char *diff = NULL;
	switch (peek(d)) {
	case 'd':
		diff = "@differentiable";
		break;
	case 'l':
		diff = "@differentiable(_linear)";
		break;
	case 'f':
		diff = "@differentiable(_forward)";
		break;
	case 'r':
		diff = "@differentiable(reverse)";
		break;
	}
	if (diff) {
		next(d);
		if (!impl_attr(d, fn, diff))
			return NULL;
	}
	const char *callee;
	switch (next(d)) {
	case 'y':
		callee = "@callee_unowned";
		break;
	case 'g':
		callee = "@callee_guaranteed";
		break;
	case 'x':
		callee = "@callee_owned";
		break;
	case 't':
		callee = "@convention(thin)";
		break;
	default:
		return NULL;
	}
	if (!impl_attr(d, fn, callee))
		return NULL;
	const char *conv = NULL;
	switch (peek(d)) {
	case 'B':
		conv = "@convention(block)";
		break;
	case 'C':
		conv = "@convention(c)";
		break;
	case 'M':
		conv = "@convention(method)";
		break;
	case 'O':
		conv = "@convention(objc_method)";
		break;
	case 'K':
		conv = "@convention(closure)";
		break;
	case 'W':
		conv = "@convention(witness_method)";
		break;
	case 'z':
		next(d);
		conv = nextif(d, 'B')   ? "@convention(block)"
		       : nextif(d, 'C') ? "@convention(c)"
					: NULL;
		if (!conv)
			return NULL;
		{
			int64_t n = natural(d);
			if (n < 0 || (uint64_t)n > d->len - d->pos)
				return NULL;
			d->pos += (size_t)n;
		}
		d->pos--;
		break;
	}
	if (conv) {
		next(d);
		if (!impl_attr(d, fn, conv))
			return NULL;
	}
	const char *coro = NULL;
	switch (peek(d)) {
	case 'A':
		coro = "@yield_once";
		break;
	case 'I':
		coro = "@yield_once_2";
		break;
	case 'G':
		coro = "@yield_many";
		break;
	}
	if (coro) {
		next(d);
		if (!impl_attr(d, fn, coro))
			return NULL;
	}
	if (nextif(d, 'h') && !impl_attr(d, fn, "@Sendable"))
		return NULL;
	if (nextif(d, 'H') && !impl_attr(d, fn, "@async"))
		return NULL;
	if (nextif(d, 'T'))
		fn->flags |= SWFN_SENDING;
	if (sig && !add(d, fn, sig))
		return NULL;
	if (pat && !add(d, fn, pat))
		return NULL;
	if (inv && !add(d, fn, inv))
		return NULL;
	unsigned first_typed = fn->nkids;
	const char *c;
	while ((c = param_convention(peek(d)))) {
		next(d);
		struct swn *p = text_node(d, K_IMPL_PARAM, c);
		if (!p || !add(d, fn, p))
			return NULL;
		if (nextif(d, 'w'))
			p->flags |= 1; /* noDerivative */
		if (nextif(d, 'T'))
			p->flags |= 2; /* sending */
		if (nextif(d, 'I'))
			p->flags |= 4; /* isolated */
		if (nextif(d, 'L'))
			p->flags |= 8; /* implicit leading */
	}
	while ((c = result_convention(peek(d)))) {
		next(d);
		struct swn *r = text_node(d, K_IMPL_RESULT, c);
		if (!r || !add(d, fn, r))
			return NULL;
		if (nextif(d, 'w'))
			r->flags |= 1;
	}
	while (nextif(d, 'Y')) {
		c = param_convention(next(d));
		struct swn *y = c ? text_node(d, K_IMPL_YIELD, c) : NULL;
		if (!y || !add(d, fn, y))
			return NULL;
		if (nextif(d, 'w'))
			y->flags |= 1;
	}
	if (nextif(d, 'z')) {
		c = result_convention(next(d));
		struct swn *e = c ? text_node(d, K_IMPL_ERROR, c) : NULL;
		if (!e || !add(d, fn, e))
			return NULL;
		if (nextif(d, 'w'))
			e->flags |= 1;
	}
	if (!nextif(d, '_'))
		return NULL;
	unsigned ntyped = fn->nkids - first_typed;
	if (d->nstack < ntyped)
		return NULL;
	for (unsigned i = 0; i < ntyped; i++) {
		struct swn *t = pop_type(d);
		if (!t || !add(d, fn->kids[fn->nkids - 1 - i], t))
			return NULL;
	}
	return fn;
}

/* ------------------------------------------------------------------ */
/* 'Q': archetypes, associated types, opaque types, packs */

static struct swn *opaque_type(struct swd *d)
{
	struct swn *lists[32];
	struct swn *retro;
	int n = pop_bound_lists(d, lists, 32, &retro);
	if (n < 0)
		return NULL;
	int64_t idx = demangle_index(d);
	struct swn *decl = pop_kind(d, K_OPAQUE_DECL);
	if (!decl || idx < 0)
		return NULL;
	struct swn *o = with(d, K_OPAQUE_TYPE, decl, NULL);
	if (!o)
		return NULL;
	o->index = (uint64_t)idx;
	for (int i = n - 1; i >= 0; i--)
		if (!add(d, o, lists[i]))
			return NULL;
	if (retro && !add(d, o, retro))
		return NULL;
	if (!add_subst(d, o))
		return NULL;
	return o;
}

static struct swn *archetype(struct swd *d)
{
	int c = next(d);
	struct swn *t;
	switch (c) {
	case 'a': {
		struct swn *id = pop_kind(d, K_IDENT);
		struct swn *base = pop_type(d);
		if (!id || !base)
			return NULL;
		t = with(d, K_DEP_MEMBER, base, with(d, K_ASSOC_REF, id, NULL));
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'y':
	case 'z': {
		struct swn *name = pop_assoc_name(d);
		struct swn *p = c == 'z' ? param_type(d, 0, 0) : generic_param_index(d);
		t = with(d, K_DEP_MEMBER, p, name);
		if (!name || !p || !add_subst(d, t))
			return NULL;
		return t;
	}
	case 'Y':
	case 'Z': {
		struct swn *path = pop_assoc_path(d);
		struct swn *p = c == 'Z' ? param_type(d, 0, 0) : generic_param_index(d);
		if (!path || !p)
			return NULL;
		t = dep_member_chain(d, p, path);
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'x': {
		struct swn *name = pop_assoc_name(d);
		struct swn *base = pop_type(d);
		if (!name || !base)
			return NULL;
		t = with(d, K_DEP_MEMBER, base, name);
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'X': {
		struct swn *path = pop_assoc_path(d);
		struct swn *base = pop_type(d);
		if (!path || !base)
			return NULL;
		t = dep_member_chain(d, base, path);
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'r':
	case 'u':
		return node(d, K_OPAQUE_RETURN);
	case 'R':
	case 'U': {
		int64_t i = demangle_index(d);
		if (i < 0)
			return NULL;
		return swd_index(d, K_OPAQUE_RETURN, (uint64_t)i + 1);
	}
	case 'O': {
		struct swn *e = pop(d);
		if (!e || !is_entity(e))
			return NULL;
		return with(d, K_OPAQUE_DECL, e, NULL);
	}
	case 'o':
		return opaque_type(d);
	case 'e': {
		struct swn *base = pop_type(d);
		int64_t i = demangle_index(d);
		if (!base || i < 0)
			return NULL;
		struct swn *n = with(d, K_PACK_ELEMENT, base, NULL);
		if (n)
			n->index = (uint64_t)i;
		return n;
	}
	case 'p': {
		struct swn *count = pop_type(d);
		struct swn *pattern = pop_type(d);
		if (!count || !pattern)
			return NULL;
		return with(d, K_PACK_EXPANSION, pattern, count);
	}
	case 'P':
	case 'S': {
		struct swn *list = pop_type_list(d);
		if (!list)
			return NULL;
		list->kind = K_PACK;
		if (c == 'S') {
			int dir = next(d);
			if (dir != 'i' && dir != 'd')
				return NULL;
			list->text = dir == 'i' ? "@indirect " : "@direct ";
			list->tlen = (uint16_t)strlen(list->text);
		}
		return list;
	}
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* 'X': special types */

static struct swn *wrap_type(struct swd *d, enum swk k)
{
	struct swn *t = pop_type(d);
	return t ? with(d, k, t, NULL) : NULL;
}

static struct swn *metatype_repr(struct swd *d, enum swk k)
{
	const char *r;
	switch (next(d)) {
	case 't':
		r = "@thin";
		break;
	case 'T':
		r = "@thick";
		break;
	case 'o':
		r = "@objc_metatype";
		break;
	default:
		return NULL;
	}
	struct swn *t = wrap_type(d, k);
	if (t)
		t->text = r, t->tlen = (uint16_t)strlen(r);
	return t;
}

static struct swn *sil_box(struct swd *d, bool generic)
{
	struct swn *sig = NULL, *args = NULL;
	if (generic) {
		sig = pop_kind(d, K_SIG);
		if (!sig)
			return NULL;
		args = pop_type_list(d);
		if (!args)
			return NULL;
	}
	struct swn *fields = pop_type_list(d);
	if (!fields)
		return NULL;
	struct swn *layout = node(d, K_SIL_BOX);
	if (!layout)
		return NULL;
	for (unsigned i = 0; i < fields->nkids; i++) {
		struct swn *f = fields->kids[i];
		struct swn *field = node(d, K_SIL_FIELD);
		if (!field)
			return NULL;
		if (f->kind == K_INOUT) {
			field->flags |= SWF_MUTABLE;
			f = f->kids[0];
		}
		if (!add(d, field, f) || !add(d, layout, field))
			return NULL;
	}
	if (!generic)
		return layout;
	return with3(d, K_SIL_BOX_GENERIC, layout, sig, args);
}

static struct swn *special_type(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'f':
		return pop_function_type(d, "@convention(thin)");
	case 'K':
		return pop_function_type(d, "@autoclosure");
	case 'A':
		return pop_function_type(d, "@escaping @autoclosure");
	case 'B':
		return pop_function_type(d, "@convention(block)");
	case 'L':
		return pop_function_type(d, "@convention(block)");
	case 'C':
		return pop_function_type(d, "@convention(c)");
	case 'E':
		return pop_function_type(d, NULL);
	case 'U':
		return pop_function_type(d, NULL);
	case 'O':
		return pop_function_type(d, NULL);
	case 'z': {
		int k = next(d);
		int64_t n = natural(d);
		if ((k != 'B' && k != 'C') || n < 0 || (uint64_t)n > d->len - d->pos)
			return NULL;
		d->pos += (size_t)n;
		return pop_function_type(d, k == 'B' ? "@convention(block)" : "@convention(c)");
	}
	case 'o':
		return wrap_type(d, K_UNOWNED);
	case 'u':
		return wrap_type(d, K_UNMANAGED);
	case 'w':
		return wrap_type(d, K_WEAK);
	case 'D':
		return wrap_type(d, K_DYNAMIC_SELF);
	case 'b': {
		struct swn *t = pop_type(d);
		if (!t)
			return NULL;
		struct swn *f = node(d, K_SIL_FIELD);
		struct swn *l = node(d, K_SIL_BOX);
		if (!f || !l || !add(d, f, t) || !add(d, l, f))
			return NULL;
		f->flags |= SWF_MUTABLE;
		return l;
	}
	case 'x':
		return sil_box(d, false);
	case 'X':
		return sil_box(d, true);
	case 'M':
		return metatype_repr(d, K_METATYPE);
	case 'm':
		return metatype_repr(d, K_EXIST_METATYPE);
	case 'p':
		return wrap_type(d, K_EXIST_METATYPE);
	case 'e':
		return node(d, K_ERROR_TYPE);
	case 'F':
		return pop_type(d);
	case 'c': {
		struct swn *sup = pop_type(d);
		struct swn *pl = pop_proto_list(d);
		if (!sup || !pl)
			return NULL;
		return with(d, K_PROTO_LIST_CLASS, pl, sup);
	}
	case 'l': {
		struct swn *pl = pop_proto_list(d);
		return pl ? with(d, K_PROTO_LIST_ANYOBJ, pl, NULL) : NULL;
	}
	case 'P': {
		struct swn *reqs = node(d, K_TYPE_LIST);
		if (!reqs)
			return NULL;
		bool first = false;
		do {
			first = pop_kind(d, K_FIRST_MARK) != NULL;
			struct swn *r = top(d);
			if (!is_requirement(r) || !add(d, reqs, pop(d)))
				return NULL;
		} while (!first);
		for (unsigned i = 0, j = reqs->nkids - 1; i < j; i++, j--) {
			struct swn *x = reqs->kids[i];
			reqs->kids[i] = reqs->kids[j];
			reqs->kids[j] = x;
		}
		struct swn *base = pop_type(d);
		if (!base)
			return NULL;
		return with(d, K_CONSTRAINED_EXIST, base, reqs);
	}
	case 'Y': {
		struct swn *name = pop_decl_name(d);
		struct swn *ctx = pop_context(d);
		struct swn *t = with(d, K_OTHER_NOMINAL, ctx, name);
		if (!name || !ctx || !add_subst(d, t))
			return NULL;
		return t;
	}
	case 'Z': {
		struct swn *list = pop_type_list(d);
		struct swn *id = pop_kind(d, K_IDENT);
		struct swn *ctx = pop_context(d);
		if (!list || !id || !ctx)
			return NULL;
		return with(d, K_UNKNOWN_CONTEXT, ctx, id);
	}
	case 'S': {
		int s = next(d);
		if (s == 'q')
			return wrap_type(d, K_SUGAR_OPT);
		if (s == 'a')
			return wrap_type(d, K_SUGAR_ARRAY);
		if (s == 'D' || s == 'A') {
			struct swn *v = pop_type(d);
			struct swn *k = pop_type(d);
			if (!v || !k)
				return NULL;
			return with(d, s == 'D' ? K_SUGAR_DICT : K_SUGAR_INLINE_ARRAY, k, v);
		}
		return NULL;
	}
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* 'Y': function type attributes and parameter flags */

static struct swn *y_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'a':
		return marker(d, M_ASYNC, NULL, NULL);
	case 'b':
		return marker(d, M_SENDABLE, NULL, NULL);
	case 'T':
		return marker(d, M_SENDING, NULL, NULL);
	case 'A':
		return marker(d, M_ISOLATION, "isolated", NULL);
	case 'C':
		return marker(d, M_ISOLATION, "nonsending", NULL);
	case 'c': {
		struct swn *t = pop_type(d);
		return t ? marker(d, M_ISOLATION, NULL, t) : NULL;
	}
	case 'K': {
		struct swn *t = pop_type(d);
		return t ? marker(d, M_TYPED_THROWS, NULL, t) : NULL;
	}
	case 'j': {
		const char *k;
		switch (next(d)) {
		case 'f':
			k = "@differentiable(_forward)";
			break;
		case 'r':
			k = "@differentiable(reverse)";
			break;
		case 'd':
			k = "@differentiable";
			break;
		case 'l':
			k = "@differentiable(_linear)";
			break;
		default:
			return NULL;
		}
		return marker(d, M_DIFF, k, NULL);
	}
	case 'k':
		return wrap_type(d, K_NODERIV);
	case 'i':
		return wrap_type(d, K_ISOLATED);
	case 't':
		return wrap_type(d, K_CONST);
	case 'u':
		return wrap_type(d, K_SENDING);
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* entities */

static struct swn *pop_entity_type(struct swd *d, struct swn **labels)
{
	struct swn *t = pop_type(d);
	if (!t)
		return NULL;
	if (!pop_labels(d, t, labels))
		return NULL;
	return t;
}

static struct swn *entity4(struct swd *d, enum swk k, struct swn *ctx, struct swn *name,
			   struct swn *labels, struct swn *type)
{
	struct swn *e = node(d, k);
	if (!e || !add(d, e, ctx))
		return NULL;
	if (name && !add(d, e, name))
		return NULL;
	if (labels && !add(d, e, labels))
		return NULL;
	if (type && !add(d, e, type))
		return NULL;
	return e;
}

static struct swn *plain_function(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *fn = pop_function_type(d, NULL);
	if (!fn)
		return NULL;
	struct swn *labels;
	if (!pop_labels(d, fn, &labels))
		return NULL;
	if (sig)
		fn = with(d, K_DEP_GENERIC_TYPE, sig, fn);
	struct swn *name = pop_decl_name(d);
	struct swn *ctx = pop_context(d);
	if (!fn || !name || !ctx)
		return NULL;
	return entity4(d, K_FUNCTION, ctx, name, labels, fn);
}

static struct swn *accessor(struct swd *d, struct swn *storage)
{
	const char *name;
	switch (next(d)) {
	case 'm':
		name = "materializeForSet";
		break;
	case 's':
		name = "setter";
		break;
	case 'g':
		name = "getter";
		break;
	case 'G':
		name = "globalGetter";
		break;
	case 'w':
		name = "willset";
		break;
	case 'W':
		name = "didset";
		break;
	case 'r':
		name = "read";
		break;
	case 'M':
		name = "modify";
		break;
	case 'i':
		name = "init";
		break;
	case 'x':
		name = "modify2";
		break;
	case 'y':
		name = "read2";
		break;
	case 'b':
		name = "borrow";
		break;
	case 'z':
		name = "mutate";
		break;
	case 'a':
		switch (next(d)) {
		case 'O':
			name = "owningMutableAddressor";
			break;
		case 'o':
			name = "nativeOwningMutableAddressor";
			break;
		case 'p':
			name = "nativePinningMutableAddressor";
			break;
		case 'u':
			name = "unsafeMutableAddressor";
			break;
		default:
			return NULL;
		}
		break;
	case 'l':
		switch (next(d)) {
		case 'O':
			name = "owningAddressor";
			break;
		case 'o':
			name = "nativeOwningAddressor";
			break;
		case 'p':
			name = "nativePinningAddressor";
			break;
		case 'u':
			name = "unsafeAddressor";
			break;
		default:
			return NULL;
		}
		break;
	case 'p':
		return storage;
	default:
		return NULL;
	}
	struct swn *a = with(d, K_ACCESSOR, storage, NULL);
	if (a)
		a->text = name, a->tlen = (uint16_t)strlen(name);
	return a;
}

static struct swn *variable(struct swd *d)
{
	struct swn *labels;
	struct swn *t = pop_entity_type(d, &labels);
	struct swn *name = pop_decl_name(d);
	struct swn *ctx = pop_context(d);
	if (!t || !name || !ctx)
		return NULL;
	struct swn *v = entity4(d, K_VARIABLE, ctx, name, labels, t);
	return v ? accessor(d, v) : NULL;
}

static struct swn *subscript(struct swd *d)
{
	struct swn *priv = pop_kind(d, K_PRIVATE_NAME);
	struct swn *labels;
	struct swn *t = pop_entity_type(d, &labels);
	struct swn *ctx = pop_context(d);
	if (!t || !ctx)
		return NULL;
	struct swn *s = entity4(d, K_SUBSCRIPT, ctx, NULL, labels, t);
	if (!s || (priv && !add(d, s, priv)))
		return NULL;
	return accessor(d, s);
}

static struct swn *macro_expansion(struct swd *d)
{
	const char *kind;
	bool attached = true, freestanding = false;
	int c = next(d);
	switch (c) {
	case 'a':
		kind = "accessor macro";
		break;
	case 'r':
		kind = "member attribute macro";
		break;
	case 'm':
		kind = "member macro";
		break;
	case 'p':
		kind = "peer macro";
		break;
	case 'c':
		kind = "conformance macro";
		break;
	case 'e':
		kind = "extension macro";
		break;
	case 'q':
		kind = "preamble macro";
		break;
	case 'b':
		kind = "body macro";
		break;
	case 'f':
		kind = "freestanding macro expansion";
		attached = false;
		freestanding = true;
		break;
	case 'u':
		kind = "unique name";
		attached = false;
		break;
	case 'X': {
		int64_t line = demangle_index(d);
		int64_t col = demangle_index(d);
		struct swn *file = pop_kind(d, K_IDENT);
		struct swn *mod = pop_module(d);
		if (line < 0 || col < 0 || !file || !mod)
			return NULL;
		struct swn *l = with(d, K_MACRO_LOC, mod, file);
		if (l)
			l->index = (uint64_t)line, l->index2 = (uint64_t)col;
		return l;
	}
	default:
		return NULL;
	}
	struct swn *macro = pop_kind(d, K_IDENT);
	struct swn *priv = freestanding ? pop_kind(d, K_PRIVATE_NAME) : NULL;
	struct swn *attached_name = attached ? pop_decl_name(d) : NULL;
	struct swn *ctx = NULL;
	if (top(d) && (top(d)->kind == K_MACRO_EXPANSION || top(d)->kind == K_MACRO_LOC))
		ctx = pop(d);
	else
		ctx = pop_context(d);
	int64_t idx = demangle_index(d);
	if (!macro || !ctx || idx < 0)
		return NULL;
	struct swn *m = node(d, K_MACRO_EXPANSION);
	if (!m || !add(d, m, ctx) || !add(d, m, macro))
		return NULL;
	m->text = kind;
	m->tlen = (uint16_t)strlen(kind);
	m->index = (uint64_t)idx;
	if (attached_name) {
		m->flags |= SWF_MUTABLE;
		if (!add(d, m, attached_name))
			return NULL;
	}
	if (priv) {
		m->flags |= SWF_READONLY;
		if (!add(d, m, priv))
			return NULL;
	}
	return m;
}

static struct swn *f_entity(struct swd *d)
{
	int c = next(d);
	enum swk k;
	switch (c) {
	case 'D':
		k = K_DEALLOCATOR;
		goto none;
	case 'd':
		k = K_DESTRUCTOR;
		goto none;
	case 'Z':
		k = K_ISO_DEALLOCATOR;
		goto none;
	case 'E':
		k = K_IVAR_DESTROYER;
		goto none;
	case 'e':
		k = K_IVAR_INIT;
		goto none;
	case 'i':
		k = K_INITIALIZER;
		goto none;
	case 'P':
		k = K_PW_BACKING_INIT;
		goto none;
	case 'W':
		k = K_PW_INIT_PROJECTED;
		goto none;
	case 'F':
		k = K_FIELD_INIT_ACCESSOR;
		goto none;
	case 'C':
	case 'c': {
		struct swn *priv = pop_kind(d, K_PRIVATE_NAME);
		struct swn *labels;
		struct swn *t = pop_entity_type(d, &labels);
		struct swn *ctx = pop_context(d);
		if (!t || !ctx)
			return NULL;
		struct swn *e =
		    entity4(d, c == 'C' ? K_ALLOCATOR : K_CONSTRUCTOR, ctx, NULL, labels, t);
		if (!e || (priv && !add(d, e, priv)))
			return NULL;
		return e;
	}
	case 'U':
	case 'u': {
		int64_t idx = demangle_index(d);
		struct swn *t = pop_type(d);
		struct swn *ctx = pop_context(d);
		if (idx < 0 || !t || !ctx)
			return NULL;
		struct swn *e = with(d, c == 'U' ? K_EXPL_CLOSURE : K_IMPL_CLOSURE, ctx, t);
		if (e)
			e->index = (uint64_t)idx;
		return e;
	}
	case 'A': {
		int64_t idx = demangle_index(d);
		struct swn *ctx = pop_context(d);
		if (idx < 0 || !ctx)
			return NULL;
		struct swn *e = with(d, K_DEFAULT_ARG, ctx, NULL);
		if (e)
			e->index = (uint64_t)idx;
		return e;
	}
	case 'a': {
		struct swn *e = pop(d);
		if (!e || !is_entity(e))
			return NULL;
		return with(d, K_RUNTIME_ATTR_GEN, e, NULL);
	}
	case 'm': {
		struct swn *sig = pop_kind(d, K_SIG);
		struct swn *labels;
		struct swn *t = pop_entity_type(d, &labels);
		if (t && sig)
			t = with(d, K_DEP_GENERIC_TYPE, sig, t);
		struct swn *name = pop_decl_name(d);
		struct swn *ctx = pop_context(d);
		if (!t || !name || !ctx)
			return NULL;
		return entity4(d, K_MACRO, ctx, name, labels, t);
	}
	case 'M':
		return macro_expansion(d);
	case 'p':
	case 'o': {
		struct swn *t = pop_type(d);
		struct swn *name = pop_decl_name(d);
		struct swn *ctx = pop_context(d);
		if (!t || !name || !ctx)
			return NULL;
		return entity4(d, c == 'p' ? K_GENERIC_PARAM_DECL : K_ENUM_ELEMENT, ctx, name, NULL,
			       t);
	}
	default:
		return NULL;
	}
none : {
	struct swn *ctx = pop_context(d);
	return ctx ? with(d, k, ctx, NULL) : NULL;
}
}

static struct swn *nominal(struct swd *d, enum swk k)
{
	struct swn *name = pop_decl_name(d);
	struct swn *ctx = pop_context(d);
	if (!name || !ctx)
		return NULL;
	struct swn *n = with(d, k, ctx, name);
	if (!add_subst(d, n))
		return NULL;
	return n;
}

static struct swn *local_name(struct swd *d)
{
	if (nextif(d, 'L')) {
		struct swn *disc = pop_kind(d, K_IDENT);
		struct swn *name = pop_decl_name(d);
		if (!disc || !name)
			return NULL;
		return with(d, K_PRIVATE_NAME, disc, name);
	}
	if (nextif(d, 'l')) {
		struct swn *disc = pop_kind(d, K_IDENT);
		return disc ? with(d, K_PRIVATE_NAME, disc, NULL) : NULL;
	}
	int c = peek(d);
	if ((c >= 'a' && c <= 'j') || (c >= 'A' && c <= 'J')) {
		next(d);
		struct swn *name = pop_decl_name(d);
		if (!name)
			return NULL;
		struct swn *r = with(d, K_RELATED_NAME, name, NULL);
		if (r)
			r->text = d->s + d->pos - 1, r->tlen = 1;
		return r;
	}
	int64_t idx = demangle_index(d);
	struct swn *name = pop_decl_name(d);
	if (idx < 0 || !name)
		return NULL;
	struct swn *l = with(d, K_LOCAL_NAME, name, NULL);
	if (l)
		l->index = (uint64_t)idx;
	return l;
}

static struct swn *extension(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *mod = pop_module(d);
	struct swn *t = pop_type(d);
	if (!mod || !t)
		return NULL;
	return with3(d, K_EXTENSION, mod, t, sig);
}

/* protocol-conformance ::= type protocol module? generic-signature? */
static struct swn *pop_conformance(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *mod = pop_module(d);
	struct swn *proto = pop_protocol(d);
	struct swn *t = pop_type(d);
	if (!proto || !t)
		return NULL;
	if (sig)
		t = with(d, K_DEP_GENERIC_TYPE, sig, t);
	return with3(d, K_CONFORMANCE, t, proto, mod);
}

static struct swn *pop_any_conformance(struct swd *d)
{
	struct swn *t = top(d);
	if (is_conformance(t))
		return pop(d);
	return NULL;
}

static struct swn *pop_conformance_list(struct swd *d)
{
	struct swn *list = node(d, K_CONF_LIST);
	if (!list)
		return NULL;
	if (pop_kind(d, K_EMPTY_LIST))
		return list;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *c = pop_any_conformance(d);
		if (!c || !add(d, list, c))
			return NULL;
	} while (!first);
	for (unsigned i = 0, j = list->nkids - 1; i < j; i++, j--) {
		struct swn *x = list->kids[i];
		list->kids[i] = list->kids[j];
		list->kids[j] = x;
	}
	return list;
}

static struct swn *dep_conf_index(struct swd *d, struct swn *n)
{
	int64_t i = demangle_index(d);
	if (!n || i < 0)
		return NULL;
	n->index = (uint64_t)i;
	return n;
}

static struct swn *h_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'P':
	case 'p': {
		struct swn *p = pop_protocol(d);
		struct swn *r = p ? with(d, K_CONF_REF, p, NULL) : NULL;
		if (r)
			r->flags = c == 'P' ? 1 : 2;
		return r;
	}
	case 'C': {
		struct swn *list = pop_conformance_list(d);
		struct swn *ref = pop_kind(d, K_CONF_REF);
		if (!ref) {
			struct swn *mod = pop_module(d);
			struct swn *p = pop_protocol(d);
			if (!p)
				return NULL;
			ref = with(d, K_CONF_REF, p, mod);
		}
		struct swn *t = pop_type(d);
		if (!list || !ref || !t)
			return NULL;
		return with3(d, K_CONC_CONF, t, ref, list);
	}
	case 'D': {
		struct swn *p = pop_protocol(d);
		struct swn *t = pop_type(d);
		if (!p || !t)
			return NULL;
		return dep_conf_index(d, with(d, K_DEP_CONF_ROOT, t, p));
	}
	case 'I': {
		struct swn *p = pop_protocol(d);
		struct swn *conf = pop_any_conformance(d);
		if (!p || !conf)
			return NULL;
		return dep_conf_index(d, with(d, K_DEP_CONF_INHERITED, conf, p));
	}
	case 'A': {
		struct swn *p = pop_protocol(d);
		struct swn *t = pop_type(d);
		struct swn *conf = pop_any_conformance(d);
		if (!p || !t || !conf)
			return NULL;
		return dep_conf_index(d, with3(d, K_DEP_CONF_ASSOC, conf, t, p));
	}
	case 'O': {
		struct swn *t = pop_type(d);
		struct swn *conf = pop_any_conformance(d);
		if (!t || !conf)
			return NULL;
		return with(d, K_DEP_CONF_OPAQUE, conf, t);
	}
	case 'X': {
		struct swn *list = pop_conformance_list(d);
		return list ? with(d, K_PACK_CONF, list, NULL) : NULL;
	}
	default:
		return NULL;
	}
}

static struct swn *special(struct swd *d, const char *text, struct swn *kid)
{
	if (!kid)
		return NULL;
	struct swn *n = with(d, K_SPECIAL, kid, NULL);
	if (n)
		n->text = text, n->tlen = (uint16_t)strlen(text);
	return n;
}

static struct swn *prefix(struct swd *d, const char *text, struct swn *kid)
{
	if (!kid)
		return NULL;
	struct swn *n = with(d, K_PREFIX, kid, NULL);
	if (n)
		n->text = text, n->tlen = (uint16_t)strlen(text);
	return n;
}

/* everything on the stack, as the operand of a global attribute */
static struct swn *pop_global(struct swd *d)
{
	if (d->nstack == 0)
		return NULL;
	if (d->nstack == 1)
		return pop(d);
	struct swn *g = node(d, K_GLOBAL);
	if (!g)
		return NULL;
	for (unsigned i = 0; i < d->nstack; i++)
		if (!add(d, g, d->stack[i]))
			return NULL;
	d->nstack = 0;
	return g;
}

/* ------------------------------------------------------------------ */
/* specializations */

static bool spec_info(struct swd *d, struct swn *spec)
{
	if (nextif(d, 'q'))
		spec->flags |= SWF_READONLY; /* serialized */
	if (nextif(d, 'a'))
		spec->flags |= SWF_MUTABLE;
	else
		nextif(d, 'r');
	return isdig(next(d));
}

static struct swn *spec_node(struct swd *d, const char *text)
{
	struct swn *s = node(d, K_SPEC);
	if (s)
		s->text = text, s->tlen = (uint16_t)strlen(text);
	return s;
}

static struct swn *generic_spec(struct swd *d, const char *text)
{
	struct swn *s = spec_node(d, text);
	if (!s || !spec_info(d, s))
		return NULL;
	struct swn *list = pop_type_list(d);
	if (!list || !add(d, s, list))
		return NULL;
	struct swn *g = pop_global(d);
	if (g && !add(d, s, g))
		return NULL;
	return s;
}

static struct swn *partial_spec(struct swd *d, const char *text)
{
	struct swn *s = spec_node(d, text);
	if (!s || !spec_info(d, s))
		return NULL;
	struct swn *t = pop_type(d);
	struct swn *list = with(d, K_TYPE_LIST, t, NULL);
	if (!t || !list || !add(d, s, list))
		return NULL;
	struct swn *g = pop_global(d);
	if (g && !add(d, s, g))
		return NULL;
	return s;
}

enum {
	SA_NONE,
	SA_CLOSURE,
	SA_CONST_FN,
	SA_CONST_GLOBAL,
	SA_CONST_INT,
	SA_CONST_FLOAT,
	SA_CONST_STRING,
	SA_CONST_KEYPATH,
	SA_OPTIONS,
	SA_SAME_CLOSURE,
};

static struct swn *spec_arg(struct swd *d, bool ret)
{
	struct swn *a = node(d, K_SPEC_ARG);
	if (!a)
		return NULL;
	if (ret)
		a->flags |= SWF_READONLY;
	int c = next(d);
	switch (c) {
	case 'n':
		a->index = SA_NONE;
		return a;
	case 'c':
	case 'E':
		a->index = SA_CLOSURE;
		return a;
	case 'C': {
		int64_t n = 0;
		if (!isdig(peek(d)))
			return NULL;
		while (isdig(peek(d)) && n < 100000)
			n = n * 10 + (next(d) - '0');
		a->index = SA_SAME_CLOSURE;
		a->index2 = (uint64_t)n;
		return a;
	}
	case 'p': {
		int k = next(d);
		switch (k) {
		case 'f':
			a->index = SA_CONST_FN;
			return a;
		case 'g':
			a->index = SA_CONST_GLOBAL;
			return a;
		case 'k':
			a->index = SA_CONST_KEYPATH;
			return a;
		case 'i':
		case 'd': {
			size_t start = d->pos;
			nextif(d, '-');
			if (!isdig(peek(d)))
				return NULL;
			while (isdig(peek(d)))
				next(d);
			a->index = k == 'i' ? SA_CONST_INT : SA_CONST_FLOAT;
			a->text = d->s + start;
			a->tlen = (uint16_t)(d->pos - start);
			return a;
		}
		case 's': {
			const char *enc;
			switch (next(d)) {
			case 'b':
				enc = "u8";
				break;
			case 'w':
				enc = "u16";
				break;
			case 'c':
				enc = "objc";
				break;
			default:
				return NULL;
			}
			a->index = SA_CONST_STRING;
			a->text = enc;
			a->tlen = (uint16_t)strlen(enc);
			return a;
		}
		default:
			return NULL;
		}
	}
	default: {
		/* option set: e/d/g/o/x/i/s with modifiers */
		unsigned opts = 0;
		d->pos--;
		for (;;) {
			int o = peek(d);
			unsigned bit;
			switch (o) {
			case 'e':
				bit = 1;
				break; /* generic */
			case 'd':
				bit = 2;
				break; /* dead */
			case 'g':
				bit = 4;
				break; /* owned to guaranteed */
			case 'o':
				bit = 8;
				break; /* guaranteed to owned */
			case 'x':
				bit = 16;
				break; /* exploded */
			case 'i':
				bit = 32;
				break; /* box to value */
			case 's':
				bit = 64;
				break; /* box to stack */
			case 'D':
				bit = 2;
				break;
			case 'G':
				bit = 4;
				break;
			case 'X':
				bit = 16;
				break;
			case 'O':
				bit = 8;
				break;
			default:
				bit = 0;
				break;
			}
			if (!bit || (opts & bit))
				break;
			opts |= bit;
			next(d);
		}
		if (!opts)
			return NULL;
		a->index = SA_OPTIONS;
		a->index2 = opts;
		return a;
	}
	}
}

static struct swn *funcsig_spec(struct swd *d)
{
	struct swn *s = spec_node(d, "function signature specialization");
	if (!s || !spec_info(d, s))
		return NULL;
	struct swn *args = node(d, K_SPEC_FUNCSIG);
	if (!args || !add(d, s, args))
		return NULL;
	bool ret = false;
	while (d->pos < d->len) {
		if (nextif(d, '_')) {
			if (ret)
				return NULL;
			ret = true;
			continue;
		}
		struct swn *a = spec_arg(d, ret);
		if (!a || !add(d, args, a))
			return NULL;
		if (ret)
			break;
	}
	if (!ret)
		return NULL;
	/* payloads, back to front; the return value takes none */
	for (unsigned i = args->nkids; i-- > 0;) {
		struct swn *a = args->kids[i];
		if (a->flags & SWF_READONLY)
			continue;
		if (a->index != SA_CLOSURE && a->index != SA_CONST_FN &&
		    a->index != SA_CONST_GLOBAL && a->index != SA_CONST_STRING &&
		    a->index != SA_CONST_KEYPATH)
			continue;
		struct swn *types = node(d, K_TYPE_LIST);
		if (!types)
			return NULL;
		while (swd_is_type(top(d))) {
			if (a->index != SA_CLOSURE && a->index != SA_CONST_KEYPATH)
				return NULL;
			if (!add(d, types, pop(d)))
				return NULL;
		}
		for (unsigned x = 0, y = types->nkids - 1; types->nkids && x < y; x++, y--) {
			struct swn *t = types->kids[x];
			types->kids[x] = types->kids[y];
			types->kids[y] = t;
		}
		struct swn *name = pop_kind(d, K_IDENT);
		if (!name)
			return NULL;
		if (a->index == SA_CONST_STRING && name->tlen && name->text[0] == '_')
			name = swd_text(d, K_IDENT, name->text + 1, name->tlen - 1u);
		if (!add(d, a, name) || !add(d, a, types))
			return NULL;
	}
	struct swn *g = pop_global(d);
	if (g && !add(d, s, g))
		return NULL;
	return s;
}

/* ------------------------------------------------------------------ */
/* autodiff */

static bool index_subset(struct swd *d, struct swn *n, uint64_t *ret)
{
	(void)n;
	uint64_t bits = 0;
	unsigned i = 0;
	while (peek(d) == 'S' || peek(d) == 'U') {
		if (i >= 64)
			return false;
		if (next(d) == 'S')
			bits |= (uint64_t)1 << i;
		i++;
	}
	if (i == 0)
		return false;
	*ret = bits;
	return true;
}

static const char *autodiff_kind(int c)
{
	switch (c) {
	case 'f':
		return "forward-mode derivative";
	case 'r':
		return "reverse-mode derivative";
	case 'd':
		return "differential";
	case 'p':
		return "pullback";
	default:
		return NULL;
	}
}

static struct swn *autodiff(struct swd *d, bool vtable, bool witness)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *g = pop_global(d);
	if (!g)
		return NULL;
	struct swn *a = with3(d, K_AUTODIFF, g, sig, NULL);
	if (!a)
		return NULL;
	int k = next(d);
	const char *kind;
	if (witness) {
		switch (k) {
		case 'f':
			kind = "forward-mode differentiability witness for ";
			break;
		case 'r':
			kind = "reverse-mode differentiability witness for ";
			break;
		case 'd':
			kind = "normal differentiability witness for ";
			break;
		case 'l':
			kind = "linear differentiability witness for ";
			break;
		default:
			return NULL;
		}
	} else {
		kind = autodiff_kind(k);
		if (!kind)
			return NULL;
	}
	a->text = kind;
	a->tlen = (uint16_t)strlen(kind);
	if (!index_subset(d, a, &a->index) || !nextif(d, 'p'))
		return NULL;
	if (!index_subset(d, a, &a->index2) || !nextif(d, 'r'))
		return NULL;
	if (vtable)
		a->flags |= SWF_MUTABLE;
	if (witness)
		a->flags |= SWF_READONLY;
	return a;
}

static struct swn *autodiff_subset(struct swd *d)
{
	struct swn *t = pop_type(d);
	struct swn *g = pop_global(d);
	if (!t)
		return NULL;
	struct swn *a = with(d, K_AUTODIFF_SUBSET, t, g);
	const char *kind = autodiff_kind(next(d));
	if (!a || !kind)
		return NULL;
	a->text = kind;
	a->tlen = (uint16_t)strlen(kind);
	uint64_t to;
	if (!index_subset(d, a, &a->index) || !nextif(d, 'p'))
		return NULL;
	if (!index_subset(d, a, &a->index2) || !nextif(d, 'r'))
		return NULL;
	if (!index_subset(d, a, &to) || !nextif(d, 'P'))
		return NULL;
	struct swn *tn = swd_index(d, K_INDEX, to);
	if (!add(d, a, tn))
		return NULL;
	return a;
}

/* ------------------------------------------------------------------ */
/* 'T': thunks and other global operators */

static struct swn *reabstraction(struct swd *d, const char *text, bool self)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *to = pop_type(d);
	struct swn *from = pop_type(d);
	if (!to || !from)
		return NULL;
	struct swn *r = with3(d, K_REABSTRACT, from, to, sig);
	if (!r)
		return NULL;
	r->text = text;
	r->tlen = (uint16_t)strlen(text);
	if (self) {
		struct swn *st = pop_type(d);
		if (!st || !add(d, r, st))
			return NULL;
		r->flags |= SWF_MUTABLE;
	}
	return r;
}

static struct swn *keypath(struct swd *d, const char *text, bool hash)
{
	bool serialized = nextif(d, 'q');
	struct swn *types = node(d, K_TYPE_LIST);
	struct swn *sig = NULL, *decl = NULL;
	if (!types)
		return NULL;
	if (hash) {
		sig = pop_kind(d, K_SIG);
		while (swd_is_type(top(d)))
			if (!add(d, types, pop(d)))
				return NULL;
	} else {
		if (!swd_is_type(top(d)))
			return NULL;
		while (swd_is_type(top(d)))
			if (!add(d, types, pop(d)))
				return NULL;
		sig = pop_kind(d, K_SIG);
		decl = pop(d);
		if (!decl)
			return NULL;
	}
	for (unsigned i = 0, j = types->nkids - 1; types->nkids && i < j; i++, j--) {
		struct swn *x = types->kids[i];
		types->kids[i] = types->kids[j];
		types->kids[j] = x;
	}
	struct swn *k = node(d, hash ? K_KEYPATH_EQ : K_KEYPATH);
	if (!k)
		return NULL;
	k->text = text;
	k->tlen = (uint16_t)strlen(text);
	if (serialized)
		k->flags |= SWF_READONLY;
	if (!add(d, k, decl ? decl : types) || !add(d, k, types))
		return NULL;
	if (sig && !add(d, k, sig))
		return NULL;
	return k;
}

static struct swn *async_partial(struct swd *d, bool await)
{
	int64_t i = demangle_index(d);
	if (i < 0)
		return NULL;
	struct swn *g = pop_global(d);
	struct swn *n = g ? with(d, K_ASYNC_PARTIAL, g, NULL) : NULL;
	if (n) {
		n->index = (uint64_t)i;
		if (await)
			n->flags |= SWF_MUTABLE;
	}
	return n;
}

static struct swn *t_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'A':
	case 'a': {
		if (c == 'a' && (isdig(peek(d)) || peek(d) == 'q'))
			return generic_spec(d, "non-async specialization");
		struct swn *g = pop_global(d);
		struct swn *n = node(d, K_SPECIAL);
		if (!n || (g && !add(d, n, g)))
			return NULL;
		n->text = c == 'A' ? "partial apply forwarder" : "partial apply ObjC forwarder";
		n->tlen = (uint16_t)strlen(n->text);
		n->flags |= SWF_MUTABLE; /* " for " only with an operand */
		return n;
	}
	case 'O':
		return prefix(d, "@nonobjc ", pop_global(d));
	case 'o':
		return prefix(d, "@objc ", pop_global(d));
	case 'D':
		return prefix(d, "dynamic ", pop_global(d));
	case 'd':
		return special(d, "direct method reference for", pop_global(d));
	case 'E':
		return prefix(d, "distributed thunk ", pop_global(d));
	case 'F':
		return special(d, "distributed accessor for", pop_global(d));
	case 'I':
		return special(d, "dynamically replaceable thunk for", pop_global(d));
	case 'u':
		return special(d, "async function pointer to", pop_global(d));
	case 'X':
		return special(d, "dynamically replaceable variable for", pop_global(d));
	case 'j':
		return special(d, "dispatch thunk of", pop_global(d));
	case 'q':
		return special(d, "method descriptor for", pop_global(d));
	case 'm':
		return prefix(d, "merged ", pop_global(d));
	case 'S':
		return special(d, "protocol self-conformance witness for", pop_global(d));
	case 'C':
		return special(d, "coroutine continuation prototype for", pop_type(d));
	case 'c':
		return special(d, "curry thunk of", pop_global(d));
	case 'w':
		switch (next(d)) {
		case 'b':
			return special(d, "back deployment thunk for", pop_global(d));
		case 'B':
			return special(d, "back deployment fallback for", pop_global(d));
		case 'c':
			return special(d, "coro function pointer to", pop_global(d));
		case 'd':
			return prefix(d, "default override of ", pop_global(d));
		case 'S':
			return special(d, "#_hasSymbol query for", pop_global(d));
		default:
			return NULL;
		}
	case 'Q':
		return async_partial(d, true);
	case 'Y':
		return async_partial(d, false);
	case 'V': {
		struct swn *base = pop(d);
		struct swn *derived = pop(d);
		if (!is_entity(base) || !is_entity(derived))
			return NULL;
		return with(d, K_VTABLE_THUNK, derived, base);
	}
	case 'W': {
		struct swn *e = pop(d);
		if (!is_entity(e))
			return NULL;
		struct swn *conf = pop_conformance(d);
		return conf ? with(d, K_WITNESS_THUNK, conf, e) : NULL;
	}
	case 'R':
		return reabstraction(d, "reabstraction thunk helper", false);
	case 'r':
		return reabstraction(d, "reabstraction thunk", false);
	case 'y':
		return reabstraction(d, "reabstraction thunk helper", true);
	case 'U': {
		struct swn *t = pop_type(d);
		struct swn *g = pop_global(d);
		if (!t || !g)
			return NULL;
		return special(d, "reabstraction thunk with global actor constraint for", g);
	}
	case 'K':
		return keypath(d, "key path getter for", false);
	case 'k':
		if (nextif(d, 'm')) {
			if (!nextif(d, 'u'))
				return NULL;
			return keypath(d, "key path unapplied method for", false);
		}
		if (nextif(d, 'M')) {
			if (!nextif(d, 'A'))
				return NULL;
			return keypath(d, "key path applied method for", false);
		}
		return keypath(d, "key path setter for", false);
	case 'H':
		return keypath(d, "key path equality operator for", true);
	case 'h':
		return keypath(d, "key path hash function for", true);
	case 'L':
		return special(d, "protocol requirements base descriptor for", pop_protocol(d));
	case 'l': {
		struct swn *a = pop_assoc_name(d);
		return a ? with(d, K_ASSOC_TYPE_DESC, a, NULL) : NULL;
	}
	case 'M': {
		struct swn *a = pop_assoc_name(d);
		struct swn *n = a ? with(d, K_ASSOC_TYPE_DESC, a, NULL) : NULL;
		if (n)
			n->flags |= SWF_MUTABLE;
		return n;
	}
	case 'n':
	case 'N': {
		struct swn *req = pop_protocol(d);
		struct swn *path = NULL;
		if (swd_is_type(top(d)) && top(d)->kind != K_PROTOCOL)
			path = pop_type(d);
		else
			path = pop_assoc_path(d);
		struct swn *proto = pop_type(d);
		if (!req || !path || !proto)
			return NULL;
		struct swn *n = with3(d, K_ASSOC_CONF_DESC, proto, path, req);
		if (n) {
			n->text = c == 'n' ? "associated conformance descriptor for "
					   : "default associated conformance accessor for ";
			n->tlen = (uint16_t)strlen(n->text);
		}
		return n;
	}
	case 'b': {
		struct swn *req = pop_protocol(d);
		struct swn *proto = pop_type(d);
		if (!req || !proto)
			return NULL;
		return with(d, K_BASE_CONF_DESC, proto, req);
	}
	case 'v': {
		int64_t i = demangle_index(d);
		if (i < 0)
			return NULL;
		struct swn *g = pop_global(d);
		struct swn *n = g ? with(d, K_OUTLINED_VAR, g, NULL) : NULL;
		if (!n)
			return NULL;
		n->index = (uint64_t)i;
		if (nextif(d, 'r'))
			n->flags |= SWF_READONLY;
		return n;
	}
	case 'e': {
		size_t start = d->pos;
		while (d->pos < d->len && peek(d) != '_')
			next(d);
		if (!nextif(d, '_') || d->pos - 1 == start)
			return NULL;
		struct swn *g = pop_global(d);
		struct swn *n = g ? with(d, K_OUTLINED_BRIDGE, g, NULL) : NULL;
		if (n)
			n->text = d->s + start, n->tlen = (uint16_t)(d->pos - 1 - start);
		return n;
	}
	case 'J':
		if (nextif(d, 'V'))
			return autodiff(d, true, false);
		if (nextif(d, 'O')) {
			struct swn *to = pop_type(d);
			struct swn *from = pop_type(d);
			const char *kind = autodiff_kind(next(d));
			if (!to || !from || !kind)
				return NULL;
			struct swn *n = with(d, K_AUTODIFF_REORDER, from, to);
			if (n)
				n->text = kind, n->tlen = (uint16_t)strlen(kind);
			return n;
		}
		if (nextif(d, 'S'))
			return autodiff_subset(d);
		return autodiff(d, false, false);
	case 'g':
		return generic_spec(d, "generic specialization");
	case 'G':
		return generic_spec(d, "generic not re-abstracted specialization");
	case 'B':
		return generic_spec(d, "generic specialization");
	case 's':
		return generic_spec(d, "generic re-abstracted prespecialization");
	case 'i':
		return generic_spec(d, "inlined generic function");
	case 'p':
		return partial_spec(d, "partial specialization");
	case 'P':
		return partial_spec(d, "generic not-reabstracted partial specialization");
	case 'f':
		return funcsig_spec(d);
	case 't':
		/* dropped arguments before a generic specialization */
		for (;;) {
			while (isdig(peek(d)))
				next(d);
			if (!nextif(d, 't'))
				break;
		}
		c = next(d);
		if (c == 'g' || c == 'B')
			return generic_spec(d, "generic specialization");
		if (c == 'G')
			return generic_spec(d, "generic not re-abstracted specialization");
		return NULL;
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* 'W', 'M', 'H' globals */

static struct swn *lazy_wt(struct swd *d, const char *text)
{
	struct swn *conf = pop_conformance(d);
	struct swn *t = pop_type(d);
	struct swn *n = (conf && t) ? with(d, K_LAZY_WT, t, conf) : NULL;
	if (n)
		n->text = text, n->tlen = (uint16_t)strlen(text);
	return n;
}

static struct swn *outlined(struct swd *d)
{
	const char *text;
	switch (next(d)) {
	case 'y':
		text = "outlined copy of";
		break;
	case 'e':
		text = "outlined consume of";
		break;
	case 'r':
		text = "outlined retain of";
		break;
	case 's':
		text = "outlined release of";
		break;
	case 'b':
	case 'B':
		text = "outlined init with take of";
		break;
	case 'c':
	case 'C':
		text = "outlined init with copy of";
		break;
	case 'd':
	case 'D':
		text = "outlined assign with take of";
		break;
	case 'f':
	case 'F':
		text = "outlined assign with copy of";
		break;
	case 'h':
	case 'H':
		text = "outlined destroy of";
		break;
	case 'i':
		text = "outlined store enum tag of";
		break;
	case 'j':
		text = "outlined enum project data for";
		break;
	case 'g':
		text = "outlined enum get tag of";
		break;
	default:
		return NULL;
	}
	struct swn *t = pop_type(d);
	pop_kind(d, K_SIG);
	return special(d, text, t);
}

static struct swn *w_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'V':
		return special(d, "value witness table for", pop_type(d));
	case 'v': {
		int k = next(d);
		if (k != 'd' && k != 'i')
			return NULL;
		struct swn *e = pop(d);
		if (!is_entity(e))
			return NULL;
		struct swn *n = with(d, K_FIELD_OFFSET, e, NULL);
		if (n) {
			n->text =
			    k == 'd' ? "direct field offset for " : "indirect field offset for ";
			n->tlen = (uint16_t)strlen(n->text);
		}
		return n;
	}
	case 'P':
		return special(d, "protocol witness table for", pop_conformance(d));
	case 'p':
		return special(d, "protocol witness table pattern for", pop_conformance(d));
	case 'a':
		return special(d, "protocol witness table accessor for", pop_conformance(d));
	case 'G':
		return special(d, "generic protocol witness table for", pop_conformance(d));
	case 'I':
		return special(d, "instantiation function for generic protocol witness table for",
			       pop_conformance(d));
	case 'r':
		return special(d, "resilient protocol witness table for", pop_conformance(d));
	case 'L':
		return lazy_wt(d, "lazy protocol witness table cache variable for type ");
	case 'l':
		return lazy_wt(d, "lazy protocol witness table accessor for type ");
	case 't': {
		struct swn *name = pop_kind(d, K_IDENT);
		struct swn *conf = pop_conformance(d);
		return (name && conf) ? with(d, K_ASSOC_TYPE_ACCESS, conf, name) : NULL;
	}
	case 'T': {
		struct swn *proto = pop_protocol(d);
		struct swn *path = pop_assoc_path(d);
		struct swn *conf = pop_conformance(d);
		return (proto && path && conf) ? with3(d, K_ASSOC_WT_ACCESS, conf, path, proto)
					       : NULL;
	}
	case 'b': {
		struct swn *proto = pop_protocol(d);
		struct swn *conf = pop_conformance(d);
		struct swn *n =
		    (proto && conf) ? with3(d, K_ASSOC_WT_ACCESS, conf, NULL, proto) : NULL;
		if (n)
			n->flags |= SWF_MUTABLE;
		return n;
	}
	case 'S':
		return special(d, "protocol self-conformance witness table for", pop_protocol(d));
	case 'C':
		return special(d, "resilient enum tag index for", pop(d));
	case 'O':
		return outlined(d);
	case 'J':
		return autodiff(d, false, true);
	case 'Z':
	case 'z': {
		struct swn *names = node(d, K_TYPE_LIST);
		if (!names)
			return NULL;
		while (pop_kind(d, K_FIRST_MARK)) {
			struct swn *n = pop_decl_name(d);
			if (!n || !add(d, names, n))
				return NULL;
		}
		struct swn *ctx = pop_context(d);
		if (!ctx || names->nkids == 0)
			return NULL;
		struct swn *n = with(d, K_ONE_TIME_INIT, ctx, names);
		if (n) {
			n->text = c == 'Z' ? "one-time initialization function for "
					   : "one-time initialization token for ";
			n->tlen = (uint16_t)strlen(n->text);
		}
		return n;
	}
	default:
		return NULL;
	}
}

static struct swn *m_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'a':
		return special(d, "type metadata accessor for", pop_type(d));
	case 'L':
		return special(d, "lazy cache variable for type metadata for", pop_type(d));
	case 'f':
		return special(d, "full type metadata for", pop_type(d));
	case 'P':
		return special(d, "generic type metadata pattern for", pop_type(d));
	case 'r':
		return special(d, "type metadata completion function for", pop_type(d));
	case 'i':
		return special(d, "type metadata instantiation function for", pop_type(d));
	case 'I':
		return special(d, "type metadata instantiation cache for", pop_type(d));
	case 'l':
		return special(d, "type metadata singleton initialization cache for", pop_type(d));
	case 'm':
		return special(d, "metaclass for", pop_type(d));
	case 'n':
		return special(d, "nominal type descriptor for", pop_type(d));
	case 'Q':
		return special(d, "opaque type descriptor for", pop_kind(d, K_OPAQUE_DECL));
	case 'u':
		return special(d, "class method lookup function for", pop_type(d));
	case 'U':
		return special(d, "ObjC metadata update function for", pop_type(d));
	case 's':
		return special(d, "ObjC resilient class stub for", pop_type(d));
	case 't':
		return special(d, "full ObjC resilient class stub for", pop_type(d));
	case 'p':
		return special(d, "protocol descriptor for", pop_protocol(d));
	case 'o':
		return special(d, "class metadata base offset for", pop_type(d));
	case 'F':
		return prefix(d, "reflection metadata field descriptor ", pop_type(d));
	case 'B':
		return prefix(d, "reflection metadata builtin descriptor ", pop_type(d));
	case 'A':
		return prefix(d, "reflection metadata associated type descriptor ",
			      pop_conformance(d));
	case 'C':
		return prefix(d, "reflection metadata superclass descriptor ", pop_type(d));
	case 'K':
		return special(d, "metadata instantiation cache for", pop_global(d));
	case 'J':
		return special(
		    d, "noncanonical specialized generic type metadata instantiation cache for",
		    pop_global(d));
	case 'N':
		return special(d, "noncanonical specialized generic type metadata for",
			       pop_global(d));
	case 'z':
		return special(d, "canonical prespecialized generic type caching token for",
			       pop_global(d));
	case 'q':
		return special(d, "uniquing prefix for", pop_global(d));
	case 'S':
		return special(d, "protocol self-conformance descriptor for", pop_protocol(d));
	case 'c':
		return special(d, "protocol conformance descriptor for", pop_conformance(d));
	case 'D':
		return special(d, "demangling cache variable for type metadata for", pop_type(d));
	case 'X':
		switch (next(d)) {
		case 'M':
			return prefix(d, "module descriptor ", pop_module(d));
		case 'E':
			return prefix(d, "extension descriptor ", pop_context(d));
		case 'X':
			return prefix(d, "anonymous descriptor ", pop_context(d));
		case 'Y': {
			struct swn *id = pop_kind(d, K_IDENT);
			struct swn *ctx = pop_context(d);
			if (!id || !ctx)
				return NULL;
			return with(d, K_ANON_CONTEXT, ctx, id);
		}
		default:
			return NULL;
		}
	default:
		return NULL;
	}
}

static const char *value_witness(int a, int b)
{
	static const struct {
		char code[3];
		const char *name;
	} tab[] = {
	    {"al", "allocateBuffer"},
	    {"ca", "assignWithCopy"},
	    {"ta", "assignWithTake"},
	    {"de", "deallocateBuffer"},
	    {"xx", "destroy"},
	    {"XX", "destroyBuffer"},
	    {"Xx", "destroyArray"},
	    {"CP", "initializeBufferWithCopyOfBuffer"},
	    {"Cp", "initializeBufferWithCopy"},
	    {"cp", "initializeWithCopy"},
	    {"TK", "initializeBufferWithTakeOfBuffer"},
	    {"Tk", "initializeBufferWithTake"},
	    {"tk", "initializeWithTake"},
	    {"pr", "projectBuffer"},
	    {"xs", "storeExtraInhabitant"},
	    {"xg", "getExtraInhabitantIndex"},
	    {"Cc", "initializeArrayWithCopy"},
	    {"Tt", "initializeArrayWithTakeFrontToBack"},
	    {"tT", "initializeArrayWithTakeBackToFront"},
	    {"ug", "getEnumTag"},
	    {"up", "destructiveProjectEnumData"},
	    {"ui", "destructiveInjectEnumTag"},
	    {"et", "getEnumTagSinglePayload"},
	    {"st", "storeEnumTagSinglePayload"},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].code[0] == a && tab[i].code[1] == b)
			return tab[i].name;
	return NULL;
}

static struct swn *h_global(struct swd *d, int c)
{
	switch (c) {
	case 'r':
		return special(d, "protocol descriptor runtime record for", pop_protocol(d));
	case 'n':
		return special(d, "nominal type descriptor runtime record for", pop_type(d));
	case 'o':
		return special(d, "opaque type descriptor runtime record for",
			       pop_kind(d, K_OPAQUE_DECL));
	case 'c':
		return special(d, "protocol conformance descriptor runtime record for",
			       pop_conformance(d));
	case 'F':
		return special(d, "accessible function runtime record for", pop_global(d));
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* the operator loop */

static bool operator(struct swd *d)
{
	int c = next(d);
	struct swn *n = NULL;
	switch (c) {
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		d->pos--;
		n = identifier(d);
		break;
	case 'A':
		return substitution(d);
	case 'B':
		n = builtin(d);
		break;
	case 'C':
		n = nominal(d, K_CLASS);
		break;
	case 'D': {
		struct swn *t = pop_type(d);
		struct swn *labels;
		if (t && !pop_labels(d, t, &labels))
			return false;
		n = t ? with(d, K_TYPE_MANGLING, t, NULL) : NULL;
		break;
	}
	case 'E':
		n = extension(d);
		break;
	case 'F':
		n = plain_function(d);
		break;
	case 'G':
		n = bound_generic(d);
		if (!add_subst(d, n))
			return false;
		break;
	case 'H': {
		int h = peek(d);
		if (h == 'r' || h == 'n' || h == 'o' || h == 'c' || h == 'F') {
			next(d);
			n = h_global(d, h);
		} else {
			n = h_op(d);
		}
		break;
	}
	case 'I':
		n = impl_function(d);
		break;
	case 'K':
		n = marker(d, M_THROWS, NULL, NULL);
		break;
	case 'L':
		n = local_name(d);
		break;
	case 'M':
		n = m_op(d);
		break;
	case 'N':
		n = special(d, "type metadata for", pop_type(d));
		break;
	case 'O':
		n = nominal(d, K_ENUM);
		break;
	case 'P':
		n = nominal(d, K_PROTOCOL);
		break;
	case 'Q':
		n = archetype(d);
		break;
	case 'R':
		n = requirement(d, next(d));
		break;
	case 'S':
		return known_substitution(d);
	case 'T':
		n = t_op(d);
		break;
	case 'V':
		n = nominal(d, K_STRUCT);
		break;
	case 'W':
		n = w_op(d);
		break;
	case 'X':
		n = special_type(d);
		break;
	case 'Y':
		n = y_op(d);
		break;
	case 'Z': {
		struct swn *e = pop(d);
		n = is_entity(e) ? with(d, K_STATIC, e, NULL) : NULL;
		break;
	}
	case 'a':
		n = nominal(d, K_TYPEALIAS);
		break;
	case 'c':
		n = pop_function_type(d, NULL);
		break;
	case 'd':
		n = node(d, K_VARIADIC_MARK);
		break;
	case 'f':
		n = f_entity(d);
		break;
	case 'g': {
		int64_t i = demangle_index(d);
		struct swn *conf = pop_any_conformance(d);
		n = (i >= 0 && conf) ? with(d, K_RETRO, conf, NULL) : NULL;
		if (n)
			n->index = (uint64_t)i;
		break;
	}
	case 'h':
		n = wrap_type(d, K_SHARED);
		break;
	case 'i':
		n = subscript(d);
		break;
	case 'l':
		n = generic_signature(d, false);
		break;
	case 'm':
		n = wrap_type(d, K_METATYPE);
		break;
	case 'n':
		n = wrap_type(d, K_OWNED);
		break;
	case 'o':
		n = operator_ident(d);
		break;
	case 'p':
		n = pop_proto_list(d);
		break;
	case 'q':
		n = generic_param_index(d);
		break;
	case 'r':
		n = generic_signature(d, true);
		break;
	case 's':
		n = text_node(d, K_MODULE, "Swift");
		break;
	case 't':
		n = pop_tuple(d);
		break;
	case 'u': {
		struct swn *sig = pop_kind(d, K_SIG);
		struct swn *t = pop_type(d);
		n = (sig && t) ? with(d, K_DEP_GENERIC_TYPE, sig, t) : NULL;
		break;
	}
	case 'v':
		n = variable(d);
		break;
	case 'w': {
		int a = next(d);
		int b = next(d);
		const char *name = value_witness(a, b);
		struct swn *t = pop_type(d);
		n = (name && t) ? with(d, K_VALUE_WITNESS, t, NULL) : NULL;
		if (n)
			n->text = name, n->tlen = (uint16_t)strlen(name);
		break;
	}
	case 'x':
		n = param_type(d, 0, 0);
		break;
	case 'y':
		n = node(d, K_EMPTY_LIST);
		break;
	case 'z':
		n = wrap_type(d, K_INOUT);
		break;
	case '_':
		n = node(d, K_FIRST_MARK);
		break;
	case '.':
		d->pos--;
		n = swd_text(d, K_SUFFIX, d->s + d->pos, d->len - d->pos);
		d->pos = d->len;
		break;
	case '$': {
		bool neg = nextif(d, 'n');
		int64_t v = demangle_index(d);
		if (v < 0)
			return false;
		n = swd_index(d, K_INTEGER, (uint64_t)v);
		if (n && neg)
			n->flags |= SWF_NEGATIVE;
		break;
	}
	default:
		return false;
	}
	return push(d, n);
}

struct swn *swd_parse_new(struct swd *d)
{
	while (d->pos < d->len) {
		if (!operator(d)) {
#ifdef SWD_DEBUG
			fprintf(stderr, "fail at %zu '%.*s' stack %u\n", d->pos,
				(int)(d->len - d->pos), d->s + d->pos, d->nstack);
#endif
			return NULL;
		}
	}
	if (d->nstack == 0)
		return NULL;
	struct swn *g = node(d, K_GLOBAL);
	if (!g)
		return NULL;
	for (unsigned i = 0; i < d->nstack; i++) {
		struct swn *n = d->stack[i];
		switch (n->kind) {
		case K_FIRST_MARK:
		case K_EMPTY_LIST:
		case K_VARIADIC_MARK:
		case K_ATTR_TYPE:
		case K_LABEL_LIST:
		case K_RETRO:
		case K_CONF_REF:
		case K_SIG:
			return NULL;
		default:
			break;
		}
		if (is_requirement(n))
			return NULL;
		if (!add(d, g, n))
			return NULL;
	}
	d->nstack = 0;
	return g;
}
