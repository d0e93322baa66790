/*
 * What a linked Mach-O image says about itself, for checks rather than for
 * symbolication: its header, the list of load commands, LC_BUILD_VERSION,
 * LC_UUID, the install name, the dylibs it loads, its external symbols with
 * their library ordinals, every import its fixups bind (chained fixups, or
 * the bind, weak-bind and lazy-bind opcodes) and where its code signature
 * lies.  tests/check-dylib.c holds the agent's dylib to its contract with it.
 *
 * Thin 64-bit little-endian files only (a linked image or an object file);
 * the input is hostile like everywhere else: every offset is checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macho-format.h"
#include "macho.h"

#define MAX_POOL  ((size_t)64 << 20)
#define MAX_BINDS (1u << 20)

static int fail(struct sw_error *err, uint64_t off, const char *what)
{
	return sw_error_set(err, -EINVAL, "%s at offset 0x%llx", what, (unsigned long long)off);
}

/* Adds the NUL-terminated string at p (at most max bytes) to the pool. */
static int pool_add(struct sw_macho_info *info, const uint8_t *p, size_t max, size_t *ret)
{
	size_t n = strnlen((const char *)p, max);

	if (n == max)
		return -EINVAL;
	*ret = info->pool.len;
	if (sw_buf_append(&info->pool, p, n) < 0 || sw_buf_putc(&info->pool, 0) < 0)
		return -ENOMEM;
	return 0;
}

static int read_dylib(struct sw_macho_info *info, const uint8_t *c, uint32_t cmd, uint32_t cmdsize,
		      uint64_t off, struct sw_error *err)
{
	uint32_t name_off;
	size_t name;

	if (cmdsize < DYLIB_CMD_SIZE)
		return fail(err, off, "dylib command too small");
	name_off = macho_rd32(c + 8);
	if (name_off < DYLIB_CMD_SIZE || name_off >= cmdsize ||
	    pool_add(info, c + name_off, cmdsize - name_off, &name) < 0)
		return fail(err, off, "dylib name out of its command");
	if (cmd == LC_ID_DYLIB) {
		info->install_name = name;
		info->has_install_name = true;
		return 0;
	}
	if (info->ndylibs == SW_MACHO_INFO_MAX_DYLIBS)
		return fail(err, off, "too many dylibs");
	info->dylibs[info->ndylibs].cmd = cmd;
	info->dylibs[info->ndylibs].name = name;
	info->ndylibs++;
	return 0;
}

static int read_linkedit_cmd(const uint8_t *c, uint32_t cmdsize, uint64_t off,
			     struct sw_macho_range *ret, struct sw_error *err)
{
	if (cmdsize < LINKEDIT_CMD_SIZE)
		return fail(err, off, "linkedit command too small");
	ret->off = macho_rd32(c + 8);
	ret->size = macho_rd32(c + 12);
	ret->present = true;
	return 0;
}

static int read_command(struct sw_macho_info *info, const uint8_t *c, uint32_t cmd,
			uint32_t cmdsize, uint64_t off, struct sw_error *err)
{
	switch (cmd) {
	case LC_ID_DYLIB:
	case LC_LOAD_DYLIB:
	case LC_LOAD_WEAK_DYLIB:
	case LC_REEXPORT_DYLIB:
	case LC_LAZY_LOAD_DYLIB:
	case LC_LOAD_UPWARD_DYLIB:
		return read_dylib(info, c, cmd, cmdsize, off, err);
	case LC_UUID:
		if (cmdsize < UUID_CMD_SIZE)
			return fail(err, off, "uuid command too small");
		memcpy(info->uuid, c + 8, 16);
		info->has_uuid = true;
		return 0;
	case LC_BUILD_VERSION:
		if (cmdsize < BUILD_VERSION_CMD_SIZE)
			return fail(err, off, "build version command too small");
		info->platform = macho_rd32(c + 8);
		info->minos = macho_rd32(c + 12);
		info->sdk = macho_rd32(c + 16);
		info->has_build_version = true;
		return 0;
	case LC_SYMTAB:
		if (cmdsize < SYMTAB_CMD_SIZE)
			return fail(err, off, "symtab command too small");
		info->symtab.off = macho_rd32(c + 8);
		info->symtab.size = macho_rd32(c + 12); /* the count */
		info->strtab.off = macho_rd32(c + 16);
		info->strtab.size = macho_rd32(c + 20);
		info->symtab.present = info->strtab.present = true;
		return 0;
	case LC_DYLD_INFO:
	case LC_DYLD_INFO_ONLY:
		if (cmdsize < DYLD_INFO_CMD_SIZE)
			return fail(err, off, "dyld info command too small");
		for (int i = 0; i < 3; i++) {
			info->binds[i].off = macho_rd32(c + DYLD_INFO_OFF_BIND + 8 * i);
			info->binds[i].size = macho_rd32(c + DYLD_INFO_OFF_BIND + 8 * i + 4);
			info->binds[i].present = info->binds[i].size != 0;
		}
		info->trie.off = macho_rd32(c + DYLD_INFO_OFF_EXPORT);
		info->trie.size = macho_rd32(c + DYLD_INFO_OFF_EXPORT + 4);
		info->trie.present = true;
		return 0;
	case LC_DYLD_EXPORTS_TRIE:
		return read_linkedit_cmd(c, cmdsize, off, &info->trie, err);
	case LC_DYLD_CHAINED_FIXUPS:
		return read_linkedit_cmd(c, cmdsize, off, &info->chained, err);
	case LC_CODE_SIGNATURE:
		return read_linkedit_cmd(c, cmdsize, off, &info->code_signature, err);
	default:
		return 0;
	}
}

