/*
 * .debug_line: line number programs of versions 2 to 5 run into a row
 * table with its sequences, the lookup of an address in them, and the
 * joining of a file entry's name with its directory and the compilation
 * directory the way llvm-symbolizer prints paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-private.h"
#include "util/search.h"

struct line_header {
	uint16_t version;
	uint8_t offset_size, addr_size;
	uint8_t min_inst, default_is_stmt, line_range, opcode_base;
	int8_t line_base;
	uint8_t std_lengths[256];
	size_t program, end; /* section offsets */
};

struct line_builder {
	struct dw_line_table *t;
	size_t rcap, scap;
	bool seq_empty;
	size_t seq_first;
	uint64_t seq_lo;
};

static int grow(void **p, size_t *cap, size_t n, size_t size, size_t max)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	while (c <= n)
		c *= 2;
	if (c > max)
		return -E2BIG;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* The attribute value reader wants a unit; this one describes the header. */
static struct dw_unit header_unit(const struct dw_unit *cu, const struct line_header *h)
{
	struct dw_unit u = *cu;
	u.offset_size = h->offset_size;
	u.addr_size = h->addr_size;
	u.version = h->version;
	return u;
}

static int read_v5_entries(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
			   bool files, struct dw_line_table *t)
{
	uint8_t nformat = (uint8_t)dw_u(c, 1);
	uint64_t fmt[2 * 255];
	for (unsigned i = 0; i < nformat; i++) {
		fmt[2 * i] = dw_uleb(c);
		fmt[2 * i + 1] = dw_uleb(c);
	}
	uint64_t count = dw_uleb(c);
	if (c->bad || count > DW_MAX_FILES)
		return -EINVAL;
	if (count == 0)
		return 0;
	if (files) {
		t->files = calloc(count, sizeof(*t->files));
		if (!t->files)
			return -ENOMEM;
	} else {
		t->dirs = calloc(count, sizeof(*t->dirs));
		if (!t->dirs)
			return -ENOMEM;
	}
	for (uint64_t i = 0; i < count; i++) {
		const char *name = NULL;
		uint64_t dir = 0;
		for (unsigned j = 0; j < nformat; j++) {
			struct dw_value v;
			if (fmt[2 * j + 1] > 0xffff ||
			    dw_read_value(d, u, c, (uint16_t)fmt[2 * j + 1], 0, &v) < 0)
				return -EINVAL;
			if (fmt[2 * j] == 1) /* DW_LNCT_path */
				name = dw_value_str(d, u, &v);
			else if (fmt[2 * j] == 2) /* DW_LNCT_directory_index */
				dir = v.u;
		}
		if (files)
			t->files[t->nfiles++] = (struct dw_line_file){.name = name, .dir = dir};
		else
			t->dirs[t->ndirs++] = name;
	}
	return 0;
}

static int add_file(struct dw_line_table *t, size_t *cap, const char *name, uint64_t dir)
{
	int r = grow((void **)&t->files, cap, t->nfiles, sizeof(*t->files), DW_MAX_FILES);
	if (r < 0)
		return r;
	t->files[t->nfiles++] = (struct dw_line_file){.name = name, .dir = dir};
	return 0;
}

/* The next name of a DWARF 4 list that an empty name ends: 1, 0 at its end, or -EINVAL. */
static int v4_name(struct dw_cur *c, const char **ret)
{
	const char *s = dw_cstr(c);
	if (!s)
		return -EINVAL;
	*ret = s;
	return *s != 0;
}

static int read_v4_entries(struct dw_cur *c, struct dw_line_table *t, size_t *fcap)
{
	size_t dcap = 0;
	const char *s;
	int r;
	while ((r = v4_name(c, &s)) > 0) {
		r = grow((void **)&t->dirs, &dcap, t->ndirs, sizeof(*t->dirs), DW_MAX_FILES);
		if (r < 0)
			return r;
		t->dirs[t->ndirs++] = s;
	}
	while (r == 0 && (r = v4_name(c, &s)) > 0) {
		uint64_t dir = dw_uleb(c);
		dw_uleb(c);
		dw_uleb(c);
		r = add_file(t, fcap, s, dir);
	}
	if (r < 0)
		return r;
	return c->bad ? -EINVAL : 0;
}

