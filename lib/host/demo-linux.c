/*
 * Finding the demo app on Linux (see demo.h): the command's own directory
 * comes from /proc/self/exe.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"
#include "launch.h"

static int executable(const char *path, char *buf, size_t cap)
{
	char real[PATH_MAX];
	if (access(path, X_OK) < 0 || !realpath(path, real))
		return -ENOENT;
	snprintf(buf, cap, "%s", real);
	return 0;
}

static int beside(const char *file, char *buf, size_t cap)
{
	char dir[PATH_MAX], path[PATH_MAX + sizeof(SW_DEMO_NAME) + 1];
	snprintf(dir, sizeof(dir), "%s", file);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, SW_DEMO_NAME);
	return executable(path, buf, cap);
}

int sw_host_find_demo(char *buf, size_t cap, struct sw_error *err)
{
	const char *env = getenv("STALLWATCH_DEMO");
	if (env && *env) {
		if (executable(env, buf, cap) < 0)
			return sw_error_set(err, -ENOENT,
					    "STALLWATCH_DEMO names '%s', which is missing", env);
		return 0;
	}
	char agent[PATH_MAX], exe[PATH_MAX];
	if (sw_host_find_agent(agent, sizeof(agent), NULL) == 0 && beside(agent, buf, cap) == 0)
		return 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		if (beside(exe, buf, cap) == 0)
			return 0;
	}
	return sw_error_set(err, -ENOENT, "cannot find the demo app %s (set STALLWATCH_DEMO)",
			    SW_DEMO_NAME);
}
