/*
 * bolt_provider.h: the provider's libfabric objects (fabric, domain, endpoint,
 * memory region, completion queue, counter, event queue, address vector), what
 * each holds and how they refer to each other. Each object kind has its own
 * file; this header is where a reader sees them side by side.
 *
 * Locking: FI_THREAD_SAFE with one mutex per domain. Every entry point of a
 * domain's objects takes it, and progress runs under it, so no object needs a
 * lock of its own.
 */
#ifndef BOLT_PROVIDER_H
#define BOLT_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "bolt.h"
#include "bolt_address.h"
#include "connection/bolt_job_key.h"
#include "device/bolt_device.h"
#include "device/bolt_device_probe.h"
#include "rails/bolt_mr_cache.h"
#include "rails/bolt_qp.h"
#include "rails/bolt_rail_port.h"
#include "rails/bolt_slab.h"
#include "verbs/bolt_verbs.h"

#define bolt_container_of(pointer, type, member) \
	((type *) ((char *) (pointer) - offsetof(type, member)))

struct bolt_connection_manager;
struct bolt_endpoint;
struct bolt_link;
struct bolt_control_buffer;
struct bolt_mr;

struct bolt_fabric {
	struct fid_fabric fabric_fid;
	struct bolt_params params;
	struct bolt_verbs verbs;
	atomic_int child_count;         /* domains and event queues open on it */
};

struct bolt_domain {
	struct fid_domain domain_fid;
	struct bolt_fabric *fabric;
	pthread_mutex_t lock;
	struct fi_info *info;           /* as the domain was opened */
	int mr_mode;                    /* the mode bits info's mr_mode puts in force */
	atomic_int child_count;         /* endpoints, CQs, counters, AVs, MRs open on it */
	atomic_int progress_pins;       /* event queue readers driving its progress now (bolt_eq.c) */

	/*
	 * The device port behind the domain: the control rail and its data rails,
	 * each queue pair completing into its handle.cq; and the host's other
	 * ports, over which large transfers stripe to the peers they reach.
	 */
	struct bolt_rail_port primary;
	struct bolt_rail_port stripe_ports[BOLT_MAX_STRIPE_PORTS];
	int stripe_port_count;
	int data_rails;                 /* per connection on primary, for large writes (bolt_data_rail.c) */
	struct bolt_work_completion rail_probe;        /* the wr_id of stripe rails' probes */

	struct bolt_slab_pool control_pool;   /* eager and control messages, both ways */
	struct bolt_control_buffer *control_buffers;    /* a record per control buffer */
	int grants_held;                      /* primary.mr_cache entries held for peers' grants */
	struct bolt_revoke *revokes;          /* closed regions' grants awaiting peers' answers */
	uint64_t next_revoke_id;
	struct bolt_job_key job_key;          /* what side channels prove (bolt_job_key.h) */

	uint64_t domain_id;                   /* random, never 0: how peers tell domains apart */
	struct bolt_link *links;              /* control queue pairs to peer domains (bolt_link.c) */
	struct bolt_link *retired_links;      /* their queue pairs gone, buffers not yet reclaimed */
	bool release_held;                    /* a connection fell under its unexpected limit: links
					       * post their held receives at the next progress */
	struct bolt_endpoint *endpoints;      /* utlist of enabled endpoints, for progress */
	struct bolt_connection_manager *connection_managers;   /* utlist, every endpoint's */
	uint64_t poll_generation;             /* times the device CQs were polled empty */
	uint64_t progress_count;              /* progress calls: every few read the port events */
	uint64_t ports_watched_ns;            /* and before UC stripes, at most this often */
	struct bolt_mr *mrs;                  /* without FI_MR_ENDPOINT: enabled MRs by key */
	uint64_t next_mr_key;                 /* FI_MR_PROV_KEY: the next key bolt gives */
};

/* FI_BOLT_LIVENESS_TIMEOUT in nanoseconds: how long a silent peer is given, for deadlines. */
static inline uint64_t bolt_domain_liveness_ns(const struct bolt_domain *domain)
{
	return (uint64_t) domain->fabric->params.liveness_timeout * 1000000ULL;
}

/*
 * Whether the application's data (large messages, writes, reads written
 * back) may go by RDMA write from port: where the device writes, and, on UC,
 * unless FI_BOLT_UC_DATA_WRITES says no (a lost write is not written again
 * yet; messages are sent again).
 */
static inline bool bolt_rail_port_data_writes(const struct bolt_domain *domain,
					      const struct bolt_rail_port *port)
{
	return port->rdma_write && (port->qp_type == IBV_QPT_RC || domain->fabric->params.uc_data_writes);
}

/* Takes the domain lock for the length of an API call. */
static inline void bolt_domain_lock(struct bolt_domain *domain)
{
	pthread_mutex_lock(&domain->lock);
}

static inline void bolt_domain_unlock(struct bolt_domain *domain)
{
	pthread_mutex_unlock(&domain->lock);
}

