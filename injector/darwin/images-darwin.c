/*
 * The loaded images on Darwin.  dyld calls our add and remove callbacks
 * (with its lock held) for every image, those already loaded included; each
 * call parses the image's load commands once, into a fixed table: LC_UUID,
 * the __TEXT segment's address and size, the slide, __unwind_info and
 * __eh_frame, and whether it lives in the dyld shared cache (whose symbols
 * the host has no copy of).  The watchdog reads the table when the change
 * counter moved, never while a thread is held; the path strings are dyld's
 * own and live as long as the image.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach-o/nlist.h>

#include "darwin.h"
#include "wire/wire.h"

#define MAX_IMAGES         2048
#define MH_DYLIB_IN_CACHE_ 0x80000000u

struct darwin_image {
	const struct mach_header_64 *header; /* NULL: a free slot */
	struct swa_plat_image im;
	bool in_cache;
};

static struct darwin_image table[MAX_IMAGES];
static _Atomic uint64_t generation;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void section(const struct section_64 *s, uint64_t slide, struct swa_plat_image *im)
{
	if (strncmp(s->segname, "__TEXT", 16) != 0)
		return;
	if (strncmp(s->sectname, "__unwind_info", 16) == 0) {
		im->unwind_info = s->addr + slide;
		im->unwind_info_size = s->size;
	} else if (strncmp(s->sectname, "__eh_frame", 16) == 0) {
		im->eh_frame = s->addr + slide;
		im->eh_frame_size = s->size;
	}
}

static void segment(const struct segment_command_64 *seg, uint64_t slide, struct swa_plat_image *im)
{
	if (strncmp(seg->segname, "__TEXT", 16) != 0)
		return;
	im->text_vmaddr = seg->vmaddr;
	im->text_size = seg->vmsize;
	const struct section_64 *s = (const struct section_64 *)(seg + 1);
	for (uint32_t i = 0; i < seg->nsects; i++)
		section(&s[i], slide, im);
}

/* Reads what the agent needs from the load commands of an image in memory. */
static void describe(const struct mach_header_64 *mh, intptr_t slide, struct swa_plat_image *im)
{
	memset(im, 0, sizeof(*im));
	im->slide = (uint64_t)slide;
	const uint8_t *p = (const uint8_t *)(mh + 1);
	for (uint32_t i = 0; i < mh->ncmds; i++) {
		const struct load_command *lc = (const struct load_command *)p;
		if (lc->cmd == LC_SEGMENT_64) {
			segment((const struct segment_command_64 *)lc, (uint64_t)slide, im);
		} else if (lc->cmd == LC_UUID) {
			im->id_kind = SW_ID_UUID;
			im->id_len = 16;
			memcpy(im->id, ((const struct uuid_command *)lc)->uuid, 16);
		}
		p += lc->cmdsize;
	}
	if (im->unwind_info || im->eh_frame)
		im->unwind_kind = SWA_UNWIND_KIND_MACHO;
	im->loader = mh->filetype == MH_DYLINKER;
}

static const char *path_of(const struct mach_header *mh)
{
	/* dyld holds its lock while calling us: its list is stable here */
	for (uint32_t i = 0, n = _dyld_image_count(); i < n; i++)
		if (_dyld_get_image_header(i) == mh)
			return _dyld_get_image_name(i);
	return "";
}

static void added(const struct mach_header *mh, intptr_t slide)
{
	if (mh->magic != MH_MAGIC_64)
		return;
	const char *path = path_of(mh);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_IMAGES; i++) {
		if (table[i].header)
			continue;
		table[i].header = (const struct mach_header_64 *)mh;
		describe(table[i].header, slide, &table[i].im);
		table[i].im.path = path;
		table[i].in_cache = (mh->flags & MH_DYLIB_IN_CACHE_) != 0;
		table[i].im.hints = table[i].in_cache;
		break;
	}
	atomic_fetch_add(&generation, 1);
	pthread_mutex_unlock(&lock);
}

