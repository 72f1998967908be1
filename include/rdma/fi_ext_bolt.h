/*
 * fi_ext_bolt.h: bolt's public extension to libfabric: what applications may
 * use beyond the standard API when they run on the bolt provider.
 */
#ifndef FI_EXT_BOLT_H
#define FI_EXT_BOLT_H

#include <stdint.h>

#include <rdma/fi_domain.h>

/* The name to select bolt with, as in FI_PROVIDER=bolt or hints->fabric_attr->prov_name. */
#define FI_BOLT_PROVIDER_NAME "bolt"

/* bolt's endpoint names are at most this long (NCCL plugins require <= 56). */
#define FI_BOLT_MAX_NAME_LENGTH 56

/*
 * Collective datatypes ML frameworks reduce in, for fi_allreduce and
 * fi_reduce_scatter (FI_SUM, FI_PROD, FI_MIN, FI_MAX) and for the collectives
 * that only move data. The values are those libfabric 2.x gives FI_FLOAT16
 * and FI_BFLOAT16, so code written for either header means the same thing.
 * Elements are 16-bit IEEE binary16 and bfloat16 (the upper half of a
 * float32); each step of a reduction is computed in float32 and rounded to
 * nearest even.
 */
#define FI_BOLT_FLOAT16 ((enum fi_datatype) 16)
#define FI_BOLT_BFLOAT16 ((enum fi_datatype) 17)

/*
 * On an endpoint opened with FI_COLLECTIVE, bolt carries collective traffic
 * as tagged messages whose tag has this bit set: applications keep it clear
 * in their own tags, and no ignore mask reaches across it.
 */
#define FI_BOLT_COLLECTIVE_TAG_BIT (1ULL << 63)

/*
 * Counts, as bolt reads them (libfabric leaves some open):
 *   fi_allreduce       count elements in buf and in result.
 *   fi_allgather       count elements in buf; result holds count from each member, in rank order.
 *   fi_reduce_scatter  count elements in result; buf holds count for each member, in rank order.
 *   fi_alltoall        count elements for each member; buf and result hold group size x count.
 *   fi_broadcast       count elements in buf.
 * A member's rank is its position in the AV set it joined with.
 */

/*
 * How bolt ran a group's last collective operation started, for benchmarks
 * and tuning: fi_control(&mc->fid, FI_BOLT_COLLECTIVE_GET_CHOICE, &choice)
 * on a joined group (fi_bolt(7) has the table it is chosen from). algorithm
 * is "direct", "doubling", "ring" or "chain" (a string that lives as long
 * as the provider); segment_size is the ring's and the chain's, lanes the
 * ring's, 0 for the others; pull is 1 where on RC the members read their
 * rendezvous messages from the sender's buffer, 2 where only the sender's
 * previous member in rank order does, 0 where the sender writes them.
 */
#define FI_BOLT_COLLECTIVE_GET_CHOICE 0xb017
struct fi_bolt_collective_choice {
	const char *algorithm;
	size_t segment_size;
	int lanes;
	int pull;
};

#endif /* FI_EXT_BOLT_H */
