/*
 * softrdma_layout.h: the layout of the software device's shared-memory
 * segment (tables of MRs, QPs, CQs and staging channels, devices, attached
 * processes); the functions that keep it are in softrdma_segment.h.
 * Nothing here knows the process-local objects (softrdma_internal.h).
 *
 * Locking: one robust, process-shared mutex guards everything in the
 * segment. Process-local order is: process lock, then a QP's send lock, then
 * the segment lock. Data is copied with no lock held. The ring counters of a
 * staging channel are the exception: each is written by one side only, with
 * release/acquire atomics, while the channel is held.
 */
#ifndef SOFTRDMA_LAYOUT_H
#define SOFTRDMA_LAYOUT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bolt.h"
#include "softrdma/softrdma.h"


#define SOFTRDMA_MAGIC 0x74666f73746c6f62ULL /* "boltsoft" */
#define SOFTRDMA_LAYOUT_VERSION 11

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
	uint8_t acks_lost;      /* its cable carries data but loses RC acknowledgements */
	uint32_t port_changes;  /* times its port went down or up: async events (atomic) */
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
 * A small SEND (up to one Thunderbolt frame, which holds any of bolt's
 * control messages) rides in its receive completion, and the target's poll
 * places it in the receive's buffers, its own memory: the sender makes no
 * system call (cross-memory attach) for it, as a device places a small
 * message without the host's CPU. The target sees the data once it has the
 * completion, and keeps the receive's buffers until then, as it must anyway.
 * The data waits in the CQ's payload slot of its completion's index modulo
 * SOFTRDMA_PAYLOAD_SLOTS (fewer than the completions: an idle CQ costs little
 * memory); a sender lets it ride only while the CQ's consumer is fewer than
 * that many behind, checked in the pass under the lock that pushes the
 * completion. An RC sender must see its target's death, zombies included:
 * the target's anchor tells it runs (softrdma_anchor.c); else it copies, which
 * finds a dead target (UC loses the message to a dead target anyway).
 */
#define SOFTRDMA_COMPLETION_PAYLOAD SOFTRDMA_FRAME_BYTES
#define SOFTRDMA_PAYLOAD_SLOTS 256

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
	uint16_t has_payload;   /* its payload is in the CQ's payloads, at its index modulo
				 * SOFTRDMA_PAYLOAD_SLOTS */
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
				 * when the ring, or the payloads, seem full */
	uint64_t consumed __attribute__((aligned(64)));         /* the consumer's line */
	struct softrdma_shared_completion ring[SOFTRDMA_CQ_RING] __attribute__((aligned(64)));
	struct softrdma_completion_payload payloads[SOFTRDMA_PAYLOAD_SLOTS]; /* touched only when used */
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

/* The fault plan (softrdma_plan.c): faults at times from the segment's set-up. */
#define SOFTRDMA_FAULT_PLAN_EVENTS 16

enum softrdma_fault_kind {
	SOFTRDMA_FAULT_CABLE,   /* both ends of a device's cable */
	SOFTRDMA_FAULT_PORT,    /* one device's port */
	SOFTRDMA_FAULT_ACKS,    /* both ends of a device's cable: RC acknowledgements lost */
};

struct softrdma_fault_event {
	uint64_t at_ns;         /* from the plan's start */
	int32_t host, index;    /* the device */
	uint8_t kind;           /* enum softrdma_fault_kind */
	bool fault;             /* cut / down; false: restore / up */
};

struct softrdma_fault_plan {
	uint64_t start_ns;      /* CLOCK_MONOTONIC, the same for every process of the host */
	uint64_t next_at_ns;    /* absolute; UINT64_MAX: nothing left (read without the lock) */
	uint32_t count;
	uint32_t next;          /* the first event not applied yet */
	struct softrdma_fault_event events[SOFTRDMA_FAULT_PLAN_EVENTS];
};

/*
 * An attached process, known by its pid and its start time: a pid that
 * comes back as another process is not mistaken for it. A process of
 * another pid namespace (a container sharing /dev/shm) cannot be judged
 * from this one, and counts as alive.
 */
struct softrdma_attached_process {
	pid_t pid;              /* 0: a free entry */
	uint32_t unused;
	uint64_t start_time;    /* clock ticks after boot; 0: unknown, the pid alone counts */
	uint64_t pid_namespace; /* its inode number; 0: unknown */
	pthread_mutex_t anchor; /* robust: held while the process runs (softrdma_anchor.c) */
};

/*
 * A segment is complete under its name: its creator builds it under a
 * creation name of its own and renames it into place (softrdma_segment.c).
 */
struct softrdma_segment {
	uint64_t magic;
	uint32_t version;
	uint32_t unused;
	uint64_t size;
	uint32_t unlinked;      /* its name was removed: joiners must start over */
	pthread_mutex_t lock;
	struct softrdma_config config;  /* the first attacher's; its host is meaningless */
	struct softrdma_profile_limits limits;  /* the profile's, with the overrides */
	int32_t hosts;
	int32_t cables;
	int32_t device_count;
	uint32_t next_pd_id;
	struct softrdma_drop_state drop;
	struct softrdma_fault_plan plan;
	struct softrdma_attached_process processes[SOFTRDMA_MAX_PROCESSES];
	struct softrdma_bell bells[SOFTRDMA_MAX_PROCESSES]; /* rung when work is staged for one */
	struct softrdma_shared_device devices[SOFTRDMA_MAX_DEVICES];
	struct softrdma_table mrs;
	struct softrdma_table qps;
	struct softrdma_table cqs;
	struct softrdma_table channels;
};

#endif /* SOFTRDMA_LAYOUT_H */
