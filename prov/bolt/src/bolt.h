/*
 * bolt.h: what every layer of the provider shares: the provider object used
 * for logging and parameters, the provider's version, and its tunables.
 */
#ifndef BOLT_H
#define BOLT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define BOLT_PROVIDER_NAME "bolt"
#define BOLT_PROVIDER_VERSION FI_VERSION(0, 1)
/* The libfabric API version bolt was built against and reports. */
#define BOLT_FI_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* libfabric 1.17 leaves FI_EPROTO commented out of fi_errno.h. */
#ifndef FI_EPROTO
#define FI_EPROTO EPROTO
#endif

#define BOLT_ARRAY_LENGTH(array) (sizeof(array) / sizeof((array)[0]))

/* malloc, where the compiler cannot see it (bolt_allocate.c). */
void *bolt_allocate(size_t size);

/*
 * A zeroed record for the per-message path (operations, grants): glibc's
 * calloc skips the thread's cache of freed blocks, which malloc takes from
 * (a pair of 360-byte records here: 112 ns by calloc, 42 ns so).
 */
static inline void *bolt_allocate_zeroed(size_t size)
{
	void *record = bolt_allocate(size);

	return record ? memset(record, 0, size) : NULL;
}

extern struct fi_provider bolt_prov;

/* Every tunable of the provider, read from its FI_BOLT_* parameter. */
struct bolt_params {
	char soft_profile[32];      /* FI_BOLT_SOFT: "", "thunderbolt", "rocev2" */
	int gid_index;              /* FI_BOLT_GID_INDEX: -1 chooses automatically */
	char verbs_library[256];    /* FI_BOLT_VERBS_LIBRARY: "" is the system default */
	char soft_topology[64];     /* FI_BOLT_SOFT_TOPOLOGY: "single", "mesh:H", "mesh:HxC" */
	int soft_host;              /* FI_BOLT_SOFT_HOST: which emulated host this process is */
	char soft_namespace[64];    /* FI_BOLT_SOFT_NAMESPACE: keeps independent jobs apart */
	int soft_max_mr;            /* FI_BOLT_SOFT_MAX_MR: 0 keeps the profile's limit */
	int soft_max_qp;            /* FI_BOLT_SOFT_MAX_QP: 0 keeps the profile's limit */
	int soft_max_wr;            /* FI_BOLT_SOFT_MAX_WR: 0 keeps the profile's limit */
	bool soft_send_only;        /* FI_BOLT_SOFT_SEND_ONLY: no RDMA write or read */
	int soft_drop_every;        /* FI_BOLT_SOFT_DROP_EVERY: drop every Nth UC packet */
	int soft_drop_ppm;          /* FI_BOLT_SOFT_DROP_PPM: drop UC packets at this rate */
	int soft_seed;              /* FI_BOLT_SOFT_SEED: seed of the drop generator */
	char soft_fault_plan[256];  /* FI_BOLT_SOFT_FAULT_PLAN: cables cut, ports down, at times */
	char soft_copy[8];          /* FI_BOLT_SOFT_COPY: "auto", "cma", "shm" */
	char job_key[256];          /* FI_BOLT_JOB_KEY: "" is "uid:<user id>", unauthenticated */
	char job_key_file[1024];    /* FI_BOLT_JOB_KEY_FILE: the key in a file instead */
	char side_channel_address[64];  /* FI_BOLT_SIDE_CHANNEL_ADDRESS: "" chooses */
	int liveness_timeout;       /* FI_BOLT_LIVENESS_TIMEOUT: milliseconds a silent peer host is given */
	bool uc_data_writes;        /* FI_BOLT_UC_DATA_WRITES: application data by RDMA write on UC */
	int uc_write_segment;       /* FI_BOLT_UC_WRITE_SEGMENT: bytes per UC write written again when lost */
	int uc_segment_cost;        /* FI_BOLT_UC_SEGMENT_COST: one more segment's cost, in bytes written */
	int side_channel_pending;   /* FI_BOLT_SIDE_CHANNEL_PENDING: side channels accepted and
				     * not yet confirmed, at most */
	int side_channel_pending_per_source;    /* FI_BOLT_SIDE_CHANNEL_PENDING_PER_SOURCE: of one IP */
	int data_rails;             /* FI_BOLT_DATA_RAILS: queue pairs per peer for bulk writes; -1 chooses */
	int stripe_ports;           /* FI_BOLT_STRIPE_PORTS: other ports to stripe over; -1: all */
	int rail_probe_timeout;     /* FI_BOLT_RAIL_PROBE_TIMEOUT: milliseconds */
	int stripe_threshold;       /* FI_BOLT_STRIPE_THRESHOLD: bytes of a granted write striped from */
	int rendezvous_threshold;   /* FI_BOLT_RENDEZVOUS_THRESHOLD: bytes written by RDMA from */
	int bounce_size;            /* FI_BOLT_BOUNCE_SIZE: most bytes of a message written whole */
	int bounce_threshold;       /* FI_BOLT_BOUNCE_THRESHOLD: fewest bytes of a message written whole */
	int unexpected_limit;       /* FI_BOLT_UNEXPECTED_LIMIT: bytes an endpoint keeps of a peer's
				     * messages no receive has taken, before that peer must wait */
	int unexpected_endpoint_limit;  /* FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT: the same of every peer */
	int receive_grants;         /* FI_BOLT_RECEIVE_GRANTS: receives granted a peer ahead, at most */
	/* The collectives' overrides of their table; -1: as the table says. */
	int collective_ring_threshold;  /* FI_BOLT_COLLECTIVE_RING_THRESHOLD: bytes */
	int collective_doubling_members; /* FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS: group size */
	int collective_segment_size;    /* FI_BOLT_COLLECTIVE_SEGMENT_SIZE: bytes */
	int collective_lanes;           /* FI_BOLT_COLLECTIVE_LANES: segments in flight */
	int collective_rendezvous_threshold; /* FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD: bytes */
	int collective_pull;            /* FI_BOLT_COLLECTIVE_PULL: enum bolt_collective_pull */
	bool collective_grants;         /* FI_BOLT_COLLECTIVE_GRANTS: receives granted ahead */
	char collective_yield[8];       /* FI_BOLT_COLLECTIVE_YIELD: "auto", "yes", "no" */
	bool share_queue_pairs;     /* FI_BOLT_SHARE_QUEUE_PAIRS: connections to one domain share a link */
};

