/*
 * `stallwatch inject`'s work: makes an iOS or macOS executable load the
 * agent, whether it is given as a bare Mach-O file, an .app bundle or an
 * .ipa archive.  The load commands are written by macho-edit.c; this file
 * finds the executable (Info.plist's CFBundleExecutable), keeps the
 * original, copies the dylib into the bundle's Frameworks/ and, for an
 * .ipa, rewrites the archive with libzip, every other entry unchanged.
 */
#ifndef SW_INJECT_H
#define SW_INJECT_H

#include <limits.h>
#include <stdbool.h>

#include "macho-edit.h"
#include "util/error.h"

#define SW_INJECT_INSTALL_NAME "@rpath/libstallwatch.dylib"
#define SW_INJECT_RPATH        "@executable_path/Frameworks"
#define SW_INJECT_DYLIB_NAME   "libstallwatch.dylib"

enum sw_inject_kind { SW_INJECT_BINARY, SW_INJECT_APP, SW_INJECT_IPA };

struct sw_inject_opts {
	const char *target; /* APP.app, APP.ipa or a Mach-O executable */
	const char *dylib;  /* the agent to copy into a bundle; NULL: none */
	bool weak;
	bool remove;
};

struct sw_inject_report {
	enum sw_inject_kind kind;
	char executable[PATH_MAX]; /* the file edited (inside the archive for an .ipa) */
	char bundle[PATH_MAX];     /* the .app (inside the archive for an .ipa), or "" */
	char backup[PATH_MAX];     /* where the original was kept, "" when nothing changed */
	bool backup_existed;       /* an earlier run's backup was kept as it was */
	bool dylib_copied;         /* the dylib was copied in (or, removing, taken out) */
	struct sw_macho_edit_result edit;
};

/*
 * Does the edit opts asks for.  Returns 0 with *ret filled (ret->edit.changed
 * is 0 when there was nothing to do and nothing was written), or -errno
 * with err set: -ENOENT and -EISDIR for a target or dylib that is not
 * there, -ENOEXEC, -EPERM, -ENOSPC, -EINVAL as sw_macho_add_dylib(),
 * -ENOTSUP for an .ipa in a build without libzip.  On failure the
 * target is as it was.
 */
int sw_inject(const struct sw_inject_opts *opts, struct sw_inject_report *ret,
	      struct sw_error *err);

#endif
