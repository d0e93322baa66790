/*
 * debuginfod end to end: starts Debian's debuginfod serving our own ELF
 * fixtures and fetches a debug file through libdebuginfod, as the symbol
 * search does.  debuginfod 0.188 cannot bind to loopback only, so when
 * `unshare -rn` works the test re-runs itself in a private network
 * namespace whose only interface is lo; the client always talks to
 * http://127.0.0.1:PORT with a temporary DEBUGINFOD_CACHE_PATH.  Skips
 * (77) without debuginfod or libdebuginfod.
 *
 * usage: test-symsearch-debuginfod ELF-FIXTURE-DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "symbols/symsearch-private.h"
#include "symbols/symsearch.h"
#include "test.h"

extern char **environ;

static const char *dir;

static size_t read_id(const char *name, uint8_t id[32])
{
	char path[4096], line[128];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		exit(1);
	fclose(f);
	for (; n < 32 && line[2 * n] && line[2 * n] != '\n'; n++) {
		unsigned v;

		sscanf(line + 2 * n, "%2x", &v);
		id[n] = (uint8_t)v;
	}
	return n;
}

static int run(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have(const char *prog)
{
	char *argv[] = {"sh", "-c", NULL, NULL};
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	argv[2] = cmd;
	return run(argv) == 0;
}

static pid_t start_server(const char *tmp, int port)
{
	char portarg[32], db[4096], served[4096], log[4096];
	posix_spawn_file_actions_t fa;
	pid_t pid;

	snprintf(portarg, sizeof(portarg), "--port=%d", port);
	snprintf(db, sizeof(db), "--database=%s/db.sqlite", tmp);
	snprintf(served, sizeof(served), "%s/served", dir);
	snprintf(log, sizeof(log), "%s/debuginfod.log", tmp);
	char *argv[] = {"debuginfod",     portarg,           db,     "-F", "--rescan-time=0",
			"--groom-time=0", "--concurrency=1", served, NULL};
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (posix_spawnp(&pid, "debuginfod", &fa, NULL, argv, environ) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* Asks until the server has scanned its tree (each try with a fresh client cache). */
static int fetch(const char *tmp, const uint8_t *id, size_t len, char **ret)
{
	char cache[4096];
	struct timespec ts = {0, 200 * 1000 * 1000};

	for (int i = 0; i < 150; i++) {
		snprintf(cache, sizeof(cache), "%s/cache-%d", tmp, i);
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
		if (sw_symsearch_debuginfod(id, len, ret, NULL) == 0)
			return i;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void test_server(const char *tmp, int port)
{
	struct sw_symsearch *s;
	struct sw_symsearch_result r;
	const struct sw_symsearch_miss *m;
	struct sw_error err;
	uint8_t id[32], other[32];
	char url[64], *path = NULL;
	struct sw_symsearch_query q = {.id = id};
	pid_t pid;
	int tries;

	/* The server would forward misses to DEBUGINFOD_URLS: start it without. */
	unsetenv("DEBUGINFOD_URLS");
	pid = start_server(tmp, port);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_TIMEOUT", "5", 1);
	q.id_len = read_id("served.buildid", id);
	tries = fetch(tmp, id, q.id_len, &path);
	CHECK(tries >= 0);
	CHECK(path && strncmp(path, tmp, strlen(tmp)) == 0);
	free(path);
	printf("debuginfod answered after %d tries\n", tries + 1);

	/* Through the search: only debuginfod knows this build-id. */
	CHECK_INT(sw_symsearch_new(&s), 0);
	CHECK_INT(sw_symsearch_set_debug_root(s, ""), 0);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK(r.debug && strncmp(r.debug, tmp, strlen(tmp)) == 0);
	CHECK(r.binary == NULL);
	sw_symsearch_result_finish(&r);
	/* A build-id the server does not have: a miss. */
	q.id = other;
	q.id_len = read_id("lost.buildid", other);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	CHECK_INT(sw_symsearch_misses(s, &m), 2); /* the served one lacks its binary */
	CHECK_INT(m[1].missing, SW_SYMFILE_BINARY | SW_SYMFILE_DEBUG);
	/* Without debuginfod the served build-id is not found either. */
	sw_symsearch_set_debuginfod(s, false);
	q.id = id;
	q.id_len = read_id("served.buildid", id);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	sw_symsearch_free(s);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/sw-debuginfod-XXXXXX", skip[4096];
	int port = 8002;

	if (argc != 2) {
		fprintf(stderr, "usage: test-symsearch-debuginfod ELF-FIXTURE-DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(skip, sizeof(skip), "%s/SKIP", dir);
	if (!SW_HAVE_DEBUGINFOD)
		sw_test_skip("built without libdebuginfod");
	if (access(skip, F_OK) == 0)
		sw_test_skip("ELF fixture tools missing");
	if (!have("debuginfod"))
		sw_test_skip("debuginfod is not installed");
	if (!getenv("SW_TEST_NETNS")) {
		char *probe[] = {"unshare", "-rn", "true", NULL};

		if (have("unshare") && have("ip") && run(probe) == 0) {
			char *args[] = {"unshare", "-rn", argv[0], argv[1], NULL};

			setenv("SW_TEST_NETNS", "1", 1);
			execvp("unshare", args);
		}
		/* No private namespace: the server also listens beyond loopback, on a random port.
		 */
		srand((unsigned)getpid());
		port = 20000 + rand() % 20000;
	} else {
		char *up[] = {"ip", "link", "set", "lo", "up", NULL};

		CHECK_INT(run(up), 0);
	}
	if (!mkdtemp(tmp))
		return 1;
	test_server(tmp, port);
	{
		char *rm[] = {"rm", "-rf", tmp, NULL};

		run(rm);
	}
	return sw_test_end();
}
