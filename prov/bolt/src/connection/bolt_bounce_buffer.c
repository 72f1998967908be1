/*
 * bolt_bounce_buffer.c: a link's bounce buffers. On UC each link sets aside
 * one buffer per receive it posts for its peer, in one registration, and
 * tells the peer where they are in the handshake; the peer writes a message
 * whole (header and data) into its next one, with immediate data that names
 * the buffer. Why and when a message goes that way is the protocol's
 * (protocol/bolt_bounce.c); the buffers, their use in turn and the checks of
 * what lands in them are the transport's.
 */
#include <string.h>
#include <sys/mman.h>

#include "connection/bolt_connection.h"

#define BOLT_BOUNCE_ALIGNMENT 64

_Static_assert(BOLT_LINK_SLOTS <= (BOLT_IMMEDIATE_SLOT_MASK >> BOLT_IMMEDIATE_SLOT_SHIFT) + 1,
	       "the immediate's slot bits name every bounce buffer");

static size_t bolt_bounce_memory_size(const struct bolt_link *link)
{
	return link->bounce.size * link->receive_depth;
}

void bolt_bounce_create(struct bolt_link *link)
{
	size_t payload = (size_t) link->domain->fabric->params.bounce_size;
	struct bolt_bounce *bounce = &link->bounce;
	void *memory;
	int ret;

	if (!payload || payload <= BOLT_SEGMENT_PAYLOAD || link->port->qp_type != IBV_QPT_UC ||
	    !link->port->rdma_write || link->receive_depth > BOLT_LINK_SLOTS)
		return;
	bounce->size = (sizeof(struct bolt_wire_header) + payload + BOLT_BOUNCE_ALIGNMENT - 1) &
		       ~(size_t) (BOLT_BOUNCE_ALIGNMENT - 1);
	memory = mmap(NULL, bolt_bounce_memory_size(link), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED) {
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "no memory for a link's bounce buffers\n");
		bounce->size = 0;
		return;
	}
	/* Held by the link: it counts against the budget of user registrations. The peer writes only. */
	ret = bolt_mr_cache_expose(link->port->mr_cache, memory, bolt_bounce_memory_size(link),
				   BOLT_MR_CACHE_PEER_WRITE, &bounce->entry);
	if (ret) {
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL,
			"no registration for a link's bounce buffers (%s): its peer asks first\n",
			fi_strerror(-ret));
		munmap(memory, bolt_bounce_memory_size(link));
		bounce->size = 0;
		return;
	}
	bounce->memory = memory;
}

void bolt_bounce_destroy(struct bolt_link *link)
{
	struct bolt_bounce *bounce = &link->bounce;

	if (!bounce->memory)
		return;
	/* Exposed: deregistered at its release, before the memory goes. */
	bolt_mr_cache_release(link->port->mr_cache, bounce->entry);
	munmap(bounce->memory, bolt_bounce_memory_size(link));
	memset(bounce, 0, sizeof(*bounce));
}

void bolt_bounce_describe_own(const struct bolt_link *link, struct bolt_peer_bounce *peer_bounce)
{
	memset(peer_bounce, 0, sizeof(*peer_bounce));
	if (!link->bounce.memory)
		return;
	peer_bounce->address = (uintptr_t) link->bounce.memory;
	peer_bounce->rkey = bolt_mr_cache_entry_mr(link->bounce.entry)->rkey;
	peer_bounce->size = (uint32_t) link->bounce.size;
}

const char *bolt_bounce_check_peer(const struct bolt_peer_bounce *peer_bounce)
{
	if (!peer_bounce->size)
		return NULL;
	if (peer_bounce->size <= sizeof(struct bolt_wire_header) + BOLT_SEGMENT_PAYLOAD ||
	    peer_bounce->size > sizeof(struct bolt_wire_header) + (16u << 20) + BOLT_BOUNCE_ALIGNMENT ||
	    !peer_bounce->address)
		return "bounce buffers out of range";
	return NULL;
}

size_t bolt_bounce_own_payload(const struct bolt_link *link)
{
	if (!link || !link->bounce.memory)
		return 0;
	return link->bounce.size - sizeof(struct bolt_wire_header);
}

size_t bolt_bounce_peer_payload(const struct bolt_link *link)
{
	if (!link || !link->peer_bounce.size || link->peer_receive_depth > BOLT_LINK_SLOTS)
		return 0;
	return link->peer_bounce.size - sizeof(struct bolt_wire_header);
}

void bolt_bounce_describe_write(struct bolt_link *link, const struct bolt_control_buffer *record,
				void *address, size_t length, uint32_t lkey,
				struct ibv_sge sge[2], struct ibv_send_wr *wr)
{
	uint32_t index = link->bounces_sent++ % link->peer_receive_depth;

	sge[0].addr = (uintptr_t) bolt_control_buffer_data(link->domain, record);
	sge[0].length = sizeof(struct bolt_wire_header);
	sge[0].lkey = link->port->control_mr->lkey;
	sge[1].addr = (uintptr_t) address;
	sge[1].length = (uint32_t) length;
	sge[1].lkey = lkey;
	wr->sg_list = sge;
	wr->num_sge = 2;
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->imm_data = BOLT_IMMEDIATE_BOUNCE | index << BOLT_IMMEDIATE_SLOT_SHIFT;
	wr->wr.rdma.remote_addr = link->peer_bounce.address + (uint64_t) index * link->peer_bounce.size;
	wr->wr.rdma.rkey = link->peer_bounce.rkey;
}

bool bolt_bounce_immediate(const struct bolt_link *link, const struct ibv_wc *wc)
{
	return link->qp->qp_type == IBV_QPT_UC &&
	       (wc->imm_data & (BOLT_IMMEDIATE_WRITE_BACK | BOLT_IMMEDIATE_GRANTED | BOLT_IMMEDIATE_ID)) ==
	       BOLT_IMMEDIATE_BOUNCE;
}

const char *bolt_bounce_arrived(const struct bolt_link *link, const struct ibv_wc *wc,
				struct bolt_wire_header *header, const char **payload)
{
	uint32_t index = (wc->imm_data & BOLT_IMMEDIATE_SLOT_MASK) >> BOLT_IMMEDIATE_SLOT_SHIFT;
	const char *buffer;

	if (!link->bounce.memory || index >= link->receive_depth)
		return "a message written into a bounce buffer this link does not have";
	if (wc->byte_len < sizeof(*header) || wc->byte_len > link->bounce.size)
		return "a bounce buffer's message of the wrong length";
	buffer = link->bounce.memory + (size_t) index * link->bounce.size;
	/* A copy: what is checked is what is used, whatever the buffer holds later. */
	memcpy(header, buffer, sizeof(*header));
	if (header->op != BOLT_WIRE_MESSAGE || header->payload_length || header->offset ||
	    !(header->flags & BOLT_WIRE_FLAG_LAST) ||
	    header->total_length != wc->byte_len - sizeof(*header))
		return "a bounce buffer without one whole message";
	*payload = buffer + sizeof(*header);
	return NULL;
}
