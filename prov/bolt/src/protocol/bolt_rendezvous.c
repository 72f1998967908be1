/*
 * bolt_rendezvous.c: large messages by RDMA write. The sender asks; the
 * receiver, once a receive matches, registers that buffer and answers with
 * its address and key, and the data rails it posted a receive on; the sender
 * registers its own buffer and writes: one stripe per data rail, each with
 * immediate data naming the transfer, or, with no rail, the whole on the
 * control rail: on RC followed by DONE, which that queue pair delivers after
 * the write; on UC as one stripe with immediate data, since UC may lose the
 * write and still deliver a DONE, and a lost stripe is counted. One copy
 * fewer than segments, and no 4 KiB steps. A large fi_write goes the same
 * way, the target answering for the range its key names. Each transfer
 * waits for its data in a record of its own, so several are on the wire at
 * once. Registrations stay in the cache only for memory inside an open MR;
 * other memory may be freed as soon as the transfer completes, and a cached
 * registration would then name the wrong pages.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_pull.h"
#include "protocol/bolt_rdma.h"

bool bolt_rendezvous_wanted(const struct bolt_transmit *transmit)
{
	const struct bolt_domain *domain = transmit->connection->manager->domain;
	size_t threshold = transmit->rendezvous_threshold ? transmit->rendezvous_threshold :
			   (size_t) domain->fabric->params.rendezvous_threshold;

	return bolt_rail_port_data_writes(domain, &domain->primary) &&
	       (transmit->op == BOLT_WIRE_MESSAGE || transmit->op == BOLT_WIRE_WRITE) &&
	       !transmit->internal &&
	       !transmit->inject_copy && transmit->iov_count == 1 && transmit->length >= threshold;
}

/*
 * The receive a stripe on rail takes; false if none could be posted. On UC
 * the stripe comes in segments, for which the rail keeps receives of its own.
 */
static bool bolt_rendezvous_stripe_receive(struct bolt_connection *connection, int rail)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_control_buffer *buffer;

	if (bolt_rewrite_applies(connection)) {
		bolt_rewrite_rail_receives(connection, rail);
		return true;
	}
	buffer = bolt_control_buffer_get(domain);
	if (!buffer)
		return false;
	buffer->work.handle = bolt_rendezvous_stripe_arrived;
	if (bolt_data_rail_post_receive(connection, rail, buffer)) {
		bolt_control_buffer_put(domain, buffer);
		return false;
	}
	return true;
}

/*
 * One receive on each ready data rail for the stripes of a transfer into
 * length bytes at address (registration), which arrive as writes with
 * immediate data, each counted in *stripes_pending; the buffer's key on each
 * rail's port goes to rkeys. The mask of those rails.
 */
static uint32_t bolt_rendezvous_post_stripe_receives(struct bolt_connection *connection,
						     struct bolt_registration *registration,
						     void *address, size_t length,
						     uint32_t *stripes_pending, uint32_t *rkeys)
{
	uint32_t ready = bolt_data_rail_usable(connection, false), mask = 0;

	for (int rail = 0; rail < BOLT_MAX_CONNECTION_RAILS; rail++) {
		struct ibv_mr *mr;

		/* Every stripe carries at least a byte. */
		if (*stripes_pending >= length)
			break;
		if (!(ready & (1u << rail)) ||
		    !(mr = bolt_registration_rail_mr(connection, rail, registration, address, length)) ||
		    !bolt_rendezvous_stripe_receive(connection, rail))
			continue;
		rkeys[rail] = mr->rkey;
		mask |= 1u << rail;
		(*stripes_pending)++;
	}
	return mask;
}

size_t bolt_rendezvous_rail_keys_write(const struct bolt_transmit *transmit, char *payload)
{
	struct bolt_wire_rail_keys keys = { .rails = transmit->rail_mask };

	memcpy(keys.rkey, transmit->rail_rkeys, sizeof(keys.rkey));
	memcpy(payload, &keys, sizeof(keys));
	return sizeof(keys);
}

