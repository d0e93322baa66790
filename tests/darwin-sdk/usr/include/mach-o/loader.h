/* Stand-in: the Mach-O header and load commands the agent reads in memory. */
#ifndef SW_SDK_MACHO_LOADER_H
#define SW_SDK_MACHO_LOADER_H
#include <stdint.h>
struct mach_header {
	uint32_t magic;
	int32_t cputype;
	int32_t cpusubtype;
	uint32_t filetype;
	uint32_t ncmds;
	uint32_t sizeofcmds;
	uint32_t flags;
};
struct mach_header_64 {
	uint32_t magic;
	int32_t cputype;
	int32_t cpusubtype;
	uint32_t filetype;
	uint32_t ncmds;
	uint32_t sizeofcmds;
	uint32_t flags;
	uint32_t reserved;
};
#define MH_MAGIC_64       0xfeedfacfu
#define MH_EXECUTE        0x2
#define MH_DYLIB          0x6
#define MH_DYLINKER       0x7
#define MH_DYLIB_IN_CACHE 0x80000000u
struct load_command {
	uint32_t cmd;
	uint32_t cmdsize;
};
#define LC_SYMTAB     0x2
#define LC_SEGMENT_64 0x19
#define LC_UUID       0x1b
struct segment_command_64 {
	uint32_t cmd;
	uint32_t cmdsize;
	char segname[16];
	uint64_t vmaddr;
	uint64_t vmsize;
	uint64_t fileoff;
	uint64_t filesize;
	int32_t maxprot;
	int32_t initprot;
	uint32_t nsects;
	uint32_t flags;
};
struct section_64 {
	char sectname[16];
	char segname[16];
	uint64_t addr;
	uint64_t size;
	uint32_t offset;
	uint32_t align;
	uint32_t reloff;
	uint32_t nreloc;
	uint32_t flags;
	uint32_t reserved1;
	uint32_t reserved2;
	uint32_t reserved3;
};
struct uuid_command {
	uint32_t cmd;
	uint32_t cmdsize;
	uint8_t uuid[16];
};
struct symtab_command {
	uint32_t cmd;
	uint32_t cmdsize;
	uint32_t symoff;
	uint32_t nsyms;
	uint32_t stroff;
	uint32_t strsize;
};
#endif
