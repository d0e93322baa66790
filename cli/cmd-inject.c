/*
 * `stallwatch inject`: makes an existing iOS or macOS build load the agent,
 * for the developer who has a build but no package manager in it: an
 * LC_LOAD_DYLIB for @rpath/libstallwatch.dylib in every slice, the rpath
 * it needs, and the dylib copied into the bundle.  The work is
 * lib/objfile/inject.c's; this file parses options and says what happened
 * and how to re-sign.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "objfile/inject.h"

static const char *kind_name(enum sw_inject_kind kind)
{
	switch (kind) {
	case SW_INJECT_APP:
		return "bundle";
	case SW_INJECT_IPA:
		return "archive";
	case SW_INJECT_BINARY:
		break;
	}
	return "executable";
}

static void say_done(const struct sw_inject_opts *opts, const struct sw_inject_report *rep)
{
	const struct sw_macho_edit_result *e = &rep->edit;
	if (!e->changed) {
		fprintf(stderr, "stallwatch: '%s' %s %s; nothing to do\n", rep->executable,
			opts->remove ? "does not load" : "already loads", SW_INJECT_INSTALL_NAME);
		return;
	}
	fprintf(stderr, "stallwatch: %s %s %s in %u of %u slice%s of '%s'%s\n",
		opts->remove ? "removed" : "added", opts->weak ? "a weak load of" : "a load of",
		SW_INJECT_INSTALL_NAME, e->changed, e->slices, e->slices == 1 ? "" : "s",
		rep->executable,
		e->rpath_added
		    ? (opts->remove ? " with its rpath" : ", and the rpath " SW_INJECT_RPATH)
		    : "");
	if (rep->dylib_copied)
		fprintf(stderr, "stallwatch: %s %s/Frameworks/%s\n",
			opts->remove ? "removed" : "copied the agent to", rep->bundle,
			SW_INJECT_DYLIB_NAME);
	if (rep->backup[0])
		fprintf(stderr, "stallwatch: the original %s is kept in '%s'%s\n",
			kind_name(rep->kind), rep->backup,
			rep->backup_existed ? " (from an earlier run, left as it was)" : "");
}

/* The code signature covers the load commands: print how to sign again. */
static void say_resign(const struct sw_inject_opts *opts, const struct sw_inject_report *rep)
{
	if (!rep->edit.changed)
		return;
	if (rep->edit.signed_slice)
		fprintf(stderr,
			"stallwatch: the code signature of '%s' is no longer valid; sign it "
			"again on a Mac with your identity:\n",
			rep->executable);
	else
		fprintf(stderr, "stallwatch: sign it on a Mac before it runs on a device:\n");
	switch (rep->kind) {
	case SW_INJECT_APP:
		if (!opts->remove)
			printf("codesign --force --sign \"$IDENTITY\" '%s/Frameworks/%s'\n",
			       rep->bundle, SW_INJECT_DYLIB_NAME);
		printf("codesign --force --sign \"$IDENTITY\" --entitlements ENTITLEMENTS.plist "
		       "'%s'\n",
		       rep->bundle);
		break;
	case SW_INJECT_IPA:
		printf("unzip -q '%s' -d ipa && cd ipa\n", opts->target);
		if (!opts->remove)
			printf("codesign --force --sign \"$IDENTITY\" '%s/Frameworks/%s'\n",
			       rep->bundle, SW_INJECT_DYLIB_NAME);
		printf("codesign --force --sign \"$IDENTITY\" --entitlements ENTITLEMENTS.plist "
		       "'%s'\n",
		       rep->bundle);
		printf("zip -qry ../resigned.ipa Payload\n");
		break;
	case SW_INJECT_BINARY:
		printf("codesign --force --sign \"$IDENTITY\" '%s'\n", rep->executable);
		break;
	}
}

static int fail(const struct sw_cmd *cmd, int r, const struct sw_error *err)
{
	if (r == -EDESTADDRREQ)
		return sw_cli_usage(cmd, "%s: give --dylib PATH (or set STALLWATCH_DYLIB)",
				    sw_error_str(err));
	if (r == -ENOMEM)
		return sw_cli_fail(SW_FAIL_INPUT, r, "out of memory");
	bool writing = r == -EIO || r == -ENOSPC ? false : r == -EROFS || r == -EACCES;
	return sw_cli_fail(writing ? SW_FAIL_OUTPUT : SW_FAIL_INPUT, r, "cannot inject: %s",
			   sw_error_str(err));
}

static int inject_run(const struct sw_cmd *cmd, int argc, char **argv)
{
	struct sw_inject_opts opts = {.dylib = getenv("STALLWATCH_DYLIB")};
	struct sw_getopt g;
	sw_getopt_init(&g, cmd, false);
	int c, r;
	while ((r = sw_getopt_next(&g, cmd, argc, argv, &c)) == 1) {
		switch (c) {
		case SW_OPT_DYLIB:
			opts.dylib = optarg;
			break;
		case SW_OPT_WEAK:
			opts.weak = true;
			break;
		case SW_OPT_REMOVE:
			opts.remove = true;
			break;
		}
	}
	if (r)
		return r;
	if ((r = sw_cli_check_args(cmd, argc - optind)))
		return r;
	if (opts.remove && opts.weak)
		return sw_cli_usage(cmd, "--weak makes no sense with --remove");
	if (opts.dylib && !*opts.dylib)
		opts.dylib = NULL;
	opts.target = argv[optind];
	struct sw_inject_report rep;
	struct sw_error err = {0};
	r = sw_inject(&opts, &rep, &err);
	if (r < 0)
		return fail(cmd, r, &err);
	say_done(&opts, &rep);
	say_resign(&opts, &rep);
	return sw_cli_finish_stdout(SW_EXIT_OK);
}

static const struct sw_opt inject_opts[] = {
    {"dylib", SW_OPT_DYLIB, "PATH",
     "the agent built for the app's platform (libstallwatch.dylib), copied\n"
     "into APP.app/Frameworks/; default $STALLWATCH_DYLIB",
     NULL},
    {"weak", SW_OPT_WEAK, NULL, "a weak load: the app still starts when the dylib is missing",
     NULL},
    {"remove", SW_OPT_REMOVE, NULL, "take the load command, its rpath and the dylib out again",
     NULL},
    SW_OPT_END,
};

static const struct sw_opt *const inject_tables[] = {inject_opts, NULL};

const struct sw_cmd sw_cmd_inject = {
    .name = "inject",
    .usage = "[--dylib PATH] [--weak] [--remove] APP.app|APP.ipa|EXECUTABLE",
    .summary = "make an iOS or macOS build load the agent",
    .options = inject_tables,
    .help = "Adds an LC_LOAD_DYLIB for " SW_INJECT_INSTALL_NAME " to every slice of the\n"
	    "executable, the rpath " SW_INJECT_RPATH " when it is missing, and\n"
	    "copies the dylib into the bundle.  The original is kept first: APP.orig\n"
	    "(the bundle's executable), APP.ipa.orig, EXECUTABLE.orig.  A second inject\n"
	    "does nothing.  Refused with status 5, nothing written: encrypted (App\n"
	    "Store) binaries, no room after the load commands, not a Mach-O executable.\n"
	    "The code signature is invalid afterwards: the codesign commands that sign\n"
	    "it again are printed on standard output.\n",
    .min_args = 1,
    .max_args = 1,
    .run = inject_run,
};
