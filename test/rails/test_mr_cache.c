/*
 * test_mr_cache.c: the registration cache against a fake verbs table whose
 * device allows 100 MRs, as Thunderbolt does (seed 001): hits and misses,
 * LRU eviction, the budget, pinning, invalidation, a device that refuses
 * below the budget because other processes hold its MRs, 10,000 buffers
 * through a 96-MR budget, and teardown without leaks; and exposed
 * registrations: exactly the bytes and the access asked for, never shared,
 * never kept after release. The fake device never touches memory, so
 * buffers are synthetic page-aligned addresses.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rails/bolt_mr_cache.h"

#define DEVICE_MR_LIMIT 100
#define THUNDERBOLT_BUDGET 96
#define TEST_ACCESS IBV_ACCESS_LOCAL_WRITE
#define FAKE_MR_MAGIC 0xb017b017u
#define BUFFER_BASE ((uintptr_t) 1 << 40)

struct fake_mr {
	struct ibv_mr mr;               /* first: the cache sees only this */
	uint32_t magic;
	bool live;
	int access;
	struct fake_mr *next_allocated; /* kept until teardown, so stale pointers stay checkable */
};

static struct {
	struct ibv_pd pd;
	int live;               /* MRs this process holds */
	int held_by_others;     /* MRs other processes hold */
	int most_live;
	int registrations;
	int errors;             /* bad arguments, unknown or double deregistrations */
	int fail_next_errno;    /* the next reg_mr fails with this errno */
	uint32_t next_key;
	struct fake_mr *allocated;
} device;

static size_t page_size;
static struct bolt_mr_cache *cache;

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct fake_mr *fake;

	/* Shared entries come in whole pages with local access; exposed ones exactly as asked. */
	bool shared = access == TEST_ACCESS && !((uintptr_t) addr % page_size) && !(length % page_size);

	if (pd != &device.pd || !length || (!shared && access != BOLT_MR_CACHE_PEER_WRITE)) {
		device.errors++;
		errno = EINVAL;
		return NULL;
	}
	if (device.fail_next_errno) {
		errno = device.fail_next_errno;
		device.fail_next_errno = 0;
		return NULL;
	}
	if (device.live + device.held_by_others >= DEVICE_MR_LIMIT) {
		errno = ENOMEM;
		return NULL;
	}
	fake = calloc(1, sizeof(*fake));
	cr_assert_not_null(fake);
	fake->mr.pd = pd;
	fake->mr.addr = addr;
	fake->mr.length = length;
	fake->mr.lkey = fake->mr.rkey = ++device.next_key;
	fake->magic = FAKE_MR_MAGIC;
	fake->live = true;
	fake->access = access;
	fake->next_allocated = device.allocated;
	device.allocated = fake;
	device.registrations++;
	if (++device.live > device.most_live)
		device.most_live = device.live;
	return &fake->mr;
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
	struct fake_mr *fake = (struct fake_mr *) mr;

	if (!fake || fake->magic != FAKE_MR_MAGIC || !fake->live) {
		device.errors++;
		return EINVAL;
	}
	fake->live = false;
	device.live--;
	return 0;
}

static struct bolt_verbs fake_verbs = {
	.name = "fake",
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
};

static void setup(void)
{
	memset(&device, 0, sizeof(device));
	page_size = (size_t) sysconf(_SC_PAGESIZE);
	cache = NULL;
}

/* Frees the fake MRs; runs after the test's own checks, as Criterion ignores failures here. */
static void teardown(void)
{
	struct fake_mr *fake, *next;

	for (fake = device.allocated; fake; fake = next) {
		next = fake->next_allocated;
		free(fake);
	}
}

TestSuite(mr_cache, .init = setup, .fini = teardown);

/* Every test ends here: destroying the cache leaves the device as it found it. */
static void destroy_cache_and_check_device(void)
{
	if (cache)
		bolt_mr_cache_destroy(cache);
	cache = NULL;
	cr_assert_eq(device.live, 0, "%d device MRs leaked", device.live);
	cr_assert_eq(device.errors, 0, "%d bad calls to the device", device.errors);
}

#define CACHE_TEST(name)                                \
	static void name##_body(void);                  \
	Test(mr_cache, name)                            \
	{                                               \
		name##_body();                          \
		destroy_cache_and_check_device();       \
	}                                               \
	static void name##_body(void)

static void create_cache(int budget)
{
	cr_assert_eq(bolt_mr_cache_create(&fake_verbs, &device.pd, budget, TEST_ACCESS, &cache), 0);
}