static int read_header(const struct sw_dwarf *d, const struct dw_unit *cu, struct dw_cur *c,
		       struct line_header *h, struct dw_line_table *t, size_t *fcap)
{
	uint64_t len = dw_initial_length(c, &h->offset_size);
	if (c->bad || len > c->size - c->pos)
		return -EINVAL;
	h->end = c->pos + (size_t)len;
	c->size = h->end;
	h->version = (uint16_t)dw_u(c, 2);
	if (h->version < 2 || h->version > 5)
		return -EINVAL;
	h->addr_size = cu->addr_size;
	if (h->version >= 5) {
		h->addr_size = (uint8_t)dw_u(c, 1);
		dw_u(c, 1); /* segment selector size */
		if (h->addr_size != 2 && h->addr_size != 4 && h->addr_size != 8)
			return -EINVAL;
	}
	uint64_t hlen = dw_u(c, h->offset_size);
	if (c->bad || hlen > c->size - c->pos)
		return -EINVAL;
	h->program = c->pos + (size_t)hlen;
	h->min_inst = (uint8_t)dw_u(c, 1);
	if (h->version >= 4)
		dw_u(c, 1); /* maximum operations per instruction: VLIW only */
	h->default_is_stmt = (uint8_t)dw_u(c, 1);
	h->line_base = (int8_t)dw_u(c, 1);
	h->line_range = (uint8_t)dw_u(c, 1);
	h->opcode_base = (uint8_t)dw_u(c, 1);
	memset(h->std_lengths, 0, sizeof(h->std_lengths));
	for (unsigned i = 1; i < h->opcode_base; i++)
		h->std_lengths[i] = (uint8_t)dw_u(c, 1);
	if (c->bad || h->line_range == 0)
		return -EINVAL;
	t->version = h->version;
	if (h->version >= 5) {
		struct dw_unit hu = header_unit(cu, h);
		struct dw_cur hc = *c;
		hc.size = h->program;
		int r = read_v5_entries(d, &hu, &hc, false, t);
		if (r >= 0)
			r = read_v5_entries(d, &hu, &hc, true, t);
		return r;
	}
	struct dw_cur hc = *c;
	hc.size = h->program;
	return read_v4_entries(&hc, t, fcap);
}

struct line_state {
	uint64_t addr;
	uint32_t file, line, column;
};

static void reset_state(struct line_state *s)
{
	*s = (struct line_state){.file = 1, .line = 1};
}

static int append_row(struct line_builder *b, const struct line_state *s, bool end)
{
	struct dw_line_table *t = b->t;
	int r = grow((void **)&t->rows, &b->rcap, t->nrows, sizeof(*t->rows), DW_MAX_ROWS);
	if (r < 0)
		return r;
	if (b->seq_empty) {
		b->seq_empty = false;
		b->seq_first = t->nrows;
		b->seq_lo = s->addr;
	}
	/* llvm keeps the file in 16 bits and the column in 16: so do we, to agree */
	t->rows[t->nrows++] = (struct dw_line_row){
	    .addr = s->addr,
	    .file = (uint16_t)s->file,
	    .line = s->line,
	    .column = (uint16_t)s->column,
	};
	if (!end)
		return 0;
	if (b->seq_lo < s->addr) {
		r = grow((void **)&t->seqs, &b->scap, t->nseqs, sizeof(*t->seqs), DW_MAX_ROWS);
		if (r < 0)
			return r;
		t->seqs[t->nseqs++] = (struct dw_line_seq){
		    .lo = b->seq_lo,
		    .hi = s->addr,
		    .first = (uint32_t)b->seq_first,
		    .last = (uint32_t)(t->nrows - 1),
		};
	}
	b->seq_empty = true;
	return 0;
}

static int run_extended(struct line_builder *b, struct dw_cur *c, struct line_state *s,
			size_t *fcap)
{
	uint64_t len = dw_uleb(c);
	if (c->bad || len == 0 || len > c->size - c->pos)
		return -EINVAL;
	size_t end = c->pos + (size_t)len;
	uint8_t op = (uint8_t)dw_u(c, 1);
	int r = 0;
	switch (op) {
	case 1: /* end_sequence */
		r = append_row(b, s, true);
		reset_state(s);
		break;
	case 2: /* set_address */
		if (len - 1 <= 8)
			s->addr = dw_u(c, (size_t)(len - 1));
		break;
	case 3: { /* define_file, gone in DWARF 5 */
		const char *name = dw_cstr(c);
		uint64_t dir = dw_uleb(c);
		if (name && b->t->version < 5)
			r = add_file(b->t, fcap, name, dir);
		break;
	}
	default:
		break;
	}
	c->pos = end;
	return c->bad ? -EINVAL : r;
}

