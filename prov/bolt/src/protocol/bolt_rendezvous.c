/*
 * bolt_rendezvous.c: large messages by RDMA write. The sender asks; the
 * receiver, once a receive matches, registers that buffer and answers with
 * its address and key; the sender registers its own buffer, writes, and
 * sends DONE on the same queue pair, which delivers it after the write. One
 * copy fewer than segments, and no 4 KiB steps. A large fi_write goes the same
 * way, the target answering for the range its key names. Each waits for its
 * DONE in a record of its own, so several transfers are on the wire at once.
 * Registrations are made for
 * the one transfer and dropped after it: the application may free the memory
 * at once, and a cached registration would then name the wrong pages.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"

/* The receiver's answer asks for segments instead of a write. */
#define BOLT_RENDEZVOUS_USE_SEGMENTS 1

bool bolt_rendezvous_wanted(const struct bolt_transmit *transmit)
{
	const struct bolt_domain *domain = transmit->connection->endpoint->domain;

	return domain->rdma_write && (transmit->op == BOLT_WIRE_MESSAGE || transmit->op == BOLT_WIRE_WRITE) &&
	       !transmit->internal &&
	       !transmit->inject_copy && transmit->iov_count == 1 &&
	       transmit->length >= BOLT_RENDEZVOUS_THRESHOLD;
}

void bolt_rendezvous_unregister(struct bolt_domain *domain, struct bolt_mr_cache_entry **registration,
				bool covered)
{
	struct ibv_mr *mr;
	void *address;
	size_t length;

	if (!*registration)
		return;
	/* Release may deregister at once (an entry merged into a larger one): read first. */
	mr = bolt_mr_cache_entry_mr(*registration);
	address = mr->addr;
	length = mr->length;
	bolt_mr_cache_release(domain->mr_cache, *registration);
	if (!covered)
		bolt_mr_cache_invalidate(domain->mr_cache, address, length);
	*registration = NULL;
}

/* Registers length bytes at address for this transfer; false if it cannot now. */
static bool bolt_rendezvous_register(struct bolt_domain *domain, void *address, size_t length,
				     struct bolt_mr_cache_entry **registration)
{
	int ret = bolt_mr_cache_acquire(domain->mr_cache, address, length, registration);

	if (ret) {
		FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
			"no registration for %zu bytes (%s): segments instead\n", length, fi_strerror(-ret));
		*registration = NULL;
	}
	return !ret;
}

/*
 * The answer to request_id: where to write (registration), or a status:
 * segments instead, or an FI_E* error that ends the request.
 */
static void bolt_rendezvous_send_answer(struct bolt_connection *connection, uint64_t request_id,
					struct bolt_mr_cache_entry *registration, void *address,
					size_t length, uint32_t status)
{
	struct bolt_transmit *answer = calloc(1, sizeof(*answer));

	if (!answer) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a rendezvous answer");
		return;
	}
	answer->op = BOLT_WIRE_RENDEZVOUS_READY;
	answer->connection = connection;
	answer->internal = true;
	answer->request_id = request_id;
	answer->cq_data = registration ? 0 : status;
	if (registration) {
		answer->length = length;
		answer->remote_address = (uintptr_t) address;
		answer->remote_key = bolt_mr_cache_entry_mr(registration)->rkey;
	}
	bolt_transmit_start(answer);
}

static struct bolt_inbound *bolt_rendezvous_find(struct bolt_connection *connection, uint64_t request_id)
{
	struct bolt_inbound *record;

	DL_FOREACH(connection->rendezvous, record)
		if (record->request_id == request_id)
			return record;
	return NULL;
}

struct bolt_inbound *bolt_rendezvous_take(struct bolt_connection *connection, uint64_t request_id)
{
	struct bolt_inbound *record = connection->rendezvous ?
				      bolt_rendezvous_find(connection, request_id) : NULL;

	if (record)
		DL_DELETE(connection->rendezvous, record);
	return record;
}

void bolt_rendezvous_record_free(struct bolt_connection *connection, struct bolt_inbound *record)
{
	bolt_rendezvous_unregister(connection->endpoint->domain, &record->registration, record->covered);
	free(record);
}

void bolt_rendezvous_answer(struct bolt_connection *connection, struct bolt_inbound *record)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct bolt_receive *receive = record->receive;
	size_t length = record->length < receive->length ? record->length : receive->length;

	record->covered = receive->covered;
	if (receive->iov_count == 1 && length)
		bolt_rendezvous_register(domain, receive->iov[0].iov_base, length, &record->registration);
	bolt_rendezvous_send_answer(connection, record->request_id, record->registration,
				    receive->iov[0].iov_base, length, BOLT_RENDEZVOUS_USE_SEGMENTS);
}

void bolt_rendezvous_arrival(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_inbound *record = calloc(1, sizeof(*record));

	if (!record || bolt_match_start(connection, record, header)) {
		free(record);
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a rendezvous");
		return;
	}
	DL_APPEND(connection->rendezvous, record);
	if (record->receive)
		bolt_rendezvous_answer(connection, record);
}

