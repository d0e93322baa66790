/* Stand-in: the C library's memory, environment and conversion calls. */
#ifndef SW_SDK_STDLIB_H
#define SW_SDK_STDLIB_H
#include <stddef.h>
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
long long llabs(long long v);
void abort(void) __attribute__((noreturn));
char *getenv(const char *name);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
const char *getprogname(void);
#if defined(__x86_64__) && !TARGET_OS_IPHONE
/* macOS on Intel keeps the conforming realpath under its own name */
char *realpath(const char *path, char *resolved) __asm("_realpath$DARWIN_EXTSN");
#else
char *realpath(const char *path, char *resolved);
#endif
#endif
