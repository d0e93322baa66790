/*
 * The legacy `_T` mangling's globals: thunks, partial applies,
 * specializations (whose nested names start over), witness tables, value
 * witnesses and metadata.  See demangle-swift-old.c.
 */
#include "demangle-swift-old.h"

/* ------------------------------------------------------------------ */
/* globals */

static struct swn *conformance(struct swd *d)
{
	struct swn *sig = NULL;
	if (nextif(d, 'u') && !(sig = swd_old_sig(d)))
		return NULL;
	struct swn *t = swo_type(d);
	struct swn *p = t ? swo_protocol_name(d) : NULL;
	struct swn *m = p ? swo_module(d) : NULL;
	if (!m)
		return NULL;
	if (sig)
		t = swd_with(d, K_DEP_GENERIC_TYPE, sig, t);
	struct swn *c = swd_with(d, K_CONFORMANCE, t, p);
	return add(d, c, m) ? c : NULL;
}

/* a nested mangled name ("_T..." inside a specialization or partial apply) */
static struct swn *nested(struct swd *d)
{
	if (!nextif(d, '_') || !nextif(d, 'T'))
		return NULL;
	/* a nested name starts a substitution table of its own */
	d->nsubst = 0;
	return swo_global(d);
}

static struct swn *generic_spec(struct swd *d, const char *text)
{
	struct swn *s = settext(node(d, K_SPEC), text);
	struct swn *params = node(d, K_TYPE_LIST);
	if (!s || !params || !add(d, s, params))
		return NULL;
	if (nextif(d, 'q'))
		s->flags |= SWF_READONLY;
	if (!isdig(next(d)))
		return NULL;
	while (!nextif(d, '_')) {
		struct swn *t = swo_type(d);
		if (!t)
			return NULL;
		struct swn *param = t;
		while (!nextif(d, '_')) {
			struct swn *c = conformance(d);
			if (!c)
				return NULL;
			if (param == t) {
				param = node(d, K_SPEC_PARAM);
				if (!add(d, param, t))
					return NULL;
			}
			if (!add(d, param, c))
				return NULL;
		}
		if (!add(d, params, param))
			return NULL;
	}
	struct swn *g = nested(d);
	return add(d, s, g) ? s : NULL;
}

static struct swn *spec_payload(struct swd *d, struct swn *arg)
{
	struct swn *id = swo_identifier(d, K_IDENT);
	return add(d, arg, id) ? arg : NULL;
}

static struct swn *funcsig_arg(struct swd *d)
{
	struct swn *a = node(d, K_SPEC_ARG);
	if (!a)
		return NULL;
	if (nextif(d, 'n')) {
		a->index = SA_NONE;
	} else if (peek(d) == 'c' && peek2(d) == 'l') {
		d->pos += 2;
		a->index = SA_CLOSURE;
		a->index2 = 1; /* the old mangling demangles the closure's name */
		if (!spec_payload(d, a))
			return NULL;
		struct swn *types = node(d, K_TYPE_LIST);
		if (!add(d, a, types))
			return NULL;
		while (peek(d) != '_') {
			if (d->pos >= d->len || !add(d, types, swo_type(d)))
				return NULL;
		}
	} else if (peek(d) == 'c' && peek2(d) == 'p') {
		d->pos += 2;
		if (nextif(d, 'f')) {
			int f = next(d);
			if (f == 'r') {
				a->index = SA_CONST_FN;
				return spec_payload(d, a) && nextif(d, '_') ? a : NULL;
			}
			if (f != 'l')
				return NULL;
			a->index = SA_CONST_FLOAT;
		} else if (nextif(d, 'g')) {
			a->index = SA_CONST_GLOBAL;
			return spec_payload(d, a) && nextif(d, '_') ? a : NULL;
		} else if (nextif(d, 'i')) {
			a->index = SA_CONST_INT;
		} else if (nextif(d, 's')) {
			if (!nextif(d, 'e'))
				return NULL;
			int enc = next(d);
			const char *e = enc == '0' ? "u8" : enc == '1' ? "u16" : NULL;
			if (!e || !nextif(d, 'v'))
				return NULL;
			a->index = SA_CONST_STRING;
			settext(a, e);
			return spec_payload(d, a) && nextif(d, '_') ? a : NULL;
		} else {
			return NULL;
		}
		size_t start = d->pos;
		if (natural(d) < 0)
			return NULL;
		a->text = d->s + start;
		a->tlen = (uint16_t)(d->pos - start);
	} else {
		/* the legacy letters for the bits of the current mangling's */
		static const unsigned char bits[] = {2, 4, 8, 16, 16, 32};
		unsigned opts = swd_option_set(d, "dgoski", bits);
		if (!opts)
			return NULL;
		a->index = SA_OPTIONS;
		a->index2 = opts;
	}
	return nextif(d, '_') ? a : NULL;
}

