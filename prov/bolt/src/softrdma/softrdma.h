/*
 * softrdma.h: the software RDMA device. A user-space RDMA NIC with the
 * semantics of the real ones (limits and failures included) that moves data
 * between processes of one host. Its calls have verbs' own signatures and
 * conventions (NULL or errno), so the verbs access layer can point at them.
 * The state every process shares lives in one shared-memory segment per
 * profile and namespace. Data moves between processes by cross-memory attach
 * (process_vm_writev/readv), a single copy, where the system permits it, and
 * otherwise through staging channels in the segment, two copies (see
 * enum softrdma_copy_mode).
 *
 * Semantics a user of the device must know, beyond verbs' own:
 * - A queue's "outstanding" work requests: on the receive queue, receives
 *   posted and not yet consumed by an incoming message; on the send queue,
 *   WRs posted and not yet retired, where a WR is retired when its own
 *   completion or that of a later WR of the same QP is polled (what real
 *   drivers do: an unsignaled WR frees its slot only with a later signaled
 *   one). Posting past the queue's depth (the smaller of the QP's requested
 *   capacity and the profile's accepted depth) fails with ENOMEM.
 * - create_qp of a type the profile does not offer (RC on thunderbolt, UD
 *   anywhere) fails with EOPNOTSUPP.
 * - config.send_only: post_send of RDMA WRITE, WRITE_WITH_IMM or READ fails
 *   with EOPNOTSUPP and nothing is queued.
 * - Any error completion moves the QP to the error state (verbs' rule); its
 *   remaining work completes with IBV_WC_WR_FLUSH_ERR.
 * - The sender's process does the work, inside post_send; RC work that must
 *   be retried waits in the sender and moves on in its later post_send and
 *   poll_cq calls. A target that does not answer (no route, port down, no
 *   such QP, not in RTR/RTS, process dead) is retried retry_cnt times after
 *   the local ACK timeout (4.096 us * 2^timeout), then IBV_WC_RETRY_EXC_ERR;
 *   a SEND finding no receive, per rnr_retry (7: forever) after the target's
 *   min_rnr_timer, then IBV_WC_RNR_RETRY_EXC_ERR.
 * - Completion channels are not emulated (create_cq with one: EOPNOTSUPP);
 *   a CQ overrun loses completions and poll_cq then returns -EOVERFLOW.
 * - A child of fork must attach again; its parent's objects are not usable in
 *   it (as with verbs without ibv_fork_init).
 * - Copy mode shm: every attached process runs one service thread, its NIC's
 *   receive engine, which places data staged toward the process and supplies
 *   the data of RDMA reads from it; the process's own poll_cq, post_send and
 *   post_recv calls do the same work when they find it waiting. The sender
 *   still does everything else in post_send, and waits there while the target
 *   drains (the link's flow control). A target that moves nothing for the
 *   sender's local ACK timeout (timeout 0: 67 ms; UC: 100 ms) -- a stopped or
 *   hung process -- is a target that does not answer, and so is a device
 *   whose 128 staging channels are all busy: RC retries as above, UC loses
 *   the message, and a receive it had taken goes back to the head of the
 *   target's queue (a receive stays outstanding until its message completes).
 *   A target that dies fails the transfer at once, as in cma mode; one that
 *   deregistered the memory fails it as cma's copy would (the target checks
 *   the keys again whenever it takes the transfer up).
 */
#ifndef SOFTRDMA_H
#define SOFTRDMA_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

enum softrdma_profile {
	SOFTRDMA_PROFILE_THUNDERBOLT,
	SOFTRDMA_PROFILE_ROCEV2,
};

/*
 * How data moves between processes. The segment's creator resolves auto and
 * every process that joins follows it (a process that cannot use cross-memory
 * attach cannot join a cma segment). Within one process, memcpy in any mode.
 */
enum softrdma_copy_mode {
	SOFTRDMA_COPY_AUTO,     /* cma if the attach-time check passes, else shm */
	SOFTRDMA_COPY_CMA,      /* cross-memory attach, one copy; attach fails where forbidden */
	SOFTRDMA_COPY_SHM,      /* staged through the shared segment, two copies */
};

struct softrdma_config {
	enum softrdma_profile profile;
	char topology[64];      /* "single" or "mesh:H" or "mesh:HxC" */
	int host;               /* which emulated host this process is */
	char namespace_name[64];
	int max_mr;             /* per device; 0 keeps the profile's limit */
	int max_qp;             /* per device; 0 keeps the profile's limit */
	int max_wr;             /* accepted outstanding WRs per queue; 0: profile's */
	bool send_only;         /* no RDMA write or read */
	int drop_every;         /* drop every Nth UC packet; 0: none */
	int drop_ppm;           /* drop UC packets at this rate per million */
	unsigned int seed;      /* of the drop generator */
	char fault_plan[256];   /* faults at given times (softrdma_plan.c); "": none */
	enum softrdma_copy_mode copy_mode; /* 0: auto */
};

