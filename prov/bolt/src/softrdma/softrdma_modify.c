/*
 * softrdma_modify.c: modify_qp, the RESET -> INIT -> RTR -> RTS state
 * machine. Like the kernel's ib_modify_qp_is_ok, each transition has the
 * attributes it requires and those it allows; anything else is EINVAL. RTR
 * checks the path as a real device does: a destination GID no device of the
 * topology has is EINVAL (the JACCL uninitialized-GID bug), and so is a
 * source GID index that is not a non-zero entry of the port's table.
 */
#include <stddef.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_QP_STATES (IBV_QPS_ERR + 1)

/* Masks per transport: [0] UC, [1] RC. */
struct softrdma_transition {
	bool valid;
	int required[2];
	int optional[2];
};

#define SOFTRDMA_INIT_ATTRIBUTES (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define SOFTRDMA_RTR_UC (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define SOFTRDMA_RTR_RC (SOFTRDMA_RTR_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define SOFTRDMA_RTR_OPTIONAL (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)
#define SOFTRDMA_RTS_RC (IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
			 IBV_QP_MAX_QP_RD_ATOMIC)
#define SOFTRDMA_RTS_OPTIONAL_UC (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
				  IBV_QP_PATH_MIG_STATE)
#define SOFTRDMA_RTS_OPTIONAL_RC (SOFTRDMA_RTS_OPTIONAL_UC | IBV_QP_MIN_RNR_TIMER)
#define SOFTRDMA_ALWAYS { .valid = true }

static const struct softrdma_transition
softrdma_transitions[SOFTRDMA_QP_STATES][SOFTRDMA_QP_STATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = SOFTRDMA_ALWAYS,
		[IBV_QPS_INIT] = { true, { SOFTRDMA_INIT_ATTRIBUTES, SOFTRDMA_INIT_ATTRIBUTES } },
		[IBV_QPS_ERR] = SOFTRDMA_ALWAYS,
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = SOFTRDMA_ALWAYS,
		[IBV_QPS_INIT] = { true, { 0, 0 },
				   { SOFTRDMA_INIT_ATTRIBUTES, SOFTRDMA_INIT_ATTRIBUTES } },
		[IBV_QPS_RTR] = { true, { SOFTRDMA_RTR_UC, SOFTRDMA_RTR_RC },
				  { SOFTRDMA_RTR_OPTIONAL, SOFTRDMA_RTR_OPTIONAL } },
		[IBV_QPS_ERR] = SOFTRDMA_ALWAYS,
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = SOFTRDMA_ALWAYS,
		[IBV_QPS_RTS] = { true, { IBV_QP_SQ_PSN, SOFTRDMA_RTS_RC },
				  { SOFTRDMA_RTS_OPTIONAL_UC, SOFTRDMA_RTS_OPTIONAL_RC } },
		[IBV_QPS_ERR] = SOFTRDMA_ALWAYS,
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = SOFTRDMA_ALWAYS,
		[IBV_QPS_RTS] = { true, { 0, 0 },
				  { SOFTRDMA_RTS_OPTIONAL_UC, SOFTRDMA_RTS_OPTIONAL_RC } },
		[IBV_QPS_ERR] = SOFTRDMA_ALWAYS,
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = SOFTRDMA_ALWAYS,
		[IBV_QPS_ERR] = SOFTRDMA_ALWAYS,
	},
};

static int softrdma_modify_reject(const char *reason)
{
	FI_INFO(&bolt_prov, FI_LOG_CORE, "software device: modify_qp: %s\n", reason);
	return EINVAL;
}

