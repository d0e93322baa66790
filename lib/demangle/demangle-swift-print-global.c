/*
 * The printer of the Swift demangler, for global-level nodes: thunks, partial
 * applies, specializations, autodiff functions, witness tables, conformances
 * and the runtime records.  See demangle-swift-print.c.
 */
#include <errno.h>

#include "demangle-swift-print.h"

static void print_spec_arg(struct pr *p, const struct swn *a)
{
	const struct swn *name = a->nkids ? a->kids[0] : NULL;
	const struct swn *types = a->nkids > 1 ? a->kids[1] : NULL;
	switch (a->index) {
	case SA_CLOSURE:
		if (!name)
			return;
		puts_(p, "[Closure Propagated : ");
		/* swift demangle shows a current mangling's closure as mangled */
		if (!a->index2 ||
		    swd_demangle_text(name->text, name->tlen, p->simp, p->out, 1) <= 0)
			text(p, name);
		puts_(p, ", Argument Types : [");
		if (types) /* swift demangle puts nothing between the types */
			swd_pr_join(p, types, "");
		puts_(p, "]");
		break;
	case SA_CONST_FN:
	case SA_CONST_GLOBAL:
		if (!name)
			return;
		puts_(p, a->index == SA_CONST_FN ? "[Constant Propagated Function : "
						 : "[Constant Propagated Global : ");
		if (swd_demangle_text(name->text, name->tlen, p->simp, p->out, 1) <= 0)
			text(p, name);
		puts_(p, "]");
		break;
	case SA_CONST_INT:
	case SA_CONST_FLOAT:
		puts_(p, a->index == SA_CONST_INT ? "[Constant Propagated Integer : "
						  : "[Constant Propagated Float : ");
		text(p, a);
		puts_(p, "]");
		break;
	case SA_CONST_STRING:
		if (!name)
			return;
		puts_(p, "[Constant Propagated String : ");
		text(p, a);
		puts_(p, "'");
		text(p, name);
		puts_(p, "']");
		break;
	case SA_CONST_KEYPATH:
		if (!name)
			return;
		puts_(p, "[Constant Propagated KeyPath : ");
		text(p, name);
		puts_(p, "<");
		if (types)
			swd_pr_join(p, types, ",");
		puts_(p, ">]");
		break;
	case SA_OPTIONS: {
		static const char *const names[] = {
		    "Existential To Protocol Constrained Generic",
		    "Dead",
		    "Owned To Guaranteed",
		    "Guaranteed To Owned",
		    "Exploded",
		    "Value Promoted from Box",
		    "Stack Promoted from Box",
		    "InOut Converted to Out",
		};
		bool first = true;
		for (unsigned i = 0; i < 8; i++) {
			if (!(a->index2 & (1u << i)))
				continue;
			if (!first)
				puts_(p, " and ");
			first = false;
			puts_(p, names[i]);
		}
		break;
	}
	case SA_CONST_STRUCT: /* its type, then its fields' constants */
		if (!a->nkids)
			return;
		puts_(p, "[Constant Propagated Struct : ");
		swd_pr_print(p, a->kids[a->nkids - 1]);
		puts_(p, "]");
		for (unsigned i = 0; i + 1 < a->nkids; i++)
			print_spec_arg(p, a->kids[i]);
		break;
	case SA_SAME_CLOSURE:
		puts_(p, "[Closure Propagated : same as Arg[");
		putn(p, a->index2);
		puts_(p, "]]");
		break;
	default:
		break;
	}
}

static void print_spec(struct pr *p, const struct swn *s)
{
	const struct swn *params = s->kids[0];
	const struct swn *global = s->nkids > 1 ? s->kids[1] : NULL;
	if (p->simp) {
		/* one "specialized" for a chain of specializations */
		while (global && global->kind == K_SPEC)
			global = global->nkids > 1 ? global->kids[1] : NULL;
		puts_(p, "specialized ");
		if (global)
			swd_pr_print(p, global);
		return;
	}
	text(p, s);
	puts_(p, " <");
	bool first = true;
	if (s->flags & SWF_READONLY) {
		puts_(p, "serialized");
		first = false;
	}
	if (params->kind == K_SPEC_FUNCSIG) {
		unsigned argno = 0;
		for (unsigned i = 0; i < params->nkids; i++) {
			const struct swn *a = params->kids[i];
			bool ret = a->flags & SWF_READONLY;
			if (a->index == SA_NONE) {
				if (!ret)
					argno++;
				continue;
			}
			if (!first)
				puts_(p, ", ");
			first = false;
			if (ret) {
				puts_(p, "Return = ");
			} else {
				puts_(p, "Arg[");
				putn(p, argno++);
				puts_(p, "] = ");
			}
			print_spec_arg(p, a);
		}
	} else {
		for (unsigned i = 0; i < params->nkids; i++) {
			if (!first)
				puts_(p, ", ");
			first = false;
			if (s->index == 1)
				puts_(p, "Signature = ");
			swd_pr_print(p, params->kids[i]);
		}
	}
	puts_(p, ">");
	if (global) {
		puts_(p, " of ");
		swd_pr_print(p, global);
	}
}

