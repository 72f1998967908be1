/*
 * bolt_collective.h: native collectives (layer 7). AV sets name the members,
 * a join makes a group of them (an fid_mc), and each collective operation is
 * run by an algorithm as tagged messages over the endpoint's own
 * point-to-point path, so that every improvement of that path speeds the
 * collectives up too. Everything here runs under the domain lock.
 */
#ifndef BOLT_COLLECTIVE_H
#define BOLT_COLLECTIVE_H

#include <rdma/fi_collective.h>
#include <rdma/fi_ext_bolt.h>

#include "bolt_endpoint.h"
#include "collective/bolt_reduce.h"

/*
 * Tag of a collective message: the reserved bit, the group, the operation's
 * sequence number in its group, the lane (a pipeline of the operation) and
 * the sender's rank. Messages with the same tag from one sender are matched
 * in the order they were sent, so each lane keeps its own order.
 */
#define BOLT_COLLECTIVE_TAG FI_BOLT_COLLECTIVE_TAG_BIT
#define BOLT_COLLECTIVE_GROUP_BITS 24
#define BOLT_COLLECTIVE_SEQUENCE_BITS 16
#define BOLT_COLLECTIVE_LANE_BITS 8
#define BOLT_COLLECTIVE_RANK_BITS 15
#define BOLT_COLLECTIVE_MAX_LANES (1 << BOLT_COLLECTIVE_LANE_BITS)
/* Members a group may have: what the tag's rank field holds. */
#define BOLT_COLLECTIVE_MAX_MEMBERS (1 << BOLT_COLLECTIVE_RANK_BITS)

/* ---- AV sets (bolt_av_set.c) ---- */

struct bolt_av_set {
	struct fid_av_set av_set_fid;
	struct bolt_av *av;
	fi_addr_t *members;             /* in order: a member's rank is its index */
	size_t count, capacity;
	uint64_t flags;
};

int bolt_av_set_open(struct fid_av *av_fid, struct fi_av_set_attr *attr,
		     struct fid_av_set **av_set_fid, void *context);

/* ---- Groups: fi_join_collective and the fid_mc (bolt_collective_join.c) ---- */

struct bolt_collective_member {
	struct bolt_address address;
	struct bolt_connection *connection;     /* NULL for this endpoint itself */
};

struct bolt_collective_group {
	struct fid_mc mc_fid;                   /* mc_fid.fi_addr is the collective address */
	struct bolt_endpoint *endpoint;
	struct bolt_collective_member *members;
	int size;
	int rank;                               /* this endpoint's */
	uint32_t id;                            /* the same on every member */
	uint32_t next_sequence;
	int active;                             /* operations not yet reported, the join included */
	bool joined;
	int error;                              /* a member is gone: positive FI_E* */
	bool yields;                            /* progress with nothing to do gives the CPU away */
	struct fi_bolt_collective_choice last_choice;   /* of the last operation started */
	struct bolt_collective_group *prev, *next;
};

/* A group's identity among the joins of one endpoint. */
struct bolt_collective_join_count {
	uint64_t members_hash;
	uint32_t joins;
	UT_hash_handle hh;
};

/* The collective side of an endpoint (its upper_state), created by its first join. */
struct bolt_collective_endpoint {
	struct bolt_collective_group *groups;
	struct bolt_collective_operation *operations;   /* in flight, in start order */
	struct bolt_collective_operation *retired;      /* failed, transfers still out: reported
							 * once its receives are back */
	struct bolt_collective_join_count *join_counts;
	uint64_t transfers_done;        /* completions of collective transfers, ever */
	uint64_t transfers_seen;        /* ... as the last progress saw them */
	char *spare_scratch;            /* the largest scratch given back, for the next operation */
	size_t spare_scratch_size;
};

/* The endpoint's collective side; NULL before its first join. */
static inline struct bolt_collective_endpoint *
bolt_collective_state(const struct bolt_endpoint *endpoint)
{
	return endpoint->upper_state;
}

