/*
 * Adds and removes a dylib load command in Mach-O executables (see
 * macho-edit.h).  Load commands are appended after the last one, in the
 * zero padding linkers leave before the first section's bytes; a removal
 * moves the commands after the removed one up and zeroes the freed tail.
 * Appending keeps every existing dylib ordinal, so binding is unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macho-edit.h"
#include "macho-format.h"
#include "macho.h"

/* One slice as the edit sees it. */
struct slice {
	uint8_t *p; /* the slice's mach header */
	size_t size;
	char arch[16];
	size_t hdr;   /* header size: 28 or 32 */
	size_t align; /* command size alignment: 4 or 8 */
	uint32_t ncmds, sizeofcmds;
	uint64_t first_data; /* file offset of the first section's bytes */
	size_t dylib_at;     /* offset of the command loading the dylib, 0: none */
	size_t rpath_after;  /* offset of our rpath right after it, 0: none */
	bool has_rpath;      /* some LC_RPATH has edit->rpath */
	bool is_signed;
	uint32_t cryptid;
};

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static size_t round_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* The NUL-terminated string at offset off inside a command, or NULL. */
static const char *cmd_str(const uint8_t *cmd, uint32_t cmdsize, size_t min)
{
	uint32_t off = macho_rd32(cmd + 8);
	if (off < min || off >= cmdsize || !memchr(cmd + off, 0, cmdsize - off))
		return NULL;
	return (const char *)cmd + off;
}

static bool is_dylib_cmd(uint32_t cmd)
{
	return cmd == LC_LOAD_DYLIB || cmd == LC_LOAD_WEAK_DYLIB || cmd == LC_REEXPORT_DYLIB ||
	       cmd == LC_LAZY_LOAD_DYLIB || cmd == LC_LOAD_UPWARD_DYLIB;
}

/* Lowers s->first_data to the first byte a segment's sections occupy in the file. */
static int segment_data(struct slice *s, const uint8_t *cmd, uint32_t cmdsize, bool is64,
			struct sw_error *err)
{
	size_t seg = is64 ? SEG64_SIZE : SEG32_SIZE, sect = is64 ? SECT64_SIZE : SECT32_SIZE;
	if (cmdsize < seg)
		return sw_error_set(err, -EINVAL, "%s slice: segment command too short", s->arch);
	uint32_t nsects = macho_rd32(cmd + (is64 ? SEG64_OFF_NSECTS : SEG32_OFF_NSECTS));
	if (nsects > (cmdsize - seg) / sect)
		return sw_error_set(err, -EINVAL, "%s slice: %u sections overflow their segment",
				    s->arch, nsects);
	for (uint32_t i = 0; i < nsects; i++) {
		const uint8_t *sc = cmd + seg + (size_t)i * sect;
		uint32_t off = macho_rd32(sc + (is64 ? SECT64_OFF_OFFSET : SECT32_OFF_OFFSET));
		uint32_t type =
		    macho_rd32(sc + (is64 ? SECT64_OFF_FLAGS : SECT32_OFF_FLAGS)) & SECTION_TYPE;
		bool zerofill =
		    type == S_ZEROFILL || type == S_GB_ZEROFILL || type == S_THREAD_LOCAL_ZEROFILL;
		if (off && !zerofill && off < s->first_data)
			s->first_data = off;
	}
	uint64_t fileoff =
	    is64 ? macho_rd64(cmd + SEG64_OFF_FILEOFF) : macho_rd32(cmd + SEG32_OFF_FILEOFF);
	if (nsects == 0 && fileoff && fileoff < s->first_data)
		s->first_data = fileoff;
	return 0;
}

