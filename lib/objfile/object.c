/*
 * Opening object files whatever their container: map the file read-only,
 * hand it to the ELF or Mach-O reader by its magic number, then complete
 * the symbol list with the function starts that have no name, so that
 * sw_object_find_symbol() can bound every address by the function that
 * really contains it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "object.h"
#include "symbol-cache.h"
#include "util/search.h"

/* The object and the mapping it lives on, freed together. */
struct object_file {
	struct sw_object obj;
	void *map;
	size_t map_size;
	char *path;
	struct sw_symbol *own_symbols; /* when synthetic starts were merged in */
	uint64_t *symbol_index;
	struct sw_symcache cache; /* the symbols came from a cache file */
};

#define MAX_OBJECT_SIZE ((uint64_t)1 << 34) /* 16 GiB: larger is not an object we read */

static uint32_t read_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool is_macho_magic(uint32_t m)
{
	switch (m) {
	case 0xfeedface: /* thin, 32-bit */
	case 0xfeedfacf: /* thin, 64-bit */
	case 0xcefaedfe: /* thin, byte-swapped */
	case 0xcffaedfe:
	case 0xcafebabe: /* fat */
	case 0xbebafeca:
	case 0xcafebabf: /* fat, 64-bit offsets */
	case 0xbfbafeca:
		return true;
	default:
		return false;
	}
}

/*
 * LSD radix over the bytes in which the keys differ (stable), one byte per
 * pass; nothing to do when the keys already rise.  KEY(x) reads an element's key.
 */
#define RADIX_SORT(type, v, n, KEY)                                                                \
	do {                                                                                       \
		uint64_t lo_ = UINT64_MAX, hi_ = 0;                                                \
		bool sorted_ = true;                                                               \
		for (size_t i_ = 0; i_ < (n); i_++) {                                              \
			lo_ = KEY((v)[i_]) < lo_ ? KEY((v)[i_]) : lo_;                             \
			hi_ = KEY((v)[i_]) > hi_ ? KEY((v)[i_]) : hi_;                             \
			if (i_ && KEY((v)[i_]) < KEY((v)[i_ - 1]))                                 \
				sorted_ = false;                                                   \
		}                                                                                  \
		if ((n) < 2 || lo_ == hi_ || sorted_)                                              \
			return 0;                                                                  \
		type *tmp_ = malloc((n) * sizeof(type));                                           \
		if (!tmp_)                                                                         \
			return -ENOMEM;                                                            \
		type *src_ = (v), *dst_ = tmp_;                                                    \
		for (unsigned sh_ = 0; sh_ < 64 && ((hi_ - lo_) >> sh_); sh_ += 8) {               \
			size_t count_[257] = {0};                                                  \
			for (size_t i_ = 0; i_ < (n); i_++)                                        \
				count_[((KEY(src_[i_]) - lo_) >> sh_ & 0xff) + 1]++;               \
			for (int b_ = 0; b_ < 256; b_++)                                           \
				count_[b_ + 1] += count_[b_];                                      \
			for (size_t i_ = 0; i_ < (n); i_++)                                        \
				dst_[count_[(KEY(src_[i_]) - lo_) >> sh_ & 0xff]++] = src_[i_];    \
			type *t_ = src_;                                                           \
			src_ = dst_;                                                               \
			dst_ = t_;                                                                 \
		}                                                                                  \
		if (src_ != (v))                                                                   \
			memcpy((v), src_, (n) * sizeof(type));                                     \
		free(tmp_);                                                                        \
		return 0;                                                                          \
	} while (0)

#define KEY_OF_PAIR(x) ((x).key)
#define KEY_OF_U64(x)  (x)

int sw_object_sort_keys(struct sw_sort_key *v, size_t n)
{
	RADIX_SORT(struct sw_sort_key, v, n, KEY_OF_PAIR);
}

int sw_object_sort_u64(uint64_t *v, size_t n)
{
	RADIX_SORT(uint64_t, v, n, KEY_OF_U64);
}

int sw_object_sort_u64_high(uint64_t *v, size_t n, unsigned low_bits)
{
#define KEY_OF_HIGH(x) ((x) >> low_bits)
	RADIX_SORT(uint64_t, v, n, KEY_OF_HIGH);
#undef KEY_OF_HIGH
}

int sw_object_sort_by_u64(void *base, size_t n, size_t size, size_t key_off)
{
	if (n < 2)
		return 0;
	uint8_t *b = base;
	struct sw_sort_key *k = malloc(n * sizeof(*k));
	uint8_t *out = malloc(n * size);
	int r = k && out ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		memcpy(&k[i].key, b + i * size + key_off, sizeof(uint64_t));
		k[i].index = i;
	}
	if (r == 0)
		r = sw_object_sort_keys(k, n);
	for (size_t i = 0; r == 0 && i < n; i++)
		memcpy(out + i * size, b + k[i].index * size, size);
	if (r == 0)
		memcpy(b, out, n * size);
	free(k);
	free(out);
	return r;
}

