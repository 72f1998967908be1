/*
 * bolt_collective_join.c: fi_join_collective and the group it makes (an
 * fid_mc, whose fi_mc_addr is the collective address of later operations).
 * Joining connects to every member and runs a barrier among them, so that
 * FI_JOIN_COMPLETE means every member has joined, and every member's
 * liveness is watched from then on. Members agree on the group's tag id
 * without talking: it is a hash of the members' addresses and of how many
 * times this endpoint joined the same members before.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_unsupported.h"
#include "bolt_wait.h"
#include "collective/bolt_collective.h"
#include "platform/bolt_platform.h"

/* Longest a closing group waits for a member's message into a receive it was given. */
#define BOLT_COLLECTIVE_CLOSE_WAIT_MS 2000

/* FNV-1a over the members' addresses, in rank order. */
static uint64_t bolt_collective_members_hash(const struct bolt_collective_member *members, int size)
{
	uint64_t hash = 0xcbf29ce484222325ULL;

	for (int rank = 0; rank < size; rank++) {
		const unsigned char *bytes = (const unsigned char *) &members[rank].address;

		for (size_t i = 0; i < sizeof(members[rank].address); i++)
			hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
	}
	return hash;
}

/* The group's id: the same on every member as long as members join in the same order. */
static int bolt_collective_group_id(struct bolt_collective_endpoint *state,
				    struct bolt_collective_group *group)
{
	uint64_t hash = bolt_collective_members_hash(group->members, group->size);
	struct bolt_collective_join_count *count;

	HASH_FIND(hh, state->join_counts, &hash, sizeof(hash), count);
	if (!count) {
		count = calloc(1, sizeof(*count));
		if (!count)
			return -FI_ENOMEM;
		count->members_hash = hash;
		HASH_ADD(hh, state->join_counts, members_hash, sizeof(count->members_hash), count);
	}
	group->id = (uint32_t) (hash ^ (hash >> 32)) + count->joins++ * 0x9e3779b9u;
	return 0;
}

struct bolt_collective_group *bolt_collective_group_find(struct bolt_endpoint *endpoint,
							 fi_addr_t coll_addr)
{
	struct bolt_collective_group *group;

	if (!bolt_collective_state(endpoint))
		return NULL;
	DL_FOREACH(bolt_collective_state(endpoint)->groups, group)
		if (group->mc_fid.fi_addr == coll_addr && group->joined)
			return group;
	return NULL;
}

static bool bolt_collective_group_close_ready(void *argument)
{
	return bolt_collective_group_quiet(argument);
}

/*
 * A member that has not written a message into the receive it was given
 * within BOLT_COLLECTIVE_CLOSE_WAIT_MS has stalled: its connection fails,
 * which ends the receive (and the queue pair it writes through, if shared),
 * so that nothing lands in memory the application has back.
 */
static void bolt_collective_group_fail_stalled(struct bolt_collective_group *group)
{
	for (int rank = 0; rank < group->size; rank++) {
		struct bolt_connection *connection = group->members[rank].connection;

		if (connection && bolt_peer_busy(connection))
			bolt_connection_fail(connection, FI_ECANCELED,
					     "a closing collective group still waits for its message");
	}
}

/* What bolt_collective_group_members and the join made; the members' connections go on. */
static void bolt_collective_group_free(struct bolt_collective_group *group)
{
	for (int rank = 0; group->members && rank < group->size; rank++)
		if (group->members[rank].connection)
			bolt_connection_release(group->members[rank].connection);
	free(group->members);
	free(group);
}

/*
 * Operations still running are discarded (fi_endpoint(3): nothing is
 * reported), the close returns once none of them can write into the
 * application's buffers, and their sends finish from copies.
 */
static int bolt_collective_group_close(struct fid *fid)
{
	struct bolt_collective_group *group = bolt_container_of(fid, struct bolt_collective_group,
								mc_fid.fid);
	struct bolt_endpoint *endpoint = group->endpoint;
	struct bolt_domain *domain = endpoint->domain;

	bolt_domain_lock(domain);
	group->joined = false;          /* no new operation finds it */
	if (group->active)
		bolt_collective_group_discard(group);
	if (!bolt_collective_group_quiet(group) &&
	    bolt_wait_progress(domain, bolt_collective_group_close_ready, group,
			       BOLT_COLLECTIVE_CLOSE_WAIT_MS)) {
		bolt_collective_group_fail_stalled(group);
		bolt_wait_progress(domain, bolt_collective_group_close_ready, group, -1);
	}
	bolt_collective_group_forget(group);
	DL_DELETE(bolt_collective_state(endpoint)->groups, group);
	bolt_domain_unlock(domain);
	bolt_collective_group_free(group);
	return 0;
}

