/*
 * The parser of Swift's legacy mangling (`_T` before Swift 4), written from
 * Swift's docs/ABI/OldMangling.rst.  Unlike the current mangling it is a
 * prefix grammar, so this is a recursive-descent parser; every recursion
 * goes through enter() which bounds the depth.  It builds the same nodes as
 * the current-mangling parser so one printer serves both.
 */
#include "demangle-swift-old.h"

/* ------------------------------------------------------------------ */
/* identifiers */

struct swn *swo_identifier(struct swd *d, enum swk want)
{
	bool puny = nextif(d, 'X');
	enum swk k = want;
	if (nextif(d, 'o') && (k = swd_fixity(next(d))) == K_COUNT)
		return NULL;
	int64_t n = natural(d);
	if (n <= 0 || (uint64_t)n > d->len - d->pos)
		return NULL;
	const char *s = d->s + d->pos;
	d->pos += (size_t)n;
	if (!puny && k == want)
		return swd_text(d, k, s, (size_t)n);
	char buf[1024];
	size_t len = 0;
	if (puny) {
		/* the same Punycode variant as the current mangling's */
		if (!swd_punycode(s, (size_t)n, buf, &len, sizeof(buf)))
			return NULL;
	} else {
		if ((size_t)n > sizeof(buf))
			return NULL;
		memcpy(buf, s, (size_t)n);
		len = (size_t)n;
	}
	if (k != want) {
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)buf[i];
			if (c >= 'a' && c <= 'z') {
				char m = swd_operator_char((char)c);
				if (!m)
					return NULL;
				buf[i] = m;
			}
		}
	}
	return swd_text_copy(d, k, buf, len);
}

static struct swn *decl_name(struct swd *d)
{
	if (nextif(d, 'L')) {
		int64_t i = demangle_index(d);
		struct swn *id = swo_identifier(d, K_IDENT);
		struct swn *l = with(d, K_LOCAL_NAME, id, NULL);
		if (i < 0 || !l)
			return NULL;
		l->index = (uint64_t)i;
		return l;
	}
	if (nextif(d, 'P')) {
		struct swn *disc = swo_identifier(d, K_IDENT);
		struct swn *id = swo_identifier(d, K_IDENT);
		if (!disc || !id)
			return NULL;
		return with(d, K_PRIVATE_NAME, disc, id);
	}
	return swo_identifier(d, K_IDENT);
}

/* ------------------------------------------------------------------ */
/* substitutions, modules, nominal types, protocols */

static struct swn *known(struct swd *d, int c)
{
	const char *name;
	enum swk k = K_STRUCT;
	switch (c) {
	case 'a':
		name = "Array";
		break;
	case 'b':
		name = "Bool";
		break;
	case 'c':
		name = "UnicodeScalar";
		break;
	case 'd':
		name = "Double";
		break;
	case 'f':
		name = "Float";
		break;
	case 'i':
		name = "Int";
		break;
	case 'V':
		name = "UnsafeRawPointer";
		break;
	case 'v':
		name = "UnsafeMutableRawPointer";
		break;
	case 'P':
		name = "UnsafePointer";
		break;
	case 'p':
		name = "UnsafeMutablePointer";
		break;
	case 'Q':
		name = "ImplicitlyUnwrappedOptional";
		k = K_ENUM;
		break;
	case 'q':
		name = "Optional";
		k = K_ENUM;
		break;
	case 'R':
		name = "UnsafeBufferPointer";
		break;
	case 'r':
		name = "UnsafeMutableBufferPointer";
		break;
	case 'S':
		name = "String";
		break;
	case 'u':
		name = "UInt";
		break;
	default:
		return NULL;
	}
	struct swn *m = text_node(d, K_MODULE, "Swift");
	return swd_with(d, k, m, text_node(d, K_IDENT, name));
}