/* Moves every endpoint of the domain forward: device completions, side channels, queues. */
void bolt_domain_progress(struct bolt_domain *domain);
/* Handles device completions until the CQs of every port of the domain are empty. */
void bolt_domain_poll_device(struct bolt_domain *domain);

int bolt_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_fid, void *context);

/*
 * FI_WAIT_FD (bolt_wait.c): an eventfd, readable while its CQ, counter or EQ
 * holds something new for the application; fd is -1 for other wait objects.
 */
struct bolt_wait_fd {
	int fd;
	bool readable;
};

/* ---- Completion queues ---- */

struct bolt_cq_entry {
	struct fi_cq_tagged_entry entry;    /* every format is a prefix of the tagged one */
	fi_addr_t source;
};

struct bolt_cq {
	struct fid_cq cq_fid;
	struct bolt_domain *domain;
	enum fi_cq_format format;
	size_t entry_size;
	enum fi_wait_obj wait_object;
	/* Completions: a ring of successes and a queue of errors, read in the order reported. */
	struct bolt_cq_entry *ring;
	size_t capacity, head, count;
	uint64_t successes_taken;           /* ever; with count, where each error falls among them */
	struct bolt_cq_error *errors;       /* utlist, in arrival order */
	struct bolt_cq_error *lent_error;   /* last read by fi_cq_readerr: its err_data stays
					     * valid until the next read of the CQ */
	atomic_int bind_count;              /* endpoints and counters bound to it */
	atomic_bool signaled;               /* fi_cq_signal wakes a waiter once */
	struct bolt_wait_fd wait_fd;
};

int bolt_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context);
/* A successful completion; the queue grows when full (-FI_ENOMEM if it cannot). Lock held. */
int bolt_cq_report(struct bolt_cq *cq, const struct fi_cq_tagged_entry *completion, fi_addr_t source);
/* A failed operation, read with fi_cq_readerr; error is a positive FI_E* code. */
int bolt_cq_report_error(struct bolt_cq *cq, const struct fi_cq_tagged_entry *completion,
			 size_t overflow_length, int error, int provider_error);

/* ---- Counters ---- */

struct bolt_cntr {
	struct fid_cntr cntr_fid;
	struct bolt_domain *domain;
	uint64_t value;
	uint64_t error_value;
	enum fi_wait_obj wait_object;
	atomic_int bind_count;
	struct bolt_wait_fd wait_fd;        /* readable after a change the application has not read */
};

int bolt_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context);
/* Caller holds the domain lock. */
void bolt_cntr_increment(struct bolt_cntr *cntr);
void bolt_cntr_increment_error(struct bolt_cntr *cntr);

/* ---- Poll sets (bolt_poll.c): CQs and counters of a domain checked together ---- */

int bolt_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **poll_fid);

/* ---- Event queues ---- */

struct bolt_eq {
	struct fid_eq eq_fid;
	struct bolt_fabric *fabric;
	pthread_mutex_t lock;           /* an EQ belongs to the fabric, not to a domain */
	pthread_cond_t changed;
	struct bolt_eq_event *events;   /* utlist, in arrival order */
	struct bolt_eq_event *errors;
	size_t count, capacity;
	atomic_int bind_count;
	struct bolt_wait_fd wait_fd;
	struct bolt_eq_watch *watched;  /* domains whose progress makes events (joins) */
};

int bolt_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context);
/* Queues an event, as fi_eq_write does; a negative error code when full. */
int bolt_eq_report(struct bolt_eq *eq, uint32_t event, const void *data, size_t length,
		   uint64_t flags);
int bolt_eq_report_error(struct bolt_eq *eq, fid_t fid, void *context, uint64_t data,
			 int error, int provider_error);
/*
 * An event will come from domain's progress (a join): reading the EQ drives
 * that progress until as many unwatch calls as watch calls were made.
 */
int bolt_eq_watch(struct bolt_eq *eq, struct bolt_domain *domain);
void bolt_eq_unwatch(struct bolt_eq *eq, struct bolt_domain *domain);

/* ---- Address vectors ---- */

struct bolt_av {
	struct fid_av av_fid;
	struct bolt_domain *domain;
	enum fi_av_type type;
	struct bolt_address *addresses; /* fi_addr_t is the index, for both AV types */
	bool *valid;
	size_t count, capacity;
	uint64_t flags;                 /* as opened: FI_EVENT, FI_SYMMETRIC */
	struct bolt_av_entry *by_address;   /* uthash from address bytes to fi_addr */
	struct bolt_eq *eq;             /* FI_EVENT: insertions complete there */
	atomic_int bind_count;          /* endpoints bound to it */
};

int bolt_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context);
/* The address behind fi_addr; -FI_EINVAL when it names no inserted address. Lock held. */
int bolt_av_lookup_address(const struct bolt_av *av, fi_addr_t fi_addr,
			   struct bolt_address *address);
/* The fi_addr of address, FI_ADDR_NOTAVAIL when it was not inserted. Lock held. */
fi_addr_t bolt_av_reverse_lookup(const struct bolt_av *av, const struct bolt_address *address);

#endif /* BOLT_PROVIDER_H */
