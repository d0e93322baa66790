/*
 * Split DWARF (-gsplit-dwarf): a skeleton unit in the binary holds the
 * line table and the unit's address ranges; its subroutines, with the
 * inlined calls, are in a split unit in a .dwo file beside the object
 * files, or in a DWARF package (.dwp) beside the binary.  DWARF 5 section
 * 3.1.3 and 7.3.5 describe both, and the GNU extension to DWARF 4 is the
 * same with other attribute and form codes (DW_AT_GNU_dwo_name,
 * DW_FORM_GNU_addr_index, a package index of version 2).
 *
 * Each split unit gets a reader of its own over its sections: a .dwo's
 * whole, a package's unit's contributions cut out of them (so that its
 * offsets start at 0 as in a .dwo).  The addresses it names by index are
 * in the binary's .debug_addr, from the skeleton's base.  What its tree
 * yields, names resolved, moves into the skeleton unit, so that lookups,
 * the index file and the range table see an ordinary unit; the inlined
 * calls' file numbers are those of the skeleton's line table, as llvm
 * reads them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf-private.h"
#include "objfile/object.h"

/* A file of split units: a .dwo, or the package. */
struct dw_split_file {
	char *path;
	struct sw_object *obj;
};

struct dw_splits {
	char *origin; /* the binary's path: its folder and its .dwp are looked in */
	struct dw_split_file *files;
	size_t nfiles;
	struct sw_dwarf **readers; /* one per split unit read, over its sections */
	size_t nreaders;
	struct sw_object *package; /* origin.dwp, NULL: none */
	bool package_tried;
	size_t missing; /* skeletons whose split unit was not found */
	char first_missing[512];
};

static struct dw_splits *splits_of(struct sw_dwarf *d)
{
	if (!d->splits)
		d->splits = calloc(1, sizeof(*d->splits));
	return d->splits;
}

int sw_dwarf_set_origin(struct sw_dwarf *d, const char *path)
{
	struct dw_splits *sp = splits_of(d);
	char *copy = path ? strdup(path) : NULL;
	if (!sp || (path && !copy)) {
		free(copy);
		return -ENOMEM;
	}
	free(sp->origin);
	sp->origin = copy;
	return 0;
}

size_t sw_dwarf_split_missing(const struct sw_dwarf *d, const char **first)
{
	if (first)
		*first = d->splits && d->splits->missing ? d->splits->first_missing : NULL;
	return d->splits ? d->splits->missing : 0;
}

void dw_splits_free(struct dw_splits *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < sp->nreaders; i++)
		sw_dwarf_free(sp->readers[i]);
	for (size_t i = 0; i < sp->nfiles; i++) {
		sw_object_free(sp->files[i].obj);
		free(sp->files[i].path);
	}
	sw_object_free(sp->package);
	free(sp->readers);
	free(sp->files);
	free(sp->origin);
	free(sp);
}

