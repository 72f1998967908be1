/*
 * bolt_slab.c: the registered slab pool: one mmap'd region, one device MR,
 * a stack of free buffer indexes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rails/bolt_slab.h"

#define BOLT_SLAB_ALIGNMENT 64

int bolt_slab_pool_create(struct bolt_verbs *verbs, struct ibv_pd *pd, size_t buffer_size,
			  uint32_t buffer_count, int access, struct bolt_slab_pool *pool)
{
	void *memory;

	memset(pool, 0, sizeof(*pool));
	if (!buffer_size || !buffer_count ||
	    buffer_size > SIZE_MAX / buffer_count - BOLT_SLAB_ALIGNMENT)
		return -FI_EINVAL;
	pool->verbs = verbs;
	pool->buffer_size = (buffer_size + BOLT_SLAB_ALIGNMENT - 1) & ~(size_t) (BOLT_SLAB_ALIGNMENT - 1);
	pool->buffer_count = buffer_count;
	pool->memory_size = pool->buffer_size * buffer_count;

	pool->free_stack = calloc(buffer_count, sizeof(*pool->free_stack));
	if (!pool->free_stack)
		return -FI_ENOMEM;
	memory = mmap(NULL, pool->memory_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED) {
		FI_WARN(&bolt_prov, FI_LOG_MR, "slab pool: mmap of %zu bytes failed: %s\n",
			pool->memory_size, strerror(errno));
		free(pool->free_stack);
		return -FI_ENOMEM;
	}
	pool->memory = memory;
	pool->mr = verbs->reg_mr(pd, pool->memory, pool->memory_size, access);
	if (!pool->mr) {
		/* Read now: munmap and free may change errno. */
		int error = errno;

		FI_WARN(&bolt_prov, FI_LOG_MR, "slab pool: reg_mr of %zu bytes failed: %s\n",
			pool->memory_size, strerror(error));
		munmap(pool->memory, pool->memory_size);
		free(pool->free_stack);
		return error == ENOMEM ? -FI_ENOMEM : -FI_EIO;
	}
	/* Hand out low indexes first: they are the pages touched already. */
	for (uint32_t i = 0; i < buffer_count; i++)
		pool->free_stack[i] = buffer_count - 1 - i;
	pool->free_count = buffer_count;
	return 0;
}

void bolt_slab_pool_destroy(struct bolt_slab_pool *pool)
{
	if (pool->free_count != pool->buffer_count)
		FI_WARN(&bolt_prov, FI_LOG_MR, "slab pool destroyed with %u buffers in use\n",
			pool->buffer_count - pool->free_count);
	pool->verbs->dereg_mr(pool->mr);
	munmap(pool->memory, pool->memory_size);
	free(pool->free_stack);
	memset(pool, 0, sizeof(*pool));
}

void *bolt_slab_get(struct bolt_slab_pool *pool)
{
	if (!pool->free_count)
		return NULL;
	return bolt_slab_buffer(pool, pool->free_stack[--pool->free_count]);
}

void bolt_slab_put(struct bolt_slab_pool *pool, void *buffer)
{
	pool->free_stack[pool->free_count++] = bolt_slab_index(pool, buffer);
}

uint32_t bolt_slab_index(const struct bolt_slab_pool *pool, const void *buffer)
{
	return (uint32_t) (((const char *) buffer - pool->memory) / pool->buffer_size);
}

void *bolt_slab_buffer(const struct bolt_slab_pool *pool, uint32_t index)
{
	return pool->memory + (size_t) index * pool->buffer_size;
}

bool bolt_slab_owns(const struct bolt_slab_pool *pool, const void *buffer)
{
	const char *address = buffer;

	return address >= pool->memory && address < pool->memory + pool->memory_size &&
	       (size_t) (address - pool->memory) % pool->buffer_size == 0;
}
