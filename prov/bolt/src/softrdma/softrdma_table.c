/*
 * softrdma_table.c: the fixed-size slot tables of the shared segment (MRs,
 * QPs, CQs). Free slots are kept on a list and fresh ones taken from a high
 * water mark, so allocation is constant time and never touches pages a table
 * has not used yet. Handles (MR keys, QP numbers) carry a generation, so a
 * handle of a freed slot does not name its next user.
 */
#include <string.h>

#include "softrdma/softrdma_internal.h"

void softrdma_table_init(struct softrdma_table *table, uint64_t offset, uint32_t stride,
			 uint32_t zeroed_bytes, uint32_t index_bits, uint32_t handle_bits)
{
	table->offset = offset;
	table->stride = stride;
	table->zeroed_bytes = zeroed_bytes;
	table->capacity = 1u << index_bits;
	table->index_bits = index_bits;
	table->handle_bits = handle_bits;
	softrdma_table_reset(table);
}

/* Forgets every slot; slots past the high water mark are initialized when taken. */
void softrdma_table_reset(struct softrdma_table *table)
{
	table->high_water = 0;
	table->free_head = 0;
	table->used = 0;
}

void *softrdma_table_slot(struct softrdma_segment *segment, const struct softrdma_table *table,
			  uint32_t index)
{
	return (char *) segment + table->offset + (uint64_t) index * table->stride;
}

static uint32_t softrdma_generation_mask(const struct softrdma_table *table)
{
	return (1u << (table->handle_bits - table->index_bits)) - 1;
}

/* The index of a fresh slot, its header set and the rest zeroed; -ENOMEM when full. */
int softrdma_table_alloc(struct softrdma_segment *segment, struct softrdma_table *table,
			 pid_t owner)
{
	struct softrdma_slot *slot;
	uint32_t index, generation;

	if (table->free_head) {
		index = table->free_head - 1;
		slot = softrdma_table_slot(segment, table, index);
		table->free_head = slot->next_free;
		generation = slot->generation;
	} else if (table->high_water < table->capacity) {
		index = table->high_water++;
		slot = softrdma_table_slot(segment, table, index);
		generation = slot->generation; /* left by an earlier life of the segment */
	} else {
		return -ENOMEM;
	}
	/* Rings are written before they are read: zeroing them would touch every page. */
	memset(slot, 0, table->zeroed_bytes);
	generation = (generation + 1) & softrdma_generation_mask(table);
	slot->generation = generation ? generation : 1;
	slot->in_use = 1;
	slot->owner = owner;
	table->used++;
	return (int) index;
}

void softrdma_table_free(struct softrdma_segment *segment, struct softrdma_table *table,
			 uint32_t index)
{
	struct softrdma_slot *slot = softrdma_table_slot(segment, table, index);

	if (!slot->in_use)
		return;
	slot->in_use = 0;
	slot->owner = 0;
	slot->next_free = table->free_head;
	table->free_head = index + 1;
	table->used--;
}

uint32_t softrdma_table_handle(const struct softrdma_table *table, const struct softrdma_slot *slot,
			       uint32_t index)
{
	return slot->generation << table->index_bits | index;
}

/* The slot a handle names, if it is still in use by the same allocation. */
void *softrdma_table_lookup(struct softrdma_segment *segment, const struct softrdma_table *table,
			    uint32_t handle)
{
	uint32_t index = handle & (table->capacity - 1);
	uint32_t generation = handle >> table->index_bits;
	struct softrdma_slot *slot;

	if (index >= table->high_water)
		return NULL;
	slot = softrdma_table_slot(segment, table, index);
	if (!slot->in_use || slot->generation != generation)
		return NULL;
	return slot;
}