static void removed(const struct mach_header *mh, intptr_t slide)
{
	(void)slide;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_IMAGES; i++)
		if (table[i].header == (const struct mach_header_64 *)mh)
			table[i].header = NULL;
	atomic_fetch_add(&generation, 1);
	pthread_mutex_unlock(&lock);
}

/* Registers the callbacks; dyld calls added() for every image already loaded. */
void swa_darwin_images_start(void)
{
	_dyld_register_func_for_add_image(added);
	_dyld_register_func_for_remove_image(removed);
}

uint64_t swa_plat_images_generation(void)
{
	return atomic_load(&generation);
}

int swa_plat_images(swa_plat_image_fn fn, void *ctx)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_IMAGES; i++)
		if (table[i].header && table[i].im.text_size)
			fn(&table[i].im, ctx);
	pthread_mutex_unlock(&lock);
	return 0;
}

struct symtab {
	const struct nlist_64 *syms;
	const char *strs;
	uint32_t nsyms, strsize;
};

/* The image's symbol table in memory, through __LINKEDIT (the cache's, for a cached image). */
static bool find_symtab(const struct mach_header_64 *mh, uint64_t slide, struct symtab *ret)
{
	const struct symtab_command *st = NULL;
	const struct segment_command_64 *linkedit = NULL;
	const uint8_t *p = (const uint8_t *)(mh + 1);
	for (uint32_t i = 0; i < mh->ncmds; i++) {
		const struct load_command *lc = (const struct load_command *)p;
		if (lc->cmd == LC_SYMTAB)
			st = (const struct symtab_command *)lc;
		else if (lc->cmd == LC_SEGMENT_64 &&
			 strncmp(((const struct segment_command_64 *)lc)->segname, "__LINKEDIT",
				 16) == 0)
			linkedit = (const struct segment_command_64 *)lc;
		p += lc->cmdsize;
	}
	if (!st || !linkedit || !st->nsyms)
		return false;
	uint64_t base = slide + linkedit->vmaddr - linkedit->fileoff;
	ret->syms = (const struct nlist_64 *)(uintptr_t)(base + st->symoff);
	ret->strs = (const char *)(uintptr_t)(base + st->stroff);
	ret->nsyms = st->nsyms;
	ret->strsize = st->strsize;
	return true;
}

/* The nearest defined symbol at or below addr (a file address), and where the next begins. */
static const struct nlist_64 *nearest(const struct symtab *t, uint64_t addr, uint64_t *ret_next)
{
	const struct nlist_64 *best = NULL;
	uint64_t next = UINT64_MAX;
	for (uint32_t i = 0; i < t->nsyms; i++) {
		const struct nlist_64 *n = &t->syms[i];
		if ((n->n_type & N_STAB) || (n->n_type & N_TYPE) != N_SECT ||
		    n->n_strx >= t->strsize)
			continue;
		if (n->n_value <= addr && (!best || n->n_value > best->n_value))
			best = n;
		else if (n->n_value > addr && n->n_value < next)
			next = n->n_value;
	}
	*ret_next = next;
	return best;
}

int swa_plat_symbol_hint(uint64_t slide, uint64_t text_vmaddr, uint64_t pc, uint64_t *ret_start,
			 uint64_t *ret_size, const char **ret_name)
{
	const struct mach_header_64 *mh = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_IMAGES && !mh; i++)
		if (table[i].header && table[i].in_cache && table[i].im.slide == slide &&
		    table[i].im.text_vmaddr == text_vmaddr)
			mh = table[i].header; /* cached images are never unloaded */
	pthread_mutex_unlock(&lock);
	struct symtab t;
	if (!mh || !find_symtab(mh, slide, &t))
		return -ENOENT;
	uint64_t next;
	const struct nlist_64 *n = nearest(&t, pc - slide, &next);
	if (!n)
		return -ENOENT;
	const char *name = t.strs + n->n_strx;
	*ret_name = name[0] == '_' ? name + 1 : name; /* C's leading underscore */
	*ret_start = n->n_value + slide;
	*ret_size = next == UINT64_MAX ? 0 : next - n->n_value;
	return 0;
}
