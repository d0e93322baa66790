/*
 * The printer of the Swift demangler: turns the node tree of either parser
 * into text, in the full style of `swift-demangle` or the simplified one of
 * `swift-demangle --simplified` (no module names, no types of variables,
 * function parameters as labels only, shortened thunk names).
 *
 * The tree is a DAG (substitutions share nodes), so the printer bounds its
 * recursion depth and stops at the first error: output past the ceiling of
 * the buffer or a node it does not expect.
 */
#include <errno.h>

#include "demangle-swift-print.h"

static const struct swn *kid(const struct swn *n, unsigned i)
{
	return n && i < n->nkids ? n->kids[i] : NULL;
}

static const struct swn *find_kid(const struct swn *n, enum swk k)
{
	for (unsigned i = 0; n && i < n->nkids; i++)
		if (n->kids[i]->kind == k)
			return n->kids[i];
	return NULL;
}

void swd_pr_join(struct pr *p, const struct swn *list, const char *sep)
{
	if (!list) {
		p->err = -EINVAL;
		return;
	}
	for (unsigned i = 0; i < list->nkids; i++) {
		if (i)
			puts_(p, sep);
		swd_pr_print(p, list->kids[i]);
	}
}

static void print_ident(struct pr *p, const struct swn *id)
{
	text(p, id);
}

static void param_name(struct pr *p, uint64_t depth, uint64_t idx)
{
	char b[40];
	size_t n = 0;
	do {
		b[n++] = (char)('A' + idx % 26);
		idx /= 26;
	} while (idx && n < 16);
	put(p, b, n);
	if (depth)
		putn(p, depth);
}

/* ------------------------------------------------------------------ */
/* contexts and entities */

static bool is_nominal(enum swk k)
{
	return k == K_CLASS || k == K_STRUCT || k == K_ENUM || k == K_PROTOCOL ||
	       k == K_TYPEALIAS || k == K_OTHER_NOMINAL;
}

void swd_pr_name(struct pr *p, const struct swn *name)
{
	switch (name->kind) {
	case K_IDENT:
		print_ident(p, name);
		break;
	case K_LOCAL_NAME:
		swd_pr_name(p, name->kids[0]);
		puts_(p, " #");
		putn(p, name->index + 1);
		break;
	case K_PRIVATE_NAME:
		if (p->simp) {
			if (name->nkids > 1)
				swd_pr_name(p, name->kids[1]);
			break;
		}
		puts_(p, "(");
		if (name->nkids > 1) {
			swd_pr_name(p, name->kids[1]);
			puts_(p, " ");
		}
		puts_(p, "in ");
		text(p, name->kids[0]);
		puts_(p, ")");
		break;
	case K_RELATED_NAME:
		puts_(p, "related decl '");
		text(p, name);
		puts_(p, "' for ");
		swd_pr_name(p, name->kids[0]);
		break;
	case K_PREFIX_OP:
		text(p, name);
		puts_(p, " prefix");
		break;
	case K_POSTFIX_OP:
		text(p, name);
		puts_(p, " postfix");
		break;
	case K_INFIX_OP:
		text(p, name);
		puts_(p, " infix");
		break;
	default:
		swd_pr_print(p, name);
		break;
	}
}

static bool is_deferred_context(const struct swn *c)
{
	switch (c->kind) {
	case K_MODULE:
	case K_EXTENSION:
	case K_ANON_CONTEXT:
	case K_UNKNOWN_CONTEXT:
		return false;
	case K_BOUND_GENERIC:
		return c->kids[0]->kind == K_FUNCTION || c->kids[0]->kind == K_CONSTRUCTOR;
	default:
		break;
	}
	if (is_nominal((enum swk)c->kind))
		return c->nkids > 1 && c->kids[1]->kind == K_LOCAL_NAME;
	return true;
}

/*
 * Prints a context followed by '.', or nothing when it cannot be a prefix
 * (functions, closures, local types); returns the context to print after
 * the entity as " in X".
 */
static const struct swn *print_prefix(struct pr *p, const struct swn *c)
{
	if (++p->depth > SWD_MAX_DEPTH) {
		p->err = -EINVAL;
		return NULL;
	}
	const struct swn *post = NULL;
	if (is_deferred_context(c)) {
		p->depth--;
		return c;
	}
	switch (c->kind) {
	case K_MODULE:
		if (!p->simp) {
			text(p, c);
			puts_(p, ".");
		}
		break;
	case K_EXTENSION:
		if (!p->simp) {
			puts_(p, "(extension in ");
			swd_pr_print(p, c->kids[0]);
			puts_(p, "):");
		}
		swd_pr_print(p, c->kids[1]);
		if (c->nkids > 2)
			swd_pr_sig(p, c->kids[2]);
		puts_(p, ".");
		break;
	case K_BOUND_GENERIC:
		swd_pr_print(p, c);
		puts_(p, ".");
		break;
	case K_ANON_CONTEXT:
		post = print_prefix(p, c->kids[0]);
		puts_(p, "(anonymous context ");
		text(p, c->kids[1]);
		puts_(p, ").");
		break;
	case K_UNKNOWN_CONTEXT:
		post = print_prefix(p, c->kids[0]);
		puts_(p, "(unknown context at ");
		text(p, c->kids[1]);
		puts_(p, ").");
		break;
	default:
		post = print_prefix(p, c->kids[0]);
		swd_pr_name(p, c->kids[1]);
		puts_(p, ".");
		break;
	}
	p->depth--;
	return post;
}

