/*
 * Error details; see error.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

int sw_error_set(struct sw_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	err->code = code;
	return code;
}

const char *sw_error_str(const struct sw_error *err)
{
	if (err->msg[0])
		return err->msg;
	return err->code ? strerror(-err->code) : "unknown error";
}

void sw_error_clear(struct sw_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}
