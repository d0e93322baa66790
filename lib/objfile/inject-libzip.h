/*
 * libzip loaded when `inject` first opens an .ipa archive (dlopen), not at
 * start-up: it brings OpenSSL's libcrypto, and most runs never touch an
 * archive.  As device-dl.h does for libimobiledevice, each function
 * inject.c calls is reached through a pointer of its own type and the
 * macros send the calls there.  sw_zip_load() must succeed first.
 */
#ifndef SW_INJECT_LIBZIP_H
#define SW_INJECT_LIBZIP_H

#include <zip.h>

#include "util/error.h"

#define SW_LIBZIP_SONAME "libzip.so.4"

#define SW_LIBZIP_FUNCTIONS(X)                                                                     \
	X(zip_close)                                                                               \
	X(zip_delete)                                                                              \
	X(zip_discard)                                                                             \
	X(zip_error_fini)                                                                          \
	X(zip_error_init_with_code)                                                                \
	X(zip_error_strerror)                                                                      \
	X(zip_fclose)                                                                              \
	X(zip_file_add)                                                                            \
	X(zip_file_replace)                                                                        \
	X(zip_file_set_external_attributes)                                                        \
	X(zip_fopen_index)                                                                         \
	X(zip_fread)                                                                               \
	X(zip_get_name)                                                                            \
	X(zip_get_num_entries)                                                                     \
	X(zip_name_locate)                                                                         \
	X(zip_open)                                                                                \
	X(zip_source_buffer)                                                                       \
	X(zip_source_file)                                                                         \
	X(zip_source_free)                                                                         \
	X(zip_stat_index)                                                                          \
	X(zip_strerror)

#define SW_ZIP_DECLARE(name) extern __typeof__(name) *sw_zip_##name;
SW_LIBZIP_FUNCTIONS(SW_ZIP_DECLARE)
#undef SW_ZIP_DECLARE

/* Loads the library once; 0, or -ENOTSUP with err naming what is missing. */
int sw_zip_load(struct sw_error *err);

#define zip_close                        (*sw_zip_zip_close)
#define zip_delete                       (*sw_zip_zip_delete)
#define zip_discard                      (*sw_zip_zip_discard)
#define zip_error_fini                   (*sw_zip_zip_error_fini)
#define zip_error_init_with_code         (*sw_zip_zip_error_init_with_code)
#define zip_error_strerror               (*sw_zip_zip_error_strerror)
#define zip_fclose                       (*sw_zip_zip_fclose)
#define zip_file_add                     (*sw_zip_zip_file_add)
#define zip_file_replace                 (*sw_zip_zip_file_replace)
#define zip_file_set_external_attributes (*sw_zip_zip_file_set_external_attributes)
#define zip_fopen_index                  (*sw_zip_zip_fopen_index)
#define zip_fread                        (*sw_zip_zip_fread)
#define zip_get_name                     (*sw_zip_zip_get_name)
#define zip_get_num_entries              (*sw_zip_zip_get_num_entries)
#define zip_name_locate                  (*sw_zip_zip_name_locate)
#define zip_open                         (*sw_zip_zip_open)
#define zip_source_buffer                (*sw_zip_zip_source_buffer)
#define zip_source_file                  (*sw_zip_zip_source_file)
#define zip_source_free                  (*sw_zip_zip_source_free)
#define zip_stat_index                   (*sw_zip_zip_stat_index)
#define zip_strerror                     (*sw_zip_zip_strerror)

#endif