/* FI_BOLT_COLLECTIVE_GET_CHOICE (fi_ext_bolt.h): how the last operation started runs. */
static int bolt_collective_group_control(struct fid *fid, int command, void *arg)
{
	struct bolt_collective_group *group = bolt_container_of(fid, struct bolt_collective_group,
								 mc_fid.fid);

	if (command != FI_BOLT_COLLECTIVE_GET_CHOICE)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	bolt_domain_lock(group->endpoint->domain);
	*(struct fi_bolt_collective_choice *) arg = group->last_choice;
	bolt_domain_unlock(group->endpoint->domain);
	return 0;
}

static struct fi_ops bolt_collective_group_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_collective_group_close,
	.bind = bolt_no_bind,
	.control = bolt_collective_group_control,
	.ops_open = bolt_no_ops_open,
};

/* The members' addresses and connections, and this endpoint's rank among them. */
static int bolt_collective_group_members(struct bolt_collective_group *group,
					 const fi_addr_t *fi_addrs, size_t count)
{
	struct bolt_endpoint *endpoint = group->endpoint;

	if (!count || count > BOLT_COLLECTIVE_MAX_MEMBERS)
		return -FI_EINVAL;
	group->members = calloc(count, sizeof(*group->members));
	if (!group->members)
		return -FI_ENOMEM;
	group->size = (int) count;
	group->rank = -1;
	for (int rank = 0; rank < group->size; rank++) {
		struct bolt_collective_member *member = &group->members[rank];

		if (bolt_av_lookup_address(endpoint->av, fi_addrs[rank], &member->address))
			return -FI_EINVAL;
		if (!memcmp(&member->address, &endpoint->connection_manager.address, sizeof(member->address)))
			group->rank = rank;
	}
	if (group->rank < 0) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "joining a collective this endpoint is no member of\n");
		return -FI_EINVAL;
	}
	for (int rank = 0; rank < group->size; rank++) {
		if (rank == group->rank)
			continue;
		group->members[rank].connection = bolt_connection_get(&endpoint->connection_manager, &group->members[rank].address);
		if (!group->members[rank].connection)
			return -FI_ENOMEM;
		bolt_connection_hold(group->members[rank].connection);
	}
	return 0;
}

static struct bolt_collective_endpoint *bolt_collective_endpoint_get(struct bolt_endpoint *endpoint)
{
	if (!endpoint->upper_state)
		endpoint->upper_state = calloc(1, sizeof(struct bolt_collective_endpoint));
	return bolt_collective_state(endpoint);
}


/* The members: the AV set's, or an existing group's when the address names one. */
static int bolt_collective_join_members(struct bolt_endpoint *endpoint,
					const struct fi_collective_addr *address,
					struct bolt_collective_group *group)
{
	const struct bolt_av_set *set;
	struct bolt_collective_group *parent;
	fi_addr_t *fi_addrs;
	int ret;

	if (address->set) {
		set = bolt_container_of(address->set, struct bolt_av_set, av_set_fid);
		if (set->av != endpoint->av)
			return -FI_EINVAL;
		return bolt_collective_group_members(group, set->members, set->count);
	}
	parent = bolt_collective_group_find(endpoint, address->coll_addr);
	if (!parent)
		return -FI_EINVAL;
	fi_addrs = calloc((size_t) parent->size, sizeof(*fi_addrs));
	if (!fi_addrs)
		return -FI_ENOMEM;
	for (int rank = 0; rank < parent->size; rank++)
		fi_addrs[rank] = bolt_av_reverse_lookup(endpoint->av, &parent->members[rank].address);
	ret = bolt_collective_group_members(group, fi_addrs, (size_t) parent->size);
	free(fi_addrs);
	return ret;
}

