/*
 * softrdma_internal.h: what the files of the software device share: the
 * layout of the shared-memory segment (tables of MRs, QPs, CQs and staging
 * channels, devices, attached processes), the process-local objects that
 * embed the verbs structures, and the functions one file offers the others.
 *
 * Locking: one robust, process-shared mutex guards everything in the
 * segment. Process-local order is: process lock, then a QP's send lock, then
 * the segment lock. Data is copied with no lock held. The ring counters of a
 * staging channel are the exception: each is written by one side only, with
 * release/acquire atomics, while the channel is held.
 */
#ifndef SOFTRDMA_INTERNAL_H
#define SOFTRDMA_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "bolt.h"
#include "softrdma/softrdma.h"

#define SOFTRDMA_MAGIC 0x74666f73746c6f62ULL /* "boltsoft" */
#define SOFTRDMA_LAYOUT_VERSION 5

/* Table sizes: generous, since the file is sparse and pages are touched only when used. */
#define SOFTRDMA_MAX_PROCESSES 256
#define SOFTRDMA_MAX_DEVICES 64
#define SOFTRDMA_MR_INDEX_BITS 17
#define SOFTRDMA_MR_SLOTS (1u << SOFTRDMA_MR_INDEX_BITS)
#define SOFTRDMA_QP_INDEX_BITS 12
#define SOFTRDMA_QP_SLOTS (1u << SOFTRDMA_QP_INDEX_BITS)
#define SOFTRDMA_CQ_INDEX_BITS 11
#define SOFTRDMA_CQ_SLOTS (1u << SOFTRDMA_CQ_INDEX_BITS)
#define SOFTRDMA_CHANNEL_INDEX_BITS 7   /* staged transfers in flight at once, device-wide */
#define SOFTRDMA_CHANNEL_SLOTS (1u << SOFTRDMA_CHANNEL_INDEX_BITS)
#define SOFTRDMA_CHANNEL_RING (512u << 10) /* bytes of a channel's ring */
#define SOFTRDMA_CHANNEL_STEP (32u << 10) /* most bytes moved between two looks at the counters */
#define SOFTRDMA_RECEIVE_RING 1024      /* the deepest receive queue any profile accepts */
#define SOFTRDMA_CQ_RING 4096           /* max_cqe of every profile */
#define SOFTRDMA_MAX_SGE 4
#define SOFTRDMA_MAX_INLINE 64
#define SOFTRDMA_FRAME_BYTES 4096       /* thunderbolt's receive frame */
#define SOFTRDMA_MAX_MESSAGE (1ull << 31)
#define SOFTRDMA_MAX_MR_SIZE (1ull << 40)
#define SOFTRDMA_PORT 1
#define SOFTRDMA_MAX_RD_ATOMIC 16
#define SOFTRDMA_RNR_RETRY_FOREVER 7

/* ---- The shared segment ---- */

/* The header every table slot starts with. */
struct softrdma_slot {
	uint32_t in_use;
	uint32_t generation;    /* bumped at each allocation, so stale handles miss */
	uint32_t next_free;     /* free list link: index + 1; 0 ends the list */
	pid_t owner;
};

/* A fixed-size table of slots at an offset of the segment, with a free list. */
struct softrdma_table {
	uint64_t offset;
	uint32_t stride;
	uint32_t zeroed_bytes;  /* of a slot at allocation: all but its ring */
	uint32_t capacity;
	uint32_t index_bits;    /* a handle is generation << index_bits | index */
	uint32_t handle_bits;   /* 32 for MR keys, 24 for QP numbers */
	uint32_t high_water;    /* slots at and past it were never used */
	uint32_t free_head;     /* index + 1; 0: empty */
	uint32_t used;
};

struct softrdma_shared_device {
	int32_t host;
	int32_t index;          /* on its host: the N of rdma_enN or softroceN */
	int32_t peer;           /* the device at the other end of its cable; -1: none */
	int32_t mr_count;
	int32_t qp_count;
	uint8_t port_down;
	uint8_t link_cut;
};

struct softrdma_shared_mr {
	struct softrdma_slot slot;
	uint32_t key;           /* lkey and rkey */
	int32_t device;
	uint32_t pd_id;
	int32_t access;
	uint64_t addr;
	uint64_t length;
};

struct softrdma_shared_receive {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge sge[SOFTRDMA_MAX_SGE];
};

struct softrdma_shared_qp {
	struct softrdma_slot slot;
	uint32_t qpn;
	int32_t device;
	uint32_t pd_id;
	uint32_t type;          /* enum ibv_qp_type */
	uint32_t state;         /* enum ibv_qp_state; a sender may move it to ERR */
	uint32_t access_flags;  /* remote operations the QP accepts */
	uint32_t path_mtu_bytes;
	uint32_t min_rnr_timer;
	uint32_t remote_qpn;
	int32_t remote_device;
	int32_t send_cq;
	int32_t recv_cq;
	uint32_t receive_limit;
	uint32_t receive_head;
	uint32_t receive_count;
	uint32_t receive_taken; /* taken by senders and not completed: still outstanding */
	uint32_t receive_epoch; /* bumped when RESET empties the queue */
	struct softrdma_shared_receive receives[SOFTRDMA_RECEIVE_RING];
};