/* The index-th of many one-page buffers, a page apart so that none share a registration. */
static void *buffer(int index)
{
	return (void *) (BUFFER_BASE + (uintptr_t) index * 2 * page_size);
}

static struct bolt_mr_cache_stats stats(void)
{
	struct bolt_mr_cache_stats result;

	bolt_mr_cache_stats(cache, &result);
	return result;
}

/* Acquires a range that must succeed, with a live MR covering it. */
static struct bolt_mr_cache_entry *acquire(const void *address, size_t length)
{
	struct bolt_mr_cache_entry *entry;
	struct fake_mr *fake;
	uintptr_t start = (uintptr_t) address;
	int ret = bolt_mr_cache_acquire(cache, address, length, &entry);

	cr_assert_eq(ret, 0, "acquire of %p + %zu: %d", address, length, ret);
	fake = (struct fake_mr *) bolt_mr_cache_entry_mr(entry);
	cr_assert(fake->magic == FAKE_MR_MAGIC && fake->live, "acquired MR is not live");
	cr_assert((uintptr_t) fake->mr.addr <= start &&
		  start + length <= (uintptr_t) fake->mr.addr + fake->mr.length,
		  "MR does not cover %p + %zu", address, length);
	return entry;
}

/* Whether the cache held a registration covering the range (acquires and releases it). */
static bool cached(const void *address, size_t length)
{
	uint64_t hits = stats().hits;

	bolt_mr_cache_release(cache, acquire(address, length));
	return stats().hits > hits;
}

CACHE_TEST(create_rejects_empty_budget)
{
	cr_assert_eq(bolt_mr_cache_create(&fake_verbs, &device.pd, 0, TEST_ACCESS, &cache), -FI_EINVAL);
	cr_assert_null(cache);
	create_cache(THUNDERBOLT_BUDGET);
	cr_assert_eq(stats().budget, THUNDERBOLT_BUDGET);
}

CACHE_TEST(create_rejects_remote_access)
{
	cr_assert_eq(bolt_mr_cache_create(&fake_verbs, &device.pd, 4, BOLT_MR_CACHE_PEER_WRITE, &cache),
		     -FI_EINVAL, "shared entries are never a peer's");
	cr_assert_null(cache);
}

CACHE_TEST(rejects_empty_and_wrapping_ranges)
{
	struct bolt_mr_cache_entry *entry;

	create_cache(4);
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(0), 0, &entry), -FI_EINVAL);
	cr_assert_eq(bolt_mr_cache_acquire(cache, (void *) (UINTPTR_MAX - 10), 100, &entry),
		     -FI_EINVAL);
	cr_assert_eq(device.registrations, 0);
}

CACHE_TEST(hit_on_covering_range)
{
	struct bolt_mr_cache_entry *first, *second;
	char *base = buffer(0);

	create_cache(4);
	first = acquire(base, 3 * page_size);
	bolt_mr_cache_release(cache, first);
	second = acquire(base + 100, 200);
	cr_assert_eq(second, first);
	cr_assert_eq(stats().hits, 1);
	cr_assert_eq(stats().misses, 1);
	cr_assert_eq(device.registrations, 1);
	bolt_mr_cache_release(cache, second);
}

CACHE_TEST(unaligned_range_registers_whole_pages)
{
	char *base = buffer(0);
	struct bolt_mr_cache_entry *entry;
	struct ibv_mr *mr;

	create_cache(4);
	entry = acquire(base + page_size - 1, 2);
	mr = bolt_mr_cache_entry_mr(entry);
	cr_assert_eq(mr->addr, base);
	cr_assert_eq(mr->length, 2 * page_size);
	bolt_mr_cache_release(cache, entry);
}

CACHE_TEST(miss_on_partially_covered_range_merges)
{
	char *base = buffer(0);
	struct ibv_mr *mr;
	struct bolt_mr_cache_entry *entry;

	create_cache(4);
	bolt_mr_cache_release(cache, acquire(base, 2 * page_size));
	entry = acquire(base + page_size, 2 * page_size);
	cr_assert_eq(stats().misses, 2);
	mr = bolt_mr_cache_entry_mr(entry);
	cr_assert_eq(mr->addr, base, "the new registration absorbs the one it overlaps");
	cr_assert_eq(mr->length, 3 * page_size);
	cr_assert_eq(stats().registered, 1);
	cr_assert_eq(device.live, 1);
	bolt_mr_cache_release(cache, entry);
	cr_assert(cached(base, 3 * page_size));
}

