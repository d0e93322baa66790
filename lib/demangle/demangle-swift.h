/*
 * The Swift demangler's private interface: the node tree both parsers build
 * (the current postfix mangling and the legacy prefix `_T` one) and the
 * printer that turns it into text.
 *
 * Nodes live in an arena owned by struct swd (one per demangling), bounded in
 * count, so parsing allocates nothing per node and hostile input cannot grow
 * memory without limit.  A node may be shared (substitutions), so the tree is
 * a DAG; the printer bounds its depth and its output.
 */
#ifndef SW_DEMANGLE_SWIFT_H
#define SW_DEMANGLE_SWIFT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

enum swk {
	K_NONE,
	/* names */
	K_IDENT,        /* text */
	K_MODULE,       /* text */
	K_LOCAL_NAME,   /* kid: name; index */
	K_PRIVATE_NAME, /* kids: discriminator ident, [name] */
	K_RELATED_NAME, /* kid: name; text: kind */
	K_PREFIX_OP,    /* text */
	K_POSTFIX_OP,
	K_INFIX_OP,
	K_LABEL_LIST, /* kids: ident or K_FIRST_MARK for '_' */
	K_FIRST_MARK, /* '_' on the stack */
	K_EMPTY_LIST, /* 'y' on the stack */
	K_VARIADIC_MARK,
	K_INDEX, /* index (a number on the stack) */
	/* nominal types and contexts: kids: context, name */
	K_CLASS,
	K_STRUCT,
	K_ENUM,
	K_PROTOCOL,
	K_TYPEALIAS,
	K_OTHER_NOMINAL,
	K_EXTENSION,       /* kids: module, type, [signature] */
	K_ANON_CONTEXT,    /* kids: context, ident, [type list] */
	K_UNKNOWN_CONTEXT, /* kids: context; text */
	/* types */
	K_BUILTIN,             /* text */
	K_BUILTIN_FIXED_ARRAY, /* kids: count, element */
	K_INTEGER,             /* index (signed in flags) */
	K_BOUND_GENERIC,       /* kids: nominal, type list, [conformances] */
	K_TYPE_LIST,
	K_TUPLE,      /* kids: K_TUPLE_ELEM */
	K_TUPLE_ELEM, /* kids: [K_IDENT label], type; flags: variadic */
	K_FUNC,       /* kids: params, result; attribute kids after */
	K_IMPL_FUNC,
	K_IMPL_PARAM, /* text: convention; kids: type; flags */
	K_IMPL_RESULT,
	K_IMPL_YIELD,
	K_IMPL_ERROR,
	K_IMPL_ATTR, /* text */
	K_IMPL_SUBS, /* kids: [sig], type list (pattern/invocation substitutions) */
	K_METATYPE,  /* kid: type; text: representation or NULL */
	K_EXIST_METATYPE,
	K_PROTO_LIST,        /* kids: protocols; flags: AnyObject; or superclass kid */
	K_PROTO_LIST_CLASS,  /* kids: K_PROTO_LIST, superclass */
	K_PROTO_LIST_ANYOBJ, /* kid: K_PROTO_LIST */
	K_CONSTRAINED_EXIST, /* kids: base, requirements */
	K_PARAM_TYPE,        /* generic param: index = idx, index2 = depth; text for Self */
	K_DEP_MEMBER,        /* kids: base, assoc ref */
	K_ASSOC_REF,         /* kids: name ident, [protocol] */
	K_DEP_GENERIC_TYPE,  /* kids: signature, type */
	K_SIG,               /* kids: K_PARAM_COUNT..., requirements */
	K_PARAM_COUNT,       /* index */
	K_PACK_MARK,         /* kid: param */
	K_VALUE_MARK,        /* kids: param, type */
	K_REQ_CONF,          /* kids: subject, protocol */
	K_REQ_SAME,          /* kids: subject, type */
	K_REQ_BASE,          /* kids: subject, class */
	K_REQ_LAYOUT,        /* kids: subject; text layout; index, index2 */
	K_REQ_INVERSE,       /* kids: subject; index bit */
	K_REQ_SHAPE,         /* kids: a, b */
	K_INOUT,             /* kid: type; modifiers print as a prefix */
	K_SHARED,
	K_OWNED,
	K_NODERIV,
	K_ISOLATED,
	K_CONST,
	K_SENDING,
	K_UNOWNED,
	K_UNMANAGED,
	K_WEAK,
	K_DYNAMIC_SELF,
	K_ERROR_TYPE,
	K_OPAQUE_RETURN,   /* 'Qr': "some" */
	K_OPAQUE_DECL,     /* kid: entity */
	K_OPAQUE_TYPE,     /* kids: opaque decl, index, type lists */
	K_PACK,            /* kids: types */
	K_PACK_EXPANSION,  /* kids: pattern, count */
	K_PACK_ELEMENT,    /* kid: type; index */
	K_SIL_BOX,         /* kids: layout fields */
	K_SIL_BOX_GENERIC, /* kids: sig, layout, substitutions */
	K_SIL_FIELD,       /* kid: type; flags: mutable */
	K_SUGAR_OPT,       /* XSq etc. */
	K_SUGAR_ARRAY,
	K_SUGAR_DICT,
	K_SUGAR_INLINE_ARRAY,
	K_ATTR_TYPE,    /* function attribute wrapper on K_FUNC: text */
	K_GLOBAL_ACTOR, /* kid: type */
	K_TYPED_THROWS, /* kid: type */
	/* entities: kids: context, [name], [labels], [type] */
	K_FUNCTION,
	K_VARIABLE,
	K_SUBSCRIPT,
	K_CONSTRUCTOR,
	K_ALLOCATOR,
	K_DESTRUCTOR,
	K_DEALLOCATOR,
	K_ISO_DEALLOCATOR,
	K_IVAR_INIT,
	K_IVAR_DESTROYER,
	K_EXPL_CLOSURE, /* kids: context, type; index */
	K_IMPL_CLOSURE,
	K_DEFAULT_ARG, /* kids: context; index */
	K_INITIALIZER, /* kid: variable */
	K_PW_BACKING_INIT,
	K_PW_INIT_PROJECTED,
	K_FIELD_INIT_ACCESSOR,
	K_GENERIC_PARAM_DECL, /* 'fp' */
	K_ENUM_ELEMENT,
	K_MACRO,           /* kids: context, name, [type] */
	K_MACRO_EXPANSION, /* kids: context, [decl name], macro name, [file disc]; text kind; index
			    */
	K_MACRO_LOC,       /* kids: module, file; index line, index2 column */
	K_ACCESSOR,        /* kid: storage entity; text: accessor name */
	K_STATIC,          /* kid: entity */
	K_CURRY_THUNK,
	K_RUNTIME_ATTR_GEN,
	K_OUTLINED_VAR,    /* kid: entity; index; flags: read-only */
	K_OUTLINED_BRIDGE, /* kid: entity; text */
	/* globals and thunks: kids: [inner global], ...; text for simple prefixes */
	K_GLOBAL,
	K_PREFIX, /* text + " " + kid0 (or "text for kid0") see flags; index 1: bare when simplified
		   */
	K_SUFFIX, /* unmangled suffix: text */
	K_ASYNC_PARTIAL,     /* kid: global; index; flags: await/suspend */
	K_CONFORMANCE,       /* kids: type, protocol, [module] */
	K_WITNESS_THUNK,     /* kids: conformance, entity */
	K_REABSTRACT,        /* kids: from, to, [sig]; text */
	K_REABSTRACT_SELF,   /* kids: self type, from, to, [sig] */
	K_AUTODIFF_REORDER,  /* kids: from, to, [sig]; text kind */
	K_KEYPATH,           /* text; kids: entity, [sig], types... */
	K_KEYPATH_EQ,        /* text; kids: types..., [sig] */
	K_SPECIAL,           /* text before kid(0) only: "X for Y"; index 1: bare when simplified */
	K_LAZY_WT,           /* kids: type, conformance; text */
	K_ASSOC_TYPE_ACCESS, /* kids: conformance, name */
	K_ASSOC_WT_ACCESS,   /* kids: conformance, assoc path, protocol */
	K_ASSOC_CONF_DESC,   /* kids: protocol, assoc path, protocol; text */
	K_BASE_CONF_DESC,    /* kids: protocol, protocol */
	K_ASSOC_TYPE_DESC,   /* kid: assoc ref */
	K_FIELD_OFFSET,      /* kid: entity; text */
	K_VALUE_WITNESS,     /* kid: type; text */
	K_SPEC,              /* kids: params..., [global]; text; flags; index 1: partial */
	K_SPEC_PARAM,        /* kids: types/conformances */
	K_SPEC_FUNCSIG,      /* kids: K_SPEC_ARG...; flags */
	K_SPEC_ARG,          /* text kind; kids: payload */
	K_AUTODIFF,          /* kids: global, [sig]; text kind; params, results */
	K_AUTODIFF_SUBSET,   /* kids: [global], type; text */
	K_DIFF_WITNESS,
	K_VTABLE_THUNK,       /* kids: derived, base */
	K_ONE_TIME_INIT,      /* kids: context, names; text */
	K_CONC_CONF,          /* kids: type, ref, conditional list */
	K_CONF_REF,           /* kids: protocol, [module]; flags */
	K_DEP_CONF_ROOT,      /* kids: type, protocol; index */
	K_DEP_CONF_INHERITED, /* kids: conformance, protocol; index */
	K_DEP_CONF_ASSOC,     /* kids: conformance, type, protocol; index */
	K_DEP_CONF_OPAQUE,    /* kids: conformance, type */
	K_PACK_CONF,          /* kids: list */
	K_CONF_LIST,          /* kids: conformances */
	K_RETRO,              /* kid: conformance; index */
	K_OBJC_ASYNC,         /* kids: impl type, type, [sig], [index]; flags */
	K_TYPE_MANGLING,      /* kid: type, [labels] */
	K_CLANG_TYPE,
	K_COUNT
};

