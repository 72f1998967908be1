/*
 * bolt_tagged.c: fi_ops_tagged: tagged sends and receives, matched by tag and
 * ignore mask (and source, with FI_DIRECTED_RECV); the same paths as
 * bolt_msg.c with a tag. Receives may also peek, claim and discard
 * (protocol/bolt_match.c does it).
 */
#include <rdma/fi_ext_bolt.h>

#include "bolt_operation.h"

static ssize_t bolt_tagged_send_iov(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				    size_t count, fi_addr_t destination, uint64_t tag,
				    uint64_t data, void *context, uint64_t flags)
{
	struct bolt_operation operation = {
		.op = BOLT_WIRE_MESSAGE, .iov = iov, .desc = desc, .iov_count = count,
		.peer = destination, .tag = tag, .data = data, .context = context,
		.flags = flags | FI_TAGGED,
	};

	return bolt_operation_transmit(bolt_operation_endpoint(ep_fid), &operation);
}

static ssize_t bolt_tagged_receive_iov(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				       size_t count, fi_addr_t source, uint64_t tag,
				       uint64_t ignore, void *context, uint64_t flags)
{
	struct bolt_endpoint *endpoint = bolt_operation_endpoint(ep_fid);
	struct bolt_operation operation = {
		.iov = iov, .desc = desc, .iov_count = count, .peer = source, .tag = tag,
		.ignore = ignore, .context = context, .flags = flags | FI_TAGGED,
	};

	/* Collective messages have a tag space of their own: no ignore mask reaches into it. */
	if (endpoint->caps & FI_COLLECTIVE)
		operation.ignore &= ~FI_BOLT_COLLECTIVE_TAG_BIT;
	/* FI_DISCARD qualifies a peek or a claim; a claim is found by its fi_context. */
	if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
		return -FI_EINVAL;
	if ((flags & FI_CLAIM) && !context)
		return -FI_EINVAL;
	return bolt_operation_receive(endpoint, &operation, true);
}

static ssize_t bolt_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
				fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return bolt_tagged_receive_iov(ep_fid, &iov, &desc, 1, src_addr, tag, ignore, context,
				       bolt_operation_endpoint(ep_fid)->receive_op_flags);
}

static ssize_t bolt_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
				 void *context)
{
	return bolt_tagged_receive_iov(ep_fid, iov, desc, count, src_addr, tag, ignore, context,
				       bolt_operation_endpoint(ep_fid)->receive_op_flags);
}

static ssize_t bolt_tagged_recvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	return bolt_tagged_receive_iov(ep_fid, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
				       msg->tag, msg->ignore, msg->context, flags);
}

static ssize_t bolt_tagged_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_tagged_send_iov(ep_fid, &iov, &desc, 1, dest_addr, tag, 0, context,
				    bolt_operation_endpoint(ep_fid)->transmit_op_flags);
}

static ssize_t bolt_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return bolt_tagged_send_iov(ep_fid, iov, desc, count, dest_addr, tag, 0, context,
				    bolt_operation_endpoint(ep_fid)->transmit_op_flags);
}

static ssize_t bolt_tagged_sendmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	return bolt_tagged_send_iov(ep_fid, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
				    msg->tag, msg->data, msg->context, flags);
}

static ssize_t bolt_tagged_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				    uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_tagged_send_iov(ep_fid, &iov, &desc, 1, dest_addr, tag, data, context,
				    bolt_operation_endpoint(ep_fid)->transmit_op_flags |
				    FI_REMOTE_CQ_DATA);
}

static ssize_t bolt_tagged_inject_data(struct fid_ep *ep_fid, const void *buf, size_t len,
				       uint64_t data, uint64_t flags, fi_addr_t dest_addr,
				       uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct bolt_operation operation = {
		.op = BOLT_WIRE_MESSAGE, .iov = &iov, .iov_count = 1, .peer = dest_addr,
		.tag = tag, .data = data, .flags = flags | FI_INJECT | FI_TAGGED,
		.silent_inject = true,
	};

	return bolt_operation_transmit(bolt_operation_endpoint(ep_fid), &operation);
}

static ssize_t bolt_tagged_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
				  fi_addr_t dest_addr, uint64_t tag)
{
	return bolt_tagged_inject_data(ep_fid, buf, len, 0, 0, dest_addr, tag);
}

static ssize_t bolt_tagged_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				      uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	return bolt_tagged_inject_data(ep_fid, buf, len, data, FI_REMOTE_CQ_DATA, dest_addr, tag);
}

struct fi_ops_tagged bolt_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = bolt_tagged_recv,
	.recvv = bolt_tagged_recvv,
	.recvmsg = bolt_tagged_recvmsg,
	.send = bolt_tagged_send,
	.sendv = bolt_tagged_sendv,
	.sendmsg = bolt_tagged_sendmsg,
	.inject = bolt_tagged_inject,
	.senddata = bolt_tagged_senddata,
	.injectdata = bolt_tagged_injectdata,
};