static void print_post(struct pr *p, const struct swn *post, const char *word)
{
	if (!post)
		return;
	puts_(p, word);
	swd_pr_print(p, post);
}

static void print_params(struct pr *p, const struct swn *params, const struct swn *labels)
{
	bool tuple = params->kind == K_TUPLE;
	unsigned n = tuple ? params->nkids : 1;
	if (labels && labels->nkids == 0)
		labels = NULL;
	puts_(p, "(");
	for (unsigned i = 0; i < n; i++) {
		const struct swn *el = tuple ? params->kids[i] : NULL;
		const struct swn *label = NULL;
		if (labels) {
			label = kid(labels, i);
			if (label && label->kind != K_IDENT)
				label = NULL;
		} else if (el && el->nkids > 1) {
			label = el->kids[0];
		}
		if (p->simp) {
			if (label)
				print_ident(p, label);
			else
				puts_(p, "_");
			puts_(p, ":");
			continue;
		}
		if (i)
			puts_(p, ", ");
		if (label) {
			print_ident(p, label);
			puts_(p, ": ");
		} else if (labels) {
			puts_(p, "_: ");
		}
		if (el) {
			swd_pr_print(p, el->kids[el->nkids - 1]);
			if (el->flags & SWF_VARIADIC)
				puts_(p, "...");
		} else {
			swd_pr_print(p, params);
		}
	}
	puts_(p, ")");
}

static void print_fn(struct pr *p, const struct swn *fn, const struct swn *labels)
{
	const struct swn *ct = find_kid(fn, K_CLANG_TYPE);
	if (ct && fn->tlen > 13) {
		/* "@convention(c" + ", mangledCType: \"...\")" */
		put(p, fn->text, fn->tlen - 1u);
		puts_(p, ", mangledCType: \"");
		text(p, ct);
		puts_(p, "\") ");
	} else if (fn->tlen) {
		text(p, fn);
		puts_(p, " ");
	}
	if (fn->flags & SWFN_ISO_ANY)
		puts_(p, "@isolated(any) ");
	if (fn->flags & SWFN_NONSENDING)
		puts_(p, "nonisolated(nonsending) ");
	const struct swn *ga = find_kid(fn, K_GLOBAL_ACTOR);
	if (ga) {
		puts_(p, "@");
		swd_pr_print(p, ga->kids[0]);
		puts_(p, " ");
	}
	const struct swn *diff = find_kid(fn, K_ATTR_TYPE);
	if (diff) {
		text(p, diff);
		puts_(p, " ");
	}
	if (fn->flags & SWFN_SENDABLE)
		puts_(p, "@Sendable ");
	print_params(p, fn->kids[0], labels);
	if (p->simp)
		return;
	if (fn->flags & SWFN_ASYNC)
		puts_(p, " async");
	if (fn->flags & SWFN_THROWS)
		puts_(p, " throws");
	const struct swn *tt = find_kid(fn, K_TYPED_THROWS);
	if (tt) {
		puts_(p, " throws(");
		swd_pr_print(p, tt->kids[0]);
		puts_(p, ")");
	}
	puts_(p, " -> ");
	if (fn->flags & SWFN_SENDING)
		puts_(p, "sending ");
	swd_pr_print(p, fn->kids[1]);
}

static bool is_function_type(const struct swn *t)
{
	while (t && t->kind == K_DEP_GENERIC_TYPE)
		t = t->kids[1];
	return t && t->kind == K_FUNC;
}

/* the type of an entity: function style "(a: T) -> U" or " : T" */
static void print_entity_type(struct pr *p, const struct swn *t, const struct swn *labels,
			      bool space, bool colon)
{
	if (!t)
		return;
	if (colon || !is_function_type(t)) {
		if (p->simp)
			return;
		puts_(p, " : ");
		swd_pr_print(p, t);
		return;
	}
	if (space)
		puts_(p, " ");
	while (t->kind == K_DEP_GENERIC_TYPE) {
		swd_pr_sig(p, t->kids[0]);
		t = t->kids[1];
	}
	print_fn(p, t, labels);
}

/* kids: context, [name], [labels], [type], [private name] */
static void entity_parts(const struct swn *e, const struct swn **name, const struct swn **labels,
			 const struct swn **type)
{
	*name = *labels = *type = NULL;
	for (unsigned i = 1; i < e->nkids; i++) {
		const struct swn *k = e->kids[i];
		if (k->kind == K_LABEL_LIST)
			*labels = k;
		else if (swd_is_type(k))
			*type = k;
		else if (!*name)
			*name = k;
	}
}

