/*
 * softrdma_internal.h: what the files of the software device share above the
 * segment's layout (softrdma_layout.h): the process-local objects that embed
 * the verbs structures, and the functions one file offers the others.
 */
#ifndef SOFTRDMA_INTERNAL_H
#define SOFTRDMA_INTERNAL_H

#include <errno.h>
#include <sys/uio.h>
#include <time.h>

#include "softrdma/softrdma_layout.h"
#include "softrdma/softrdma_fault.h"
#include "softrdma/softrdma_segment.h"

/* ---- Process-local objects: each embeds its verbs structure first ---- */

struct softrdma_device {
	struct ibv_device ibv;
	int device_id;          /* in the segment's device table */
};

struct softrdma_context {
	struct ibv_context ibv;
	struct softrdma_device *device;
	int children;           /* PDs and CQs: close fails with EBUSY while any */
	/* Async events: the port's changes reported so far, and the state the last said. */
	uint32_t port_changes_reported;
	bool port_reported_active;
	pthread_mutex_t event_lock;
};

struct softrdma_pd {
	struct ibv_pd ibv;
	struct softrdma_context *context;
	uint32_t pd_id;         /* unique across processes */
	int children;           /* MRs and QPs */
};

struct softrdma_mr {
	struct ibv_mr ibv;
	struct softrdma_pd *pd;
	uint32_t index;
};

struct softrdma_cq {
	struct ibv_cq ibv;
	struct softrdma_context *context;
	uint32_t index;
	int children;           /* QPs that complete into it */
	pthread_mutex_t poll_lock; /* this process's pollers, one at a time */
};

/* A send WR as posted, kept until it is processed. */
struct softrdma_send_entry {
	uint64_t wr_id;
	uint64_t sequence;      /* position in the QP's send queue, to retire it */
	uint64_t remote_addr;
	uint64_t next_attempt_ns; /* RC retrying: not before this time */
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_data;      /* network order, as verbs carries it */
	uint32_t rkey;
	int num_sge;
	int rnr_retries_left;   /* receiver not ready (RNR NAK) */
	int retries_left;       /* transport: no answer from the target */
	bool delivered;         /* RC: the target took it, but the cable went with its ack:
				 * a retry is answered without taking it again */
	uint32_t inline_length;
	struct ibv_sge sge[SOFTRDMA_MAX_SGE];
	uint8_t inline_data[SOFTRDMA_MAX_INLINE];
};

struct softrdma_qp {
	struct ibv_qp ibv;
	struct softrdma_pd *pd;
	struct softrdma_cq *send_cq;
	struct softrdma_cq *recv_cq;
	uint32_t index;         /* slot in the shared QP table */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	uint32_t send_depth;    /* WRs the send queue takes outstanding */
	struct ibv_qp_attr attr; /* as last set by modify_qp, for query_qp */
	pthread_mutex_t send_lock; /* the pending ring and send_posted */
	struct softrdma_send_entry *pending; /* WRs not processed yet, in order */
	uint32_t pending_head;
	uint32_t pending_count;
	uint64_t send_posted;
	uint64_t send_retired;  /* WRs before this sequence number are retired (atomic) */
	struct softrdma_qp *next;     /* in the process's list of QPs */
	struct softrdma_qp *previous;
};

/* What this process knows of its attachment. */
struct softrdma_process {
	pthread_mutex_t lock;   /* attach count, devices, the QP list and index */
	int attach_count;
	pid_t pid;              /* the attacher: a forked child must attach again */
	int host;
	int slot;               /* in the segment's process table: its bell is ours */
	enum softrdma_copy_mode copy_mode; /* the segment's: cma or shm */
	pthread_t service_thread; /* shm mode: places staged data (softrdma_service.c) */
	bool service_running;
	uint32_t service_stop;  /* atomic */
	uint32_t service_ready; /* atomic: the thread reached its loop */
	uint32_t service_seen;  /* our bell's rings at the last service by a verbs call (atomic) */
	struct softrdma_segment *segment;
	size_t segment_size;
	softrdma_owner_release release_owner_locked; /* handed to the segment at open */
	char segment_name[160];
	struct stat segment_identity; /* of its file, whose name the last process out removes */
	struct softrdma_device *devices; /* this host's */
	int device_count;
	struct softrdma_qp *qps; /* list of this process's QPs */
	struct softrdma_qp *qps_by_slot[SOFTRDMA_QP_SLOTS]; /* the same, by shared table slot */
	int waiting_qps;        /* QPs holding pending WRs (atomic) */
};

