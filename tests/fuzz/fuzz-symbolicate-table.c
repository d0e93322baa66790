/*
 * libFuzzer target for the range table reader (symbolicate-table.c): the
 * input is written as a table file and opened with the key its own header
 * names (so that the fuzzer gets past the key to the rest), and addresses
 * around its base and from the input itself are looked up; every frame's
 * strings must be readable to their end.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/symbolicate-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where struct rt_header keeps the key's length and the key, and the base. */
#define KEY_LEN_AT 20
#define KEY_AT     24
#define BASE_AT    (KEY_AT + SW_TABLE_MAX_KEY + 16)

static void check(const struct sw_frame *f, size_t n)
{
	if (n == 0 || n > SW_SYMBOLICATE_MAX_FRAMES)
		__builtin_trap();
	for (size_t i = 0; i < n; i++) {
		if ((f[i].function && strlen(f[i].function) > (1u << 30)) ||
		    (f[i].file && strlen(f[i].file) > (1u << 30)))
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[] = "/tmp/fuzz-ranges-XXXXXX";
	static bool made;
	char path[64];
	if (size < BASE_AT + 8 || (!made && !mkdtemp(dir)))
		return 0;
	made = true;
	snprintf(path, sizeof(path), "%s/t.swr", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	uint32_t key_len;
	uint64_t base;
	memcpy(&key_len, data + KEY_LEN_AT, 4);
	memcpy(&base, data + BASE_AT, 8);
	struct sw_symbolicate_table *t;
	if (key_len > SW_TABLE_MAX_KEY || sw_table_open(path, data + KEY_AT, key_len, &t) < 0)
		return 0;
	uint64_t addrs[64];
	size_t n = 0;
	for (uint64_t d = 0; d < 24; d++)
		addrs[n++] = base + d * d * 7;
	addrs[n++] = 0;
	addrs[n++] = base - 1;
	addrs[n++] = UINT64_MAX;
	for (size_t at = size - 8; n < 64 && at > BASE_AT; at -= 37)
		memcpy(&addrs[n++], data + at, 8);
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	uint32_t ranges[64];
	sw_symbolicate_table_find(t, addrs, n, ranges);
	for (size_t i = 0; i < n; i++) {
		sw_symbolicate_table_prefetch(t, ranges[i]);
		check(fr, sw_table_frames_at(t, ranges[i], addrs[i], false, fr));
		check(fr, sw_table_frames_at(t, ranges[i], addrs[i], true, fr));
		check(fr, sw_table_frames(t, addrs[i], i & 1, fr));
	}
	sw_table_free(t);
	return 0;
}
