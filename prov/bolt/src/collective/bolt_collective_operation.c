/*
 * bolt_collective_operation.c: the life of a collective operation: started
 * by an fi_* call (or a join), advanced by progress as its transfers
 * complete, reported on the CQ (the join on the EQ) and freed. A member that
 * is gone fails every operation of its group at the next progress; a failed
 * operation is reported once none of its receives can write into the
 * application's buffers any more, and freed once its sends are back too.
 * Closing a group discards its operations the same way, reporting nothing.
 */
#include <sched.h>
#include <stdlib.h>
#include <utlist.h>

#include "collective/bolt_collective.h"

void bolt_collective_transfer_done(void *context, int status)
{
	struct bolt_collective_wait *wait = context;
	struct bolt_collective_group *group = wait->operation->group;

	wait->pending--;
	if (group)      /* NULL once its group closed: nobody waits for it */
		bolt_collective_state(group->endpoint)->transfers_done++;
	if (status && !wait->operation->status)
		wait->operation->status = status;
}

static void bolt_collective_operation_free(struct bolt_collective_operation *operation)
{
	bolt_collective_scratch_free(operation);
	free(operation->waits);
	free(operation->lanes);
	free(operation);
}

/* No receive of the operation is still out: none can write into its buffers. */
static bool bolt_collective_receives_quiet(const struct bolt_collective_operation *operation)
{
	for (size_t i = 0; i < operation->wait_count; i++)
		if (operation->waits[i].pending)
			return false;
	return true;
}

/* No transfer of the operation is still out. */
static bool bolt_collective_operation_quiet(const struct bolt_collective_operation *operation)
{
	return !operation->sends.pending && bolt_collective_receives_quiet(operation);
}

static void bolt_collective_report_join(struct bolt_collective_operation *operation)
{
	struct bolt_collective_group *group = operation->group;
	struct bolt_eq *eq = group->endpoint->eq;
	struct fi_eq_entry entry = { .fid = &group->mc_fid.fid, .context = operation->context };
	int ret;

	bolt_eq_unwatch(eq, group->endpoint->domain);
	if (operation->status) {
		ret = bolt_eq_report_error(eq, &group->mc_fid.fid, operation->context, 0,
					   operation->status, 0);
	} else {
		group->joined = true;
		ret = bolt_eq_report(eq, FI_JOIN_COMPLETE, &entry, sizeof(entry), FI_COLLECTIVE);
	}
	if (ret)
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "join completion not reported: %s\n",
			fi_strerror(-ret));
}

static void bolt_collective_report(struct bolt_collective_operation *operation)
{
	struct bolt_endpoint *endpoint = operation->group->endpoint;
	struct bolt_cq *cq = endpoint->transmit_cq;
	struct fi_cq_tagged_entry completion = {
		.op_context = operation->context, .flags = FI_COLLECTIVE,
	};

	operation->group->active--;
	if (operation->join) {
		bolt_collective_report_join(operation);
		return;
	}
	if (!cq)
		return;
	if (operation->status)
		bolt_cq_report_error(cq, &completion, 0, operation->status, 0);
	else if (!endpoint->transmit_selective || (operation->flags & FI_COMPLETION))
		bolt_cq_report(cq, &completion, FI_ADDR_NOTAVAIL);
}

/* A member whose connection failed: its error, else 0. */
static int bolt_collective_members_error(struct bolt_collective_group *group)
{
	for (int rank = 0; rank < group->size; rank++) {
		const struct bolt_connection *connection = group->members[rank].connection;

		if (connection && connection->state == BOLT_CONNECTION_FAILED)
			return connection->error ? connection->error : FI_EIO;
	}
	return 0;
}

/*
 * The application may free the operation's buffers once told it failed:
 * its sends still to go read copies from now on. A connection without
 * memory for one fails, which ends its sends at once.
 */
static bool bolt_collective_detach_list(struct bolt_collective_operation *operation,
					struct bolt_transmit *list)
{
	struct bolt_transmit *transmit;

	DL_FOREACH(list, transmit)
		if (transmit->context == &operation->sends && bolt_transmit_detach(transmit))
			return false;
	return true;
}

