/* Stand-in: the limits clang's own <limits.h> leaves to the system. */
#ifndef SW_SDK_LIMITS_H
#define SW_SDK_LIMITS_H
#define PATH_MAX 1024
#endif