static int note_command(struct slice *s, const struct sw_macho_dylib_edit *edit, size_t at,
			uint32_t cmd, uint32_t cmdsize, size_t prev_dylib, struct sw_error *err)
{
	const uint8_t *c = s->p + at;
	if (cmd == LC_SEGMENT || cmd == LC_SEGMENT_64)
		return segment_data(s, c, cmdsize, cmd == LC_SEGMENT_64, err);
	if (cmd == LC_CODE_SIGNATURE)
		s->is_signed = true;
	if ((cmd == LC_ENCRYPTION_INFO || cmd == LC_ENCRYPTION_INFO_64) &&
	    cmdsize >= ENCRYPTION_OFF_CRYPTID + 4)
		s->cryptid = macho_rd32(c + ENCRYPTION_OFF_CRYPTID);
	if (is_dylib_cmd(cmd)) {
		const char *name = cmd_str(c, cmdsize, DYLIB_CMD_SIZE);
		if (!name)
			return sw_error_set(err, -EINVAL, "%s slice: bad dylib name at offset %zu",
					    s->arch, at);
		if (strcmp(name, edit->install_name) == 0)
			s->dylib_at = at;
	}
	if (cmd == LC_RPATH && edit->rpath) {
		const char *path = cmd_str(c, cmdsize, RPATH_CMD_SIZE);
		if (!path)
			return sw_error_set(err, -EINVAL, "%s slice: bad rpath at offset %zu",
					    s->arch, at);
		if (strcmp(path, edit->rpath) == 0) {
			s->has_rpath = true;
			if (prev_dylib && prev_dylib == s->dylib_at)
				s->rpath_after = at;
		}
	}
	return 0;
}

/* Reads the slice's header and walks its commands, bounds-checked. */
static int read_slice(struct slice *s, const struct sw_macho_dylib_edit *edit, struct sw_error *err)
{
	if (s->size < MH_SIZE_32)
		return sw_error_set(err, -EINVAL, "%s slice: truncated header", s->arch);
	uint32_t magic = macho_rd32(s->p);
	if (magic != MH_MAGIC && magic != MH_MAGIC_64)
		return sw_error_set(err, -ENOEXEC, "%s slice: not a little-endian Mach-O image",
				    s->arch);
	s->hdr = magic == MH_MAGIC_64 ? MH_SIZE_64 : MH_SIZE_32;
	s->align = magic == MH_MAGIC_64 ? 8 : 4;
	uint32_t filetype = macho_rd32(s->p + MH_OFF_FILETYPE);
	if (filetype != MH_EXECUTE)
		return sw_error_set(err, -ENOEXEC, "%s slice: not an executable (file type %u)",
				    s->arch, filetype);
	s->ncmds = macho_rd32(s->p + MH_OFF_NCMDS);
	s->sizeofcmds = macho_rd32(s->p + MH_OFF_SIZEOFCMDS);
	if (s->sizeofcmds > s->size - s->hdr)
		return sw_error_set(err, -EINVAL, "%s slice: load commands overrun the file",
				    s->arch);
	s->first_data = s->size;
	size_t at = s->hdr, end = s->hdr + s->sizeofcmds, prev_dylib = 0;
	for (uint32_t i = 0; i < s->ncmds; i++) {
		if (end - at < LC_HEADER_SIZE)
			return sw_error_set(err, -EINVAL, "%s slice: load command %u overruns",
					    s->arch, i);
		uint32_t cmd = macho_rd32(s->p + at), cmdsize = macho_rd32(s->p + at + 4);
		if (cmdsize < LC_HEADER_SIZE || cmdsize % 4 || cmdsize > end - at)
			return sw_error_set(err, -EINVAL,
					    "%s slice: load command %u has size %u at offset %zu",
					    s->arch, i, cmdsize, at);
		int r = note_command(s, edit, at, cmd, cmdsize, prev_dylib, err);
		if (r < 0)
			return r;
		prev_dylib = is_dylib_cmd(cmd) ? at : 0;
		at += cmdsize;
	}
	if (at != end)
		return sw_error_set(err, -EINVAL,
				    "%s slice: its %u load commands take %zu bytes, the header "
				    "says %u",
				    s->arch, s->ncmds, at - s->hdr, s->sizeofcmds);
	if (s->first_data < end)
		return sw_error_set(err, -EINVAL, "%s slice: a section starts inside the commands",
				    s->arch);
	return 0;
}

