/*
 * bolt_operation.h: an operation as the ops tables hand it over: the union of
 * what fi_sendmsg, fi_tsendmsg, fi_writemsg, fi_readmsg and the receives say.
 */
#ifndef BOLT_OPERATION_H
#define BOLT_OPERATION_H

#include "bolt_endpoint.h"

struct bolt_operation {
	enum bolt_wire_op op;           /* MESSAGE, WRITE or READ_REQUEST */
	const struct iovec *iov;
	void **desc;
	size_t iov_count;
	fi_addr_t peer;                 /* destination, or source for receives */
	uint64_t tag;
	uint64_t ignore;
	uint64_t data;
	uint64_t remote_address;
	uint64_t remote_key;
	void *context;
	uint64_t flags;
	bool silent_inject;             /* fi_inject and friends: no completion entry */
};

ssize_t bolt_operation_transmit(struct bolt_endpoint *endpoint, const struct bolt_operation *operation);
ssize_t bolt_operation_receive(struct bolt_endpoint *endpoint, const struct bolt_operation *operation,
			       bool tagged);

static inline struct bolt_endpoint *bolt_operation_endpoint(struct fid_ep *ep_fid)
{
	return bolt_container_of(ep_fid, struct bolt_endpoint, ep_fid);
}

#endif /* BOLT_OPERATION_H */
