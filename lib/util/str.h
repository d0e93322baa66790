/*
 * Small string tests several modules make.
 */
#ifndef SW_UTIL_STR_H
#define SW_UTIL_STR_H

#include <stdbool.h>
#include <string.h>

/* Whether s ends with suffix. */
static inline bool sw_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

#endif
