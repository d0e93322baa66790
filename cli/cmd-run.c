/*
 * stallwatch run: start a program with the agent preloaded, stream its
 * stalls until it ends, and exit with its status (timeout(1)'s convention:
 * 125 when stallwatch fails, 126 when the program cannot be executed, 127
 * when it is not found, 4 when it never loads the agent).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baseline.h"
#include "cli.h"
#include "host/launch.h"
#include "host/token.h"
#include "objfile/object.h"
#include "session/session.h"
#include "session/transport.h"
#include "watch.h"
#include "util/time-units.h"

#define HELLO_TIMEOUT_MS 5000

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

struct forked;

struct child {
	pid_t pid;
	bool exited;
	int status;
	struct timespec exit_time;
	struct forked *fk; /* looked at while the stream is idle, once a second */
	struct timespec fk_scan;
};

static bool reap(struct child *ch)
{
	if (ch->exited)
		return true;
	int st;
	pid_t r = waitpid(ch->pid, &st, WNOHANG);
	if (r == ch->pid) {
		ch->exited = true;
		ch->status = st;
		clock_gettime(CLOCK_MONOTONIC, &ch->exit_time);
	}
	return ch->exited;
}

static void note_forked(struct forked *fk);

/* Once the program is gone, the agent's socket closes; don't wait forever if not. */
static bool stop_after_exit(void *ctx)
{
	struct child *ch = ctx;
	if (!reap(ch)) {
		if (ch->fk && sw_watch_elapsed_s(&ch->fk_scan) >= 1.0) {
			note_forked(ch->fk);
			clock_gettime(CLOCK_MONOTONIC, &ch->fk_scan);
		}
		return false;
	}
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - ch->exit_time.tv_sec >= 3;
}

static int exit_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return SW_EXIT_RUN_FAILED;
}

/*
 * Connects to the agent listening at spec, trying for timeout_ms; -ECHILD
 * when the program, or the watched process (watched, when not 0), ends
 * first.
 */
static int connect_agent(struct child *ch, pid_t watched, const char *spec, long timeout_ms,
			 struct sw_session **ret)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int fd;
		if (sw_transport_connect(spec, 500, &fd, NULL) == 0) {
			struct sw_session *s;
			if (sw_session_new(fd, &s) < 0) {
				close(fd);
				return -ENOMEM;
			}
			*ret = s;
			return 0;
		}
		if (reap(ch) || (watched && sw_host_process_ended(watched)))
			return -ECHILD;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - t0.tv_sec) * (long)SW_MS_PER_S +
			  (now.tv_nsec - t0.tv_nsec) / (long)SW_NS_PER_MS;
		if (ms > timeout_ms)
			return -ETIMEDOUT;
		struct timespec pause = {0, 20000000};
		nanosleep(&pause, NULL);
	}
}

static int finish(struct child *ch, struct sw_launch *l, int status)
{
	while (!ch->exited) {
		int st;
		pid_t r = waitpid(ch->pid, &st, 0);
		if (r == ch->pid) {
			ch->exited = true;
			ch->status = st;
		} else if (r < 0 && errno != EINTR) {
			break;
		}
	}
	sw_host_launch_cleanup(l);
	if (status != SW_EXIT_OK)
		return status;
	return ch->exited ? exit_status(ch->status) : SW_EXIT_RUN_FAILED;
}

/*
 * What the program's file says about loading the agent: why the loader
 * would not preload it, or NULL when nothing does.
 */
static const char *no_preload(const struct sw_launch *l)
{
	struct stat st;
	if (l->script || stat(l->program, &st) < 0)
		return NULL;
	/* the kernel runs it securely when the bits change our ids: LD_PRELOAD is ignored */
	if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
		return "it is setuid, and the loader ignores LD_PRELOAD in a program that "
		       "changes its user";
	if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
		return "it is setgid, and the loader ignores LD_PRELOAD in a program that "
		       "changes its group";
	struct sw_object *obj;
	struct sw_error err = {0};
	if (sw_object_open_deferred(l->program, NULL, &obj, &err) < 0)
		return NULL;
	bool is_static = obj->format == SW_OBJECT_ELF && !obj->interp;
	sw_object_free(obj);
	return is_static ? "it is statically linked, so no loader starts it to preload the agent"
			 : NULL;
}