static struct swn *substitution(struct swd *d)
{
	if (!nextif(d, 'S'))
		return NULL;
	int c = peek(d);
	if (c == 'o') {
		next(d);
		return text_node(d, K_MODULE, "__C");
	}
	if (c == 'C') {
		next(d);
		return text_node(d, K_MODULE, "__C_Synthesized");
	}
	if (c == 's') {
		next(d);
		return text_node(d, K_MODULE, "Swift");
	}
	if (c == '_' || isdig(c)) {
		int64_t i = demangle_index(d);
		if (i < 0 || (uint64_t)i >= d->nsubst)
			return NULL;
		return d->subst[i];
	}
	next(d);
	return known(d, c);
}

struct swn *swo_module(struct swd *d)
{
	int c = peek(d);
	if (c == 's') {
		next(d);
		return text_node(d, K_MODULE, "Swift");
	}
	if (c == 'S') {
		struct swn *m = substitution(d);
		return (m && m->kind == K_MODULE) ? m : NULL;
	}
	struct swn *id = swo_identifier(d, K_MODULE);
	if (!id || id->kind != K_MODULE || !add_subst(d, id))
		return NULL;
	return id;
}

static struct swn *nominal(struct swd *d, enum swk k)
{
	struct swn *ctx = swo_context(d);
	struct swn *name = ctx ? decl_name(d) : NULL;
	struct swn *n = with(d, k, ctx, name);
	if (!name || !add_subst(d, n))
		return NULL;
	return n;
}

/* protocol-name: a substitution of a protocol, or a context and a name */
struct swn *swo_protocol_name(struct swd *d)
{
	struct swn *ctx;
	if (peek(d) == 'S') {
		struct swn *s = substitution(d);
		if (!s)
			return NULL;
		if (s->kind == K_PROTOCOL)
			return s;
		if (s->kind != K_MODULE)
			return NULL;
		ctx = s;
	} else if (nextif(d, 's')) {
		ctx = text_node(d, K_MODULE, "Swift");
	} else {
		ctx = swo_module(d);
	}
	struct swn *name = ctx ? decl_name(d) : NULL;
	struct swn *p = with(d, K_PROTOCOL, ctx, name);
	if (!name || !add_subst(d, p))
		return NULL;
	return p;
}

struct swn *swo_context(struct swd *d)
{
	if (!enter(d))
		return NULL;
	struct swn *r = NULL;
	int c = peek(d);
	switch (c) {
	case 'E':
	case 'e': {
		next(d);
		struct swn *m = swo_module(d);
		struct swn *sig = NULL;
		if (c == 'e') {
			sig = swd_old_sig(d);
			if (!sig)
				break;
		}
		struct swn *t = m ? swo_context(d) : NULL;
		if (!t || !swd_is_type(t))
			break;
		r = with(d, K_EXTENSION, m, t);
		if (r && sig && !add(d, r, sig))
			r = NULL;
		break;
	}
	case 'S': {
		r = substitution(d);
		break;
	}
	case 's':
		next(d);
		r = text_node(d, K_MODULE, "Swift");
		break;
	case 'C':
		next(d);
		r = nominal(d, K_CLASS);
		break;
	case 'V':
		next(d);
		r = nominal(d, K_STRUCT);
		break;
	case 'O':
		next(d);
		r = nominal(d, K_ENUM);
		break;
	case 'P':
		next(d);
		r = swo_protocol_name(d);
		break;
	case 'F':
	case 'v':
	case 'i':
	case 'I':
	case 'Z':
		r = swo_entity(d);
		break;
	default:
		r = swo_module(d);
		break;
	}
	d->depth--;
	return r;
}

/* ------------------------------------------------------------------ */
/* generics */

static struct swn *param_type(struct swd *d, uint64_t depth, uint64_t idx)
{
	struct swn *n = node(d, K_PARAM_TYPE);
	if (n)
		n->index = idx, n->index2 = depth;
	return n;
}

static struct swn *gpi(struct swd *d)
{
	if (nextif(d, 'x'))
		return param_type(d, 0, 0);
	if (nextif(d, 'd')) {
		int64_t depth = demangle_index(d);
		int64_t idx = demangle_index(d);
		if (depth < 0 || idx < 0)
			return NULL;
		return param_type(d, (uint64_t)depth + 1, (uint64_t)idx);
	}
	int64_t i = demangle_index(d);
	if (i < 0)
		return NULL;
	return param_type(d, 0, (uint64_t)i + 1);
}

