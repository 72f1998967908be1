/*
 * bolt_collective_transfer.c: the messages of a collective. They are tagged
 * messages on the endpoint's point-to-point path (eager segments, or the
 * rendezvous by RDMA write for large ones), in the collective tag space
 * (bolt_collective.h), and their completions come back to the collective
 * through the completion functions they carry instead of the application's
 * CQ. Their rendezvous starts higher than point-to-point's
 * (FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD): a collective waits on each
 * message, where a stream of them would hide the request and answer. On
 * RC, where the table says so, their receivers read them (protocol/bolt_pull.c);
 * the others' receivers grant their receives ahead, so that no request and
 * answer go before the write (protocol/bolt_tag_grant.c).
 */
#include <stdlib.h>

#include "collective/bolt_collective.h"
#include "protocol/bolt_tag_grant.h"

static uint64_t bolt_collective_tag(const struct bolt_collective_operation *operation, int lane,
				    int sender)
{
	uint64_t tag = BOLT_COLLECTIVE_TAG;

	tag |= (uint64_t) (operation->group->id & ((1u << BOLT_COLLECTIVE_GROUP_BITS) - 1))
	       << (BOLT_COLLECTIVE_SEQUENCE_BITS + BOLT_COLLECTIVE_LANE_BITS + BOLT_COLLECTIVE_RANK_BITS);
	tag |= (uint64_t) (operation->sequence & ((1u << BOLT_COLLECTIVE_SEQUENCE_BITS) - 1))
	       << (BOLT_COLLECTIVE_LANE_BITS + BOLT_COLLECTIVE_RANK_BITS);
	tag |= (uint64_t) lane << BOLT_COLLECTIVE_RANK_BITS;
	return tag | (uint64_t) sender;
}

static void bolt_collective_send_done(struct bolt_transmit *transmit)
{
	bolt_collective_transfer_done(transmit->context, transmit->status);
}

/* A collective's message must be exactly as long as its receive. */
static void bolt_collective_receive_done(struct bolt_receive *receive, size_t message_length,
					 int status)
{
	bolt_collective_transfer_done(receive->context,
				      status ? status : message_length != receive->length ? FI_EIO : 0);
}

/* Whether sender's message to receiver is pulled by RDMA read (RC), as the table chose. */
static bool bolt_collective_pulled(const struct bolt_collective_operation *operation, int sender,
				   int receiver)
{
	int size = operation->group->size;

	return operation->pull == BOLT_COLLECTIVE_PULL ||
	       (operation->pull == BOLT_COLLECTIVE_PULL_ONE && receiver == (sender + size - 1) % size);
}

/*
 * Whether the receiver of a message grants its receive ahead
 * (protocol/bolt_tag_grant.c), if large enough for a rendezvous: in
 * operations whose members pull none. Where one pulls the root's buffer,
 * writes the others no longer wait for would contend with its reads
 * (RoCE v2 broadcasts of three and four, 256 KiB to 1 MiB: 1.39 to 1.60 of
 * the time). Both ends ask this.
 */
static bool bolt_collective_granted(const struct bolt_collective_operation *operation)
{
	return operation->group->endpoint->domain->fabric->params.collective_grants &&
	       operation->pull == BOLT_COLLECTIVE_WRITE;
}

static size_t bolt_collective_rendezvous_threshold(const struct bolt_collective_operation *operation)
{
	return (size_t) operation->group->endpoint->domain->fabric->params.collective_rendezvous_threshold;
}

int bolt_collective_send(struct bolt_collective_operation *operation, int lane, int rank,
			 const void *buffer, size_t length)
{
	struct bolt_collective_group *group = operation->group;
	struct bolt_transmit *transmit = bolt_allocate_zeroed(sizeof(*transmit));

	if (!transmit)
		return -FI_ENOMEM;
	transmit->op = BOLT_WIRE_MESSAGE;
	transmit->connection = group->members[rank].connection;
	transmit->context = &operation->sends;
	transmit->flags = FI_TAGGED;
	transmit->complete = bolt_collective_send_done;
	transmit->iov[0].iov_base = (void *) buffer;
	transmit->iov[0].iov_len = length;
	transmit->iov_count = 1;
	transmit->length = length;
	transmit->tag = bolt_collective_tag(operation, lane, group->rank);
	transmit->rendezvous_threshold = bolt_collective_rendezvous_threshold(operation);
	transmit->pullable = bolt_collective_pulled(operation, group->rank, rank);
	transmit->grant_awaited = bolt_collective_granted(operation);
	operation->sends.pending++;
	bolt_transmit_start(transmit);
	return 0;
}

int bolt_collective_receive(struct bolt_collective_operation *operation, int lane, int rank,
			    void *buffer, size_t length, struct bolt_collective_wait *wait)
{
	struct bolt_connection *connection = operation->group->members[rank].connection;
	struct bolt_receive *receive = bolt_allocate_zeroed(sizeof(*receive));

	if (!receive)
		return -FI_ENOMEM;
	receive->context = wait;
	receive->complete = bolt_collective_receive_done;
	receive->tagged = true;
	receive->iov[0].iov_base = buffer;
	receive->iov[0].iov_len = length;
	receive->iov_count = 1;
	receive->length = length;
	receive->source = FI_ADDR_UNSPEC;       /* the sender's rank is in the tag */
	receive->tag = bolt_collective_tag(operation, lane, rank);
	wait->operation = operation;
	wait->pending++;
	if (!connection || !bolt_collective_granted(operation) ||
	    !bolt_tag_grant_post(connection, receive, bolt_collective_rendezvous_threshold(operation)))
		bolt_match_post(operation->group->endpoint, receive);
	return 0;
}

void bolt_collective_cancel(struct bolt_endpoint *endpoint, struct bolt_collective_wait *wait)
{
	/* Each cancelled receive reports through bolt_collective_receive_done. */
	while (wait->pending && !bolt_match_cancel(endpoint, wait))
		;
}