/* node flags */
#define SWF_VARIADIC  0x1u
#define SWF_NEGATIVE  0x2u
#define SWF_READONLY  0x4u
#define SWF_HAS_INDEX 0x10u
/* K_SIL_FIELD: a `var` field (else `let`) */
#define SWF_MUTABLE 0x8u
/* K_REQ_LAYOUT: an alignment in index2 follows the size in index */
#define SWF_HAS_ALIGNMENT 0x20u
/* an optional last kid is there: K_MACRO_EXPANSION the attached macro's
 * name (kid 2), K_REABSTRACT the self type */
#define SWF_EXTRA_KID 0x40u
/* the other of a node's two forms: K_SPECIAL a partial apply forwarder
 * ("for" only with an operand), K_ASYNC_PARTIAL await (else suspend)
 * resume, K_ASSOC_TYPE_DESC the default associated type witness accessor,
 * K_ASSOC_WT_ACCESS the base witness table accessor, K_AUTODIFF a vtable
 * thunk */
#define SWF_OTHER_FORM 0x80u
/* read but not printed: K_SPEC with its async removed ('a'), K_SIG of a
 * pseudogeneric function ('P') */
#define SWF_ASYNC_REMOVED 0x200000u
#define SWF_PSEUDOGENERIC 0x400000u