extern struct softrdma_process softrdma_process;
/* ---- softrdma_profile.c ---- */
const char *softrdma_profile_device_prefix(enum softrdma_profile profile);
int softrdma_profile_transport(enum softrdma_profile profile);
enum ibv_mtu softrdma_mtu_enum(int bytes);
void softrdma_limits_effective(const struct softrdma_config *config,
			       struct softrdma_profile_limits *limits);

/* ---- softrdma_reap.c ---- */
/* Frees every MR, QP, CQ and channel pid owns and forgets pid: it died or detached. */
void softrdma_release_owner_locked(struct softrdma_segment *segment, pid_t pid);

/* ---- softrdma_anchor.c ---- */
/* Starts the thread that holds this process's anchor; without it, RC senders copy to us. */
void softrdma_anchor_start(void);
/* Lets go of the anchor: before the process's entry is forgotten. */
void softrdma_anchor_stop(void);
/* A child of fork has no anchor thread. */
void softrdma_anchor_forget(void);
/* Whether pid surely runs: its anchor is held. false tells nothing. */
bool softrdma_anchor_holds_locked(struct softrdma_segment *segment, pid_t pid);

/* ---- softrdma_device.c ---- */
int softrdma_devices_create(void);
void softrdma_devices_destroy(void);

/* ---- softrdma_mr.c ---- */
/* The MR key names, if it covers [addr, addr + length) of PD pd_id with access; else NULL. */
struct softrdma_shared_mr *softrdma_mr_check_locked(struct softrdma_segment *segment,
						    uint32_t key, uint32_t pd_id, int access,
						    uint64_t addr, uint64_t length);
/* Frees the MR at index and its device's count of MRs: dereg_mr, or its owner gone. */
void softrdma_mr_release_locked(struct softrdma_segment *segment, uint32_t index);

/* ---- softrdma_cq.c ---- */
/* payload: a receive completion's data for its poll to place, or NULL. */
int softrdma_cq_push_locked(struct softrdma_segment *segment, int cq_index,
			    const struct ibv_wc *wc, uint32_t qp_index, bool retires,
			    uint64_t sequence, const struct softrdma_completion_payload *payload);
/* Whether the next completion pushed to the CQ at cq_index may carry a payload. */
bool softrdma_cq_payload_room_locked(struct softrdma_segment *segment, int cq_index);
void softrdma_cq_release_locked(struct softrdma_segment *segment, uint32_t index);
/* poll_cq's last step (softrdma_poll.c): up to num_entries completions, or -EOVERFLOW. */
int softrdma_cq_take(struct softrdma_cq *cq, int num_entries, struct ibv_wc *wc);

/* ---- softrdma_qp.c ---- */
struct softrdma_shared_qp *softrdma_qp_shared(struct softrdma_qp *qp);
uint32_t softrdma_qp_state(struct softrdma_qp *qp);
void softrdma_qp_release_locked(struct softrdma_segment *segment, uint32_t index);
/* The send queue's bookkeeping that post_send, modify_qp and destroy_qp share. */
void softrdma_qp_waiting_change(struct softrdma_qp *qp, uint32_t before);
void softrdma_qp_send_discard(struct softrdma_qp *qp);

/* ---- softrdma_modify.c ---- */
/* (softrdma_modify_qp is public) */

/* ---- softrdma_recv.c ---- */
void softrdma_qp_enter_error_locked(struct softrdma_segment *segment, uint32_t index);
void softrdma_receive_complete_locked(struct softrdma_segment *segment, uint32_t qp_index,
				      struct ibv_wc *wc,
				      const struct softrdma_completion_payload *payload);
bool softrdma_receive_pop_locked(struct softrdma_shared_qp *shared,
				 struct softrdma_shared_receive *receive);
/* A sender takes the head receive; it stays outstanding until finished or given back. */
bool softrdma_receive_take_locked(struct softrdma_shared_qp *shared,
				  struct softrdma_shared_receive *receive, uint32_t *epoch);
/* Both do nothing if the QP (index, qpn) is gone or was reset since the take (epoch). */
void softrdma_receive_finish_locked(struct softrdma_segment *segment, uint32_t qp_index,
				    uint32_t qpn, uint32_t epoch, struct ibv_wc *wc,
				    const struct softrdma_completion_payload *payload);
void softrdma_receive_give_back_locked(struct softrdma_segment *segment, uint32_t qp_index,
				       uint32_t qpn, uint32_t epoch,
				       const struct softrdma_shared_receive *receive);
void softrdma_receive_flush_locked(struct softrdma_segment *segment, uint32_t qp_index);
void softrdma_receive_clear_locked(struct softrdma_shared_qp *shared);

