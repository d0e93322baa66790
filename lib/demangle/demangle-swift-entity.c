/*
 * Entities of Swift's current mangling (functions, variables, accessors,
 * initializers, closures, macro expansions, nominal types, extensions),
 * protocol conformances ('H'), function specializations and the autodiff
 * globals.  Part of the stack parser (demangle-swift.c).
 */
#include <stdio.h>
#include <string.h>

#include "demangle-swift-parse.h"

/* ------------------------------------------------------------------ */
/* entities */

static struct swn *pop_entity_type(struct swd *d, struct swn **labels)
{
	struct swn *t = pop_type(d);
	if (!t)
		return NULL;
	if (!swd_pop_labels(d, t, labels))
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

struct swn *swd_plain_function(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *fn = swd_pop_function_type(d, NULL);
	if (!fn)
		return NULL;
	struct swn *labels;
	if (!swd_pop_labels(d, fn, &labels))
		return NULL;
	if (sig)
		fn = with(d, K_DEP_GENERIC_TYPE, sig, fn);
	struct swn *name = swd_pop_decl_name(d);
	struct swn *ctx = swd_pop_context(d);
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
	return settext(with(d, K_ACCESSOR, storage, NULL), name);
}

struct swn *swd_variable(struct swd *d)
{
	struct swn *labels;
	struct swn *t = pop_entity_type(d, &labels);
	struct swn *name = swd_pop_decl_name(d);
	struct swn *ctx = swd_pop_context(d);
	if (!t || !name || !ctx)
		return NULL;
	struct swn *v = entity4(d, K_VARIABLE, ctx, name, labels, t);
	return v ? accessor(d, v) : NULL;
}

struct swn *swd_subscript(struct swd *d)
{
	struct swn *priv = pop_kind(d, K_PRIVATE_NAME);
	struct swn *labels;
	struct swn *t = pop_entity_type(d, &labels);
	struct swn *ctx = swd_pop_context(d);
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
		struct swn *mod = swd_pop_module(d);
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
	struct swn *attached_name = attached ? swd_pop_decl_name(d) : NULL;
	struct swn *ctx = NULL;
	if (top(d) && (top(d)->kind == K_MACRO_EXPANSION || top(d)->kind == K_MACRO_LOC))
		ctx = pop(d);
	else
		ctx = swd_pop_context(d);
	int64_t idx = demangle_index(d);
	if (!macro || !ctx || idx < 0)
		return NULL;
	struct swn *m = node(d, K_MACRO_EXPANSION);
	if (!m || !add(d, m, ctx) || !add(d, m, macro))
		return NULL;
	settext(m, kind);
	m->index = (uint64_t)idx;
	if (attached_name) {
		m->flags |= SWF_EXTRA_KID;
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

struct swn *swd_f_entity(struct swd *d)
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
		struct swn *ctx = swd_pop_context(d);
		if (!t || !ctx)
			return NULL;
		struct swn *e =
		    entity4(d, c == 'C' ? K_ALLOCATOR : K_CONSTRUCTOR, ctx, NULL, labels, t);
		/* swift demangle shows the private name of an init, not an allocator's */
		if (!e || (priv && c == 'c' && !add(d, e, priv)))
			return NULL;
		return e;
	}
	case 'U':
	case 'u': {
		int64_t idx = demangle_index(d);
		struct swn *t = pop_type(d);
		struct swn *ctx = swd_pop_context(d);
		if (idx < 0 || !t || !ctx)
			return NULL;
		struct swn *e = with(d, c == 'U' ? K_EXPL_CLOSURE : K_IMPL_CLOSURE, ctx, t);
		if (e)
			e->index = (uint64_t)idx;
		return e;
	}
	case 'A': {
		int64_t idx = demangle_index(d);
		struct swn *ctx = swd_pop_context(d);
		if (idx < 0 || !ctx)
			return NULL;
		struct swn *e = with(d, K_DEFAULT_ARG, ctx, NULL);
		if (e)
			e->index = (uint64_t)idx;
		return e;
	}
	case 'a': {
		struct swn *e = pop(d);
		if (!e || !swd_is_entity(e))
			return NULL;
		return with(d, K_RUNTIME_ATTR_GEN, e, NULL);
	}
	case 'm': {
		struct swn *sig = pop_kind(d, K_SIG);
		struct swn *labels;
		struct swn *t = pop_entity_type(d, &labels);
		if (t && sig)
			t = with(d, K_DEP_GENERIC_TYPE, sig, t);
		struct swn *name = swd_pop_decl_name(d);
		struct swn *ctx = swd_pop_context(d);
		if (!t || !name || !ctx)
			return NULL;
		return entity4(d, K_MACRO, ctx, name, labels, t);
	}
	case 'M':
		return macro_expansion(d);
	case 'p':
	case 'o': {
		struct swn *t = pop_type(d);
		struct swn *name = swd_pop_decl_name(d);
		struct swn *ctx = swd_pop_context(d);
		if (!t || !name || !ctx)
			return NULL;
		return entity4(d, c == 'p' ? K_GENERIC_PARAM_DECL : K_ENUM_ELEMENT, ctx, name, NULL,
			       t);
	}
	default:
		return NULL;
	}
none : {
	struct swn *ctx = swd_pop_context(d);
	return ctx ? with(d, k, ctx, NULL) : NULL;
}
}

