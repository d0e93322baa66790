/*
 * Universal (fat) Mach-O files and slice selection: lists the slices of a
 * thin or universal file with their architecture names and UUIDs, and picks
 * the one asked for.  Also the architecture naming shared by every Mach-O
 * consumer (arm64e from its cpusubtype, capability bits stripped).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "util/str.h"
#include "macho-format.h"
#include "macho.h"

void sw_macho_arch_name(int32_t cputype, int32_t cpusubtype, char buf[16])
{
	uint32_t sub = (uint32_t)cpusubtype & ~CPU_SUBTYPE_MASK;
	const char *name = NULL;

	switch (cputype) {
	case CPU_TYPE_X86:
		name = "i386";
		break;
	case CPU_TYPE_X86_64:
		name = sub == CPU_SUBTYPE_X86_64_H ? "x86_64h" : "x86_64";
		break;
	case CPU_TYPE_ARM64:
		name = sub == CPU_SUBTYPE_ARM64E ? "arm64e" : "arm64";
		break;
	case CPU_TYPE_ARM64_32:
		name = "arm64_32";
		break;
	case CPU_TYPE_POWERPC:
		name = "ppc";
		break;
	case CPU_TYPE_POWERPC64:
		name = "ppc64";
		break;
	case CPU_TYPE_ARM:
		switch (sub) {
		case CPU_SUBTYPE_ARM_V6:
			name = "armv6";
			break;
		case CPU_SUBTYPE_ARM_V7:
			name = "armv7";
			break;
		case CPU_SUBTYPE_ARM_V7F:
			name = "armv7f";
			break;
		case CPU_SUBTYPE_ARM_V7S:
			name = "armv7s";
			break;
		case CPU_SUBTYPE_ARM_V7K:
			name = "armv7k";
			break;
		case CPU_SUBTYPE_ARM_V6M:
			name = "armv6m";
			break;
		case CPU_SUBTYPE_ARM_V7M:
			name = "armv7m";
			break;
		case CPU_SUBTYPE_ARM_V7EM:
			name = "armv7em";
			break;
		default:
			name = "arm";
			break;
		}
		break;
	}
	if (name)
		snprintf(buf, 16, "%s", name);
	else
		snprintf(buf, 16, "cpu%d.%u", (int)cputype, (unsigned)sub);
}

void sw_macho_uuid_str(const uint8_t u[16], char buf[37])
{
	static const char hex[] = "0123456789ABCDEF";
	char *p = buf;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = 0;
}

int sw_macho_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t u[16];
	int n = 0;

	for (; *s && n < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		v = sw_hex_value(*s);
		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			u[n / 2] = (uint8_t)(v << 4);
		else
			u[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32 || *s)
		return -EINVAL;
	memcpy(uuid, u, 16);
	return 0;
}

bool sw_macho_is_macho(const uint8_t *data, size_t size)
{
	uint32_t le, be;

	if (size < 8)
		return false;
	le = macho_rd32(data);
	be = macho_rd32be(data);
	if (le == MH_MAGIC || le == MH_MAGIC_64 || le == MH_CIGAM || le == MH_CIGAM_64)
		return true;
	/* Java class files share 0xcafebabe; their second word is >= 45. */
	return (be == FAT_MAGIC || be == FAT_MAGIC_64) && macho_rd32be(data + 4) > 0 &&
	       macho_rd32be(data + 4) <= SW_MACHO_MAX_SLICES;
}

/*
 * Reads a thin header at data (the slice, size bytes; off is its offset in
 * the file, for messages): architecture, file type and LC_UUID.
 */
static int peek_thin(const uint8_t *data, size_t size, uint64_t off, struct sw_macho_slice *s,
		     struct sw_error *err)
{
	uint32_t magic, ncmds, sizeofcmds;
	size_t hsize, pos;

	if (size < MH_SIZE_32)
		return sw_error_set(err, -EINVAL, "truncated mach header at offset 0x%llx",
				    (unsigned long long)off);
	magic = macho_rd32(data);
	if (magic == MH_CIGAM || magic == MH_CIGAM_64)
		return sw_error_set(err, -ENOTSUP,
				    "big-endian mach-o at offset 0x%llx is not supported",
				    (unsigned long long)off);
	if (magic != MH_MAGIC && magic != MH_MAGIC_64)
		return sw_error_set(err, -EINVAL, "bad mach-o magic 0x%08x at offset 0x%llx", magic,
				    (unsigned long long)off);
	hsize = magic == MH_MAGIC_64 ? MH_SIZE_64 : MH_SIZE_32;
	if (size < hsize)
		return sw_error_set(err, -EINVAL, "truncated mach header at offset 0x%llx",
				    (unsigned long long)off);
	s->cputype = (int32_t)macho_rd32(data + MH_OFF_CPUTYPE);
	s->cpusubtype = (int32_t)(macho_rd32(data + MH_OFF_CPUSUBTYPE) & ~CPU_SUBTYPE_MASK);
	s->filetype = macho_rd32(data + MH_OFF_FILETYPE);
	sw_macho_arch_name(s->cputype, s->cpusubtype, s->arch);
	ncmds = macho_rd32(data + MH_OFF_NCMDS);
	sizeofcmds = macho_rd32(data + MH_OFF_SIZEOFCMDS);
	if (sizeofcmds > size - hsize)
		return sw_error_set(err, -EINVAL,
				    "load commands (%u bytes) overrun the file at offset 0x%llx",
				    sizeofcmds, (unsigned long long)(off + hsize));
	pos = hsize;
	for (uint32_t i = 0; i < ncmds; i++) {
		uint32_t cmd, cmdsize;

		if (pos + LC_HEADER_SIZE > hsize + sizeofcmds)
			return sw_error_set(err, -EINVAL, "truncated load command at offset 0x%llx",
					    (unsigned long long)(off + pos));
		cmd = macho_rd32(data + pos);
		cmdsize = macho_rd32(data + pos + 4);
		if (cmdsize < LC_HEADER_SIZE || cmdsize > hsize + sizeofcmds - pos)
			return sw_error_set(err, -EINVAL,
					    "bad load command size %u at offset 0x%llx", cmdsize,
					    (unsigned long long)(off + pos));
		if (cmd == LC_UUID && cmdsize >= UUID_CMD_SIZE) {
			memcpy(s->uuid, data + pos + 8, 16);
			s->has_uuid = true;
		}
		pos += cmdsize;
	}
	return 0;
}