static struct swn *funcsig_spec(struct swd *d)
{
	struct swn *s = settext(node(d, K_SPEC), "function signature specialization");
	struct swn *args = node(d, K_SPEC_FUNCSIG);
	if (!s || !args || !add(d, s, args))
		return NULL;
	if (nextif(d, 'q'))
		s->flags |= SWF_READONLY;
	if (!isdig(next(d)))
		return NULL;
	while (!nextif(d, '_')) {
		if (d->pos >= d->len || !add(d, args, funcsig_arg(d)))
			return NULL;
	}
	struct swn *g = nested(d);
	return add(d, s, g) ? s : NULL;
}

static struct swn *reabstraction(struct swd *d, const char *text)
{
	struct swn *sig = NULL;
	if (nextif(d, 'G') && !(sig = swd_old_sig(d)))
		return NULL;
	struct swn *to = swo_type(d);
	struct swn *from = to ? swo_type(d) : NULL;
	struct swn *r = settext(with(d, K_REABSTRACT, from, to), text);
	if (!r || (sig && !add(d, r, sig)))
		return NULL;
	return r;
}

static struct swn *thunk(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'o':
		return swd_prefix(d, "@objc ", swo_global(d));
	case 'O':
		return swd_prefix(d, "@nonobjc ", swo_global(d));
	case 'D':
		return swd_prefix(d, "dynamic ", swo_global(d));
	case 'd':
		return swd_special(d, "direct method reference for", swo_global(d));
	case 'R':
		return reabstraction(d, "reabstraction thunk helper");
	case 'r':
		return reabstraction(d, "reabstraction thunk");
	case 'W': {
		struct swn *conf = conformance(d);
		struct swn *e = conf ? swo_entity(d) : NULL;
		return e ? swd_with(d, K_WITNESS_THUNK, conf, e) : NULL;
	}
	case 'S':
		switch (next(d)) {
		case 'g':
			return generic_spec(d, "generic specialization");
		case 'r':
			return generic_spec(d, "generic not re-abstracted specialization");
		case 'f':
			return funcsig_spec(d);
		default:
			return NULL;
		}
	default:
		return NULL;
	}
}

static struct swn *metadata(struct swd *d)
{
	static const struct {
		char code;
		const char *text;
	} of_type[] = {
	    {'P', "generic type metadata pattern for"},
	    {'f', "full type metadata for"},
	    {'a', "type metadata accessor for"},
	    {'L', "lazy cache variable for type metadata for"},
	    {'m', "metaclass for"},
	    {'n', "nominal type descriptor for"},
	};
	for (size_t i = 0; i < sizeof(of_type) / sizeof(of_type[0]); i++) {
		if (peek(d) == of_type[i].code) {
			next(d);
			return swd_special(d, of_type[i].text, swo_type(d));
		}
	}
	switch (peek(d)) {
	case 'p':
		next(d);
		return swd_special(d, "protocol descriptor for", swo_protocol_name(d));
	case 'R':
		next(d);
		switch (next(d)) {
		case 'f':
			return swd_prefix(d, "reflection metadata field descriptor ", swo_type(d));
		case 'b':
			return swd_prefix(d, "reflection metadata builtin descriptor ",
					  swo_type(d));
		case 'a':
			return swd_prefix(d, "reflection metadata associated type descriptor ",
					  conformance(d));
		default:
			return NULL;
		}
	default:
		return swd_special(d, "type metadata for", swo_type(d));
	}
}

