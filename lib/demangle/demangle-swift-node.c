/*
 * The Swift demangler's node arena: every node and every string the parsers
 * make comes from one bump allocator per demangling, a first block inside
 * struct swd and then heap chunks up to a ceiling, so a name costs no malloc
 * per node and a hostile one cannot take more than the ceiling.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "demangle-swift.h"

struct swd_chunk {
	struct swd_chunk *next;
	size_t size;
	char data[];
};

#define ARENA_CEILING ((size_t)8 << 20)

void swd_init(struct swd *d, const char *s, size_t len)
{
	d->s = s;
	d->len = len;
	d->pos = 0;
	d->nnodes = 0;
	d->arena = d->first_block;
	d->arena_used = 0;
	d->arena_cap = sizeof(d->first_block);
	d->chunks = NULL;
	d->arena_total = 0;
	d->nstack = 0;
	d->subst = d->subst_block;
	d->nsubst = 0;
	d->nwords = 0;
	d->npending = 0;
	d->depth = 0;
	d->old_mangling = false;
}

void swd_finish(struct swd *d)
{
	struct swd_chunk *c = d->chunks;
	while (c) {
		struct swd_chunk *next = c->next;
		free(c);
		c = next;
	}
	d->chunks = NULL;
}

/* A new chunk for swd_alloc(), whose block has no room for size bytes
 * (rounded already); NULL past the ceiling. */
void *swd_alloc_chunk(struct swd *d, size_t size)
{
	size_t want = size > 65536 ? size : 65536;
	if (d->arena_total + want > ARENA_CEILING)
		return NULL;
	struct swd_chunk *c = malloc(sizeof(*c) + want);
	if (!c)
		return NULL;
	c->next = d->chunks;
	c->size = want;
	d->chunks = c;
	d->arena_total += want;
	d->arena = c->data;
	d->arena_used = size;
	d->arena_cap = want;
	return c->data;
}

struct swn *swd_text_copy(struct swd *d, enum swk kind, const char *text, size_t len)
{
	char *t = swd_alloc(d, len ? len : 1);
	if (!t)
		return NULL;
	memcpy(t, text, len);
	return swd_text(d, kind, t, len);
}

struct swn *swd_index(struct swd *d, enum swk kind, uint64_t index)
{
	struct swn *n = swd_node(d, kind);
	if (!n)
		return NULL;
	n->index = index;
	n->flags |= SWF_HAS_INDEX;
	return n;
}

/* Doubles parent's room for kids, for swd_add(). */
int swd_grow_kids(struct swd *d, struct swn *parent)
{
	if (parent->cap >= 0x4000)
		return -E2BIG;
	uint16_t cap = (uint16_t)(parent->cap * 2);
	struct swn **kids = swd_alloc(d, cap * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	memcpy(kids, parent->kids, parent->nkids * sizeof(*kids));
	parent->kids = kids;
	parent->cap = cap;
	return 0;
}

bool swd_is_type(const struct swn *n)
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
	case K_BUILTIN:
	case K_BUILTIN_FIXED_ARRAY:
	case K_INTEGER:
	case K_BOUND_GENERIC:
	case K_TUPLE:
	case K_FUNC:
	case K_IMPL_FUNC:
	case K_METATYPE:
	case K_EXIST_METATYPE:
	case K_PROTO_LIST:
	case K_PROTO_LIST_CLASS:
	case K_PROTO_LIST_ANYOBJ:
	case K_CONSTRAINED_EXIST:
	case K_PARAM_TYPE:
	case K_DEP_MEMBER:
	case K_DEP_GENERIC_TYPE:
	case K_INOUT:
	case K_SHARED:
	case K_OWNED:
	case K_NODERIV:
	case K_ISOLATED:
	case K_CONST:
	case K_SENDING:
	case K_UNOWNED:
	case K_UNMANAGED:
	case K_WEAK:
	case K_DYNAMIC_SELF:
	case K_ERROR_TYPE:
	case K_OPAQUE_RETURN:
	case K_OPAQUE_TYPE:
	case K_PACK:
	case K_PACK_EXPANSION:
	case K_PACK_ELEMENT:
	case K_SIL_BOX:
	case K_SIL_BOX_GENERIC:
	case K_SUGAR_OPT:
	case K_SUGAR_ARRAY:
	case K_SUGAR_DICT:
	case K_SUGAR_INLINE_ARRAY:
		return true;
	default:
		return false;
	}
}