static int no_hello(struct child *ch, struct sw_launch *l, const char *prog, const char *exe,
		    int why)
{
	const char *file_says = exe ? NULL : no_preload(l);
	if (file_says && why == -ECHILD)
		sw_cli_error("'%s' exited without loading the agent: %s; see stallwatch-run(1)",
			     prog, file_says);
	else if (file_says)
		sw_cli_error("'%s' did not load the agent within %d s: %s; stopping it", prog,
			     HELLO_TIMEOUT_MS / 1000, file_says);
	else if (exe && why == -ECHILD)
		sw_cli_error("'%s' exited and no process it started ran '%s' (--exe, compared "
			     "with each process's resolved executable)",
			     prog, exe);
	else if (exe)
		sw_cli_error("no process of '%s' ran '%s' (--exe, compared with each process's "
			     "resolved executable) within %d s; stopping it",
			     prog, exe, HELLO_TIMEOUT_MS / 1000);
	else if (why == -ECHILD)
		sw_cli_error("'%s' exited without loading the agent (a static or setuid program?); "
			     "see stallwatch-run(1)",
			     prog);
	else
		sw_cli_error("'%s' did not load the agent within %d s (a static or setuid "
			     "program?); stopping it",
			     prog, HELLO_TIMEOUT_MS / 1000);
	if (!ch->exited) {
		kill(ch->pid, SIGTERM);
		finish(ch, l, SW_EXIT_AGENT);
	} else {
		sw_host_launch_cleanup(l);
	}
	return SW_EXIT_AGENT;
}

/*
 * The watched process, the program's forked children, whether they were
 * named, and those seen running while the stream was idle (the workers of
 * a server that forks them: gone by the end when the program ends them).
 */
struct forked {
	const struct sw_launch *l;
	struct child *ch; /* the program run */
	const char *agent;
	pid_t watched;
	char exe[PATH_MAX]; /* "" when unknown */
	char name[256];     /* the name the agent gave the process */
	bool said;
	pid_t seen[8];
	size_t nseen;
	bool seen_more; /* more than fit in seen */
	/* the watched process's CPU time, its main thread's and all of it, at the last look */
	bool have_cpu;
	uint64_t main_cpu_ns, all_cpu_ns;
};

/* Adds the forked processes running now to those seen; notes the CPU time used. */
static void note_forked(struct forked *fk)
{
	pid_t pids[8];
	uint64_t main_ns, all_ns;
	if (sw_host_process_cpu(fk->watched, &main_ns, &all_ns)) {
		fk->have_cpu = true;
		fk->main_cpu_ns = main_ns;
		fk->all_cpu_ns = all_ns;
	}
	if (!fk->exe[0])
		return;
	size_t n = sw_host_launch_forked(fk->l, fk->agent, fk->watched, fk->exe, pids, 8);
	fk->seen_more |= n > 8;
	for (size_t i = 0; i < n && i < 8; i++) {
		size_t k = 0;
		while (k < fk->nseen && fk->seen[k] != pids[i])
			k++;
		if (k < fk->nseen)
			continue;
		if (fk->nseen < 8)
			fk->seen[fk->nseen++] = pids[i];
		else
			fk->seen_more = true;
	}
}

/* "12, 34, 56" of n pids, ", ..." after them when there were more. */
static void pid_list(const pid_t *pids, size_t n, bool more, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < cap; i++)
		len +=
		    (size_t)snprintf(buf + len, cap - len, "%s%ld", i ? ", " : "", (long)pids[i]);
	if (more && len < cap)
		snprintf(buf + len, cap - len, ", ...");
}

/*
 * Names the processes the program forked that still run, unwatched: a
 * program that forks into the background (a daemon) otherwise leaves only
 * "0 stalls" behind, with no word of where its loop went.  Returns whether
 * there were any.
 */