void bolt_rendezvous_say_where(struct bolt_connection *connection, enum bolt_wire_op op,
			       uint64_t request_id, uint64_t tag, struct bolt_inbound *record,
			       void *address, size_t length, uint32_t status)
{
	struct ibv_mr *mr = record ? bolt_registration_link_mr(connection, &record->registration) : NULL;
	bool registered = mr != NULL;
	struct bolt_transmit *answer = bolt_transmit_internal(connection, op, request_id,
							      registered ? 0 : status);

	if (!answer)
		return;
	answer->tag = tag;
	if (registered) {
		answer->length = length;
		answer->remote_address = (uintptr_t) address;
		answer->remote_key = mr->rkey;
		answer->key_port = bolt_connection_port_index(connection);
		/* The rails and their keys go in the payload, a READY's rails in its tag too. */
		answer->rail_mask = bolt_rendezvous_post_stripe_receives(connection, &record->registration,
									 address, length,
									 &record->stripes.pending,
									 answer->rail_rkeys);
		if (op == BOLT_WIRE_RENDEZVOUS_READY)
			answer->tag = answer->rail_mask;
		/* On UC the write comes on the control rail as a stripe of its own, not before a DONE. */
		if (!answer->rail_mask && bolt_connection_unreliable(connection) && length)
			record->stripes.pending = 1;
	}
	bolt_transmit_start(answer);
}

const struct bolt_rail_port *bolt_rendezvous_key_port(const struct bolt_connection *connection,
						      const struct bolt_wire_header *header)
{
	return header->offset == (uint64_t) connection->link->peer_port ? connection->link->port : NULL;
}

static struct bolt_inbound *bolt_rendezvous_find(struct bolt_connection *connection, uint64_t request_id)
{
	struct bolt_inbound *record;

	DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
		if (record->request_id == request_id)
			return record;
	return NULL;
}

struct bolt_inbound *bolt_rendezvous_take(struct bolt_connection *connection, uint64_t request_id)
{
	struct bolt_inbound *record = bolt_rendezvous_find(connection, request_id);

	if (record)
		DL_DELETE(bolt_peer_of(connection)->rendezvous, record);
	return record;
}

void bolt_rendezvous_record_free(struct bolt_connection *connection, struct bolt_inbound *record)
{
	bolt_registration_release(connection->manager->domain, &record->registration, record->covered);
	free(record);
}

