/*
 * Connecting to an agent over TCP or a unix socket (see transport.h).  The
 * connect is non-blocking and polled, so an address that swallows packets
 * costs the timeout, not the kernel's minutes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport.h"

int sw_transport_wait(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	for (;;) {
		int r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			return -EINTR;
		if (r < 0)
			return -errno;
		return r > 0;
	}
}

static int finish_connect(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	int r = poll(&pfd, 1, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -errno;
	return soerr ? -soerr : 0;
}

static int connect_addr(const struct sockaddr *sa, socklen_t salen, int family, int timeout_ms,
			int *ret_fd)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (connect(fd, sa, salen) < 0)
		r = errno == EINPROGRESS || errno == EAGAIN ? finish_connect(fd, timeout_ms)
							    : -errno;
	if (r == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int connect_unix(const char *path, int timeout_ms, int *ret_fd, struct sw_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!path[0] || strlen(path) >= sizeof(sa.sun_path))
		return sw_error_set(err, -ENAMETOOLONG, "socket path too long or empty");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int r = connect_addr((struct sockaddr *)&sa, sizeof(sa), AF_UNIX, timeout_ms, ret_fd);
	if (r < 0)
		return sw_error_set(err, r, "%s", strerror(-r));
	return 0;
}

int sw_transport_connect(const char *spec, int timeout_ms, int *ret_fd, struct sw_error *err)
{
	if (strncmp(spec, "unix:", 5) == 0)
		return connect_unix(spec + 5, timeout_ms, ret_fd, err);
	const char *colon = strrchr(spec, ':');
	char host[256];
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) || !colon[1])
		return sw_error_set(err, -EINVAL, "expected HOST:PORT or unix:PATH");
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	if (host[0] == '[') {
		size_t n = strlen(host);
		if (n < 3 || host[n - 1] != ']')
			return sw_error_set(err, -EINVAL, "unbalanced brackets in address");
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *list = NULL;
	int gai = getaddrinfo(host, colon + 1, &hints, &list);
	if (gai)
		return sw_error_set(err, -EHOSTUNREACH, "%s", gai_strerror(gai));
	int r = -ECONNREFUSED;
	for (struct addrinfo *ai = list; ai; ai = ai->ai_next) {
		r = connect_addr(ai->ai_addr, ai->ai_addrlen, ai->ai_family, timeout_ms, ret_fd);
		if (r == 0)
			break;
	}
	freeaddrinfo(list);
	if (r < 0)
		return sw_error_set(err, r, "%s", strerror(-r));
	return 0;
}