static void print_autodiff(struct pr *p, const struct swn *a)
{
	if (a->flags & SWF_OTHER_FORM)
		puts_(p, "vtable thunk for ");
	text(p, a);
	if (!(a->flags & SWF_READONLY))
		puts_(p, " of ");
	swd_pr_print(p, a->kids[0]);
	if (p->simp)
		return;
	puts_(p, " with respect to parameters ");
	swd_pr_subset(p, a->index);
	puts_(p, " and results ");
	swd_pr_subset(p, a->index2);
	if (a->nkids > 1) {
		puts_(p, " with ");
		swd_pr_sig(p, a->kids[1]);
	}
}

static void print_conf_ref(struct pr *p, const struct swn *r)
{
	puts_(p, "protocol conformance ref ");
	if (r->flags == SWF_CONF_TYPE_MODULE)
		puts_(p, "(type's module) ");
	else if (r->flags == SWF_CONF_PROTOCOL_MODULE)
		puts_(p, "(protocol's module) ");
	else if (r->nkids > 1) {
		puts_(p, "(retroactive module ");
		swd_pr_print(p, r->kids[1]);
		puts_(p, ") ");
	}
	swd_pr_print(p, r->kids[0]);
}

static void print_conf_list(struct pr *p, const struct swn *l)
{
	puts_(p, "(");
	swd_pr_join(p, l, ", ");
	puts_(p, ")");
}

/* ------------------------------------------------------------------ */

static const struct pr_around arounds[K_COUNT] = {
    [K_BASE_CONF_DESC] = {"base conformance descriptor for ", ": ", NULL},
    [K_DEP_CONF_ROOT] = {"dependent protocol conformance root ", " : ", NULL},
    [K_DEP_CONF_INHERITED] = {"dependent protocol conformance inherited ", " : ", NULL},
    [K_DEP_CONF_ASSOC] = {"dependent protocol conformance associated ", " : ", NULL},
    [K_DEP_CONF_OPAQUE] = {"dependent protocol conformance opaque ", NULL, NULL},
};