static int softrdma_transition_check(uint32_t current, uint32_t next, enum ibv_qp_type type,
				     int attr_mask)
{
	const struct softrdma_transition *transition;
	int rc = type == IBV_QPT_RC, mask = attr_mask & ~IBV_QP_STATE;

	if (current >= SOFTRDMA_QP_STATES || next >= SOFTRDMA_QP_STATES)
		return softrdma_modify_reject("unknown state");
	transition = &softrdma_transitions[current][next];
	if (!transition->valid)
		return softrdma_modify_reject("transition not allowed");
	if ((mask & transition->required[rc]) != transition->required[rc])
		return softrdma_modify_reject("a required attribute is missing");
	if (mask & ~(transition->required[rc] | transition->optional[rc]))
		return softrdma_modify_reject("an attribute not allowed in this transition");
	return 0;
}

/* The path of RTR: returns the destination device through *device_id. */
static int softrdma_address_check(const struct softrdma_segment *segment,
				  const struct ibv_ah_attr *ah_attr, int *device_id)
{
	const struct ibv_global_route *grh = &ah_attr->grh;

	if (!ah_attr->is_global)
		return softrdma_modify_reject("Ethernet link layer: the address needs a GRH");
	if (ah_attr->port_num != SOFTRDMA_PORT)
		return softrdma_modify_reject("address on a port the device does not have");
	/* Every device's table starts with gid_count non-zero entries, the rest zero;
	 * the kernel's GID cache answers ENODATA for an empty entry (rxe). */
	if (grh->sgid_index >= segment->limits.gid_table_length)
		return softrdma_modify_reject("sgid_index beyond the port's GID table");
	if (grh->sgid_index >= segment->limits.gid_count) {
		softrdma_modify_reject("sgid_index names an empty GID entry");
		return ENODATA;
	}
	*device_id = softrdma_device_find_gid(segment, &grh->dgid);
	if (*device_id < 0)
		return softrdma_modify_reject("destination GID of no device (uninitialized GID?)");
	return 0;
}

static int softrdma_values_check(const struct softrdma_segment *segment,
				 const struct ibv_qp_attr *attr, int mask, int *device_id)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC;
	/* rxe takes any path MTU up to the port's max_mtu, above the active one. */
	enum ibv_mtu port_mtu = softrdma_mtu_enum(segment->limits.max_mtu_bytes);

	if ((mask & IBV_QP_PORT) && attr->port_num != SOFTRDMA_PORT)
		return softrdma_modify_reject("port_num");
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return softrdma_modify_reject("pkey_index");
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~access))
		return softrdma_modify_reject("qp_access_flags");
	if ((mask & IBV_QP_PATH_MTU) && (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > port_mtu))
		return softrdma_modify_reject("path_mtu above the port's");
	if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num >= (1u << 24))
		return softrdma_modify_reject("dest_qp_num");
	if (((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > SOFTRDMA_MAX_RD_ATOMIC) ||
	    ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > SOFTRDMA_MAX_RD_ATOMIC))
		return softrdma_modify_reject("rd_atomic above the device's");
	if (((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31) ||
	    ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31) ||
	    ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) ||
	    ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7))
		return softrdma_modify_reject("timer or retry count out of range");
	if (mask & IBV_QP_AV)
		return softrdma_address_check(segment, &attr->ah_attr, device_id);
	return 0;
}

