/*
 * bolt_control.c: the domain's control buffers: slab buffers of one frame,
 * each with a record that travels as the wr_id of the send or receive that
 * uses it.
 */
#include <stdlib.h>

#include "connection/bolt_connection.h"

struct bolt_control_buffer *bolt_control_buffer_get(struct bolt_domain *domain)
{
	char *data = bolt_slab_get(&domain->control_pool);
	struct bolt_control_buffer *record;

	if (!data)
		return NULL;
	record = &domain->control_buffers[bolt_slab_index(&domain->control_pool, data)];
	record->link = NULL;
	record->connection = NULL;
	record->operation = NULL;
	record->data_rail = -1;
	record->posted = false;
	record->replayed = false;
	record->write.present = false;
	return record;
}

void bolt_control_buffer_put(struct bolt_domain *domain, struct bolt_control_buffer *record)
{
	if (record->holds_registration) {
		bolt_registration_release(domain, &record->registration, record->covered);
		record->holds_registration = false;
	}
	free(record->resent_payload);
	record->resent_payload = NULL;
	record->link = NULL;
	record->connection = NULL;
	record->operation = NULL;
	record->posted = false;
	bolt_slab_put(&domain->control_pool, bolt_control_buffer_data(domain, record));
}

char *bolt_control_buffer_data(struct bolt_domain *domain, const struct bolt_control_buffer *record)
{
	return bolt_slab_buffer(&domain->control_pool,
				(uint32_t) (record - domain->control_buffers));
}

struct bolt_control_buffer *bolt_control_buffer_of_work(struct bolt_work_completion *work)
{
	return bolt_container_of(work, struct bolt_control_buffer, work);
}

void bolt_control_buffer_reclaim(struct bolt_domain *domain, struct bolt_connection *connection)
{
	for (uint32_t i = 0; i < domain->control_pool.buffer_count; i++) {
		struct bolt_control_buffer *record = &domain->control_buffers[i];

		if (record->posted && record->connection == connection)
			bolt_control_buffer_put(domain, record);
	}
}