/* The slices of data: one for a thin file, each fat_arch's for a universal one. */
static int list_slices(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
		       struct slice *out, size_t *ret_n, struct sw_error *err)
{
	struct sw_macho_slice info[SW_MACHO_MAX_SLICES];
	size_t n;
	if (!sw_macho_is_macho(data, len))
		return sw_error_set(err, -ENOEXEC, "not a Mach-O file");
	int r = sw_macho_slices(data, len, info, SW_MACHO_MAX_SLICES, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct slice *s = &out[i];
		memset(s, 0, sizeof(*s));
		s->p = data + info[i].offset;
		s->size = info[i].offset == 0 && n == 1 ? len : info[i].size;
		memcpy(s->arch, info[i].arch, sizeof(s->arch));
		if ((r = read_slice(s, edit, err)) < 0)
			return r;
	}
	*ret_n = n;
	return 0;
}

static size_t dylib_cmd_size(const struct slice *s, const char *name)
{
	return round_up(DYLIB_CMD_SIZE + strlen(name) + 1, s->align);
}

static size_t rpath_cmd_size(const struct slice *s, const char *path)
{
	return round_up(RPATH_CMD_SIZE + strlen(path) + 1, s->align);
}

static void set_counts(struct slice *s, uint32_t ncmds, uint32_t sizeofcmds)
{
	wr32(s->p + MH_OFF_NCMDS, ncmds);
	wr32(s->p + MH_OFF_SIZEOFCMDS, sizeofcmds);
}

static void append(struct slice *s, const struct sw_macho_dylib_edit *edit, bool rpath)
{
	uint8_t *c = s->p + s->hdr + s->sizeofcmds;
	size_t dsize = dylib_cmd_size(s, edit->install_name);
	memset(c, 0, dsize);
	wr32(c, edit->weak ? LC_LOAD_WEAK_DYLIB : LC_LOAD_DYLIB);
	wr32(c + 4, (uint32_t)dsize);
	wr32(c + 8, DYLIB_CMD_SIZE);
	wr32(c + 12, 2);       /* timestamp, as linkers write it */
	wr32(c + 16, 0x10000); /* current version 1.0.0 */
	wr32(c + 20, 0x10000); /* compatibility version 1.0.0 */
	memcpy(c + DYLIB_CMD_SIZE, edit->install_name, strlen(edit->install_name));
	size_t total = dsize;
	if (rpath) {
		uint8_t *r = c + dsize;
		size_t rsize = rpath_cmd_size(s, edit->rpath);
		memset(r, 0, rsize);
		wr32(r, LC_RPATH);
		wr32(r + 4, (uint32_t)rsize);
		wr32(r + 8, RPATH_CMD_SIZE);
		memcpy(r + RPATH_CMD_SIZE, edit->rpath, strlen(edit->rpath));
		total += rsize;
	}
	set_counts(s, s->ncmds + 1 + rpath, s->sizeofcmds + (uint32_t)total);
}

/*
 * The bytes an edit may touch in each slice (header and commands up to the
 * first section), saved so that a result the re-check rejects is undone.
 */
struct undo {
	uint8_t *saved[SW_MACHO_MAX_SLICES];
	size_t len[SW_MACHO_MAX_SLICES];
	size_t n;
};

static int undo_save(struct undo *u, const struct slice *s, size_t n, struct sw_error *err)
{
	u->n = 0;
	for (size_t i = 0; i < n; i++) {
		u->len[i] = (size_t)s[i].first_data;
		u->saved[i] = malloc(u->len[i]);
		if (!u->saved[i])
			return sw_error_set(err, -ENOMEM, "out of memory");
		memcpy(u->saved[i], s[i].p, u->len[i]);
		u->n = i + 1;
	}
	return 0;
}

static void undo_finish(struct undo *u, struct slice *s, bool restore)
{
	for (size_t i = 0; i < u->n; i++) {
		if (restore)
			memcpy(s[i].p, u->saved[i], u->len[i]);
		free(u->saved[i]);
	}
	u->n = 0;
}

