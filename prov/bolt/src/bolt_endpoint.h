/*
 * bolt_endpoint.h: the RDM endpoint (bolt_ep.c) and the memory regions bound
 * to it (bolt_mr.c), the libfabric objects above the protocol layer. The
 * endpoint holds its connections (layer 4) and its posted receives and
 * unexpected messages (layer 5); the operations it starts go through
 * bolt_operation.c into the protocols.
 */
#ifndef BOLT_ENDPOINT_H
#define BOLT_ENDPOINT_H

#include <sys/uio.h>
#include <uthash.h>

#include "bolt_attr.h"
#include "bolt_provider.h"
#include "protocol/bolt_match.h"
#include "protocol/bolt_protocol.h"

/* Named in libfabric 1.18 and later, right after FI_OPT_XPU_TRIGGER. */
#define BOLT_OPT_CUDA_API_PERMITTED (FI_OPT_XPU_TRIGGER + 1)
#define BOLT_OPT_SHARED_MEMORY_PERMITTED (FI_OPT_XPU_TRIGGER + 2)

enum bolt_counter_kind {
	BOLT_COUNTER_SEND,
	BOLT_COUNTER_RECV,
	BOLT_COUNTER_READ,
	BOLT_COUNTER_WRITE,
	BOLT_COUNTER_REMOTE_READ,
	BOLT_COUNTER_REMOTE_WRITE,
	BOLT_COUNTER_KINDS,
};

struct bolt_mr {
	struct fid_mr mr_fid;
	struct bolt_domain *domain;
	struct bolt_endpoint *endpoint; /* FI_MR_ENDPOINT: bound with fi_mr_bind */
	bool enabled;
	uint64_t access;
	char *address;
	size_t length;
	uint64_t requested_key;         /* without FI_MR_PROV_KEY, the key it gets when enabled */
	/* Held while peers may write it directly: one per port the links to them are on
	 * (bolt_link_port_index). */
	struct bolt_mr_cache_entry *grants[BOLT_LINK_PORTS_MAX];
	UT_hash_handle hh;              /* by key: in the endpoint's or the domain's table */
};

/*
 * A layer above the point-to-point path attached to an endpoint (the
 * collectives): the endpoint calls it through this table without knowing
 * what it is, and keeps the layer's state for it. All but join run with the
 * domain lock held.
 */
struct bolt_endpoint_upper_ops {
	/* fi_join. */
	int (*join)(struct bolt_endpoint *endpoint, const void *addr, uint64_t flags,
		    struct fid_mc **mc_fid, void *context);
	/* Each progress of the endpoint, after its connections'. */
	void (*progress)(struct bolt_endpoint *endpoint);
	/* Whether the endpoint may not close yet; it logs why. */
	bool (*busy)(const struct bolt_endpoint *endpoint);
	/* Frees the layer's state, once the endpoint's connections and receives are gone. */
	void (*destroy)(struct bolt_endpoint *endpoint);
};

struct bolt_endpoint {
	struct fid_ep ep_fid;
	struct bolt_domain *domain;
	struct fi_info *info;
	uint64_t caps;
	uint64_t transmit_op_flags;
	uint64_t receive_op_flags;
	bool enabled;
	/* The application's transmits not yet completed, at most transmit_queue_size
	 * (tx_attr->size): more are refused with -FI_EAGAIN until progress ends some. */
	size_t transmits_outstanding;
	size_t transmit_queue_size;

	struct bolt_cq *transmit_cq;
	struct bolt_cq *receive_cq;
	bool transmit_selective;        /* FI_SELECTIVE_COMPLETION on the transmit CQ */
	bool receive_selective;
	struct bolt_cntr *counters[BOLT_COUNTER_KINDS];
	struct bolt_av *av;
	struct bolt_eq *eq;

	struct bolt_connection_manager connection_manager;  /* its address, side channel, peers */