struct swn *swd_nominal(struct swd *d, enum swk k)
{
	struct swn *name = swd_pop_decl_name(d);
	struct swn *ctx = swd_pop_context(d);
	if (!name || !ctx)
		return NULL;
	struct swn *n = with(d, k, ctx, name);
	if (!add_subst(d, n))
		return NULL;
	return n;
}

struct swn *swd_local_name(struct swd *d)
{
	if (nextif(d, 'L')) {
		struct swn *disc = pop_kind(d, K_IDENT);
		struct swn *name = swd_pop_decl_name(d);
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
		struct swn *name = swd_pop_decl_name(d);
		if (!name)
			return NULL;
		struct swn *r = with(d, K_RELATED_NAME, name, NULL);
		if (r)
			r->text = d->s + d->pos - 1, r->tlen = 1;
		return r;
	}
	int64_t idx = demangle_index(d);
	struct swn *name = swd_pop_decl_name(d);
	if (idx < 0 || !name)
		return NULL;
	struct swn *l = with(d, K_LOCAL_NAME, name, NULL);
	if (l)
		l->index = (uint64_t)idx;
	return l;
}

struct swn *swd_extension(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *mod = swd_pop_module(d);
	struct swn *t = pop_type(d);
	if (!mod || !t)
		return NULL;
	return with3(d, K_EXTENSION, mod, t, sig);
}

/* protocol-conformance ::= type protocol module? generic-signature? */
struct swn *swd_pop_conformance(struct swd *d)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *mod = swd_pop_module(d);
	struct swn *proto = swd_pop_protocol(d);
	struct swn *t = pop_type(d);
	if (!proto || !t)
		return NULL;
	if (sig)
		t = with(d, K_DEP_GENERIC_TYPE, sig, t);
	return with3(d, K_CONFORMANCE, t, proto, mod);
}

struct swn *swd_pop_any_conformance(struct swd *d)
{
	struct swn *t = top(d);
	if (swd_is_conformance(t))
		return pop(d);
	return NULL;
}

static struct swn *pop_conformance_list(struct swd *d)
{
	return swd_pop_list(d, K_CONF_LIST, true, swd_pop_any_conformance);
}

static struct swn *dep_conf_index(struct swd *d, struct swn *n)
{
	int64_t i = demangle_index(d);
	if (!n || i < 0)
		return NULL;
	n->index = (uint64_t)i;
	return n;
}

