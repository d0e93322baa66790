/*
 * The dyld export trie (LC_DYLD_INFO's export_off or LC_DYLD_EXPORTS_TRIE):
 * a prefix tree whose terminal nodes carry an exported name's flags and
 * address offset.  Stripped images and some system frameworks carry their
 * global names only here, so the symbolicator reads it as a symbol source.
 *
 * The walk is iterative with an explicit, bounded stack; each node may be
 * entered once (a bitmap catches cycles and shared subtrees), names are
 * capped, and every byte read is checked against the trie's size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macho-format.h"
#include "macho.h"

#define MAX_DEPTH   4096
#define MAX_NAME    4096
#define MAX_EXPORTS (1u << 24)

struct frame {
	size_t next;     /* offset of the next child entry */
	unsigned left;   /* children not yet entered */
	size_t name_len; /* the prefix length at this node */
};

struct walk {
	const uint8_t *t;
	size_t size;
	uint64_t base;
	uint8_t *seen;
	struct frame *stack;
	size_t depth;
	char name[MAX_NAME + 1];
	struct sw_macho_export **ex;
	size_t *nex;
	size_t cap;
	struct sw_buf *names;
	struct sw_error *err;
};

static int fail(struct walk *w, size_t off, const char *what)
{
	return sw_error_set(w->err, -EINVAL, "%s at offset 0x%llx", what,
			    (unsigned long long)(w->base + off));
}

static int uleb(struct walk *w, size_t *pos, size_t end, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;
	size_t start = *pos;

	while (*pos < end) {
		uint8_t b = w->t[(*pos)++];

		if (shift >= 64 || (shift == 63 && (b & 0x7e)))
			return fail(w, start, "export trie number overflows");
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return fail(w, start, "truncated export trie number");
}

static int record(struct walk *w, size_t name_len, uint64_t offset, unsigned kind)
{
	struct sw_macho_export *e;
	size_t at = w->names->len;

	if (*w->nex >= MAX_EXPORTS)
		return sw_error_set(w->err, -E2BIG, "more than %u exports", MAX_EXPORTS);
	if (*w->nex == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;

		e = realloc(*w->ex, cap * sizeof(*e));
		if (!e)
			return sw_error_set(w->err, -ENOMEM, "out of memory for exports");
		*w->ex = e;
		w->cap = cap;
	}
	if (sw_buf_append(w->names, w->name, name_len) < 0 || sw_buf_putc(w->names, 0) < 0)
		return sw_error_set(w->err, -E2BIG, "export names exceed their ceiling");
	e = &(*w->ex)[(*w->nex)++];
	e->offset = offset;
	e->name = at;
	e->kind = kind;
	return 0;
}

/* Reads the terminal information of the node at off, then pushes its children. */
static int enter(struct walk *w, size_t off, size_t name_len)
{
	uint64_t tsize, flags, value;
	size_t pos = off, tend;
	int r;

	if (off >= w->size)
		return fail(w, off, "export trie node out of the trie");
	if (w->seen[off / 8] & (1u << (off % 8)))
		return fail(w, off, "export trie node entered twice");
	w->seen[off / 8] |= (uint8_t)(1u << (off % 8));
	if (w->depth >= MAX_DEPTH)
		return fail(w, off, "export trie too deep");
	r = uleb(w, &pos, w->size, &tsize);
	if (r < 0)
		return r;
	if (tsize > w->size - pos)
		return fail(w, off, "export trie terminal overruns the trie");
	tend = pos + tsize;
	if (tsize > 0) {
		r = uleb(w, &pos, tend, &flags);
		if (r >= 0 && !(flags & EXPORT_SYMBOL_FLAGS_REEXPORT)) {
			r = uleb(w, &pos, tend, &value);
			if (r >= 0)
				r = record(w, name_len, value,
					   flags & EXPORT_SYMBOL_FLAGS_KIND_MASK);
		}
		if (r < 0)
			return r;
	}
	if (tend >= w->size)
		return fail(w, tend, "export trie node lacks its child count");
	w->stack[w->depth].next = tend + 1;
	w->stack[w->depth].left = w->t[tend];
	w->stack[w->depth].name_len = name_len;
	w->depth++;
	return 0;
}

/* Follows the next edge of the top frame. */
static int step(struct walk *w)
{
	struct frame *f = &w->stack[w->depth - 1];
	size_t pos = f->next, len;
	const uint8_t *nul;
	uint64_t child;
	int r;

	if (f->left == 0) {
		w->depth--;
		return 0;
	}
	f->left--;
	if (pos >= w->size)
		return fail(w, pos, "truncated export trie edge");
	nul = memchr(w->t + pos, 0, w->size - pos);
	if (!nul)
		return fail(w, pos, "unterminated export trie edge");
	len = (size_t)(nul - (w->t + pos));
	if (len > MAX_NAME - f->name_len)
		return fail(w, pos, "export name too long");
	memcpy(w->name + f->name_len, w->t + pos, len);
	pos += len + 1;
	r = uleb(w, &pos, w->size, &child);
	if (r < 0)
		return r;
	f->next = pos;
	if (child >= w->size)
		return fail(w, pos, "export trie child out of the trie");
	return enter(w, (size_t)child, f->name_len + len);
}

int sw_macho_trie_walk(const uint8_t *trie, size_t size, uint64_t base_off,
		       struct sw_macho_export **exports, size_t *nexports, struct sw_buf *names,
		       struct sw_error *err)
{
	struct walk *w;
	int r;

	if (size == 0)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return sw_error_set(err, -ENOMEM, "out of memory");
	w->t = trie;
	w->size = size;
	w->base = base_off;
	w->ex = exports;
	w->nex = nexports;
	w->cap = *nexports;
	w->names = names;
	w->err = err;
	w->seen = calloc(size / 8 + 1, 1);
	w->stack = calloc(MAX_DEPTH, sizeof(*w->stack));
	if (!w->seen || !w->stack)
		r = sw_error_set(err, -ENOMEM, "out of memory");
	else
		r = enter(w, 0, 0);
	while (r >= 0 && w->depth > 0)
		r = step(w);
	free(w->seen);
	free(w->stack);
	free(w);
	return r < 0 ? r : 0;
}
