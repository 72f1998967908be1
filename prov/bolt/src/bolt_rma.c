/*
 * bolt_rma.c: fi_ops_rma: writes (with remote CQ data or not) and reads. The
 * target checks every access against its memory region's bounds and rights;
 * a write completes when the target has placed it, a read when its data is
 * back. On UC-only devices the target serves reads by sending the data back.
 */
#include "bolt_operation.h"

static ssize_t bolt_rma_start(struct fid_ep *ep_fid, enum bolt_wire_op op, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t peer, uint64_t address,
			      uint64_t key, uint64_t data, void *context, uint64_t flags)
{
	struct bolt_operation operation = {
		.op = op, .iov = iov, .desc = desc, .iov_count = count, .peer = peer,
		.remote_address = address, .remote_key = key, .data = data,
		.context = context, .flags = flags,
	};

	return bolt_operation_transmit(bolt_operation_endpoint(ep_fid), &operation);
}

static uint64_t bolt_rma_flags(struct fid_ep *ep_fid)
{
	return bolt_operation_endpoint(ep_fid)->transmit_op_flags;
}

static ssize_t bolt_rma_read(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			     fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return bolt_rma_start(ep_fid, BOLT_WIRE_READ_REQUEST, &iov, &desc, 1, src_addr, addr, key, 0,
			      context, bolt_rma_flags(ep_fid));
}

static ssize_t bolt_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			      size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key,
			      void *context)
{
	return bolt_rma_start(ep_fid, BOLT_WIRE_READ_REQUEST, iov, desc, count, src_addr, addr, key,
			      0, context, bolt_rma_flags(ep_fid));
}

/* One remote range per operation: rma_iov_limit is 1. */
static bool bolt_rma_msg_is_valid(const struct fi_msg_rma *msg)
{
	return msg->rma_iov_count == 1 && msg->rma_iov;
}

static ssize_t bolt_rma_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!bolt_rma_msg_is_valid(msg))
		return -FI_EINVAL;
	return bolt_rma_start(ep_fid, BOLT_WIRE_READ_REQUEST, msg->msg_iov, msg->desc,
			      msg->iov_count, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
			      0, msg->context, flags);
}

static ssize_t bolt_rma_write(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			      fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_rma_start(ep_fid, BOLT_WIRE_WRITE, &iov, &desc, 1, dest_addr, addr, key, 0,
			      context, bolt_rma_flags(ep_fid));
}

static ssize_t bolt_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			       size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			       void *context)
{
	return bolt_rma_start(ep_fid, BOLT_WIRE_WRITE, iov, desc, count, dest_addr, addr, key, 0,
			      context, bolt_rma_flags(ep_fid));
}

static ssize_t bolt_rma_writemsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
				 uint64_t flags)
{
	if (!bolt_rma_msg_is_valid(msg))
		return -FI_EINVAL;
	return bolt_rma_start(ep_fid, BOLT_WIRE_WRITE, msg->msg_iov, msg->desc, msg->iov_count,
			      msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data,
			      msg->context, flags);
}

static ssize_t bolt_rma_writedata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				  uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				  void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_rma_start(ep_fid, BOLT_WIRE_WRITE, &iov, &desc, 1, dest_addr, addr, key, data,
			      context, bolt_rma_flags(ep_fid) | FI_REMOTE_CQ_DATA);
}

static ssize_t bolt_rma_inject_data(struct fid_ep *ep_fid, const void *buf, size_t len,
				    uint64_t data, uint64_t flags, fi_addr_t dest_addr,
				    uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct bolt_operation operation = {
		.op = BOLT_WIRE_WRITE, .iov = &iov, .iov_count = 1, .peer = dest_addr,
		.remote_address = addr, .remote_key = key, .data = data,
		.flags = flags | FI_INJECT, .silent_inject = true,
	};

	return bolt_operation_transmit(bolt_operation_endpoint(ep_fid), &operation);
}

static ssize_t bolt_rma_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	return bolt_rma_inject_data(ep_fid, buf, len, 0, 0, dest_addr, addr, key);
}

static ssize_t bolt_rma_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				   uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	return bolt_rma_inject_data(ep_fid, buf, len, data, FI_REMOTE_CQ_DATA, dest_addr, addr, key);
}

struct fi_ops_rma bolt_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = bolt_rma_read,
	.readv = bolt_rma_readv,
	.readmsg = bolt_rma_readmsg,
	.write = bolt_rma_write,
	.writev = bolt_rma_writev,
	.writemsg = bolt_rma_writemsg,
	.inject = bolt_rma_inject,
	.writedata = bolt_rma_writedata,
	.injectdata = bolt_rma_injectdata,
};