int bolt_collective_join(struct bolt_endpoint *endpoint, const void *addr, uint64_t flags,
			 struct fid_mc **mc_fid, void *context);
/* The joined group coll_addr names on endpoint; NULL if none. */
struct bolt_collective_group *bolt_collective_group_find(struct bolt_endpoint *endpoint,
							 fi_addr_t coll_addr);
/* Closing the endpoint: not while groups are open (it says why). */
bool bolt_collective_endpoint_busy(const struct bolt_endpoint *endpoint);
/* Frees what is left, once the endpoint's connections and receives are gone. */
void bolt_collective_endpoint_destroy(struct bolt_endpoint *endpoint);

/* ---- Operations (bolt_collective_operation.c) ---- */

/*
 * Elements of count a member's largest buffer holds per element: one share
 * per member where each has its own (all-gather's result, reduce-scatter's
 * input, all-to-all's both), else just count.
 */
static inline size_t bolt_collective_shares(enum fi_collective_op kind, size_t members)
{
	return kind == FI_ALLGATHER || kind == FI_REDUCE_SCATTER || kind == FI_ALLTOALL ? members : 1;
}

/* What a posted transfer counts down when it completes. */
struct bolt_collective_wait {
	struct bolt_collective_operation *operation;
	int pending;
};

/* One pipeline of an operation: the segments it carries, one after another. */
struct bolt_collective_lane {
	size_t segment;                 /* the one in progress */
	int step;                       /* its step */
	bool done;
};

struct bolt_collective_operation;

struct bolt_collective_algorithm {
	const char *name;
	/* Posts the first transfers; a negative error code if nothing could start. */
	int (*start)(struct bolt_collective_operation *operation);
	/* Moves on after completions; true once every transfer is done and the data in place. */
	bool (*advance)(struct bolt_collective_operation *operation);
};

/*
 * Who copies an operation's rendezvous messages on RC (protocol/bolt_pull.c):
 * the sender writes each, every receiver reads (pulls) its own, or one
 * receiver does, the sender's previous member in rank order, while the
 * sender writes to the others.
 */
enum bolt_collective_pull {
	BOLT_COLLECTIVE_WRITE,
	BOLT_COLLECTIVE_PULL,
	BOLT_COLLECTIVE_PULL_ONE,
};

struct bolt_collective_operation {
	struct bolt_collective_group *group;
	const struct bolt_collective_algorithm *algorithm;
	enum fi_collective_op kind;
	bool join;                      /* a join: reported on the EQ */
	void *context;
	uint64_t flags;
	const char *input;
	char *result;
	size_t count;                   /* as the application gave it (fi_ext_bolt.h) */
	enum fi_datatype datatype;
	enum fi_op op;
	size_t element_size;
	bolt_reduce_function reduce;
	int root;
	uint32_t sequence;
	int status;                     /* 0 or the first positive FI_E* */
	bool reported;                  /* failed: its error is on the CQ (or EQ) */
	char *scratch;                  /* bolt_collective_scratch_allocate's */
	size_t scratch_size;
	/* Algorithm state. */
	struct bolt_collective_wait *waits;     /* each posted receive's, and the sends' */
	size_t wait_count;
	struct bolt_collective_wait sends;
	struct bolt_collective_lane *lanes;
	int lane_count;
	size_t segment_count;           /* ring: segments of a block; chain: of the data */
	size_t segment_elements;
	int steps;                      /* ring: reduce-scatter steps, then all-gather steps */
	int reduce_steps;
	size_t block_elements;          /* ring: the largest block */
	size_t segment_size;            /* ring, chain: bytes of a segment, as the table chose */
	int lane_limit;                 /* ring: lanes at most, as the table chose */
	enum bolt_collective_pull pull; /* RC: who copies its rendezvous messages, as the table chose */
	struct bolt_collective_operation *prev, *next;
};

