/*
 * bolt_bounce.c: messages written whole. A rendezvous costs the sender a
 * request and the handling of its answer before each write, which at 64 KiB
 * is as much again as the write. So on UC (Thunderbolt) each link sets aside
 * bounce buffers for its peer, one per receive it posts for the peer, in one
 * registration, and tells the peer where they are in the handshake. A
 * message longer than one segment and short enough for a buffer then goes as
 * one RDMA write of its header and data into the peer's next buffer, with
 * immediate data that names the buffer; the target checks the header as any
 * message's and copies the data out while it handles the completion.
 *
 * The buffers need no accounting of their own: the sender uses them in turn,
 * and each write consumes a control receive, which the target posts again
 * only after it copied the buffer out. A credit returned therefore proves
 * the buffer of the message that consumed it free again, and a sender with
 * a credit has fewer messages in flight than there are buffers. A write UC
 * loses consumes no receive and no credit comes back for it; the next
 * message's sequence shows the loss.
 *
 * Up to FI_BOLT_BOUNCE_SIZE, 32 KiB by default. The data is copied twice,
 * into the buffer and out of it into the receive, where a rendezvous
 * writes the receive directly; from 64 KiB the target's copy costs more
 * than the rendezvous saves. From FI_BOLT_BOUNCE_THRESHOLD, 16 KiB by
 * default: a few segments cost less than one write (bolt.h).
 *
 * RC has no immediate value to spare (fi_writedata's remote CQ data takes
 * them all) and keeps the rendezvous. The buffers themselves are the link's
 * (connection/bolt_bounce_buffer.c); here is only the choice to use them.
 */
#include "protocol/bolt_rdma.h"

bool bolt_bounce_takes(const struct bolt_domain *domain, size_t length, size_t payload)
{
	return length > BOLT_SEGMENT_PAYLOAD &&
	       length >= (size_t) domain->fabric->params.bounce_threshold && length <= payload;
}

bool bolt_bounce_wanted(const struct bolt_transmit *transmit)
{
	const struct bolt_connection *connection = transmit->connection;

	return transmit->op == BOLT_WIRE_MESSAGE && !transmit->internal &&
	       !transmit->inject_copy && transmit->iov_count == 1 &&
	       bolt_bounce_takes(connection->manager->domain, transmit->length,
				 bolt_bounce_peer_payload(connection->link));
}

bool bolt_bounce_describe(struct bolt_transmit *transmit, const struct bolt_control_buffer *record,
			  struct ibv_sge sge[2], struct ibv_send_wr *wr)
{
	struct bolt_connection *connection = transmit->connection;

	/* The link may have changed since the message was started. */
	if (!bolt_bounce_wanted(transmit) ||
	    !bolt_registration_acquire(connection, transmit->iov[0].iov_base, transmit->length,
				       &transmit->registration))
		return false;
	bolt_bounce_describe_write(connection->link, record, transmit->iov[0].iov_base,
				   transmit->length,
				   bolt_registration_link_mr(connection, &transmit->registration)->lkey,
				   sge, wr);
	return true;
}
