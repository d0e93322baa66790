/*
 * stallwatch doctor: what works on this host and what is missing, each
 * problem with its fix, in one run: the agent library (found, and loaded
 * by the dynamic loader), usbmuxd and the devices it lists (each paired and
 * trusted), symbols for the recordings and binaries named, debuginfod, and
 * the STALLWATCH_* variables in effect.  One line a check on stdout:
 *
 *   ok    agent       /usr/lib/stallwatch/libstallwatch-agent.so loads
 *   FAIL  usbmuxd     cannot connect to usbmuxd: No such file or directory
 *         fix: start usbmuxd (systemctl start usbmuxd), or set USBMUXD_SOCKET_ADDRESS
 *   skip  debuginfod  DEBUGINFOD_URLS is not set
 *
 * Exits 0 when every check that ran works, else with the status of the
 * first failure's kind (status.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "device/device-format.h"
#include "device/device.h"
#include "host/launch.h"
#include "report/report.h"
#include "objfile/object.h"
#include "symbols/symbolicate.h"
#include "symbols/symsearch.h"
#include "wire/recording.h"
#include "wire/stalls.h"

#define MAX_PATHS 64

struct doctor {
	int status; /* of the first failure */
	unsigned failed;
	const char *symbols[MAX_PATHS];
	size_t nsymbols;
};