/* Outlined copies, name decorations and specialization parameters. */
static bool print_decoration(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_OUTLINED_VAR:
		puts_(p, (n->flags & SWF_READONLY) ? "outlined read-only object #"
						   : "outlined variable #");
		putn(p, n->index);
		puts_(p, " of ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_OUTLINED_BRIDGE:
		puts_(p, "outlined bridged method (");
		text(p, n);
		puts_(p, ") of ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_PREFIX:
		if (!(p->simp && n->index == 1))
			text(p, n);
		swd_pr_print(p, n->kids[0]);
		break;
	case K_SUFFIX:
		if (p->simp)
			break;
		puts_(p, " with unmangled suffix \"");
		text(p, n);
		puts_(p, "\"");
		break;
	case K_SPEC_PARAM:
		swd_pr_print(p, n->kids[0]);
		puts_(p, " with ");
		for (unsigned i = 1; i < n->nkids; i++) {
			if (i > 1)
				puts_(p, " and ");
			swd_pr_print(p, n->kids[i]);
		}
		break;
	case K_SPEC:
		print_spec(p, n);
		break;
	case K_ONE_TIME_INIT:
		text(p, n);
		swd_pr_join(p, n->kids[1], ", ");
		break;
	default:
		return false;
	}
	return true;
}

static void print_special(struct pr *p, const struct swn *n)
{
	if (!(n->flags & SWF_OTHER_FORM)) {
		if (p->simp && n->index == 1) { /* simplified, the operand alone */
			swd_pr_print(p, n->kids[0]);
			return;
		}
		text(p, n);
		puts_(p, " ");
		swd_pr_print(p, n->kids[0]);
		if (n->nkids > 1) /* an outlined operation's generic signature */
			swd_pr_sig(p, n->kids[1]);
		return;
	}
	/* a partial apply forwarder, "for" only with an operand */
	puts_(p, p->simp ? "partial apply" : n->text);
	if (p->simp && n->tlen > sizeof("partial apply forwarder") - 1) /* ObjC */
		puts_(p, " ObjC");
	if (n->nkids) {
		puts_(p, " for ");
		swd_pr_print(p, n->kids[0]);
	}
}

static void print_reabstract(struct pr *p, const struct swn *n)
{
	/* a thunk with a self type is shown whole, even simplified */
	if (p->simp && !(n->flags & SWF_EXTRA_KID)) {
		puts_(p, "thunk for ");
		swd_pr_print(p, n->kids[0]);
		return;
	}
	text(p, n);
	if (n->nkids > 2 && n->kids[2]->kind == K_SIG) {
		puts_(p, " ");
		swd_pr_sig(p, n->kids[2]);
	}
	puts_(p, " from ");
	swd_pr_print(p, n->kids[0]);
	puts_(p, " to ");
	swd_pr_print(p, n->kids[1]);
	if (n->flags & SWF_EXTRA_KID) {
		puts_(p, " self ");
		swd_pr_print(p, n->kids[n->nkids - 1]);
	}
}

/* Thunks and partial applies: code that forwards to other code. */
static bool print_thunk(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_SPECIAL:
		print_special(p, n);
		break;
	case K_ASYNC_PARTIAL:
		if (!p->simp) {
			puts_(p, "(");
			putn(p, n->index);
			puts_(p, (n->flags & SWF_OTHER_FORM)
				     ? ") await resume partial function for "
				     : ") suspend resume partial function for ");
		}
		swd_pr_print(p, n->kids[0]);
		break;
	case K_WITNESS_THUNK:
		puts_(p, "protocol witness for ");
		swd_pr_print(p, n->kids[1]);
		puts_(p, " in conformance ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_REABSTRACT:
		print_reabstract(p, n);
		break;
	case K_VTABLE_THUNK:
		puts_(p, "vtable thunk for ");
		swd_pr_print(p, n->kids[1]);
		puts_(p, " dispatching to ");
		swd_pr_print(p, n->kids[0]);
		break;
	default:
		return false;
	}
	return true;
}

static void print_autodiff_subset(struct pr *p, const struct swn *n)
{
	bool g = n->nkids > 2;
	puts_(p, "autodiff subset parameters thunk for ");
	text(p, n);
	puts_(p, " from ");
	swd_pr_print(p, g ? n->kids[1] : n->kids[0]);
	puts_(p, " with respect to parameters ");
	swd_pr_subset(p, n->index);
	puts_(p, " and results ");
	swd_pr_subset(p, n->index2);
	puts_(p, " to parameters ");
	swd_pr_subset(p, n->kids[n->nkids - 1]->index);
	if (g) {
		puts_(p, " of type ");
		swd_pr_print(p, n->kids[0]);
	}
}

/* Automatic differentiation: derivatives and their thunks. */
static bool print_autodiff_node(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_AUTODIFF_REORDER:
		puts_(p, "autodiff self-reordering reabstraction thunk for ");
		if (p->simp) {
			swd_pr_print(p, n->kids[0]);
			break;
		}
		text(p, n);
		if (n->nkids > 2) { /* swift demangle puts two spaces after it */
			swd_pr_sig(p, n->kids[2]);
			puts_(p, " ");
		}
		puts_(p, " from ");
		swd_pr_print(p, n->kids[0]);
		puts_(p, " to ");
		swd_pr_print(p, n->kids[1]);
		break;
	case K_AUTODIFF:
		print_autodiff(p, n);
		break;
	case K_AUTODIFF_SUBSET:
		print_autodiff_subset(p, n);
		break;
	default:
		return false;
	}
	return true;
}

