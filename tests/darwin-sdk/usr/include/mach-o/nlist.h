/* Stand-in: symbol table entries of 64-bit Mach-O images. */
#ifndef SW_SDK_MACHO_NLIST_H
#define SW_SDK_MACHO_NLIST_H
#include <stdint.h>
struct nlist_64 {
	uint32_t n_strx;
	uint8_t n_type;
	uint8_t n_sect;
	uint16_t n_desc;
	uint64_t n_value;
};
#define N_STAB 0xe0
#define N_TYPE 0x0e
#define N_SECT 0x0e
#endif
