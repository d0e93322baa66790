/*
 * The symbol cache file (symbol-cache.h): a header, the symbols as
 * (address, size, name, flags) records, the function starts, then the
 * names, each part starting on an 8-byte boundary.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "symbol-cache.h"
#include "util/publish.h"

#define SC_MAGIC   "SWSYMCH\n"
#define SC_VERSION 1
#define SC_ORDER   0x01020304u
#define SC_MAX_KEY 96
#define SC_MAX     ((uint64_t)1 << 34) /* bytes of a cache file */
#define SC_FLAGS                                                                                   \
	(SW_SYMBOL_GLOBAL | SW_SYMBOL_FUNCTION | SW_SYMBOL_FROM_EXPORTS | SW_SYMBOL_SYNTHETIC)

struct sc_header {
	char magic[8];
	uint32_t version, order;
	uint32_t header_size, record_size;
	uint32_t key_len, pad;
	uint8_t key[SC_MAX_KEY];
	uint64_t object_size;
	uint64_t nsymbols, nstarts, nstr, file_size;
};

struct sc_symbol {
	uint64_t addr, size;
	uint32_t name; /* into the strings */
	uint32_t flags;
};

static uint64_t padded(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

static uint64_t file_size(const struct sc_header *h)
{
	return padded(sizeof(*h)) + padded(h->nsymbols * sizeof(struct sc_symbol)) +
	       padded(h->nstarts * sizeof(uint64_t)) + padded(h->nstr);
}

static bool header_ok(const struct sc_header *h, size_t size, const uint8_t *key, size_t key_len,
		      uint64_t object_size)
{
	return memcmp(h->magic, SC_MAGIC, 8) == 0 && h->version == SC_VERSION &&
	       h->order == SC_ORDER && h->header_size == sizeof(*h) &&
	       h->record_size == sizeof(struct sc_symbol) && h->key_len == key_len &&
	       memcmp(h->key, key, key_len) == 0 && h->object_size == object_size &&
	       h->nsymbols < SC_MAX / sizeof(struct sc_symbol) && h->nstarts < SC_MAX / 8 &&
	       h->nstr > 0 && h->nstr < SC_MAX && h->file_size == size && file_size(h) == size;
}

void sw_symcache_release(struct sw_symcache *c)
{
	if (c->map)
		munmap(c->map, c->map_size);
	free(c->symbols);
	*c = (struct sw_symcache){0};
}

/* The records as symbols, checked: names in the strings, known flags, rising addresses. */
static int unpack(const struct sc_header *h, const struct sc_symbol *rec, const uint64_t *starts,
		  const char *str, struct sw_symcache *c)
{
	c->symbols = malloc((h->nsymbols ? h->nsymbols : 1) * sizeof(*c->symbols));
	if (!c->symbols)
		return -ENOMEM;
	for (uint64_t i = 0; i < h->nsymbols; i++) {
		if (rec[i].name >= h->nstr || (rec[i].flags & ~(uint32_t)SC_FLAGS) ||
		    (i && rec[i].addr < rec[i - 1].addr))
			return -EINVAL;
		c->symbols[i] =
		    (struct sw_symbol){rec[i].addr, rec[i].size, str + rec[i].name, rec[i].flags};
	}
	for (uint64_t i = 1; i < h->nstarts; i++)
		if (starts[i] <= starts[i - 1])
			return -EINVAL;
	c->nsymbols = h->nsymbols;
	c->starts = (uint64_t *)starts;
	c->nstarts = h->nstarts;
	return 0;
}

int sw_symcache_read(const char *path, const uint8_t *key, size_t key_len, uint64_t object_size,
		     struct sw_symcache *ret)
{
	*ret = (struct sw_symcache){0};
	if (key_len > SC_MAX_KEY)
		return -EINVAL;
	struct sw_symcache c = {0};
	int r = sw_map_whole(path, sizeof(struct sc_header), SC_MAX, &c.map, &c.map_size);
	if (r < 0)
		return r;
	const struct sc_header *h = c.map;
	const uint8_t *p = c.map;
	if (!header_ok(h, c.map_size, key, key_len, object_size)) {
		sw_symcache_release(&c);
		return -EINVAL;
	}
	uint64_t at = padded(sizeof(*h));
	const struct sc_symbol *rec = (const void *)(p + at);
	at += padded(h->nsymbols * sizeof(*rec));
	const uint64_t *starts = (const void *)(p + at);
	at += padded(h->nstarts * sizeof(*starts));
	const char *str = (const char *)(p + at);
	r = str[h->nstr - 1] == '\0' ? unpack(h, rec, starts, str, &c) : -EINVAL;
	if (r < 0) {
		sw_symcache_release(&c);
		return r;
	}
	*ret = c;
	return 0;
}

int sw_symcache_write(const char *path, const uint8_t *key, size_t key_len, uint64_t object_size,
		      const struct sw_symbol *symbols, size_t nsymbols, const uint64_t *starts,
		      size_t nstarts)
{
	if (key_len > SC_MAX_KEY)
		return -EINVAL;
	/* offset 0 is the empty name (the nameless starts') */
	size_t nstr = 1;
	for (size_t i = 0; i < nsymbols; i++)
		nstr += symbols[i].name && symbols[i].name[0] ? strlen(symbols[i].name) + 1 : 0;
	if (nstr > UINT32_MAX)
		return -E2BIG;
	struct sc_symbol *rec = malloc((nsymbols ? nsymbols : 1) * sizeof(*rec));
	char *str = malloc(nstr);
	int r = rec && str ? 0 : -ENOMEM;
	size_t len = 1;
	if (str)
		str[0] = '\0';
	for (size_t i = 0; r == 0 && i < nsymbols; i++) {
		const char *name = symbols[i].name ? symbols[i].name : "";
		uint32_t at = 0;
		if (name[0]) {
			size_t n = strlen(name) + 1;
			memcpy(str + len, name, n);
			at = (uint32_t)len;
			len += n;
		}
		rec[i] = (struct sc_symbol){symbols[i].addr, symbols[i].size, at,
					    symbols[i].flags & SC_FLAGS};
	}
	struct sc_header h = {.version = SC_VERSION,
			      .order = SC_ORDER,
			      .header_size = sizeof(h),
			      .record_size = sizeof(*rec),
			      .key_len = (uint32_t)key_len,
			      .object_size = object_size,
			      .nsymbols = nsymbols,
			      .nstarts = nstarts,
			      .nstr = nstr};
	memcpy(h.magic, SC_MAGIC, 8);
	memcpy(h.key, key, key_len);
	h.file_size = file_size(&h);
	const struct sw_part parts[] = {
	    {&h, sizeof(h)},
	    {rec, nsymbols * sizeof(*rec)},
	    {starts, nstarts * sizeof(*starts)},
	    {str, nstr},
	};
	if (r == 0)
		r = sw_publish(path, parts, sizeof(parts) / sizeof(parts[0]), 1);
	free(rec);
	free(str);
	return r;
}