CACHE_TEST(evicts_least_recently_used)
{
	create_cache(3);
	for (int i = 0; i < 3; i++)
		bolt_mr_cache_release(cache, acquire(buffer(i), page_size));
	cr_assert(cached(buffer(0), page_size));        /* 0 is now the most recent */
	bolt_mr_cache_release(cache, acquire(buffer(3), page_size));
	cr_assert_eq(stats().evictions, 1);
	cr_assert(cached(buffer(0), page_size));
	cr_assert(cached(buffer(2), page_size));
	cr_assert(cached(buffer(3), page_size));
	cr_assert_not(cached(buffer(1), page_size), "1 was the least recently used");
}

CACHE_TEST(budget_never_exceeded)
{
	create_cache(THUNDERBOLT_BUDGET);
	for (int i = 0; i < 500; i++)
		bolt_mr_cache_release(cache, acquire(buffer(i), page_size));
	cr_assert_eq(device.most_live, THUNDERBOLT_BUDGET);
	cr_assert_eq(stats().registered, THUNDERBOLT_BUDGET);
	cr_assert_eq(stats().evictions, 500 - THUNDERBOLT_BUDGET);
}

CACHE_TEST(eagain_when_all_pinned_until_one_is_released)
{
	struct bolt_mr_cache_entry *entries[4], *entry;

	create_cache(4);
	for (int i = 0; i < 4; i++)
		entries[i] = acquire(buffer(i), page_size);
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(4), page_size, &entry), -FI_EAGAIN);
	cr_assert_eq(stats().registered, 4);
	cr_assert_eq(stats().pinned, 4);

	bolt_mr_cache_release(cache, entries[2]);
	entry = acquire(buffer(4), page_size);
	cr_assert_eq(stats().evictions, 1);
	cr_assert_eq(stats().registered, 4);
	bolt_mr_cache_release(cache, entry);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			bolt_mr_cache_release(cache, entries[i]);
	cr_assert_eq(stats().pinned, 0);
}

CACHE_TEST(pinned_twice_needs_two_releases)
{
	struct bolt_mr_cache_entry *first, *second, *entry;

	create_cache(1);
	first = acquire(buffer(0), page_size);
	second = acquire(buffer(0), page_size);
	cr_assert_eq(first, second);
	bolt_mr_cache_release(cache, first);
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(1), page_size, &entry), -FI_EAGAIN);
	bolt_mr_cache_release(cache, second);
	bolt_mr_cache_release(cache, acquire(buffer(1), page_size));
}

CACHE_TEST(extra_release_is_ignored)
{
	struct bolt_mr_cache_entry *entry;

	create_cache(2);
	entry = acquire(buffer(0), page_size);
	bolt_mr_cache_release(cache, entry);
	bolt_mr_cache_release(cache, entry);
	cr_assert_eq(stats().pinned, 0);
	cr_assert(cached(buffer(0), page_size));
}

CACHE_TEST(invalidate_drops_unpinned_entry)
{
	create_cache(4);
	bolt_mr_cache_release(cache, acquire(buffer(0), page_size));
	bolt_mr_cache_release(cache, acquire(buffer(1), page_size));
	bolt_mr_cache_invalidate(cache, (char *) buffer(0) + 10, 1);
	cr_assert_eq(device.live, 1);
	cr_assert_eq(stats().registered, 1);
	cr_assert(cached(buffer(1), page_size));
	cr_assert_not(cached(buffer(0), page_size));
}

CACHE_TEST(invalidate_retires_pinned_entry_until_released)
{
	struct bolt_mr_cache_entry *old_entry, *new_entry;

	create_cache(4);
	old_entry = acquire(buffer(0), page_size);
	bolt_mr_cache_invalidate(cache, buffer(0), page_size);
	cr_assert_eq(device.live, 1, "a pinned MR stays registered for its transfer");
	cr_assert(((struct fake_mr *) bolt_mr_cache_entry_mr(old_entry))->live);

	new_entry = acquire(buffer(0), page_size);
	cr_assert_neq(new_entry, old_entry, "an invalidated entry is not found again");
	cr_assert_eq(device.live, 2);
	bolt_mr_cache_release(cache, old_entry);
	cr_assert_eq(device.live, 1);
	cr_assert_eq(stats().registered, 1);
	bolt_mr_cache_release(cache, new_entry);
	cr_assert(cached(buffer(0), page_size));
}

