/*
 * Mach-O reader: placeholder until the reader lands.
 */
#include <errno.h>

#include "object.h"

int sw_macho_load(struct sw_object *obj, const uint8_t *data, size_t size, const char *arch,
		  struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, "Mach-O files are not supported yet");
}
