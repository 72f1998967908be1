/*
 * bolt_slab.h: a registered slab pool: one large device registration carved
 * into fixed-size buffers, so that bolt's own buffers cost one device MR
 * however many there are (Thunderbolt allows about 100 MRs per device, and
 * one registration of at least 2 GiB; seed 001).
 */
#ifndef BOLT_SLAB_H
#define BOLT_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include "verbs/bolt_verbs.h"

struct bolt_slab_pool {
	struct bolt_verbs *verbs;
	struct ibv_mr *mr;
	char *memory;
	size_t memory_size;
	size_t buffer_size;
	uint32_t buffer_count;
	uint32_t free_count;
	uint32_t *free_stack;   /* indexes of free buffers */
};

/*
 * Allocates buffer_count buffers of buffer_size bytes (rounded up to 64 for
 * alignment) and registers them once with access. 0 or a negative error code.
 */
int bolt_slab_pool_create(struct bolt_verbs *verbs, struct ibv_pd *pd, size_t buffer_size,
			  uint32_t buffer_count, int access, struct bolt_slab_pool *pool);
void bolt_slab_pool_destroy(struct bolt_slab_pool *pool);

/* A free buffer, or NULL when all are in use. Not thread-safe: callers lock. */
void *bolt_slab_get(struct bolt_slab_pool *pool);
void bolt_slab_put(struct bolt_slab_pool *pool, void *buffer);

uint32_t bolt_slab_index(const struct bolt_slab_pool *pool, const void *buffer);
void *bolt_slab_buffer(const struct bolt_slab_pool *pool, uint32_t index);
/* Whether buffer is the start of one of the pool's buffers. */
bool bolt_slab_owns(const struct bolt_slab_pool *pool, const void *buffer);

#endif /* BOLT_SLAB_H */
