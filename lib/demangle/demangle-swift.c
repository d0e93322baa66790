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

#include "demangle-swift-parse.h"

#define FAIL NULL

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

bool swd_is_entity(const struct swn *n)
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

struct swn *swd_pop_module(struct swd *d)
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

struct swn *swd_pop_context(struct swd *d)
{
	struct swn *m = swd_pop_module(d);
	if (m)
		return m;
	struct swn *t = top(d);
	if (t && swd_is_entity(t))
		return pop(d);
	return NULL;
}

struct swn *swd_pop_decl_name(struct swd *d)
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

struct swn *swd_pop_protocol(struct swd *d)
{
	struct swn *t = top(d);
	if (!t)
		return NULL;
	if (swd_is_type(t)) {
		if (!is_protocol(t))
			return NULL;
		return pop(d);
	}
	struct swn *name = swd_pop_decl_name(d);
	if (!name)
		return NULL;
	struct swn *ctx = swd_pop_context(d);
	if (!ctx)
		return NULL;
	return with(d, K_PROTOCOL, ctx, name);
}

/* ------------------------------------------------------------------ */
/* identifiers */

/*
 * The words of an identifier, for later word substitutions: a word starts
 * at anything but a digit or '_' and ends before a '_', at the end, or
 * before an upper-case letter that follows a character that is not one.
 * Only the first 26 words of a name count, and most names reach them early.
 */
static void split_words(struct swd *d, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && d->nwords < 26) {
		while (i < n && (isdig((unsigned char)s[i]) || s[i] == '_'))
			i++;
		if (i == n)
			return;
		size_t start = i++;
		while (i < n && s[i] != '_' &&
		       !(isup((unsigned char)s[i]) && !isup((unsigned char)s[i - 1])))
			i++;
		if (i - start >= 2 && i - start < 256) {
			d->words[d->nwords] = s + start;
			d->wordlen[d->nwords] = (uint8_t)(i - start);
			d->nwords++;
		}
	}
}

/* Words are split when a substitution asks for one, not for every identifier. */
static void add_words(struct swd *d, const char *s, size_t n)
{
	if (d->nwords >= 26)
		return;
	if (d->npending == sizeof(d->pending) / sizeof(d->pending[0])) {
		for (unsigned i = 0; i < d->npending; i++)
			split_words(d, d->pending[i], d->pendlen[i]);
		d->npending = 0;
	}
	d->pending[d->npending] = s;
	d->pendlen[d->npending++] = n;
}

static void flush_words(struct swd *d)
{
	for (unsigned i = 0; i < d->npending; i++)
		split_words(d, d->pending[i], d->pendlen[i]);
	d->npending = 0;
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
			flush_words(d); /* this identifier's own parts too */
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
		id = swd_text_copy(d, K_IDENT, buf, blen);
	}
	if (!add_subst(d, id))
		return NULL;
	return id;
}

enum swk swd_fixity(int c)
{
	switch (c) {
	case 'p':
		return K_PREFIX_OP;
	case 'P':
		return K_POSTFIX_OP;
	case 'i':
		return K_INFIX_OP;
	default:
		return K_COUNT;
	}
}

