/*
 * The agent's listening socket: loopback TCP or a unix socket, never a
 * routable address.  STALLWATCH_LISTEN is "127.0.0.1:PORT" (any 127/8
 * address), "[::1]:PORT", "localhost:PORT" or "unix:PATH"; unset, the agent
 * takes 127.0.0.1:27300 or the next free port up to 27309.  Names are not
 * resolved (no DNS inside someone else's app): only those literal forms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "wire/wire.h"

static int listen_unix(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path) || !path[0])
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = swa_plat_socket(AF_UNIX, SOCK_STREAM);
	if (fd < 0)
		return fd;
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		/* a stale socket nobody answers on is ours to replace */
		int probe = swa_plat_socket(AF_UNIX, SOCK_STREAM);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
		    errno == ECONNREFUSED)
			unlink(path);
		if (probe >= 0)
			close(probe);
	}
	mode_t old = umask(077);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 4) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int listen_inet(int family, const void *addr, unsigned port, int *ret_fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		memcpy(&in->sin_addr, addr, 4);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		memcpy(&in6->sin6_addr, addr, 16);
		len = sizeof(*in6);
	}
	int fd = swa_plat_socket(family, SOCK_STREAM);
	if (fd < 0)
		return fd;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int swa_listen_open(const char *spec, int *ret_fd, char *desc, size_t desc_len)
{
	if (strncmp(spec, "unix:", 5) == 0) {
		snprintf(desc, desc_len, "%s", spec);
		return listen_unix(spec + 5, ret_fd);
	}
	uint8_t addr[16];
	int family = AF_INET;
	unsigned first = SW_WIRE_AGENT_PORT_FIRST, last = SW_WIRE_AGENT_PORT_LAST;
	if (spec[0]) {
		char host[64];
		const char *colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		char *end;
		unsigned long port = strtoul(colon + 1, &end, 10);
		if (*end || port == 0 || port > 65535)
			return -EINVAL;
		first = last = (unsigned)port;
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			host[strlen(host) - 1] = '\0';
			memmove(host, host + 1, strlen(host));
		}
		if (!strcmp(host, "localhost"))
			strcpy(host, "127.0.0.1");
		if (inet_pton(AF_INET, host, addr) == 1) {
			if (addr[0] != 127)
				return -EADDRNOTAVAIL; /* not loopback: refused */
		} else if (inet_pton(AF_INET6, host, addr) == 1) {
			static const uint8_t loop6[16] = {[15] = 1};
			if (memcmp(addr, loop6, 16) != 0)
				return -EADDRNOTAVAIL;
			family = AF_INET6;
		} else {
			return -EINVAL;
		}
	} else {
		inet_pton(AF_INET, "127.0.0.1", addr);
	}
	int r = -EADDRINUSE;
	for (unsigned port = first; port <= last; port++) {
		r = listen_inet(family, addr, port, ret_fd);
		if (r == 0) {
			char text[64];
			inet_ntop(family, addr, text, sizeof(text));
			snprintf(desc, desc_len, family == AF_INET6 ? "[%s]:%u" : "%s:%u", text,
				 port);
			return 0;
		}
	}
	return r;
}