static bool name_has_space(const struct swn *name)
{
	return name && name->kind == K_LOCAL_NAME;
}

static void print_entity(struct pr *p, const struct swn *e, const char *extra)
{
	const struct swn *name, *labels, *type;
	entity_parts(e, &name, &labels, &type);
	const struct swn *post = print_prefix(p, e->kids[0]);
	size_t before = p->out->len;
	if (name)
		swd_pr_name(p, name);
	if (extra) {
		if (p->out->len != before)
			puts_(p, ".");
		puts_(p, extra);
	}
	print_entity_type(p, type, labels, name_has_space(name),
			  e->kind == K_VARIABLE || e->kind == K_GENERIC_PARAM_DECL);
	print_post(p, post, " in ");
}

static void print_accessor(struct pr *p, const struct swn *a)
{
	const struct swn *s = a->kids[0];
	const struct swn *name, *labels, *type;
	entity_parts(s, &name, &labels, &type);
	const struct swn *post = print_prefix(p, s->kids[0]);
	if (name && name->kind == K_LOCAL_NAME) { /* "getter of x #1 : T in f()" */
		text(p, a);
		puts_(p, " of ");
		swd_pr_name(p, name);
		if (type && !p->simp) {
			puts_(p, " : ");
			swd_pr_print(p, type);
		}
		print_post(p, post, " in ");
		return;
	}
	if (s->kind == K_SUBSCRIPT) {
		/* swift demangle leaves out a subscript's private name */
		puts_(p, "subscript");
	} else if (name) {
		swd_pr_name(p, name);
	}
	puts_(p, ".");
	text(p, a);
	if (type && !p->simp) {
		puts_(p, " : ");
		if (labels && is_function_type(type)) /* a subscript's labels */
			print_entity_type(p, type, labels, false, false);
		else
			swd_pr_print(p, type);
	}
	print_post(p, post, " in ");
}

static void print_closure(struct pr *p, const struct swn *c)
{
	puts_(p, c->kind == K_EXPL_CLOSURE ? "closure #" : "implicit closure #");
	putn(p, c->index + 1);
	if (!p->simp && c->nkids > 1) {
		puts_(p, " ");
		const struct swn *t = c->kids[1];
		if (is_function_type(t) && !(t->kind == K_FUNC && t->tlen))
			print_entity_type(p, t, NULL, false, false);
		else if (t->kind == K_FUNC) {
			puts_(p, ": ");
			swd_pr_print(p, t);
		} else
			swd_pr_print(p, t);
	}
	puts_(p, " in ");
	swd_pr_print(p, c->kids[0]);
}

static void print_macro_expansion(struct pr *p, const struct swn *m)
{
	const struct swn *ctx = m->kids[0];
	const struct swn *macro = m->kids[1];
	const struct swn *attached = (m->flags & SWF_EXTRA_KID) ? m->kids[2] : NULL;
	const struct swn *priv = (m->flags & SWF_READONLY) ? m->kids[m->nkids - 1] : NULL;
	if (attached) {
		text(p, m);
		puts_(p, " @");
		text(p, macro);
		puts_(p, " expansion #");
		putn(p, m->index + 1);
		puts_(p, " of ");
		swd_pr_name(p, attached);
	} else {
		text(p, m);
		puts_(p, " #");
		putn(p, m->index + 1);
		puts_(p, " of ");
		text(p, macro);
		if (priv && !p->simp) {
			puts_(p, "(in ");
			text(p, priv->kids[0]);
			puts_(p, ")");
		}
	}
	puts_(p, " in ");
	if (ctx->kind == K_MODULE) {
		text(p, ctx);
		return;
	}
	swd_pr_print(p, ctx);
}

/* ------------------------------------------------------------------ */
/* types */

static bool is_swift_nominal(const struct swn *t, enum swk k, const char *name)
{
	if (!t || t->kind != k || t->nkids < 2)
		return false;
	const struct swn *m = t->kids[0], *id = t->kids[1];
	return m->kind == K_MODULE && m->tlen == 5 && memcmp(m->text, "Swift", 5) == 0 &&
	       id->kind == K_IDENT && id->tlen == strlen(name) &&
	       memcmp(id->text, name, id->tlen) == 0;
}

static bool is_simple(const struct swn *t)
{
	switch (t->kind) {
	case K_FUNC:
	case K_IMPL_FUNC:
	case K_PROTO_LIST_CLASS:
	case K_CONSTRAINED_EXIST:
	case K_INOUT:
	case K_SHARED:
	case K_OWNED:
	case K_UNOWNED:
	case K_UNMANAGED:
	case K_WEAK:
	case K_OPAQUE_RETURN:
	case K_PACK_EXPANSION:
		return false;
	case K_PROTO_LIST:
		return t->nkids <= 1;
	case K_PROTO_LIST_ANYOBJ:
		return t->kids[0]->nkids == 0;
	default:
		return true;
	}
}