/* K_CONF_REF: where the conformance lives when no module kid says it */
#define SWF_CONF_TYPE_MODULE     1u
#define SWF_CONF_PROTOCOL_MODULE 2u

/* What a K_SPEC_ARG's index says a specialized argument became; index2
 * holds the option bits of SA_OPTIONS and the argument of SA_SAME_CLOSURE,
 * and for SA_CLOSURE 1 when the closure's name is to be demangled (the old
 * mangling's; swift demangle shows the current mangling's as mangled).
 * SA_CONST_STRUCT's kids are its fields (K_SPEC_ARG), then its type. */
enum swd_spec_arg {
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
	SA_CONST_STRUCT,
};

/* function type attributes (K_FUNC flags) */
#define SWFN_THROWS     0x100u
#define SWFN_ASYNC      0x200u
#define SWFN_SENDABLE   0x400u
#define SWFN_SENDING    0x800u
#define SWFN_ISO_ANY    0x1000u
#define SWFN_NONSENDING 0x2000u

struct swn {
	uint16_t kind;
	uint16_t nkids;
	uint16_t cap;
	uint16_t tlen;
	uint32_t flags;
	const char *text;
	uint64_t index;
	uint64_t index2;
	struct swn **kids;
	struct swn *inl[2];
};

#define SWD_MAX_NODES  8192
#define SWD_MAX_STACK  1024
#define SWD_MAX_SUBST  2048
#define SWD_MAX_DEPTH  200
#define SWD_MAX_OUTPUT (256u << 10)

struct swd_chunk;

