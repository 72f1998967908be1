/*
 * bolt_collective_ops.c: fi_ops_collective, the collective calls of an
 * endpoint: argument checks, then an operation started on the group the
 * collective address names. Counts are read as fi_ext_bolt.h says. And
 * what attaches the collectives to an endpoint: these calls, fi_join, and
 * the endpoint's progress and close (bolt_endpoint_upper_ops).
 */
#include <stdlib.h>
#include <string.h>

#include "collective/bolt_collective.h"

/* What one call asks for. */
struct bolt_collective_call {
	enum fi_collective_op kind;
	const void *buffer;
	void *result;
	size_t count;
	fi_addr_t coll_addr;
	fi_addr_t root_addr;
	enum fi_datatype datatype;
	enum fi_op op;
	uint64_t flags;
	void *context;
};

static bool bolt_collective_reduces(enum fi_collective_op kind)
{
	return kind == FI_ALLREDUCE || kind == FI_REDUCE_SCATTER;
}

/* The rank of the member at root_addr in the group; -1 if it is no member. */
static int bolt_collective_root_rank(struct bolt_collective_group *group, fi_addr_t root_addr)
{
	struct bolt_address address;

	if (bolt_av_lookup_address(group->endpoint->av, root_addr, &address))
		return -1;
	for (int rank = 0; rank < group->size; rank++)
		if (!memcmp(&group->members[rank].address, &address, sizeof(address)))
			return rank;
	return -1;
}

static int bolt_collective_check(const struct bolt_collective_call *call,
				 const struct bolt_collective_operation *operation)
{
	size_t shares = bolt_collective_shares(call->kind, (size_t) operation->group->size);

	if (call->kind != FI_BARRIER && !operation->element_size) {
		FI_WARN(&bolt_prov, FI_LOG_EP_DATA, "collective datatype %d not supported\n",
			call->datatype);
		return -FI_EOPNOTSUPP;
	}
	if (bolt_collective_reduces(call->kind) && !operation->reduce) {
		FI_WARN(&bolt_prov, FI_LOG_EP_DATA, "op %d on datatype %d not supported\n", call->op,
			call->datatype);
		return -FI_EOPNOTSUPP;
	}
	/* No buffer longer than a message may be: fi_query_collective's count, for one share. */
	if (operation->element_size && call->count > BOLT_MAX_MSG_SIZE / operation->element_size / shares)
		return -FI_EMSGSIZE;
	if (call->count && (!call->buffer || (call->kind != FI_BROADCAST && !call->result)))
		return -FI_EINVAL;
	if (call->kind == FI_BROADCAST && operation->root < 0)
		return -FI_EINVAL;
	return 0;
}

static ssize_t bolt_collective_call(struct fid_ep *ep_fid, const struct bolt_collective_call *call)
{
	struct bolt_endpoint *endpoint = bolt_container_of(ep_fid, struct bolt_endpoint, ep_fid);
	struct bolt_collective_operation *operation;
	struct bolt_collective_group *group;
	ssize_t ret;

	bolt_domain_lock(endpoint->domain);
	group = bolt_collective_group_find(endpoint, call->coll_addr);
	ret = group ? -FI_ENOMEM : -FI_EINVAL;
	operation = group ? calloc(1, sizeof(*operation)) : NULL;
	if (!operation)
		goto unlock;
	operation->group = group;
	operation->kind = call->kind;
	operation->context = call->context;
	operation->flags = call->flags;
	operation->input = call->buffer;
	operation->result = call->kind == FI_BROADCAST ? (void *) call->buffer : call->result;
	operation->count = call->kind == FI_BARRIER ? 0 : call->count;
	operation->datatype = call->datatype;
	operation->op = call->op;
	operation->element_size = bolt_reduce_datatype_size(call->datatype);
	operation->reduce = bolt_reduce_lookup(call->datatype, call->op);
	operation->root = call->kind == FI_BROADCAST ? bolt_collective_root_rank(group, call->root_addr) : 0;
	ret = bolt_collective_check(call, operation);
	if (ret)
		free(operation);
	else
		ret = bolt_collective_operation_start(operation);
unlock:
	bolt_domain_unlock(endpoint->domain);
	return ret;
}

static ssize_t bolt_collective_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags,
					void *context)
{
	struct bolt_collective_call call = {
		.kind = FI_BARRIER, .coll_addr = coll_addr, .datatype = FI_VOID, .op = FI_NOOP,
		.flags = flags, .context = context,
	};

	return bolt_collective_call(ep, &call);
}