static void print_parens(struct pr *p, const struct swn *t)
{
	if (is_simple(t)) {
		swd_pr_print(p, t);
		return;
	}
	puts_(p, "(");
	swd_pr_print(p, t);
	puts_(p, ")");
}

/*
 * A local type's context when that context is a function bound to generic
 * arguments: the arguments cover the enclosing type's parameters and then the
 * function's own, which replace its generic signature.
 */
static void print_bound_function(struct pr *p, const struct swn *fn, const struct swn *args)
{
	const struct swn *name, *labels, *type;
	entity_parts(fn, &name, &labels, &type);
	uint64_t own = 0;
	const struct swn *t = type;
	if (t && t->kind == K_DEP_GENERIC_TYPE) {
		const struct swn *sig = t->kids[0];
		for (unsigned i = 0; i < sig->nkids && sig->kids[i]->kind == K_PARAM_COUNT; i++)
			own += sig->kids[i]->index;
		t = t->kids[1];
	}
	if (own > args->nkids)
		own = args->nkids;
	unsigned outer = args->nkids - (unsigned)own;
	const struct swn *ctx = fn->kids[0];
	const struct swn *post = NULL;
	if (outer && is_nominal((enum swk)ctx->kind)) {
		post = print_prefix(p, ctx->kids[0]);
		swd_pr_name(p, ctx->kids[1]);
		puts_(p, "<");
		for (unsigned i = 0; i < outer; i++) {
			if (i)
				puts_(p, ", ");
			swd_pr_print(p, args->kids[i]);
		}
		puts_(p, ">.");
	} else {
		post = print_prefix(p, ctx);
	}
	if (name)
		swd_pr_name(p, name);
	else if (!own)
		puts_(p, "init");
	if (own) {
		puts_(p, "<");
		for (unsigned i = outer; i < args->nkids; i++) {
			if (i > outer)
				puts_(p, ", ");
			swd_pr_print(p, args->kids[i]);
		}
		puts_(p, ">");
	}
	if (t && t->kind == K_FUNC)
		print_fn(p, t, labels);
	print_post(p, post, " in ");
}

static void print_bound(struct pr *p, const struct swn *b)
{
	const struct swn *nom = b->kids[0];
	const struct swn *args = b->kids[1];
	if (!p->nested && args->nkids == 1 && is_swift_nominal(nom, K_ENUM, "Optional")) {
		print_parens(p, args->kids[0]);
		puts_(p, "?");
		return;
	}
	if (!p->nested && args->nkids == 1 &&
	    is_swift_nominal(nom, K_ENUM, "ImplicitlyUnwrappedOptional")) {
		print_parens(p, args->kids[0]);
		puts_(p, "!");
		return;
	}
	if (!p->nested && args->nkids == 1 && is_swift_nominal(nom, K_STRUCT, "Array")) {
		puts_(p, "[");
		swd_pr_print(p, args->kids[0]);
		puts_(p, "]");
		return;
	}
	if (!p->nested && args->nkids == 2 && is_swift_nominal(nom, K_STRUCT, "Dictionary")) {
		puts_(p, "[");
		swd_pr_print(p, args->kids[0]);
		puts_(p, " : ");
		swd_pr_print(p, args->kids[1]);
		puts_(p, "]");
		return;
	}
	if (nom->kind == K_PROTOCOL && args->nkids == 1) {
		swd_pr_print(p, args->kids[0]);
		puts_(p, " as ");
		swd_pr_print(p, nom);
		return;
	}
	if (nom->kind == K_FUNCTION || nom->kind == K_CONSTRUCTOR) {
		print_bound_function(p, nom, args);
		return;
	}
	swd_pr_print(p, nom);
	puts_(p, "<");
	swd_pr_join(p, args, ", ");
	puts_(p, ">");
}

static void print_nominal(struct pr *p, const struct swn *n)
{
	const struct swn *post = print_prefix(p, n->kids[0]);
	swd_pr_name(p, n->kids[1]);
	print_post(p, post, " in ");
}