static void bolt_collective_detach_sends(struct bolt_collective_operation *operation)
{
	struct bolt_collective_group *group = operation->group;

	for (int rank = 0; rank < group->size; rank++) {
		struct bolt_connection *connection = group->members[rank].connection;

		/* Those waiting for their rendezvous answer write from the copy once it comes. */
		if (connection && (!bolt_collective_detach_list(operation, bolt_peer_of(connection)->waiting) ||
				   !bolt_collective_detach_list(operation, bolt_peer_of(connection)->transmits)))
			bolt_connection_fail(connection, FI_ENOMEM, "no memory to copy a failed collective's send");
	}
}

/*
 * A send of operation posted whole whose writes are still in flight: on UC
 * their lost segments are written again from the application's buffer
 * (bolt_rewrite.c), so it cannot be copied away; it ends once they landed,
 * or with its connection.
 */
static bool bolt_collective_sends_reading(const struct bolt_collective_operation *operation)
{
	const struct bolt_collective_group *group = operation->group;
	struct bolt_transmit *transmit;

	for (int rank = 0; rank < group->size; rank++) {
		struct bolt_connection *connection = group->members[rank].connection;

		if (!connection)
			continue;
		DL_FOREACH(bolt_peer_of(connection)->posted, transmit)
			if (transmit->context == &operation->sends && transmit->in_flight &&
			    !transmit->inject_copy)
				return true;
	}
	return false;
}

/*
 * A failed operation, retired: reported once its receives are back (a
 * message arriving into one still lands in the application's buffer, until
 * it completes or its connection fails) and no send still reads from it,
 * freed once its sends are back too.
 */
static void bolt_collective_retired_progress(struct bolt_collective_endpoint *state,
					     struct bolt_collective_operation *operation)
{
	if (!operation->reported && bolt_collective_receives_quiet(operation) &&
	    !bolt_collective_sends_reading(operation)) {
		bolt_collective_report(operation);
		operation->reported = true;
	}
	if (operation->reported && bolt_collective_operation_quiet(operation)) {
		DL_DELETE(state->retired, operation);
		bolt_collective_operation_free(operation);
	}
}

/* An operation that ends before its transfers: retired until they are back. */
static void bolt_collective_retire(struct bolt_collective_endpoint *state,
				   struct bolt_collective_operation *operation)
{
	struct bolt_endpoint *endpoint = operation->group->endpoint;

	/* Receives still posted come back now; one a message is arriving into cannot. */
	for (size_t i = 0; i < operation->wait_count; i++)
		bolt_collective_cancel(endpoint, &operation->waits[i]);
	bolt_collective_detach_sends(operation);
	DL_DELETE(state->operations, operation);
	DL_APPEND(state->retired, operation);
	bolt_collective_retired_progress(state, operation);
}

static void bolt_collective_fail(struct bolt_collective_endpoint *state,
				 struct bolt_collective_operation *operation)
{
	FI_WARN(&bolt_prov, FI_LOG_EP_DATA, "collective %d (%s) of group %#x failed: %s\n",
		operation->kind, operation->algorithm ? operation->algorithm->name : "-",
		operation->group->id, fi_strerror(operation->status));
	bolt_collective_retire(state, operation);
}

/* Discarded: counted as reported, though nothing is (fi_endpoint(3) at close). */
static void bolt_collective_discard(struct bolt_collective_operation *operation)
{
	struct bolt_collective_group *group = operation->group;

	operation->reported = true;
	group->active--;
	if (operation->join)
		bolt_eq_unwatch(group->endpoint->eq, group->endpoint->domain);
}

void bolt_collective_group_discard(struct bolt_collective_group *group)
{
	struct bolt_collective_endpoint *state = bolt_collective_state(group->endpoint);
	struct bolt_collective_operation *operation, *next;

	FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "group %#x closed with %d operations: discarded\n",
		group->id, group->active);
	DL_FOREACH_SAFE(state->operations, operation, next) {
		if (operation->group != group)
			continue;
		bolt_collective_discard(operation);
		bolt_collective_retire(state, operation);
	}
	DL_FOREACH_SAFE(state->retired, operation, next) {
		if (operation->group != group || operation->reported)
			continue;
		bolt_collective_discard(operation);
		bolt_collective_retired_progress(state, operation);
	}
}