void bolt_rendezvous_answer(struct bolt_connection *connection, struct bolt_inbound *record)
{
	struct bolt_receive *receive = record->receive;
	size_t length = record->length < receive->length ? record->length : receive->length;

	record->covered = receive->covered;
	if (receive->iov_count == 1 && length)
		bolt_registration_expose(connection, receive->iov[0].iov_base, length, &record->registration);
	if (bolt_pull_start(connection, record, receive->iov[0].iov_base, length))
		return;
	bolt_rendezvous_say_where(connection, BOLT_WIRE_RENDEZVOUS_READY, record->request_id, 0, record,
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
	bolt_pull_note(connection, record, header);
	DL_APPEND(bolt_peer_of(connection)->rendezvous, record);
	if (record->receive)
		bolt_rendezvous_answer(connection, record);
}

void bolt_rendezvous_write_request(struct bolt_connection *connection,
				   const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_inbound *record = NULL;
	char *local = NULL;
	int status;

	status = bolt_mr_translate(endpoint, header->key, header->address, header->total_length,
				   FI_REMOTE_WRITE, &local);
	if (!status) {
		record = calloc(1, sizeof(*record));
		if (!record || !bolt_registration_expose(connection, local, header->total_length,
							&record->registration)) {
			free(record);
			record = NULL;
			status = BOLT_RENDEZVOUS_USE_SEGMENTS;
		}
	}
	/* Ahead of the answer: the writes after this one need not ask. */
	if (!status)
		bolt_direct_write_grant(connection, header);
	if (record) {
		record->write = true;
		record->covered = true;         /* bolt_mr_translate found the range in an open MR */
		record->request_id = header->request_id;
		record->length = header->total_length;
		record->wire_flags = header->flags;
		record->cq_data = header->cq_data;
		DL_APPEND(bolt_peer_of(connection)->rendezvous, record);
	}
	bolt_rendezvous_say_where(connection, BOLT_WIRE_RENDEZVOUS_READY, header->request_id, 0, record,
				  local, header->total_length, (uint32_t) status);
}

/*
 * Immediate data that names a transfer: the connection's slot on its link,
 * the low bits of the request id of the peer whose data it is (never all 0:
 * ids skip those), and the top bit for a read written back, named by the
 * reader's own id, so that it never meets a peer's message or write of the
 * same number.
 */
uint32_t bolt_rendezvous_immediate(const struct bolt_connection *connection, uint64_t request_id,
				   bool write_back)
{
	return (uint32_t) (request_id & BOLT_IMMEDIATE_ID) |
	       (uint32_t) connection->slot << BOLT_IMMEDIATE_SLOT_SHIFT |
	       (write_back ? BOLT_IMMEDIATE_WRITE_BACK : 0);
}

void bolt_rendezvous_describe_write(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				    struct ibv_send_wr *wr)
{
	sge->addr = (uintptr_t) transmit->iov[0].iov_base;
	sge->length = (uint32_t) transmit->target_length;
	sge->lkey = bolt_registration_link_mr(transmit->connection, &transmit->registration)->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->imm_data = transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE ?
		       bolt_receive_grant_immediate(transmit->connection, transmit->message_number) :
		       bolt_rendezvous_immediate(transmit->connection, transmit->request_id,
						 transmit->op == BOLT_WIRE_READ_RESPONSE);
	wr->wr.rdma.remote_addr = transmit->target_address;
	wr->wr.rdma.rkey = transmit->target_rkey;
}

/* The rails and keys a message's payload names; false if it has none. */
static bool bolt_rendezvous_rail_keys(const struct bolt_wire_header *header, const char *payload,
				      struct bolt_wire_rail_keys *keys)
{
	if (header->payload_length != sizeof(*keys))
		return false;
	memcpy(keys, payload, sizeof(*keys));
	return true;
}

/*
 * Sender: registers the buffer on the port of every rail of mask and takes
 * the target's key on each from keys; false (registrations given back) if a
 * port cannot register it now.
 */
static bool bolt_rendezvous_prepare_stripes(struct bolt_connection *connection,
					    struct bolt_transmit *transmit, uint32_t mask,
					    const struct bolt_wire_rail_keys *keys)
{
	for (int rail = 0; rail < BOLT_MAX_CONNECTION_RAILS; rail++) {
		if (!(mask & (1u << rail)))
			continue;
		transmit->rail_rkeys[rail] = keys->rkey[rail];
		/* A rail that failed here: its stripe goes on the control rail, registered there. */
		if (!bolt_data_rail_index_usable(connection, rail))
			continue;
		if (!bolt_registration_rail_mr(connection, rail, &transmit->registration,
					     transmit->iov[0].iov_base, transmit->target_length)) {
			bolt_registration_release(connection->manager->domain, &transmit->registration,
						   transmit->covered);
			return false;
		}
	}
	return true;
}

void bolt_rendezvous_answered(struct bolt_connection *connection, const struct bolt_wire_header *header,
			      const char *payload)
{
	struct bolt_transmit *transmit = bolt_transmit_answered(connection, header->request_id);

	if (!transmit || header->total_length > transmit->length) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous answer for no request");
		return;
	}
	if (bolt_pull_answered(connection, transmit, header))
		return;
	/*
	 * A rail it names may have failed here since (failover): its stripe then
	 * goes on the control rail (bolt_failover.c).
	 */
	if (header->tag > UINT32_MAX) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous answer names a data rail not ready");
		return;
	}
	bolt_rendezvous_take_answer(connection, transmit, header, (uint32_t) header->tag, payload);
}