static int fat_slices(const uint8_t *data, size_t size, struct sw_macho_slice *out, size_t max,
		      size_t *ret_n, struct sw_error *err)
{
	bool is64 = macho_rd32be(data) == FAT_MAGIC_64;
	uint32_t n = macho_rd32be(data + 4);
	size_t esize = is64 ? FAT_ARCH64_SIZE : FAT_ARCH_SIZE;
	size_t count = 0;

	if (n == 0 || n > SW_MACHO_MAX_SLICES)
		return sw_error_set(err, -EINVAL, "bad universal slice count %u at offset 0x4", n);
	if ((size - FAT_HEADER_SIZE) / esize < n)
		return sw_error_set(err, -EINVAL, "truncated universal header at offset 0x8");
	for (uint32_t i = 0; i < n && count < max; i++) {
		const uint8_t *e = data + FAT_HEADER_SIZE + i * esize;
		struct sw_macho_slice *s = &out[count];
		uint64_t off = is64 ? macho_rd64be(e + 8) : macho_rd32be(e + 8);
		uint64_t len = is64 ? macho_rd64be(e + 16) : macho_rd32be(e + 12);
		int r;

		memset(s, 0, sizeof(*s));
		if (off > size || len > size - off)
			return sw_error_set(err, -EINVAL,
					    "universal slice %u (offset 0x%llx, size 0x%llx) at "
					    "offset 0x%zx is out of the file",
					    i, (unsigned long long)off, (unsigned long long)len,
					    (size_t)(e - data));
		r = peek_thin(data + off, len, off, s, err);
		if (r < 0)
			return r;
		/* The universal header's cputype is what tools select by; they agree normally. */
		s->offset = off;
		s->size = len;
		count++;
	}
	*ret_n = count;
	return 0;
}

int sw_macho_slices(const uint8_t *data, size_t size, struct sw_macho_slice *out, size_t max,
		    size_t *ret_n, struct sw_error *err)
{
	uint32_t be;
	int r;

	if (max == 0)
		return sw_error_set(err, -EINVAL, "no room for slices");
	if (size < 8)
		return sw_error_set(err, -EINVAL, "file too short for mach-o (%zu bytes)", size);
	be = macho_rd32be(data);
	if (be == FAT_MAGIC || be == FAT_MAGIC_64)
		return fat_slices(data, size, out, max, ret_n, err);
	memset(out, 0, sizeof(*out));
	r = peek_thin(data, size, 0, out, err);
	if (r < 0)
		return r;
	out->size = size;
	*ret_n = 1;
	return 0;
}

static void list_slices(const struct sw_macho_slice *slices, size_t n, struct sw_buf *b)
{
	for (size_t i = 0; i < n; i++)
		sw_buf_printf(b, "%s%s", i ? ", " : "", slices[i].arch);
}

/* Other tools' names for the same architectures (ELF, Debian, GNU triples). */
static const char *canonical_arch(const char *arch)
{
	static const char *const alias[][2] = {
	    {"aarch64", "arm64"}, {"amd64", "x86_64"}, {"x86-64", "x86_64"},
	    {"i686", "i386"},     {"x86", "i386"},     {"armv7a", "armv7"},
	};

	for (size_t i = 0; arch && i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strcmp(arch, alias[i][0]) == 0)
			return alias[i][1];
	return arch;
}

int sw_macho_pick_slice(const struct sw_macho_slice *slices, size_t n, const char *arch,
			struct sw_error *err)
{
	struct sw_buf b;
	int found = -1, r;

	if (arch && !*arch)
		arch = NULL;
	arch = canonical_arch(arch);

	if (n == 1 && !arch)
		return 0;
	for (size_t i = 0; arch && i < n; i++) {
		if (strcmp(slices[i].arch, arch) == 0) {
			found = (int)i;
			break;
		}
	}
	if (found >= 0)
		return found;
	sw_buf_init(&b, 4096);
	list_slices(slices, n, &b);
	if (!arch)
		r = sw_error_set(err, -EINVAL,
				 "universal file has %zu slices (%s): choose an architecture", n,
				 sw_buf_str(&b));
	else
		r = sw_error_set(err, -ENOENT, "no slice for architecture '%s' (slices: %s)", arch,
				 sw_buf_str(&b));
	sw_buf_finish(&b);
	return r;
}
