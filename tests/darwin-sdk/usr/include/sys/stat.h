/* Stand-in: file status with 64-bit inode numbers, the only layout on arm64 and iOS. */
#ifndef SW_SDK_SYS_STAT_H
#define SW_SDK_SYS_STAT_H
#include <sys/types.h>
#include <time.h>
struct stat {
	dev_t st_dev;
	mode_t st_mode;
	nlink_t st_nlink;
	ino_t st_ino;
	uid_t st_uid;
	gid_t st_gid;
	dev_t st_rdev;
	struct timespec st_atimespec;
	struct timespec st_mtimespec;
	struct timespec st_ctimespec;
	struct timespec st_birthtimespec;
	off_t st_size;
	blkcnt_t st_blocks;
	blksize_t st_blksize;
	uint32_t st_flags;
	uint32_t st_gen;
	int32_t st_lspare;
	int64_t st_qspare[2];
};
#define S_IFMT      0170000
#define S_IFSOCK    0140000
#define S_ISSOCK(m) (((m)&S_IFMT) == S_IFSOCK)
#if defined(__x86_64__) && !TARGET_OS_IPHONE
/* macOS on Intel keeps this layout under its own names */
int lstat(const char *path, struct stat *st) __asm("_lstat$INODE64");
#else
int lstat(const char *path, struct stat *st);
#endif
mode_t umask(mode_t mask);
#endif
