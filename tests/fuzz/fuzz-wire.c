/*
 * libFuzzer target for the wire decoder: decodes a whole stream the way the
 * session does, message after message, including across a cut.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sw_wire_decoder *dec;
	if (!dec && sw_wire_decoder_new(&dec) < 0)
		return 0;
	sw_wire_decoder_reset(dec);
	size_t pos = 0;
	for (;;) {
		struct sw_wire_msg msg;
		struct sw_error err = {0};
		int n = sw_wire_decode(dec, data + pos, size - pos, pos, &msg, &err);
		if (n <= 0)
			break;
		if ((size_t)n > size - pos)
			__builtin_trap();
		if (msg.type == SW_MSG_SAMPLE && msg.sample.depth > SW_WIRE_MAX_FRAMES)
			__builtin_trap();
		pos += (size_t)n;
	}
	return 0;
}