static struct swn *assoc_name(struct swd *d)
{
	if (peek(d) == 'S') {
		struct swn *s = substitution(d);
		if (!s)
			return NULL;
		if (s->kind == K_IDENT)
			return with(d, K_ASSOC_REF, s, NULL);
		if (s->kind == K_ASSOC_REF)
			return s;
		return NULL;
	}
	struct swn *proto = NULL;
	if (nextif(d, 'P')) {
		proto = swo_protocol_name(d);
		if (!proto)
			return NULL;
	}
	struct swn *id = swo_identifier(d, K_IDENT);
	if (!id || !add_subst(d, id))
		return NULL;
	return with(d, K_ASSOC_REF, id, proto);
}

static struct swn *assoc_type(struct swd *d, bool many)
{
	struct swn *base = gpi(d);
	if (!base)
		return NULL;
	do {
		struct swn *a = assoc_name(d);
		base = with(d, K_DEP_MEMBER, base, a);
		if (!a || !base)
			return NULL;
	} while (many && !nextif(d, '_'));
	return base;
}

static struct swn *type_param(struct swd *d)
{
	if (nextif(d, 'w'))
		return assoc_type(d, false);
	if (nextif(d, 'W'))
		return assoc_type(d, true);
	return gpi(d);
}

static struct swn *layout(struct swd *d, struct swn *subject)
{
	struct swn *r = with(d, K_REQ_LAYOUT, subject, NULL);
	if (!r)
		return NULL;
	int c = next(d);
	int sizes = 0;
	switch (c) {
	case 'U':
		settext(r, "_UnknownLayout");
		break;
	case 'R':
		settext(r, "_RefCountedObject");
		break;
	case 'N':
		settext(r, "_NativeRefCountedObject");
		break;
	case 'C':
		settext(r, "AnyObject");
		break;
	case 'D':
		settext(r, "_NativeClass");
		break;
	case 'T':
		settext(r, "_Trivial");
		break;
	case 'E':
		settext(r, "_Trivial");
		sizes = 2;
		break;
	case 'e':
		settext(r, "_Trivial");
		sizes = 1;
		break;
	case 'M':
		settext(r, "_TrivialAtMost");
		sizes = 2;
		break;
	case 'm':
		settext(r, "_TrivialAtMost");
		sizes = 1;
		break;
	default:
		return NULL;
	}
	if (sizes) {
		int64_t sz = natural(d);
		if (sz < 0)
			return NULL;
		r->index = (uint64_t)sz;
		r->flags |= SWF_HAS_INDEX;
		if (sizes == 2) {
			if (!nextif(d, '_'))
				return NULL;
			int64_t al = natural(d);
			if (al < 0)
				return NULL;
			r->index2 = (uint64_t)al;
			r->flags |= SWF_HAS_ALIGNMENT;
		}
	}
	return r;
}

static struct swn *requirement(struct swd *d)
{
	struct swn *subject = type_param(d);
	if (!subject)
		return NULL;
	if (nextif(d, 'z'))
		return with(d, K_REQ_SAME, subject, swo_type(d));
	if (nextif(d, 'l'))
		return layout(d, subject);
	if (peek(d) == 'C')
		return with(d, K_REQ_BASE, subject, swo_type(d));
	if (peek(d) == 'S') {
		size_t save = d->pos;
		struct swn *s = substitution(d);
		if (!s)
			return NULL;
		if (s->kind == K_PROTOCOL)
			return with(d, K_REQ_CONF, subject, s);
		if (s->kind != K_MODULE)
			return with(d, K_REQ_BASE, subject, s);
		d->pos = save;
	}
	return with(d, K_REQ_CONF, subject, swo_protocol_name(d));
}