static bool say_forked(struct forked *fk)
{
	pid_t pids[8];
	if (fk->said || !fk->exe[0])
		return fk->said;
	const char *exe = fk->exe;
	pid_t watched = fk->watched;
	size_t n = sw_host_launch_forked(fk->l, fk->agent, watched, exe, pids, 8);
	if (!n)
		return false;
	fk->said = true;
	const char *name = fk->name;
	char list[128];
	pid_list(pids, n < 8 ? n : 8, n > 8, list, sizeof(list));
	fprintf(stderr,
		"stallwatch: %zu process%s forked by %s (pid %ld) %s still running, unwatched: "
		"pid %s\n",
		n, n == 1 ? "" : "es", name, (long)watched, n == 1 ? "is" : "are", list);
	fprintf(stderr, "stallwatch: the agent is off in a child of fork(2): to watch a program "
			"that forks into the background, keep it in the foreground (tmux -D, "
			"redis-server --daemonize no, a daemon's --foreground); see "
			"stallwatch-run(1)\n");
	return true;
}

/* Whether pid has ended, waiting up to ms for it. */
static bool ended(pid_t pid, int ms)
{
	struct timespec pause = {0, 10000000};
	for (int waited = 0; !sw_host_process_ended(pid); waited += 10) {
		if (waited >= ms)
			return false;
		nanosleep(&pause, NULL);
	}
	return true;
}

/*
 * A program that never waited in a loop the agent sees, and forked
 * processes of its executable: its loop runs in them (a prefork server's
 * workers: nginx, a gunicorn or Apache), where the agent is off.
 */
static bool say_workers(struct forked *fk, const struct sw_stalls *c)
{
	uint64_t first_ns;
	if (sw_stalls_watched(c, &first_ns) != SW_WATCHED_NEVER)
		return false;
	note_forked(fk); /* a last look: the first scan comes a second in */
	if (!fk->nseen)
		return false;
	const char *name = fk->name;
	char list[128];
	pid_list(fk->seen, fk->nseen, fk->seen_more, list, sizeof(list));
	fprintf(stderr,
		"stallwatch: nothing was watched in %s (pid %ld): it never waited in a loop the "
		"agent sees, and forked %zu%s process%s during the run, unwatched: pid %s\n",
		name, (long)fk->watched, fk->nseen, fk->seen_more ? " or more" : "",
		fk->nseen == 1 && !fk->seen_more ? "" : "es", list);
	fprintf(stderr, "stallwatch: the agent is off in a child of fork(2): to watch a program "
			"whose loop runs in forked workers, run it as one process (nginx -g "
			"'master_process off;', a server's single-process or debug mode); see "
			"stallwatch-run(1)\n");
	return true;
}

/* Other threads' CPU time past which a main thread's small share says where the work ran. */
#define OTHER_THREADS_NS (200 * SW_NS_PER_MS)

/*
 * A program that never waited in a loop the agent sees, whose main thread
 * used a tenth of its CPU time or less: its work ran on other threads (the
 * java launcher's main thread only waits for the one that runs main()).
 * Says so before the advice for loops that wait another way; returns
 * whether it did.
 */
static bool say_threads(struct forked *fk, const struct sw_stalls *c)
{
	uint64_t first_ns;
	if (sw_stalls_watched(c, &first_ns) != SW_WATCHED_NEVER || !fk->have_cpu ||
	    fk->main_cpu_ns > fk->all_cpu_ns)
		return false;
	if (fk->all_cpu_ns - fk->main_cpu_ns < OTHER_THREADS_NS ||
	    fk->main_cpu_ns * 10 > fk->all_cpu_ns)
		return false;
	fprintf(stderr,
		"stallwatch: nothing was watched in %s (pid %ld): it never waited in a loop the "
		"agent sees, and its main thread used %.0f ms of the process's %.0f ms of CPU "
		"time: the rest ran on other threads\n",
		fk->name, (long)fk->watched, sw_ns_to_ms(fk->main_cpu_ns),
		sw_ns_to_ms(fk->all_cpu_ns));
	fprintf(stderr, "stallwatch: the agent watches the main thread's loop only: a loop on "
			"another thread (java runs main() on a new thread) is not watched\n");
	const char *advice = sw_stalls_watched_advice(SW_WATCHED_NEVER);
	if (advice)
		fprintf(stderr, "stallwatch: %s\n", advice);
	return true;
}

/*
 * A program killed by a signal (a crash, mostly: not the user's ^C) says
 * so: the stream just ends.  True when that explains why nothing was
 * watched, for a program that died before its loop first waited.
 */
