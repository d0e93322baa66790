/*
 * Small string tests several modules make.
 */
#ifndef SW_UTIL_STR_H
#define SW_UTIL_STR_H

#include <stdbool.h>
#include <string.h>

/* The value of a hexadecimal digit, either case; -1 for any other character. */
static inline int sw_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Whether s ends with suffix. */
static inline bool sw_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

#endif