void bolt_rendezvous_take_answer(struct bolt_connection *connection, struct bolt_transmit *transmit,
				 const struct bolt_wire_header *header, uint32_t rails,
				 const char *payload)
{
	struct bolt_wire_rail_keys keys;

	if (rails >> BOLT_MAX_CONNECTION_RAILS) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous answer names a data rail not ready");
		return;
	}
	if (rails && (!bolt_rendezvous_rail_keys(header, payload, &keys) || keys.rails != rails)) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous answer without its rails' keys");
		return;
	}
	/* Segments, unless the write can go after all (below). */
	transmit->protocol = BOLT_PROTOCOL_EAGER;
	if (header->cq_data && header->cq_data != BOLT_RENDEZVOUS_USE_SEGMENTS) {
		/* The target refused the write (key, bounds, rights): it ends here. */
		transmit->sent = transmit->length;
		bolt_transmit_posted_all(transmit);
		bolt_transmit_reply_arrived(transmit, (int) header->cq_data);
		return;
	}
	/*
	 * Receives the target posted for stripes that will not come stay on their
	 * rails: stripes are told apart by their immediate data, not by receive.
	 */
	transmit->target_length = header->total_length;
	if (!header->cq_data && header->total_length &&
	    bolt_registration_acquire(connection, transmit->iov[0].iov_base, header->total_length,
				     &transmit->registration) &&
	    bolt_rendezvous_prepare_stripes(connection, transmit, rails, &keys)) {
		transmit->target_address = header->address;
		transmit->target_rkey = (uint32_t) header->key;
		transmit->target_port = bolt_rendezvous_key_port(connection, header);
		transmit->rail_mask = rails;
		transmit->protocol = BOLT_PROTOCOL_RENDEZVOUS;
		transmit->phase = BOLT_RENDEZVOUS_WRITE;
		/* The target acks the write only when asked to (bolt_rendezvous_request_ack). */
		if (transmit->op == BOLT_WIRE_WRITE && !bolt_rendezvous_wants_ack(transmit))
			transmit->reply_pending = false;
	}
	/* Either the write, or the message again as segments from its start. */
	bolt_transmit_progress(connection);
}

bool bolt_rendezvous_wants_ack(const struct bolt_transmit *transmit)
{
	return transmit->flags & FI_DELIVERY_COMPLETE;
}

/* The write is in the target's memory: count it, report remote CQ data, acknowledge. */
static void bolt_rendezvous_write_done(struct bolt_connection *connection,
				       const struct bolt_inbound *record)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_transmit *ack;

	bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_WRITE,
				   record->wire_flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA, record->cq_data,
				   record->length);
	if (record->wire_flags & BOLT_WIRE_FLAG_NO_ACK)
		return;
	ack = bolt_transmit_internal(connection, BOLT_WIRE_WRITE_ACK, record->request_id, 0);
	if (ack)
		bolt_transmit_start(ack);
}

void bolt_rendezvous_finish(struct bolt_connection *connection, struct bolt_inbound *record)
{
	DL_DELETE(bolt_peer_of(connection)->rendezvous, record);
	bolt_registration_release(connection->manager->domain, &record->registration, record->covered);
	if (record->write) {
		bolt_rendezvous_write_done(connection, record);
	} else {
		record->received = record->length;
		bolt_match_complete_inbound(connection, record);
	}
	free(record);
}

void bolt_rendezvous_done(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_inbound *record = bolt_rendezvous_find(connection, header->request_id);
	bool write = header->flags & BOLT_WIRE_FLAG_WRITE;

	/* RC: a message written into a receive granted ahead, of which there is no record. */
	if (!record && !write && (header->flags & BOLT_WIRE_FLAG_GRANTED)) {
		bolt_receive_grant_landed(connection, header->tag, header->total_length);
		return;
	}
	if (!record || record->write != write || (!write && !record->receive) || record->pulling ||
	    header->total_length != record->length) {
		bolt_connection_fail(connection, FI_EIO, "rendezvous done for no request");
		return;
	}
	bolt_rendezvous_finish(connection, record);
}

/* Whether every stripe of a transfer landed, the ones awaited again included. */
static bool bolt_stripe_tally_done(const struct bolt_stripe_tally *tally)
{
	return !tally->pending && !tally->awaited;
}

/* A stripe of rail landed (moved: by STRIPE_MOVED); false if that rail's had already. */
static bool bolt_stripe_tally_land(struct bolt_stripe_tally *tally, int rail, bool moved)
{
	uint32_t bit = rail == BOLT_STRIPE_RAIL_UNKNOWN ? 0 : 1u << rail;

	if (moved)
		tally->awaited &= ~bit;
	if ((tally->landed & bit) || !tally->pending)
		return false;
	tally->landed |= bit;
	tally->pending--;
	return true;
}