/* One line: "ok", "FAIL" (with the status it stands for) or "skip". */
static void say(struct doctor *d, const char *verdict, int status, const char *what,
		const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void say(struct doctor *d, const char *verdict, int status, const char *what,
		const char *fix, const char *fmt, ...)
{
	va_list ap;
	printf("%-5s %-11s ", verdict, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (fix)
		printf("      fix: %s\n", fix);
	if (strcmp(verdict, "FAIL") == 0) {
		if (!d->failed++)
			d->status = status;
	}
}

/*
 * Loadable: a shell started with the agent preloaded (told to stay inactive)
 * runs without the loader's complaint.
 */
static int preload_error(const char *agent, char *msg, size_t size)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		setenv("LD_PRELOAD", agent, 1);
		setenv("STALLWATCH_PID", "1", 1); /* never this process: the agent stays idle */
		unsetenv("STALLWATCH_EXE");
		execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t n;
	while (len < size - 1 && (n = read(pfd[0], msg + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(pfd[0]);
	msg[len] = 0;
	int st = 0;
	waitpid(pid, &st, 0);
	char *nl = strchr(msg, '\n');
	if (nl)
		*nl = 0;
	return len || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ? 1 : 0;
}

static void check_agent(struct doctor *d)
{
	char agent[PATH_MAX], msg[512];
	struct sw_error err = {0};
	if (sw_host_find_agent(agent, sizeof(agent), &err) < 0) {
		say(d, "FAIL", SW_EXIT_AGENT, "agent",
		    "install stallwatch (meson install), or set STALLWATCH_AGENT to "
		    "libstallwatch-agent.so",
		    "%s", sw_error_str(&err));
		return;
	}
	int r = preload_error(agent, msg, sizeof(msg));
	if (r == 0)
		say(d, "ok", 0, "agent", NULL, "%s loads", agent);
	else
		say(d, "FAIL", SW_EXIT_AGENT, "agent",
		    "rebuild it for this system (ninja -C build), or point STALLWATCH_AGENT at a "
		    "libstallwatch-agent.so built for it",
		    "%s does not load: %s", agent, r < 0 ? strerror(-r) : msg);
}

static void check_devices(struct doctor *d)
{
	if (!sw_device_supported()) {
		say(d, "skip", 0, "devices",
		    "install libimobiledevice-dev, libplist-dev and libusbmuxd-dev (.ci/deps "
		    "--features) and rebuild",
		    "built without device support");
		return;
	}
	unsigned timeout_ms;
	if (sw_device_timeout_from_env(&timeout_ms) < 0)
		timeout_ms = 10000; /* the variable is judged below, with the others */
	struct sw_device_info *devs = NULL;
	size_t n = 0;
	struct sw_error err = {0};
	if (sw_device_list(timeout_ms, true, &devs, &n, &err) < 0) {
		say(d, "FAIL", SW_EXIT_DEVICE, "usbmuxd",
		    "start usbmuxd (systemctl start usbmuxd, or usbmuxd -f), or set "
		    "USBMUXD_SOCKET_ADDRESS to where it listens",
		    "%s", sw_error_str(&err));
		return;
	}
	const char *addr = getenv("USBMUXD_SOCKET_ADDRESS");
	say(d, "ok", 0, "usbmuxd", NULL, "reachable%s%s, %zu device%s", addr ? " at " : "",
	    addr ? addr : "", n, n == 1 ? "" : "s");
	if (n == 0)
		say(d, "skip", 0, "devices", NULL, "none attached");
	for (size_t i = 0; i < n; i++) {
		const struct sw_device_info *v = &devs[i];
		sw_error_clear(&err);
		if (!(v->conn & SW_DEVICE_USB))
			say(d, "skip", 0, "device", NULL,
			    "%s is on the network only: attach works "
			    "over USB",
			    v->udid);
		else if (v->info_status)
			say(d, "FAIL", SW_EXIT_DEVICE, "device",
			    "unlock it; check the cable; see stallwatch-devices(1)", "%s: %s",
			    v->udid, v->info_error);
		else if (sw_device_check_paired(v->udid, timeout_ms, &err) < 0)
			say(d, "FAIL", SW_EXIT_DEVICE, "device",
			    "unlock the device and tap Trust, or run 'idevicepair pair'",
			    "%s (%s, iOS %s): %s", v->udid, v->name, v->product_version,
			    sw_error_str(&err));
		else
			say(d, "ok", 0, "device", NULL, "%s (%s, iOS %s) is paired and trusted",
			    v->udid, v->name, v->product_version);
	}
	free(devs);
}

static struct sw_symsearch *new_search(const struct doctor *d)
{
	struct sw_symsearch *ss = NULL;
	if (sw_symsearch_new(&ss) < 0)
		return NULL;
	for (size_t i = 0; i < d->nsymbols; i++)
		sw_symsearch_add_path(ss, d->symbols[i]);
	sw_symsearch_add_env(ss);
	sw_symsearch_add_host(ss);
	return ss;
}

static size_t named_functions(const struct sw_object *obj)
{
	size_t n = 0;
	for (size_t i = 0; i < obj->nsymbols; i++)
		n += !(obj->symbols[i].flags & SW_SYMBOL_SYNTHETIC);
	return n;
}

/* A binary: its functions and line tables, from itself or its debug file. */
static void check_binary(struct doctor *d, const char *path)
{
	struct sw_symbolicator *sym = NULL;
	struct sw_symsearch *ss = new_search(d);
	const struct sw_object *obj;
	struct sw_error err = {0};
	struct sw_image_ref ref = {.path = path};
	if (!ss || sw_symbolicator_new(0, &sym) < 0) {
		say(d, "FAIL", SW_EXIT_SOFTWARE, "symbols", NULL, "out of memory");
	} else {
		sw_symbolicator_set_symsearch(sym, ss);
		int r = sw_symbolicator_image(sym, &ref, &obj, &err);
		if (r < 0)
			say(d, "FAIL", SW_EXIT_INPUT, "symbols", "name a binary or a recording",
			    "cannot read '%s': %s", path, sw_error_str(&err));
		else if (!named_functions(obj))
			say(d, "FAIL", SW_EXIT_SYMBOLS, "symbols",
			    "build without stripping, or give its debug file with -S",
			    "'%s' has no function names", path);
		else
			say(d, "ok", 0, "symbols", NULL, "'%s': %zu named functions%s", path,
			    named_functions(obj),
			    obj->has_debug_info ? ", with DWARF" : "; no DWARF (no files, lines)");
	}
	sw_symbolicator_free(sym);
	sw_symsearch_free(ss);
}

/* A recording: the images of its stalls, symbolicated as report would. */
static void check_recording(struct doctor *d, const char *path)
{
	struct sw_recording *rec = NULL;
	struct sw_profile *p = NULL;
	struct sw_report *rep = NULL;
	struct sw_stalls *c = NULL;
	struct sw_symsearch *ss = new_search(d);
	struct sw_error err = {0};
	size_t stalls = 0;
	int r = sw_recording_open(path, &rec, &err);
	if (r >= 0 && (!ss || sw_profile_new(&p) < 0 || sw_stalls_new(&c) < 0 ||
		       sw_report_new(p, ss, &rep) < 0))
		r = sw_error_set(&err, -ENOMEM, "out of memory");
	for (;;) {
		struct sw_wire_msg m;
		const struct sw_stall *st = NULL;
		struct sw_tree_stall *ts;
		if (r < 0 || (r = sw_recording_next(rec, &m, &err)) <= 0)
			break;
		if (sw_stalls_feed(c, &m, &st) == 1 &&
		    sw_report_add_stall(rep, c, st, NULL, &ts) >= 0)
			stalls++;
	}
	const char *missing = rep ? sw_report_missing(rep) : NULL;
	if (missing)
		missing += strspn(missing, " ");
	if (r < 0)
		say(d, "FAIL", SW_EXIT_INPUT, "symbols", NULL, "cannot read '%s': %s", path,
		    sw_error_str(&err));
	else if (missing)
		say(d, "FAIL", SW_EXIT_SYMBOLS, "symbols",
		    "give the folders holding these binaries or their dSYM/.debug files with -S "
		    "(or STALLWATCH_SYMBOLS), or set DEBUGINFOD_URLS",
		    "'%s': not found for %zu stall%s: %.*s", path, stalls, stalls == 1 ? "" : "s",
		    (int)strcspn(missing, "\n"), missing);
	else
		say(d, "ok", 0, "symbols", NULL, "'%s': every image of its %zu stall%s found", path,
		    stalls, stalls == 1 ? "" : "s");
	sw_report_free(rep);
	sw_stalls_free(c);
	sw_profile_free(p);
	sw_symsearch_free(ss);
	sw_recording_free(rec);
}

static void check_file(struct doctor *d, const char *path)
{
	char head[8] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof(head));
	if (fd >= 0)
		close(fd);
	if (n == (ssize_t)sizeof(head) && memcmp(head, "SWTRACE", 7) == 0)
		check_recording(d, path);
	else
		check_binary(d, path);
}

static void check_debuginfod(struct doctor *d)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!SW_HAVE_DEBUGINFOD)
		say(d, "skip", 0, "debuginfod", "install libdebuginfod-dev and rebuild",
		    "built without debuginfod");
	else if (!urls || !*urls)
		say(d, "skip", 0, "debuginfod",
		    "export DEBUGINFOD_URLS=https://debuginfod.debian.net (your distribution's "
		    "server) to fetch the debug info of system libraries",
		    "DEBUGINFOD_URLS is not set");
	else
		say(d, "ok", 0, "debuginfod", NULL, "DEBUGINFOD_URLS=%s", urls);
}

/* The variables stallwatch and its agent read (stallwatch(1), stallwatch-agent(7)). */
static const char *const known_vars[] = {
    "STALLWATCH_AGENT",
    "STALLWATCH_SYMBOLS",
    "STALLWATCH_DEVICE_TIMEOUT",
    "STALLWATCH_PROGRESS_AFTER_MS",
    "STALLWATCH_TOKEN",
    "STALLWATCH_LOG",
    "STALLWATCH_RING_KB",
    "STALLWATCH_WAIT_MS",
    "STALLWATCH_EXE",
    "STALLWATCH_PID",
    "STALLWATCH_LISTEN",
    "STALLWATCH_THRESHOLD_MS",
    "STALLWATCH_INTERVAL_MS",
    "STALLWATCH_ALL_THREADS",
    "STALLWATCH_MAX_DEPTH",
    "STALLWATCH_BUNDLE_ID",
    "STALLWATCH_BUNDLE_VERSION",
    "STALLWATCH_DETECTOR",
    "STALLWATCH_DISABLE",
    "STALLWATCH_FORCE",
    "STALLWATCH_DEMO",
    "STALLWATCH_DYLIB",
    "STALLWATCH_PROOF",
    "STALLWATCH_SIGNALS",
    "STALLWATCH_NO_INDEX",
    "STALLWATCH_IMOBILEDEVICE",
    "STALLWATCH_LIBZIP",
    "STALLWATCH_DEBUGINFOD_LIB",
    NULL,
};

static bool known_var(const char *name, size_t len)
{
	for (size_t i = 0; known_vars[i]; i++)
		if (strlen(known_vars[i]) == len && strncmp(known_vars[i], name, len) == 0)
			return true;
	return false;
}

/* Whether every folder of STALLWATCH_SYMBOLS exists; says which does not. */
static bool check_symbols_var(struct doctor *d, const char *value)
{
	char *copy = strdup(value), *save = NULL;
	bool fine = true;
	for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p;
	     p = strtok_r(NULL, ":", &save)) {
		struct stat st;
		if (stat(p, &st) < 0) {
			say(d, "FAIL", SW_EXIT_USAGE, "env", "remove it from STALLWATCH_SYMBOLS",
			    "STALLWATCH_SYMBOLS names '%s': %s", p, strerror(errno));
			fine = false;
		}
	}
	free(copy);
	return fine;
}