static int run_program(const struct line_header *h, struct dw_cur *c, struct line_builder *b,
		       size_t *fcap)
{
	struct line_state s;
	reset_state(&s);
	c->pos = h->program;
	c->size = h->end;
	while (c->pos < c->size) {
		uint8_t op = (uint8_t)dw_u(c, 1);
		int r = 0;
		if (op >= h->opcode_base) {
			unsigned adj = op - h->opcode_base;
			s.addr += (uint64_t)(adj / h->line_range) * h->min_inst;
			s.line += (uint32_t)(h->line_base + (int)(adj % h->line_range));
			r = append_row(b, &s, false);
		} else if (op == 0) {
			r = run_extended(b, c, &s, fcap);
		} else {
			switch (op) {
			case 1: /* copy */
				r = append_row(b, &s, false);
				break;
			case 2:
				s.addr += dw_uleb(c) * h->min_inst;
				break;
			case 3:
				s.line += (uint32_t)dw_sleb(c);
				break;
			case 4:
				s.file = (uint32_t)dw_uleb(c);
				break;
			case 5:
				s.column = (uint32_t)dw_uleb(c);
				break;
			case 8: /* const_add_pc */
				s.addr += (uint64_t)((255 - h->opcode_base) / h->line_range) *
					  h->min_inst;
				break;
			case 9:
				s.addr += dw_u(c, 2);
				break;
			case 6:
			case 7:
			case 10:
			case 11:
				break;
			default: /* unknown standard opcode: skip its operands */
				for (unsigned i = 0; i < h->std_lengths[op]; i++)
					dw_uleb(c);
				break;
			}
		}
		if (r < 0)
			return r;
		if (c->bad)
			return -EINVAL;
	}
	return 0;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct dw_line_seq *x = a, *y = b;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

int dw_line_read(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_line_table **ret,
		 struct sw_error *err)
{
	*ret = NULL;
	if (!u->has_stmt_list || !d->s.line.size)
		return 0;
	struct dw_line_table *t = calloc(1, sizeof(*t));
	if (!t)
		return sw_error_set(err, -ENOMEM, "out of memory");
	struct dw_cur c = dw_cur_at(&d->s.line, d->s.big_endian, u->stmt_list);
	struct line_header h;
	struct line_builder b = {.t = t, .seq_empty = true};
	size_t fcap = 0;
	int r = read_header(d, u, &c, &h, t, &fcap);
	if (r >= 0)
		r = run_program(&h, &c, &b, &fcap);
	if (r < 0) {
		dw_line_free(t);
		return sw_error_set(err, r, "bad line table at .debug_line 0x%llx near 0x%zx",
				    (unsigned long long)u->stmt_list, c.pos);
	}
	if (t->nseqs)
		qsort(t->seqs, t->nseqs, sizeof(*t->seqs), cmp_seq);
	t->sample = malloc((t->nrows / DW_LINE_STRIDE + 1) * sizeof(*t->sample));
	if (!t->sample) {
		dw_line_free(t);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < t->nrows; i += DW_LINE_STRIDE)
		t->sample[i / DW_LINE_STRIDE] = t->rows[i].addr;
	*ret = t;
	return 0;
}

int dw_line_load(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err)
{
	if (u->line_done)
		return u->line_err;
	u->line_done = true;
	d->parsed = true;
	return u->line_err = dw_line_read(d, u, &u->line, err);
}

/* The first sequence ending after addr, as llvm looks it up. */
static size_t find_seq(const struct dw_line_table *t, uint64_t addr, bool forward,
		       const struct dw_line_hint *h)
{
	return sw_upper_bound_from(t->seqs, sizeof(*t->seqs), offsetof(struct dw_line_seq, hi),
				   t->nseqs, forward ? h->seq : 0, addr);
}

/* Rows of s at or below addr, after its first: the sampled addresses narrow it to one stride. */
static size_t find_row(const struct dw_line_table *t, const struct dw_line_seq *s, uint64_t addr)
{
	size_t a = s->first + 1, z = s->last;
	size_t sa = a / DW_LINE_STRIDE + 1, sz = (z - 1) / DW_LINE_STRIDE + 1;
	while (sa < sz) {
		size_t mid = sa + (sz - sa) / 2;
		if (t->sample[mid] <= addr)
			sa = mid + 1;
		else
			sz = mid;
	}
	/* sample[sa - 1] <= addr (or sa is the first), sample[sa] > addr */
	size_t lo_row = (sa - 1) * DW_LINE_STRIDE, hi_row = sa * DW_LINE_STRIDE;
	if (lo_row > a && lo_row < z)
		a = lo_row;
	if (hi_row < z && hi_row > a)
		z = hi_row;
	while (a < z) {
		size_t mid = a + (z - a) / 2;
		if (t->rows[mid].addr <= addr)
			a = mid + 1;
		else
			z = mid;
	}
	return a;
}

long dw_line_find(const struct dw_line_table *t, uint64_t addr, bool forward,
		  struct dw_line_hint *h)
{
	size_t seq = find_seq(t, addr, forward, h);
	/* rows up to the last one found are at or below addr */
	size_t known = forward && seq == h->seq && h->row != SIZE_MAX ? h->row + 1 : 0;
	h->seq = seq;
	h->row = SIZE_MAX;
	if (seq == t->nseqs || t->seqs[seq].lo > addr)
		return -1;
	const struct dw_line_seq *s = &t->seqs[seq];
	/* the last row at or before addr among [first + 1, last), else first */
	size_t a;
	if (known)
		a = sw_upper_bound_from(t->rows, sizeof(*t->rows),
					offsetof(struct dw_line_row, addr), s->last,
					known > s->first + 1 ? known : s->first + 1, addr);
	else
		a = find_row(t, s, addr);
	h->row = a - 1;
	return (long)a - 1;
}

static bool absolute(const char *p)
{
	return p && p[0] == '/';
}

/* llvm::sys::path::append for one component, POSIX style. */
static void path_append(char *buf, size_t *len, const char *comp)
{
	size_t n = *len;
	if (n && buf[n - 1] == '/') {
		while (*comp == '/')
			comp++;
	} else if (comp[0] != '/' && n) {
		if (n + 1 < DW_MAX_PATH)
			buf[n++] = '/';
	}
	size_t cl = strlen(comp);
	if (cl > DW_MAX_PATH - 1 - n)
		cl = DW_MAX_PATH - 1 - n;
	memcpy(buf + n, comp, cl);
	n += cl;
	buf[n] = '\0';
	*len = n;
}

const char *dw_line_path(struct dw_line_table *t, const struct dw_unit *u, uint64_t i)
{
	struct dw_line_file *f;
	if (t->version >= 5) {
		if (i >= t->nfiles)
			return NULL;
		f = &t->files[i];
	} else {
		if (i == 0 || i > t->nfiles)
			return NULL;
		f = &t->files[i - 1];
	}
	if (f->path)
		return f->path;
	if (!f->name)
		return NULL;
	if (absolute(f->name))
		return f->path = f->name;
	const char *dir = "";
	if (t->version >= 5) {
		if (f->dir < t->ndirs && t->dirs[f->dir])
			dir = t->dirs[f->dir];
	} else if (f->dir > 0 && f->dir <= t->ndirs) {
		dir = t->dirs[f->dir - 1];
	}
	char *buf = malloc(DW_MAX_PATH);
	char **owned = realloc(t->owned, (t->nowned + 1) * sizeof(*t->owned));
	if (!buf || !owned) {
		free(buf);
		if (owned)
			t->owned = owned;
		return NULL;
	}
	t->owned = owned;
	size_t len = 0;
	buf[0] = '\0';
	if (u->comp_dir && u->comp_dir[0] && !absolute(dir))
		path_append(buf, &len, u->comp_dir);
	path_append(buf, &len, dir);
	path_append(buf, &len, f->name);
	char *shrunk = realloc(buf, len + 1);
	if (shrunk)
		buf = shrunk;
	t->owned[t->nowned++] = buf;
	return f->path = buf;
}

void dw_line_free(struct dw_line_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	if (!t->borrowed) {
		free(t->rows);
		free(t->seqs);
	}
	free(t->sample);
	free(t->dirs);
	free(t->files);
	free(t);
}
