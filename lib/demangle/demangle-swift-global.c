/*
 * Global operators of Swift's current mangling: thunks ('T'), witness
 * tables and outlined operations ('W'), metadata ('M') and runtime records
 * ('H').  Part of the stack parser (demangle-swift.c).
 */
#include <stdio.h>
#include <string.h>

#include "demangle-swift-parse.h"

/* ------------------------------------------------------------------ */
/* 'T': thunks and other global operators */

static struct swn *reabstraction(struct swd *d, const char *text, bool self)
{
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *st = self ? pop_type(d) : NULL; /* the self type comes last */
	struct swn *to = pop_type(d);
	struct swn *from = pop_type(d);
	if (!to || !from || (self && !st))
		return NULL;
	struct swn *r = with3(d, K_REABSTRACT, from, to, sig);
	if (!r)
		return NULL;
	settext(r, text);
	if (self) {
		if (!add(d, r, st))
			return NULL;
		r->flags |= SWF_EXTRA_KID;
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
	swd_reverse_kids(types);
	struct swn *k = node(d, hash ? K_KEYPATH_EQ : K_KEYPATH);
	if (!k)
		return NULL;
	settext(k, text);
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
	struct swn *g = swd_pop_global(d);
	struct swn *n = g ? with(d, K_ASYNC_PARTIAL, g, NULL) : NULL;
	if (n) {
		n->index = (uint64_t)i;
		if (await)
			n->flags |= SWF_OTHER_FORM;
	}
	return n;
}

/*
 * The operators that pop one operand and name it by fixed text: a special
 * node ("text operand") or, with prefix set, a prefix node ("textoperand").
 */
struct op_row {
	char code;
	unsigned char prefix; /* true, or with OP_BARE: simplified, the operand alone */
	const char *text;
	struct swn *(*pop)(struct swd *d);
};

#define OP_BARE 2

#define OP_ROWS(rows) (rows), sizeof(rows) / sizeof((rows)[0])

/* Whether letter c has a row in rows; if so, *ret is its node (NULL: invalid). */
static bool op_row(struct swd *d, int c, const struct op_row *rows, size_t nrows, struct swn **ret)
{
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].code != c)
			continue;
		struct swn *kid = rows[i].pop(d);
		*ret = (rows[i].prefix & 1) ? swd_prefix(d, rows[i].text, kid)
					    : swd_special(d, rows[i].text, kid);
		if (*ret && (rows[i].prefix & OP_BARE))
			(*ret)->index = 1;
		return true;
	}
	return false;
}

static struct swn *pop_opaque_decl(struct swd *d)
{
	return pop_kind(d, K_OPAQUE_DECL);
}

