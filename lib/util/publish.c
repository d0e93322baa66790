/* Temporary file, fsync, rename: see publish.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