void swd_pr_sig(struct pr *p, const struct swn *sig)
{
	if (!sig) {
		p->err = -EINVAL;
		return;
	}
	unsigned depth = 0;
	puts_(p, "<");
	for (; depth < sig->nkids && sig->kids[depth]->kind == K_PARAM_COUNT; depth++) {
		if (depth)
			puts_(p, "><");
		uint64_t count = sig->kids[depth]->index;
		for (uint64_t i = 0; i < count; i++) {
			if (i)
				puts_(p, ", ");
			if (i == 128) {
				puts_(p, "...");
				break;
			}
			/* pack and value markers; swift demangle marks a pack
			 * only when it is the first parameter, "<each A, B>" */
			for (unsigned m = depth; m < sig->nkids; m++) {
				const struct swn *k = sig->kids[m];
				if (k->kind == K_PACK_MARK && (i || depth))
					continue;
				if ((k->kind == K_PACK_MARK || k->kind == K_VALUE_MARK) &&
				    k->kids[0]->index == i && k->kids[0]->index2 == depth) {
					puts_(p, k->kind == K_PACK_MARK ? "each " : "let ");
				}
			}
			param_name(p, depth, i);
			for (unsigned m = depth; m < sig->nkids; m++) {
				const struct swn *k = sig->kids[m];
				if (k->kind == K_VALUE_MARK && k->kids[0]->index == i &&
				    k->kids[0]->index2 == depth && k->nkids > 1) {
					puts_(p, ": ");
					swd_pr_print(p, k->kids[1]);
				}
			}
			if (p->err)
				return;
		}
	}
	bool any = false;
	for (unsigned i = depth; i < sig->nkids; i++) {
		const struct swn *r = sig->kids[i];
		if (r->kind == K_PACK_MARK || r->kind == K_VALUE_MARK)
			continue;
		if (p->simp)
			break;
		puts_(p, any ? ", " : " where ");
		any = true;
		swd_pr_print(p, r);
	}
	puts_(p, ">");
}

/* The protocols an inverse requirement (~Copyable) names, by their bit. */
static const char *const invertible[] = {"Copyable", "Escapable"};

static void print_requirement(struct pr *p, const struct swn *r)
{
	swd_pr_print(p, r->kids[0]);
	switch (r->kind) {
	case K_REQ_CONF:
	case K_REQ_BASE:
		puts_(p, ": ");
		swd_pr_print(p, r->kids[1]);
		break;
	case K_REQ_SAME:
		puts_(p, " == ");
		swd_pr_print(p, r->kids[1]);
		break;
	case K_REQ_LAYOUT:
		puts_(p, ": ");
		text(p, r);
		if (r->flags & SWF_HAS_INDEX) {
			puts_(p, "(");
			putn(p, r->index);
			if (r->flags & SWF_HAS_ALIGNMENT) {
				puts_(p, ", ");
				putn(p, r->index2);
			}
			puts_(p, ")");
		}
		break;
	case K_REQ_INVERSE:
		puts_(p, ": ~");
		if (!p->simp)
			puts_(p, "Swift.");
		if (r->index < sizeof(invertible) / sizeof(invertible[0]))
			puts_(p, invertible[r->index]);
		else {
			puts_(p, "<bit ");
			putn(p, r->index);
			puts_(p, ">");
		}
		break;
	case K_REQ_SHAPE:
		puts_(p, ".shape == ");
		swd_pr_print(p, r->kids[1]);
		puts_(p, ".shape");
		break;
	default:
		break;
	}
}

static void print_impl_param(struct pr *p, const struct swn *n)
{
	if (n->kind == K_IMPL_YIELD)
		puts_(p, "@yields ");
	if (n->kind == K_IMPL_ERROR)
		puts_(p, "@error ");
	text(p, n);
	puts_(p, " ");
	if (n->flags & 1)
		puts_(p, "@noDerivative ");
	/* swift demangle shows one of these, and none when there are several */
	if ((n->flags & 14) == 2)
		puts_(p, "sending ");
	if ((n->flags & 14) == 4)
		puts_(p, "isolated ");
	if ((n->flags & 14) == 8)
		puts_(p, "sil_implicit_leading_param ");
	if (n->nkids)
		swd_pr_print(p, n->kids[0]);
}

static void print_impl_fn(struct pr *p, const struct swn *fn)
{
	enum { ATTRS, INPUTS, RESULTS } st = ATTRS;
	const struct swn *pat = NULL, *inv = NULL;
	for (unsigned i = 0; i < fn->nkids && !p->err; i++) {
		const struct swn *k = fn->kids[i];
		switch (k->kind) {
		case K_IMPL_ATTR:
			text(p, k);
			puts_(p, " ");
			break;
		case K_SIG:
			swd_pr_sig(p, k);
			puts_(p, " ");
			break;
		case K_IMPL_SUBS:
			if (k->nkids > 1 && k->kids[0]->kind == K_SIG)
				pat = k;
			else
				inv = k;
			break;
		case K_IMPL_PARAM:
			if (st == INPUTS) {
				puts_(p, ", ");
			} else {
				if (pat) {
					puts_(p, "@substituted ");
					swd_pr_sig(p, pat->kids[0]);
					puts_(p, " ");
				}
				puts_(p, "(");
				st = INPUTS;
			}
			print_impl_param(p, k);
			break;
		default: /* results, yields, error */
			if (st == RESULTS) {
				puts_(p, ", ");
			} else {
				if (st == ATTRS) {
					if (pat) {
						puts_(p, "@substituted ");
						swd_pr_sig(p, pat->kids[0]);
						puts_(p, " ");
					}
					puts_(p, "(");
				}
				puts_(p, ") -> ");
				if (fn->flags & SWFN_SENDING)
					puts_(p, "sending ");
				puts_(p, "(");
				st = RESULTS;
			}
			print_impl_param(p, k);
			break;
		}
	}
	if (st == ATTRS) {
		if (pat) {
			puts_(p, "@substituted ");
			swd_pr_sig(p, pat->kids[0]);
			puts_(p, " ");
		}
		puts_(p, "(");
	}
	if (st != RESULTS) {
		puts_(p, ") -> ");
		if (fn->flags & SWFN_SENDING)
			puts_(p, "sending ");
		puts_(p, "(");
	}
	puts_(p, ")");
	if (pat) {
		puts_(p, " for <");
		const struct swn *list = pat->kids[1];
		for (unsigned i = 0; i < list->nkids; i++)
			swd_pr_print(p, list->kids[i]);
		puts_(p, ">");
	}
	if (inv) {
		puts_(p, " for <");
		const struct swn *list = inv->kids[0];
		for (unsigned i = 0; i < list->nkids; i++)
			swd_pr_print(p, list->kids[i]);
		puts_(p, ">");
	}
}

