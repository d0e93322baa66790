/*
 * Where the agent puts its token and how `attach` finds it, and the token
 * `run` makes for the agent it starts.  The places must match the agent's
 * own (injector/linux/token-linux.c); stallwatch-agent(7) describes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "token.h"

static int token_path(const char *connect, char *path, size_t cap)
{
	int n;
	if (!strncmp(connect, "unix:", 5)) {
		n = snprintf(path, cap, "%s.token", connect + 5);
	} else {
		const char *port = strrchr(connect, ':');
		const char *xdg = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR");
		if (!port)
			return -EINVAL;
		if (xdg && xdg[0] == '/')
			n = snprintf(path, cap, "%s/stallwatch/agent-%s.token", xdg, port + 1);
		else
			n = snprintf(path, cap, "%s/stallwatch-%u/agent-%s.token",
				     tmp && tmp[0] == '/' ? tmp : "/tmp", (unsigned)getuid(),
				     port + 1);
	}
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int sw_host_agent_token(const char *connect, char *buf, size_t cap, char *path, size_t path_cap)
{
	int r = token_path(connect, path, path_cap);
	if (r < 0) {
		path[0] = '\0';
		return r;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -ENODATA;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf[0] ? 0 : -ENODATA;
}

int sw_host_new_token(char *buf, size_t cap)
{
	unsigned char raw[16];
	if (cap < 2 * sizeof(raw) + 1)
		return -ENOSPC;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	return 0;
}
