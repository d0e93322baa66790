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
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "launch.h"
#include "util/time-units.h"

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

/* A small /proc file of pid, NUL-terminated in buf; its length, or -1. */
static ssize_t proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/*
 * The field'th field (counted from 1, as proc(5) does, and past the
 * second) of a stat file's text: after "pid (comm) ", comm holding
 * anything up to the last ')'.  NULL when there are fewer.
 */
static const char *stat_field(const char *stat, int field)
{
	const char *p = strrchr(stat, ')');
	if (!p || p[1] != ' ')
		return NULL;
	p += 2;
	for (int k = 3; k < field && p; k++) {
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	return p && *p ? p : NULL;
}

/* A process's state letter and start time (clock ticks after boot); 0 when it is gone. */
static char proc_state(pid_t pid, unsigned long long *ret_start)
{
	char stat[1024];
	*ret_start = 0;
	if (proc_read(pid, "stat", stat, sizeof(stat)) < 0)
		return 0;
	const char *state = stat_field(stat, 3), *start = stat_field(stat, 22);
	if (!state)
		return 0;
	if (start)
		*ret_start = strtoull(start, NULL, 10);
	return *state;
}

/* The CPU time (user and system, ns) a stat file of /proc says; false when unreadable. */
static bool stat_cpu(pid_t pid, const char *name, uint64_t *ret_ns)
{
	char stat[1024];
	const char *utime, *stime;
	if (proc_read(pid, name, stat, sizeof(stat)) < 0 || !(utime = stat_field(stat, 14)) ||
	    !(stime = stat_field(stat, 15)))
		return false;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ticks = strtoull(utime, NULL, 10) + strtoull(stime, NULL, 10);
	*ret_ns = ticks * (SW_NS_PER_S / (uint64_t)(hz > 0 ? hz : 100));
	return true;
}

bool sw_host_process_cpu(pid_t pid, uint64_t *ret_main_ns, uint64_t *ret_all_ns)
{
	char task[64];
	snprintf(task, sizeof(task), "task/%ld/stat", (long)pid);
	return stat_cpu(pid, task, ret_main_ns) && stat_cpu(pid, "stat", ret_all_ns);
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
	snprintf(l.program, sizeof(l.program), "%s", prog);
	proc_state(pid, &l.start_ticks);
	*ret = l;
	return 0;
}

void sw_host_process_exe(pid_t pid, char *buf, size_t cap)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%ld/exe", (long)pid);
	ssize_t len = cap ? readlink(link, buf, cap - 1) : -1;
	if (cap)
		buf[len > 0 ? len : 0] = '\0';
}

bool sw_host_process_ended(pid_t pid)
{
	unsigned long long start;
	char state = proc_state(pid, &start);
	return !state || state == 'Z' || state == 'X';
}

/* Whether pid's environment names a launch's socket other than connect. */
static bool other_launch(pid_t pid, const char *connect)
{
	size_t cap = 1 << 18;
	char *env = malloc(cap);
	ssize_t n = env ? proc_read(pid, "environ", env, cap) : -1;
	const char *var = "STALLWATCH_LISTEN=";
	size_t vn = strlen(var);
	bool other = false;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1)
		if (strncmp(env + i, var, vn) == 0) {
			other = strcmp(env + i + vn, connect) != 0;
			break;
		}
	free(env);
	return other;
}

/* Whether pid has the file st describes mapped. */
static bool maps_file(pid_t pid, const struct stat *st)
{
	char path[64], line[4096 + 256];
	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool found = false;
	/* "start-end perms offset major:minor inode path" */
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned major, minor;
		unsigned long long ino;
		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &major, &minor, &ino) == 3)
			found = ino == (unsigned long long)st->st_ino &&
				makedev(major, minor) == st->st_dev;
	}
	fclose(f);
	return found;
}

size_t sw_host_launch_forked(const struct sw_launch *l, const char *agent, pid_t watched,
			     const char *exe, pid_t *pids, size_t max)
{
	struct stat agent_st;
	DIR *d = opendir("/proc");
	if (!d || stat(agent, &agent_st) < 0) {
		if (d)
			closedir(d);
		return 0;
	}
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		char dir[64], target[PATH_MAX];
		struct stat st;
		snprintf(dir, sizeof(dir), "/proc/%ld", (long)pid);
		/*
		 * Of any user: a worker that changed its user (nginx's, started
		 * as root) is still the program's.  Another user's process is
		 * out of reach unless we may read its /proc files anyway.
		 */
		if (pid == watched || pid == getpid() || stat(dir, &st) < 0)
			continue;
		sw_host_process_exe(pid, target, sizeof(target));
		if (strcmp(target, exe) != 0)
			continue;
		unsigned long long start;
		char state = proc_state(pid, &start);
		if (!state || state == 'Z' || state == 'X' || start < l->start_ticks)
			continue;
		if (other_launch(pid, l->connect) || !maps_file(pid, &agent_st))
			continue;
		if (n < max)
			pids[n] = pid;
		n++;
	}
	closedir(d);
	return n;
}

void sw_host_launch_cleanup(struct sw_launch *l)
{
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/agent.sock", l->dir);
	unlink(sock);
	rmdir(l->dir);
}
