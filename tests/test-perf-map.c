/*
 * Tests for the perf map reader (symbols/perf-map.h): the line forms JITs
 * write, a later line over an earlier one, lines appended after a lookup, a
 * line still being written, a file rewritten by the pid's next process, a
 * stale file, and lines that are not a perf map's.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbols/perf-map.h"
#include "test.h"

static char path[] = "/tmp/sw-test-perf-map-XXXXXX";

static void write_file(const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char *name_at(struct sw_perf_map *m, uint64_t addr, uint64_t *start)
{
	*start = 0;
	return sw_perf_map_lookup(m, addr, start);
}

int main(void)
{
	int fd = mkstemp(path);
	if (fd < 0)
		sw_test_skip("cannot create a file in /tmp");
	close(fd);
	struct sw_perf_map *m;
	uint64_t start;

	/* V8's form (no 0x), the JVM agent's (0x), a name with spaces, a CRLF line */
	write_file("7fa3067c5900 180 JS:*fib /tmp/app.js:1:13\n"
		   "0x7f0000001000 0x40 Ljava/lang/String;hashCode\n"
		   "1000 10 py::main:/tmp/x.py\r\n"
		   "not a line\n"
		   "2000 0 empty\n"
		   "3000 zz bad size\n",
		   "w");
	CHECK_INT(sw_perf_map_new(path, 0, &m), 0);
	CHECK_STR(name_at(m, 0x7fa3067c5900, &start), "JS:*fib /tmp/app.js:1:13");
	CHECK_INT(start, 0x7fa3067c5900);
	CHECK_STR(name_at(m, 0x7fa3067c5a7f, &start), "JS:*fib /tmp/app.js:1:13");
	CHECK(name_at(m, 0x7fa3067c5a80, &start) == NULL); /* one past its end */
	CHECK(name_at(m, 0x7fa3067c58ff, &start) == NULL);
	CHECK_STR(name_at(m, 0x7f000000103f, &start), "Ljava/lang/String;hashCode");
	CHECK_STR(name_at(m, 0x1008, &start), "py::main:/tmp/x.py");
	CHECK(name_at(m, 0x2000, &start) == NULL); /* size 0 */
	CHECK(name_at(m, 0x3000, &start) == NULL); /* no size */

	/* appended after the first read: found at the next miss; a later line wins */
	const char *fib = name_at(m, 0x7fa3067c5900, &start);
	write_file("7fa3067c5900 40 JS:*fib2 /tmp/app.js:9:1\n"
		   "500000 100 JS:~loop /tmp/app.js:3:1\n"
		   "600000 100 JS:~half",
		   "a");
	CHECK_STR(name_at(m, 0x500010, &start), "JS:~loop /tmp/app.js:3:1");
	CHECK_STR(name_at(m, 0x7fa3067c5910, &start), "JS:*fib2 /tmp/app.js:9:1");
	/* past the newer, shorter line, the older one still covers */
	CHECK_STR(name_at(m, 0x7fa3067c5950, &start), "JS:*fib /tmp/app.js:1:13");
	CHECK_STR(fib, "JS:*fib /tmp/app.js:1:13"); /* names handed out stay valid */
	/* a line without its newline is being written: not read yet, then read whole */
	CHECK(name_at(m, 0x600010, &start) == NULL);
	write_file(" /tmp/app.js:7:1\n", "a");
	CHECK_STR(name_at(m, 0x600010, &start), "JS:~half /tmp/app.js:7:1");

	/* rewritten shorter: the pid's next process; the earlier lines are void */
	write_file("900000 10 next\n", "w");
	CHECK_STR(name_at(m, 0x900000, &start), "next");
	CHECK(name_at(m, 0x500010, &start) == NULL);
	CHECK_STR(fib, "JS:*fib /tmp/app.js:1:13");
	sw_perf_map_free(m);

	/* last written before the process started: another process's */
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	CHECK_INT(utimensat(AT_FDCWD, path, old, 0), 0);
	CHECK_INT(sw_perf_map_new(path, 1000000001, &m), 0);
	CHECK(name_at(m, 0x900000, &start) == NULL);
	sw_perf_map_free(m);
	CHECK_INT(sw_perf_map_new(path, 1000000000, &m), 0);
	CHECK_STR(name_at(m, 0x900000, &start), "next");
	sw_perf_map_free(m);

	/* no file: nothing, and no error */
	unlink(path);
	CHECK_INT(sw_perf_map_new(path, 0, &m), 0);
	CHECK(name_at(m, 0x900000, &start) == NULL);
	sw_perf_map_free(m);
	return sw_test_end();
}
