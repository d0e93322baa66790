/*
 * The agent's configuration from its environment (stallwatch-agent(7) lists
 * every variable), its log, and the decision whether to activate at all:
 * the agent only runs in the process it was started for.  `stallwatch run`
 * names that process with STALLWATCH_EXE (its executable) or STALLWATCH_PID;
 * a process that matches removes the agent's variables and its own entry in
 * the preload variable (LD_PRELOAD, DYLD_INSERT_LIBRARIES) from the
 * environment, so its children and a wrapper script's later commands stay
 * untouched; a process that does not match leaves everything as it found
 * it and does nothing.  STALLWATCH_DISABLE=1 turns the agent off; an app
 * that is not debuggable keeps it off unless STALLWATCH_FORCE=1 (tests).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "detect.h"

struct swa_config swa_cfg = {.log_fd = -1};
static struct swa_fd log_id = SWA_FD_NONE;

void swa_log(const char *fmt, ...)
{
	int fd = swa_fd_get(&log_id);
	if (fd < 0)
		return;
	char line[512];
	int n = snprintf(line, sizeof(line), "stallwatch-agent[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = strlen(line);
	line[len++] = '\n';
	ssize_t w = write(fd, line, len);
	(void)w;
}

void swa_log_lost(int fd)
{
	/* the log may be the one lost: then this says nothing */
	swa_log("descriptor %d is no longer the agent's: left alone", fd);
}

static bool env_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long *ret)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return false;
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || *end || v[0] == '-' || n < lo || n > hi) {
		swa_log("ignoring %s=%s (expected %lu to %lu)", name, v, lo, hi);
		return false;
	}
	*ret = n;
	return true;
}

