/*
 * Error details for the command to print.
 *
 * Library functions return 0 or more on success and -errno on failure
 * (HACKING.md, "Errors").  Where a bare errno would not tell the user what went wrong
 * and where, a function also takes a `struct sw_error *` (which may be NULL)
 * and fills it with a lowercase message without a final full stop, such as
 * "truncated record at offset 8812".  The command adds the subject:
 * "cannot read 'run.swtrace': truncated record at offset 8812".
 */
#ifndef SW_ERROR_H
#define SW_ERROR_H

#include <stddef.h>

struct sw_error {
	int code; /* negative errno, 0 when unset */
	char msg[512];
};

/* Fills err (when not NULL) and returns code, which must be negative. */
int sw_error_set(struct sw_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The message, or strerror(-code) when no message was set. */
const char *sw_error_str(const struct sw_error *err);
void sw_error_clear(struct sw_error *err);

#endif
