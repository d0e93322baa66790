/*
 * Symbol name demangling: Swift through our own demangler
 * (demangle-swift*.c), Itanium C++ through libiberty.
 *
 * Names may carry Mach-O's extra leading underscore ("__Z...", "_$s...").
 */
#ifndef SW_DEMANGLE_H
#define SW_DEMANGLE_H

#include <stddef.h>

#include "buf.h"

enum sw_demangle_flags {
	SW_DEMANGLE_SIMPLIFIED = 1 << 0, /* Swift: as `swift-demangle --simplified` */
	SW_DEMANGLE_NO_CXX = 1 << 1,     /* leave Itanium C++ names as they are */
	SW_DEMANGLE_NO_SWIFT = 1 << 2,   /* leave Swift names as they are */
};

/*
 * Appends the demangled form of name to out.  Returns 1 when name was
 * demangled, 0 when it is not a mangled name (out untouched), -errno on
 * failure (-E2BIG when out's ceiling was reached).
 */
int sw_demangle(const char *name, unsigned flags, struct sw_buf *out);

/*
 * Copies text to out, replacing every mangled Swift or C++ name found in it
 * by its demangled form, as c++filt and swift-demangle do as filters.
 */
int sw_demangle_filter(const char *text, size_t len, unsigned flags, struct sw_buf *out);

#endif
