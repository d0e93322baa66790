/*
 * Symbol demangling for the rest of stallwatch: Swift names (current
 * mangling $s/$S/_T0/@__swiftmacro_ and the legacy _T one, by our own C
 * demangler), Itanium C++ names and Rust names (v0 "_R..." and legacy
 * "_ZN...17h<hash>E"), through libiberty when it is there, and the C names
 * of Emacs's native Lisp code ("F<hex>_<name>_<n>": the Lisp name).
 *
 * Mach-O symbol tables carry one more leading underscore than the mangled
 * name ("_$s...", "__Z..."); both forms are accepted.
 */
#ifndef SW_DEMANGLE_H
#define SW_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

/* Swift names in the style of `swift-demangle --simplified` (trees use it). */
#define SW_DEMANGLE_SIMPLIFIED 0x1u
/* Leave C++ (Itanium) names alone. */
#define SW_DEMANGLE_NO_CXX 0x2u
/* Leave Swift names alone. */
#define SW_DEMANGLE_NO_SWIFT 0x4u

/*
 * Appends the demangled form of the NUL-terminated name to out.  Returns 1
 * if it was demangled, 0 if it is not a mangled name we understand (out is
 * untouched), -errno on failure (-E2BIG past out's ceiling, -ENOMEM).
 * A PLT entry's "@plt" or a Mach-O stub's " stub" after the name is kept
 * after the demangled name, as c++filt does.
 */
int sw_demangle(const char *name, unsigned flags, struct sw_buf *out);

/* The same for a name given by pointer and length (not NUL-terminated). */
int sw_demangle_n(const char *name, size_t len, unsigned flags, struct sw_buf *out);

/*
 * Whether name is that of an entry that only jumps to the function it
 * names: a PLT entry ("puts@plt") or a Mach-O stub ("puts stub").
 */
bool sw_demangle_is_stub(const char *name);

/*
 * Copies text to out, replacing every mangled Swift, C++ or Rust symbol found in
 * it by its demangled form, like `c++filt` or `swift-demangle` reading a
 * log.  Returns the number of symbols replaced, or -errno.
 */
int sw_demangle_filter(const char *text, size_t len, unsigned flags, struct sw_buf *out);

/*
 * For a stream filtered piece by piece: the length of the longest prefix of
 * text that ends outside a symbol (so it can be filtered on its own); 0 if
 * the whole text could still be one unfinished symbol.
 */
size_t sw_demangle_split(const char *text, size_t len);

#endif