/* Checks the edited file with the reader and with a second walk of every slice. */
static int recheck(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
		   bool want_dylib, struct sw_error *err)
{
	struct slice again[SW_MACHO_MAX_SLICES];
	size_t n;
	int r = list_slices(data, len, edit, again, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if ((again[i].dylib_at != 0) != want_dylib)
			return sw_error_set(err, -EIO, "%s slice: the edit did not take",
					    again[i].arch);
	return 0;
}

/* Refuses, before anything is written, a slice the dylib cannot be added to. */
static int refuse_add(const struct slice *s, size_t n, const struct sw_macho_dylib_edit *edit,
		      struct sw_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].cryptid)
			return sw_error_set(
			    err, -EPERM,
			    "%s slice is encrypted (cryptid %u): an App Store build "
			    "cannot be patched; use a development or ad-hoc build",
			    s[i].arch, s[i].cryptid);
		if (s[i].dylib_at)
			continue;
		size_t need = dylib_cmd_size(&s[i], edit->install_name);
		if (edit->rpath && !s[i].has_rpath)
			need += rpath_cmd_size(&s[i], edit->rpath);
		uint64_t room = s[i].first_data - s[i].hdr - s[i].sizeofcmds;
		if (room < need)
			return sw_error_set(err, -ENOSPC,
					    "%s slice has %llu bytes between its load commands "
					    "and its first section, %zu are needed (relink with "
					    "-headerpad_max_install_names)",
					    s[i].arch, (unsigned long long)room, need);
		/* the room must be zeros, or it is something a tool put there */
		const uint8_t *gap = s[i].p + s[i].hdr + s[i].sizeofcmds;
		for (size_t k = 0; k < need; k++)
			if (gap[k])
				return sw_error_set(err, -ENOSPC,
						    "%s slice: the space after its load commands "
						    "is not empty",
						    s[i].arch);
	}
	return 0;
}

/* Adds the commands to a slice that lacks them; whether it changed. */
static bool add_one(struct slice *s, const struct sw_macho_dylib_edit *edit,
		    struct sw_macho_edit_result *res)
{
	if (s->dylib_at)
		return false;
	bool rpath = edit->rpath && !s->has_rpath;
	append(s, edit, rpath);
	res->rpath_added |= rpath;
	return true;
}

/* Removes the size bytes at offset at from the slice's commands. */
static void cut(struct slice *s, size_t at, size_t size, uint32_t ncmds_removed)
{
	uint8_t *base = s->p;
	size_t end = s->hdr + s->sizeofcmds;
	memmove(base + at, base + at + size, end - at - size);
	memset(base + end - size, 0, size);
	s->sizeofcmds -= (uint32_t)size;
	s->ncmds -= ncmds_removed;
	set_counts(s, s->ncmds, s->sizeofcmds);
}

/* Takes the dylib command, and the rpath right after it, out of a slice. */
static bool remove_one(struct slice *s, const struct sw_macho_dylib_edit *edit,
		       struct sw_macho_edit_result *res)
{
	(void)edit;
	if (!s->dylib_at)
		return false;
	size_t at = s->dylib_at, size = macho_rd32(s->p + at + 4);
	uint32_t count = 1;
	if (s->rpath_after) {
		size += macho_rd32(s->p + s->rpath_after + 4);
		count = 2;
		res->rpath_added = true;
	}
	cut(s, at, size, count);
	return true;
}

/*
 * Both edits: list and check the slices, save what may change, change each
 * slice, re-check the result with the reader, and undo it if it fails.
 */
static int edit_slices(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
		       bool adding, struct sw_macho_edit_result *ret_result, struct sw_error *err)
{
	struct slice s[SW_MACHO_MAX_SLICES];
	size_t n;
	int r = list_slices(data, len, edit, s, &n, err);
	if (r < 0 || (adding && (r = refuse_add(s, n, edit, err)) < 0))
		return r;
	struct sw_macho_edit_result res = {.slices = (unsigned)n};
	struct undo undo;
	if ((r = undo_save(&undo, s, n, err)) < 0) {
		undo_finish(&undo, s, false);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		res.signed_slice |= s[i].is_signed;
		if (adding ? add_one(&s[i], edit, &res) : remove_one(&s[i], edit, &res))
			res.changed++;
	}
	r = res.changed ? recheck(data, len, edit, adding, err) : 0;
	undo_finish(&undo, s, r < 0);
	if (r < 0)
		return r;
	*ret_result = res;
	return 0;
}

int sw_macho_add_dylib(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
		       struct sw_macho_edit_result *ret_result, struct sw_error *err)
{
	return edit_slices(data, len, edit, true, ret_result, err);
}

int sw_macho_remove_dylib(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
			  struct sw_macho_edit_result *ret_result, struct sw_error *err)
{
	return edit_slices(data, len, edit, false, ret_result, err);
}
