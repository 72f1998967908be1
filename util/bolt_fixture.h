/*
 * bolt_fixture.h: one process's libfabric objects for the tests and tools,
 * opened and closed in one place: fabric, domain, an RDM endpoint with its
 * CQ, AV and (as asked) an EQ and a remote-write counter, and a collective
 * group. Also the pieces every multi-process test and benchmark repeats:
 * names sent over a socket or shared through a page and inserted into the
 * AV, a barrier on a shared page, waiting for one completion or for a join.
 *
 * Only libfabric's public API is used, so tools that link libfabric alone
 * (util/bolt_bench) link this too. Tests that drive the provider's own entry
 * points pass them in struct bolt_fixture_entry_points. Functions return
 * negative libfabric error codes and never print: they name the call that
 * failed in endpoint->failed_call, for the caller to report as it likes.
 */
#ifndef BOLT_FIXTURE_H
#define BOLT_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

/* How fi_getinfo and fi_fabric are reached: through libfabric, or the provider's own. */
struct bolt_fixture_entry_points {
	int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
};

/* fi_getinfo and fi_fabric: what any application calls. */
extern const struct bolt_fixture_entry_points bolt_fixture_libfabric;

/* What each caller asks for; zero is the default of every field. */
struct bolt_fixture_options {
	const struct bolt_fixture_entry_points *entry_points;   /* NULL: bolt_fixture_libfabric */
	uint32_t version;               /* 0: FI_VERSION(1, 17) */
	const char *node;               /* fi_getinfo's node, service and flags */
	const char *service;
	uint64_t flags;
	enum fi_cq_format cq_format;    /* FI_CQ_FORMAT_UNSPEC: FI_CQ_FORMAT_TAGGED */
	size_t cq_size;                 /* 0: 4096 */
	enum fi_av_type av_type;
	bool event_queue;               /* an EQ bound to the endpoint, for join events */
	bool count_remote_writes;       /* a counter bound to the endpoint for FI_REMOTE_WRITE */
};

/* One endpoint and everything it was opened on and bound to; NULL where not opened. */
struct bolt_fixture_endpoint {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_eq *eq;                      /* options->event_queue */
	struct fid_cntr *remote_writes;         /* options->count_remote_writes */
	struct fid_av_set *set;                 /* bolt_fixture_join_all's group */
	struct fid_mc *mc;
	fi_addr_t coll_addr;
	fi_addr_t peer;                         /* a two-process test's other side */
	bool shares_domain;     /* on another's domain: bolt_fixture_close leaves that open */
	const char *failed_call;                /* the call behind the last error returned */
};

/* An RDM endpoint's hints: caps, and the provider by name unless provider_name is NULL. */
struct fi_info *bolt_fixture_hints(uint64_t caps, const char *provider_name);

/*
 * Opening in steps, for callers that shape them: fi_getinfo with hints, the
 * fabric and the domain; then an endpoint with its own CQ, AV and what options
 * ask on owner's domain (owner may be endpoint itself), bound but not enabled.
 * bolt_fixture_open does both and enables the endpoint.
 */
int bolt_fixture_open_domain(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
			     const struct bolt_fixture_options *options);
int bolt_fixture_open_endpoint(struct bolt_fixture_endpoint *endpoint,
			       const struct bolt_fixture_endpoint *owner,
			       const struct bolt_fixture_options *options);
int bolt_fixture_open(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
		      const struct bolt_fixture_options *options);
/* Closes whatever is open, endpoint first; the first failure, and zeroes endpoint. */
int bolt_fixture_close(struct bolt_fixture_endpoint *endpoint);

/*
 * A region registered on the endpoint's domain; under FI_MR_ENDPOINT also
 * bound to the endpoint and enabled. With keyless_until_enabled (a test of
 * the provider), a region that shows a key before it is enabled is -FI_EOTHER.
 */
int bolt_fixture_register_region(struct bolt_fixture_endpoint *endpoint, void *buffer,
				 size_t length, uint64_t access, uint64_t requested_key,
				 bool keyless_until_enabled, struct fid_mr **mr);

