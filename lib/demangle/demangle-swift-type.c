/*
 * Types of Swift's current mangling: function signatures and their
 * attributes, tuples, bound generic types, builtins, SIL function types
 * ('I'), archetypes and opaque types ('Q'), the special types ('X') and the
 * parameter flags ('Y').  Part of the stack parser (demangle-swift.c).
 */
#include <stdio.h>
#include <string.h>

#include "demangle-swift-parse.h"

/* ------------------------------------------------------------------ */
/* types */

struct swn *swd_marker(struct swd *d, int code, const char *text, struct swn *kid)
{
	struct swn *n = node(d, K_ATTR_TYPE);
	if (!n)
		return NULL;
	n->index = (uint64_t)code;
	if (text)
		settext(n, text);
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
struct swn *swd_pop_function_type(struct swd *d, const char *conv)
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
bool swd_pop_labels(struct swd *d, const struct swn *type, struct swn **ret)
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

static struct swn *pop_tuple_elem(struct swd *d)
{
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
	return add(d, el, t) ? el : NULL;
}

struct swn *swd_pop_tuple(struct swd *d)
{
	return swd_pop_list(d, K_TUPLE, true, pop_tuple_elem);
}

struct swn *swd_pop_type_list(struct swd *d)
{
	return swd_pop_list(d, K_TYPE_LIST, true, pop_type);
}

struct swn *swd_pop_proto_list(struct swd *d)
{
	return swd_pop_list(d, K_PROTO_LIST, true, swd_pop_protocol);
}

bool swd_is_conformance(const struct swn *n)
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
	if (list)
		swd_reverse_kids(list);
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

struct swn *swd_bound_generic(struct swd *d)
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

const char *swd_builtin_name(int c, bool legacy)
{
	/* the legacy mangling has the first seven */
	static const struct {
		char code;
		const char *name;
	} tab[] = {
	    {'b', "Builtin.BridgeObject"},
	    {'B', "Builtin.UnsafeValueBuffer"},
	    {'O', "Builtin.UnknownObject"},
	    {'o', "Builtin.NativeObject"},
	    {'p', "Builtin.RawPointer"},
	    {'t', "Builtin.SILToken"},
	    {'w', "Builtin.Word"},
	    {'c', "Builtin.RawUnsafeContinuation"},
	    {'D', "Builtin.DefaultActorStorage"},
	    {'d', "Builtin.NonDefaultDistributedActorStorage"},
	    {'e', "Builtin.Executor"},
	    {'I', "Builtin.IntLiteral"},
	    {'j', "Builtin.Job"},
	    {'P', "Builtin.PackIndex"},
	    {'A', "Builtin.ImplicitActor"},
	};
	size_t n = legacy ? 7 : sizeof(tab) / sizeof(tab[0]);
	for (size_t i = 0; i < n; i++)
		if (tab[i].code == c)
			return tab[i].name;
	return NULL;
}

struct swn *swd_builtin(struct swd *d)
{
	int c = next(d);
	char buf[64];
	const char *name = swd_builtin_name(c, false);
	if (name)
		return text_node(d, K_BUILTIN, name);
	switch (c) {
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
	return swd_text_copy(d, K_BUILTIN, buf, strlen(buf));
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

struct swn *swd_impl_function(struct swd *d)
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
		sig->flags |= SWF_PSEUDOGENERIC;
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
		/* a C type (zB, zC), or else no convention and an error result */
		if (d->pos + 1 >= d->len || (d->s[d->pos + 1] != 'B' && d->s[d->pos + 1] != 'C'))
			break;
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

struct swn *swd_archetype(struct swd *d)
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
		struct swn *name = swd_pop_assoc_name(d);
		struct swn *p = c == 'z' ? swd_param_type(d, 0, 0) : swd_generic_param_index(d);
		t = with(d, K_DEP_MEMBER, p, name);
		if (!name || !p || !add_subst(d, t))
			return NULL;
		return t;
	}
	case 'Y':
	case 'Z': {
		struct swn *path = swd_pop_assoc_path(d);
		struct swn *p = c == 'Z' ? swd_param_type(d, 0, 0) : swd_generic_param_index(d);
		if (!path || !p)
			return NULL;
		t = swd_dep_member_chain(d, p, path);
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'x': {
		struct swn *name = swd_pop_assoc_name(d);
		struct swn *base = pop_type(d);
		if (!name || !base)
			return NULL;
		t = with(d, K_DEP_MEMBER, base, name);
		if (!add_subst(d, t))
			return NULL;
		return t;
	}
	case 'X': {
		struct swn *path = swd_pop_assoc_path(d);
		struct swn *base = pop_type(d);
		if (!path || !base)
			return NULL;
		t = swd_dep_member_chain(d, base, path);
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
		if (!e || !swd_is_entity(e))
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
		struct swn *list = swd_pop_type_list(d);
		if (!list)
			return NULL;
		list->kind = K_PACK;
		if (c == 'S') {
			int dir = next(d);
			if (dir != 'i' && dir != 'd')
				return NULL;
			settext(list, dir == 'i' ? "@indirect " : "@direct ");
		}
		return list;
	}
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* 'X': special types */

struct swn *swd_wrap_type(struct swd *d, enum swk k)
{
	struct swn *t = pop_type(d);
	return t ? with(d, k, t, NULL) : NULL;
}

const char *swd_metatype_repr(int c)
{
	switch (c) {
	case 't':
		return "@thin";
	case 'T':
		return "@thick";
	case 'o':
		return "@objc_metatype";
	default:
		return NULL;
	}
}

static struct swn *metatype_repr(struct swd *d, enum swk k)
{
	const char *r = swd_metatype_repr(next(d));
	return r ? settext(swd_wrap_type(d, k), r) : NULL;
}

static struct swn *sil_box(struct swd *d, bool generic)
{
	struct swn *sig = NULL, *args = NULL;
	if (generic) {
		sig = pop_kind(d, K_SIG);
		if (!sig)
			return NULL;
		args = swd_pop_type_list(d);
		if (!args)
			return NULL;
	}
	struct swn *fields = swd_pop_type_list(d);
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

static struct swn *pop_requirement(struct swd *d)
{
	return swd_is_requirement(top(d)) ? pop(d) : NULL;
}

struct swn *swd_special_type(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'f':
		return swd_pop_function_type(d, "@convention(thin)");
	case 'K':
		return swd_pop_function_type(d, "@autoclosure");
	case 'A':
		return swd_pop_function_type(d, "@autoclosure"); /* as swift demangle */
	case 'B':
		return swd_pop_function_type(d, "@convention(block)");
	case 'L':
		return swd_pop_function_type(d, "@convention(block)");
	case 'C':
		return swd_pop_function_type(d, "@convention(c)");
	case 'E':
		return swd_pop_function_type(d, NULL);
	case 'U':
		return swd_pop_function_type(d, NULL);
	case 'O':
		return swd_pop_function_type(d, NULL);
	case 'z': {
		int k = next(d);
		int64_t n = natural(d);
		if ((k != 'B' && k != 'C') || n <= 0 || (uint64_t)n > d->len - d->pos)
			return NULL;
		/* the Clang type, as an Itanium mangling, printed as it is */
		struct swn *ct = swd_text(d, K_CLANG_TYPE, d->s + d->pos, (size_t)n);
		d->pos += (size_t)n;
		struct swn *fn =
		    swd_pop_function_type(d, k == 'B' ? "@convention(block)" : "@convention(c)");
		if (!fn || !add(d, fn, ct))
			return NULL;
		return fn;
	}
	case 'o':
		return swd_wrap_type(d, K_UNOWNED);
	case 'u':
		return swd_wrap_type(d, K_UNMANAGED);
	case 'w':
		return swd_wrap_type(d, K_WEAK);
	case 'D':
		return swd_wrap_type(d, K_DYNAMIC_SELF);
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
		return swd_wrap_type(d, K_EXIST_METATYPE);
	case 'e':
		return node(d, K_ERROR_TYPE);
	case 'F':
		return pop_type(d);
	case 'c': {
		struct swn *sup = pop_type(d);
		struct swn *pl = swd_pop_proto_list(d);
		if (!sup || !pl)
			return NULL;
		return with(d, K_PROTO_LIST_CLASS, pl, sup);
	}
	case 'l': {
		struct swn *pl = swd_pop_proto_list(d);
		return pl ? with(d, K_PROTO_LIST_ANYOBJ, pl, NULL) : NULL;
	}
	case 'P': {
		struct swn *reqs = swd_pop_list(d, K_TYPE_LIST, false, pop_requirement);
		if (!reqs)
			return NULL;
		struct swn *base = pop_type(d);
		if (!base)
			return NULL;
		return with(d, K_CONSTRAINED_EXIST, base, reqs);
	}
	case 'Y': {
		struct swn *name = swd_pop_decl_name(d);
		struct swn *ctx = swd_pop_context(d);
		struct swn *t = with(d, K_OTHER_NOMINAL, ctx, name);
		if (!name || !ctx || !add_subst(d, t))
			return NULL;
		return t;
	}
	case 'Z': {
		struct swn *list = swd_pop_type_list(d);
		struct swn *id = pop_kind(d, K_IDENT);
		struct swn *ctx = swd_pop_context(d);
		if (!list || !id || !ctx)
			return NULL;
		return with(d, K_UNKNOWN_CONTEXT, ctx, id);
	}
	case 'S': {
		int s = next(d);
		if (s == 'q')
			return swd_wrap_type(d, K_SUGAR_OPT);
		if (s == 'a')
			return swd_wrap_type(d, K_SUGAR_ARRAY);
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

struct swn *swd_y_op(struct swd *d)
{
	int c = next(d);
	switch (c) {
	case 'a':
		return swd_marker(d, M_ASYNC, NULL, NULL);
	case 'b':
		return swd_marker(d, M_SENDABLE, NULL, NULL);
	case 'T':
		return swd_marker(d, M_SENDING, NULL, NULL);
	case 'A':
		return swd_marker(d, M_ISOLATION, "isolated", NULL);
	case 'C':
		return swd_marker(d, M_ISOLATION, "nonsending", NULL);
	case 'c': {
		struct swn *t = pop_type(d);
		return t ? swd_marker(d, M_ISOLATION, NULL, t) : NULL;
	}
	case 'K': {
		struct swn *t = pop_type(d);
		return t ? swd_marker(d, M_TYPED_THROWS, NULL, t) : NULL;
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
		return swd_marker(d, M_DIFF, k, NULL);
	}
	case 'k':
		return swd_wrap_type(d, K_NODERIV);
	case 'i':
		return swd_wrap_type(d, K_ISOLATED);
	case 't':
		return swd_wrap_type(d, K_CONST);
	case 'u':
		return swd_wrap_type(d, K_SENDING);
	default:
		return NULL;
	}
}