	struct bolt_receive *posted;            /* fi_recv, in order */
	uint64_t receives_posted;               /* numbers them (bolt_receive's sequence) */
	/* Receives granted ahead: untagged ones for any source go to grant_peer, */
	struct bolt_connection *grant_peer;
	struct bolt_connection *last_large_sender;      /* whom two large messages in a row name */
	uint32_t unspecified_grants;            /* granted receives for any source, all peers' */
	uint32_t grant_revokes_waiting;         /* peers asked to give grants back, not answered */
	struct bolt_receive *posted_tagged;     /* fi_trecv, in order */
	struct bolt_unexpected *unexpected;
	struct bolt_unexpected *unexpected_tagged;
	size_t unexpected_bytes;                /* kept of every peer's unexpected messages
						 * (FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT) */

	struct bolt_mr *mrs;                    /* FI_MR_ENDPOINT: enabled on it, by key */
	int bound_mr_count;                     /* bound, enabled or not: must close first */
	bool cuda_api_permitted;
	bool shared_memory_permitted;
	const struct bolt_endpoint_upper_ops *upper;   /* NULL: no layer attached */
	void *upper_state;                              /* the attached layer's own */
	struct bolt_endpoint *prev, *next;      /* domain->endpoints */
};

int bolt_endpoint_open(struct fid_domain *domain_fid, struct fi_info *info,
		       struct fid_ep **ep_fid, void *context);
void bolt_endpoint_progress(struct bolt_endpoint *endpoint);

/*
 * Completions the protocols report; status is 0 or a positive FI_E* code.
 * A record with a completion function of its own goes there, else to the
 * endpoint's CQs and counters; either way the endpoint frees it.
 */
void bolt_endpoint_complete_transmit(struct bolt_endpoint *endpoint,
				     struct bolt_transmit *transmit);
void bolt_endpoint_complete_receive(struct bolt_endpoint *endpoint, struct bolt_receive *receive,
				    struct bolt_connection *connection, size_t length,
				    size_t message_length, uint8_t wire_flags, uint64_t tag,
				    uint32_t cq_data, int status);
/* A remote write or read landed in, or was served from, this endpoint's memory. */
void bolt_endpoint_count_remote(struct bolt_endpoint *endpoint, enum bolt_counter_kind kind,
				bool remote_cq_data, uint32_t cq_data, size_t length);

/* The endpoint a connection of its belongs to. */
static inline struct bolt_endpoint *bolt_connection_endpoint(const struct bolt_connection *connection)
{
	return bolt_container_of(connection->manager, struct bolt_endpoint, connection_manager);
}

/* Memory regions (bolt_mr.c). */
extern struct fi_ops_mr bolt_mr_ops;
/*
 * The local bytes a peer's key, address and length name on this endpoint, if
 * the MR allows access; else a positive FI_E* code (FI_EACCES, FI_EINVAL).
 */
int bolt_mr_translate(struct bolt_endpoint *endpoint, uint64_t key, uint64_t address,
		      size_t length, uint64_t access, char **local);
/* The enabled MR a peer of endpoint names by key, or NULL. */
struct bolt_mr *bolt_mr_find(struct bolt_endpoint *endpoint, uint64_t key);
/* The address that names mr's first byte in RMA calls: its own, or 0 without FI_MR_VIRT_ADDR. */
uint64_t bolt_mr_base(const struct bolt_mr *mr);
/* fi_mr_map_raw: a raw key is the key itself. */
int bolt_mr_map_raw(const struct fi_mr_map_raw *map);

/* iovec helpers (bolt_iov.c). */
size_t bolt_iov_length(const struct iovec *iov, size_t count);
/* Copies length bytes of source to the iov at offset; returns bytes copied. */
size_t bolt_iov_copy_in(const struct iovec *iov, size_t count, size_t offset,
			const void *source, size_t length);
/* Copies length bytes of the iov at offset to destination; returns bytes copied. */
size_t bolt_iov_copy_out(const struct iovec *iov, size_t count, size_t offset,
			 void *destination, size_t length);

#endif /* BOLT_ENDPOINT_H */