/* Inserts count names, name_stride bytes apart, into the AV; addresses may be NULL. */
int bolt_fixture_insert_names(struct bolt_fixture_endpoint *endpoint, const void *names,
			      size_t name_stride, int count, fi_addr_t *addresses);

/*
 * The socket between two processes. Reads give up after timeout_ms; while
 * nothing has arrived, idle(argument) runs (if given: the reader's progress,
 * so a peer that needs it is served) and its error ends the read.
 */
struct bolt_fixture_idle {
	int (*idle)(void *argument);
	void *argument;
};
int bolt_fixture_socket_write(int socket, const void *data, size_t length);
int bolt_fixture_socket_read(int socket, void *data, size_t length, int timeout_ms,
			     const struct bolt_fixture_idle *idle);
/* Sends this endpoint's name, receives the peer's and inserts it as endpoint->peer. */
int bolt_fixture_exchange_names(struct bolt_fixture_endpoint *endpoint, int socket, int timeout_ms);

/*
 * The next completion on the CQ, in FI_CQ_FORMAT_TAGGED layout; -FI_EAVAIL
 * with error filled, -FI_ETIMEDOUT after timeout_ms, -FI_ECANCELED as soon as
 * *abandoned (if given) is set.
 */
int bolt_fixture_wait_completion(struct bolt_fixture_endpoint *endpoint,
				 struct fi_cq_tagged_entry *entry, struct fi_cq_err_entry *error,
				 int timeout_ms, const atomic_int *abandoned);

/* Joins set and waits for its FI_JOIN_COMPLETE on endpoint->eq (options->event_queue). */
int bolt_fixture_join(struct bolt_fixture_endpoint *endpoint, struct fid_av_set *set,
		      struct fid_mc **mc, fi_addr_t *coll_addr, int timeout_ms);
/* The group of AV addresses 0 to members - 1, joined into endpoint->set, mc and coll_addr. */
int bolt_fixture_join_all(struct bolt_fixture_endpoint *endpoint, int members, int timeout_ms);

/* A barrier for processes that share a page holding it, zeroed before they fork. */
struct bolt_fixture_barrier {
	atomic_int arrived;     /* processes that reached the current barrier */
	atomic_int generation;  /* barriers passed */
	atomic_int departed;    /* members gone for good: later barriers do not wait for them */
	atomic_int failed;      /* set by any member: barriers stop waiting */
};
/* Returns when all members not departed have arrived, or one failed; progresses endpoint. */
void bolt_fixture_barrier_wait(struct bolt_fixture_barrier *barrier, int members,
			       struct bolt_fixture_endpoint *endpoint);

/*
 * The software device's environment for a process about to fork others:
 * this process is on software host host (FI_BOLT_SOFT_HOST), and the
 * Thunderbolt profile's limits (about 10 QPs and 100 MRs a device) are scaled
 * to hosts hosts that share one device here (0: the profile's own limits).
 * With overwrite false, values the caller's environment already has are kept.
 */
void bolt_fixture_set_software_host(int host);
void bolt_fixture_scale_software_limits(int hosts, bool overwrite);

/* Milliseconds since start, on CLOCK_MONOTONIC. */
long bolt_fixture_elapsed_ms(const struct timespec *start);
/*
 * A loss test's software device: ppm per million UC packets dropped, seeded
 * with BOLT_TEST_LOSS_SEED when set (util/bolt_loss_runs.sh runs a test with
 * many), else the tests' own 28; data_writes: RDMA writes of data
 * (FI_BOLT_UC_DATA_WRITES), or messages in their stead. Cleared by
 * bolt_fixture_clear_loss.
 */
void bolt_fixture_set_loss(const char *ppm, bool data_writes);
void bolt_fixture_clear_loss(void);
/*
 * libfabric reads FI_LOG_LEVEL when it initialises, in its first fi_getinfo:
 * this asks it for a provider that does not exist, so that the FI_WARN lines
 * of code called directly (not through libfabric) show.
 */
void bolt_fixture_logging_start(void);
/* A child's exit status, 128 + the signal that killed it, or -1 when waitpid fails. */
int bolt_fixture_process_status(pid_t pid);

#endif /* BOLT_FIXTURE_H */
