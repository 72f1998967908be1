/*
 * bolt_av_set.c: AV sets: ordered lists of an AV's addresses naming the
 * members of a collective (fi_av_set(3)). Creating and changing them is
 * local; a member's rank is its position. The collective address of a set
 * (fi_av_set_addr) is the set itself, which fi_join_collective reads.
 */
#include <stdlib.h>
#include <string.h>

#include "bolt_unsupported.h"
#include "collective/bolt_collective.h"

#define BOLT_AV_SET_FIRST_CAPACITY 8
#define BOLT_AV_SET_FLAGS (FI_UNIVERSE | FI_BARRIER_SET | FI_BROADCAST_SET | FI_ALLTOALL_SET | \
			   FI_ALLREDUCE_SET | FI_ALLGATHER_SET | FI_REDUCE_SCATTER_SET)

static struct bolt_av_set *bolt_av_set_of(const struct fid_av_set *av_set_fid)
{
	return bolt_container_of(av_set_fid, struct bolt_av_set, av_set_fid);
}

static bool bolt_av_set_contains(const struct bolt_av_set *set, fi_addr_t fi_addr)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->members[i] == fi_addr)
			return true;
	return false;
}

static int bolt_av_set_append(struct bolt_av_set *set, fi_addr_t fi_addr)
{
	fi_addr_t *members;
	size_t capacity;

	if (set->count == set->capacity) {
		capacity = set->capacity ? set->capacity * 2 : BOLT_AV_SET_FIRST_CAPACITY;
		members = realloc(set->members, capacity * sizeof(*members));
		if (!members)
			return -FI_ENOMEM;
		set->members = members;
		set->capacity = capacity;
	}
	set->members[set->count++] = fi_addr;
	return 0;
}

/* Keeps, in order, the members whose presence in other is wanted. */
static void bolt_av_set_filter(struct bolt_av_set *set, const struct bolt_av_set *other, bool wanted)
{
	size_t kept = 0;

	for (size_t i = 0; i < set->count; i++)
		if (bolt_av_set_contains(other, set->members[i]) == wanted)
			set->members[kept++] = set->members[i];
	set->count = kept;
}

/* Both sets must belong to one address vector. */
static int bolt_av_set_check_pair(const struct bolt_av_set *destination,
				  const struct bolt_av_set *source)
{
	if (!source || source->av != destination->av) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "AV set operation on sets of different AVs\n");
		return -FI_EINVAL;
	}
	return 0;
}

static int bolt_av_set_union(struct fid_av_set *destination_fid, const struct fid_av_set *source_fid)
{
	struct bolt_av_set *destination = bolt_av_set_of(destination_fid);
	const struct bolt_av_set *source = source_fid ? bolt_av_set_of(source_fid) : NULL;
	int ret = bolt_av_set_check_pair(destination, source);

	for (size_t i = 0; !ret && i < source->count; i++)
		if (!bolt_av_set_contains(destination, source->members[i]))
			ret = bolt_av_set_append(destination, source->members[i]);
	return ret;
}

/* Intersect keeps the members src has, diff those it lacks; the order stays. */
static int bolt_av_set_keep(struct fid_av_set *destination_fid, const struct fid_av_set *source_fid,
			    bool in_source)
{
	struct bolt_av_set *destination = bolt_av_set_of(destination_fid);
	const struct bolt_av_set *source = source_fid ? bolt_av_set_of(source_fid) : NULL;
	int ret = bolt_av_set_check_pair(destination, source);

	if (!ret)
		bolt_av_set_filter(destination, source, in_source);
	return ret;
}

static int bolt_av_set_intersect(struct fid_av_set *destination_fid,
				 const struct fid_av_set *source_fid)
{
	return bolt_av_set_keep(destination_fid, source_fid, true);
}

static int bolt_av_set_diff(struct fid_av_set *destination_fid, const struct fid_av_set *source_fid)
{
	return bolt_av_set_keep(destination_fid, source_fid, false);
}

/* An address the AV holds now. */
static bool bolt_av_set_address_is_live(const struct bolt_av_set *set, fi_addr_t fi_addr)
{
	struct bolt_address address;
	int ret;

	bolt_domain_lock(set->av->domain);
	ret = bolt_av_lookup_address(set->av, fi_addr, &address);
	bolt_domain_unlock(set->av->domain);
	return !ret;
}

static int bolt_av_set_insert(struct fid_av_set *set_fid, fi_addr_t fi_addr)
{
	struct bolt_av_set *set = bolt_av_set_of(set_fid);

	if (!bolt_av_set_address_is_live(set, fi_addr) || bolt_av_set_contains(set, fi_addr))
		return -FI_EINVAL;
	return bolt_av_set_append(set, fi_addr);
}

