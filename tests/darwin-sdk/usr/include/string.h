/* Stand-in: the string functions the agent uses. */
#ifndef SW_SDK_STRING_H
#define SW_SDK_STRING_H
#include <stddef.h>
#include <strings.h>
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
size_t strcspn(const char *s, const char *reject);
char *strcpy(char *dst, const char *src);
char *strdup(const char *s);
char *strerror(int e);
#endif
