/*
 * libFuzzer target for the DWARF reader alone.  The input is a packed set
 * of sections: ten little-endian 32-bit sizes (info, abbrev, line, str,
 * line_str, str_offsets, addr, ranges, rnglists, aranges), a flags byte
 * (bit 0: big-endian, bit 1: 4-byte addresses), then the sections' bytes in
 * that order.  tests/fuzz/make-dwarf-seed.py packs real objects this way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 41)
		return 0;
	uint8_t *copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct sw_dwarf_sections s = {0};
	struct sw_section *order[] = {&s.info,     &s.abbrev,      &s.line, &s.str,
				      &s.line_str, &s.str_offsets, &s.addr, &s.ranges,
				      &s.rnglists, &s.aranges};
	size_t off = 41;
	for (int i = 0; i < 10; i++) {
		uint32_t n = (uint32_t)copy[4 * i] | (uint32_t)copy[4 * i + 1] << 8 |
			     (uint32_t)copy[4 * i + 2] << 16 | (uint32_t)copy[4 * i + 3] << 24;
		if (n > size - off)
			n = (uint32_t)(size - off);
		order[i]->data = copy + off;
		order[i]->size = n;
		off += n;
	}
	s.big_endian = copy[40] & 1;
	s.addr_size = (copy[40] & 2) ? 4 : 8;
	struct sw_dwarf *d = NULL;
	struct sw_error err;
	if (sw_dwarf_new(&s, &d, &err) >= 0) {
		struct sw_dwarf_frame fr[16];
		sw_dwarf_lookup(d, 0, 0, fr, 16, &err); /* builds the unit map */
		for (size_t i = 0; i < d->ncu_map && i < 32; i++) {
			sw_dwarf_lookup(d, d->cu_map[i].lo, 0, fr, 16, &err);
			sw_dwarf_lookup(d, d->cu_map[i].lo + 9, SW_DWARF_NO_INLINES, fr, 16, &err);
			sw_dwarf_lookup(d, d->cu_map[i].hi - 1, 0, fr, 16, &err);
		}
		sw_dwarf_free(d);
	}
	free(copy);
	return 0;
}
