/*
 * bolt_data_rail.c: a connection's data rails. Each is a queue pair of its
 * own to the peer, for the stripes of large writes, so that bulk data never
 * waits in front of the control rail's headers. The first rendezvous asks
 * for them over the control rail (its queue pair number and PSN); the peer
 * connects one of its own and answers. Both may ask at once: the end whose
 * address is lower keeps its request, the other answers it with the queue
 * pair it had made. A rail is only made while the device has a queue pair
 * to spare beyond the next connection's: rails speed transfers up, a
 * connection to one more peer is what the application asked for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bolt_endpoint.h"
#include "rails/bolt_qp.h"

static bool bolt_data_rail_we_win(const struct bolt_connection *connection)
{
	return memcmp(&connection->peer, &connection->endpoint->address, sizeof(connection->peer)) > 0;
}

/* Our queue pair for rail, in INIT; false when none can be spared. */
static bool bolt_data_rail_create_qp(struct bolt_connection *connection, struct bolt_data_rail *rail)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct bolt_verbs *verbs = &domain->fabric->verbs;

	if (domain->primary.qp_count + 1 >= domain->primary.budget.qp_budget)
		return false;
	rail->qp = bolt_qp_create(verbs, domain->primary.handle.pd, domain->primary.handle.cq, domain->primary.qp_type,
				  (uint32_t) domain->primary.budget.queue_depth, 0);
	if (!rail->qp) {
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "%s has no queue pair for a data rail (%s)\n",
			domain->primary.device.name, strerror(errno));
		return false;
	}
	domain->primary.qp_count++;
	rail->psn = (uint32_t) rand() & 0xffffff;
	if (bolt_qp_init(verbs, rail->qp, domain->primary.qp_local.port_num)) {
		verbs->destroy_qp(rail->qp);
		rail->qp = NULL;
		domain->primary.qp_count--;
		return false;
	}
	return true;
}

static void bolt_data_rail_destroy(struct bolt_connection *connection, struct bolt_data_rail *rail)
{
	struct bolt_domain *domain = connection->endpoint->domain;

	if (rail->qp) {
		domain->fabric->verbs.destroy_qp(rail->qp);
		rail->qp = NULL;
		domain->primary.qp_count--;
	}
}

/* RTR and RTS towards the peer's queue pair for the rail. */
static int bolt_data_rail_connect(struct bolt_connection *connection, struct bolt_data_rail *rail,
				  const struct bolt_wire_header *header)
{
	struct bolt_domain *domain = connection->endpoint->domain;
	struct bolt_qp_local local = domain->primary.qp_local;
	struct bolt_qp_remote remote = {
		.qpn = (uint32_t) header->address,
		.psn = (uint32_t) header->key,
		.gid = connection->peer_gid,
	};

	local.psn = rail->psn;
	return bolt_qp_connect(&domain->fabric->verbs, rail->qp, &local, &remote);
}

/* A request or answer about rail number index; status refuses. */
static void bolt_data_rail_send(struct bolt_connection *connection, enum bolt_wire_op op,
				uint64_t index, uint32_t status)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	/* request_id names the rail. */
	struct bolt_transmit *transmit = bolt_transmit_internal(connection, op, index, status);

	if (!transmit)
		return;
	if (!status) {
		transmit->remote_address = rail->qp->qp_num;
		transmit->remote_key = rail->psn;
	}
	bolt_transmit_start(transmit);
}

void bolt_data_rail_request(struct bolt_connection *connection)
{
	int wanted = connection->endpoint->domain->data_rails;

	if (connection->loopback || connection->state == BOLT_CONNECTION_FAILED)
		return;
	for (int index = 0; index < wanted; index++) {
		struct bolt_data_rail *rail = &connection->data_rails[index];

		if (rail->state != BOLT_DATA_RAIL_NONE)
			continue;
		if (!bolt_data_rail_create_qp(connection, rail)) {
			rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
			continue;
		}
		rail->state = BOLT_DATA_RAIL_REQUESTED;
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_REQUEST, (uint64_t) index, 0);
	}
}

/* Why a rail request or answer cannot be used, or NULL. */
static const char *bolt_data_rail_check(const struct bolt_wire_header *header)
{
	if (header->request_id >= BOLT_MAX_DATA_RAILS)
		return "data rail number out of range";
	if (!header->cq_data && (header->address == 0 || header->address > 0xffffff ||
				 header->key > 0xffffff))
		return "data rail queue pair number or PSN out of range";
	return NULL;
}

