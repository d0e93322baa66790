/*
 * What the host library needs from the operating system it runs on, one
 * implementation per system (host-darwin.c, host-linux.c; meson picks the
 * file by host_machine.system(), so shared code carries no OS tests).
 */
#ifndef SW_HOST_H
#define SW_HOST_H

#include <stddef.h>

enum sw_host_dir_kind {
	SW_HOST_DIR_INDEX,  /* search recursively by id (Xcode's DerivedData, Archives) */
	SW_HOST_DIR_PREFIX, /* a device's file system copy: prefix + the image's own path */
};

struct sw_host_dir {
	char *path;
	enum sw_host_dir_kind kind;
};

/*
 * Appends the host's symbol folders that exist to *dirs (grown with
 * realloc; the caller frees each path and the array).  Returns how many
 * were added or -errno.
 */
int sw_host_symbol_dirs(struct sw_host_dir **dirs, size_t *ndirs);

#endif
