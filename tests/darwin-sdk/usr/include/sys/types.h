/* Stand-in: the basic system types of Darwin's 64-bit ABI. */
#ifndef SW_SDK_SYS_TYPES_H
#define SW_SDK_SYS_TYPES_H
#include <stddef.h>
#include <stdint.h>
typedef long ssize_t;
typedef int32_t pid_t;
typedef uint32_t uid_t;
typedef uint32_t gid_t;
typedef uint16_t mode_t;
typedef int64_t off_t;
typedef int32_t dev_t;
typedef uint16_t nlink_t;
typedef uint64_t ino_t;
typedef long time_t;
typedef int64_t blkcnt_t;
typedef int32_t blksize_t;
typedef uint32_t useconds_t;
#endif