/*
 * Adds a nameless symbol for every function start no symbol names: one
 * merge of the two sorted lists (a start never ties with a symbol).
 */
static int add_synthetic_starts(struct object_file *f)
{
	struct sw_object *obj = &f->obj;
	const struct sw_symbol *sym = obj->symbols;
	const uint64_t *st = obj->function_starts;
	size_t ns = obj->nsymbols, nf = obj->nfunction_starts, extra = 0;
	for (size_t i = 0, j = 0; j < nf; j++) {
		while (i < ns && sym[i].addr < st[j])
			i++;
		if (i == ns || sym[i].addr != st[j])
			extra++;
	}
	if (!extra)
		return 0;
	size_t n = ns + extra, k = 0, i = 0;
	struct sw_symbol *syms = calloc(n, sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	for (size_t j = 0; j < nf; j++) {
		while (i < ns && sym[i].addr <= st[j])
			syms[k++] = sym[i++];
		if (k && syms[k - 1].addr == st[j] && !(syms[k - 1].flags & SW_SYMBOL_SYNTHETIC))
			continue;
		syms[k++] = (struct sw_symbol){
		    .addr = st[j], .name = "", .flags = SW_SYMBOL_SYNTHETIC | SW_SYMBOL_FUNCTION};
	}
	while (i < ns)
		syms[k++] = sym[i++];
	f->own_symbols = syms;
	obj->symbols = syms;
	obj->nsymbols = k;
	return 0;
}

static int map_file(const char *path, void **ret_map, size_t *ret_size, struct sw_error *err)
{
	/* O_NONBLOCK: a FIFO (a path a debug file names, say) is refused below, not waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return sw_error_set(err, -errno, "%s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return sw_error_set(err, r, "%s", strerror(-r));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return sw_error_set(err, -EINVAL, "not a regular file");
	}
	if (st.st_size < 4 || (uint64_t)st.st_size > MAX_OBJECT_SIZE) {
		close(fd);
		return sw_error_set(err, -EINVAL, "file size %lld is not that of an object file",
				    (long long)st.st_size);
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int r = -errno;
	close(fd);
	if (map == MAP_FAILED)
		return sw_error_set(err, r, "cannot map: %s", strerror(-r));
	*ret_map = map;
	*ret_size = (size_t)st.st_size;
	return 0;
}

/* Where an object's symbols stand once read or taken from a cache: the sampled index. */
static int index_symbols(struct object_file *f)
{
	if (f->obj.nsymbols <= SW_OBJECT_SYMBOL_STRIDE)
		return 0;
	size_t n = (f->obj.nsymbols - 1) / SW_OBJECT_SYMBOL_STRIDE + 1;
	f->symbol_index = malloc(n * sizeof(*f->symbol_index));
	if (!f->symbol_index)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		f->symbol_index[i] = f->obj.symbols[i * SW_OBJECT_SYMBOL_STRIDE].addr;
	f->obj.symbol_index = f->symbol_index;
	return 0;
}

int sw_object_open_deferred(const char *path, const char *arch, struct sw_object **ret,
			    struct sw_error *err)
{
	struct object_file *f = calloc(1, sizeof(*f));
	if (!f)
		return sw_error_set(err, -ENOMEM, "out of memory");
	f->path = strdup(path);
	int r = f->path ? map_file(path, &f->map, &f->map_size, err)
			: sw_error_set(err, -ENOMEM, "out of memory");
	if (r < 0)
		goto fail;
	f->obj.path = f->path;
	f->obj.defer_symbols = true;
	const uint8_t *data = f->map;
	if (memcmp(data, "\177ELF", 4) == 0) {
		r = sw_elf_load(&f->obj, data, f->map_size, err);
		if (r >= 0 && arch && arch[0] && strcmp(arch, f->obj.arch) != 0)
			r = sw_error_set(err, -ENOENT,
					 "no slice for architecture %s (the file is %s)", arch,
					 f->obj.arch);
	} else if (is_macho_magic(read_be32(data))) {
		r = sw_macho_load(&f->obj, data, f->map_size, arch, err);
	} else {
		r = sw_error_set(err, -EINVAL, "not an ELF or Mach-O file (magic %02x%02x%02x%02x)",
				 data[0], data[1], data[2], data[3]);
	}
	if (r < 0)
		goto fail;
	f->obj.has_debug_info = f->obj.dwarf.info.size > 0;
	*ret = &f->obj;
	return 0;
fail:
	sw_object_free(&f->obj);
	return r;
}

bool sw_object_symbols_pending(const struct sw_object *obj)
{
	return obj->load_symbols != NULL;
}

int sw_object_load_symbols(struct sw_object *obj, struct sw_error *err)
{
	if (!obj->load_symbols)
		return 0;
	struct object_file *f = (struct object_file *)obj;
	int r = obj->load_symbols(obj, err);
	obj->load_symbols = NULL;
	if (r < 0)
		return r;
	if (add_synthetic_starts(f) < 0 || index_symbols(f) < 0)
		return sw_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

int sw_object_open(const char *path, const char *arch, struct sw_object **ret, struct sw_error *err)
{
	struct sw_object *obj;
	int r = sw_object_open_deferred(path, arch, &obj, err);
	if (r < 0)
		return r;
	r = sw_object_load_symbols(obj, err);
	if (r < 0) {
		sw_object_free(obj);
		return r;
	}
	*ret = obj;
	return 0;
}

/* --- the symbol cache (symbol-cache.c) --- */

int sw_object_symbols_from_cache(struct sw_object *obj, const char *path, const uint8_t *key,
				 size_t key_len)
{
	struct object_file *f = (struct object_file *)obj;
	if (!obj->load_symbols)
		return -EALREADY;
	struct sw_symcache c;
	int r = sw_symcache_read(path, key, key_len, f->map_size, &c);
	if (r < 0)
		return r;
	f->cache = c;
	obj->symbols = c.symbols;
	obj->nsymbols = c.nsymbols;
	obj->function_starts = c.starts;
	obj->nfunction_starts = c.nstarts;
	/* the reader's own symbols are not wanted now: its deferred state goes with release */
	obj->load_symbols = NULL;
	return index_symbols(f);
}

int sw_object_symbols_to_cache(const struct sw_object *obj, const char *path, const uint8_t *key,
			       size_t key_len)
{
	const struct object_file *f = (const struct object_file *)obj;
	if (obj->load_symbols)
		return -EINVAL; /* nothing read yet */
	return sw_symcache_write(path, key, key_len, f->map_size, obj->symbols, obj->nsymbols,
				 obj->function_starts, obj->nfunction_starts);
}

void sw_object_free(struct sw_object *obj)
{
	if (!obj)
		return;
	struct object_file *f = (struct object_file *)obj;
	if (obj->release)
		obj->release(obj);
	free(f->own_symbols);
	free(f->symbol_index);
	sw_symcache_release(&f->cache);
	if (f->map)
		munmap(f->map, f->map_size);
	free(f->path);
	free(f);
}

/* How many symbols start at or before addr. */
static size_t count_symbols(const struct sw_object *obj, uint64_t addr)
{
	size_t lo = 0, hi = obj->nsymbols;
	if (obj->symbol_index && obj->nsymbols) {
		/* the stride whose first symbol is the last at or before addr */
		size_t a = 0, z = (obj->nsymbols - 1) / SW_OBJECT_SYMBOL_STRIDE + 1;
		while (a < z) {
			size_t mid = a + (z - a) / 2;
			if (obj->symbol_index[mid] <= addr)
				a = mid + 1;
			else
				z = mid;
		}
		if (a == 0)
			return 0;
		lo = (a - 1) * SW_OBJECT_SYMBOL_STRIDE;
		if (a * SW_OBJECT_SYMBOL_STRIDE < hi)
			hi = a * SW_OBJECT_SYMBOL_STRIDE;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (obj->symbols[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The symbol containing addr, of the count of symbols starting at or before it; or NULL. */
static const struct sw_symbol *symbol_at(const struct sw_object *obj, size_t count, uint64_t addr)
{
	if (count == 0)
		return NULL;
	const struct sw_symbol *s = &obj->symbols[count - 1];
	/* several names at one address: prefer a named, sized one */
	while (s > obj->symbols && s[-1].addr == s->addr && (s->flags & SW_SYMBOL_SYNTHETIC))
		s--;
	if (s->size && addr - s->addr >= s->size)
		return NULL;
	/*
	 * No function start lies between s and addr: sw_object_open() gave
	 * every start without a name a synthetic symbol, nearer than s.
	 */
	return s;
}

const struct sw_symbol *sw_object_find_symbol(const struct sw_object *obj, uint64_t addr)
{
	return symbol_at(obj, count_symbols(obj, addr), addr);
}

const struct sw_symbol *sw_object_find_symbol_near(const struct sw_object *obj, uint64_t addr,
						   struct sw_symbol_hint *h)
{
	size_t count = h->valid && addr >= h->addr
			   ? sw_upper_bound_from(obj->symbols, sizeof(*obj->symbols),
						 offsetof(struct sw_symbol, addr), obj->nsymbols,
						 h->count, addr)
			   : count_symbols(obj, addr);
	*h = (struct sw_symbol_hint){.valid = true, .addr = addr, .count = count};
	return symbol_at(obj, count, addr);
}