static int read_commands(struct sw_macho_info *info, const uint8_t *d, size_t size,
			 struct sw_error *err)
{
	uint32_t ncmds = macho_rd32(d + MH_OFF_NCMDS);
	uint32_t sizeofcmds = macho_rd32(d + MH_OFF_SIZEOFCMDS);
	size_t off = MH_SIZE_64;

	if (sizeofcmds > size - MH_SIZE_64)
		return fail(err, MH_OFF_SIZEOFCMDS, "load commands out of the file");
	if (ncmds > SW_MACHO_INFO_MAX_CMDS)
		return fail(err, MH_OFF_NCMDS, "too many load commands");
	for (uint32_t i = 0; i < ncmds; i++) {
		uint32_t cmd, cmdsize;
		int r;

		if (off + LC_HEADER_SIZE > MH_SIZE_64 + (size_t)sizeofcmds)
			return fail(err, off, "load command out of bounds");
		cmd = macho_rd32(d + off);
		cmdsize = macho_rd32(d + off + 4);
		if (cmdsize < LC_HEADER_SIZE || (cmdsize & 7) ||
		    cmdsize > MH_SIZE_64 + (size_t)sizeofcmds - off)
			return fail(err, off, "bad load command size");
		info->cmds[info->ncmds++] = cmd;
		r = read_command(info, d + off, cmd, cmdsize, off, err);
		if (r < 0)
			return r;
		off += cmdsize;
	}
	return 0;
}

static bool range_ok(const struct sw_macho_range *r, size_t size)
{
	return r->off <= size && r->size <= size - r->off;
}

static int read_symbols(struct sw_macho_info *info, const uint8_t *d, size_t size,
			struct sw_error *err)
{
	uint64_t symoff = info->symtab.off, nsyms = info->symtab.size;
	const uint8_t *strs = d + info->strtab.off;

	if (!info->symtab.present)
		return 0;
	if (symoff > size || nsyms > (size - symoff) / NLIST64_SIZE ||
	    !range_ok(&info->strtab, size))
		return fail(err, symoff, "symbol table out of the file");
	info->syms = calloc(nsyms ? nsyms : 1, sizeof(*info->syms));
	if (!info->syms)
		return sw_error_set(err, -ENOMEM, "out of memory for %llu symbols",
				    (unsigned long long)nsyms);
	for (uint64_t i = 0; i < nsyms; i++) {
		const uint8_t *n = d + symoff + i * NLIST64_SIZE;
		struct sw_macho_sym *s = &info->syms[info->nsyms];
		uint32_t strx = macho_rd32(n);

		s->type = n[4];
		if (s->type & N_STAB)
			continue;
		s->sect = n[5];
		s->desc = (uint16_t)(n[6] | n[7] << 8);
		s->value = macho_rd64(n + 8);
		if (strx >= info->strtab.size ||
		    pool_add(info, strs + strx, info->strtab.size - strx, &s->name) < 0)
			return fail(err, symoff + i * NLIST64_SIZE,
				    "symbol name out of the string table");
		info->nsyms++;
	}
	return 0;
}

int sw_macho_info_symbol_ordinal(const struct sw_macho_sym *s)
{
	unsigned ord = s->desc >> 8;

	if (ord == 0xfe)
		return SW_MACHO_ORDINAL_FLAT;
	if (ord == 0xff)
		return SW_MACHO_ORDINAL_EXECUTABLE;
	return (int)ord;
}