struct swn *swd_old_sig(struct swd *d)
{
	struct swn *sig = node(d, K_SIG);
	if (!sig)
		return NULL;
	while (peek(d) != 'R' && peek(d) != 'r') {
		uint64_t c = 0;
		if (!nextif(d, 'z')) {
			/* a count as large as the input allows; the printer caps it */
			if (nextif(d, '_')) {
				c = 1;
			} else if (isdig(peek(d))) {
				uint64_t v = 0;
				while (isdig(peek(d))) {
					v = v * 10 + (uint64_t)(next(d) - '0');
					if (v > ((uint64_t)1 << 40))
						v = (uint64_t)1 << 40;
				}
				if (!nextif(d, '_'))
					return NULL;
				c = v + 2;
			} else {
				return NULL;
			}
		}
		if (!add(d, sig, swd_index(d, K_PARAM_COUNT, c)))
			return NULL;
	}
	if (sig->nkids == 0 && !add(d, sig, swd_index(d, K_PARAM_COUNT, 1)))
		return NULL;
	if (nextif(d, 'R')) {
		while (!nextif(d, 'r')) {
			if (d->pos >= d->len)
				return NULL;
			struct swn *r = requirement(d);
			if (!add(d, sig, r))
				return NULL;
		}
		return sig;
	}
	return nextif(d, 'r') ? sig : NULL;
}

/* ------------------------------------------------------------------ */
/* types */

static struct swn *fn_type(struct swd *d, const char *conv)
{
	bool throws = nextif(d, 'z');
	struct swn *params = swo_type(d);
	struct swn *result = params ? swo_type(d) : NULL;
	if (!result)
		return NULL;
	struct swn *f = swd_with(d, K_FUNC, params, result);
	if (!f)
		return NULL;
	settext(f, conv ? conv : "");
	if (!conv)
		f->tlen = 0;
	if (throws)
		f->flags |= SWFN_THROWS;
	return f;
}

static struct swn *tuple(struct swd *d, bool variadic)
{
	struct swn *t = node(d, K_TUPLE);
	if (!t)
		return NULL;
	while (!nextif(d, '_')) {
		if (d->pos >= d->len)
			return NULL;
		struct swn *el = node(d, K_TUPLE_ELEM);
		if (!el)
			return NULL;
		if (isdig(peek(d)) || peek(d) == 'X' || (peek(d) == 'o' && isdig(peek2(d)))) {
			struct swn *label = swo_identifier(d, K_IDENT);
			if (!add(d, el, label))
				return NULL;
		}
		struct swn *ty = swo_type(d);
		if (!add(d, el, ty) || !add(d, t, el))
			return NULL;
	}
	if (variadic && t->nkids)
		t->kids[t->nkids - 1]->flags |= SWF_VARIADIC;
	return t;
}

static const char *impl_conv(int c, bool result)
{
	switch (c) {
	case 'a':
		return "@autoreleased";
	case 'd':
		return "@unowned";
	case 'D':
		return "@unowned_inner_pointer";
	case 'g':
		return "@guaranteed";
	case 'e':
		return "@deallocating";
	case 'i':
		return result ? "@out" : "@in";
	case 'l':
		return "@inout";
	case 'G':
		return "@in_guaranteed";
	case 'o':
		return "@owned";
	default:
		return NULL;
	}
}