/* Key path getters, setters, equality and hashing. */
static bool print_keypath(struct pr *p, const struct swn *n)
{
	if (n->kind != K_KEYPATH && n->kind != K_KEYPATH_EQ)
		return false;
	text(p, n);
	puts_(p, " ");
	if (n->kind == K_KEYPATH_EQ) { /* "operator for (A, B)" */
		puts_(p, "(");
		swd_pr_join(p, n->kids[1], ", ");
		puts_(p, ")");
		if (n->nkids > 2) {
			puts_(p, " ");
			swd_pr_sig(p, n->kids[2]);
		}
		return true;
	}
	swd_pr_print(p, n->kids[0]);
	/* swift demangle: the signature, then the types run together */
	if (n->nkids > 2 || n->kids[1]->nkids)
		puts_(p, " : ");
	if (n->nkids > 2)
		swd_pr_sig(p, n->kids[2]);
	swd_pr_join(p, n->kids[1], "");
	if (n->flags & SWF_READONLY)
		puts_(p, ", serialized");
	return true;
}

static void print_assoc_wt_access(struct pr *p, const struct swn *n)
{
	if (n->flags & SWF_OTHER_FORM) {
		puts_(p, "base witness table accessor for ");
		swd_pr_print(p, n->kids[n->nkids - 1]);
	} else {
		puts_(p, "associated type witness table accessor for ");
		swd_pr_join(p, n->kids[1], ".");
		puts_(p, " : ");
		swd_pr_print(p, n->kids[2]);
	}
	puts_(p, " in ");
	swd_pr_print(p, n->kids[0]);
}

static void print_assoc_conf_desc(struct pr *p, const struct swn *n)
{
	text(p, n);
	swd_pr_print(p, n->kids[0]);
	puts_(p, ".");
	if (n->kids[1]->kind == K_TYPE_LIST)
		swd_pr_join(p, n->kids[1], ".");
	else
		swd_pr_print(p, n->kids[1]);
	puts_(p, ": ");
	swd_pr_print(p, n->kids[2]);
}

/* Witness tables, associated types and the runtime's other records. */
static bool print_witness(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_LAZY_WT:
		text(p, n);
		swd_pr_print(p, n->kids[0]);
		puts_(p, " and conformance ");
		swd_pr_print(p, n->kids[1]);
		break;
	case K_ASSOC_TYPE_ACCESS:
		puts_(p, "associated type metadata accessor for ");
		text(p, n->kids[1]);
		puts_(p, " in ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_ASSOC_WT_ACCESS:
		print_assoc_wt_access(p, n);
		break;
	case K_ASSOC_CONF_DESC:
		print_assoc_conf_desc(p, n);
		break;
	case K_ASSOC_TYPE_DESC:
		puts_(p, (n->flags & SWF_OTHER_FORM)
			     ? "default associated type witness accessor for "
			     : "associated type descriptor for ");
		swd_pr_print(p, n->kids[0]);
		break;
	case K_FIELD_OFFSET:
		text(p, n);
		swd_pr_print(p, n->kids[0]);
		break;
	case K_VALUE_WITNESS:
		text(p, n);
		puts_(p, p->simp ? " for " : " value witness for ");
		swd_pr_print(p, n->kids[0]);
		break;
	default:
		return false;
	}
	return true;
}

/* Protocol conformances: a type's, concrete, by reference, of a pack. */
static bool print_conformance(struct pr *p, const struct swn *n)
{
	switch (n->kind) {
	case K_CONFORMANCE:
		swd_pr_print(p, n->kids[0]);
		if (p->simp)
			break;
		puts_(p, " : ");
		swd_pr_print(p, n->kids[1]);
		if (n->nkids > 2) {
			puts_(p, " in ");
			swd_pr_print(p, n->kids[2]);
		}
		break;
	case K_CONC_CONF:
		puts_(p, "concrete protocol conformance ");
		swd_pr_print(p, n->kids[0]);
		puts_(p, " to ");
		print_conf_ref(p, n->kids[1]);
		if (n->kids[2]->nkids) {
			puts_(p, " with conditional requirements: ");
			print_conf_list(p, n->kids[2]);
		}
		break;
	case K_CONF_REF:
		print_conf_ref(p, n);
		break;
	case K_PACK_CONF:
		puts_(p, "pack protocol conformance ");
		print_conf_list(p, n->kids[0]);
		break;
	default:
		return false;
	}
	return true;
}

bool swd_print_global(struct pr *p, const struct swn *n)
{
	return swd_pr_around(p, n, arounds) || print_decoration(p, n) || print_thunk(p, n) ||
	       print_autodiff_node(p, n) || print_keypath(p, n) || print_witness(p, n) ||
	       print_conformance(p, n);
}