/* Checks the group, starts the operation and reports failures to start. Lock held. */
ssize_t bolt_collective_operation_start(struct bolt_collective_operation *operation);
/* Advances every operation of the endpoint; reports those that end. Lock held. */
void bolt_collective_progress(struct bolt_endpoint *endpoint);
/* A collective transfer completed (status 0 or a positive FI_E*). */
void bolt_collective_transfer_done(void *context, int status);
/* Frees every operation left, and the spare scratch: the endpoint's connections and receives are gone. */
void bolt_collective_endpoint_free_operations(struct bolt_collective_endpoint *state);

/* ---- Scratch (bolt_collective_scratch.c) ---- */

/*
 * operation->scratch of size bytes (none for 0): the endpoint's spare where
 * it is large enough, else new and zeroed (peers' RDMA writes fill it, which
 * valgrind cannot follow into this process).
 */
int bolt_collective_scratch_allocate(struct bolt_collective_operation *operation, size_t size);
/* operation's scratch, once nothing writes into it: kept as the spare if the larger. */
void bolt_collective_scratch_free(struct bolt_collective_operation *operation);
void bolt_collective_scratch_release_spare(struct bolt_collective_endpoint *state);
/*
 * Closing group: its operations not yet reported are discarded, as when they
 * fail but reporting nothing. Once bolt_collective_group_quiet (none of their
 * receives can write into the application's buffers any more), the group may
 * go: bolt_collective_group_forget leaves their sends, which read copies, to
 * finish without it. Lock held.
 */
void bolt_collective_group_discard(struct bolt_collective_group *group);
bool bolt_collective_group_quiet(const struct bolt_collective_group *group);
void bolt_collective_group_forget(struct bolt_collective_group *group);

/* ---- Transfers (bolt_collective_transfer.c) ---- */

int bolt_collective_send(struct bolt_collective_operation *operation, int lane, int rank,
			 const void *buffer, size_t length);
int bolt_collective_receive(struct bolt_collective_operation *operation, int lane, int rank,
			    void *buffer, size_t length, struct bolt_collective_wait *wait);
/* Takes back the receives still posted for wait: they complete with FI_ECANCELED. */
void bolt_collective_cancel(struct bolt_endpoint *endpoint, struct bolt_collective_wait *wait);

/* ---- Algorithms (bolt_collective_algorithm.c, _direct.c, _doubling.c, _ring.c, _chain.c) ---- */

extern const struct bolt_collective_algorithm bolt_collective_direct;
extern const struct bolt_collective_algorithm bolt_collective_doubling;
extern const struct bolt_collective_algorithm bolt_collective_ring;
extern const struct bolt_collective_algorithm bolt_collective_chain;
/* Whether recursive doubling can run operation: all-gathers and reduce-scatters need 2^k members. */
bool bolt_collective_doubling_can(const struct bolt_collective_operation *operation);
/* The ring or the chain: the algorithms that pipeline segments. */
bool bolt_collective_algorithm_pipelines(const struct bolt_collective_algorithm *algorithm);
/*
 * Sets operation's algorithm, and the ring's segment size and lanes, from the
 * table of bolt_collective_algorithm.c by kind, size, members and device,
 * and the FI_BOLT_COLLECTIVE_* params that override it.
 */
void bolt_collective_algorithm_choose(struct bolt_collective_operation *operation);

/* ---- The libfabric entry points (bolt_collective_ops.c, bolt_collective_query.c) ---- */

/*
 * Puts the collectives on top of a newly opened endpoint: its fi_ops_collective
 * and fi_join, progress and close through its bolt_endpoint_upper_ops.
 */
void bolt_collective_endpoint_attach(struct bolt_endpoint *endpoint);
int bolt_collective_query(struct fid_domain *domain, enum fi_collective_op coll,
			  struct fi_collective_attr *attr, uint64_t flags);

#endif /* BOLT_COLLECTIVE_H */
