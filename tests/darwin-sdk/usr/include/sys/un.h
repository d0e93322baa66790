/* Stand-in: unix-domain socket addresses. */
#ifndef SW_SDK_SYS_UN_H
#define SW_SDK_SYS_UN_H
#include <sys/socket.h>
struct sockaddr_un {
	uint8_t sun_len;
	sa_family_t sun_family;
	char sun_path[104];
};
#endif
