/*
 * Compressed debug sections: SHF_COMPRESSED sections (an Elf32_Chdr or
 * Elf64_Chdr before a zlib stream) and the older .zdebug_* ones ("ZLIB"
 * and a big-endian 64-bit size).  The declared size is checked against a
 * ceiling before anything is allocated, and the stream must inflate to
 * exactly that size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "elf-private.h"

#if SW_HAVE_ZLIB
#include <zlib.h>
#endif

#define ELFCOMPRESS_ZLIB 1

static int inflate_exact(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_size)
{
#if SW_HAVE_ZLIB
	z_stream z = {0};
	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	int r = 0;
	size_t done_in = 0, done_out = 0;
	/* zlib counts in uInt: feed very large sections in pieces */
	for (;;) {
		size_t in_chunk = in_size - done_in, out_chunk = out_size - done_out;
		z.next_in = (Bytef *)(uintptr_t)(in + done_in);
		z.avail_in = in_chunk > 0x40000000 ? 0x40000000 : (uInt)in_chunk;
		z.next_out = out + done_out;
		z.avail_out = out_chunk > 0x40000000 ? 0x40000000 : (uInt)out_chunk;
		uInt before_in = z.avail_in, before_out = z.avail_out;
		int zr = inflate(&z, Z_NO_FLUSH);
		done_in += before_in - z.avail_in;
		done_out += before_out - z.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK || (before_in == z.avail_in && before_out == z.avail_out)) {
			r = -EINVAL;
			break;
		}
	}
	inflateEnd(&z);
	if (r == 0 && done_out != out_size)
		r = -EINVAL;
	return r;
#else
	return -ENOTSUP;
#endif
}

int sw_elf_decompress(const struct elf_file *f, const struct elf_shdr *s, bool zdebug,
		      struct elf_priv *priv, struct sw_section *ret, struct sw_error *err)
{
	const uint8_t *data;
	int r = sw_elf_section_data(f, s, &data, err);
	if (r < 0)
		return r;
	uint64_t out_size, hdr;
	if (zdebug) {
		if (s->size < 12 || memcmp(data, "ZLIB", 4) != 0)
			return sw_error_set(err, -EINVAL, "bad .zdebug header at offset 0x%llx",
					    (unsigned long long)s->offset);
		out_size = 0;
		for (int i = 0; i < 8; i++)
			out_size = out_size << 8 | data[4 + i];
		hdr = 12;
	} else {
		hdr = f->is64 ? 24 : 12;
		if (s->size < hdr)
			return sw_error_set(err, -EINVAL,
					    "truncated compression header at offset 0x%llx",
					    (unsigned long long)s->offset);
		uint32_t type = sw_elf_u32(f, data);
		if (type != ELFCOMPRESS_ZLIB)
			return sw_error_set(err, -ENOTSUP,
					    "unsupported compression type %u at offset 0x%llx",
					    type, (unsigned long long)s->offset);
		out_size = f->is64 ? sw_elf_u64(f, data + 8) : sw_elf_u32(f, data + 4);
	}
	/* deflate cannot do better than about 1032:1, so more is a lie */
	if (out_size > SW_ELF_MAX_DECOMPRESSED || out_size / 1032 > s->size - hdr + 1)
		return sw_error_set(err, -E2BIG,
				    "compressed section at offset 0x%llx claims %llu bytes",
				    (unsigned long long)s->offset, (unsigned long long)out_size);
	if (priv->inflated + out_size > SW_ELF_INFLATE_LIMIT(f->size))
		return sw_error_set(err, -E2BIG,
				    "compressed sections inflate to more than the limit of %llu "
				    "bytes (16 times the file's size plus 64 MiB) at offset 0x%llx",
				    (unsigned long long)SW_ELF_INFLATE_LIMIT(f->size),
				    (unsigned long long)s->offset);
	if (priv->ndecompressed >= sizeof(priv->decompressed) / sizeof(priv->decompressed[0]))
		return sw_error_set(err, -E2BIG, "too many compressed sections");
	uint8_t *out = malloc(out_size ? out_size : 1);
	if (!out)
		return sw_error_set(err, -ENOMEM, "out of memory");
	r = inflate_exact(data + hdr, s->size - hdr, out, out_size);
	if (r < 0) {
		free(out);
		if (r == -ENOTSUP)
			return sw_error_set(err, r, "compressed debug sections need zlib");
		return sw_error_set(err, r, "corrupt compressed section at offset 0x%llx",
				    (unsigned long long)s->offset);
	}
	priv->decompressed[priv->ndecompressed++] = out;
	priv->inflated += out_size;
	ret->data = out;
	ret->size = out_size;
	return 0;
}
