/*
 * `stallwatch run` on Linux: LD_PRELOAD the agent into the program, on a
 * unix socket in a private directory (mode 0700 from mkdtemp), and name the
 * process the agent may activate in: STALLWATCH_EXE, the program's resolved
 * path (or --exe), so a wrapper's shell leaves the agent asleep and the
 * program's own children find the variables gone.  A script without --exe
 * falls back to STALLWATCH_PID, the first process image in the child.
 *
 * Exec failures come back through a close-on-exec pipe, so `run` can tell
 * "not found" (127) from "cannot execute" (126) the way env(1) does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "launch.h"

#ifndef SW_AGENT_REL_DIR
#define SW_AGENT_REL_DIR "../lib/stallwatch"
#endif
#define AGENT_NAME "libstallwatch-agent.so"

static bool readable(const char *path)
{
	return access(path, R_OK) == 0;
}

int sw_host_find_agent(char *buf, size_t cap, struct sw_error *err)
{
	const char *env = getenv("STALLWATCH_AGENT");
	if (env && *env) {
		if (!readable(env))
			return sw_error_set(err, -ENOENT,
					    "STALLWATCH_AGENT names '%s', which is missing", env);
		snprintf(buf, cap, "%s", env);
		return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		const char *candidates[] = {SW_AGENT_REL_DIR, "../injector"};
		for (size_t i = 0; i < 2; i++) {
			char path[PATH_MAX * 2], real[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s/%s", exe, candidates[i], AGENT_NAME);
			if (readable(path) && realpath(path, real)) {
				snprintf(buf, cap, "%s", real);
				return 0;
			}
		}
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", SW_AGENT_INSTALL_DIR, AGENT_NAME);
	if (readable(path)) {
		snprintf(buf, cap, "%s", path);
		return 0;
	}
	return sw_error_set(err, -ENOENT, "cannot find the agent %s (set STALLWATCH_AGENT)",
			    AGENT_NAME);
}

/* PATH search the way execvp does it, so the agent can be told the file. */
static int resolve(const char *prog, char *out, size_t cap)
{
	if (strchr(prog, '/')) {
		if (access(prog, F_OK) < 0)
			return -errno;
		snprintf(out, cap, "%s", prog);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int found = -ENOENT;
	while (*path) {
		size_t n = strcspn(path, ":");
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%.*s%s%s", (int)n, path, n ? "/" : "", prog);
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				snprintf(out, cap, "%s", cand);
				return 0;
			}
			found = -EACCES;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return found;
}

static bool is_script(const char *path)
{
	char head[2] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool script = read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
	close(fd);
	return script;
}

static void set_env_u(const char *name, uint32_t v)
{
	char text[16];
	snprintf(text, sizeof(text), "%u", v);
	setenv(name, text, 1);
}

static void child_env(const struct sw_launch_options *o, const struct sw_launch *l, const char *exe)
{
	const char *old = getenv("LD_PRELOAD");
	char preload[PATH_MAX * 2];
	snprintf(preload, sizeof(preload), "%s%s%s", o->agent, old && *old ? ":" : "",
		 old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	char listen[300];
	snprintf(listen, sizeof(listen), "%s", l->connect);
	setenv("STALLWATCH_LISTEN", listen, 1);
	if (exe) {
		setenv("STALLWATCH_EXE", exe, 1);
		unsetenv("STALLWATCH_PID");
	} else {
		set_env_u("STALLWATCH_PID", (uint32_t)getpid());
		unsetenv("STALLWATCH_EXE");
	}
	if (o->threshold_ms)
		set_env_u("STALLWATCH_THRESHOLD_MS", o->threshold_ms);
	if (o->interval_ms)
		set_env_u("STALLWATCH_INTERVAL_MS", o->interval_ms);
	if (o->all_threads)
		setenv("STALLWATCH_ALL_THREADS", "1", 1);
	if (o->token)
		setenv("STALLWATCH_TOKEN", o->token, 1);
	set_env_u("STALLWATCH_WAIT_MS", o->wait_ms);
}

int sw_host_launch(const struct sw_launch_options *o, char *const argv[], struct sw_launch *ret,
		   struct sw_error *err)
{
	struct sw_launch l = {.pid = -1};
	char prog[PATH_MAX], exe[PATH_MAX];
	int r = resolve(argv[0], prog, sizeof(prog));
	if (r < 0)
		return sw_error_set(err, r, "%s", strerror(-r));
	const char *activate = NULL;
	if (o->exe) {
		activate = o->exe;
	} else if (is_script(prog)) {
		l.script = true;
	} else if (realpath(prog, exe)) {
		activate = exe;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(l.dir, sizeof(l.dir), "%s/stallwatch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(l.dir))
		return sw_error_set(err, -errno, "cannot create a private directory: %s",
				    strerror(errno));
	snprintf(l.connect, sizeof(l.connect), "unix:%s/agent.sock", l.dir);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		r = -errno;
		rmdir(l.dir);
		return sw_error_set(err, r, "%s", strerror(-r));
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		rmdir(l.dir);
		return sw_error_set(err, r, "cannot fork: %s", strerror(-r));
	}
	if (pid == 0) {
		close(pfd[0]);
		child_env(o, &l, activate);
		execv(prog, argv);
		int e = errno;
		ssize_t w = write(pfd[1], &e, sizeof(e));
		(void)w;
		_exit(e == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	int child_errno = 0;
	ssize_t got;
	do
		got = read(pfd[0], &child_errno, sizeof(child_errno));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	if (got == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		rmdir(l.dir);
		return sw_error_set(err, -child_errno, "%s", strerror(child_errno));
	}
	l.pid = pid;
	*ret = l;
	return 0;
}

void sw_host_launch_cleanup(struct sw_launch *l)
{
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/agent.sock", l->dir);
	unlink(sock);
	rmdir(l->dir);
}
