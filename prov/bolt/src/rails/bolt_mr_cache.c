/*
 * bolt_mr_cache.c: the registration cache. Findable entries (the shared,
 * local-access ones) never overlap (a new registration absorbs the entries
 * its range overlaps), so an array sorted by start address yields the one
 * candidate for a range by binary search. Unpinned findable entries sit on
 * an LRU list, least recently used first. Pinned entries that are
 * invalidated or absorbed are retired: out of the array, on a list of their
 * own, deregistered when released. Exposed entries (remote access, for a
 * peer) are never findable: each is its holder's alone, on a list of its
 * own, and deregistered when released.
 *
 * The array is allocated for the whole budget at creation, so acquire never
 * grows it; inserting or removing moves pointers, which costs far less than
 * the reg_mr or dereg_mr that comes with every insertion and removal.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "rails/bolt_mr_cache.h"

/* The access bits that open a registration to peers. */
#define BOLT_MR_CACHE_REMOTE_ACCESS \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* The smallest page of any system bolt runs on, should sysconf not say. */
#define BOLT_MR_CACHE_FALLBACK_PAGE_SIZE 4096

struct bolt_mr_cache_entry {
	uintptr_t start;        /* the registered range: page-aligned, or exactly the exposed one */
	uintptr_t end;
	struct ibv_mr *mr;
	int pin_count;
	bool retired;
	bool exposed;           /* bolt_mr_cache_expose's: one holder, gone at its release */
	/*
	 * On the LRU list while findable and unpinned, on the retired list while
	 * retired, on the exposed list while exposed.
	 */
	struct bolt_mr_cache_entry *prev, *next;
};

struct bolt_mr_cache {
	struct bolt_verbs *verbs;
	struct ibv_pd *pd;
	int access;
	int budget;
	uintptr_t page_size;

	struct bolt_mr_cache_entry **sorted;    /* findable entries by start; budget slots */
	int sorted_count;
	struct bolt_mr_cache_entry *lru;        /* findable unpinned entries, oldest first */
	struct bolt_mr_cache_entry *retired;    /* pinned entries acquire no longer finds */
	struct bolt_mr_cache_entry *exposed;    /* registrations a peer may access */
	int exposed_count;

	int registered;
	int pinned;
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;
};

