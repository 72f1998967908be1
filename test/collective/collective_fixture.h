/*
 * collective_fixture.h: N processes ("ranks"), each with an RDM endpoint on
 * the software device, joined into one collective group. The test process
 * forks the ranks; they exchange names and meet at barriers through a shared
 * memory page, then each runs the test's body and exits with its result.
 */
#ifndef COLLECTIVE_FIXTURE_H
#define COLLECTIVE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_ext_bolt.h>

#include "bolt_fixture.h"

#define COLLECTIVE_MAX_RANKS 8
/* Generous: CI runs tests side by side on two cores, and 8 ranks share them. */
#define COLLECTIVE_TIMEOUT_MS 120000

struct collective_rank {
	int rank, size;
	struct bolt_fixture_endpoint endpoint;  /* with its EQ, and (unless no_join) the group */
	fi_addr_t addresses[COLLECTIVE_MAX_RANKS];
	struct collective_shared *shared;
};

struct collective_options {
	const char *profile;            /* "thunderbolt" or "rocev2" */
	int size;                       /* ranks */
	const char *ring_threshold;     /* FI_BOLT_COLLECTIVE_RING_THRESHOLD, NULL: default */
	const char *segment_size;       /* FI_BOLT_COLLECTIVE_SEGMENT_SIZE, NULL: default */
	const char *doubling_members;   /* FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS, NULL: default */
	const char *lanes;              /* FI_BOLT_COLLECTIVE_LANES, NULL: default */
	const char *yield;              /* FI_BOLT_COLLECTIVE_YIELD, NULL: default */
	const char *rendezvous_threshold;       /* FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD, NULL: default */
	const char *unexpected_limit;   /* FI_BOLT_UNEXPECTED_LIMIT, NULL: default */
	const char *pull;               /* FI_BOLT_COLLECTIVE_PULL, NULL: default */
	const char *grants;             /* FI_BOLT_COLLECTIVE_GRANTS, NULL: default */
	const char *grants_at_rank0;    /* the same at rank 0 alone, NULL: as at the others */
	bool no_join;                   /* the body joins by itself */
	bool last_rank_dies;            /* the last rank's body kills it (collective_die) */
	const char *topology;           /* FI_BOLT_SOFT_TOPOLOGY, rank r on host r; NULL: single */
};

/*
 * Runs body(rank, argument) in options->size forked ranks, each with its
 * endpoint open, named in every AV and (unless no_join) joined to the group
 * of all ranks. 0 when every rank's body returned 0.
 */
int collective_run(const struct collective_options *options, const char *tag,
		   int (*body)(struct collective_rank *rank, void *argument), void *argument);

/* Waits for the completion of the operation with context; -FI_EAVAIL with *error filled. */
int collective_wait(struct collective_rank *rank, void *context, int *error);
/* Every rank calls it; returns when all have. */
void collective_barrier(struct collective_rank *rank);
/* Joins the AV set (all ranks unless set given) and waits for FI_JOIN_COMPLETE. */
int collective_join(struct collective_rank *rank, struct fid_av_set *set, struct fid_mc **mc,
		    fi_addr_t *coll_addr);
/* Leaves the job for good: later barriers do not wait for this rank, which is killed. */
void collective_die(struct collective_rank *rank);
/* Puts a value every rank can read after the next barrier, into a slot per rank. */
void collective_publish(struct collective_rank *rank, uint64_t value);
uint64_t collective_published(struct collective_rank *rank, int from);

#endif /* COLLECTIVE_FIXTURE_H */