CACHE_TEST(device_refusing_below_budget_evicts_and_retries)
{
	create_cache(THUNDERBOLT_BUDGET);
	device.held_by_others = 10;
	for (int i = 0; i < 200; i++)
		bolt_mr_cache_release(cache, acquire(buffer(i), page_size));
	cr_assert_eq(device.most_live, DEVICE_MR_LIMIT - 10);
	cr_assert_eq(stats().registered, DEVICE_MR_LIMIT - 10);
	cr_assert_eq(stats().evictions, 200 - (DEVICE_MR_LIMIT - 10));
}

CACHE_TEST(device_refusing_with_all_pinned_is_eagain)
{
	struct bolt_mr_cache_entry *first, *second, *entry;

	create_cache(THUNDERBOLT_BUDGET);
	device.held_by_others = DEVICE_MR_LIMIT - 2;
	first = acquire(buffer(0), page_size);
	second = acquire(buffer(1), page_size);
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(2), page_size, &entry), -FI_EAGAIN);
	bolt_mr_cache_release(cache, first);
	bolt_mr_cache_release(cache, acquire(buffer(2), page_size));
	bolt_mr_cache_release(cache, second);
}

CACHE_TEST(device_full_with_empty_cache_is_enomem)
{
	struct bolt_mr_cache_entry *entry;

	create_cache(THUNDERBOLT_BUDGET);
	device.held_by_others = DEVICE_MR_LIMIT;
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(0), page_size, &entry), -FI_ENOMEM);
	cr_assert_eq(stats().registered, 0);
}

CACHE_TEST(other_reg_mr_errors_are_returned)
{
	struct bolt_mr_cache_entry *entry;

	create_cache(4);
	bolt_mr_cache_release(cache, acquire(buffer(0), page_size));
	device.fail_next_errno = EFAULT;
	cr_assert_eq(bolt_mr_cache_acquire(cache, buffer(1), page_size, &entry), -FI_EFAULT);
	cr_assert_eq(stats().registered, 1);
	cr_assert(cached(buffer(0), page_size), "a failed registration evicts nothing");
}

/*
 * The target use: 10,000 buffers through a 96-MR budget on a 100-MR device,
 * with up to 32 transfers in flight, each holding its buffer's MR. Every
 * acquire succeeds and the device never holds more than 100.
 */
CACHE_TEST(ten_thousand_buffers_in_rounds)
{
	enum { BUFFERS = 10000, ROUNDS = 3, IN_FLIGHT = 32 };
	struct bolt_mr_cache_entry *in_flight[IN_FLIGHT] = { NULL };

	create_cache(THUNDERBOLT_BUDGET);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < BUFFERS; i++) {
			struct bolt_mr_cache_entry **slot = &in_flight[i % IN_FLIGHT];

			if (*slot)
				bolt_mr_cache_release(cache, *slot);
			*slot = acquire((char *) buffer(i) + i % 64, 512);
		}
		cr_assert_leq(device.most_live, DEVICE_MR_LIMIT);
		cr_assert_leq(stats().registered, THUNDERBOLT_BUDGET);
	}
	for (int i = 0; i < IN_FLIGHT; i++)
		bolt_mr_cache_release(cache, in_flight[i]);
	cr_assert_eq(stats().misses, (uint64_t) BUFFERS * ROUNDS);
	cr_assert_eq(stats().pinned, 0);
}

CACHE_TEST(destroy_deregisters_everything)
{
	create_cache(16);
	for (int i = 0; i < 8; i++)
		bolt_mr_cache_release(cache, acquire(buffer(i), page_size));
	for (int i = 8; i < 12; i++)
		acquire(buffer(i), page_size);          /* left pinned: destroy warns */
	bolt_mr_cache_invalidate(cache, buffer(8), page_size);  /* one retired */
	cr_assert_eq(device.live, 12);
	/* destroy_cache_and_check_device finds every MR deregistered exactly once. */
}

/* An exposed registration: exactly its bytes and its access, checked live. */
static struct bolt_mr_cache_entry *expose(const void *address, size_t length)
{
	struct bolt_mr_cache_entry *entry;
	struct fake_mr *fake;
	int ret = bolt_mr_cache_expose(cache, address, length, BOLT_MR_CACHE_PEER_WRITE, &entry);

