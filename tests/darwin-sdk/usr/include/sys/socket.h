/* Stand-in: BSD sockets as Darwin lays them out (a length byte leads each address). */
#ifndef SW_SDK_SYS_SOCKET_H
#define SW_SDK_SYS_SOCKET_H
#include <stdint.h>
#include <sys/types.h>
typedef uint32_t socklen_t;
typedef uint8_t sa_family_t;
struct sockaddr {
	uint8_t sa_len;
	sa_family_t sa_family;
	char sa_data[14];
};
struct sockaddr_storage {
	uint8_t ss_len;
	sa_family_t ss_family;
	char ss_pad1[6];
	int64_t ss_align;
	char ss_pad2[112];
};
#define AF_UNIX      1
#define AF_INET      2
#define AF_INET6     30
#define SOCK_STREAM  1
#define SOCK_DGRAM   2
#define SOL_SOCKET   0xffff
#define SO_REUSEADDR 0x0004
#define SO_NOSIGPIPE 0x1022
#define MSG_PEEK     0x2
#define MSG_DONTWAIT 0x80
int socket(int domain, int type, int protocol);
int bind(int fd, const struct sockaddr *sa, socklen_t len);
int listen(int fd, int backlog);
int accept(int fd, struct sockaddr *sa, socklen_t *len);
int connect(int fd, const struct sockaddr *sa, socklen_t len);
ssize_t send(int fd, const void *buf, size_t len, int flags);
ssize_t recv(int fd, void *buf, size_t len, int flags);
int setsockopt(int fd, int level, int name, const void *value, socklen_t len);
#endif
