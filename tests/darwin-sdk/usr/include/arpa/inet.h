/* Stand-in: text to address and back. */
#ifndef SW_SDK_ARPA_INET_H
#define SW_SDK_ARPA_INET_H
#include <netinet/in.h>
int inet_pton(int family, const char *text, void *addr);
const char *inet_ntop(int family, const void *addr, char *text, socklen_t len);
#endif