static bool say_killed(struct forked *fk, const struct sw_stalls *c)
{
	struct child *ch = fk->ch;
	if (!ch || ch->pid != fk->watched)
		return false;
	/*
	 * Looked at, not reaped: what comes after reads the process's CPU
	 * time from /proc, which its zombie keeps until then.  A leader seen
	 * ended may wait a moment for the rest of its threads.
	 */
	int sig = 0;
	bool core = false;
	if (ch->exited && WIFSIGNALED(ch->status)) {
		sig = WTERMSIG(ch->status);
		core = WCOREDUMP(ch->status);
	} else if (!ch->exited) {
		siginfo_t si = {0};
		for (int waited = 0; waited < 1000; waited += 10) {
			if (waitid(P_PID, (id_t)ch->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
			    si.si_pid == ch->pid)
				break;
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		}
		if (si.si_pid == ch->pid &&
		    (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)) {
			sig = si.si_status;
			core = si.si_code == CLD_DUMPED;
		}
	}
	if (!sig || sig == SIGINT)
		return false;
	fprintf(stderr, "stallwatch: %s (pid %ld) was killed by signal %d (%s)%s\n", fk->name,
		(long)ch->pid, sig, strsignal(sig), core ? ", core dumped" : "");
	uint64_t first_ns;
	return sw_stalls_watched(c, &first_ns) == SW_WATCHED_NEVER;
}

/*
 * At the end of the stream: once the program has ended, a daemon it forked
 * is the word on its loop, said before "nothing was watched" would be; a
 * program that never waited is explained by the workers it forked, else
 * by the threads that did its work.
 */
static bool explain_end(void *ctx, const struct sw_stalls *c, bool limit)
{
	struct forked *fk = ctx;
	if (!limit && ended(fk->watched, 1000) && say_killed(fk, c))
		return true;
	if (!limit && ended(fk->watched, 1000) && say_forked(fk))
		return true;
	return say_workers(fk, c) || say_threads(fk, c);
}

/* What following the watched process into its next image takes. */
struct follow {
	struct child *ch;
	struct forked *fk;
	const char *connect, *token;
	struct timespec t0; /* when the watch began, for --duration */
	double duration_s;
};

/*
 * The stream of the agent in the watched process's next image.  An exec
 * closes the agent's socket; the agent passes its variables on to the new
 * image, where it starts again, listens at the same place and waits for us
 * before main().  NULL when the process has ended, when no agent answers in
 * time (the new image is static, or setuid), or when --duration is up.
 */
static struct sw_session *next_stream(void *ctx)
{
	struct follow *f = ctx;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		double left = HELLO_TIMEOUT_MS / 1000.0 - sw_watch_elapsed_s(&t0);
		if (f->duration_s > 0 && f->duration_s - sw_watch_elapsed_s(&f->t0) < left)
			left = f->duration_s - sw_watch_elapsed_s(&f->t0);
		struct sw_session *s;
		if (left <= 0 ||
		    connect_agent(f->ch, f->fk->watched, f->connect, (long)(left * 1000), &s) < 0)
			return NULL;
		struct sw_session_options so = {.token = f->token,
						.hello_timeout_ms = HELLO_TIMEOUT_MS};
		struct sw_error err = {0};
		int r = sw_session_start(s, &so, &err);
		if (r == 0 && (pid_t)sw_session_hello(s)->pid == f->fk->watched) {
			/* the program's executable is the new image's now */
			struct forked *fk = f->fk;
			sw_host_process_exe(fk->watched, fk->exe, sizeof(fk->exe));
			const char *name = sw_session_hello(s)->process_name;
			if (name && *name)
				snprintf(fk->name, sizeof(fk->name), "%.255s", name);
			return s;
		}
		sw_session_free(s);
		/*
		 * The old image closes its listening socket with its other
		 * descriptors, in no set order: a connection made in between
		 * is reset.  Another image may be on its way: try again.
		 */
		if (r != -ECONNRESET)
			return NULL;
		struct timespec pause = {0, 10000000};
		nanosleep(&pause, NULL);
	}
}