/* A new reader over sections, the binary's .debug_addr and .debug_ranges lent to it. */
static int new_reader(const struct sw_dwarf *d, struct sw_dwarf_sections s, struct dw_splits *sp,
		      struct sw_dwarf **ret)
{
	s.addr = d->s.addr;
	s.ranges = d->s.ranges;
	s.big_endian = d->s.big_endian;
	s.addr_size = d->s.addr_size;
	struct sw_dwarf **grown = realloc(sp->readers, (sp->nreaders + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	sp->readers = grown;
	struct sw_error err = {0};
	int r = sw_dwarf_new(&s, ret, &err);
	if (r < 0)
		return r;
	(*ret)->split = true;
	sp->readers[sp->nreaders++] = *ret;
	return 0;
}

/* --- packages: the unit index (DWARF 5 section 7.3.5.3) --- */

/* The index's section numbers: version 5, and the GNU version 2 where they differ. */
enum { SECT_INFO = 1, SECT_ABBREV = 3, SECT_LINE = 4, SECT_STR_OFFSETS = 6, SECT_RNGLISTS = 8 };

/* The section of s that a column of the index stands for, or NULL. */
static struct sw_section *column_section(struct sw_dwarf_sections *s, uint32_t version, uint32_t id)
{
	switch (id) {
	case SECT_INFO:
		return &s->info;
	case SECT_ABBREV:
		return &s->abbrev;
	case SECT_LINE:
		return &s->line;
	case SECT_STR_OFFSETS:
		return &s->str_offsets;
	case SECT_RNGLISTS:
		return version >= 5 ? &s->rnglists : NULL; /* 8 is DW_SECT_MACRO in 2 */
	default:
		return NULL;
	}
}

int dw_package_unit(const struct sw_dwarf_sections *pkg, uint64_t id, struct sw_dwarf_sections *ret)
{
	struct dw_cur c = dw_cur_at(&pkg->cu_index, pkg->big_endian, 0);
	uint32_t version = (uint32_t)dw_u(&c, 4) & 0xffff; /* 5 and 2 bytes of padding, or 2 */
	uint32_t ncols = (uint32_t)dw_u(&c, 4), nunits = (uint32_t)dw_u(&c, 4),
		 nslots = (uint32_t)dw_u(&c, 4);
	if (c.bad || (version != 2 && version != 5) || !nslots || (nslots & (nslots - 1)) ||
	    ncols > 64 || nunits > nslots)
		return -EINVAL;
	size_t hashes = c.pos, rows = hashes + (size_t)nslots * 8, ids = rows + (size_t)nslots * 4,
	       offsets = ids + (size_t)ncols * 4, sizes = offsets + (size_t)nunits * ncols * 4;
	if (sizes + (size_t)nunits * ncols * 4 > pkg->cu_index.size)
		return -EINVAL;
	uint64_t mask = nslots - 1, h = id & mask, step = ((id >> 32) & mask) | 1;
	uint32_t row = 0;
	for (uint32_t probes = 0; probes < nslots; probes++, h = (h + step) & mask) {
		c.pos = rows + h * 4;
		uint32_t r = (uint32_t)dw_u(&c, 4);
		if (!r)
			return 0;
		c.pos = hashes + h * 8;
		if (dw_u(&c, 8) == id) {
			row = r;
			break;
		}
	}
	if (!row || row > nunits)
		return row ? -EINVAL : 0;
	*ret = *pkg;
	for (uint32_t k = 0; k < ncols; k++) {
		c.pos = ids + k * 4;
		uint32_t col = (uint32_t)dw_u(&c, 4);
		c.pos = offsets + ((size_t)(row - 1) * ncols + k) * 4;
		uint64_t off = dw_u(&c, 4);
		c.pos = sizes + ((size_t)(row - 1) * ncols + k) * 4;
		uint64_t size = dw_u(&c, 4);
		struct sw_section *s = column_section(ret, version, col);
		if (!s)
			continue;
		if (off > s->size || size > s->size - off)
			return -EINVAL;
		s->data += off;
		s->size = size;
	}
	return 1;
}

static struct sw_object *open_package(struct dw_splits *sp)
{
	if (sp->package_tried || !sp->origin)
		return sp->package;
	sp->package_tried = true;
	size_t n = strlen(sp->origin) + 5;
	char *path = malloc(n);
	if (!path)
		return NULL;
	snprintf(path, n, "%s.dwp", sp->origin);
	if (access(path, F_OK) == 0 &&
	    sw_object_open_deferred(path, NULL, &sp->package, NULL) >= 0 &&
	    !sp->package->dwarf.cu_index.size) {
		sw_object_free(sp->package);
		sp->package = NULL;
	}
	free(path);
	return sp->package;
}

/* --- .dwo files --- */

/* dir/name, or NULL when it does not fit. */
static char *join(const char *dir, size_t dir_len, const char *name)
{
	size_t n = dir_len + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%.*s/%s", (int)dir_len, dir, name);
	return p;
}

/*
 * The .dwo of skeleton u: its name as it is when absolute, else under the
 * unit's compilation folder or the binary's folder; then its last
 * component in the binary's folder (the files moved with the binary).
 */
static char *find_dwo(const struct dw_splits *sp, const struct dw_unit *u)
{
	const char *name = u->dwo_name;
	char *cand[3] = {NULL, NULL, NULL};
	const char *slash = sp->origin ? strrchr(sp->origin, '/') : NULL;
	size_t dir_len = slash ? (size_t)(slash - sp->origin) : 1;
	const char *dir = slash ? sp->origin : ".";
	const char *base = strrchr(name, '/');
	if (name[0] == '/') {
		cand[0] = strdup(name);
	} else {
		if (u->comp_dir)
			cand[0] = join(u->comp_dir, strlen(u->comp_dir), name);
		cand[1] = join(dir, dir_len, name);
	}
	if (base)
		cand[2] = join(dir, dir_len, base + 1);
	char *found = NULL;
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (!found && cand[i] && stat(cand[i], &st) == 0 && S_ISREG(st.st_mode))
			found = cand[i];
		else
			free(cand[i]);
	}
	return found;
}

/* The file at path, opened once. */
static struct sw_object *open_file(struct dw_splits *sp, char *path)
{
	for (size_t i = 0; i < sp->nfiles; i++)
		if (!strcmp(sp->files[i].path, path)) {
			free(path);
			return sp->files[i].obj;
		}
	struct dw_split_file *grown = realloc(sp->files, (sp->nfiles + 1) * sizeof(*grown));
	struct sw_object *obj = NULL;
	if (!grown || sw_object_open_deferred(path, NULL, &obj, NULL) < 0) {
		if (grown)
			sp->files = grown;
		free(path);
		return NULL;
	}
	sp->files = grown;
	sp->files[sp->nfiles++] = (struct dw_split_file){path, obj};
	return obj;
}

/* --- the split unit of a skeleton --- */

/*
 * The split unit of reader dd whose id is u's: the split_compile unit of
 * DWARF 5, or a DWARF 4 unit whose DW_AT_GNU_dwo_id is u's.
 */
static struct dw_unit *unit_with_id(struct sw_dwarf *dd, const struct dw_unit *u)
{
	for (size_t i = 0; i < dd->nunits; i++) {
		struct dw_unit *su = &dd->units[i];
		/* type units, and a skeleton read where its split unit was looked for */
		if (su->unit_type == 2 || su->unit_type == 4 || su->unit_type == 6)
			continue;
		if (su->version < 5 && dw_unit_head(dd, su, NULL) < 0)
			continue;
		if (su->has_dwo_id && (!u->has_dwo_id || su->dwo_id == u->dwo_id))
			return su;
	}
	return NULL;
}

static void note_missing(struct dw_splits *sp, const struct dw_unit *u, const char *why)
{
	if (sp->missing++)
		return;
	/* the path the file was first looked for at */
	bool under = u->dwo_name && u->dwo_name[0] != '/' && u->comp_dir;
	snprintf(sp->first_missing, sizeof(sp->first_missing), "%s%s%s: %s",
		 under ? u->comp_dir : "", under ? "/" : "",
		 u->dwo_name ? u->dwo_name : "(no name)", why);
}

/* The reader of u's split unit and the unit in it, opened once; NULL: not found. */
static struct dw_unit *split_unit(struct sw_dwarf *d, struct dw_unit *u, struct sw_dwarf **ret)
{
	struct dw_splits *sp = splits_of(d);
	if (!sp)
		return NULL;
	struct sw_object *pkg = open_package(sp);
	struct sw_dwarf_sections s;
	if (pkg && u->has_dwo_id && dw_package_unit(&pkg->dwarf, u->dwo_id, &s) == 1 &&
	    new_reader(d, s, sp, ret) >= 0) {
		struct dw_unit *su = unit_with_id(*ret, u);
		if (su)
			return su;
	}
	if (!u->dwo_name) {
		note_missing(sp, u, "the skeleton unit names no file");
		return NULL;
	}
	char *path = find_dwo(sp, u);
	if (!path) {
		note_missing(sp, u, "not found");
		return NULL;
	}
	struct sw_object *obj = open_file(sp, path);
	if (!obj || new_reader(d, obj->dwarf, sp, ret) < 0) {
		note_missing(sp, u, "cannot be read");
		return NULL;
	}
	struct dw_unit *su = unit_with_id(*ret, u);
	if (!su)
		note_missing(sp, u, "holds no unit with the skeleton's id (a stale file?)");
	return su;
}

int dw_split_tree(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err)
{
	struct sw_dwarf *dd = NULL;
	struct dw_unit *su = split_unit(d, u, &dd);
	if (!su)
		return 0; /* the line table still answers */
	/* what the split unit takes from its skeleton (DWARF 5 section 3.1.3) */
	su->addr_base = u->addr_base;
	su->ranges_base = u->dwo_ranges_base;
	su->low_pc = u->low_pc;
	su->has_low_pc = u->has_low_pc;
	if (su->version < 5)
		su->str_offsets_base = 0; /* the GNU extension's table has no header */
	struct sw_error serr = {0};
	int r = dw_unit_tree(dd, su, &serr);
	if (r < 0)
		return sw_error_set(err, r, "split unit %s: %s", u->dwo_name ? u->dwo_name : "",
				    sw_error_str(&serr));
	/* names now, from the split unit's DIEs: the skeleton's reader has not got them */
	for (size_t i = 0; i < su->nfuncs; i++)
		dw_func_name(dd, &su->funcs[i]);
	u->funcs = su->funcs;
	u->nfuncs = su->nfuncs;
	u->ranges = su->ranges;
	u->nranges = su->nranges;
	u->segs = su->segs;
	u->nsegs = su->nsegs;
	u->seg_index = su->seg_index;
	u->seg_lo = su->seg_lo;
	su->funcs = NULL;
	su->ranges = NULL;
	su->segs = NULL;
	su->seg_index = su->seg_lo = NULL;
	su->nfuncs = su->nranges = su->nsegs = 0;
	return 0;
}