struct swd {
	const char *s;
	size_t len, pos;
	unsigned nnodes;
	/* arena: a first block inside the struct, then heap chunks */
	char *arena;
	size_t arena_used, arena_cap;
	struct swd_chunk *chunks;
	size_t arena_total;
	struct swn *stack[SWD_MAX_STACK];
	unsigned nstack;
	struct swn **subst;
	unsigned nsubst;
	const char *words[26];
	uint8_t wordlen[26];
	unsigned nwords;
	/* identifiers whose words are not split yet: only a word substitution needs them */
	const char *pending[16];
	size_t pendlen[16];
	unsigned npending;
	unsigned depth;    /* legacy parser recursion */
	bool old_mangling; /* _T0: a few operators differ */
	_Alignas(16) char first_block[32768];
	struct swn *subst_block[SWD_MAX_SUBST];
};

void swd_init(struct swd *d, const char *s, size_t len);
void swd_finish(struct swd *d);

/*
 * The arena and the kid lists are used for every node of every name, so
 * their common case is inline here and only a new chunk or a longer kid
 * list goes out of line (a call per node was a tenth of the parse).
 */
void *swd_alloc_chunk(struct swd *d, size_t size);
int swd_grow_kids(struct swd *d, struct swn *parent);

static inline void *swd_alloc(struct swd *d, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	if (d->arena_used + size > d->arena_cap)
		return swd_alloc_chunk(d, size);
	void *p = d->arena + d->arena_used;
	d->arena_used += size;
	return p;
}

static inline struct swn *swd_node(struct swd *d, enum swk kind)
{
	if (d->nnodes >= SWD_MAX_NODES)
		return NULL;
	struct swn *n = swd_alloc(d, sizeof(*n));
	if (!n)
		return NULL;
	d->nnodes++;
	*n = (struct swn){.kind = (uint16_t)kind, .cap = 2};
	n->kids = n->inl;
	return n;
}

static inline struct swn *swd_text(struct swd *d, enum swk kind, const char *text, size_t len)
{
	if (len > 0xffff)
		return NULL;
	struct swn *n = swd_node(d, kind);
	if (!n)
		return NULL;
	n->text = text;
	n->tlen = (uint16_t)len;
	return n;
}

/* Appends kid to parent's kids: 0 or -errno. */
static inline int swd_add(struct swd *d, struct swn *parent, struct swn *kid)
{
	if (!parent || !kid)
		return -EINVAL;
	if (parent->nkids == parent->cap) {
		int r = swd_grow_kids(d, parent);
		if (r < 0)
			return r;
	}
	parent->kids[parent->nkids++] = kid;
	return 0;
}

/* A node of kind with kids a and b, each optional. */
static inline struct swn *swd_with(struct swd *d, enum swk kind, struct swn *a, struct swn *b)
{
	struct swn *n = swd_node(d, kind);
	if (!n)
		return NULL;
	if (a && swd_add(d, n, a) < 0)
		return NULL;
	if (b && swd_add(d, n, b) < 0)
		return NULL;
	return n;
}

/* The same with a copy of text in the arena, for text built in a buffer. */
struct swn *swd_text_copy(struct swd *d, enum swk kind, const char *text, size_t len);
struct swn *swd_index(struct swd *d, enum swk kind, uint64_t index);

/* Parses the current mangling (text after the prefix); NULL if not valid. */
struct swn *swd_parse_new(struct swd *d);
/* Parses the legacy `_T` mangling (text after "_T"); NULL if not valid. */
struct swn *swd_parse_old(struct swd *d);

/* Prints a Global node; 0 or -errno (-E2BIG past the ceiling, -EINVAL if too deep). */
/* nested: a name inside another (a constant-propagated function), which
 * swift demangle prints without the sugar of Optional, Array and Dictionary */
int swd_print(const struct swn *root, bool simplified, bool nested, struct sw_buf *out);

bool swd_is_type(const struct swn *n);
/* Demangles a whole Swift symbol (with its prefix) into out: 1, 0 if not one,
 * or -errno; nest counts recursive uses (specialization payloads). */
int swd_demangle_text(const char *s, size_t len, bool simplified, struct sw_buf *out,
		      unsigned nest);
const char *swd_known_type(char c, bool second);
enum swk swd_known_kind(char c, bool second);
/* The operator character a mangled letter stands for, or 0. */
char swd_operator_char(char c);
/* Swift's Punycode variant ('_' delimiter, A-J digits); UTF-8 out. */
bool swd_punycode(const char *in, size_t n, char *out, size_t *olen, size_t ocap);

#endif
