/*
 * Mach-O and universal-file layouts, written from the header layouts Apple
 * documents (<mach-o/loader.h>, <mach-o/fat.h>, <mach-o/nlist.h>): the
 * constants and byte offsets the readers in macho*.c use.  Structures are
 * never overlaid on the file; fields are read at these offsets, so
 * alignment and endianness stay explicit.
 */
#ifndef SW_MACHO_FORMAT_H
#define SW_MACHO_FORMAT_H

#include <stdint.h>
#include <string.h>

/* Magic numbers as read little-endian from the first four bytes. */
#define MH_MAGIC    0xfeedfaceu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM    0xcefaedfeu
#define MH_CIGAM_64 0xcffaedfeu
/* Universal headers are big-endian; these are their values read big-endian. */
#define FAT_MAGIC    0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu

/* mach_header (28 bytes) and mach_header_64 (32 bytes). */
#define MH_OFF_CPUTYPE    4
#define MH_OFF_CPUSUBTYPE 8
#define MH_OFF_FILETYPE   12
#define MH_OFF_NCMDS      16
#define MH_OFF_SIZEOFCMDS 20
#define MH_SIZE_32        28
#define MH_SIZE_64        32

#define MH_OBJECT  0x1
#define MH_EXECUTE 0x2
#define MH_DYLIB   0x6
#define MH_BUNDLE  0x8
#define MH_DSYM    0xa

/* fat_header (8 bytes), fat_arch (20 bytes), fat_arch_64 (32 bytes). */
#define FAT_HEADER_SIZE 8
#define FAT_ARCH_SIZE   20
#define FAT_ARCH64_SIZE 32

#define CPU_ARCH_ABI64     0x01000000
#define CPU_ARCH_ABI64_32  0x02000000
#define CPU_TYPE_X86       7
#define CPU_TYPE_X86_64    (CPU_TYPE_X86 | CPU_ARCH_ABI64)
#define CPU_TYPE_ARM       12
#define CPU_TYPE_ARM64     (CPU_TYPE_ARM | CPU_ARCH_ABI64)
#define CPU_TYPE_ARM64_32  (CPU_TYPE_ARM | CPU_ARCH_ABI64_32)
#define CPU_TYPE_POWERPC   18
#define CPU_TYPE_POWERPC64 (CPU_TYPE_POWERPC | CPU_ARCH_ABI64)
/* The capability bits (arm64e's pointer-authentication ABI, x86_64's LIB64). */
#define CPU_SUBTYPE_MASK 0xff000000u

#define CPU_SUBTYPE_X86_64_H  8
#define CPU_SUBTYPE_ARM_V6    6
#define CPU_SUBTYPE_ARM_V7    9
#define CPU_SUBTYPE_ARM_V7F   10
#define CPU_SUBTYPE_ARM_V7S   11
#define CPU_SUBTYPE_ARM_V7K   12
#define CPU_SUBTYPE_ARM_V6M   14
#define CPU_SUBTYPE_ARM_V7M   15
#define CPU_SUBTYPE_ARM_V7EM  16
#define CPU_SUBTYPE_ARM64_ALL 0
#define CPU_SUBTYPE_ARM64_V8  1
#define CPU_SUBTYPE_ARM64E    2

/* Load commands: cmd and cmdsize, then the command's own fields. */
#define LC_REQ_DYLD            0x80000000u
#define LC_SEGMENT             0x1
#define LC_SYMTAB              0x2
#define LC_SEGMENT_64          0x19
#define LC_UUID                0x1b
#define LC_DYLD_INFO           0x22
#define LC_DYLD_INFO_ONLY      (0x22 | LC_REQ_DYLD)
#define LC_FUNCTION_STARTS     0x26
#define LC_DYLD_EXPORTS_TRIE   (0x33 | LC_REQ_DYLD)
#define LC_DYLD_CHAINED_FIXUPS (0x34 | LC_REQ_DYLD)
#define LC_LOAD_DYLIB          0xc
#define LC_ID_DYLIB            0xd
#define LC_LOAD_WEAK_DYLIB     (0x18 | LC_REQ_DYLD)
#define LC_CODE_SIGNATURE      0x1d
#define LC_REEXPORT_DYLIB      (0x1f | LC_REQ_DYLD)
#define LC_LAZY_LOAD_DYLIB     0x20
#define LC_LOAD_UPWARD_DYLIB   (0x23 | LC_REQ_DYLD)
#define LC_BUILD_VERSION       0x32

