/* Cache files: temporary file, fsync, rename; mapped whole (publish.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "publish.h"

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_parts(int fd, const struct sw_part *parts, size_t n, int pad8)
{
	static const uint8_t zero[8];
	int r = 0;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (parts[i].len)
			r = write_all(fd, parts[i].data, parts[i].len);
		if (r >= 0 && pad8 && (parts[i].len & 7))
			r = write_all(fd, zero, 8 - (parts[i].len & 7));
	}
	return r;
}

int sw_publish(const char *path, const struct sw_part *parts, size_t n, int pad8)
{
	size_t len = 0;
	while (path[len])
		len++;
	char *tmp = malloc(len + 16);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len + 16, "%s.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		free(tmp);
		return e;
	}
	int r = write_parts(fd, parts, n, pad8);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}

int sw_map_whole(const char *path, size_t min, uint64_t max, void **ret, size_t *ret_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 &&
	    (!S_ISREG(st.st_mode) || st.st_size < (off_t)min || (uint64_t)st.st_size > max))
		r = -EINVAL;
	void *map =
	    r == 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (r == 0 && map == MAP_FAILED)
		r = -errno;
	close(fd);
	if (r < 0)
		return r;
	*ret = map;
	*ret_size = (size_t)st.st_size;
	return 0;
}

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

uint64_t sw_padded_size(const struct sw_part *parts, size_t n)
{
	uint64_t size = 0;
	for (size_t i = 0; i < n; i++)
		size += pad8(parts[i].len);
	return size;
}

bool sw_map_parts(const void *map, size_t size, size_t header_len, const uint64_t *lens, size_t n,
		  const void **starts)
{
	uint64_t at = pad8(header_len);
	for (size_t i = 0; i < n; i++) {
		if (at > size || lens[i] > size - at)
			return false;
		starts[i] = (const uint8_t *)map + at;
		at = pad8(at + lens[i]);
	}
	return at == size;
}
