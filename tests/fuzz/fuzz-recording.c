/*
 * libFuzzer target for the recording reader: the input is a whole .swtrace
 * file, read through a memfd as `report` would read it from disk.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wire/recording.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-recording", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return 0;
	}
	struct sw_recording *rec;
	struct sw_error err = {0};
	if (sw_recording_open_fd(fd, &rec, &err) < 0)
		return 0;
	struct sw_wire_msg msg;
	while (sw_recording_next(rec, &msg, &err) == 1)
		;
	sw_recording_free(rec);
	return 0;
}
