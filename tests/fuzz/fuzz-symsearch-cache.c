/*
 * libFuzzer target for the symbol index's disk cache reader: the input is
 * written as the cache file, loaded, and looked up.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/symsearch-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, const struct sw_symsearch_entry *e)
{
	if (e->id_len == 0 || e->id_len > sizeof(e->id) || !memchr(e->arch, 0, sizeof(e->arch)))
		__builtin_trap();
	++*(size_t *)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[] = "/tmp/fuzz-symcache-XXXXXX";
	static bool made;
	struct sw_symsearch_cache *c;
	char path[64];
	size_t n = 0;
	FILE *f;

	if (!made && !mkdtemp(dir))
		return 0;
	made = true;
	snprintf(path, sizeof(path), "%s/symindex-v1", dir);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	if (sw_symsearch_cache_load(dir, &c) < 0)
		return 0;
	sw_symsearch_cache_lookup(c, "/a", 1, 1, count, &n);
	sw_symsearch_cache_lookup(c, "/usr/lib/x.so", 4096, 1700000000000000000, count, &n);
	sw_symsearch_cache_free(c);
	return 0;
}