static void check_environment(struct doctor *d)
{
	extern char **environ;
	unsigned n = 0, ms;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "STALLWATCH_", 11) != 0)
			continue;
		n++;
		size_t len = strcspn(*e, "=");
		const char *value = (*e)[len] ? *e + len + 1 : "";
		if (!known_var(*e, len))
			say(d, "FAIL", SW_EXIT_USAGE, "env",
			    "check its spelling against stallwatch(1) and stallwatch-agent(7)",
			    "%.*s is not a variable stallwatch reads", (int)len, *e);
		else if (strncmp(*e, "STALLWATCH_DEVICE_TIMEOUT=", 26) == 0 &&
			 sw_device_timeout_from_env(&ms) < 0)
			say(d, "FAIL", SW_EXIT_USAGE, "env", "seconds, from 1 to 3600",
			    "STALLWATCH_DEVICE_TIMEOUT='%s' is not valid", value);
		else if (strncmp(*e, "STALLWATCH_SYMBOLS=", 19) != 0 || check_symbols_var(d, value))
			say(d, "ok", 0, "env", NULL, "%s", *e);
	}
	if (!n)
		say(d, "ok", 0, "env", NULL, "no STALLWATCH_* variable set");
}

static int doctor_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct doctor d = {0};
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, false);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		if (d.nsymbols == MAX_PATHS)
			return sw_cli_usage(cmd, "too many --symbols paths");
		d.symbols[d.nsymbols++] = optarg;
	}
	if (r)
		return r;
	check_agent(&d);
	check_devices(&d);
	for (int i = optind; i < argc; i++)
		check_file(&d, argv[i]);
	check_debuginfod(&d);
	check_environment(&d);
	printf("%s\n",
	       d.failed ? "some checks failed: see the fixes above" : "everything checked works");
	return sw_cli_finish_stdout(d.failed ? d.status : SW_EXIT_OK);
}

static const struct sw_opt doctor_opts[] = {
    {"symbols", 'S', "PATH", "look for binaries and debug files in PATH too", NULL},
    SW_OPT_END,
};

static const struct sw_opt *const doctor_tables[] = {doctor_opts, NULL};

const struct sw_cmd sw_cmd_doctor = {
    .name = "doctor",
    .usage = "[-S PATH] [RECORDING|BINARY ...]",
    .summary = "say what works on this host and what is missing, each with its fix",
    .options = doctor_tables,
    .help = "Checks the agent library, usbmuxd and each device (paired and trusted),\n"
	    "symbols for each RECORDING or BINARY named, debuginfod, and the STALLWATCH_*\n"
	    "variables in effect.\n",
    .min_args = 0,
    .max_args = -1,
    .run = doctor_run,
};