/*
 * The sender asks which of the stripes of rails (posted, come back flushed)
 * landed: those that had not are awaited, moved, whatever comes meanwhile.
 */
static uint32_t bolt_stripe_tally_ask(struct bolt_stripe_tally *tally, uint32_t rails)
{
	uint32_t landed = tally->landed & rails;

	tally->awaited |= rails & ~landed;
	return landed;
}

/* The transfer whose stripes carry immediate (bolt_rendezvous_immediate). */
static struct bolt_inbound *bolt_rendezvous_find_striped(struct bolt_connection *connection,
							 uint32_t immediate)
{
	struct bolt_inbound *record;

	DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
		if (bolt_rendezvous_immediate(connection, record->request_id, false) == immediate &&
		    !bolt_stripe_tally_done(&record->stripes) &&
		    (record->write || record->receive))
			return record;
	return NULL;
}

bool bolt_rendezvous_stripe_landed(struct bolt_connection *connection, const struct ibv_wc *wc,
				   int rail, bool moved)
{
	struct bolt_inbound *record = (wc->wc_flags & IBV_WC_WITH_IMM) ?
				      bolt_rendezvous_find_striped(connection, wc->imm_data) : NULL;

	if (!record)
		return false;
	if (bolt_stripe_tally_land(&record->stripes, rail, moved))
		connection->stripes_received++;
	if (bolt_stripe_tally_done(&record->stripes))
		bolt_rendezvous_finish(connection, record);
	return true;
}

void bolt_rendezvous_stripe_moved(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	/* As if the stripe had landed on its rail (tag): the immediate data it would have carried. */
	struct ibv_wc wc = {
		.wc_flags = IBV_WC_WITH_IMM,
		.imm_data = (uint32_t) header->cq_data,
	};
	int rail = (int) header->tag;

	if (header->cq_data > UINT32_MAX || header->tag >= BOLT_MAX_CONNECTION_RAILS ||
	    (!bolt_rendezvous_stripe_landed(connection, &wc, rail, true) &&
	     !bolt_rendezvous_read_landed(connection, &wc, rail, true)))
		bolt_connection_fail(connection, FI_EIO, "a moved stripe for no transfer");
}

/*
 * The buffer of the transfer a STRIPE_KEY_ASK names, not yet written whole,
 * and its stripes' tally; NULL if none.
 */
static struct bolt_registration *bolt_rendezvous_asked_registration(struct bolt_connection *connection,
								    const struct bolt_wire_header *header,
								    struct bolt_stripe_tally **stripes)
{
	struct bolt_inbound *record;
	struct bolt_transmit *read;

	if (!(header->flags & BOLT_WIRE_FLAG_WRITE_BACK)) {
		record = bolt_rendezvous_find(connection, header->request_id);
		*stripes = record ? &record->stripes : NULL;
		return record ? &record->registration : NULL;
	}
	DL_FOREACH(bolt_peer_of(connection)->posted, read)
		if (read->op == BOLT_WIRE_READ_REQUEST && read->reply_pending &&
		    (read->wire_flags & BOLT_WIRE_FLAG_WRITE_BACK) && read->request_id == header->request_id) {
			*stripes = &read->stripes;
			return &read->registration;
		}
	return NULL;
}

/*
 * The key, on the control rail's port, of the buffer a STRIPE_KEY_ASK names
 * and its status: a rendezvous transfer's (its stripes' tally too), or with
 * GRANTED a receive granted for message tag, or with GRANTED and WRITE the
 * region of key.
 */
static struct ibv_mr *bolt_rendezvous_asked_key(struct bolt_connection *connection,
						const struct bolt_wire_header *header,
						struct bolt_stripe_tally **stripes, uint32_t *status)
{
	struct bolt_registration *registration;
	struct ibv_mr *mr;

