/*
 * The front of the demanglers: recognises which mangling a name uses and
 * hands it to the Swift demangler (demangle-swift*.c) or to libiberty for
 * Itanium C++ and Rust, reads Emacs's native-code names itself, and scans
 * running text for symbols to replace (the filter behind `stallwatch
 * demangle`).
 *
 * Rust has two manglings: the legacy one, Itanium's grammar with a hash for
 * a last component ("_ZN3std2rt10lang_start17h0123456789abcdefE"), and v0
 * ("_RNvNtCs..._3std2rt19lang_start_internal"), which the standard
 * library of current releases uses and any crate can choose.  Both go to
 * libiberty's Rust demangler first (a nested Itanium name that is not
 * Rust's is refused there, and read as C++), printed as Rust's backtraces
 * print them: no hash, no crate disambiguators
 * ("std::rt::lang_start_internal").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "demangle-swift.h"
#include "demangle.h"
#include "util/str.h"

#if SW_HAVE_IBERTY
#include <libiberty/demangle.h>
#include <setjmp.h>
#endif

/* Symbols longer than this are not demangled (they are not real names). */
#define MAX_NAME 8192

static bool starts(const char *s, size_t len, const char *p)
{
	size_t n = strlen(p);
	return len >= n && memcmp(s, p, n) == 0;
}

/*
 * Whether s[0..len) holds a byte below 0x20.  Eight bytes at a time: the
 * high bit of a byte of (w - 0x20 in each byte) & ~w is set when that byte
 * was below 0x20 (a borrow from a lower byte only ever follows one that
 * was), and a test per byte took a twentieth of the demangling.
 */
static bool has_control_byte(const char *s, size_t len)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, sizeof(w));
		if ((w - 0x20 * ones) & ~w & highs)
			return true;
	}
	for (; i < len; i++)
		if ((unsigned char)s[i] < 0x20)
			return true;
	return false;
}

int swd_demangle_text(const char *s, size_t len, bool simplified, struct sw_buf *out, unsigned nest)
{
	if (nest > 2 || len > MAX_NAME)
		return 0;
	size_t skip;
	bool legacy = false, old = false;
	if (starts(s, len, "$s") || starts(s, len, "$S") || starts(s, len, "$e"))
		skip = 2;
	else if (starts(s, len, "_$s") || starts(s, len, "_$S") || starts(s, len, "_$e"))
		skip = 3;
	else if (starts(s, len, "@__swiftmacro_"))
		skip = 14;
	else if (starts(s, len, "_T0"))
		skip = 3, old = true;
	else if (starts(s, len, "__T0"))
		skip = 4, old = true;
	else if (starts(s, len, "_T"))
		skip = 2, legacy = true;
	else if (starts(s, len, "__T"))
		skip = 3, legacy = true;
	else
		return 0;
	/* no NUL or control bytes: symbolic references are refused */
	if (has_control_byte(s, len))
		return 0;
	/* the parser state is large (its first arena block is inside it): keep
	 * one per thread for the outermost call instead of a malloc per name */
	static __thread struct swd *cached;
	struct swd *d = nest == 0 ? cached : NULL;
	if (!d) {
		d = malloc(sizeof(*d));
		if (!d)
			return -ENOMEM;
		if (nest == 0)
			cached = d;
	}
	swd_init(d, s + skip, len - skip);
	d->old_mangling = old;
	struct swn *root = legacy ? swd_parse_old(d) : swd_parse_new(d);
	int r = 0;
	if (root) {
		r = swd_print(root, simplified, nest > 0, out);
		if (r == 0)
			r = 1;
		else if (r == -EINVAL)
			r = 0;
	}
	swd_finish(d);
	if (d != cached)
		free(d);
	return r;
}

#if SW_HAVE_IBERTY
/*
 * Itanium names whose demangled form is longer than this are printed
 * mangled: substitutions let each template argument repeat the one before,
 * so 300 bytes can demangle to gigabytes (20 s and 2 GB in libiberty).
 */