/* Position of the first findable entry that starts after address. */
static int sorted_upper_bound(const struct bolt_mr_cache *cache, uintptr_t address)
{
	int low = 0, high = cache->sorted_count;

	while (low < high) {
		int middle = low + (high - low) / 2;

		if (cache->sorted[middle]->start <= address)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

static void sorted_insert(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	int position = sorted_upper_bound(cache, entry->start);

	memmove(&cache->sorted[position + 1], &cache->sorted[position],
		(size_t) (cache->sorted_count - position) * sizeof(*cache->sorted));
	cache->sorted[position] = entry;
	cache->sorted_count++;
}

static void sorted_remove(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	/* Starts are distinct, as entries do not overlap: the entry is the last one at or before its start. */
	int position = sorted_upper_bound(cache, entry->start) - 1;

	memmove(&cache->sorted[position], &cache->sorted[position + 1],
		(size_t) (cache->sorted_count - position - 1) * sizeof(*cache->sorted));
	cache->sorted_count--;
}

/* The findable entry covering [start, end), or NULL: only the last one starting at or before start can. */
static struct bolt_mr_cache_entry *find_covering(const struct bolt_mr_cache *cache,
						 uintptr_t start, uintptr_t end)
{
	int position = sorted_upper_bound(cache, start);

	if (position > 0 && cache->sorted[position - 1]->end >= end)
		return cache->sorted[position - 1];
	return NULL;
}

/* A findable entry overlapping [start, end), or NULL. */
static struct bolt_mr_cache_entry *find_overlapping(const struct bolt_mr_cache *cache,
						    uintptr_t start, uintptr_t end)
{
	int position = sorted_upper_bound(cache, start);

	if (position > 0 && cache->sorted[position - 1]->end > start)
		return cache->sorted[position - 1];
	if (position < cache->sorted_count && cache->sorted[position]->start < end)
		return cache->sorted[position];
	return NULL;
}

static void entry_deregister(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	int ret = cache->verbs->dereg_mr(entry->mr);

	/* Nothing to undo: the entry is gone either way, and if the device still holds
	 * the MR it will refuse a registration with ENOMEM and the cache evicts more. */
	if (ret)
		FI_WARN(&bolt_prov, FI_LOG_MR, "MR cache: dereg_mr of [%#lx, %#lx) failed: %s\n",
			(unsigned long) entry->start, (unsigned long) entry->end, strerror(ret));
	cache->registered--;
	free(entry);
}

/* Takes a findable entry out: deregistered now if unpinned, retired until released if pinned. */
static void entry_detach(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	sorted_remove(cache, entry);
	if (entry->pin_count) {
		entry->retired = true;
		DL_APPEND2(cache->retired, entry, prev, next);
		return;
	}
	DL_DELETE2(cache->lru, entry, prev, next);
	entry_deregister(cache, entry);
}

static bool evict_least_recently_used(struct bolt_mr_cache *cache)
{
	struct bolt_mr_cache_entry *entry = cache->lru;

	if (!entry)
		return false;
	FI_DBG(&bolt_prov, FI_LOG_MR, "MR cache: evicting [%#lx, %#lx)\n",
	       (unsigned long) entry->start, (unsigned long) entry->end);
	cache->evictions++;
	entry_detach(cache, entry);
	return true;
}

/* Widens [start, end) over the entries it overlaps and detaches them, so findable entries never overlap. */
static void absorb_overlapping(struct bolt_mr_cache *cache, uintptr_t *start, uintptr_t *end)
{
	struct bolt_mr_cache_entry *entry;

	while ((entry = find_overlapping(cache, *start, *end))) {
		if (entry->start < *start)
			*start = entry->start;
		if (entry->end > *end)
			*end = entry->end;
		entry_detach(cache, entry);
	}
}

/* What to return when the device refuses and nothing is left to evict. */
static int device_refused(const struct bolt_mr_cache *cache, uintptr_t start, uintptr_t end)
{
	/* Pinned entries are released when transfers complete: then a retry can succeed. */
	if (cache->registered) {
		FI_INFO(&bolt_prov, FI_LOG_MR,
			"MR cache: device refuses [%#lx, %#lx) while all %d entries are pinned\n",
			(unsigned long) start, (unsigned long) end, cache->registered);
		return -FI_EAGAIN;
	}
	FI_WARN(&bolt_prov, FI_LOG_MR,
		"MR cache: device refuses [%#lx, %#lx) though the cache holds no MR: "
		"other processes hold the device's MRs\n", (unsigned long) start, (unsigned long) end);
	return -FI_ENOMEM;
}

/* A new device MR for [start, end) with access, evicting while the budget is full or the device refuses. */
static int register_range(struct bolt_mr_cache *cache, uintptr_t start, uintptr_t end, int access,
			  struct ibv_mr **mr)
{
	int error;

	while (cache->registered >= cache->budget)
		if (!evict_least_recently_used(cache))
			return -FI_EAGAIN;
	for (;;) {
		errno = 0;
		*mr = cache->verbs->reg_mr(cache->pd, (void *) start, end - start, access);
		if (*mr)
			return 0;
		error = errno ? errno : EIO;
		if (error != ENOMEM) {
			FI_WARN(&bolt_prov, FI_LOG_MR, "MR cache: reg_mr of [%#lx, %#lx) failed: %s\n",
				(unsigned long) start, (unsigned long) end, strerror(error));
			return -error;
		}
		/* Below the budget yet refused: other processes hold the device's MRs. */
		if (!evict_least_recently_used(cache))
			return device_refused(cache, start, end);
	}
}

static void entry_pin(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	if (entry->pin_count++)
		return;
	DL_DELETE2(cache->lru, entry, prev, next);
	cache->pinned++;
}

static int entry_create(struct bolt_mr_cache *cache, uintptr_t start, uintptr_t end,
			struct bolt_mr_cache_entry **entry_out)
{
	struct bolt_mr_cache_entry *entry;
	int ret;

	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -FI_ENOMEM;
	absorb_overlapping(cache, &start, &end);
	ret = register_range(cache, start, end, cache->access, &entry->mr);
	if (ret) {
		free(entry);
		return ret;
	}
	entry->start = start;
	entry->end = end;
	cache->registered++;
	sorted_insert(cache, entry);
	entry->pin_count = 1;
	cache->pinned++;
	*entry_out = entry;
	return 0;
}

/* Whether [address, address + length) is a range acquire takes: not empty, and whole pages fit. */
static bool range_valid(const struct bolt_mr_cache *cache, const void *address, size_t length)
{
	uintptr_t first = (uintptr_t) address;

	return length && length <= UINTPTR_MAX - first &&
	       first + length <= UINTPTR_MAX - (cache->page_size - 1);
}

/* [address, address + length) widened to whole pages, or -FI_EINVAL. */
static int page_range(const struct bolt_mr_cache *cache, const void *address, size_t length,
		      uintptr_t *start, uintptr_t *end)
{
	uintptr_t first = (uintptr_t) address;

	if (!range_valid(cache, address, length))
		return -FI_EINVAL;
	*start = first & ~(cache->page_size - 1);
	*end = (first + length + cache->page_size - 1) & ~(cache->page_size - 1);
	return 0;
}

int bolt_mr_cache_create(struct bolt_verbs *verbs, struct ibv_pd *pd, int budget, int access,
			 struct bolt_mr_cache **cache_out)
{
	struct bolt_mr_cache *cache;
	long page_size = sysconf(_SC_PAGESIZE);

	*cache_out = NULL;
	/* Shared entries are never a peer's: remote access goes only through bolt_mr_cache_expose. */
	if (budget < 1 || access & BOLT_MR_CACHE_REMOTE_ACCESS)
		return -FI_EINVAL;
	cache = calloc(1, sizeof(*cache));
	if (!cache)
		return -FI_ENOMEM;
	cache->sorted = calloc((size_t) budget, sizeof(*cache->sorted));
	if (!cache->sorted) {
		free(cache);
		return -FI_ENOMEM;
	}
	cache->verbs = verbs;
	cache->pd = pd;
	cache->budget = budget;
	cache->access = access;
	cache->page_size = page_size > 0 ? (uintptr_t) page_size : BOLT_MR_CACHE_FALLBACK_PAGE_SIZE;
	*cache_out = cache;
	return 0;
}

void bolt_mr_cache_destroy(struct bolt_mr_cache *cache)
{
	struct bolt_mr_cache_entry *entry, *following;

	if (cache->pinned)
		FI_WARN(&bolt_prov, FI_LOG_MR, "MR cache destroyed with %d entries pinned\n",
			cache->pinned);
	for (int i = 0; i < cache->sorted_count; i++)
		entry_deregister(cache, cache->sorted[i]);
	DL_FOREACH_SAFE2(cache->retired, entry, following, next)
		entry_deregister(cache, entry);
	DL_FOREACH_SAFE2(cache->exposed, entry, following, next)
		entry_deregister(cache, entry);
	free(cache->sorted);
	free(cache);
}

int bolt_mr_cache_acquire(struct bolt_mr_cache *cache, const void *address, size_t length,
			  struct bolt_mr_cache_entry **entry)
{
	uintptr_t start, end;
	int ret;

	ret = page_range(cache, address, length, &start, &end);
	if (ret)
		return ret;
	*entry = find_covering(cache, start, end);
	if (*entry) {
		cache->hits++;
		entry_pin(cache, *entry);
		return 0;
	}
	cache->misses++;
	return entry_create(cache, start, end, entry);
}

int bolt_mr_cache_expose(struct bolt_mr_cache *cache, const void *address, size_t length,
			 int access, struct bolt_mr_cache_entry **entry_out)
{
	uintptr_t start = (uintptr_t) address;
	struct bolt_mr_cache_entry *entry;
	int ret;

	if (!range_valid(cache, address, length))
		return -FI_EINVAL;
	/* Never found in the cache: every exposure is a registration of its own. */
	cache->misses++;
	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -FI_ENOMEM;
	ret = register_range(cache, start, start + length, access, &entry->mr);
	if (ret) {
		free(entry);
		return ret;
	}
	entry->start = start;
	entry->end = start + length;
	entry->exposed = true;
	entry->pin_count = 1;
	cache->registered++;
	cache->pinned++;
	cache->exposed_count++;
	DL_APPEND2(cache->exposed, entry, prev, next);
	*entry_out = entry;
	return 0;
}

void bolt_mr_cache_release(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry)
{
	if (entry->pin_count <= 0) {
		FI_WARN(&bolt_prov, FI_LOG_MR, "MR cache: [%#lx, %#lx) released more than acquired\n",
			(unsigned long) entry->start, (unsigned long) entry->end);
		return;
	}
	if (--entry->pin_count)
		return;
	cache->pinned--;
	if (entry->exposed) {
		/* What the peer was given ends here: kept, it could still be written. */
		DL_DELETE2(cache->exposed, entry, prev, next);
		cache->exposed_count--;
		entry_deregister(cache, entry);
		return;
	}
	if (entry->retired) {
		DL_DELETE2(cache->retired, entry, prev, next);
		entry_deregister(cache, entry);
		return;
	}
	DL_APPEND2(cache->lru, entry, prev, next);
}

struct ibv_mr *bolt_mr_cache_entry_mr(const struct bolt_mr_cache_entry *entry)
{
	return entry->mr;
}

void bolt_mr_cache_invalidate(struct bolt_mr_cache *cache, const void *address, size_t length)
{
	uintptr_t start = (uintptr_t) address;
	uintptr_t end = length > UINTPTR_MAX - start ? UINTPTR_MAX : start + length;
	struct bolt_mr_cache_entry *entry;

	if (!length)
		return;
	while ((entry = find_overlapping(cache, start, end)))
		entry_detach(cache, entry);
}

int bolt_mr_cache_room(const struct bolt_mr_cache *cache)
{
	return cache->budget - cache->pinned;
}

void bolt_mr_cache_stats(const struct bolt_mr_cache *cache, struct bolt_mr_cache_stats *stats)
{
	stats->hits = cache->hits;
	stats->misses = cache->misses;
	stats->evictions = cache->evictions;
	stats->registered = cache->registered;
	stats->pinned = cache->pinned;
	stats->exposed = cache->exposed_count;
	stats->budget = cache->budget;
}