struct swn *swd_t_op(struct swd *d)
{
	static const struct op_row rows[] = {
	    {'O', true, "@nonobjc ", swd_pop_global},
	    {'o', true, "@objc ", swd_pop_global},
	    {'D', true, "dynamic ", swd_pop_global},
	    {'d', true, "super ", swd_pop_global},
	    {'E', OP_BARE | true, "distributed thunk ", swd_pop_global},
	    {'F', false, "distributed accessor for", swd_pop_global},
	    {'I', OP_BARE, "dynamically replaceable thunk for", swd_pop_global},
	    {'u', false, "async function pointer to", swd_pop_global},
	    {'X', OP_BARE, "dynamically replaceable variable for", swd_pop_global},
	    {'x', OP_BARE, "dynamically replaceable key for", swd_pop_global},
	    {'j', false, "dispatch thunk of", swd_pop_global},
	    {'q', false, "method descriptor for", swd_pop_global},
	    {'m', OP_BARE | true, "merged ", swd_pop_global},
	    {'S', false, "protocol self-conformance witness for", swd_pop_global},
	    {'C', false, "coroutine continuation prototype for", pop_type},
	    {'c', false, "curry thunk of", swd_pop_global},
	    {'L', false, "protocol requirements base descriptor for", swd_pop_protocol},
	};
	int c = next(d);
	struct swn *op;
	if (op_row(d, c, OP_ROWS(rows), &op))
		return op;
	switch (c) {
	case 'A':
	case 'a': {
		if (c == 'a' && (isdig(peek(d)) || peek(d) == 'q'))
			return swd_generic_spec(d, "non-async specialization");
		struct swn *g = swd_pop_global(d);
		struct swn *n = node(d, K_SPECIAL);
		if (!n || (g && !add(d, n, g)))
			return NULL;
		settext(n, c == 'A' ? "partial apply forwarder" : "partial apply ObjC forwarder");
		n->flags |= SWF_OTHER_FORM; /* " for " only with an operand */
		return n;
	}
	case 'w': {
		static const struct op_row w_rows[] = {
		    {'b', OP_BARE, "back deployment thunk for", swd_pop_global},
		    {'B', false, "back deployment fallback for", swd_pop_global},
		    {'c', false, "coro function pointer to", swd_pop_global},
		    {'d', true, "default override of ", swd_pop_global},
		    {'S', false, "#_hasSymbol query for", swd_pop_global},
		};
		return op_row(d, next(d), OP_ROWS(w_rows), &op) ? op : NULL;
	}
	case 'Q':
		return async_partial(d, true);
	case 'Y':
		return async_partial(d, false);
	case 'V': {
		struct swn *base = pop(d);
		struct swn *derived = pop(d);
		if (!swd_is_entity(base) || !swd_is_entity(derived))
			return NULL;
		return with(d, K_VTABLE_THUNK, derived, base);
	}
	case 'W': {
		struct swn *e = pop(d);
		if (!swd_is_entity(e))
			return NULL;
		struct swn *conf = swd_pop_conformance(d);
		return conf ? with(d, K_WITNESS_THUNK, conf, e) : NULL;
	}
	case 'R':
		return reabstraction(d, "reabstraction thunk helper", false);
	case 'r':
		return reabstraction(d, "reabstraction thunk", false);
	case 'y':
		return reabstraction(d, "reabstraction thunk", true);
	case 'U': {
		struct swn *t = pop_type(d);
		struct swn *g = swd_pop_global(d);
		if (!t || !g)
			return NULL;
		return swd_special(d, "reabstraction thunk with global actor constraint for", g);
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
		return keypath(d, "key path index equality operator for", true);
	case 'h':
		return keypath(d, "key path index hash operator for", true);
	case 'l': {
		struct swn *a = swd_pop_assoc_name(d);
		return a ? with(d, K_ASSOC_TYPE_DESC, a, NULL) : NULL;
	}
	case 'M': {
		struct swn *a = swd_pop_assoc_name(d);
		struct swn *n = a ? with(d, K_ASSOC_TYPE_DESC, a, NULL) : NULL;
		if (n)
			n->flags |= SWF_OTHER_FORM;
		return n;
	}
	case 'n':
	case 'N': {
		struct swn *req = swd_pop_protocol(d);
		struct swn *path = NULL;
		if (swd_is_type(top(d)) && top(d)->kind != K_PROTOCOL)
			path = pop_type(d);
		else
			path = swd_pop_assoc_path(d);
		struct swn *proto = pop_type(d);
		if (!req || !path || !proto)
			return NULL;
		struct swn *n = with3(d, K_ASSOC_CONF_DESC, proto, path, req);
		settext(n, c == 'n' ? "associated conformance descriptor for "
				    : "default associated conformance accessor for ");
		return n;
	}
	case 'b': {
		struct swn *req = swd_pop_protocol(d);
		struct swn *proto = pop_type(d);
		if (!req || !proto)
			return NULL;
		return with(d, K_BASE_CONF_DESC, proto, req);
	}
	case 'v': {
		int64_t i = demangle_index(d);
		if (i < 0)
			return NULL;
		struct swn *g = swd_pop_global(d);
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
		struct swn *g = swd_pop_global(d);
		struct swn *n = g ? with(d, K_OUTLINED_BRIDGE, g, NULL) : NULL;
		if (n)
			n->text = d->s + start, n->tlen = (uint16_t)(d->pos - 1 - start);
		return n;
	}
	case 'J':
		if (nextif(d, 'V'))
			return swd_autodiff(d, true, false);
		if (nextif(d, 'O')) {
			struct swn *sig = pop_kind(d, K_SIG);
			struct swn *to = pop_type(d);
			struct swn *from = pop_type(d);
			const char *kind = swd_autodiff_kind(next(d));
			if (!to || !from || !kind)
				return NULL;
			struct swn *n = with3(d, K_AUTODIFF_REORDER, from, to, sig);
			return settext(n, kind);
		}
		if (nextif(d, 'S'))
			return swd_autodiff_subset(d);
		return swd_autodiff(d, false, false);
	case 'g':
		return swd_generic_spec(d, "generic specialization");
	case 'G':
		return swd_generic_spec(d, "generic not re-abstracted specialization");
	case 'B':
		return swd_generic_spec(d, "generic specialization");
	case 's':
		return swd_generic_spec(d, "generic pre-specialization");
	case 'i':
		return swd_generic_spec(d, "inlined generic function");
	case 'p':
		return swd_partial_spec(d, "generic partial specialization");
	case 'P':
		return swd_partial_spec(d, "generic not-reabstracted partial specialization");
	case 'f':
		return swd_funcsig_spec(d);
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
			return swd_generic_spec(d, "generic specialization");
		if (c == 'G')
			return swd_generic_spec(d, "generic not re-abstracted specialization");
		return NULL;
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* 'W', 'M', 'H' globals */

static struct swn *lazy_wt(struct swd *d, const char *text)
{
	struct swn *conf = swd_pop_conformance(d);
	struct swn *t = pop_type(d);
	return settext((conf && t) ? with(d, K_LAZY_WT, t, conf) : NULL, text);
}

static struct swn *outlined(struct swd *d)
{
	const char *text;
	bool indexed = false; /* the enum case follows as an index */
	bool sig_shown = false;
	switch (next(d)) {
	case 'y':
		text = "outlined copy of";
		sig_shown = true;
		break;
	case 'e':
		text = "outlined consume of";
		sig_shown = true;
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
		text = "outlined enum tag store of";
		indexed = true;
		break;
	case 'j':
		text = "outlined enum project data for load of";
		indexed = true;
		break;
	case 'g':
		text = "outlined enum get tag of";
		break;
	default:
		return NULL;
	}
	if (indexed && demangle_index(d) < 0)
		return NULL;
	struct swn *sig = pop_kind(d, K_SIG);
	struct swn *n = swd_special(d, text, pop_type(d));
	if (n && sig && sig_shown && !add(d, n, sig))
		return NULL;
	return n;
}

struct swn *swd_w_op(struct swd *d)
{
	static const struct op_row rows[] = {
	    {'V', false, "value witness table for", pop_type},
	    {'P', false, "protocol witness table for", swd_pop_conformance},
	    {'p', false, "protocol witness table pattern for", swd_pop_conformance},
	    {'a', false, "protocol witness table accessor for", swd_pop_conformance},
	    {'G', false, "generic protocol witness table for", swd_pop_conformance},
	    {'I', false, "instantiation function for generic protocol witness table for",
	     swd_pop_conformance},
	    {'r', false, "resilient protocol witness table for", swd_pop_conformance},
	    {'S', false, "protocol self-conformance witness table for", swd_pop_protocol},
	    {'C', false, "enum case for", pop},
	};
	int c = next(d);
	struct swn *op;
	if (op_row(d, c, OP_ROWS(rows), &op))
		return op;
	switch (c) {
	case 'v': {
		int k = next(d);
		if (k != 'd' && k != 'i')
			return NULL;
		struct swn *e = pop(d);
		if (!swd_is_entity(e))
			return NULL;
		return settext(with(d, K_FIELD_OFFSET, e, NULL),
			       k == 'd' ? "direct field offset for "
					: "indirect field offset for ");
	}
	case 'L':
		return lazy_wt(d, "lazy protocol witness table cache variable for type ");
	case 'l':
		return lazy_wt(d, "lazy protocol witness table accessor for type ");
	case 't': {
		struct swn *name = pop_kind(d, K_IDENT);
		struct swn *conf = swd_pop_conformance(d);
		return (name && conf) ? with(d, K_ASSOC_TYPE_ACCESS, conf, name) : NULL;
	}
	case 'T': {
		struct swn *proto = swd_pop_protocol(d);
		struct swn *path = swd_pop_assoc_path(d);
		struct swn *conf = swd_pop_conformance(d);
		return (proto && path && conf) ? with3(d, K_ASSOC_WT_ACCESS, conf, path, proto)
					       : NULL;
	}
	case 'b': {
		struct swn *proto = swd_pop_protocol(d);
		struct swn *conf = swd_pop_conformance(d);
		struct swn *n =
		    (proto && conf) ? with3(d, K_ASSOC_WT_ACCESS, conf, NULL, proto) : NULL;
		if (n)
			n->flags |= SWF_OTHER_FORM;
		return n;
	}
	case 'O':
		return outlined(d);
	case 'J':
		return swd_autodiff(d, false, true);
	case 'Z':
	case 'z': {
		struct swn *names = node(d, K_TYPE_LIST);
		if (!names)
			return NULL;
		while (pop_kind(d, K_FIRST_MARK)) {
			struct swn *n = swd_pop_decl_name(d);
			if (!n || !add(d, names, n))
				return NULL;
		}
		struct swn *ctx = swd_pop_context(d);
		if (!ctx || names->nkids == 0)
			return NULL;
		struct swn *n = with(d, K_ONE_TIME_INIT, ctx, names);
		settext(n, c == 'Z' ? "one-time initialization function for "
				    : "one-time initialization token for ");
		return n;
	}
	default:
		return NULL;
	}
}

/* metadata, descriptors and records: 'M' letter */
struct swn *swd_m_op(struct swd *d)
{
	static const struct op_row rows[] = {
	    {'a', false, "type metadata accessor for", pop_type},
	    {'L', false, "lazy cache variable for type metadata for", pop_type},
	    {'f', false, "full type metadata for", pop_type},
	    {'P', false, "generic type metadata pattern for", pop_type},
	    {'r', false, "type metadata completion function for", pop_type},
	    {'i', false, "type metadata instantiation function for", pop_type},
	    {'I', false, "type metadata instantiation cache for", pop_type},
	    {'l', false, "type metadata singleton initialization cache for", pop_type},
	    {'m', false, "metaclass for", pop_type},
	    {'n', false, "nominal type descriptor for", pop_type},
	    {'Q', false, "opaque type descriptor for", pop_opaque_decl},
	    {'u', false, "method lookup function for", pop_type},
	    {'U', false, "ObjC metadata update function for", pop_type},
	    {'s', false, "ObjC resilient class stub for", pop_type},
	    {'t', false, "full ObjC resilient class stub for", pop_type},
	    {'p', false, "protocol descriptor for", swd_pop_protocol},
	    {'o', false, "class metadata base offset for", pop_type},
	    {'F', true, "reflection metadata field descriptor ", pop_type},
	    {'B', true, "reflection metadata builtin descriptor ", pop_type},
	    {'A', true, "reflection metadata associated type descriptor ", swd_pop_conformance},
	    {'C', true, "reflection metadata superclass descriptor ", pop_type},
	    {'K', false, "metadata instantiation cache for", swd_pop_global},
	    {'J', false, "cache variable for noncanonical specialized generic type metadata for",
	     swd_pop_global},
	    {'V', false, "property descriptor for", pop},
	    {'N', false, "noncanonical specialized generic type metadata for", swd_pop_global},
	    {'z', false, "flag for loading of canonical specialized generic type metadata for",
	     swd_pop_global},
	    {'b', false, "canonical specialized generic type metadata accessor for",
	     swd_pop_global},
	    {'q', false, "uniquing prefix for", swd_pop_global},
	    {'S', false, "protocol self-conformance descriptor for", swd_pop_protocol},
	    {'c', false, "protocol conformance descriptor for", swd_pop_conformance},
	    {'D', false, "demangling cache variable for type metadata for", pop_type},
	};
	int c = next(d);
	struct swn *op;
	if (op_row(d, c, OP_ROWS(rows), &op))
		return op;
	static const struct op_row x_rows[] = {
	    {'M', true, "module descriptor ", swd_pop_module},
	    {'E', true, "extension descriptor ", swd_pop_context},
	    {'X', true, "anonymous descriptor ", swd_pop_context},
	};
	if (c != 'X')
		return NULL;
	c = next(d);
	if (op_row(d, c, OP_ROWS(x_rows), &op))
		return op;
	if (c != 'Y')
		return NULL;
	struct swn *id = pop_kind(d, K_IDENT);
	struct swn *ctx = swd_pop_context(d);
	if (!id || !ctx)
		return NULL;
	return with(d, K_ANON_CONTEXT, ctx, id);
}

const char *swd_value_witness(int a, int b, bool legacy)
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
	size_t n = sizeof(tab) / sizeof(tab[0]) - (legacy ? 2 : 0);
	for (size_t i = 0; i < n; i++)
		if (tab[i].code[0] == a && tab[i].code[1] == b)
			return tab[i].name;
	return NULL;
}

struct swn *swd_h_global(struct swd *d, int c)
{
	static const struct op_row rows[] = {
	    {'r', false, "protocol descriptor runtime record for", swd_pop_protocol},
	    {'n', false, "nominal type descriptor runtime record for", pop_type},
	    {'o', false, "opaque type descriptor runtime record for", pop_opaque_decl},
	    {'c', false, "protocol conformance descriptor runtime record for", swd_pop_conformance},
	    {'F', false, "accessible function runtime record for", swd_pop_global},
	};
	struct swn *op;
	return op_row(d, c, OP_ROWS(rows), &op) ? op : NULL;
}