static ssize_t bolt_collective_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
	return bolt_collective_barrier2(ep, coll_addr, 0, context);
}

static ssize_t bolt_collective_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
					 fi_addr_t coll_addr, fi_addr_t root_addr,
					 enum fi_datatype datatype, uint64_t flags, void *context)
{
	struct bolt_collective_call call = {
		.kind = FI_BROADCAST, .buffer = buf, .count = count, .coll_addr = coll_addr,
		.root_addr = root_addr, .datatype = datatype, .op = FI_NOOP, .flags = flags,
		.context = context,
	};

	return bolt_collective_call(ep, &call);
}

/* The collectives with an input and a result buffer. */
static ssize_t bolt_collective_exchange(struct fid_ep *ep, enum fi_collective_op kind,
					const void *buf, size_t count, void *result,
					fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op,
					uint64_t flags, void *context)
{
	struct bolt_collective_call call = {
		.kind = kind, .buffer = buf, .result = result, .count = count,
		.coll_addr = coll_addr, .datatype = datatype, .op = op, .flags = flags,
		.context = context,
	};

	return bolt_collective_call(ep, &call);
}

static ssize_t bolt_collective_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc,
					void *result, void *result_desc, fi_addr_t coll_addr,
					enum fi_datatype datatype, uint64_t flags, void *context)
{
	return bolt_collective_exchange(ep, FI_ALLTOALL, buf, count, result, coll_addr, datatype,
					FI_NOOP, flags, context);
}

static ssize_t bolt_collective_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
					 void *result, void *result_desc, fi_addr_t coll_addr,
					 enum fi_datatype datatype, enum fi_op op, uint64_t flags,
					 void *context)
{
	return bolt_collective_exchange(ep, FI_ALLREDUCE, buf, count, result, coll_addr, datatype,
					op, flags, context);
}

static ssize_t bolt_collective_allgather(struct fid_ep *ep, const void *buf, size_t count, void *desc,
					 void *result, void *result_desc, fi_addr_t coll_addr,
					 enum fi_datatype datatype, uint64_t flags, void *context)
{
	return bolt_collective_exchange(ep, FI_ALLGATHER, buf, count, result, coll_addr, datatype,
					FI_NOOP, flags, context);
}

static ssize_t bolt_collective_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count,
					      void *desc, void *result, void *result_desc,
					      fi_addr_t coll_addr, enum fi_datatype datatype,
					      enum fi_op op, uint64_t flags, void *context)
{
	return bolt_collective_exchange(ep, FI_REDUCE_SCATTER, buf, count, result, coll_addr,
					datatype, op, flags, context);
}

/* fi_reduce, fi_scatter, fi_gather and fi_collectivemsg are not offered (fi_query_collective says so). */
static ssize_t bolt_collective_no_rooted(struct fid_ep *ep, const void *buf, size_t count, void *desc,
					 void *result, void *result_desc, fi_addr_t coll_addr,
					 fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
					 void *context)
{
	return -FI_ENOSYS;
}

static ssize_t bolt_collective_no_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
					 void *result, void *result_desc, fi_addr_t coll_addr,
					 fi_addr_t root_addr, enum fi_datatype datatype, enum fi_op op,
					 uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t bolt_collective_no_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
				      struct fi_ioc *resultv, void **result_desc, size_t result_count,
				      uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_collective bolt_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = bolt_collective_barrier,
	.broadcast = bolt_collective_broadcast,
	.alltoall = bolt_collective_alltoall,
	.allreduce = bolt_collective_allreduce,
	.allgather = bolt_collective_allgather,
	.reduce_scatter = bolt_collective_reduce_scatter,
	.reduce = bolt_collective_no_reduce,
	.scatter = bolt_collective_no_rooted,
	.gather = bolt_collective_no_rooted,
	.msg = bolt_collective_no_msg,
	.barrier2 = bolt_collective_barrier2,
};

static const struct bolt_endpoint_upper_ops bolt_collective_upper_ops = {
	.join = bolt_collective_join,
	.progress = bolt_collective_progress,
	.busy = bolt_collective_endpoint_busy,
	.destroy = bolt_collective_endpoint_destroy,
};

void bolt_collective_endpoint_attach(struct bolt_endpoint *endpoint)
{
	endpoint->upper = &bolt_collective_upper_ops;
	endpoint->ep_fid.collective = &bolt_collective_ops;
}