static int bolt_av_set_remove(struct fid_av_set *set_fid, fi_addr_t fi_addr)
{
	struct bolt_av_set *set = bolt_av_set_of(set_fid);

	for (size_t i = 0; i < set->count; i++) {
		if (set->members[i] != fi_addr)
			continue;
		memmove(&set->members[i], &set->members[i + 1],
			(set->count - i - 1) * sizeof(*set->members));
		set->count--;
		return 0;
	}
	return -FI_EINVAL;
}

static int bolt_av_set_addr(struct fid_av_set *set_fid, fi_addr_t *coll_addr)
{
	if (!coll_addr)
		return -FI_EINVAL;
	*coll_addr = (fi_addr_t) (uintptr_t) bolt_av_set_of(set_fid);
	return 0;
}

static struct fi_ops_av_set bolt_av_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = bolt_av_set_union,
	.intersect = bolt_av_set_intersect,
	.diff = bolt_av_set_diff,
	.insert = bolt_av_set_insert,
	.remove = bolt_av_set_remove,
	.addr = bolt_av_set_addr,
};

static int bolt_av_set_close(struct fid *fid)
{
	struct bolt_av_set *set = bolt_container_of(fid, struct bolt_av_set, av_set_fid.fid);

	atomic_fetch_sub(&set->av->bind_count, 1);
	free(set->members);
	free(set);
	return 0;
}

static struct fi_ops bolt_av_set_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_av_set_close,
	.bind = bolt_no_bind,
	.control = bolt_no_control,
	.ops_open = bolt_no_ops_open,
};

/* The first members: every address (FI_UNIVERSE), or start_addr to end_addr by stride. */
static int bolt_av_set_fill(struct bolt_av_set *set, const struct fi_av_set_attr *attr)
{
	struct bolt_av *av = set->av;
	fi_addr_t first = 0, last, stride = 1;
	int ret = 0;

	bolt_domain_lock(av->domain);
	last = av->count ? av->count - 1 : 0;
	if (!(attr->flags & FI_UNIVERSE)) {
		first = attr->start_addr;
		last = attr->end_addr;
		stride = attr->stride;
	}
	/* Only addresses the AV holds (fi_av_set(3)): a range past them ends at its last. */
	if (av->count && last > av->count - 1)
		last = av->count - 1;
	for (fi_addr_t fi_addr = first; !ret && av->count && fi_addr <= last; fi_addr += stride) {
		struct bolt_address address;

		if (!bolt_av_lookup_address(av, fi_addr, &address))
			ret = bolt_av_set_append(set, fi_addr);
		/* The next would pass last, or wrap. */
		if (last - fi_addr < stride)
			break;
	}
	bolt_domain_unlock(av->domain);
	return ret;
}

static int bolt_av_set_check_attr(const struct bolt_av *av, const struct fi_av_set_attr *attr)
{
	bool ranged = attr->start_addr != FI_ADDR_NOTAVAIL || attr->end_addr != FI_ADDR_NOTAVAIL;

	if (attr->flags & ~(uint64_t) BOLT_AV_SET_FLAGS) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "AV set flags %#llx not supported\n",
			(unsigned long long) (attr->flags & ~(uint64_t) BOLT_AV_SET_FLAGS));
		return -FI_EBADFLAGS;
	}
	if (attr->comm_key_size || attr->comm_key) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "AV sets with a communication key are not supported\n");
		return -FI_ENOSYS;
	}
	if (!ranged || (attr->flags & FI_UNIVERSE))
		return 0;
	if (av->type != FI_AV_TABLE || attr->start_addr == FI_ADDR_NOTAVAIL ||
	    attr->end_addr == FI_ADDR_NOTAVAIL || attr->start_addr > attr->end_addr || !attr->stride) {
		FI_WARN(&bolt_prov, FI_LOG_AV,
			"an AV set range needs an FI_AV_TABLE, start <= end and a stride\n");
		return -FI_EINVAL;
	}
	return 0;
}

int bolt_av_set_open(struct fid_av *av_fid, struct fi_av_set_attr *attr,
		     struct fid_av_set **av_set_fid, void *context)
{
	struct bolt_av *av = bolt_container_of(av_fid, struct bolt_av, av_fid);
	struct bolt_av_set *set;
	int ret;

	if (!attr || !av_set_fid)
		return -FI_EINVAL;
	ret = bolt_av_set_check_attr(av, attr);
	if (ret)
		return ret;
	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;
	set->av = av;
	set->flags = attr->flags;
	set->av_set_fid.fid.fclass = FI_CLASS_AV_SET;
	set->av_set_fid.fid.context = context;
	set->av_set_fid.fid.ops = &bolt_av_set_fi_ops;
	set->av_set_fid.ops = &bolt_av_set_ops;
	if ((attr->flags & FI_UNIVERSE) || attr->start_addr != FI_ADDR_NOTAVAIL)
		ret = bolt_av_set_fill(set, attr);
	if (ret) {
		free(set->members);
		free(set);
		return ret;
	}
	/* The AV outlives its sets. */
	atomic_fetch_add(&av->bind_count, 1);
	*av_set_fid = &set->av_set_fid;
	return 0;
}