/*
 * A small SEND's data rides in its receive completion, and the target's poll
 * places it in the receive's buffers, its own memory: the sender makes no
 * system call (cross-memory attach) for it, much as a real device places a
 * small message without the host's CPU. The target sees the data once it
 * has the completion, as it would from a device, and keeps the buffers of a
 * receive until then, as it must anyway. An RC sender must see its
 * target's death, zombies included: it asks a pidfd (softrdma_watch.c), or,
 * where there are none, copies after all (UC loses the message to a dead
 * target anyway).
 */
#define SOFTRDMA_COMPLETION_PAYLOAD 256

struct softrdma_completion_payload {
	uint32_t length;        /* 0: none */
	uint32_t place_count;
	struct {
		uint64_t addr;
		uint64_t length;
	} place[SOFTRDMA_MAX_SGE]; /* where, in the receive's buffers */
	uint8_t data[SOFTRDMA_COMPLETION_PAYLOAD];
};

struct softrdma_shared_completion {
	struct ibv_wc wc;
	uint32_t qp_index;
	uint16_t retires;       /* a send completion: retires its QP's WRs up to sequence */
	uint16_t has_payload;   /* its payload is at the same index of the CQ's payloads */
	uint64_t sequence;
};

/* One cache line: a poll that has no payload to place reads only that. */
_Static_assert(sizeof(struct softrdma_shared_completion) == 64, "a completion is one cache line");

/*
 * Producers (under the segment lock) and the consumer (its poll) keep to
 * lines of their own: a producer in another process that read the line the
 * consumer had just written would wait for it at every completion.
 */
struct softrdma_shared_cq {
	struct softrdma_slot slot;
	int32_t capacity;       /* the cqe the creator asked for */
	uint32_t overflowed;
	uint64_t produced;      /* read without the lock by poll_cq's fast path */
	uint64_t consumed_seen; /* producers' last look at consumed: they look again only
				 * when the ring seems full */
	uint64_t consumed __attribute__((aligned(64)));         /* the consumer's line */
	struct softrdma_shared_completion ring[SOFTRDMA_CQ_RING] __attribute__((aligned(64)));
	struct softrdma_completion_payload payloads[SOFTRDMA_CQ_RING]; /* touched only when used */
};

/* A counter one side rings and the other waits on, across processes. */
struct softrdma_bell {
	uint32_t rings;
	uint32_t sleepers;      /* waiters in the kernel: ringing wakes them */
};

struct softrdma_channel_segment {
	uint64_t addr;
	uint64_t length;
	uint32_t key;           /* the target's lkey (receive) or rkey (RDMA) covering it */
	uint32_t unused;
};

/*
 * A staging channel (copy mode shm): one transfer between the memory of two
 * processes through a ring of bytes. Its sender (slot.owner) opens it for one
 * WR and releases it when done or when it gives up; one thread of its target
 * at a time holds it to place the data in its memory (to_target) or to supply
 * it (RDMA read). It is freed once released and not held. produced and
 * consumed count bytes through the ring since the start of the transfer;
 * each is written by its own side only.
 */
struct softrdma_shared_channel {
	struct softrdma_slot slot;
	pid_t target;
	int32_t target_slot;    /* the target's entry in the process table: its bell */
	uint32_t to_target;     /* 1: SEND or RDMA WRITE; 0: RDMA READ */
	uint32_t held;          /* a thread of the target is at work on it */
	uint32_t released;      /* its sender let go of it */
	int32_t error;          /* for the sender: -EFAULT (memory deregistered), -ESRCH */
	uint32_t pd_id;         /* the target QP's, for the keys */
	int32_t access;         /* what the keys must grant */
	uint32_t segment_count;
	struct softrdma_channel_segment segments[SOFTRDMA_MAX_SGE];
	uint64_t length;
	struct softrdma_bell bell; /* rung by the target at each step */
	uint64_t produced __attribute__((aligned(64)));
	uint64_t consumed __attribute__((aligned(64)));
	uint8_t ring[SOFTRDMA_CHANNEL_RING] __attribute__((aligned(64)));
};

struct softrdma_drop_state {
	int32_t every;
	int32_t ppm;
	uint32_t seed;
	uint64_t packets;       /* UC packets sent since the drop settings were set */
	uint64_t random_state;
};

struct softrdma_segment {
	uint64_t magic;
	uint32_t version;
	uint32_t initialized;   /* set last by the creator; joiners wait for it */
	uint64_t size;
	uint32_t unlinked;      /* the last process detached: joiners must start over */
	pthread_mutex_t lock;
	struct softrdma_config config;  /* the first attacher's; its host is meaningless */
	struct softrdma_profile_limits limits;  /* the profile's, with the overrides */
	int32_t hosts;
	int32_t cables;
	int32_t device_count;
	uint32_t next_pd_id;
	struct softrdma_drop_state drop;
	pid_t processes[SOFTRDMA_MAX_PROCESSES];  /* 0: free */
	struct softrdma_bell bells[SOFTRDMA_MAX_PROCESSES]; /* rung when work is staged for one */
	struct softrdma_shared_device devices[SOFTRDMA_MAX_DEVICES];
	struct softrdma_table mrs;
	struct softrdma_table qps;
	struct softrdma_table cqs;
	struct softrdma_table channels;
};