static struct swn *impl_fn(struct swd *d)
{
	struct swn *fn = node(d, K_IMPL_FUNC);
	if (!fn)
		return NULL;
	const char *callee;
	int c = next(d);
	switch (c) {
	case 't':
		callee = "@convention(thin)";
		break;
	case 'o':
		callee = "@callee_owned";
		break;
	case 'd':
		callee = "@callee_unowned";
		break;
	case 'g':
		callee = "@callee_guaranteed";
		break;
	default:
		return NULL;
	}
	if (!add(d, fn, text_node(d, K_IMPL_ATTR, callee)))
		return NULL;
	if (nextif(d, 'C')) {
		const char *conv;
		switch (next(d)) {
		case 'b':
			conv = "@convention(block)";
			break;
		case 'c':
			conv = "@convention(c)";
			break;
		case 'm':
			conv = "@convention(method)";
			break;
		case 'O':
			conv = "@convention(objc_method)";
			break;
		case 'w':
			conv = "@convention(witness_method)";
			break;
		default:
			return NULL;
		}
		if (!add(d, fn, text_node(d, K_IMPL_ATTR, conv)))
			return NULL;
	}
	if (nextif(d, 'G') || nextif(d, 'g')) {
		struct swn *sig = swd_old_sig(d);
		if (!add(d, fn, sig))
			return NULL;
	}
	if (!nextif(d, '_'))
		return NULL;
	for (int part = 0; part < 2; part++) {
		while (!nextif(d, '_')) {
			bool err = part == 1 && nextif(d, 'z');
			const char *conv = impl_conv(next(d), part == 1);
			if (!conv)
				return NULL;
			struct swn *p = text_node(d,
						  part == 0 ? K_IMPL_PARAM
						  : err     ? K_IMPL_ERROR
							    : K_IMPL_RESULT,
						  conv);
			struct swn *t = swo_type(d);
			if (!add(d, p, t) || !add(d, fn, p))
				return NULL;
		}
	}
	return fn;
}

static struct swn *builtin(struct swd *d)
{
	char buf[64];
	int c = next(d);
	const char *name = swd_builtin_name(c, true);
	if (name)
		return text_node(d, K_BUILTIN, name);
	switch (c) {
	case 'f':
	case 'i': {
		int64_t n = natural(d);
		if (n <= 0 || n > 4096 || !nextif(d, '_'))
			return NULL;
		snprintf(buf, sizeof(buf), "Builtin.%s%d", c == 'f' ? "FPIEEE" : "Int", (int)n);
		break;
	}
	case 'v': {
		int64_t n = natural(d);
		if (n <= 0 || n > 4096)
			return NULL;
		struct swn *t = swo_type(d);
		if (!t || t->kind != K_BUILTIN || t->tlen < 8 || t->tlen > 40)
			return NULL;
		snprintf(buf, sizeof(buf), "Builtin.Vec%dx%.*s", (int)n, (int)(t->tlen - 8),
			 t->text + 8);
		break;
	}
	default:
		return NULL;
	}
	return swd_text_copy(d, K_BUILTIN, buf, strlen(buf));
}

static struct swn *protocol_list(struct swd *d)
{
	struct swn *l = node(d, K_PROTO_LIST);
	while (l && !nextif(d, '_')) {
		if (d->pos >= d->len || !add(d, l, swo_protocol_name(d)))
			return NULL;
	}
	return l;
}

static struct swn *metatype_repr(struct swd *d, enum swk k)
{
	const char *r = swd_metatype_repr(next(d));
	return r ? settext(with(d, k, swo_type(d), NULL), r) : NULL;
}

static bool is_nominal(const struct swn *n)
{
	return n->kind == K_CLASS || n->kind == K_STRUCT || n->kind == K_ENUM ||
	       n->kind == K_TYPEALIAS || n->kind == K_OTHER_NOMINAL;
}

/*
 * 'G' type (type+ '_')+: one argument list per level of nominal nesting,
 * outermost first (Lunch<A>.Dinner<A1>).
 */
static struct swn *bound_generic(struct swd *d)
{
	struct swn *nom = swo_type(d);
	if (!nom || !is_nominal(nom))
		return NULL;
	struct swn *chain[16];
	unsigned n = 0;
	for (struct swn *c = nom; c && is_nominal(c) && n < 16; c = c->kids[0])
		chain[n++] = c;
	struct swn *parent = NULL;
	for (unsigned level = n; level-- > 0;) {
		struct swn *args = node(d, K_TYPE_LIST);
		if (!args)
			return NULL;
		while (!nextif(d, '_')) {
			if (d->pos >= d->len || !add(d, args, swo_type(d)))
				return NULL;
		}
		struct swn *cur = chain[level];
		if (parent) {
			struct swn *copy = swd_with(d, (enum swk)cur->kind, parent, cur->kids[1]);
			if (!copy)
				return NULL;
			cur = copy;
		}
		if (args->nkids)
			cur = with(d, K_BOUND_GENERIC, cur, args);
		parent = cur;
	}
	return parent;
}