static struct swn *witness(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'V':
		return swd_special(d, "value witness table for", swo_type(d));
	case 'v': {
		const char *t;
		switch (next(d)) {
		case 'd':
			t = "direct field offset for ";
			break;
		case 'i':
			t = "indirect field offset for ";
			break;
		default:
			return NULL;
		}
		return settext(with(d, K_FIELD_OFFSET, swo_entity(d), NULL), t);
	}
	case 'P':
		return swd_special(d, "protocol witness table for", conformance(d));
	case 'a':
		return swd_special(d, "protocol witness table accessor for", conformance(d));
	case 'G':
		return swd_special(d, "generic protocol witness table for", conformance(d));
	case 'I':
		return swd_special(d,
				   "instantiation function for generic protocol witness table for",
				   conformance(d));
	case 'l':
	case 'L': {
		struct swn *t = swo_type(d);
		struct swn *conf = t ? conformance(d) : NULL;
		return settext(with(d, K_LAZY_WT, t, conf),
			       c == 'l' ? "lazy protocol witness table accessor for type "
					: "lazy protocol witness table cache variable for type ");
	}
	case 't': {
		struct swn *conf = conformance(d);
		struct swn *id = conf ? swo_identifier(d, K_IDENT) : NULL;
		return id ? swd_with(d, K_ASSOC_TYPE_ACCESS, conf, id) : NULL;
	}
	case 'T': {
		struct swn *conf = conformance(d);
		struct swn *id = conf ? swo_identifier(d, K_IDENT) : NULL;
		struct swn *p = id ? swo_protocol_name(d) : NULL;
		struct swn *path = with(d, K_TYPE_LIST, id, NULL);
		struct swn *n = p ? swd_with(d, K_ASSOC_WT_ACCESS, conf, path) : NULL;
		return add(d, n, p) ? n : NULL;
	}
	default:
		return NULL;
	}
}

static struct swn *value_witness(struct swd *d)
{
	int a = next(d), b = next(d);
	const char *name = swd_value_witness(a, b, true);
	return name ? settext(with(d, K_VALUE_WITNESS, swo_type(d), NULL), name) : NULL;
}

static struct swn *global_inner(struct swd *d)
{
	switch (peek(d)) {
	case 't':
		next(d);
		return swo_type(d);
	case 'T':
		next(d);
		return thunk(d);
	case 'M':
		next(d);
		return metadata(d);
	case 'W':
		next(d);
		return witness(d);
	case 'w':
		next(d);
		return value_witness(d);
	case 'P':
		if (peek2(d) != 'A')
			return NULL;
		d->pos += 2;
		{
			bool objc = nextif(d, 'o');
			if (!nextif(d, '_'))
				return NULL;
			struct swn *g = nested(d);
			struct swn *n = with(d, K_SPECIAL, g, NULL);
			if (!n)
				return NULL;
			settext(n,
				objc ? "partial apply ObjC forwarder" : "partial apply forwarder");
			n->flags |= SWF_OTHER_FORM;
			return n;
		}
	default:
		return swo_entity(d);
	}
}

struct swn *swo_global(struct swd *d)
{
	if (!enter(d))
		return NULL;
	struct swn *g = global_inner(d);
	d->depth--;
	return g;
}

struct swn *swd_parse_old(struct swd *d)
{
	struct swn *g = swo_global(d);
	if (!g)
		return NULL;
	struct swn *root = node(d, K_GLOBAL);
	if (!add(d, root, g))
		return NULL;
	if (d->pos < d->len) {
		struct swn *suffix = swd_text(d, K_SUFFIX, d->s + d->pos, d->len - d->pos);
		if (!add(d, root, suffix))
			return NULL;
		d->pos = d->len;
	}
	return root;
}