static bool env_bool(const char *name)
{
	const char *v = getenv(name);
	return v && (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"));
}

static void env_str(const char *name, char *dst, size_t cap, const char *fallback)
{
	const char *v = getenv(name);
	snprintf(dst, cap, "%s", v && *v ? v : fallback);
}

static void open_log(void)
{
	const char *v = getenv("STALLWATCH_LOG");
	if (!v || !*v || !strcmp(v, "0"))
		return;
	if (!strcmp(v, "1") || !strcmp(v, "stderr"))
		swa_cfg.log_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	else
		swa_cfg.log_fd = open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	swa_cfg.log_fd = swa_fd_adopt(&log_id, swa_cfg.log_fd);
}

int swa_config_load(void)
{
	unsigned long v;
	open_log();
	atomic_store(&swa_cfg.threshold_ms, SWA_DEFAULT_THRESHOLD_MS);
	atomic_store(&swa_cfg.interval_us, SWA_DEFAULT_INTERVAL_US);
	atomic_store(&swa_cfg.max_depth, SWA_DEFAULT_MAX_DEPTH);
	if (env_uint("STALLWATCH_THRESHOLD_MS", 1, 3600000, &v))
		atomic_store(&swa_cfg.threshold_ms, (uint32_t)v);
	if (env_uint("STALLWATCH_INTERVAL_MS", 1, 10000, &v))
		atomic_store(&swa_cfg.interval_us, (uint32_t)v * 1000);
	if (env_uint("STALLWATCH_MAX_DEPTH", 1, SWA_MAX_DEPTH, &v))
		atomic_store(&swa_cfg.max_depth, (uint32_t)v);
	atomic_store(&swa_cfg.all_threads, env_bool("STALLWATCH_ALL_THREADS"));
	swa_cfg.ring_bytes = SWA_DEFAULT_RING_KB * 1024;
	if (env_uint("STALLWATCH_RING_KB", 16, 65536, &v)) {
		size_t bytes = 16 * 1024;
		while (bytes < v * 1024)
			bytes *= 2;
		swa_cfg.ring_bytes = bytes;
	}
	const char *proof = getenv("STALLWATCH_PROOF");
	swa_cfg.connection_proves = proof && !strcmp(proof, "connection");
	const char *sig = getenv("STALLWATCH_SIGNALS");
	swa_cfg.no_signals = sig && !strcmp(sig, "never");
	if (sig && *sig && !swa_cfg.no_signals && strcmp(sig, "running"))
		swa_log("ignoring STALLWATCH_SIGNALS=%s (expected running or never)", sig);
	if (env_uint("STALLWATCH_WAIT_MS", 0, 60000, &v)) {
		uint32_t cap = swa_plat_max_start_wait_ms();
		if (v > cap)
			swa_log("waiting %lu ms at start is refused here: %u ms at most", v, cap);
		swa_cfg.wait_ms = (uint32_t)(v > cap ? cap : v);
	}
	env_str("STALLWATCH_LISTEN", swa_cfg.listen, sizeof(swa_cfg.listen), "");
	/* unset: the backend's bundle id or process name, known after swa_plat_init() */
	env_str("STALLWATCH_BUNDLE_ID", swa_cfg.bundle_id, sizeof(swa_cfg.bundle_id), "");
	env_str("STALLWATCH_BUNDLE_VERSION", swa_cfg.bundle_version, sizeof(swa_cfg.bundle_version),
		"");
	env_str("STALLWATCH_TOKEN", swa_cfg.token, sizeof(swa_cfg.token), "");
	swa_cfg.detector = SWA_DETECT_DEFAULT;
	const char *d = getenv("STALLWATCH_DETECTOR");
	if (d && !strcmp(d, "waits"))
		swa_cfg.detector = SWA_DETECT_WAITS;
	else if (d && !strcmp(d, "runloop"))
		swa_cfg.detector = SWA_DETECT_RUNLOOP;
	else if (d && !strcmp(d, "ping"))
		swa_cfg.detector = SWA_DETECT_PING;
	else if (d && *d)
		swa_log("ignoring STALLWATCH_DETECTOR=%s (expected waits, runloop or ping)", d);
	return 0;
}

/* Whether this process is the one the agent was started for. */
bool swa_config_should_activate(void);
bool swa_config_should_activate(void)
{
	if (env_bool("STALLWATCH_DISABLE"))
		return false;
	if (!swa_plat_debuggable() && !env_bool("STALLWATCH_FORCE"))
		return false; /* a Release build that still carries the agent */
	const char *pid = getenv("STALLWATCH_PID");
	const char *exe = getenv("STALLWATCH_EXE");
	if (pid && *pid) {
		char *end;
		long want = strtol(pid, &end, 10);
		if (*end || want != (long)getpid())
			return false;
	}
	if (exe && *exe) {
		char self[PATH_MAX];
		if (swa_plat_executable_path(self, sizeof(self)) < 0)
			return false;
		if (strchr(exe, '/')) {
			char want[PATH_MAX];
			if (!realpath(exe, want) || strcmp(want, self) != 0)
				return false;
		} else {
			const char *base = strrchr(self, '/');
			if (strcmp(base ? base + 1 : self, exe) != 0)
				return false;
		}
	}
	return true;
}

/* The last '/' among the n bytes at p (memrchr is a GNU extension). */
static const char *last_slash(const char *p, size_t n)
{
	while (n--)
		if (p[n] == '/')
			return p + n;
	return NULL;
}

/*
 * What an exec of the process the agent runs in passes on to the new image
 * (swa_config_exec_vars()), kept before the environment is scrubbed: the
 * agent's variables, this process's id and the agent's preload entry.
 */
static struct {
	pid_t pid; /* the process activated in */
	char preload[PATH_MAX + 64];
	char pid_var[48];
	char *vars[32];
	size_t nvars;
	char buf[4096];
} follow;

static void keep_for_exec(const char *agent_path)
{
	const char *var = swa_plat_preload_variable();
	if (!agent_path || snprintf(follow.preload, sizeof(follow.preload), "%s=%s", var,
				    agent_path) >= (int)sizeof(follow.preload))
		return;
	size_t used = 0;
	follow.nvars = 0;
	for (char **e = swa_plat_environ(); e && *e; e++) {
		/* the process to activate in is this one, by its id */
		if (strncmp(*e, "STALLWATCH_", 11) != 0 || !strncmp(*e, "STALLWATCH_PID=", 15) ||
		    !strncmp(*e, "STALLWATCH_EXE=", 15))
			continue;
		size_t n = strlen(*e) + 1;
		if (follow.nvars == sizeof(follow.vars) / sizeof(follow.vars[0]) ||
		    used + n > sizeof(follow.buf))
			return; /* not all of them: nothing is passed on */
		follow.vars[follow.nvars++] = memcpy(follow.buf + used, *e, n);
		used += n;
	}
	snprintf(follow.pid_var, sizeof(follow.pid_var), "STALLWATCH_PID=%ld", (long)getpid());
	follow.pid = getpid();
}

bool swa_config_exec_vars(struct swa_exec_vars *ret)
{
	/* a child of fork or vfork is another process: it stays untouched */
	if (!swa_active || !follow.pid || getpid() != follow.pid)
		return false;
	*ret = (struct swa_exec_vars){follow.preload, follow.pid_var, follow.vars, follow.nvars};
	return true;
}

/*
 * entry, the preload variable's "VAR=..." (var_len: the length of VAR),
 * without this library's path, in buf; false when nothing else is left.
 */
static bool preload_without(const char *entry, size_t var_len, const char *agent_path, char *buf,
			    size_t cap)
{
	const char *base = strrchr(agent_path, '/');
	base = base ? base + 1 : agent_path;
	size_t len = var_len + 1, start = len;
	if (len >= cap)
		return false;
	memcpy(buf, entry, len);
	const char *p = entry + len;
	while (*p) {
		size_t n = strcspn(p, ": ");
		const char *slash = last_slash(p, n);
		const char *name = slash ? slash + 1 : p;
		size_t name_len = n - (size_t)(name - p);
		bool ours = name_len == strlen(base) && memcmp(name, base, name_len) == 0;
		if (n && !ours && len + n + 2 < cap) {
			if (len > start)
				buf[len++] = ':';
			memcpy(buf + len, p, n);
			len += n;
		}
		p += n;
		while (*p == ':' || *p == ' ')
			p++;
	}
	buf[len] = '\0';
	return len > start;
}

/*
 * Removes every STALLWATCH_ variable, and the entry naming this library from
 * the preload variable, so nothing started from here loads or activates the
 * agent.  The environment's array is edited in place, not through unsetenv()
 * and setenv(): a program may define its own (bash does, for its shell
 * variables, and leaves environ as it is until its main() reads it).
 */
void swa_config_scrub_environment(const char *agent_path);
void swa_config_scrub_environment(const char *agent_path)
{
	static char preload[4096];
	keep_for_exec(agent_path);
	char **env = swa_plat_environ();
	const char *var = swa_plat_preload_variable();
	size_t var_len = strlen(var), k = 0;
	bool rewritten = false;
	for (size_t i = 0; env && env[i]; i++) {
		if (strncmp(env[i], "STALLWATCH_", 11) == 0)
			continue;
		bool is_preload = strncmp(env[i], var, var_len) == 0 && env[i][var_len] == '=';
		if (is_preload && agent_path) {
			/* one entry is kept, in a buffer of ours for the process's life */
			if (rewritten ||
			    !preload_without(env[i], var_len, agent_path, preload, sizeof(preload)))
				continue;
			rewritten = true;
			env[k++] = preload;
			continue;
		}
		env[k++] = env[i];
	}
	/*
	 * Every slot freed is NULL, not only the first: a runtime that finds
	 * the auxiliary vector by walking past the environment's end (Go's,
	 * which reads the page size there) meets an empty vector and reads
	 * /proc/self/auxv, instead of taking the stale entries left between
	 * the new end and the vector for it.
	 */
	for (size_t i = k; env && env[i]; i++)
		env[i] = NULL;
}
