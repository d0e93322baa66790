/* Stand-in: case-insensitive comparison. */
#ifndef SW_SDK_STRINGS_H
#define SW_SDK_STRINGS_H
int strcasecmp(const char *a, const char *b);
#endif