void bolt_data_rail_requested(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	int wanted = connection->endpoint->domain->data_rails;
	const char *problem = bolt_data_rail_check(header);
	struct bolt_data_rail *rail;

	if (!problem && header->cq_data)
		problem = "a data rail request without a queue pair";
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	rail = &connection->data_rails[header->request_id];
	if (rail->state == BOLT_DATA_RAIL_REQUESTED && bolt_data_rail_we_win(connection))
		return;         /* both asked at once: the peer answers ours */
	if (rail->state == BOLT_DATA_RAIL_READY) {
		bolt_connection_fail(connection, FI_EIO, "a second request for a data rail");
		return;
	}
	if (rail->state == BOLT_DATA_RAIL_NONE && header->request_id < (uint64_t) wanted &&
	    bolt_data_rail_create_qp(connection, rail))
		rail->state = BOLT_DATA_RAIL_REQUESTED;
	if (rail->state != BOLT_DATA_RAIL_REQUESTED || bolt_data_rail_connect(connection, rail, header)) {
		bolt_data_rail_destroy(connection, rail);
		rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_ANSWER, header->request_id, FI_ENOSPC);
		return;
	}
	rail->state = BOLT_DATA_RAIL_READY;
	bolt_data_rail_send(connection, BOLT_WIRE_RAIL_ANSWER, header->request_id, 0);
}

void bolt_data_rail_answered(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	const char *problem = bolt_data_rail_check(header);
	struct bolt_data_rail *rail;

	if (!problem && connection->data_rails[header->request_id].state != BOLT_DATA_RAIL_REQUESTED)
		problem = "an answer for a data rail never asked for";
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	rail = &connection->data_rails[header->request_id];
	if (header->cq_data || bolt_data_rail_connect(connection, rail, header)) {
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL,
			"data rail %u: the peer has none (%s); the control rail carries large writes\n",
			(unsigned int) header->request_id, fi_strerror((int) header->cq_data));
		bolt_data_rail_destroy(connection, rail);
		rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
		return;
	}
	rail->state = BOLT_DATA_RAIL_READY;
}

uint32_t bolt_data_rail_ready(const struct bolt_connection *connection, bool with_room)
{
	const struct bolt_domain *domain = connection->endpoint->domain;
	uint32_t mask = 0;

	for (int index = 0; index < BOLT_MAX_DATA_RAILS; index++) {
		const struct bolt_data_rail *rail = &connection->data_rails[index];

		if (rail->state == BOLT_DATA_RAIL_READY &&
		    (!with_room || rail->outstanding_sends < (int) domain->primary.budget.queue_depth))
			mask |= 1u << index;
	}
	return mask;
}

int bolt_data_rail_post_write(struct bolt_connection *connection, int index,
			      struct bolt_control_buffer *record, const struct ibv_sge *sge,
			      uint64_t remote_address, uint32_t rkey, uint32_t immediate)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t) &record->work,
		.sg_list = (struct ibv_sge *) sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = immediate,
		.wr.rdma = { .remote_addr = remote_address, .rkey = rkey },
	};
	struct ibv_send_wr *bad_wr;
	int ret;

	record->connection = connection;
	record->data_rail = index;
	record->posted = true;
	ret = connection->endpoint->domain->fabric->verbs.post_send(rail->qp, &wr, &bad_wr);
	if (ret) {
		record->posted = false;
		return ret;
	}
	rail->outstanding_sends++;
	rail->bytes_written += sge->length;
	connection->stripes_sent++;
	return 0;
}

int bolt_data_rail_post_receive(struct bolt_connection *connection, int index,
				struct bolt_control_buffer *record)
{
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t) &record->work };
	struct ibv_recv_wr *bad_wr;
	int ret;

	record->connection = connection;
	record->data_rail = index;
	record->posted = true;
	ret = connection->endpoint->domain->fabric->verbs.post_recv(connection->data_rails[index].qp,
								     &wr, &bad_wr);
	if (ret)
		record->posted = false;
	return ret;
}

void bolt_data_rail_destroy_all(struct bolt_connection *connection)
{
	for (int index = 0; index < BOLT_MAX_DATA_RAILS; index++)
		bolt_data_rail_destroy(connection, &connection->data_rails[index]);
}
