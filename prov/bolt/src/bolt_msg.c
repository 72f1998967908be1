/*
 * bolt_msg.c: fi_ops_msg: untagged sends and receives. Each entry point says
 * what it means in a struct bolt_operation; bolt_operation.c does the rest.
 */
#include "bolt_operation.h"

static ssize_t bolt_msg_send_iov(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t destination, uint64_t data,
				 void *context, uint64_t flags)
{
	struct bolt_endpoint *endpoint = bolt_operation_endpoint(ep_fid);
	struct bolt_operation operation = {
		.op = BOLT_WIRE_MESSAGE, .iov = iov, .desc = desc, .iov_count = count,
		.peer = destination, .data = data, .context = context, .flags = flags,
	};

	return bolt_operation_transmit(endpoint, &operation);
}

static ssize_t bolt_msg_receive_iov(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
				    size_t count, fi_addr_t source, void *context, uint64_t flags)
{
	struct bolt_endpoint *endpoint = bolt_operation_endpoint(ep_fid);
	struct bolt_operation operation = {
		.iov = iov, .desc = desc, .iov_count = count, .peer = source,
		.context = context, .flags = flags,
	};

	return bolt_operation_receive(endpoint, &operation, false);
}

static uint64_t bolt_msg_transmit_flags(struct fid_ep *ep_fid)
{
	return bolt_operation_endpoint(ep_fid)->transmit_op_flags;
}

static ssize_t bolt_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			     fi_addr_t src_addr, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return bolt_msg_receive_iov(ep_fid, &iov, &desc, 1, src_addr, context,
				    bolt_operation_endpoint(ep_fid)->receive_op_flags);
}

static ssize_t bolt_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			      size_t count, fi_addr_t src_addr, void *context)
{
	return bolt_msg_receive_iov(ep_fid, iov, desc, count, src_addr, context,
				    bolt_operation_endpoint(ep_fid)->receive_op_flags);
}

static ssize_t bolt_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	/* FI_MORE only says more is coming: every receive is posted at once anyway. */
	return bolt_msg_receive_iov(ep_fid, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
				    msg->context, flags);
}

static ssize_t bolt_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			     fi_addr_t dest_addr, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_msg_send_iov(ep_fid, &iov, &desc, 1, dest_addr, 0, context,
				 bolt_msg_transmit_flags(ep_fid));
}

static ssize_t bolt_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			      size_t count, fi_addr_t dest_addr, void *context)
{
	return bolt_msg_send_iov(ep_fid, iov, desc, count, dest_addr, 0, context,
				 bolt_msg_transmit_flags(ep_fid));
}

static ssize_t bolt_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	return bolt_msg_send_iov(ep_fid, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
				 msg->data, msg->context, flags);
}

static ssize_t bolt_msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				 uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_msg_send_iov(ep_fid, &iov, &desc, 1, dest_addr, data, context,
				 bolt_msg_transmit_flags(ep_fid) | FI_REMOTE_CQ_DATA);
}

static ssize_t bolt_msg_inject_data(struct fid_ep *ep_fid, const void *buf, size_t len,
				    uint64_t data, uint64_t flags, fi_addr_t dest_addr)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct bolt_operation operation = {
		.op = BOLT_WIRE_MESSAGE, .iov = &iov, .iov_count = 1, .peer = dest_addr,
		.data = data, .flags = flags | FI_INJECT, .silent_inject = true,
	};

	return bolt_operation_transmit(bolt_operation_endpoint(ep_fid), &operation);
}

static ssize_t bolt_msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			       fi_addr_t dest_addr)
{
	return bolt_msg_inject_data(ep_fid, buf, len, 0, 0, dest_addr);
}

static ssize_t bolt_msg_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				   uint64_t data, fi_addr_t dest_addr)
{
	return bolt_msg_inject_data(ep_fid, buf, len, data, FI_REMOTE_CQ_DATA, dest_addr);
}

struct fi_ops_msg bolt_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = bolt_msg_recv,
	.recvv = bolt_msg_recvv,
	.recvmsg = bolt_msg_recvmsg,
	.send = bolt_msg_send,
	.sendv = bolt_msg_sendv,
	.sendmsg = bolt_msg_sendmsg,
	.inject = bolt_msg_inject,
	.senddata = bolt_msg_senddata,
	.injectdata = bolt_msg_injectdata,
};
