/*
 * Symbol hints: names the host cannot have.  A Darwin system library lives
 * in the dyld shared cache, of which a Linux farm host has no copy, so for
 * frames in such images (the backend marks them) the agent sends the
 * nearest symbol it finds in the image's own symbol table, with the wire's
 * symbol-hint message; the host prefers its own symbols and marks names
 * that came from hints.
 *
 * While a stall is watched, the watchdog only notes the addresses (a
 * bounded set, after each unwind, no thread held); when the stall ends and
 * the ring is released, each noted address is resolved once, on the
 * watchdog's thread, and its hint pushed.  Each function is sent once per
 * image load (a bounded table of what was sent), so a stall's hints cost
 * nothing the next time.
 */
#include <string.h>

#include "agent.h"
#include "unwind.h"
#include "wire/wire.h"

#define PENDING   256
#define SENT      4096
#define NAME_MAX_ 1024

static uint64_t pending[PENDING];
static size_t npending;
static struct {
	uint64_t start, end; /* runtime range of a function already hinted */
} sent[SENT];
static size_t nsent;

static bool already_sent(uint64_t pc)
{
	for (size_t i = 0; i < nsent; i++)
		if (pc >= sent[i].start && pc < sent[i].end)
			return true;
	return false;
}

void swa_hints_note(const uint64_t *frames, uint32_t depth)
{
	for (uint32_t i = 0; i < depth && npending < PENDING; i++) {
		uint64_t pc = i ? frames[i] - 1 : frames[i];
		const struct swa_image *im = swa_images_find(pc);
		if (!im || !im->hints || already_sent(pc))
			continue;
		bool dup = false;
		for (size_t j = 0; j < npending && !dup; j++)
			dup = pending[j] == pc;
		if (!dup)
			pending[npending++] = pc;
	}
}

static void push_hint(const struct swa_image *im, uint64_t start, uint64_t size, const char *name)
{
	size_t len = strnlen(name, NAME_MAX_);
	struct swa_rec_hint *rec =
	    swa_ring_reserve(&swa_ring, SW_MSG_SYMBOL_HINT, sizeof(*rec) + len + 1);
	if (!rec) {
		atomic_fetch_add(&swa_dropped, 1);
		return;
	}
	rec->image_index = im->index;
	rec->offset = start - im->lo;
	rec->size = size;
	memcpy(rec->name, name, len);
	rec->name[len] = '\0';
	swa_ring_push(&swa_ring);
}

void swa_hints_flush(void)
{
	if (swa_ring.held)
		return;
	for (size_t i = 0; i < npending; i++) {
		uint64_t pc = pending[i], start, size;
		const char *name;
		const struct swa_image *im = swa_images_find(pc);
		if (!im || already_sent(pc) ||
		    swa_plat_symbol_hint(im->slide, im->text_vmaddr, pc, &start, &size, &name) < 0)
			continue;
		if (start < im->lo || start > pc)
			continue;
		push_hint(im, start, size, name);
		if (nsent == SENT)
			nsent = 0; /* forget them all: at worst a name is sent again */
		sent[nsent].start = start;
		sent[nsent].end = size ? start + size : pc + 1;
		nsent++;
	}
	npending = 0;
}