static const char *const known1[128] = {
    ['A'] = "AutoreleasingUnsafeMutablePointer",
    ['a'] = "Array",
    ['B'] = "BinaryFloatingPoint",
    ['b'] = "Bool",
    ['D'] = "Dictionary",
    ['d'] = "Double",
    ['E'] = "Encodable",
    ['e'] = "Decodable",
    ['F'] = "FloatingPoint",
    ['f'] = "Float",
    ['G'] = "RandomNumberGenerator",
    ['H'] = "Hashable",
    ['h'] = "Set",
    ['I'] = "DefaultIndices",
    ['i'] = "Int",
    ['J'] = "Character",
    ['j'] = "Numeric",
    ['K'] = "BidirectionalCollection",
    ['k'] = "RandomAccessCollection",
    ['L'] = "Comparable",
    ['l'] = "Collection",
    ['M'] = "MutableCollection",
    ['m'] = "RangeReplaceableCollection",
    ['N'] = "ClosedRange",
    ['n'] = "Range",
    ['O'] = "ObjectIdentifier",
    ['P'] = "UnsafePointer",
    ['p'] = "UnsafeMutablePointer",
    ['Q'] = "Equatable",
    ['q'] = "Optional",
    ['R'] = "UnsafeBufferPointer",
    ['r'] = "UnsafeMutableBufferPointer",
    ['S'] = "String",
    ['s'] = "Substring",
    ['T'] = "Sequence",
    ['t'] = "IteratorProtocol",
    ['U'] = "UnsignedInteger",
    ['u'] = "UInt",
    ['V'] = "UnsafeRawPointer",
    ['v'] = "UnsafeMutableRawPointer",
    ['W'] = "UnsafeRawBufferPointer",
    ['w'] = "UnsafeMutableRawBufferPointer",
    ['X'] = "RangeExpression",
    ['x'] = "Strideable",
    ['Y'] = "RawRepresentable",
    ['y'] = "StringProtocol",
    ['Z'] = "SignedInteger",
    ['z'] = "BinaryInteger",
};

static const char *const known2[128] = {
    ['A'] = "Actor",
    ['C'] = "CheckedContinuation",
    ['c'] = "UnsafeContinuation",
    ['E'] = "CancellationError",
    ['e'] = "UnownedSerialExecutor",
    ['F'] = "Executor",
    ['f'] = "SerialExecutor",
    ['G'] = "TaskGroup",
    ['g'] = "ThrowingTaskGroup",
    ['h'] = "TaskExecutor",
    ['I'] = "AsyncIteratorProtocol",
    ['i'] = "AsyncSequence",
    ['J'] = "UnownedJob",
    ['M'] = "MainActor",
    ['P'] = "TaskPriority",
    ['S'] = "AsyncStream",
    ['s'] = "AsyncThrowingStream",
    ['T'] = "Task",
    ['t'] = "UnsafeCurrentTask",
};

const char *swd_known_type(char c, bool second)
{
	if ((unsigned char)c >= 128)
		return NULL;
	return second ? known2[(unsigned char)c] : known1[(unsigned char)c];
}

/* The kind of node a standard substitution stands for. */
enum swk swd_known_kind(char c, bool second)
{
	static const char proto1[] = "BEeFGHjKkLlMmQTtUXxYyZz";
	static const char proto2[] = "AFfhIi";
	if (second) {
		if (strchr(proto2, c))
			return K_PROTOCOL;
		return c == 'M' ? K_CLASS : K_STRUCT;
	}
	if (c == 'q')
		return K_ENUM;
	if (strchr(proto1, c))
		return K_PROTOCOL;
	return K_STRUCT;
}

char swd_operator_char(char c)
{
	switch (c) {
	case 'a':
		return '&';
	case 'c':
		return '@';
	case 'd':
		return '/';
	case 'e':
		return '=';
	case 'g':
		return '>';
	case 'l':
		return '<';
	case 'm':
		return '*';
	case 'n':
		return '!';
	case 'o':
		return '|';
	case 'p':
		return '+';
	case 'q':
		return '?';
	case 'r':
		return '%';
	case 's':
		return '-';
	case 't':
		return '~';
	case 'x':
		return '^';
	case 'z':
		return '.';
	default:
		return 0;
	}
}
