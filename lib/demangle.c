/*
 * Demangling front end: placeholder with C++ only until the Swift
 * demangler lands.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "demangle.h"

#if SW_HAVE_IBERTY
#include <libiberty/demangle.h>
#endif

int sw_demangle(const char *name, unsigned flags, struct sw_buf *out)
{
#if SW_HAVE_IBERTY
	if (flags & SW_DEMANGLE_NO_CXX)
		return 0;
	if (name[0] == '_' && name[1] == '_' && name[2] == 'Z')
		name++;
	if (name[0] != '_' || name[1] != 'Z')
		return 0;
	char *s = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (!s)
		return 0;
	int r = sw_buf_puts(out, s);
	free(s);
	return r < 0 ? r : 1;
#else
	return 0;
#endif
}

int sw_demangle_filter(const char *text, size_t len, unsigned flags, struct sw_buf *out)
{
	return sw_buf_append(out, text, len);
}
