/*
 * libFuzzer target for the GDB remote packet parser: consumes a whole
 * stream packet by packet, as the launcher reads debugserver's replies.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/error.h"
#include "device/gdb-remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[256];
	size_t pos = 0;
	while (pos < size) {
		size_t used = 0;
		struct sw_error err = {0};
		int r = sw_gdb_parse((const char *)data + pos, size - pos, out, sizeof(out), &used,
				     &err);
		if (r < 0)
			break;
		if (used > size - pos || (r == 1 && strlen(out) >= sizeof(out)))
			__builtin_trap();
		if (used == 0)
			break;
		pos += used;
	}
	return 0;
}