#define MAX_DEMANGLED (256u * 1024)

struct probe {
	jmp_buf stop;
	size_t len;
};

static void probe_piece(const char *s, size_t n, void *opaque)
{
	struct probe *pr = opaque;
	(void)s;
	pr->len += n;
	/* the callback interface keeps everything on the stack: leaving it is safe */
	if (pr->len > MAX_DEMANGLED)
		longjmp(pr->stop, 1);
}

/* Whether name demangles to at most MAX_DEMANGLED bytes (or not at all). */
static bool demangled_size_ok(const char *name)
{
	struct probe pr = {.len = 0};
	if (setjmp(pr.stop))
		return false;
	cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_ANSI, probe_piece, &pr);
	return true;
}
#endif

#if SW_HAVE_IBERTY
/*
 * libiberty reads NUL-terminated names: p[0..len) copied into stackbuf
 * (STACKBUF bytes) when it fits, else into memory to free; NULL when out
 * of memory.
 */
#define STACKBUF 512
static char *nul_copy(const char *p, size_t len, char *stackbuf)
{
	char *copy = len < STACKBUF ? stackbuf : malloc(len + 1);
	if (copy) {
		memcpy(copy, p, len);
		copy[len] = 0;
	}
	return copy;
}

struct rust_out {
	jmp_buf stop;
	struct sw_buf *out;
	size_t mark;
	int err; /* set before a jump: -E2BIG or the buffer's error */
};

static void rust_piece(const char *s, size_t n, void *opaque)
{
	struct rust_out *ro = opaque;
	int r = ro->out->len - ro->mark + n > MAX_DEMANGLED ? -E2BIG : sw_buf_append(ro->out, s, n);
	if (r < 0) {
		ro->err = r;
		/* as in probe_piece(): the callback interface keeps its state on the stack */
		longjmp(ro->stop, 1);
	}
}

/*
 * libiberty's reading of mangled into ro->out: 1, 0 (not Rust, or too long
 * to show: left mangled) or -errno.  Alone in a function of its own, so
 * that nothing local to the setjmp() changes before the jump back.
 */
static int rust_into(const char *mangled, struct rust_out *ro)
{
	if (setjmp(ro->stop))
		return ro->err == -E2BIG ? 0 : ro->err;
	return rust_demangle_callback(mangled, DMGL_PARAMS | DMGL_ANSI, rust_piece, ro) ? 1 : 0;
}

/*
 * A Rust name, v0 ("_R...") or legacy ("_ZN...17h<hash>E"), into out; 1,
 * 0 (not one: out untouched) or -errno.
 */
static int demangle_rust(const char *name, size_t len, struct sw_buf *out)
{
	const char *p = name;
	if (len >= 3 && p[0] == '_' && p[1] == '_' && (p[2] == 'R' || p[2] == 'Z'))
		p++, len--; /* Mach-O's extra underscore */
	/* a legacy name is a nested Itanium one whose last component is a hash: libiberty checks */
	bool v0 = len >= 3 && p[0] == '_' && p[1] == 'R';
	bool legacy = len >= 3 && p[0] == '_' && p[1] == 'Z' && p[2] == 'N';
	if ((!v0 && !legacy) || len > MAX_NAME)
		return 0;
	char stackbuf[STACKBUF];
	char *copy = nul_copy(p, len, stackbuf);
	if (!copy)
		return -ENOMEM;
	struct rust_out ro = {.out = out, .mark = out->len};
	int r = rust_into(copy, &ro);
	if (copy != stackbuf)
		free(copy);
	if (r <= 0)
		out->len = ro.mark;
	return r;
}
#endif