static void print_sil_box(struct pr *p, const struct swn *layout)
{
	if (!layout) {
		p->err = -EINVAL;
		return;
	}
	puts_(p, "{");
	for (unsigned i = 0; i < layout->nkids; i++) {
		const struct swn *f = layout->kids[i];
		puts_(p, i ? ", " : " ");
		puts_(p, (f->flags & SWF_MUTABLE) ? "var " : "let ");
		swd_pr_print(p, f->kids[0]);
	}
	puts_(p, " }");
}

void swd_pr_subset(struct pr *p, uint64_t bits)
{
	puts_(p, "{");
	bool first = true;
	for (unsigned i = 0; i < 64; i++) {
		if (!(bits & ((uint64_t)1 << i)))
			continue;
		if (!first)
			puts_(p, ", ");
		first = false;
		putn(p, i);
	}
	puts_(p, "}");
}

/* ------------------------------------------------------------------ */
/* specializations */

static void print_kids(struct pr *p, const struct swn *n)
{
	for (unsigned i = 0; i < n->nkids; i++)
		swd_pr_print(p, n->kids[i]);
}

bool swd_pr_around(struct pr *p, const struct swn *n, const struct pr_around *table)
{
	const struct pr_around *a = &table[n->kind];
	if (!a->pre)
		return false;
	puts_(p, a->pre);
	swd_pr_print(p, n->kids[0]);
	if (a->mid) {
		puts_(p, a->mid);
		swd_pr_print(p, n->kids[1]);
	}
	if (a->post)
		puts_(p, a->post);
	return true;
}

/* The word an entity of these kinds prints in place of a name (or none). */
static const char *const entity_words[K_COUNT] = {
    [K_SUBSCRIPT] = "subscript",
    [K_CONSTRUCTOR] = "init",
    [K_DESTRUCTOR] = "deinit",
    [K_DEALLOCATOR] = "__deallocating_deinit",
    [K_ISO_DEALLOCATOR] = "__isolated_deallocating_deinit",
    [K_IVAR_INIT] = "__ivar_initializer",
    [K_IVAR_DESTROYER] = "__ivar_destroyer",
};

static const struct pr_around arounds[K_COUNT] = {
    [K_BUILTIN_FIXED_ARRAY] = {"Builtin.FixedArray<", ", ", ">"},
    [K_INOUT] = {"inout ", NULL, NULL},
    [K_SHARED] = {"__shared ", NULL, NULL},
    [K_OWNED] = {"__owned ", NULL, NULL},
    [K_NODERIV] = {"@noDerivative ", NULL, NULL},
    [K_ISOLATED] = {"isolated ", NULL, NULL},
    [K_CONST] = {"_const ", NULL, NULL},
    [K_SENDING] = {"sending ", NULL, NULL},
    [K_UNOWNED] = {"unowned ", NULL, NULL},
    [K_UNMANAGED] = {"unowned(unsafe) ", NULL, NULL},
    [K_WEAK] = {"weak ", NULL, NULL},
    [K_OPAQUE_DECL] = {"<<opaque return type of ", NULL, ">>"},
    [K_PACK_EXPANSION] = {"repeat ", NULL, NULL},
    [K_PACK_ELEMENT] = {"each ", NULL, NULL},
    [K_SUGAR_ARRAY] = {"[", NULL, "]"},
    [K_SUGAR_DICT] = {"[", " : ", "]"},
    [K_SUGAR_INLINE_ARRAY] = {"[", " of ", "]"},
    [K_INITIALIZER] = {"variable initialization expression of ", NULL, NULL},
    [K_PW_BACKING_INIT] = {"property wrapper backing initializer of ", NULL, NULL},
    [K_PW_INIT_PROJECTED] = {"property wrapper init from projected value of ", NULL, NULL},
    [K_FIELD_INIT_ACCESSOR] = {"property wrapped field init accessor of ", NULL, NULL},
    [K_RUNTIME_ATTR_GEN] = {"runtime attribute generator of ", NULL, NULL},
    [K_STATIC] = {"static ", NULL, NULL},
};

