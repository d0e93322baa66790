/*
 * libFuzzer target: the agent's parser of client messages (control.c), fed
 * whatever a client could send, message after message as the streamer does.
 */
#include <stddef.h>
#include <stdint.h>

#include "control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		struct swa_control_msg msg;
		int r = swa_control_parse(data + off, size - off, &msg);
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	return 0;
}