	if (header->flags & BOLT_WIRE_FLAG_GRANTED) {
		mr = (header->flags & BOLT_WIRE_FLAG_WRITE) ?
		     bolt_direct_write_key_here(connection, header->key) :
		     bolt_receive_grant_key_here(connection, header->tag);
		*status = mr ? 0 : FI_ENOENT;
		return mr;
	}
	registration = bolt_rendezvous_asked_registration(connection, header, stripes);
	mr = registration ? bolt_registration_follow_link(connection, registration) : NULL;
	*status = registration ? (mr ? 0 : FI_ENOSPC) : FI_EALREADY;
	return mr;
}

void bolt_rendezvous_key_asked(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_stripe_tally *stripes = NULL;
	struct bolt_transmit *answer;
	struct ibv_mr *mr;
	uint32_t status;

	if (!(header->flags & BOLT_WIRE_FLAG_GRANTED) && header->tag >> BOLT_MAX_CONNECTION_RAILS) {
		bolt_connection_fail(connection, FI_EIO, "a stripe key asked for rails there are not");
		return;
	}
	mr = bolt_rendezvous_asked_key(connection, header, &stripes, &status);
	/* None: every byte of it landed (the sender's flushed stripes too), and it completed here. */
	answer = bolt_transmit_internal(connection, BOLT_WIRE_STRIPE_KEY, header->request_id, status);
	if (!answer)
		return;
	answer->wire_flags = header->flags & BOLT_WIRE_KEY_ASK_KIND;
	if (mr)
		answer->remote_key = mr->rkey;
	/* Which of the stripes asked about landed: the others are awaited, moved. */
	if (mr && stripes)
		answer->tag = bolt_stripe_tally_ask(stripes, (uint32_t) header->tag);
	answer->key_port = bolt_connection_port_index(connection);
	bolt_transmit_start(answer);
}

bool bolt_rendezvous_registration_pays(const struct bolt_transmit *transmit)
{
	const struct bolt_params *params = &transmit->connection->manager->domain->fabric->params;

	/* Registering memory outside an open MR for one transfer costs more than small ones save. */
	return transmit->iov_count == 1 && transmit->length && transmit->length <= UINT32_MAX &&
	       (transmit->covered || transmit->length >= (size_t) params->rendezvous_threshold);
}

bool bolt_rendezvous_read_prepare(struct bolt_transmit *read)
{
	struct bolt_domain *domain = read->connection->manager->domain;

	if (!bolt_rail_port_data_writes(domain, &domain->primary) ||
	    !bolt_rendezvous_registration_pays(read) ||
	    !bolt_registration_expose(read->connection, read->iov[0].iov_base, read->length,
				     &read->registration))
		return false;
	read->tag = (uintptr_t) read->iov[0].iov_base;
	read->cq_data = bolt_registration_link_mr(read->connection, &read->registration)->rkey;
	read->key_port = bolt_connection_port_index(read->connection);
	read->wire_flags |= BOLT_WIRE_FLAG_WRITE_BACK;
	/* Large reads want the rails too, as large writes do; the next ones get them. */
	if (read->length >= (size_t) domain->fabric->params.rendezvous_threshold)
		bolt_data_rail_request(read->connection);
	/* Worth stripes over the other cables: receives for them on every ready rail. */
	if (read->length >= (size_t) domain->fabric->params.stripe_threshold &&
	    bolt_data_rail_striping(read->connection))
		read->rail_mask = bolt_rendezvous_post_stripe_receives(read->connection, &read->registration,
								       read->iov[0].iov_base, read->length,
								       &read->stripes.pending,
								       read->rail_rkeys);
	return true;
}

void bolt_rendezvous_read_answer(struct bolt_connection *connection,
				 const struct bolt_wire_header *header, const char *payload,
				 struct bolt_transmit *response)
{
	struct bolt_wire_rail_keys keys = { 0 };