static struct swn *type_inner(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'B':
		return builtin(d);
	case 'C':
		return nominal(d, K_CLASS);
	case 'V':
		return nominal(d, K_STRUCT);
	case 'O':
		return nominal(d, K_ENUM);
	case 'S':
		d->pos--;
		return substitution(d);
	case 'a': {
		struct swn *ctx = swo_context(d);
		struct swn *name = ctx ? decl_name(d) : NULL;
		struct swn *n = with(d, K_TYPEALIAS, ctx, name);
		if (!name || !add_subst(d, n))
			return NULL;
		return n;
	}
	case 'b':
		return fn_type(d, "@convention(block)");
	case 'c':
		return fn_type(d, "@convention(c)");
	case 'F':
	case 'f':
		return fn_type(d, NULL);
	case 'K':
		return fn_type(d, "@autoclosure");
	case 'G':
		return bound_generic(d);
	case 'M':
		return with(d, K_METATYPE, swo_type(d), NULL);
	case 'P':
		if (nextif(d, 'M'))
			return with(d, K_EXIST_METATYPE, swo_type(d), NULL);
		return protocol_list(d);
	case 'Q':
		if (nextif(d, 'u'))
			return node(d, K_OPAQUE_RETURN);
		return NULL;
	case 'R':
		return with(d, K_INOUT, swo_type(d), NULL);
	case 'T':
		return tuple(d, false);
	case 't':
		return tuple(d, true);
	case 'D':
		return with(d, K_DYNAMIC_SELF, swo_type(d), NULL);
	case 'E':
		if (next(d) != 'R' || next(d) != 'R')
			return NULL;
		return node(d, K_ERROR_TYPE);
	case 'X':
		switch (next(d)) {
		case 'o':
			return with(d, K_UNOWNED, swo_type(d), NULL);
		case 'u':
			return with(d, K_UNMANAGED, swo_type(d), NULL);
		case 'w':
			return with(d, K_WEAK, swo_type(d), NULL);
		case 'F':
			return impl_fn(d);
		case 'f':
			return fn_type(d, "@convention(thin)");
		case 'M':
			return metatype_repr(d, K_METATYPE);
		case 'P':
			if (!nextif(d, 'M'))
				return NULL;
			return metatype_repr(d, K_EXIST_METATYPE);
		case 'b': {
			struct swn *t = swo_type(d);
			struct swn *f = with(d, K_SIL_FIELD, t, NULL);
			if (!f)
				return NULL;
			f->flags |= SWF_MUTABLE;
			return with(d, K_SIL_BOX, f, NULL);
		}
		default:
			return NULL;
		}
	case 'u': {
		struct swn *sig = swd_old_sig(d);
		struct swn *t = sig ? swo_type(d) : NULL;
		return t ? swd_with(d, K_DEP_GENERIC_TYPE, sig, t) : NULL;
	}
	case 'x':
		return param_type(d, 0, 0);
	case 'q':
		return gpi(d);
	case 'w':
		return assoc_type(d, false);
	case 'W':
		return assoc_type(d, true);
	default:
		return NULL;
	}
}

struct swn *swo_type(struct swd *d)
{
	if (!enter(d))
		return NULL;
	struct swn *t = type_inner(d);
	d->depth--;
	return (t && swd_is_type(t)) ? t : NULL;
}

/* ------------------------------------------------------------------ */
/* entities */

static struct swn *accessor(struct swd *d, struct swn *ctx, const char *name, enum swk k)
{
	struct swn *dn = decl_name(d);
	struct swn *t = dn ? swo_type(d) : NULL;
	if (!t)
		return NULL;
	struct swn *v = swd_with(d, k, ctx, dn);
	if (!add(d, v, t))
		return NULL;
	return settext(with(d, K_ACCESSOR, v, NULL), name);
}