/* Names, nominal types and the contexts they live in. */
static bool print_name_node(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_GLOBAL:
	case K_TYPE_LIST:
		print_kids(p, n);
		break;
	case K_MODULE:
		if (!p->simp) /* simplified names have no modules, even alone */
			text(p, n);
		break;
	case K_IDENT:
	case K_BUILTIN:
		text(p, n);
		break;
	case K_LOCAL_NAME:
	case K_PRIVATE_NAME:
	case K_RELATED_NAME:
	case K_PREFIX_OP:
	case K_POSTFIX_OP:
	case K_INFIX_OP:
		swd_pr_name(p, n);
		break;
	case K_CLASS:
	case K_STRUCT:
	case K_ENUM:
	case K_PROTOCOL:
	case K_TYPEALIAS:
	case K_OTHER_NOMINAL:
		print_nominal(p, n);
		break;
	case K_EXTENSION:
		if (!p->simp) {
			puts_(p, "(extension in ");
			swd_pr_print(p, n->kids[0]);
			puts_(p, "):");
		}
		swd_pr_print(p, n->kids[1]);
		if (n->nkids > 2)
			swd_pr_sig(p, n->kids[2]);
		break;
	case K_ANON_CONTEXT:
	case K_UNKNOWN_CONTEXT: {
		const struct swn *post = print_prefix(p, n);
		if (p->out->len && p->out->data[p->out->len - 1] == '.')
			p->out->len--;
		print_post(p, post, " in ");
		break;
	}
	default:
		return false;
	}
	return true;
}

static void print_metatype(struct pr *p, const struct swn *n)
{
	if (n->tlen) {
		text(p, n);
		puts_(p, " ");
	}
	const struct swn *t = n->kids[0];
	if (n->kind == K_EXIST_METATYPE) /* swift demangle: "P & Q.Type" */
		swd_pr_print(p, t);
	else
		print_parens(p, t);
	bool exist = t->kind == K_EXIST_METATYPE || t->kind == K_PROTO_LIST ||
		     t->kind == K_PROTO_LIST_ANYOBJ || t->kind == K_PROTO_LIST_CLASS;
	puts_(p, n->kind == K_METATYPE && exist ? ".Protocol" : ".Type");
}

/* Protocol compositions and constrained existentials: any P & Q, any P<T>. */
static bool print_existential(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_PROTO_LIST:
		if (n->nkids == 0)
			puts_(p, "Any");
		else
			swd_pr_join(p, n, " & ");
		break;
	case K_PROTO_LIST_CLASS:
		swd_pr_print(p, n->kids[1]);
		if (n->kids[0]->nkids) {
			puts_(p, " & ");
			swd_pr_join(p, n->kids[0], " & ");
		}
		break;
	case K_PROTO_LIST_ANYOBJ:
		if (n->kids[0]->nkids) {
			swd_pr_join(p, n->kids[0], " & ");
			puts_(p, " & ");
		}
		puts_(p, "Swift.AnyObject");
		break;
	case K_CONSTRAINED_EXIST:
		puts_(p, "any ");
		swd_pr_print(p, n->kids[0]);
		puts_(p, "<");
		swd_pr_join(p, n->kids[1], ", ");
		puts_(p, ">");
		break;
	default:
		return false;
	}
	return true;
}

/* Structural types: tuples, functions, metatypes, boxes, packs, sugar. */
static bool print_type(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_INTEGER:
		if (n->flags & SWF_NEGATIVE)
			puts_(p, "-");
		putn(p, n->index);
		break;
	case K_BOUND_GENERIC:
		print_bound(p, n);
		break;
	case K_TUPLE:
		puts_(p, "(");
		swd_pr_join(p, n, ", ");
		puts_(p, ")");
		break;
	case K_TUPLE_ELEM:
		if (n->nkids > 1) {
			print_ident(p, n->kids[0]);
			puts_(p, ": ");
		}
		swd_pr_print(p, n->kids[n->nkids - 1]);
		if (n->flags & SWF_VARIADIC)
			puts_(p, "...");
		break;
	case K_FUNC:
		print_fn(p, n, NULL);
		break;
	case K_IMPL_FUNC:
		print_impl_fn(p, n);
		break;
	case K_METATYPE:
	case K_EXIST_METATYPE:
		print_metatype(p, n);
		break;
	case K_PACK:
		if (n->tlen)
			text(p, n);
		puts_(p, "Pack{");
		swd_pr_join(p, n, ", ");
		puts_(p, "}");
		break;
	case K_SIL_BOX:
		print_sil_box(p, n);
		break;
	case K_SIL_BOX_GENERIC:
		swd_pr_sig(p, n->kids[1]);
		puts_(p, " ");
		print_sil_box(p, n->kids[0]);
		puts_(p, " <");
		swd_pr_join(p, n->kids[2], ", ");
		puts_(p, ">");
		break;
	case K_SUGAR_OPT:
		print_parens(p, n->kids[0]);
		puts_(p, "?");
		break;
	case K_DYNAMIC_SELF:
		puts_(p, "Self");
		break;
	case K_ERROR_TYPE:
		puts_(p, "<ERROR TYPE>");
		break;
	case K_TYPE_MANGLING:
		swd_pr_print(p, n->kids[0]);
		break;
	default:
		return print_existential(p, n);
	}
	return true;
}