#define LC_HEADER_SIZE 8
/* segment_command (56 bytes) / section (68 bytes). */
#define SEG32_SIZE  56
#define SECT32_SIZE 68
/* segment_command_64 (72 bytes) / section_64 (80 bytes). */
#define SEG64_SIZE        72
#define SECT64_SIZE       80
#define SEG_OFF_SEGNAME   8
#define SECT_OFF_SECTNAME 0
#define SECT_OFF_SEGNAME  16
#define SECT_OFF_ADDR     32
/* symtab_command (24 bytes): symoff, nsyms, stroff, strsize. */
#define SYMTAB_CMD_SIZE 24
/* uuid_command (24 bytes). */
#define UUID_CMD_SIZE 24
/* linkedit_data_command (16 bytes): dataoff, datasize. */
#define LINKEDIT_CMD_SIZE 16
/* dyld_info_command (48 bytes); export_off and export_size are last. */
#define DYLD_INFO_CMD_SIZE   48
#define DYLD_INFO_OFF_EXPORT 40
#define DYLD_INFO_OFF_BIND   16 /* then weak bind at 24, lazy bind at 32 */
/* dylib_command (24 bytes): the name's offset from the command at 8. */
#define DYLIB_CMD_SIZE 24
/* build_version_command (24 bytes): platform, minos, sdk, ntools. */
#define BUILD_VERSION_CMD_SIZE 24

/* dyld_chained_fixups_header (28 bytes) and its import formats. */
#define CHAINED_HEADER_SIZE          28
#define DYLD_CHAINED_IMPORT          1
#define DYLD_CHAINED_IMPORT_ADDEND   2
#define DYLD_CHAINED_IMPORT_ADDEND64 3

/* Bind opcodes (LC_DYLD_INFO): high nibble the opcode, low the immediate. */
#define BIND_OPCODE_MASK                             0xf0
#define BIND_IMMEDIATE_MASK                          0x0f
#define BIND_OPCODE_DONE                             0x00
#define BIND_OPCODE_SET_DYLIB_ORDINAL_IMM            0x10
#define BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB           0x20
#define BIND_OPCODE_SET_DYLIB_SPECIAL_IMM            0x30
#define BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM    0x40
#define BIND_OPCODE_SET_TYPE_IMM                     0x50
#define BIND_OPCODE_SET_ADDEND_SLEB                  0x60
#define BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB      0x70
#define BIND_OPCODE_ADD_ADDR_ULEB                    0x80
#define BIND_OPCODE_DO_BIND                          0x90
#define BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB            0xa0
#define BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED      0xb0
#define BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB 0xc0
#define BIND_OPCODE_THREADED                         0xd0

/* Section flags. */
#define SECTION_TYPE             0x000000ffu
#define S_ZEROFILL               0x1
#define S_GB_ZEROFILL            0xc
#define S_THREAD_LOCAL_ZEROFILL  0x12
#define S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define S_ATTR_SOME_INSTRUCTIONS 0x00000400u

/* nlist (12 bytes) and nlist_64 (16 bytes). */
#define NLIST32_SIZE 12
#define NLIST64_SIZE 16
#define N_STAB       0xe0
#define N_TYPE       0x0e
#define N_EXT        0x01
#define N_SECT       0xe
#define N_UNDF       0x0

/* Export trie terminal flags. */
#define EXPORT_SYMBOL_FLAGS_KIND_MASK         0x03
#define EXPORT_SYMBOL_FLAGS_KIND_REGULAR      0x00
#define EXPORT_SYMBOL_FLAGS_KIND_THREAD_LOCAL 0x01
#define EXPORT_SYMBOL_FLAGS_KIND_ABSOLUTE     0x02
#define EXPORT_SYMBOL_FLAGS_REEXPORT          0x08
#define EXPORT_SYMBOL_FLAGS_STUB_AND_RESOLVER 0x10

static inline uint32_t macho_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t macho_rd64(const uint8_t *p)
{
	return (uint64_t)macho_rd32(p) | (uint64_t)macho_rd32(p + 4) << 32;
}

static inline uint32_t macho_rd32be(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t macho_rd64be(const uint8_t *p)
{
	return (uint64_t)macho_rd32be(p) << 32 | (uint64_t)macho_rd32be(p + 4);
}

/* Compares a fixed 16-byte, possibly unterminated, name field with s. */
static inline int macho_name_eq(const uint8_t *field, const char *s)
{
	size_t n = strlen(s);
	return n <= 16 && memcmp(field, s, n) == 0 && (n == 16 || field[n] == 0);
}

#endif