/* ---- softrdma_post.c ---- */
void softrdma_send_progress(struct softrdma_qp *qp);
void softrdma_progress_all(void);

/* ---- softrdma_transfer.c ---- */
enum softrdma_transfer_outcome {
	SOFTRDMA_TRANSFER_DONE,
	SOFTRDMA_TRANSFER_WAIT, /* RC retrying: keep it queued */
};
enum softrdma_transfer_outcome softrdma_transfer_execute(struct softrdma_qp *qp,
							 struct softrdma_send_entry *entry);

/* ---- softrdma_copy.c ---- */
/* 0 if this process may use cross-memory attach, else -EPERM, -ENOSYS... */
int softrdma_copy_probe(void);
/* The mode a segment created for this request records (cma or shm). */
int softrdma_copy_choose(enum softrdma_copy_mode requested, int probe,
			 enum softrdma_copy_mode *mode);
/* Whether this process can follow the mode of the segment it joined. */
int softrdma_copy_adopt(enum softrdma_copy_mode segment_mode, int probe);
int softrdma_copy(pid_t pid, bool to_remote, const struct iovec *local, int local_count,
		  const struct iovec *remote, int remote_count);

/* ---- softrdma_bell.c ---- */
uint32_t softrdma_bell_read(struct softrdma_bell *bell);
void softrdma_bell_ring(struct softrdma_bell *bell);
/* Returns once rung past `seen`, after timeout_ns, or spuriously: callers look again. */
void softrdma_bell_wait(struct softrdma_bell *bell, uint32_t seen, uint64_t timeout_ns);

/* ---- softrdma_channel.c ---- */
/* One copy to (to_target) or from the memory of another process, staged. */
struct softrdma_stage {
	pid_t target_pid;
	bool to_target;
	const struct iovec *local;
	int local_count;
	const struct iovec *remote;     /* in the target's memory */
	const uint32_t *remote_keys;    /* one per remote entry */
	int remote_count;
	uint32_t pd_id;                 /* the target QP's */
	int access;                     /* what the keys must grant */
	uint64_t length;
	uint64_t stall_ns;              /* the sender gives up after this long without progress */
};

struct softrdma_shared_channel *softrdma_channel_at(struct softrdma_segment *segment,
						    uint32_t index);
/* The index of a channel set up for stage, or -EBUSY (none free), -ESRCH (no target). */
int softrdma_channel_open_locked(struct softrdma_segment *segment,
				 const struct softrdma_stage *stage);
void softrdma_channel_release_locked(struct softrdma_segment *segment, uint32_t index);
/* For a thread of pid: takes the channel if it is pid's, free and has work. */
bool softrdma_channel_hold_locked(struct softrdma_segment *segment, uint32_t index, pid_t pid);
void softrdma_channel_drop_locked(struct softrdma_segment *segment, uint32_t index);
void softrdma_channel_release_owner_locked(struct softrdma_segment *segment, pid_t pid);
/* Bytes to move next from stream position `position`, not past `end`, in one piece of ring. */
size_t softrdma_channel_step(uint64_t position, uint64_t end);
void softrdma_channel_fill(struct softrdma_shared_channel *channel, uint64_t position,
			   const struct iovec *iov, int count, size_t bytes);
void softrdma_channel_drain(struct softrdma_shared_channel *channel, uint64_t position,
			    const struct iovec *iov, int count, size_t bytes);

/* ---- softrdma_stage.c ---- */
/* 0; -ESRCH: the target died; -EFAULT: its memory went; -ETIMEDOUT: it stalled; -EBUSY. */
int softrdma_stage_copy(const struct softrdma_stage *stage);

/* ---- softrdma_service.c ---- */
int softrdma_service_start(void);
void softrdma_service_stop(void);
/* In a child of fork, which has no service thread. */
void softrdma_service_forget(void);
/* From verbs calls, in shm mode: serves what waits for this process; cheap when nothing does. */
void softrdma_service_poll(void);

/* The device's clock (retry and stall deadlines): inline, read on every send pass. */
static inline uint64_t softrdma_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000000ull + (uint64_t) now.tv_nsec;
}

/* Verbs' convention for calls returning int: the errno, also left in errno. */
static inline int softrdma_fail(int error)
{
	errno = error;
	return error;
}

/* And for calls returning an object: NULL with errno set. */
static inline void *softrdma_fail_null(int error)
{
	errno = error;
	return NULL;
}

#endif /* SOFTRDMA_INTERNAL_H */