/* Generic parameters, their members, signatures and opaque types. */
static bool print_generic(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_PARAM_TYPE:
		if (n->tlen)
			text(p, n);
		else
			param_name(p, n->index2, n->index);
		break;
	case K_DEP_MEMBER:
		swd_pr_print(p, n->kids[0]);
		puts_(p, ".");
		swd_pr_print(p, n->kids[1]);
		break;
	case K_ASSOC_REF:
		if (n->nkids > 1) {
			swd_pr_print(p, n->kids[1]);
			puts_(p, ".");
		}
		text(p, n->kids[0]);
		break;
	case K_DEP_GENERIC_TYPE:
		swd_pr_sig(p, n->kids[0]);
		if (!is_function_type(n->kids[1]))
			puts_(p, " ");
		swd_pr_print(p, n->kids[1]);
		break;
	case K_SIG:
		swd_pr_sig(p, n);
		break;
	case K_REQ_CONF:
	case K_REQ_SAME:
	case K_REQ_BASE:
	case K_REQ_LAYOUT:
	case K_REQ_INVERSE:
	case K_REQ_SHAPE:
		print_requirement(p, n);
		break;
	case K_OPAQUE_RETURN:
		puts_(p, "some");
		break;
	case K_OPAQUE_TYPE:
		swd_pr_print(p, n->kids[0]);
		puts_(p, ".");
		putn(p, n->index);
		break;
	default:
		return false;
	}
	return true;
}

/* Declarations: functions, variables, initializers, closures, macros. */
static bool print_decl(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_FUNCTION:
	case K_VARIABLE:
	case K_GENERIC_PARAM_DECL:
	case K_ENUM_ELEMENT:
	case K_MACRO:
	case K_SUBSCRIPT:
	case K_CONSTRUCTOR:
	case K_DESTRUCTOR:
	case K_ISO_DEALLOCATOR:
	case K_IVAR_INIT:
	case K_IVAR_DESTROYER:
		print_entity(p, n, entity_words[n->kind]);
		break;
	case K_ALLOCATOR:
		print_entity(p, n, n->kids[0]->kind == K_CLASS ? "__allocating_init" : "init");
		break;
	case K_DEALLOCATOR: /* a noncopyable struct's or enum's is its deinit */
		print_entity(p, n, n->kids[0]->kind == K_CLASS ? entity_words[n->kind] : "deinit");
		break;
	case K_EXPL_CLOSURE:
	case K_IMPL_CLOSURE:
		print_closure(p, n);
		break;
	case K_DEFAULT_ARG:
		puts_(p, "default argument ");
		putn(p, n->index);
		puts_(p, " of ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_MACRO_EXPANSION:
		print_macro_expansion(p, n);
		break;
	case K_MACRO_LOC:
		puts_(p, "module ");
		text(p, n->kids[0]);
		puts_(p, " file ");
		text(p, n->kids[1]);
		puts_(p, " line ");
		putn(p, n->index);
		puts_(p, " column ");
		putn(p, n->index2);
		break;
	case K_ACCESSOR:
		print_accessor(p, n);
		break;
	default:
		return false;
	}
	return true;
}

static void print_inner(struct pr *p, const struct swn *n)
{
	if (!swd_pr_around(p, n, arounds) && !print_name_node(p, n) && !print_type(p, n) &&
	    !print_generic(p, n) && !print_decl(p, n) && !swd_print_global(p, n))
		p->err = -EINVAL;
}

void swd_pr_print(struct pr *p, const struct swn *n)
{
	if (p->err)
		return;
	if (!n || ++p->depth > SWD_MAX_DEPTH) {
		p->err = -EINVAL;
		return;
	}
	print_inner(p, n);
	p->depth--;
}

int swd_print(const struct swn *root, bool simplified, bool nested, struct sw_buf *out)
{
	struct pr p = {.out = out, .simp = simplified, .nested = nested};
	size_t start = out->len;
	/* shared subtrees can make the text exponential in the name: cap it */
	size_t max = out->max;
	bool capped = max > start + SWD_MAX_OUTPUT;
	if (capped)
		out->max = start + SWD_MAX_OUTPUT;
	swd_pr_print(&p, root);
	out->max = max;
	if (p.err)
		out->len = start;
	/* past our own cap the name is garbage, not the caller's problem */
	if (p.err == -E2BIG && capped)
		return -EINVAL;
	return p.err;
}
