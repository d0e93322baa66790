/*
 * The proof a client brings on Linux: a token in a file only the app's
 * user can read.  Without STALLWATCH_TOKEN the agent makes one (128 random
 * bits) and writes it to DIR/agent-PORT.token for a TCP listener, where DIR
 * is $XDG_RUNTIME_DIR/stallwatch or, without it, $TMPDIR (or /tmp)
 * /stallwatch-UID; to PATH.token for a unix socket at PATH.  The directory
 * is made 0700 and must be ours and not a link; the file is 0600.
 * `stallwatch attach` looks in the same places (lib/host/token.c).
 * A token given through STALLWATCH_TOKEN (as `stallwatch run` does) is
 * not written anywhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../agent.h"

static char token_path[600];

/* A directory of ours that nobody else may enter. */
static int private_dir(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static int token_file(const char *listen_desc, char *path, size_t cap)
{
	if (!strncmp(listen_desc, "unix:", 5)) {
		int n = snprintf(path, cap, "%s.token", listen_desc + 5);
		return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
	}
	const char *port = strrchr(listen_desc, ':');
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *tmp = getenv("TMPDIR");
	char dir[400];
	if (!port)
		return -EINVAL;
	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/stallwatch", xdg);
	else
		snprintf(dir, sizeof(dir), "%s/stallwatch-%u", tmp && tmp[0] == '/' ? tmp : "/tmp",
			 (unsigned)getuid());
	int r = private_dir(dir);
	if (r < 0)
		return r;
	int n = snprintf(path, cap, "%s/agent-%s.token", dir, port + 1);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int swa_plat_publish_token(const char *listen_desc, char *token, size_t cap)
{
	if (token[0])
		return 0; /* given by whoever started the app: it knows it */
	uint8_t raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) || cap < 33)
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	char path[sizeof(token_path)];
	int r = token_file(listen_desc, path, sizeof(path));
	if (r < 0)
		return r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	char line[40];
	int len = snprintf(line, sizeof(line), "%s\n", token);
	bool ok = fchmod(fd, 0600) == 0 && fstat(fd, &st) == 0 && st.st_uid == getuid() &&
		  write(fd, line, (size_t)len) == len;
	close(fd);
	if (!ok) {
		unlink(path);
		return -EPERM;
	}
	memcpy(token_path, path, sizeof(token_path));
	return 0;
}

void swa_plat_unpublish_token(void)
{
	if (token_path[0])
		unlink(token_path);
	token_path[0] = '\0';
}

bool swa_plat_connection_proves(int fd)
{
	(void)fd;
	/* STALLWATCH_PROOF=connection: for device simulators, every client is trusted */
	return swa_cfg.connection_proves;
}