bool bolt_collective_group_quiet(const struct bolt_collective_group *group)
{
	const struct bolt_collective_operation *operation;

	DL_FOREACH(bolt_collective_state(group->endpoint)->retired, operation)
		if (operation->group == group && !bolt_collective_receives_quiet(operation))
			return false;
	return true;
}

void bolt_collective_group_forget(struct bolt_collective_group *group)
{
	struct bolt_collective_operation *operation;

	DL_FOREACH(bolt_collective_state(group->endpoint)->retired, operation)
		if (operation->group == group)
			operation->group = NULL;
}

static void bolt_collective_finish(struct bolt_collective_endpoint *state,
				   struct bolt_collective_operation *operation)
{
	DL_DELETE(state->operations, operation);
	bolt_collective_report(operation);
	bolt_collective_operation_free(operation);
}

/*
 * Progress found operations running, none of whose transfers completed
 * since it last looked: if one's group yields, the CPU goes to its members
 * on this host, which have the next move (bolt_collective_join.c).
 */
static void bolt_collective_idle(struct bolt_collective_endpoint *state)
{
	const struct bolt_collective_operation *operation;
	bool idle = state->transfers_done == state->transfers_seen;

	state->transfers_seen = state->transfers_done;
	if (!idle)
		return;
	DL_FOREACH(state->operations, operation) {
		if (operation->group->yields) {
			sched_yield();
			return;
		}
	}
}

void bolt_collective_progress(struct bolt_endpoint *endpoint)
{
	struct bolt_collective_endpoint *state = bolt_collective_state(endpoint);
	struct bolt_collective_operation *operation, *next;

	if (!state)
		return;
	bolt_collective_idle(state);
	DL_FOREACH_SAFE(state->operations, operation, next) {
		/* A member that is gone breaks the group for good. */
		if (!operation->group->error)
			operation->group->error = bolt_collective_members_error(operation->group);
		if (!operation->status)
			operation->status = operation->group->error;
		if (!operation->status && operation->algorithm->advance(operation))
			bolt_collective_finish(state, operation);
		else if (operation->status)
			bolt_collective_fail(state, operation);
	}
	DL_FOREACH_SAFE(state->retired, operation, next)
		bolt_collective_retired_progress(state, operation);
}

ssize_t bolt_collective_operation_start(struct bolt_collective_operation *operation)
{
	struct bolt_collective_group *group = operation->group;
	struct bolt_collective_endpoint *state = bolt_collective_state(group->endpoint);
	int ret;

	if (group->error) {
		bolt_collective_operation_free(operation);
		return -group->error;
	}
	operation->sequence = group->next_sequence++;
	operation->sends.operation = operation;
	if (!operation->algorithm)
		bolt_collective_algorithm_choose(operation);
	group->last_choice = (struct fi_bolt_collective_choice) {
		.algorithm = operation->algorithm->name,
		.segment_size = bolt_collective_algorithm_pipelines(operation->algorithm) ?
				operation->segment_size : 0,
		.lanes = operation->algorithm == &bolt_collective_ring ? operation->lane_limit : 0,
		.pull = operation->pull,
	};
	group->active++;
	DL_APPEND(state->operations, operation);
	/* Whatever was posted is taken back by progress, which reports the error. */
	ret = operation->algorithm->start(operation);
	if (ret && !operation->status)
		operation->status = -ret;
	return 0;
}

void bolt_collective_endpoint_free_operations(struct bolt_collective_endpoint *state)
{
	struct bolt_collective_operation *operation, *next;

	DL_FOREACH_SAFE(state->operations, operation, next) {
		DL_DELETE(state->operations, operation);
		bolt_collective_operation_free(operation);
	}
	DL_FOREACH_SAFE(state->retired, operation, next) {
		DL_DELETE(state->retired, operation);
		bolt_collective_operation_free(operation);
	}
	bolt_collective_scratch_release_spare(state);
}
