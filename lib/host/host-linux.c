/*
 * Linux host: no symbol folders beyond the ELF conventions that
 * symsearch.c handles itself (/usr/lib/debug, .gnu_debuglink, debuginfod).
 */
#include "host.h"

int sw_host_symbol_dirs(struct sw_host_dir **dirs, size_t *ndirs)
{
	(void)dirs;
	(void)ndirs;
	return 0;
}