/* Most data rails a connection has on its domain's own port (FI_BOLT_DATA_RAILS). */
#define BOLT_MAX_DATA_RAILS 4
/* Most other ports a domain stripes over (FI_BOLT_STRIPE_PORTS), a data rail on each. */
#define BOLT_MAX_STRIPE_PORTS 4
/* Rails of a connection: those on the domain's port, then one per stripe port. */
#define BOLT_MAX_CONNECTION_RAILS (BOLT_MAX_DATA_RAILS + BOLT_MAX_STRIPE_PORTS)
/*
 * FI_BOLT_RENDEZVOUS_THRESHOLD's default: from 16 KiB, a request, an answer
 * and one RDMA write cost less than four segments copied at both ends.
 */
#define BOLT_RENDEZVOUS_THRESHOLD (16 * 1024)
/*
 * FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD's default: a collective waits on
 * each of its messages, and up to 32 KiB the segments arrive sooner than a
 * request's answer lets the write start (messages of 16 KiB: 0.39 to 0.80
 * of the time of collectives that send them, on RC); streams of
 * point-to-point messages of 16 KiB move 11 % more by rendezvous.
 */
#define BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD (32 * 1024)
#define BOLT_BOUNCE_SIZE (32 * 1024)
/*
 * FI_BOLT_BOUNCE_THRESHOLD's default: messages of up to four segments go
 * faster in segments, each small enough for the device to place it from
 * its receive completion where a write of the whole costs the sender a
 * copy into the peer (the software device's cross-memory attach); from
 * 16 KiB the one write wins (bolt_bench, Thunderbolt profile: 4 KiB latency
 * 3.3-3.7 against 6.2-6.9 us, 14 KiB 6.0-6.7 against 8.8-9.5 us; 16 KiB
 * 10.0-11.7 against 8.5-9.5 us).
 */
#define BOLT_BOUNCE_THRESHOLD (16 * 1024)
/*
 * FI_BOLT_UNEXPECTED_LIMIT's default: many times the 32 receives' worth of
 * 32 KiB messages in flight, small against a process's memory.
 */
#define BOLT_UNEXPECTED_LIMIT (8 << 20)
/* FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT's default: eight peers at their own limit. */
#define BOLT_UNEXPECTED_ENDPOINT_LIMIT (64 << 20)
/*
 * FI_BOLT_SIDE_CHANNEL_PENDING and _PER_SOURCE's defaults: each side channel
 * waiting to be confirmed holds about 25 KB (its stream, and the one that asks
 * its claimed sender), so at most about 6 MB in all; a job's peers connect
 * from many hosts, a few endpoints each.
 */
#define BOLT_SIDE_CHANNEL_PENDING 256
#define BOLT_SIDE_CHANNEL_PENDING_PER_SOURCE 32
/*
 * FI_BOLT_RECEIVE_GRANTS: its default, and the most a peer keeps of them at
 * once. Grants are topped up in batches once the peer holds half or fewer
 * (protocol/bolt_receive_grant.c): at 16, a sender with 16 messages in flight
 * ran out between batches and asked for 2 % of its messages; at 32, none.
 */
#define BOLT_RECEIVE_GRANTS 32
#define BOLT_RECEIVE_GRANTS_MAX 32

/* Defines the parameters with libfabric; safe to call more than once. */
void bolt_params_define(void);
/* Reads the parameters from the environment into params; -FI_EINVAL names the bad one. */
int bolt_params_read(struct bolt_params *params);

#endif /* BOLT_H */
