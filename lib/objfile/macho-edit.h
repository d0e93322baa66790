/*
 * The Mach-O writer behind `stallwatch inject`: adds or takes out one
 * LC_LOAD_DYLIB (or LC_LOAD_WEAK_DYLIB) and the LC_RPATH it needs, in the
 * room every linker leaves between the load commands and the first
 * section, in each slice of a thin or universal executable.
 *
 * The file keeps its size and every byte but the header's command count and
 * size and the commands' area, so adding and then removing gives back the
 * original bytes.  Every slice is checked before any is changed: on failure
 * nothing is written.  After an edit the reader (macho-fat.c) lists the
 * slices again and each slice's commands are walked once more.
 */
#ifndef SW_MACHO_EDIT_H
#define SW_MACHO_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct sw_macho_dylib_edit {
	const char *install_name; /* e.g. "@rpath/libstallwatch.dylib" */
	const char *rpath;        /* added when no LC_RPATH has it; NULL for none */
	bool weak;                /* LC_LOAD_WEAK_DYLIB: the app starts without it */
};

/* What an edit found and did, for the command to report. */
struct sw_macho_edit_result {
	unsigned slices;   /* slices in the file */
	unsigned changed;  /* slices changed (0: nothing to do, nothing written) */
	bool signed_slice; /* a slice carries LC_CODE_SIGNATURE, now invalid */
	bool rpath_added;  /* the rpath was added (or taken out) along with the dylib */
};

/*
 * Makes every slice of data (len bytes, edited in place) load
 * edit->install_name.  Slices that already load it are left alone.
 * Returns 0 (see *ret_result) or -errno with err set: -ENOEXEC when data is
 * not a little-endian Mach-O executable, -EPERM when a slice is encrypted
 * (an App Store build), -ENOSPC when a slice has no room for the commands,
 * -EINVAL when a header or command is malformed.
 */
int sw_macho_add_dylib(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
		       struct sw_macho_edit_result *ret_result, struct sw_error *err);

/*
 * Takes edit->install_name out of every slice that loads it, and the rpath
 * with it when it directly follows the dylib command (where
 * sw_macho_add_dylib put it).  Same returns as above.
 */
int sw_macho_remove_dylib(uint8_t *data, size_t len, const struct sw_macho_dylib_edit *edit,
			  struct sw_macho_edit_result *ret_result, struct sw_error *err);

#endif