static const char *addressor(int c, bool mut)
{
	switch (c) {
	case 'u':
		return mut ? "unsafeMutableAddressor" : "unsafeAddressor";
	case 'O':
		return mut ? "owningMutableAddressor" : "owningAddressor";
	case 'o':
		return mut ? "nativeOwningMutableAddressor" : "nativeOwningAddressor";
	case 'p':
		return mut ? "nativePinningMutableAddressor" : "nativePinningAddressor";
	default:
		return NULL;
	}
}

static struct swn *entity_inner(struct swd *d)
{
	bool is_static = nextif(d, 'Z');
	int k = next(d);
	if (k != 'F' && k != 'v' && k != 'i' && k != 'I')
		return NULL;
	struct swn *ctx = swo_context(d);
	if (!ctx)
		return NULL;
	struct swn *e = NULL;
	enum swk storage = k == 'i' ? K_SUBSCRIPT : K_VARIABLE;
	int c = peek(d);
	switch (c) {
	case 'A': {
		next(d);
		int64_t i = demangle_index(d);
		e = with(d, K_DEFAULT_ARG, ctx, NULL);
		if (i < 0 || !e)
			return NULL;
		e->index = (uint64_t)i;
		break;
	}
	case 'a':
	case 'l': {
		next(d);
		const char *name = addressor(next(d), c == 'a');
		if (!name)
			return NULL;
		e = accessor(d, ctx, name, storage);
		break;
	}
	case 'g':
		next(d);
		e = accessor(d, ctx, "getter", storage);
		break;
	case 's':
		next(d);
		e = accessor(d, ctx, "setter", storage);
		break;
	case 'm':
		next(d);
		e = accessor(d, ctx, "materializeForSet", storage);
		break;
	case 'w':
		next(d);
		e = accessor(d, ctx, "willset", storage);
		break;
	case 'W':
		next(d);
		e = accessor(d, ctx, "didset", storage);
		break;
	case 'C':
	case 'c': {
		next(d);
		struct swn *t = swo_type(d);
		if (!t)
			return NULL;
		e = with(d, c == 'C' ? K_ALLOCATOR : K_CONSTRUCTOR, ctx, t);
		break;
	}
	case 'D':
		next(d);
		e = with(d, K_DEALLOCATOR, ctx, NULL);
		break;
	case 'd':
		next(d);
		e = with(d, K_DESTRUCTOR, ctx, NULL);
		break;
	case 'Z':
		next(d);
		e = with(d, K_ISO_DEALLOCATOR, ctx, NULL);
		break;
	case 'E':
		next(d);
		e = with(d, K_IVAR_DESTROYER, ctx, NULL);
		break;
	case 'e':
		next(d);
		e = with(d, K_IVAR_INIT, ctx, NULL);
		break;
	case 'i':
		next(d);
		e = with(d, K_INITIALIZER, ctx, NULL);
		break;
	case 'U':
	case 'u': {
		next(d);
		int64_t i = demangle_index(d);
		struct swn *t = i >= 0 ? swo_type(d) : NULL;
		e = with(d, c == 'U' ? K_EXPL_CLOSURE : K_IMPL_CLOSURE, ctx, t);
		if (!t || !e)
			return NULL;
		e->index = (uint64_t)i;
		break;
	}
	default: {
		if (k == 'I')
			return NULL;
		struct swn *name = decl_name(d);
		struct swn *t = name ? swo_type(d) : NULL;
		if (!t)
			return NULL;
		if (k == 'i') {
			e = swd_with(d, K_SUBSCRIPT, ctx, t);
		} else {
			e = swd_with(d, k == 'F' ? K_FUNCTION : K_VARIABLE, ctx, name);
			if (!add(d, e, t))
				return NULL;
		}
		break;
	}
	}
	if (e && is_static)
		e = with(d, K_STATIC, e, NULL);
	return e;
}

struct swn *swo_entity(struct swd *d)
{
	if (!enter(d))
		return NULL;
	struct swn *e = entity_inner(d);
	d->depth--;
	return e;
}
