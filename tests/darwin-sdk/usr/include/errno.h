/* Stand-in: errno and Darwin's error numbers (they differ from Linux's). */
#ifndef SW_SDK_ERRNO_H
#define SW_SDK_ERRNO_H
extern int *__error(void);
#define errno         (*__error())
#define EPERM         1
#define E2BIG         7
#define ENOENT        2
#define ESRCH         3
#define EINTR         4
#define EIO           5
#define EBADF         9
#define ENOMEM        12
#define EACCES        13
#define EFAULT        14
#define EBUSY         16
#define EEXIST        17
#define EINVAL        22
#define ENOSPC        28
#define EPIPE         32
#define ERANGE        34
#define EAGAIN        35
#define EWOULDBLOCK   EAGAIN
#define EINPROGRESS   36
#define ENOTSUP       45
#define EOPNOTSUPP    102
#define EADDRINUSE    48
#define EADDRNOTAVAIL 49
#define ECONNRESET    54
#define ETIMEDOUT     60
#define ECONNREFUSED  61
#define ENAMETOOLONG  63
#define ENOSYS        78
#define EMSGSIZE      40
#define EBADMSG       94
#define EOVERFLOW     84
#endif