/* identifier 'o' fixity: operator characters are spelled as letters */
static struct swn *operator_ident(struct swd *d)
{
	struct swn *id = pop_kind(d, K_IDENT);
	if (!id)
		return NULL;
	enum swk k = swd_fixity(next(d));
	if (k == K_COUNT)
		return NULL;
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

struct swn *swd_param_type(struct swd *d, uint64_t depth, uint64_t idx)
{
	struct swn *n = node(d, K_PARAM_TYPE);
	if (!n)
		return NULL;
	n->index = idx;
	n->index2 = depth;
	return n;
}

/* GENERIC-PARAM-INDEX */
struct swn *swd_generic_param_index(struct swd *d)
{
	if (nextif(d, 'd')) {
		int64_t depth = demangle_index(d);
		int64_t idx = demangle_index(d);
		if (depth < 0 || idx < 0)
			return NULL;
		return swd_param_type(d, (uint64_t)depth + 1, (uint64_t)idx);
	}
	if (nextif(d, 'z'))
		return swd_param_type(d, 0, 0);
	if (nextif(d, 's')) {
		struct swn *n = swd_param_type(d, 0, 0);
		if (n)
			n->text = "Self", n->tlen = 4;
		return n;
	}
	int64_t idx = demangle_index(d);
	if (idx < 0)
		return NULL;
	return swd_param_type(d, 0, (uint64_t)idx + 1);
}

bool swd_is_requirement(const struct swn *n)
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
	while (first > 0 && swd_is_requirement(d->stack[first - 1]))
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
struct swn *swd_pop_assoc_name(struct swd *d)
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

void swd_reverse_kids(struct swn *n)
{
	for (unsigned i = 0, j = n->nkids; i + 1 < j; i++, j--) {
		struct swn *x = n->kids[i];
		n->kids[i] = n->kids[j - 1];
		n->kids[j - 1] = x;
	}
}

struct swn *swd_pop_list(struct swd *d, enum swk k, bool empty_ok,
			 struct swn *(*pop_item)(struct swd *d))
{
	struct swn *list = node(d, k);
	if (!list)
		return NULL;
	if (empty_ok && pop_kind(d, K_EMPTY_LIST))
		return list;
	bool first = false;
	do {
		first = pop_kind(d, K_FIRST_MARK) != NULL;
		struct swn *item = pop_item(d);
		if (!item || !add(d, list, item))
			return NULL;
	} while (!first);
	swd_reverse_kids(list);
	return list;
}

struct swn *swd_pop_assoc_path(struct swd *d)
{
	return swd_pop_list(d, K_TYPE_LIST, false, swd_pop_assoc_name);
}

struct swn *swd_dep_member_chain(struct swd *d, struct swn *base, struct swn *path)
{
	if (!base || !path)
		return NULL;
	for (unsigned i = 0; i < path->nkids; i++) {
		base = with(d, K_DEP_MEMBER, base, path->kids[i]);
		if (!base)
			return NULL;
	}
	return base;
}

/* What names a requirement's subject, by the operator's letter. */
enum req_subject {
	SUBJ_PARAM,        /* a generic parameter, read after the requirement */
	SUBJ_ASSOC_NAME,   /* an associated type of that parameter */
	SUBJ_ASSOC_PATH,   /* a path of associated types from that parameter */
	SUBJ_TYPE,         /* a type on the stack */
	SUBJ_PATH_OR_TYPE, /* a type when one is on top, else a path */
};

static const struct req_form {
	char op;
	uint16_t kind; /* enum swk: K_REQ_CONF, K_REQ_BASE, K_REQ_SAME, K_REQ_LAYOUT */
	uint8_t subject;
} req_forms[] = {
    {'R', K_REQ_CONF, SUBJ_PARAM},          {'p', K_REQ_CONF, SUBJ_ASSOC_NAME},
    {'P', K_REQ_CONF, SUBJ_ASSOC_PATH},     {'Q', K_REQ_CONF, SUBJ_TYPE},
    {'b', K_REQ_BASE, SUBJ_PARAM},          {'c', K_REQ_BASE, SUBJ_ASSOC_NAME},
    {'C', K_REQ_BASE, SUBJ_ASSOC_PATH},     {'B', K_REQ_BASE, SUBJ_TYPE},
    {'s', K_REQ_SAME, SUBJ_PARAM},          {'t', K_REQ_SAME, SUBJ_ASSOC_NAME},
    {'T', K_REQ_SAME, SUBJ_ASSOC_PATH},     {'S', K_REQ_SAME, SUBJ_TYPE},
    {'l', K_REQ_LAYOUT, SUBJ_PARAM},        {'m', K_REQ_LAYOUT, SUBJ_ASSOC_NAME},
    {'M', K_REQ_LAYOUT, SUBJ_PATH_OR_TYPE}, {'L', K_REQ_LAYOUT, SUBJ_TYPE},
};

/* The layout constraints, by their letter: name, and how many of size and alignment follow. */
static const struct layout_form {
	char op;
	uint8_t sizes;
	const char *name;
} layout_forms[] = {
    {'U', 0, "_UnknownLayout"}, {'R', 0, "_RefCountedObject"}, {'N', 0, "_NativeRefCountedObject"},
    {'C', 0, "AnyObject"},      {'D', 0, "_NativeClass"},      {'T', 0, "_Trivial"},
    {'B', 0, "_BridgeObject"},  {'S', 0, "_TrivialStride"},    {'E', 2, "_Trivial"},
    {'e', 1, "_Trivial"},       {'M', 2, "_TrivialAtMost"},    {'m', 1, "_TrivialAtMost"},
};

/* Pops what names the subject: a type, or a path whose parameter comes later. */
static bool req_subject(struct swd *d, enum req_subject form, struct swn **subject,
			struct swn **path)
{
	switch (form) {
	case SUBJ_PARAM:
		return true;
	case SUBJ_ASSOC_NAME:
		*path = swd_pop_assoc_name(d);
		return *path != NULL;
	case SUBJ_ASSOC_PATH:
		*path = swd_pop_assoc_path(d);
		return *path != NULL;
	case SUBJ_TYPE:
		*subject = pop_type(d);
		return *subject != NULL;
	case SUBJ_PATH_OR_TYPE:
		/* RM is both "assoc path + param" and "substitution"; the
		 * substitution form has a type on top */
		if (swd_is_type(top(d)) && !is_protocol(top(d)) && top(d)->kind != K_PROTOCOL) {
			*subject = pop_type(d);
			return true;
		}
		*path = swd_pop_assoc_path(d);
		return *path != NULL;
	}
	return false;
}

/* Reads the generic parameter a requirement is about and walks path from it. */
static struct swn *req_param_subject(struct swd *d, struct swn *path)
{
	struct swn *p = swd_generic_param_index(d);
	if (!p)
		return NULL;
	struct swn *subject = p;
	if (path && path->kind == K_ASSOC_REF)
		subject = with(d, K_DEP_MEMBER, p, path);
	else if (path)
		subject = swd_dep_member_chain(d, p, path);
	if (!subject || (path && !add_subst(d, subject)))
		return NULL;
	return subject;
}

/* ~Copyable and the like: on a parameter (i), a type (I), an associated
 * type (j) or a path of them (J), then the protocol's bit. */
static struct swn *inverse_requirement(struct swd *d, int c)
{
	struct swn *s = NULL, *path = NULL;
	if (c == 'I' && !(s = pop_type(d)))
		return NULL;
	if (c == 'j' && !(path = swd_pop_assoc_name(d)))
		return NULL;
	if (c == 'J' && !(path = swd_pop_assoc_path(d)))
		return NULL;
	int64_t bit = demangle_index(d);
	if (bit < 0)
		return NULL;
	if (c != 'I' && !(s = req_param_subject(d, path)))
		return NULL;
	struct swn *r = with(d, K_REQ_INVERSE, s, NULL);
	if (r)
		r->index = (uint64_t)bit;
	return r;
}

/* A layout constraint on subject: AnyObject, _Trivial(64), _TrivialAtMost(64, 8)... */
static struct swn *layout_requirement(struct swd *d, struct swn *subject)
{
	struct swn *r = with(d, K_REQ_LAYOUT, subject, NULL);
	if (!r)
		return NULL;
	int lc = next(d);
	const struct layout_form *f = NULL;
	for (size_t i = 0; i < sizeof(layout_forms) / sizeof(layout_forms[0]) && !f; i++)
		if (layout_forms[i].op == lc)
			f = &layout_forms[i];
	if (!f)
		return NULL;
	settext(r, f->name);
	if (f->sizes >= 1) {
		int64_t sz = demangle_index(d);
		if (sz < 0)
			return NULL;
		r->index = (uint64_t)sz;
		r->flags |= SWF_HAS_INDEX;
	}
	if (f->sizes >= 2) {
		int64_t al = demangle_index(d);
		if (al < 0)
			return NULL;
		r->index2 = (uint64_t)al;
		r->flags |= SWF_HAS_ALIGNMENT;
	}
	return r;
}

static const struct req_form *req_form(int c)
{
	for (size_t i = 0; i < sizeof(req_forms) / sizeof(req_forms[0]); i++)
		if (req_forms[i].op == c)
			return &req_forms[i];
	return NULL;
}

static struct swn *requirement(struct swd *d, int c)
{
	switch (c) {
	case 'v': { /* pack marker */
		struct swn *p = swd_generic_param_index(d);
		return with(d, K_PACK_MARK, p, NULL);
	}
	case 'V': {
		struct swn *t = pop_type(d);
		struct swn *p = swd_generic_param_index(d);
		return with(d, K_VALUE_MARK, p, t);
	}
	case 'i':
	case 'I':
	case 'j':
	case 'J':
		return inverse_requirement(d, c);
	case 'h': {
		struct swn *t = pop_type(d);
		struct swn *p = swd_generic_param_index(d);
		return with(d, K_REQ_SHAPE, p, t);
	}
	default:
		break;
	}
	/* conformance to a protocol, base class, same type or layout */
	const struct req_form *f = c ? req_form(c) : NULL;
	if (!f) {
		d->pos--;
		f = req_form('R');
	}
	struct swn *subject = NULL, *path = NULL, *other = NULL;
	if (!req_subject(d, f->subject, &subject, &path))
		return NULL;
	if (f->kind != K_REQ_LAYOUT) {
		other = f->kind == K_REQ_CONF ? swd_pop_protocol(d) : pop_type(d);
		if (!other)
			return NULL;
	}
	if (!subject && !(subject = req_param_subject(d, path)))
		return NULL;
	if (f->kind == K_REQ_LAYOUT)
		return layout_requirement(d, subject);
	return with(d, f->kind, subject, other);
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
		n = swd_builtin(d);
		break;
	case 'C':
		n = swd_nominal(d, K_CLASS);
		break;
	case 'D': {
		struct swn *t = pop_type(d);
		struct swn *labels;
		if (t && !swd_pop_labels(d, t, &labels))
			return false;
		n = t ? with(d, K_TYPE_MANGLING, t, NULL) : NULL;
		break;
	}
	case 'E':
		n = swd_extension(d);
		break;
	case 'F':
		n = swd_plain_function(d);
		break;
	case 'G':
		n = swd_bound_generic(d);
		if (!add_subst(d, n))
			return false;
		break;
	case 'H': {
		int h = peek(d);
		if (h == 'r' || h == 'n' || h == 'o' || h == 'c' || h == 'F') {
			next(d);
			n = swd_h_global(d, h);
		} else {
			n = swd_h_op(d);
		}
		break;
	}
	case 'I':
		n = swd_impl_function(d);
		break;
	case 'K':
		n = swd_marker(d, M_THROWS, NULL, NULL);
		break;
	case 'L':
		n = swd_local_name(d);
		break;
	case 'M':
		n = swd_m_op(d);
		break;
	case 'N':
		n = swd_special(d, "type metadata for", pop_type(d));
		break;
	case 'O':
		n = swd_nominal(d, K_ENUM);
		break;
	case 'P':
		n = swd_nominal(d, K_PROTOCOL);
		break;
	case 'Q':
		n = swd_archetype(d);
		break;
	case 'R':
		n = requirement(d, next(d));
		break;
	case 'S':
		return known_substitution(d);
	case 'T':
		n = swd_t_op(d);
		break;
	case 'V':
		n = swd_nominal(d, K_STRUCT);
		break;
	case 'W':
		n = swd_w_op(d);
		break;
	case 'X':
		n = swd_special_type(d);
		break;
	case 'Y':
		n = swd_y_op(d);
		break;
	case 'Z': {
		struct swn *e = pop(d);
		n = swd_is_entity(e) ? with(d, K_STATIC, e, NULL) : NULL;
		break;
	}
	case 'a':
		n = swd_nominal(d, K_TYPEALIAS);
		break;
	case 'c':
		n = swd_pop_function_type(d, NULL);
		break;
	case 'd':
		n = node(d, K_VARIADIC_MARK);
		break;
	case 'f':
		n = swd_f_entity(d);
		break;
	case 'g': {
		int64_t i = demangle_index(d);
		struct swn *conf = swd_pop_any_conformance(d);
		n = (i >= 0 && conf) ? with(d, K_RETRO, conf, NULL) : NULL;
		if (n)
			n->index = (uint64_t)i;
		break;
	}
	case 'h':
		n = swd_wrap_type(d, K_SHARED);
		break;
	case 'i':
		n = swd_subscript(d);
		break;
	case 'l':
		n = generic_signature(d, false);
		break;
	case 'm':
		n = swd_wrap_type(d, K_METATYPE);
		break;
	case 'n':
		n = swd_wrap_type(d, K_OWNED);
		break;
	case 'o':
		n = operator_ident(d);
		break;
	case 'p':
		n = swd_pop_proto_list(d);
		break;
	case 'q':
		n = swd_generic_param_index(d);
		break;
	case 'r':
		n = generic_signature(d, true);
		break;
	case 's':
		n = text_node(d, K_MODULE, "Swift");
		break;
	case 't':
		n = swd_pop_tuple(d);
		break;
	case 'u': {
		struct swn *sig = pop_kind(d, K_SIG);
		struct swn *t = pop_type(d);
		n = (sig && t) ? with(d, K_DEP_GENERIC_TYPE, sig, t) : NULL;
		break;
	}
	case 'v':
		n = swd_variable(d);
		break;
	case 'w': {
		int a = next(d);
		int b = next(d);
		const char *name = swd_value_witness(a, b, false);
		struct swn *t = pop_type(d);
		n = (name && t) ? with(d, K_VALUE_WITNESS, t, NULL) : NULL;
		settext(n, name);
		break;
	}
	case 'x':
		n = swd_param_type(d, 0, 0);
		break;
	case 'y':
		n = node(d, K_EMPTY_LIST);
		break;
	case 'z':
		n = swd_wrap_type(d, K_INOUT);
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
		if (swd_is_requirement(n))
			return NULL;
		if (!add(d, g, n))
			return NULL;
	}
	d->nstack = 0;
	return g;
}