/* Copies the attributes mask names into the QP's record, for query_qp. */
static void softrdma_attr_record(struct ibv_qp_attr *record, const struct ibv_qp_attr *attr,
				 int mask)
{
#define SOFTRDMA_RECORD(flag, field) do { if (mask & (flag)) record->field = attr->field; } while (0)
	SOFTRDMA_RECORD(IBV_QP_PKEY_INDEX, pkey_index);
	SOFTRDMA_RECORD(IBV_QP_PORT, port_num);
	SOFTRDMA_RECORD(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	SOFTRDMA_RECORD(IBV_QP_AV, ah_attr);
	SOFTRDMA_RECORD(IBV_QP_PATH_MTU, path_mtu);
	SOFTRDMA_RECORD(IBV_QP_DEST_QPN, dest_qp_num);
	SOFTRDMA_RECORD(IBV_QP_RQ_PSN, rq_psn);
	SOFTRDMA_RECORD(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	SOFTRDMA_RECORD(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	SOFTRDMA_RECORD(IBV_QP_SQ_PSN, sq_psn);
	SOFTRDMA_RECORD(IBV_QP_TIMEOUT, timeout);
	SOFTRDMA_RECORD(IBV_QP_RETRY_CNT, retry_cnt);
	SOFTRDMA_RECORD(IBV_QP_RNR_RETRY, rnr_retry);
	SOFTRDMA_RECORD(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	SOFTRDMA_RECORD(IBV_QP_ALT_PATH, alt_ah_attr);
	SOFTRDMA_RECORD(IBV_QP_PATH_MIG_STATE, path_mig_state);
#undef SOFTRDMA_RECORD
}

/* RESET forgets everything queued, with no completions, as verbs do. */
static void softrdma_qp_reset_locked(struct softrdma_qp *qp, struct softrdma_shared_qp *shared)
{
	softrdma_receive_clear_locked(shared);
	softrdma_qp_send_discard(qp);
	__atomic_store_n(&qp->send_retired, qp->send_posted, __ATOMIC_RELEASE);
	shared->remote_device = -1;
	shared->remote_qpn = 0;
	shared->access_flags = 0;
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->attr.port_num = SOFTRDMA_PORT;
}

static void softrdma_qp_apply_locked(struct softrdma_segment *segment, struct softrdma_qp *qp,
				     const struct ibv_qp_attr *attr, int mask, uint32_t next,
				     int device_id)
{
	struct softrdma_shared_qp *shared = softrdma_qp_shared(qp);

	if (next == IBV_QPS_RESET) {
		softrdma_qp_reset_locked(qp, shared);
	} else {
		softrdma_attr_record(&qp->attr, attr, mask);
		if (mask & IBV_QP_ACCESS_FLAGS)
			shared->access_flags = (uint32_t) attr->qp_access_flags;
		if (mask & IBV_QP_MIN_RNR_TIMER)
			shared->min_rnr_timer = attr->min_rnr_timer;
		if (mask & IBV_QP_PATH_MTU)
			shared->path_mtu_bytes = 128u << attr->path_mtu;
		if (mask & IBV_QP_DEST_QPN)
			shared->remote_qpn = attr->dest_qp_num;
		if (mask & IBV_QP_AV)
			shared->remote_device = device_id;
	}
	qp->attr.qp_state = (enum ibv_qp_state) next;
	if (next == IBV_QPS_ERR)
		softrdma_qp_enter_error_locked(segment, qp->index);
	else
		__atomic_store_n(&shared->state, next, __ATOMIC_RELEASE);
}

int softrdma_modify_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct softrdma_qp *qp = (struct softrdma_qp *) ibv_qp;
	struct softrdma_segment *segment = softrdma_process.segment;
	uint32_t current, next;
	int device_id = -1, ret;

	if (!qp || !attr)
		return softrdma_fail(EINVAL);
	pthread_mutex_lock(&qp->send_lock);
	softrdma_lock(segment);
	current = softrdma_qp_shared(qp)->state;
	next = (attr_mask & IBV_QP_STATE) ? (uint32_t) attr->qp_state : current;
	ret = softrdma_transition_check(current, next, qp->ibv.qp_type, attr_mask);
	if (!ret && (attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != current)
		ret = softrdma_modify_reject("cur_qp_state is not the QP's state");
	if (!ret)
		ret = softrdma_values_check(segment, attr, attr_mask, &device_id);
	if (!ret)
		softrdma_qp_apply_locked(segment, qp, attr, attr_mask, next, device_id);
	softrdma_unlock(segment);
	if (!ret) {
		qp->ibv.state = (enum ibv_qp_state) next;
		softrdma_send_progress(qp); /* in ERR, flushes what was queued */
	}
	pthread_mutex_unlock(&qp->send_lock);
	return ret ? softrdma_fail(ret) : 0;
}