	cr_assert_eq(ret, 0, "expose of %p + %zu: %d", address, length, ret);
	fake = (struct fake_mr *) bolt_mr_cache_entry_mr(entry);
	cr_assert(fake->magic == FAKE_MR_MAGIC && fake->live, "exposed MR is not live");
	cr_assert_eq(fake->mr.addr, address, "an exposed MR starts where asked, not at its page");
	cr_assert_eq(fake->mr.length, length, "an exposed MR ends where asked");
	cr_assert_eq(fake->access, BOLT_MR_CACHE_PEER_WRITE, "an exposed MR has the access asked, no more");
	return entry;
}

CACHE_TEST(exposed_is_exactly_the_range)
{
	char *base = buffer(0);
	struct bolt_mr_cache_entry *entry;

	create_cache(4);
	/* A 100-byte receive in the middle of a page exposes those 100 bytes, not the page. */
	entry = expose(base + 1000, 100);
	cr_assert_eq(stats().exposed, 1);
	cr_assert_eq(stats().pinned, 1);
	bolt_mr_cache_release(cache, entry);
}

CACHE_TEST(exposed_never_shared_nor_merged)
{
	char *base = buffer(0);
	struct bolt_mr_cache_entry *first, *second, *local;

	create_cache(8);
	/* A shared local entry over the same pages is not handed out for exposure, nor widened. */
	local = acquire(base, 2 * page_size);
	first = expose(base + 100, 200);
	second = expose(base + 100, 200);
	cr_assert_neq(first, second, "each exposure is its holder's alone");
	cr_assert_neq(first, local);
	cr_assert_eq(device.live, 3);
	/* Nor is an exposed entry handed out for a local request. */
	cr_assert_eq(bolt_mr_cache_entry_mr(acquire(base + 100, 200)), bolt_mr_cache_entry_mr(local));
	bolt_mr_cache_release(cache, local);
	bolt_mr_cache_release(cache, local);
	bolt_mr_cache_release(cache, first);
	bolt_mr_cache_release(cache, second);
	cr_assert(cached(base, 2 * page_size), "the local entry stays cached, its range unchanged");
	cr_assert_eq(bolt_mr_cache_entry_mr(local)->length, 2 * page_size);
}

CACHE_TEST(exposed_deregistered_at_release)
{
	struct bolt_mr_cache_entry *entry;
	uint64_t misses;

	create_cache(4);
	entry = expose(buffer(0), page_size);
	bolt_mr_cache_release(cache, entry);
	cr_assert_eq(device.live, 0, "the peer's key opens nothing once released");
	cr_assert_eq(stats().registered, 0);
	cr_assert_eq(stats().exposed, 0);
	misses = stats().misses;
	bolt_mr_cache_release(cache, expose(buffer(0), page_size));
	cr_assert_eq(stats().hits, 0);
	cr_assert_eq(stats().misses, misses + 1);
	cr_assert_eq(device.registrations, 2, "exposing again registers again");
}

CACHE_TEST(exposed_counts_against_budget)
{
	struct bolt_mr_cache_entry *entries[3], *entry;

	create_cache(3);
	for (int i = 0; i < 3; i++)
		bolt_mr_cache_release(cache, acquire(buffer(i), page_size));
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(bolt_mr_cache_room(cache), 3 - i, "unpinned entries leave room");
		entries[i] = expose(buffer(10 + i), 64);
	}
	cr_assert_eq(bolt_mr_cache_room(cache), 0);
	cr_assert_eq(stats().evictions, 3, "exposures evict unpinned shared entries");
	cr_assert_eq(bolt_mr_cache_expose(cache, buffer(20), 64, BOLT_MR_CACHE_PEER_WRITE, &entry),
		     -FI_EAGAIN);
	cr_assert_eq(device.most_live, 3);
	for (int i = 0; i < 3; i++)
		bolt_mr_cache_release(cache, entries[i]);
	cr_assert_eq(device.live, 0);
}

CACHE_TEST(exposed_survives_invalidate_until_released)
{
	struct bolt_mr_cache_entry *entry;

	create_cache(4);
	entry = expose(buffer(0), page_size);
	bolt_mr_cache_invalidate(cache, buffer(0), page_size);
	cr_assert(((struct fake_mr *) bolt_mr_cache_entry_mr(entry))->live,
		  "a peer's transfer keeps its registration until it ends");
	bolt_mr_cache_release(cache, entry);
	cr_assert_eq(device.live, 0);
}

CACHE_TEST(destroy_deregisters_exposed)
{
	create_cache(4);
	expose(buffer(0), 10);
}
