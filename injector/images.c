/*
 * The agent's image list: every loaded image with its build id or LC_UUID
 * and its unwind information (.eh_frame_hdr on ELF; __unwind_info and
 * __eh_frame on Mach-O, by kind), rebuilt by the watchdog when the backend's
 * change counter moves, never while a thread is held.  Additions and
 * removals go into the ring as records, so a connected client learns about
 * them in order with the samples; a client that connects later gets the
 * whole list from swa_images_each().
 *
 * The unwinder looks images up in a sorted array that only the watchdog
 * thread touches; the streamer reads the list under a mutex the watchdog
 * never holds while it samples.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "unwind.h"
#include "wire/wire.h"

#define MAX_IMAGES 1024

static struct swa_image *images[MAX_IMAGES]; /* by index, NULL when free */
static struct swa_image *sorted[MAX_IMAGES];
static size_t nsorted;
static uint64_t generation = UINT64_MAX;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

const struct swa_image *swa_images_find(uint64_t pc)
{
	size_t lo = 0, hi = nsorted;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pc < sorted[mid]->lo)
			hi = mid;
		else if (pc >= sorted[mid]->hi)
			lo = mid + 1;
		else
			return sorted[mid];
	}
	return NULL;
}

static size_t image_rec(const struct swa_image *im, struct swa_rec_image *rec, size_t cap)
{
	size_t path_len = strlen(im->path);
	size_t len = sizeof(*rec) + path_len + 1;
	if (len > cap)
		return 0;
	rec->index = im->index;
	rec->id_kind = im->id_kind;
	rec->id_len = im->id_len;
	rec->load_address = im->lo;
	rec->text_vmaddr = im->text_vmaddr;
	rec->text_size = im->text_size;
	memcpy(rec->id, im->id, sizeof(rec->id));
	memcpy(rec->path, im->path, path_len + 1);
	return len;
}

static void push_added(const struct swa_image *im)
{
	size_t len = sizeof(struct swa_rec_image) + strlen(im->path) + 1;
	void *rec = swa_ring_reserve(&swa_ring, SW_MSG_IMAGE_ADDED, len);
	if (!rec) {
		atomic_fetch_add(&swa_dropped, 1);
		return;
	}
	image_rec(im, rec, len);
	swa_ring_push(&swa_ring);
}

static void push_removed(uint32_t index)
{
	struct swa_rec_removed *rec =
	    swa_ring_reserve(&swa_ring, SW_MSG_IMAGE_REMOVED, sizeof(*rec));
	if (!rec) {
		atomic_fetch_add(&swa_dropped, 1);
		return;
	}
	rec->index = index;
	swa_ring_push(&swa_ring);
}

static bool same_image(const struct swa_image *a, const struct swa_plat_image *b)
{
	return a->slide == b->slide && a->text_vmaddr == b->text_vmaddr &&
	       a->text_size == b->text_size && strcmp(a->path, b->path) == 0;
}

static void found(const struct swa_plat_image *pim, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < MAX_IMAGES; i++) {
		if (images[i] && !images[i]->seen && !images[i]->gone &&
		    same_image(images[i], pim)) {
			images[i]->seen = true;
			return;
		}
	}
	size_t slot = 0;
	while (slot < MAX_IMAGES && images[slot])
		slot++;
	if (slot == MAX_IMAGES)
		return;
	struct swa_image *im = calloc(1, sizeof(*im));
	char *path = strdup(pim->path);
	if (!im || !path) {
		free(im);
		free(path);
		return;
	}
	im->index = (uint32_t)slot;
	im->slide = pim->slide;
	im->text_vmaddr = pim->text_vmaddr;
	im->text_size = pim->text_size;
	im->lo = pim->slide + pim->text_vmaddr;
	im->hi = im->lo + pim->text_size;
	im->unwind_kind = pim->unwind_kind;
	if (pim->unwind_kind == SWA_UNWIND_KIND_EH_FRAME_HDR) {
		im->eh_hdr = pim->unwind_info;
	} else if (pim->unwind_kind == SWA_UNWIND_KIND_MACHO) {
		im->unwind_info = pim->unwind_info;
		im->unwind_info_size = pim->unwind_info_size;
		im->eh_frame = pim->eh_frame;
		im->eh_frame_size = pim->eh_frame_size;
	}
	im->id_kind = pim->id_kind;
	im->id_len = pim->id_len;
	memcpy(im->id, pim->id, sizeof(im->id));
	im->path = path;
	im->loader = pim->loader;
	im->hints = pim->hints;
	im->seen = true;
	if (im->eh_hdr)
		swa_cfi_index(im);
	images[slot] = im;
}

static int by_address(const void *a, const void *b)
{
	const struct swa_image *x = *(struct swa_image *const *)a;
	const struct swa_image *y = *(struct swa_image *const *)b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Re-reads the list when the backend's counter moved.  While the ring is
 * held (a pre-roll, which may still be rolled back) changes only reach the
 * unwinder; they are announced in the ring once it is not held, so an
 * image record is never lost with a rolled-back pre-roll.
 */
int swa_images_refresh(void)
{
	static bool unannounced;
	uint64_t gen = swa_plat_images_generation();
	bool changed = gen != generation;
	if (!changed && (!unannounced || swa_ring.held))
		return 0;
	pthread_mutex_lock(&lock);
	if (changed) {
		for (size_t i = 0; i < MAX_IMAGES; i++)
			if (images[i])
				images[i]->seen = false;
		swa_plat_images(found, NULL);
		swa_mem_invalidate();
		nsorted = 0;
		for (size_t i = 0; i < MAX_IMAGES; i++) {
			struct swa_image *im = images[i];
			if (!im)
				continue;
			if (!im->seen)
				im->gone = true;
			if (!im->gone)
				sorted[nsorted++] = im;
		}
		qsort(sorted, nsorted, sizeof(sorted[0]), by_address);
		generation = gen;
	}
	unannounced = false;
	for (size_t i = 0; i < MAX_IMAGES; i++) {
		struct swa_image *im = images[i];
		if (!im || (im->announced && !im->gone))
			continue;
		if (swa_ring.held) {
			unannounced = true;
			continue;
		}
		if (im->gone) {
			if (im->announced)
				push_removed(im->index);
			free(im->path);
			free(im);
			images[i] = NULL;
			continue;
		}
		push_added(im);
		im->announced = true;
	}
	pthread_mutex_unlock(&lock);
	swa_streamer_wake();
	return changed;
}

bool swa_images_loader_at(uint64_t pc)
{
	const struct swa_image *im = swa_images_find(pc);
	return im && im->loader;
}

void swa_images_each(swa_image_fn fn, void *ctx)
{
	static uint8_t buf[sizeof(struct swa_rec_image) + 4200];
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_IMAGES; i++) {
		if (!images[i] || images[i]->gone)
			continue;
		size_t len = image_rec(images[i], (struct swa_rec_image *)buf, sizeof(buf));
		if (len)
			fn(buf, len, ctx);
	}
	pthread_mutex_unlock(&lock);
}