static int add_bind(struct sw_macho_info *info, size_t name, int ordinal, unsigned via)
{
	for (size_t i = 0; i < info->nbinds; i++) {
		struct sw_macho_bind *b = &info->bind_list[i];

		if (b->ordinal == ordinal && b->via == via &&
		    strcmp((char *)info->pool.data + b->name, (char *)info->pool.data + name) == 0)
			return 0;
	}
	if (info->nbinds == MAX_BINDS)
		return -E2BIG;
	if (info->nbinds == info->bind_cap) {
		size_t cap = info->bind_cap ? info->bind_cap * 2 : 32;
		struct sw_macho_bind *grown = realloc(info->bind_list, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		info->bind_list = grown;
		info->bind_cap = cap;
	}
	info->bind_list[info->nbinds++] = (struct sw_macho_bind){name, ordinal, via};
	return 0;
}

static int read_chained(struct sw_macho_info *info, const uint8_t *d, size_t size,
			struct sw_error *err)
{
	const struct sw_macho_range *cr = &info->chained;
	const uint8_t *h = d + cr->off;
	uint32_t imports_off, symbols_off, count, format;
	size_t entry;

	if (!cr->present)
		return 0;
	if (!range_ok(cr, size) || cr->size < CHAINED_HEADER_SIZE)
		return fail(err, cr->off, "chained fixups out of the file");
	imports_off = macho_rd32(h + 8);
	symbols_off = macho_rd32(h + 12);
	count = macho_rd32(h + 16);
	format = macho_rd32(h + 20);
	entry = format == DYLD_CHAINED_IMPORT ? 4 : format == DYLD_CHAINED_IMPORT_ADDEND ? 8 : 16;
	if (format < DYLD_CHAINED_IMPORT || format > DYLD_CHAINED_IMPORT_ADDEND64 ||
	    macho_rd32(h + 24) != 0)
		return fail(err, cr->off, "unknown chained import format");
	if (imports_off > cr->size || count > (cr->size - imports_off) / entry ||
	    symbols_off > cr->size)
		return fail(err, cr->off, "chained imports out of their data");
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *e = h + imports_off + i * entry;
		uint64_t v = format == DYLD_CHAINED_IMPORT_ADDEND64 ? macho_rd64(e) : macho_rd32(e);
		int ordinal = format == DYLD_CHAINED_IMPORT_ADDEND64 ? (int16_t)(v & 0xffff)
								     : (int8_t)(v & 0xff);
		uint64_t name_off = format == DYLD_CHAINED_IMPORT_ADDEND64 ? v >> 32 : v >> 9;
		size_t name;

		if (name_off >= cr->size - symbols_off ||
		    pool_add(info, h + symbols_off + name_off, cr->size - symbols_off - name_off,
			     &name) < 0)
			return fail(err, cr->off + imports_off + i * entry,
				    "chained import name out of bounds");
		if (add_bind(info, name, ordinal, SW_MACHO_VIA_CHAINED) < 0)
			return sw_error_set(err, -ENOMEM, "out of memory for imports");
	}
	return 0;
}

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift >= 64)
			return -EOVERFLOW;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Runs one bind-opcode stream, recording each bound (name, ordinal) once. */
static int run_binds(struct sw_macho_info *info, const uint8_t *p, const uint8_t *end, unsigned via)
{
	int ordinal = 0;
	size_t name = 0;
	bool have_name = false;
	uint64_t v;

	while (p < end) {
		uint8_t op = *p & BIND_OPCODE_MASK, imm = *p & BIND_IMMEDIATE_MASK;
		int r = 0;

		p++;
		switch (op) {
		case BIND_OPCODE_DONE:
		case BIND_OPCODE_SET_TYPE_IMM:
			break;
		case BIND_OPCODE_SET_DYLIB_ORDINAL_IMM:
			ordinal = imm;
			break;
		case BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB:
			r = uleb(&p, end, &v);
			ordinal = v > 0xffff ? 0xffff : (int)v;
			break;
		case BIND_OPCODE_SET_DYLIB_SPECIAL_IMM:
			ordinal = imm ? (int8_t)(BIND_OPCODE_MASK | imm) : 0;
			break;
		case BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM:
			if (pool_add(info, p, (size_t)(end - p), &name) < 0)
				return -EINVAL;
			p += strlen((const char *)p) + 1;
			have_name = true;
			break;
		case BIND_OPCODE_SET_ADDEND_SLEB:
		case BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB:
		case BIND_OPCODE_ADD_ADDR_ULEB:
		case BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB:
			r = uleb(&p, end, &v);
			break;
		case BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB:
			if ((r = uleb(&p, end, &v)) == 0)
				r = uleb(&p, end, &v);
			break;
		case BIND_OPCODE_THREADED:
			if (imm == 0)
				r = uleb(&p, end, &v);
			break;
		case BIND_OPCODE_DO_BIND:
		case BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED:
			break;
		default:
			return -EINVAL;
		}
		if (r < 0)
			return r;
		if (op >= BIND_OPCODE_DO_BIND &&
		    op <= BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB) {
			if (!have_name)
				return -EINVAL;
			if ((r = add_bind(info, name, ordinal, via)) < 0)
				return r;
		}
	}
	return 0;
}