/* ---- Process-local objects: each embeds its verbs structure first ---- */

struct softrdma_device {
	struct ibv_device ibv;
	int device_id;          /* in the segment's device table */
};

struct softrdma_context {
	struct ibv_context ibv;
	struct softrdma_device *device;
	int children;           /* PDs and CQs: close fails with EBUSY while any */
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

/* Gives back what process pid held in the segment (softrdma_reap.c). */
typedef void (*softrdma_owner_release)(struct softrdma_segment *segment, pid_t pid);

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

/* ---- softrdma_topology.c ---- */
int softrdma_topology_parse(const char *text, int *hosts, int *cables);
void softrdma_topology_build(struct softrdma_segment *segment);
int softrdma_device_id(const struct softrdma_segment *segment, int host, int index);
void softrdma_device_gid(const struct softrdma_segment *segment, int device_id, int gid_index,
			 union ibv_gid *gid);
int softrdma_device_gid_type(const struct softrdma_segment *segment, int gid_index,
			     enum ibv_gid_type *type);
int softrdma_device_find_gid(const struct softrdma_segment *segment, const union ibv_gid *gid);
bool softrdma_port_active(const struct softrdma_segment *segment, int device_id);
bool softrdma_device_reachable(const struct softrdma_segment *segment, int from, int to);

/* ---- softrdma_table.c ---- */
void softrdma_table_init(struct softrdma_table *table, uint64_t offset, uint32_t stride,
			 uint32_t zeroed_bytes, uint32_t index_bits, uint32_t handle_bits);
void softrdma_table_reset(struct softrdma_table *table);
int softrdma_table_alloc(struct softrdma_segment *segment, struct softrdma_table *table,
			 pid_t owner);
void softrdma_table_free(struct softrdma_segment *segment, struct softrdma_table *table,
			 uint32_t index);
void *softrdma_table_slot(struct softrdma_segment *segment, const struct softrdma_table *table,
			  uint32_t index);
uint32_t softrdma_table_handle(const struct softrdma_table *table, const struct softrdma_slot *slot,
			       uint32_t index);
void *softrdma_table_lookup(struct softrdma_segment *segment, const struct softrdma_table *table,
			    uint32_t handle);

/* ---- softrdma_segment.c ---- */
void softrdma_lock(struct softrdma_segment *segment);
void softrdma_unlock(struct softrdma_segment *segment);
bool softrdma_process_exists(pid_t pid);
bool softrdma_process_alive(pid_t pid);
int softrdma_process_slot_locked(const struct softrdma_segment *segment, pid_t pid);
void softrdma_process_forget_locked(struct softrdma_segment *segment, pid_t pid);
/*
 * Has what dead processes held freed, through the release function handed
 * to softrdma_segment_open, as the kernel does when a process exits: a
 * device full of QPs, MRs or channels may be full of the dead.
 */
void softrdma_reap_dead_locked(struct softrdma_segment *segment);
/* Whether a device's count of QPs or MRs is at limit even once the dead are reaped. */
bool softrdma_device_full_locked(struct softrdma_segment *segment, const int32_t *count, int limit);
/*
 * Creates or joins the config's segment and registers this process in it.
 * release_owner_locked gives back what a dead or detaching process held.
 */
int softrdma_segment_open(const struct softrdma_config *config, int hosts, int cables,
			  softrdma_owner_release release_owner_locked);
void softrdma_segment_close(void);

/* ---- softrdma_reap.c ---- */
/* Frees every MR, QP, CQ and channel pid owns and forgets pid: it died or detached. */
void softrdma_release_owner_locked(struct softrdma_segment *segment, pid_t pid);

/* ---- softrdma_watch.c ---- */
/* 1 if pid has exited (zombie or reaped), 0 if it runs, negative if this cannot tell. */
int softrdma_watch_exited(pid_t pid);
void softrdma_watch_close_all(void);
void softrdma_watch_forget(void);

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
/*
 * What one pass over a send queue has seen: WRs processed together go out
 * as one burst, and a target whose memory took a copy of the burst is
 * there for the rest of it, as if it died only once the burst had left.
 */
struct softrdma_burst {
	pid_t alive_pid;        /* 0: none seen yet */
};
enum softrdma_transfer_outcome softrdma_transfer_execute(struct softrdma_qp *qp,
							 struct softrdma_send_entry *entry,
							 struct softrdma_burst *burst);

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

/* ---- softrdma_drop.c ---- */
void softrdma_drop_reset_locked(struct softrdma_segment *segment, int every, int ppm,
				unsigned int seed);
bool softrdma_drop_message_locked(struct softrdma_segment *segment, uint64_t packets);

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
