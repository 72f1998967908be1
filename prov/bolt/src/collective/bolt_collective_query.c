/*
 * bolt_collective_query.c: fi_query_collective: which collectives, datatypes
 * and operations bolt runs natively, and their limits.
 */
#include "collective/bolt_collective.h"

/* The datatype and op a collective is asked about, checked; 0 or a negative error code. */
static int bolt_collective_query_data(enum fi_collective_op coll, const struct fi_collective_attr *attr)
{
	switch (coll) {
	case FI_BARRIER:
		return 0;       /* moves no data: datatype and op say nothing */
	case FI_BROADCAST:
	case FI_ALLGATHER:
	case FI_ALLTOALL:
		return bolt_reduce_datatype_size(attr->datatype) ? 0 : -FI_EOPNOTSUPP;
	case FI_ALLREDUCE:
	case FI_REDUCE_SCATTER:
		return bolt_reduce_lookup(attr->datatype, attr->op) ? 0 : -FI_EOPNOTSUPP;
	default:
		/* fi_reduce, fi_scatter and fi_gather are not offered. */
		return -FI_EOPNOTSUPP;
	}
}

int bolt_collective_query(struct fid_domain *domain, enum fi_collective_op coll,
			  struct fi_collective_attr *attr, uint64_t flags)
{
	size_t size;
	int ret;

	if (!attr || attr->mode)
		return -FI_EINVAL;
	/* fi_collective(3): FI_SCATTER asks about reduce-scatter. */
	if (flags & FI_SCATTER)
		coll = FI_REDUCE_SCATTER;
	ret = bolt_collective_query_data(coll, attr);
	if (ret)
		return ret;
	size = coll == FI_BARRIER ? 0 : bolt_reduce_datatype_size(attr->datatype);
	attr->datatype_attr.size = size;
	attr->datatype_attr.count = size ? BOLT_MAX_MSG_SIZE / size : 0;
	attr->max_members = BOLT_COLLECTIVE_MAX_MEMBERS;
	return 0;
}