void bolt_rendezvous_write_request(struct bolt_connection *connection,
				   const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_inbound *record = NULL;
	char *local = NULL;
	int status;

	status = bolt_mr_translate(endpoint, header->key, header->address, header->total_length,
				   FI_REMOTE_WRITE, &local);
	if (!status) {
		record = calloc(1, sizeof(*record));
		if (!record || !bolt_rendezvous_register(endpoint->domain, local, header->total_length,
							 &record->registration)) {
			free(record);
			record = NULL;
			status = BOLT_RENDEZVOUS_USE_SEGMENTS;
		}
	}
	if (record) {
		record->write = true;
		record->covered = true;         /* bolt_mr_translate found the range in an open MR */
		record->request_id = header->request_id;
		record->length = header->total_length;
		DL_APPEND(connection->rendezvous, record);
	}
	bolt_rendezvous_send_answer(connection, header->request_id, record ? record->registration : NULL,
				    local, header->total_length, (uint32_t) status);
}

/* Posts the write, unsignaled: the DONE after it completes for both. */
int bolt_rendezvous_write(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct ibv_mr *mr = bolt_mr_cache_entry_mr(transmit->registration);
	struct ibv_sge sge = {
		.addr = (uintptr_t) transmit->iov[0].iov_base,
		.length = (uint32_t) transmit->target_length,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = transmit->target_address, .rkey = transmit->target_rkey },
	};
	struct ibv_send_wr *bad_wr;
	int ret = domain->fabric->verbs.post_send(connection->qp, &wr, &bad_wr);

	if (ret)
		return ret;
	connection->outstanding_sends++;
	return 0;
}

void bolt_rendezvous_answered(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct bolt_transmit *transmit = NULL, *candidate;

	DL_FOREACH(connection->transmits, candidate)
		if (candidate->rendezvous == BOLT_RENDEZVOUS_WAIT &&
		    candidate->request_id == header->request_id)
			transmit = candidate;
	if (!transmit || header->total_length > transmit->length) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous answer for no request");
		return;
	}
	transmit->rendezvous = BOLT_RENDEZVOUS_NONE;
	if (header->cq_data && header->cq_data != BOLT_RENDEZVOUS_USE_SEGMENTS) {
		/* The target refused the write (key, bounds, rights): it ends here. */
		transmit->sent = transmit->length;
		transmit->posted_last = true;
		bolt_transmit_reply_arrived(transmit, (int) header->cq_data);
		return;
	}
	if (!header->cq_data && header->total_length &&
	    bolt_rendezvous_register(domain, transmit->iov[0].iov_base, header->total_length,
				     &transmit->registration)) {
		transmit->target_address = header->address;
		transmit->target_rkey = (uint32_t) header->key;
		transmit->target_length = header->total_length;
		transmit->rendezvous = BOLT_RENDEZVOUS_WRITE;
	}
	/* Either the write and DONE, or the message again as segments from its start. */
	bolt_transmit_progress(connection);
}

/* The write is in the target's memory: count it, report remote CQ data, acknowledge. */
static void bolt_rendezvous_write_done(struct bolt_connection *connection,
				       const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_transmit *ack;

	bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_WRITE,
				   header->flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA, header->cq_data,
				   header->total_length);
	if (header->flags & BOLT_WIRE_FLAG_NO_ACK)
		return;
	ack = calloc(1, sizeof(*ack));
	if (!ack) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for an acknowledgement");
		return;
	}
	ack->op = BOLT_WIRE_WRITE_ACK;
	ack->connection = connection;
	ack->internal = true;
	ack->request_id = header->request_id;
	bolt_transmit_start(ack);
}

void bolt_rendezvous_done(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_inbound *record = bolt_rendezvous_take(connection, header->request_id);
	bool write = header->flags & BOLT_WIRE_FLAG_WRITE;

	if (!record || record->write != write || (!write && !record->receive) ||
	    header->total_length != record->length) {
		if (record)
			bolt_rendezvous_record_free(connection, record);
		bolt_connection_fail(connection, FI_EIO, "rendezvous done for no request");
		return;
	}
	bolt_rendezvous_unregister(connection->endpoint->domain, &record->registration, record->covered);
	if (write) {
		bolt_rendezvous_write_done(connection, header);
	} else {
		record->received = record->length;
		bolt_match_complete_inbound(connection, record);
	}
	free(record);
}

void bolt_rendezvous_release(struct bolt_connection *connection, int error)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_inbound *record, *next;

	DL_FOREACH_SAFE(connection->rendezvous, record, next) {
		DL_DELETE(connection->rendezvous, record);
		if (record->receive && error)
			bolt_endpoint_complete_receive(endpoint, record->receive, connection, 0, 0, 0,
						       record->tag, 0, error);
		else if (record->receive)
			free(record->receive);
		else if (record->unexpected && error)
			bolt_match_drop_unexpected(endpoint, record->unexpected);
		bolt_rendezvous_record_free(connection, record);
	}
}