	if (!(header->flags & BOLT_WIRE_FLAG_WRITE_BACK) ||
	    !bolt_rail_port_data_writes(connection->manager->domain,
					&connection->manager->domain->primary) ||
	    !response->length)
		return;
	/* Stripes the reader posted receives for: all of them, or segments. */
	if (bolt_rendezvous_rail_keys(header, payload, &keys) &&
	    (keys.rails >> BOLT_MAX_CONNECTION_RAILS)) {
		bolt_connection_fail(connection, FI_EIO, "a read names a data rail not ready");
		return;
	}
	response->covered = true;       /* bolt_mr_translate found the range in an open MR */
	response->target_address = header->tag;
	response->target_rkey = header->cq_data;
	response->target_port = bolt_rendezvous_key_port(connection, header);
	response->target_length = response->length;
	if (!bolt_registration_acquire(connection, response->iov[0].iov_base, response->length,
				      &response->registration) ||
	    !bolt_rendezvous_prepare_stripes(connection, response, keys.rails, &keys))
		return;
	response->rail_mask = keys.rails;
	response->protocol = BOLT_PROTOCOL_RENDEZVOUS;
	response->phase = BOLT_RENDEZVOUS_WRITE;
}

/* Our read that immediate names, whose data is to be written back. */
static struct bolt_transmit *bolt_rendezvous_find_read(struct bolt_connection *connection,
						       uint32_t immediate)
{
	struct bolt_transmit *read;

	DL_FOREACH(bolt_peer_of(connection)->posted, read)
		if (read->op == BOLT_WIRE_READ_REQUEST && read->reply_pending &&
		    (read->wire_flags & BOLT_WIRE_FLAG_WRITE_BACK) &&
		    bolt_rendezvous_immediate(connection, read->request_id, true) == immediate)
			return read;
	return NULL;
}

void bolt_rendezvous_read_written_back(struct bolt_connection *connection, struct bolt_transmit *read)
{
	bolt_peer_of(connection)->reads_written_back++;
	read->received = read->length;
	bolt_transmit_reply_arrived(read, 0);
}

bool bolt_rendezvous_read_landed(struct bolt_connection *connection, const struct ibv_wc *wc,
				 int rail, bool moved)
{
	struct bolt_transmit *read = (wc->wc_flags & IBV_WC_WITH_IMM) ?
				     bolt_rendezvous_find_read(connection, wc->imm_data) : NULL;
	bool whole;

	if (!read)
		return false;
	/* Written back whole on UC's control rail, or in stripes on the rails it named. */
	whole = bolt_stripe_tally_done(&read->stripes);
	if (whole && wc->byte_len != read->length)
		return false;
	if (whole || bolt_stripe_tally_land(&read->stripes, rail, moved))
		connection->stripes_received++;
	if (bolt_stripe_tally_done(&read->stripes))
		bolt_rendezvous_read_written_back(connection, read);
	return true;
}

void bolt_rendezvous_stripe_arrived(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *buffer = bolt_control_buffer_of_work(work);
	struct bolt_connection *connection = buffer->connection;
	const struct bolt_data_rail *rail;
	int buffer_rail;

	if (!buffer->posted)
		return;
	buffer_rail = buffer->data_rail;
	rail = &connection->data_rails[buffer_rail];
	bolt_control_buffer_put(connection->manager->domain, buffer);
	if (connection->state == BOLT_CONNECTION_FAILED)
		return;
	/* Flushed from a rail that failed over (since made again): its stripe comes another way. */
	if (wc->status != IBV_WC_SUCCESS &&
	    (rail->failed || !rail->qp || rail->qp->qp_num != wc->qp_num))
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		bolt_connection_fail(connection, FI_EIO,
				     connection->manager->domain->fabric->verbs.wc_status_str(wc->status));
		return;
	}
	if (bolt_rendezvous_stripe_landed(connection, wc, buffer_rail, false) ||
	    bolt_rendezvous_read_landed(connection, wc, buffer_rail, false))
		return;
	/* Late, from a rail that failed: written again on the control rail, it landed there first. */
	if (!rail->failed && rail->qp && rail->qp->qp_num == wc->qp_num)
		bolt_connection_fail(connection, FI_EIO, "a data rail stripe for no transfer");
}

void bolt_rendezvous_release(struct bolt_connection *connection, int error)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_inbound *record, *next;

	DL_FOREACH_SAFE(bolt_peer_of(connection)->rendezvous, record, next) {
		DL_DELETE(bolt_peer_of(connection)->rendezvous, record);
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
