/*
 * stallwatch demo: runs the bundled demo app (cli/demo/stallwatch-demo.c,
 * installed beside the agent) under the agent and prints its stalls as
 * symbolicated call trees: the quickest way to see what stallwatch does.
 * It is `stallwatch run [options] -- stallwatch-demo`, with the output
 * options checked here so that mistakes name this verb.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host/demo.h"
#include "output.h"

extern const struct sw_cmd sw_cmd_run;

static int demo_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct sw_output_options o;
	sw_output_options_init(&o);
	int r = sw_output_parse(cmd, argc, argv, &o);
	/* the demo app writes nothing on standard output: results may go there */
	bool results_given = o.results != NULL;
	sw_output_options_finish(&o);
	if (r)
		return r;
	r = sw_cli_check_args(cmd, argc - optind);
	if (r)
		return r;
	char demo[PATH_MAX];
	struct sw_error err = {0};
	if (sw_host_find_demo(demo, sizeof(demo), &err) < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_RUN_FAILED;
	}
	/* run's argv: "run", our options, "--", the demo */
	char **args = calloc((size_t)argc + 5, sizeof(*args));
	if (!args)
		return sw_cli_fail(SW_FAIL_USAGE, -ENOMEM, "out of memory");
	int n = 0;
	args[n++] = "run";
	if (!results_given) {
		args[n++] = "--results";
		args[n++] = "-";
	}
	for (int i = 1; i < optind; i++)
		args[n++] = argv[i];
	args[n++] = "--";
	args[n++] = demo;
	int status = sw_cmd_run.run(&sw_cmd_run, n, args);
	free(args);
	return status;
}

static const struct sw_opt *const demo_tables[] = {sw_output_opts, NULL};

const struct sw_cmd sw_cmd_demo = {
    .name = "demo",
    .usage = "[options]",
    .summary = "run a small demo app that stalls and print its call trees",
    .options = demo_tables,
    .min_args = 0,
    .max_args = 0,
    .run = demo_run,
};
