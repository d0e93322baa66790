/*
 * Symbol hints for images the host has no file for (the vDSO on Linux, the
 * dyld shared cache on Darwin): after a sample was unwound -- the thread is
 * released -- its frames in such images are looked up in the image's own
 * symbol table in memory, and each symbol goes out once as a symbol-hint
 * record.  While the ring is held (a pre-roll that may still be rolled
 * back) hints wait in a small queue, so none is lost with a rollback.
 * Only the watchdog thread runs this.
 */
#include <string.h>

#include "agent.h"
#include "unwind.h"
#include "wire/wire.h"

#define SENT    256 /* symbols already sent, by runtime address */
#define PENDING 16
#define NAME    128

static uint64_t sent[SENT];
static size_t nsent;
static struct pending {
	uint32_t image_index;
	uint64_t offset, size, addr;
	char name[NAME];
} pending[PENDING];
static size_t npending;

static bool known(uint64_t addr)
{
	for (size_t i = 0; i < nsent; i++)
		if (sent[i] == addr)
			return true;
	for (size_t i = 0; i < npending; i++)
		if (pending[i].addr == addr)
			return true;
	return false;
}

static void note(const struct swa_image *im, uint64_t pc)
{
	struct pending p = {.image_index = im->index};
	if (npending == PENDING || nsent == SENT ||
	    swa_plat_memory_symbol(pc, &p.addr, &p.size, p.name, sizeof(p.name)) < 0 ||
	    known(p.addr) || p.addr < im->lo)
		return;
	p.offset = p.addr - im->lo;
	pending[npending++] = p;
}

void swa_hints_note(const uint64_t *frames, uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++) {
		uint64_t pc = i ? frames[i] - 1 : frames[i]; /* a return address: the call */
		const struct swa_image *im = swa_images_find(pc);
		if (im && im->memory_only)
			note(im, pc);
	}
	swa_hints_flush();
}

void swa_hints_flush(void)
{
	if (!npending || swa_ring.held)
		return;
	for (size_t i = 0; i < npending; i++) {
		const struct pending *p = &pending[i];
		size_t len = sizeof(struct swa_rec_hint) + strlen(p->name) + 1;
		struct swa_rec_hint *rec = swa_ring_reserve(&swa_ring, SW_MSG_SYMBOL_HINT, len);
		if (!rec) {
			atomic_fetch_add(&swa_dropped, 1);
			continue;
		}
		rec->image_index = p->image_index;
		rec->offset = p->offset;
		rec->size = p->size;
		memcpy(rec->name, p->name, strlen(p->name) + 1);
		swa_ring_push(&swa_ring);
		sent[nsent++] = p->addr;
	}
	npending = 0;
	swa_streamer_wake();
}