/* The limits a profile starts from, before the config's overrides. */
struct softrdma_profile_limits {
	int max_mr;             /* 100 on thunderbolt */
	int max_qp;             /* 10 on thunderbolt: the 11th create_qp fails with EBUSY */
	int reported_max_wr;    /* what query_device and create_qp report */
	int accepted_max_wr;    /* what post_send/post_recv accept (63 on thunderbolt) */
	int path_mtu_bytes;     /* the port's active MTU: 1024 on thunderbolt and rocev2 */
	int max_mtu_bytes;      /* the largest path MTU RTR takes (rxe: 4096) */
	bool rc_supported;      /* false on thunderbolt: RC creation fails */
	bool receiver_not_ready_retry; /* false on thunderbolt: such a SEND is lost */
	bool frames_must_match; /* thunderbolt: SEND and receive span as many 4 KiB frames */
	/* rxe (6.1): a receive too short for its SEND, or with a wrong lkey, is a
	 * malformed WQE: LOC_QP_OP_ERR at the receiver, REM_OP_ERR at the sender,
	 * where the IB spec has LOC_LEN_ERR / REM_INV_REQ_ERR and LOC_PROT_ERR. */
	bool receive_errors_as_malformed_wqe;
	int max_sge;            /* scatter/gather entries per WR */
	int max_inline_data;    /* bytes of IBV_SEND_INLINE data per WR */
	int max_cqe;            /* completions a CQ can hold */
	int gid_table_length;   /* entries of the port's GID table, the unused ones zero */
	int gid_count;          /* non-zero entries at its start (2) */
};

int softrdma_profile_parse(const char *name, enum softrdma_profile *profile);
const char *softrdma_profile_name(enum softrdma_profile profile);
void softrdma_profile_limits(enum softrdma_profile profile, struct softrdma_profile_limits *limits);

/* "auto", "cma", "shm": 0 or -EINVAL. */
int softrdma_copy_mode_parse(const char *name, enum softrdma_copy_mode *mode);
const char *softrdma_copy_mode_name(enum softrdma_copy_mode mode);
/* The mode this process moves data with (cma or shm); auto when not attached. */
enum softrdma_copy_mode softrdma_copy_mode_current(void);

/*
 * Attaches this process to the device (reference counted; the first call's
 * config wins, and across processes the config of the segment's creator;
 * a segment whose processes all died is replaced by one with the new
 * config). config->host picks this process's emulated host. 0 or a negative
 * errno: -EINVAL for a bad config, -EPERM/-ENOSYS when the segment's copy
 * mode is cma and cross-memory attach is not permitted, -EACCES when the
 * file under the segment's name is not this user's alone (another owner, a
 * mode other than 0600, more than one link, a symbolic link), -EPROTO for a
 * segment of another layout; a refusal is logged with the file's path.
 * Attaching first removes what jobs of this user left behind (segments whose
 * processes are all gone). Detach undoes one attach; the last process to
 * detach removes the segment, and a process that exits without detaching
 * detaches at its exit.
 */
int softrdma_attach(const struct softrdma_config *config);
void softrdma_detach(void);

/*
 * The name of the shared-memory segment of a config ("/bolt-softrdma-<uid>-
 * <profile>-<namespace>", uid the effective one), for tools and tests that
 * clean up with shm_unlink. The last process to detach unlinks it itself.
 * 0 or -EINVAL.
 */
int softrdma_segment_name(const struct softrdma_config *config, char *name, size_t size);

/* Verbs, with the signatures of the verbs access table. */
struct ibv_device **softrdma_get_device_list(int *num_devices);
void softrdma_free_device_list(struct ibv_device **list);
const char *softrdma_get_device_name(struct ibv_device *device);
struct ibv_context *softrdma_open_device(struct ibv_device *device);
int softrdma_close_device(struct ibv_context *context);
int softrdma_query_device(struct ibv_context *context, struct ibv_device_attr *attr);
int softrdma_query_port(struct ibv_context *context, uint8_t port_num,
			struct ibv_port_attr *attr);
int softrdma_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		       union ibv_gid *gid);
int softrdma_query_gid_type(struct ibv_context *context, uint8_t port_num, int index,
			    enum ibv_gid_type *type);
struct ibv_pd *softrdma_alloc_pd(struct ibv_context *context);
int softrdma_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *softrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
int softrdma_dereg_mr(struct ibv_mr *mr);
struct ibv_cq *softrdma_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				  struct ibv_comp_channel *channel, int comp_vector);
int softrdma_destroy_cq(struct ibv_cq *cq);
int softrdma_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
struct ibv_qp *softrdma_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int softrdma_destroy_qp(struct ibv_qp *qp);
int softrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int softrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_qp_init_attr *init_attr);
int softrdma_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int softrdma_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
const char *softrdma_wc_status_str(enum ibv_wc_status status);
/*
 * The port's asynchronous events (IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE),
 * one per change of its state since the context was opened; never waits:
 * EAGAIN when there is none.
 */
int softrdma_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
void softrdma_ack_async_event(struct ibv_async_event *event);

/*
 * Fault injection, seen by every attached process. Devices are named by
 * emulated host and device index. Cutting the cable of a device takes the
 * ports at both its ends down; a port down is one device's. Through a down
 * port UC messages are lost silently and RC ones fail with
 * IBV_WC_RETRY_EXC_ERR. Drops hit UC packets only (RC retransmits): every
 * Nth packet and/or ppm per million from a generator seeded by seed; a
 * message is lost if any of its path-MTU packets is. Setting the drops
 * restarts the count and the generator. 0 or a negative errno.
 */
int softrdma_fault_cut_link(int host, int device_index, bool cut);
int softrdma_fault_port_down(int host, int device_index, bool down);
int softrdma_fault_drop(int every, int ppm, unsigned int seed);

#endif /* SOFTRDMA_H */
