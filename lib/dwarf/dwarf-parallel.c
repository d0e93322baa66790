/*
 * Reading the units a batch of addresses will need on several threads at
 * once.  A first run over a large binary spends most of its time reading
 * DIE trees and line programs, and units do not depend on each other.
 *
 * What units share is settled on the calling thread first: the unit
 * heads, the abbreviation tables (a cache in struct sw_dwarf) and their
 * sizes.  A worker then writes only into the units it takes and reads the
 * sections, which nobody writes.  A unit a worker cannot read is left
 * unread, so that the lookup needing it reads it again and reports why.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-private.h"
#include "util/thread.h"

#define MAX_THREADS 8

struct job {
	const struct sw_dwarf *d;
	struct dw_unit **units;
	size_t n;
	size_t next; /* taken with an atomic add */
};

static void *work(void *arg)
{
	struct job *j = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->n)
			return NULL;
		dw_unit_read(j->d, j->units[i]);
	}
}

/* Largest first, so that no thread is left with a large unit at the end. */
static int cmp_size(const void *a, const void *b)
{
	const struct dw_unit *x = *(struct dw_unit *const *)a, *y = *(struct dw_unit *const *)b;
	uint64_t sx = x->end - x->off, sy = y->end - y->off;
	return sx < sy ? 1 : sx > sy ? -1 : 0;
}

/*
 * The units holding addrs that are still to be read from DWARF, each with
 * its head read and its abbreviations sized: into list, returning how many.
 */
static size_t units_to_read(struct sw_dwarf *d, const uint64_t *addrs, size_t n,
			    struct dw_unit **list)
{
	/*
	 * Once every unit is read (a second run takes them all from the
	 * index), a batch has nothing to look for: its addresses are not
	 * placed in units again, a twentieth of that run's time.
	 */
	bool all = true;
	for (size_t i = 0; i < d->ncu_map && all; i++) {
		const struct dw_unit *u = &d->units[d->cu_map[i].func];
		all = u->tree_done || u->line_done;
	}
	if ((d->mapped_read = all))
		return 0;
	bool *seen = calloc(d->nunits ? d->nunits : 1, 1);
	if (!seen)
		return 0;
	/* the units the map names: once every one was seen, the rest of addrs adds none */
	size_t mapped = 0, nseen = 0;
	for (size_t i = 0; i < d->ncu_map; i++) {
		if (!seen[d->cu_map[i].func])
			mapped++;
		seen[d->cu_map[i].func] = true;
	}
	memset(seen, 0, d->nunits);
	size_t k = 0;
	for (size_t i = 0; i < n && nseen < mapped; i++) {
		size_t at = dw_unit_at(d, addrs[i]);
		if (at == SIZE_MAX || seen[at])
			continue;
		seen[at] = true;
		nseen++;
		struct dw_unit *u = &d->units[at];
		if (u->tree_done || u->line_done || dw_index_unit(d, u))
			continue;
		if (dw_unit_head(d, u, NULL) < 0)
			continue;
		dw_abbrevs_size(u->abbrevs, u);
		list[k++] = u;
	}
	free(seen);
	/* a table shared by units of other sizes is sized for one of them: the rest wait */
	size_t kept = 0;
	for (size_t i = 0; i < k; i++)
		if (list[i]->abbrevs->sized_for == dw_abbrevs_key(list[i]))
			list[kept++] = list[i];
	return kept;
}

int sw_dwarf_read_units(struct sw_dwarf *d, const uint64_t *addrs, size_t n, unsigned threads)
{
	if (threads < 2 || n < 2 || d->mapped_read || dw_cu_map_build(d, NULL) < 0)
		return 0;
	/*
	 * Units the index holds are taken from it as lookups need them, at
	 * next to no cost: when it holds them all (a second run), there is
	 * nothing to read here, and the addresses are not placed in units.
	 */
	if (d->index && sw_dwarf_index_whole(d)) {
		d->mapped_read = true;
		return 0;
	}
	struct dw_unit **list = malloc((d->nunits ? d->nunits : 1) * sizeof(*list));
	if (!list)
		return 0;
	size_t k = units_to_read(d, addrs, n, list);
	if (k < 2) {
		free(list);
		return 0; /* the lookups read it */
	}
	qsort(list, k, sizeof(*list), cmp_size);
	struct job job = {.d = d, .units = list, .n = k};
	pthread_t tid[MAX_THREADS];
	size_t started = 0;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	while (started + 1 < threads && started + 1 < k &&
	       sw_thread_start(&tid[started], work, &job) == 0)
		started++;
	work(&job); /* this thread too; alone when no thread could start */
	for (size_t i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	d->parsed = true;
	free(list);
	return (int)started + 1;
}
