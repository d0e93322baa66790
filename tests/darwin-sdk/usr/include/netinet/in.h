/* Stand-in: internet addresses. */
#ifndef SW_SDK_NETINET_IN_H
#define SW_SDK_NETINET_IN_H
#include <sys/socket.h>
typedef uint16_t in_port_t;
typedef uint32_t in_addr_t;
struct in_addr {
	in_addr_t s_addr;
};
struct in6_addr {
	uint8_t s6_addr[16];
};
struct sockaddr_in {
	uint8_t sin_len;
	sa_family_t sin_family;
	in_port_t sin_port;
	struct in_addr sin_addr;
	char sin_zero[8];
};
struct sockaddr_in6 {
	uint8_t sin6_len;
	sa_family_t sin6_family;
	in_port_t sin6_port;
	uint32_t sin6_flowinfo;
	struct in6_addr sin6_addr;
	uint32_t sin6_scope_id;
};
#define IPPROTO_TCP 6
#define htons(x)    __builtin_bswap16((uint16_t)(x))
#define ntohs(x)    __builtin_bswap16((uint16_t)(x))
#endif
