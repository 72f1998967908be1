/*
 * bolt_mr_cache.h: the registration cache for user memory. A device allows
 * few MRs (Thunderbolt: about 100, seed 001), so user registrations do not
 * each hold one: a transfer acquires a device MR covering its range, pinned
 * for the transfer's duration, and releases it afterwards. The cache keeps
 * released MRs registered for reuse, within a budget of device MRs, and
 * evicts the least recently used unpinned one when the budget is full.
 *
 * Those shared registrations have the cache's one local access (no remote
 * access): a peer never learns their keys, and they are page-rounded and
 * merged. What a peer is given a key to is registered apart, through
 * bolt_mr_cache_expose: exactly the bytes and the access asked for, held by
 * its one holder, never found by another request, never merged nor widened,
 * and deregistered when released, so that nothing stays open to the peer
 * after the transfer (or grant) it was made for. Both count against the
 * budget.
 *
 * Not thread-safe: the owning domain's lock covers every call.
 */
#ifndef BOLT_MR_CACHE_H
#define BOLT_MR_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "verbs/bolt_verbs.h"

/*
 * What a peer's RDMA write into a buffer needs (verbs requires local write
 * with remote write), and what its RDMA read of one needs: on RC the
 * receiver of a message its sender offers so reads it from the sender's
 * buffer (protocol/bolt_pull.c). fi_read is written back instead.
 */
#define BOLT_MR_CACHE_PEER_WRITE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define BOLT_MR_CACHE_PEER_READ IBV_ACCESS_REMOTE_READ

struct bolt_mr_cache;
struct bolt_mr_cache_entry;

struct bolt_mr_cache_stats {
	uint64_t hits;          /* acquires served by a registered entry */
	uint64_t misses;        /* acquires that needed a new registration, and every expose */
	uint64_t evictions;     /* unpinned entries deregistered to make room */
	int registered;         /* device MRs the cache holds now */
	int pinned;             /* of which acquired and not yet released */
	int exposed;            /* of which exposed to peers (bolt_mr_cache_expose) */
	int budget;             /* most device MRs the cache will hold */
};

/*
 * A cache that holds at most budget device MRs of pd; shared entries are
 * registered with access, which must grant no remote access.
 * 0, -FI_EINVAL for a budget below 1, or -FI_ENOMEM.
 */
int bolt_mr_cache_create(struct bolt_verbs *verbs, struct ibv_pd *pd, int budget, int access,
			 struct bolt_mr_cache **cache);
/* Deregisters every entry; warns about entries still pinned. */
void bolt_mr_cache_destroy(struct bolt_mr_cache *cache);

/*
 * A device MR covering [address, address + length), pinned until released:
 * an entry that covers the range already (a hit), or a new registration of
 * the page-aligned range merged with the entries it overlaps. Evicts least
 * recently used unpinned entries while the budget is full, and again while
 * the device itself refuses with ENOMEM (other processes hold its MRs).
 * Returns 0;
 *   -FI_EINVAL for length 0 or a range past the end of the address space;
 *   -FI_EAGAIN when nothing is left to evict but pinned entries remain, so
 *              a retry after releasing can succeed;
 *   -FI_ENOMEM when the device refuses and the cache holds no MR at all,
 *              or when host memory for the entry runs out;
 *   another negative error code (the errno of reg_mr) when it fails otherwise.
 */
int bolt_mr_cache_acquire(struct bolt_mr_cache *cache, const void *address, size_t length,
			  struct bolt_mr_cache_entry **entry);
/*
 * A device MR of exactly [address, address + length) with exactly access (a
 * peer's: IBV_ACCESS_REMOTE_WRITE and the IBV_ACCESS_LOCAL_WRITE verbs
 * requires with it), pinned and its caller's alone: no other acquire or
 * expose is given it, and release deregisters it. Evicts as acquire does;
 * returns what acquire returns.
 */
int bolt_mr_cache_expose(struct bolt_mr_cache *cache, const void *address, size_t length,
			 int access, struct bolt_mr_cache_entry **entry);
/* Unpins an entry; an exposed one is deregistered now. */
void bolt_mr_cache_release(struct bolt_mr_cache *cache, struct bolt_mr_cache_entry *entry);
struct ibv_mr *bolt_mr_cache_entry_mr(const struct bolt_mr_cache_entry *entry);

/*
 * Drops entries overlapping [address, address + length), for when the user
 * closes its registration or frees the memory. Unpinned entries go now;
 * pinned ones are no longer found by acquire and go when released, as
 * exposed ones do.
 */
void bolt_mr_cache_invalidate(struct bolt_mr_cache *cache, const void *address, size_t length);

void bolt_mr_cache_stats(const struct bolt_mr_cache *cache, struct bolt_mr_cache_stats *stats);
/* Registrations the cache could still make now: its budget less those pinned. */
int bolt_mr_cache_room(const struct bolt_mr_cache *cache);

#endif /* BOLT_MR_CACHE_H */
