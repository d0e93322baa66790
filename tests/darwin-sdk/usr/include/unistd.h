/* Stand-in: the POSIX calls on descriptors and the process. */
#ifndef SW_SDK_UNISTD_H
#define SW_SDK_UNISTD_H
#include <sys/types.h>
ssize_t read(int fd, void *buf, size_t n);
ssize_t write(int fd, const void *buf, size_t n);
int close(int fd);
int pipe(int fds[2]);
int unlink(const char *path);
pid_t getpid(void);
ssize_t readlink(const char *path, char *buf, size_t cap);
#endif