static int bolt_collective_join_check(const struct bolt_endpoint *endpoint, const void *addr,
				      uint64_t flags, struct fid_mc **mc_fid)
{
	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS;      /* multicast groups are not offered */
	if (!addr || !mc_fid)
		return -FI_EINVAL;
	if (!(endpoint->caps & FI_COLLECTIVE) || !endpoint->enabled)
		return -FI_EOPBADSTATE;
	if (!endpoint->eq) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "fi_join_collective needs an event queue bound\n");
		return -FI_ENOEQ;
	}
	return 0;
}

/*
 * Whether the group's progress gives the CPU away when it has nothing to do
 * (FI_BOLT_COLLECTIVE_YIELD): on auto, when more of its members run on this
 * host than this process has CPUs, as Open MPI yields when oversubscribed,
 * since a member spinning on a core its peer needs delays the peer's answer.
 */
static bool bolt_collective_group_yields(const struct bolt_collective_group *group)
{
	const char *mode = group->endpoint->domain->fabric->params.collective_yield;
	const struct bolt_address *own = &group->members[group->rank].address;
	int local = 0;

	if (strcmp(mode, "auto"))
		return !strcmp(mode, "yes");
	for (int rank = 0; rank < group->size; rank++)
		local += group->members[rank].address.family == own->family &&
			 !memcmp(group->members[rank].address.ip, own->ip, sizeof(own->ip));
	return local > bolt_platform_usable_cpus();
}

/* A join is a barrier of the new group that reports on the EQ. */
static int bolt_collective_join_start(struct bolt_collective_group *group, void *context)
{
	struct bolt_collective_operation *operation = calloc(1, sizeof(*operation));
	int ret;

	if (!operation)
		return -FI_ENOMEM;
	ret = bolt_eq_watch(group->endpoint->eq, group->endpoint->domain);
	if (ret) {
		free(operation);
		return ret;
	}
	operation->group = group;
	operation->algorithm = &bolt_collective_direct;
	operation->kind = FI_BARRIER;
	operation->join = true;
	operation->context = context;
	return (int) bolt_collective_operation_start(operation);
}

int bolt_collective_join(struct bolt_endpoint *endpoint, const void *addr, uint64_t flags,
			 struct fid_mc **mc_fid, void *context)
{
	struct bolt_collective_endpoint *state;
	struct bolt_collective_group *group;
	int ret;

	ret = bolt_collective_join_check(endpoint, addr, flags, mc_fid);
	if (ret)
		return ret;
	group = calloc(1, sizeof(*group));
	if (!group)
		return -FI_ENOMEM;
	group->endpoint = endpoint;
	group->mc_fid.fid.fclass = FI_CLASS_MC;
	group->mc_fid.fid.context = context;
	group->mc_fid.fid.ops = &bolt_collective_group_fi_ops;
	group->mc_fid.fi_addr = (fi_addr_t) (uintptr_t) group;
	bolt_domain_lock(endpoint->domain);
	state = bolt_collective_endpoint_get(endpoint);
	ret = state ? bolt_collective_join_members(endpoint, addr, group) : -FI_ENOMEM;
	if (!ret)
		ret = bolt_collective_group_id(state, group);
	if (!ret)
		group->yields = bolt_collective_group_yields(group);
	if (ret) {
		bolt_domain_unlock(endpoint->domain);
		bolt_collective_group_free(group);
		return ret;
	}
	DL_APPEND(state->groups, group);
	ret = bolt_collective_join_start(group, context);
	if (ret)
		DL_DELETE(state->groups, group);
	bolt_domain_unlock(endpoint->domain);
	if (ret) {
		bolt_collective_group_free(group);
		return ret;
	}
	*mc_fid = &group->mc_fid;
	return 0;
}

bool bolt_collective_endpoint_busy(const struct bolt_endpoint *endpoint)
{
	const struct bolt_collective_endpoint *state = bolt_collective_state(endpoint);

	if (!state || !state->groups)
		return false;
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "endpoint closed with collective groups open: close them first\n");
	return true;
}

void bolt_collective_endpoint_destroy(struct bolt_endpoint *endpoint)
{
	struct bolt_collective_endpoint *state = bolt_collective_state(endpoint);
	struct bolt_collective_join_count *count, *next;

	if (!state)
		return;
	bolt_collective_endpoint_free_operations(state);
	HASH_ITER(hh, state->join_counts, count, next) {
		HASH_DEL(state->join_counts, count);
		free(count);
	}
	free(state);
	endpoint->upper_state = NULL;
}