/*
 * --exe NAME as the agent compares it with its own resolved executable: a
 * path is resolved (the agent resolves it again), and a bare NAME that PATH
 * finds as a symbolic link (python3 -> python3.11) becomes the name of what
 * it links to, which is what the process's executable is called.
 */
static const char *resolve_exe(const char *name, char *buf, size_t size)
{
	char path[PATH_MAX], real[PATH_MAX];
	if (strchr(name, '/'))
		return realpath(name, real) && snprintf(buf, size, "%s", real) < (int)size ? buf
											   : name;
	const char *dirs = getenv("PATH");
	while (dirs && *dirs) {
		size_t n = strcspn(dirs, ":");
		if (snprintf(path, sizeof(path), "%.*s/%s", (int)n, n ? dirs : ".", name) <
			(int)sizeof(path) &&
		    access(path, X_OK) == 0) {
			if (!realpath(path, real))
				return name;
			const char *base = strrchr(real, '/');
			snprintf(buf, size, "%s", base ? base + 1 : real);
			return buf;
		}
		dirs += n + (dirs[n] == ':');
	}
	return name;
}

static int run_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct sw_watch_options o;
	sw_watch_options_init(&o);
	/* the program's standard output stays the program's (time(1), valgrind) */
	o.out.results_to_stderr = true;
	o.out.perf_map_live = true; /* its JIT's names, unless --perf-map names a file */
	const char *exe = NULL;
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, true);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		if (c == SW_OPT_EXE) {
			exe = optarg;
			continue;
		}
		r = sw_watch_option(cmd, c, optarg, &o);
		if (r)
			return r;
	}
	if (r)
		return r;
	if (optind >= argc)
		return sw_cli_usage(cmd, "missing program; usage: stallwatch run %s", cmd->usage);
	/* a baseline that cannot serve is refused before the program runs */
	if (o.out.baseline) {
		struct sw_baseline *b = NULL;
		r = sw_baseline_load(o.out.baseline, &o.out, &b);
		sw_baseline_free(b);
		if (r)
			return r;
	}

	char agent[PATH_MAX];
	struct sw_error err = {0};
	if (sw_host_find_agent(agent, sizeof(agent), &err) < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_RUN_FAILED;
	}
	char exe_buf[PATH_MAX];
	/* a token only this command and the agent it starts know */
	char token[64];
	if (!o.token && sw_host_new_token(token, sizeof(token)) == 0)
		o.token = token;
	struct sw_launch_options lo = {
	    .agent = agent,
	    .exe = exe ? resolve_exe(exe, exe_buf, sizeof(exe_buf)) : NULL,
	    .threshold_ms = (uint32_t)o.threshold_ms,
	    .interval_ms = (uint32_t)o.interval_ms,
	    .all_threads = o.all_threads,
	    .token = o.token,
	    .wait_ms = HELLO_TIMEOUT_MS,
	};
	struct sw_launch l;
	char **prog_argv = argv + optind;
	r = sw_host_launch(&lo, prog_argv, &l, &err);
	if (r < 0) {
		sw_cli_error("cannot run '%s': %s", prog_argv[0], sw_error_str(&err));
		return r == -ENOENT ? SW_EXIT_RUN_NOT_FOUND : SW_EXIT_RUN_CANNOT_EXEC;
	}
	if (l.script && !exe)
		sw_cli_warn("'%s' is a script: the agent activates in its first process and "
			    "follows it through exec; to watch a program it starts as a child, "
			    "name the program with --exe",
			    prog_argv[0]);
	struct child ch = {.pid = l.pid};
	child_pid = l.pid;
	struct sigaction sa = {.sa_handler = forward};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct sw_session *s = NULL;
	r = connect_agent(&ch, 0, l.connect, HELLO_TIMEOUT_MS, &s);
	if (r < 0)
		return no_hello(&ch, &l, prog_argv[0], lo.exe, r);
	struct sw_session_options so = {.token = o.token, .hello_timeout_ms = HELLO_TIMEOUT_MS};
	if (sw_session_start(s, &so, &err) < 0) {
		sw_session_free(s);
		if (err.code == -EPROTONOSUPPORT) {
			sw_cli_error("cannot talk to the agent in '%s': %s", prog_argv[0],
				     sw_error_str(&err));
			kill(ch.pid, SIGTERM);
			return finish(&ch, &l, SW_EXIT_AGENT);
		}
		return no_hello(&ch, &l, prog_argv[0], lo.exe, -ETIMEDOUT);
	}
	/* what the agent runs in, while it runs: its forked children run it too */
	struct forked fk = {.l = &l, .agent = agent, .watched = (pid_t)sw_session_hello(s)->pid};
	sw_host_process_exe(fk.watched, fk.exe, sizeof(fk.exe));
	const char *hello_name = sw_session_hello(s)->process_name;
	if (!hello_name || !*hello_name)
		hello_name = strrchr(fk.exe, '/') ? strrchr(fk.exe, '/') + 1 : fk.exe;
	snprintf(fk.name, sizeof(fk.name), "%.255s", hello_name);
	o.explain_end = explain_end;
	fk.ch = &ch;
	o.explain_ctx = &fk;
	ch.fk = &fk;
	clock_gettime(CLOCK_MONOTONIC, &ch.fk_scan);
	struct sw_watch_result res = {0};
	o.result = &res;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct follow follow = {.ch = &ch,
				.fk = &fk,
				.connect = l.connect,
				.token = o.token,
				.t0 = t0,
				.duration_s = o.out.duration_s};
	o.next_stream = next_stream;
	o.next_ctx = &follow;
	int status = sw_watch_stream(s, &o, stop_after_exit, &ch, prog_argv[0]);
	sw_session_free(s);
	if (status == SW_EXIT_AGENT) {
		kill(ch.pid, SIGTERM);
		return finish(&ch, &l, SW_EXIT_AGENT);
	}
	/*
	 * The stream ended first (the watched process exec'd, or a wrapper's
	 * first process was the one watched) while the program goes on:
	 * --duration still bounds the run, as CI relies on it.
	 */
	struct timespec pause = {0, 20000000};
	while (!res.limit && o.out.duration_s > 0 && !reap(&ch)) {
		if (sw_watch_elapsed_s(&t0) >= o.out.duration_s)
			res.limit = "--duration";
		else
			nanosleep(&pause, NULL);
	}
	/* --duration or --max-stalls ended the watch: the program ends with it, said once */
	bool stopped = res.limit && !reap(&ch);
	if (stopped) {
		char why[64];
		if (strcmp(res.limit, "--duration") == 0)
			snprintf(why, sizeof(why), "--duration %g", o.out.duration_s);
		else
			snprintf(why, sizeof(why), "--max-stalls %lu", o.out.max_stalls);
		fprintf(stderr, "stallwatch: stopped '%s' (pid %ld) after %llu stall%s: %s\n",
			prog_argv[0], (long)ch.pid, (unsigned long long)res.stalls,
			res.stalls == 1 ? "" : "s", why);
		kill(ch.pid, SIGTERM);
	}
	sw_output_options_finish(&o.out);
	int rc;
	/* 1 only when the program succeeded and a --fail-* condition holds */
	if (status == SW_EXIT_STALLS || (stopped && status == SW_EXIT_OK)) {
		rc = finish(&ch, &l, SW_EXIT_OK);
		if (stopped && rc == 128 + SIGTERM)
			rc = 0; /* we stopped it: not the program's failure */
		rc = rc == 0 && status == SW_EXIT_STALLS ? SW_EXIT_STALLS : rc;
	} else {
		/* a broken stream is our failure, not the program's: timeout(1)'s 125 */
		rc = finish(&ch, &l, status == SW_EXIT_INPUT ? SW_EXIT_RUN_FAILED : status);
	}
	say_forked(&fk); /* when the stream ended before the program did */
	return rc;
}

static const struct sw_opt run_opts[] = {
    {"exe", SW_OPT_EXE, "NAME", "activate in the process running NAME (for wrapper scripts)", NULL},
    SW_OPT_END,
};

static const struct sw_opt *const run_tables[] = {run_opts, sw_watch_opts, sw_output_opts, NULL};

const struct sw_cmd sw_cmd_run = {
    .name = "run",
    .usage = "[options] [--] PROGRAM [ARGS...]",
    .summary = "run a program with the agent and report its main loop's stalls",
    .options = run_tables,
    .min_args = 1,
    .max_args = -1,
    .run = run_run,
};
