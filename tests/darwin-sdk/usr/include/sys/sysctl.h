/* Stand-in: sysctl(3), by number and by name. */
#ifndef SW_SDK_SYS_SYSCTL_H
#define SW_SDK_SYS_SYSCTL_H
#include <stddef.h>
#define CTL_KERN      1
#define KERN_PROC     14
#define KERN_PROC_PID 1
int sysctl(int *name, unsigned int namelen, void *old, size_t *oldlen, void *new_value,
	   size_t newlen);
int sysctlbyname(const char *name, void *old, size_t *oldlen, void *new_value, size_t newlen);
#endif
