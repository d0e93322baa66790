/*
 * The agent's own descriptors, checked before every use.  An app may close
 * every descriptor it did not open itself (close_range(), closefrom(), as
 * daemons do) and open its own under the same numbers: a number alone then
 * names the app's pipe, socket or log.  Each descriptor the agent opens is
 * remembered with the device, inode and type fstat() gave at the time;
 * before a read, write, accept, poll or close the agent asks again, and a
 * descriptor that is no longer the same open file is forgotten, never
 * touched (the caller then recovers or stops quietly).
 *
 * The check and the use are two system calls: an app that closes and
 * reopens the number in the microseconds between them is not caught.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

static bool same(const struct swa_fd *d, int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == atomic_load(&d->dev) &&
	       (uint64_t)st.st_ino == atomic_load(&d->ino) &&
	       (uint32_t)(st.st_mode & S_IFMT) == atomic_load(&d->type);
}

int swa_fd_adopt(struct swa_fd *d, int fd)
{
	struct stat st;
	atomic_store(&d->fd, -1);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -1;
	atomic_store(&d->dev, (uint64_t)st.st_dev);
	atomic_store(&d->ino, (uint64_t)st.st_ino);
	atomic_store(&d->type, (uint32_t)(st.st_mode & S_IFMT));
	atomic_store(&d->fd, fd);
	return fd;
}

bool swa_fd_ours(const struct swa_fd *d)
{
	int fd = atomic_load(&d->fd);
	return fd >= 0 && same(d, fd);
}

int swa_fd_get(struct swa_fd *d)
{
	int fd = atomic_load(&d->fd);
	if (fd < 0)
		return -1;
	if (same(d, fd))
		return fd;
	atomic_store(&d->fd, -1); /* first: the log may be the one lost */
	swa_log_lost(fd);
	return -1;
}

void swa_fd_close(struct swa_fd *d)
{
	int fd = swa_fd_get(d);
	atomic_store(&d->fd, -1);
	if (fd >= 0)
		close(fd);
}