static int read_binds(struct sw_macho_info *info, const uint8_t *d, size_t size,
		      struct sw_error *err)
{
	static const unsigned via[3] = {SW_MACHO_VIA_BIND, SW_MACHO_VIA_WEAK_BIND,
					SW_MACHO_VIA_LAZY_BIND};

	for (int i = 0; i < 3; i++) {
		const struct sw_macho_range *b = &info->binds[i];

		if (!b->present)
			continue;
		if (!range_ok(b, size) ||
		    run_binds(info, d + b->off, d + b->off + b->size, via[i]) < 0)
			return fail(err, b->off, "bad bind opcodes");
	}
	return 0;
}

static int read_exports(struct sw_macho_info *info, const uint8_t *d, size_t size,
			struct sw_error *err)
{
	struct sw_buf names;
	int r;

	if (!info->trie.present || !info->trie.size)
		return 0;
	if (!range_ok(&info->trie, size))
		return fail(err, info->trie.off, "export trie out of the file");
	sw_buf_init(&names, MAX_POOL);
	r = sw_macho_trie_walk(d + info->trie.off, info->trie.size, info->trie.off, &info->exports,
			       &info->nexports, &names, err);
	/* the trie's names go to the pool, offsets shifted */
	for (size_t i = 0; r == 0 && i < info->nexports; i++) {
		size_t at = 0;

		if (pool_add(info, names.data + info->exports[i].name,
			     names.len - info->exports[i].name, &at) < 0)
			r = sw_error_set(err, -ENOMEM, "out of memory for export names");
		info->exports[i].name = at;
	}
	sw_buf_finish(&names);
	return r;
}

int sw_macho_info_read(const uint8_t *d, size_t size, struct sw_macho_info *ret,
		       struct sw_error *err)
{
	struct sw_macho_info info = {0};
	int r;

	if (size < MH_SIZE_64 || macho_rd32(d) != MH_MAGIC_64)
		return sw_error_set(err, -EINVAL, "not a thin 64-bit little-endian mach-o file");
	info.cputype = (int32_t)macho_rd32(d + MH_OFF_CPUTYPE);
	info.cpusubtype = (int32_t)macho_rd32(d + MH_OFF_CPUSUBTYPE);
	info.filetype = macho_rd32(d + MH_OFF_FILETYPE);
	info.flags = macho_rd32(d + 24);
	sw_buf_init(&info.pool, MAX_POOL);
	if (sw_buf_putc(&info.pool, 0) < 0) /* offset 0 is the empty name */
		return sw_error_set(err, -ENOMEM, "out of memory");
	r = read_commands(&info, d, size, err);
	if (r == 0)
		r = read_symbols(&info, d, size, err);
	if (r == 0)
		r = read_chained(&info, d, size, err);
	if (r == 0)
		r = read_binds(&info, d, size, err);
	if (r == 0)
		r = read_exports(&info, d, size, err);
	if (r == 0 && info.code_signature.present && !range_ok(&info.code_signature, size))
		r = fail(err, info.code_signature.off, "code signature out of the file");
	if (r < 0) {
		sw_macho_info_finish(&info);
		return r;
	}
	sw_buf_putc(&info.pool, 0);
	info.names = (const char *)info.pool.data;
	*ret = info;
	return 0;
}

void sw_macho_info_finish(struct sw_macho_info *info)
{
	if (!info)
		return;
	free(info->syms);
	free(info->bind_list);
	free(info->exports);
	sw_buf_finish(&info->pool);
	memset(info, 0, sizeof(*info));
}