static int demangle_cxx(const char *name, size_t len, struct sw_buf *out)
{
#if SW_HAVE_IBERTY
	const char *p = name;
	if (len >= 3 && p[0] == '_' && p[1] == '_' && p[2] == 'Z')
		p++, len--;
	if (len < 2 || p[0] != '_' || p[1] != 'Z' || len > MAX_NAME)
		return 0;
	char stackbuf[STACKBUF];
	char *copy = nul_copy(p, len, stackbuf);
	if (!copy)
		return -ENOMEM;
	/* Itanium's reading only: Rust's legacy names are demangle_rust()'s */
	char *res = demangled_size_ok(copy)
			? cplus_demangle(copy, DMGL_PARAMS | DMGL_ANSI | DMGL_GNU_V3)
			: NULL;
	if (copy != stackbuf)
		free(copy);
	if (!res)
		return 0;
	int r = sw_buf_puts(out, res);
	free(res);
	return r < 0 ? r : 1;
#else
	(void)name;
	(void)len;
	(void)out;
	return 0;
#endif
}

/*
 * The length of a suffix a symbolizer adds to the name of an entry that
 * jumps to the named function: "@plt" for an ELF PLT entry (objdump's and
 * llvm-symbolizer's spelling), " stub" for a Mach-O stub (ours); 0 if none.
 */
static size_t stub_suffix(const char *name, size_t len)
{
	static const char *const suffixes[] = {"@plt", " stub"};
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t n = strlen(suffixes[i]);
		if (len > n && memcmp(name + len - n, suffixes[i], n) == 0)
			return n;
	}
	return 0;
}

bool sw_demangle_is_stub(const char *name)
{
	return name && stub_suffix(name, strlen(name)) > 0;
}

/* A digit of comp.el's hexadecimal, which is lowercase; -1 otherwise. */
static int hex_digit(char c)
{
	return c >= 'A' && c <= 'F' ? -1 : sw_hex_value(c);
}

/* A character comp.el keeps in the readable part of a name. */
static bool elisp_readable(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/*
 * The C name Emacs's native compiler (comp.el, Emacs 28 and later) gives
 * a Lisp function in its .eln file: "F", the bytes of the Lisp name in two
 * lowercase hexadecimal digits each, "_", the name again with '-' as '_'
 * and every character but letters, digits and '_' left out, "_", and a
 * number that tells apart functions of one file with the same name (the
 * anonymous lambdas).  The readable part must be the one the hexadecimal
 * part gives, so that no C function's name is taken for one by chance.
 * Printed as the Lisp name, with the number after '#' when it is not 0
 * ("anonymous-lambda #3"); 1, or 0 when it is no such name.
 */
static int demangle_elisp(const char *name, size_t len, struct sw_buf *out)
{
	const char *p = name, *end = name + len;
	if (len >= 2 && p[0] == '_' && p[1] == 'F')
		p++; /* Mach-O's extra underscore */
	if (end - p < 6 || *p++ != 'F' || len > MAX_NAME)
		return 0;
	const char *hex = p;
	while (p < end && hex_digit(*p) >= 0)
		p++;
	size_t nhex = (size_t)(p - hex);
	const char *number = end;
	while (number > p && number[-1] >= '0' && number[-1] <= '9')
		number--;
	/* F<hex>_<readable>_<number>, the number as Lisp prints it */
	if (nhex < 2 || nhex % 2 || p == end || *p != '_' || number == end || number - p < 2 ||
	    number[-1] != '_' || (*number == '0' && end - number > 1))
		return 0;
	const char *readable = p + 1, *readable_end = number - 1;
	size_t mark = out->len;
	int r = 0; /* left at 0: not such a name */
	for (size_t i = 0; i < nhex; i += 2) {
		char c = (char)(hex_digit(hex[i]) * 16 + hex_digit(hex[i + 1]));
		if (c < 0x20 || c > 0x7e)
			goto refuse;
		if (c == '-' || elisp_readable(c)) {
			if (readable == readable_end || *readable++ != (c == '-' ? '_' : c))
				goto refuse;
		}
		if ((r = sw_buf_putc(out, c)) < 0)
			goto refuse;
	}
	if (readable != readable_end)
		goto refuse;
	if (end - number > 1 || *number != '0') {
		r = sw_buf_puts(out, " #");
		if (r < 0 || (r = sw_buf_append(out, number, (size_t)(end - number))) < 0)
			goto refuse;
	}
	return 1;
refuse:
	out->len = mark;
	return r < 0 ? r : 0;
}

static int demangle_plain(const char *name, size_t len, unsigned flags, struct sw_buf *out);

int sw_demangle_n(const char *name, size_t len, unsigned flags, struct sw_buf *out)
{
	if (!name || !out)
		return -EINVAL;
	size_t suffix = stub_suffix(name, len);
	int r = demangle_plain(name, len - suffix, flags, out);
	if (r > 0 && suffix && sw_buf_append(out, name + len - suffix, suffix) < 0)
		return -ENOMEM;
	return r;
}

static int demangle_plain(const char *name, size_t len, unsigned flags, struct sw_buf *out)
{
	int e = demangle_elisp(name, len, out);
	if (e != 0)
		return e;
	if (!(flags & SW_DEMANGLE_NO_SWIFT)) {
		int r = swd_demangle_text(name, len, flags & SW_DEMANGLE_SIMPLIFIED, out, 0);
		if (r != 0)
			return r;
	}
#if SW_HAVE_IBERTY
	int r = demangle_rust(name, len, out);
	if (r != 0)
		return r;
#endif
	if (!(flags & SW_DEMANGLE_NO_CXX))
		return demangle_cxx(name, len, out);
	return 0;
}

int sw_demangle(const char *name, unsigned flags, struct sw_buf *out)
{
	if (!name)
		return -EINVAL;
	return sw_demangle_n(name, strlen(name), flags, out);
}

static bool symbol_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.' || c >= 0x80;
}

