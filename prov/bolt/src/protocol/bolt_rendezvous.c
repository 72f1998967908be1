/*
 * bolt_rendezvous.c: large messages by RDMA write. The sender asks; the
 * receiver, once a receive matches, registers that buffer and answers with
 * its address and key; the sender registers its own buffer, writes, and
 * sends DONE on the same queue pair, which delivers it after the write. One
 * copy fewer than segments, and no 4 KiB steps. A large fi_write goes the same
 * way, the target answering for the range its key names. Registrations are made for
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

void bolt_rendezvous_unregister(struct bolt_domain *domain, struct bolt_mr_cache_entry **registration)
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

void bolt_rendezvous_answer(struct bolt_connection *connection)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct bolt_inbound *inbound = &connection->inbound;
	struct bolt_receive *receive = inbound->receive;
	size_t length = inbound->length < receive->length ? inbound->length : receive->length;

	if (receive->iov_count == 1 && length)
		bolt_rendezvous_register(domain, receive->iov[0].iov_base, length, &inbound->registration);
	bolt_rendezvous_send_answer(connection, inbound->request_id, inbound->registration,
				    receive->iov[0].iov_base, length, BOLT_RENDEZVOUS_USE_SEGMENTS);
}

void bolt_rendezvous_write_request(struct bolt_connection *connection,
				   const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	char *local = NULL;
	int status;

	if (connection->write_registration) {
		bolt_connection_fail(connection, FI_EIO, "a second rendezvous write at once");
		return;
	}
	status = bolt_mr_translate(endpoint, header->key, header->address, header->total_length,
				   FI_REMOTE_WRITE, &local);
	if (!status && !bolt_rendezvous_register(endpoint->domain, local, header->total_length,
						 &connection->write_registration))
		status = BOLT_RENDEZVOUS_USE_SEGMENTS;
	connection->write_request_id = header->request_id;
	bolt_rendezvous_send_answer(connection, header->request_id, connection->write_registration,
				    local, header->total_length, (uint32_t) status);
}

/* Posts the write, unsignaled: the DONE after it completes for both. */
static int bolt_rendezvous_write(struct bolt_connection *connection, struct bolt_transmit *transmit,
				 const struct bolt_wire_header *header)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct ibv_mr *mr = bolt_mr_cache_entry_mr(transmit->registration);
	struct ibv_sge sge = {
		.addr = (uintptr_t) transmit->iov[0].iov_base,
		.length = (uint32_t) header->total_length,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = header->address, .rkey = (uint32_t) header->key },
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
		int ret = bolt_rendezvous_write(connection, transmit, header);

		if (ret) {
			bolt_connection_fail(connection, FI_EIO, strerror(ret));
			return;
		}
		transmit->rendezvous = BOLT_RENDEZVOUS_FINISH;
	}
	/* Either DONE, or the message again as segments from its start. */
	bolt_transmit_progress(connection);
}

/* The write is in the target's memory: count it, report remote CQ data, acknowledge. */
static void bolt_rendezvous_write_done(struct bolt_connection *connection,
				       const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_transmit *ack;

	if (!connection->write_registration || header->request_id != connection->write_request_id) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous write done for no request");
		return;
	}
	bolt_rendezvous_unregister(endpoint->domain, &connection->write_registration);
	bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_WRITE,
				   header->flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA, header->cq_data,
				   header->total_length);
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
	struct bolt_inbound *inbound = &connection->inbound;

	if (header->flags & BOLT_WIRE_FLAG_WRITE) {
		bolt_rendezvous_write_done(connection, header);
		return;
	}

	if (!inbound->active || !inbound->rendezvous || !inbound->receive ||
	    inbound->request_id != header->request_id || header->total_length != inbound->length) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous done for no message");
		return;
	}
	inbound->received = inbound->length;
	bolt_match_complete_inbound(connection);
}

void bolt_rendezvous_release(struct bolt_connection *connection)
{
	struct bolt_domain *domain = connection->endpoint->domain;

	bolt_rendezvous_unregister(domain, &connection->inbound.registration);
	bolt_rendezvous_unregister(domain, &connection->write_registration);
}