struct swn *swd_h_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'P':
	case 'p': {
		struct swn *p = swd_pop_protocol(d);
		struct swn *r = p ? with(d, K_CONF_REF, p, NULL) : NULL;
		if (r)
			r->flags = c == 'P' ? SWF_CONF_TYPE_MODULE : SWF_CONF_PROTOCOL_MODULE;
		return r;
	}
	case 'C': {
		struct swn *list = pop_conformance_list(d);
		struct swn *ref = pop_kind(d, K_CONF_REF);
		if (!ref) {
			struct swn *mod = swd_pop_module(d);
			struct swn *p = swd_pop_protocol(d);
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
		struct swn *p = swd_pop_protocol(d);
		struct swn *t = pop_type(d);
		if (!p || !t)
			return NULL;
		return dep_conf_index(d, with(d, K_DEP_CONF_ROOT, t, p));
	}
	case 'I': {
		struct swn *p = swd_pop_protocol(d);
		struct swn *conf = swd_pop_any_conformance(d);
		if (!p || !conf)
			return NULL;
		return dep_conf_index(d, with(d, K_DEP_CONF_INHERITED, conf, p));
	}
	case 'A': {
		struct swn *p = swd_pop_protocol(d);
		struct swn *t = pop_type(d);
		struct swn *conf = swd_pop_any_conformance(d);
		if (!p || !t || !conf)
			return NULL;
		return dep_conf_index(d, with3(d, K_DEP_CONF_ASSOC, conf, t, p));
	}
	case 'O': {
		struct swn *t = pop_type(d);
		struct swn *conf = swd_pop_any_conformance(d);
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

struct swn *swd_special(struct swd *d, const char *text, struct swn *kid)
{
	return settext(with(d, K_SPECIAL, kid, NULL), text);
}

struct swn *swd_prefix(struct swd *d, const char *text, struct swn *kid)
{
	return settext(with(d, K_PREFIX, kid, NULL), text);
}

/* everything on the stack, as the operand of a global attribute */
struct swn *swd_pop_global(struct swd *d)
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
		spec->flags |= SWF_ASYNC_REMOVED;
	else
		nextif(d, 'r');
	return isdig(next(d));
}

static struct swn *spec_node(struct swd *d, const char *text)
{
	return settext(node(d, K_SPEC), text);
}

struct swn *swd_generic_spec(struct swd *d, const char *text)
{
	struct swn *s = spec_node(d, text);
	if (!s || !spec_info(d, s))
		return NULL;
	struct swn *list = swd_pop_type_list(d);
	if (!list || !add(d, s, list))
		return NULL;
	struct swn *g = swd_pop_global(d);
	if (g && !add(d, s, g))
		return NULL;
	return s;
}

struct swn *swd_partial_spec(struct swd *d, const char *text)
{
	struct swn *s = spec_node(d, text);
	if (!s || !spec_info(d, s))
		return NULL;
	s->index = 1; /* partial: the list is the signature */
	struct swn *t = pop_type(d);
	struct swn *list = with(d, K_TYPE_LIST, t, NULL);
	if (!t || !list || !add(d, s, list))
		return NULL;
	struct swn *g = swd_pop_global(d);
	if (g && !add(d, s, g))
		return NULL;
	return s;
}

/* an integer or float constant ('i' or 'd' already read): its digits */
static struct swn *const_number(struct swd *d, struct swn *a, int k)
{
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

/* 'pS': a struct whose fields' constants follow as 'i', 'd' and 'S' */
static struct swn *const_struct(struct swd *d, struct swn *a)
{
	a->index = SA_CONST_STRUCT;
	while (peek(d) == 'i' || peek(d) == 'd' || peek(d) == 'S') {
		struct swn *f = node(d, K_SPEC_ARG);
		if (!f || !add(d, a, f))
			return NULL;
		int k = next(d);
		if (k == 'S')
			f->index = SA_CONST_STRUCT;
		else if (!const_number(d, f, k))
			return NULL;
	}
	return a;
}

/* a struct's types from the stack, its fields' structs' first */
static bool struct_payload(struct swd *d, struct swn *a, unsigned depth)
{
	for (unsigned i = a->nkids; i-- > 0;)
		if (a->kids[i]->index == SA_CONST_STRUCT &&
		    (depth > 8 || !struct_payload(d, a->kids[i], depth + 1)))
			return false;
	struct swn *t = pop_type(d);
	return t && add(d, a, t);
}

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
		case 'd':
			return const_number(d, a, k);
		case 'S':
			return const_struct(d, a);
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
			settext(a, enc);
			return a;
		}
		default:
			return NULL;
		}
	}
	default: {
		/*
		 * one letter per argument: existential to generic, dead, owned
		 * to guaranteed, guaranteed to owned, exploded, box to value,
		 * box to stack, inout to out; then D, G, X and O add the bits
		 * of d, g, x and o
		 */
		static const char base[] = "edgoxisr";
		static const unsigned char mods[] = {2, 4, 16, 8};
		const char *b = strchr(base, c);
		if (!b || !c)
			return NULL;
		unsigned opts = 1u << (b - base);
		opts |= swd_option_set(d, "DGXO", mods);
		a->index = SA_OPTIONS;
		a->index2 = opts;
		return a;
	}
	}
}

unsigned swd_option_set(struct swd *d, const char *letters, const unsigned char *bits)
{
	unsigned opts = 0;
	for (;;) {
		int c = peek(d);
		const char *l = c ? strchr(letters, c) : NULL;
		if (!l || (opts & bits[l - letters]))
			return opts;
		opts |= bits[l - letters];
		next(d);
	}
}

struct swn *swd_funcsig_spec(struct swd *d)
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
		if (a->index == SA_CONST_STRUCT) {
			if (!struct_payload(d, a, 0))
				return NULL;
			continue;
		}
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
	struct swn *g = swd_pop_global(d);
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

const char *swd_autodiff_kind(int c)
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

struct swn *swd_autodiff(struct swd *d, bool vtable, bool witness)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *g = swd_pop_global(d);
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
		kind = swd_autodiff_kind(k);
		if (!kind)
			return NULL;
	}
	settext(a, kind);
	if (!index_subset(d, a, &a->index) || !nextif(d, 'p'))
		return NULL;
	if (!index_subset(d, a, &a->index2) || !nextif(d, 'r'))
		return NULL;
	if (vtable)
		a->flags |= SWF_OTHER_FORM;
	if (witness)
		a->flags |= SWF_READONLY;
	return a;
}

struct swn *swd_autodiff_subset(struct swd *d)
{
	struct swn *t = pop_type(d);
	struct swn *g = swd_pop_global(d);
	if (!t)
		return NULL;
	struct swn *a = with(d, K_AUTODIFF_SUBSET, t, g);
	const char *kind = swd_autodiff_kind(next(d));
	if (!a || !kind)
		return NULL;
	settext(a, kind);
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