static bool may_start(const char *s, size_t len)
{
	return starts(s, len, "$s") || starts(s, len, "$S") || starts(s, len, "$e") ||
	       starts(s, len, "_$") || starts(s, len, "_T") || starts(s, len, "__T") ||
	       starts(s, len, "_Z") || starts(s, len, "__Z") || starts(s, len, "_R") ||
	       starts(s, len, "__R") || starts(s, len, "@__swiftmacro_") || starts(s, len, "F") ||
	       starts(s, len, "_F");
}

int sw_demangle_filter(const char *text, size_t len, unsigned flags, struct sw_buf *out)
{
	size_t i = 0, copied = 0;
	int count = 0;
	while (i < len) {
		unsigned char c = (unsigned char)text[i];
		unsigned char prev = i ? (unsigned char)text[i - 1] : ' ';
		bool boundary = prev == '.' || !symbol_char(prev);
		if (!boundary || (c != '$' && c != '_' && c != '@' && c != 'F') ||
		    !may_start(text + i, len - i)) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < len && symbol_char((unsigned char)text[j]))
			j++;
		/* flush plain text up to the candidate */
		int r = sw_buf_append(out, text + copied, i - copied);
		if (r < 0)
			return r;
		copied = i;
		/* a trailing '.' is punctuation, never part of a suffix */
		size_t end = j;
		while (end > i + 1 && text[end - 1] == '.')
			end--;
		size_t mark = out->len;
		r = sw_demangle_n(text + i, end - i, flags, out);
		if (r < 0)
			return r;
		if (r == 0)
			out->len = mark;
		if (r > 0) {
			count++;
			copied = end;
			i = end;
		} else {
			i = j;
		}
	}
	int r = sw_buf_append(out, text + copied, len - copied);
	return r < 0 ? r : count;
}

size_t sw_demangle_split(const char *text, size_t len)
{
	while (len > 0 && symbol_char((unsigned char)text[len - 1]))
		len--;
	return len;
}
