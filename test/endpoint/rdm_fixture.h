/*
 * rdm_fixture.h: two processes with one RDM endpoint each on the software
 * device, driven through the provider's own entry points and ops tables, as
 * libfabric drives them: bolt_getinfo, bolt_fabric_open, then fi_domain,
 * fi_endpoint and the rest. The parent forks the peer; names and small
 * values travel over a socket pair. Functions return errors (never assert),
 * so the child can turn them into its exit status. The objects are opened and
 * closed by util/bolt_fixture (bolt_fixture_close closes an endpoint); this
 * adds what the tests ask of them.
 */
#ifndef RDM_FIXTURE_H
#define RDM_FIXTURE_H

#include <stdbool.h>
#include <time.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "bolt_fixture.h"

/* The MR mode of tests that register regions as NCCL plugins do: keys per endpoint. */
#define RDM_MR_MODE (FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_LOCAL | FI_MR_ALLOCATED)

/* Generous: CI runs several busy-polling tests at once on two cores. */
#define RDM_TIMEOUT_MS 30000
#define RDM_SERVE_TIMEOUT_MS 120000

struct rdm_options {
	const char *profile;            /* "thunderbolt" or "rocev2" */
	uint64_t caps;
	uint64_t mr_mode;
	enum fi_av_type av_type;
	enum fi_cq_format cq_format;
	bool send_only;                 /* FI_BOLT_SOFT_SEND_ONLY */
	bool software_device_only;      /* tests the software device's own limits */
	const char *node;               /* fi_getinfo's node, service and flags */
	const char *service;
	uint64_t flags;
	uint64_t tx_op_flags;           /* hints->tx_attr->op_flags */
	size_t tx_size;                 /* hints->tx_attr->size */
	bool count_remote_writes;       /* a counter bound to the endpoint for FI_REMOTE_WRITE */
	const char *topology;           /* FI_BOLT_SOFT_TOPOLOGY (NULL: single); rdm_pair_start's
					 * peer is then host peer_host */
	int peer_host;                  /* 0: host 1 */
};

/* bolt_getinfo and bolt_fabric_open: the provider's entry points, as libfabric calls them. */
extern const struct bolt_fixture_entry_points rdm_provider_entry_points;

/*
 * The software device for this test process and the peers it forks. With
 * BOLT_TEST_DEVICE=system in the environment the tests run on the system's
 * verbs device instead (test/rxe runs them on Linux's Soft-RoCE): the profile
 * is then only a name, and a test that needs a mode only the software device
 * has (send-only, its profiles' limits) is skipped here.
 */
void rdm_environment(const struct rdm_options *options, const char *tag);
void rdm_environment_cleanup(const struct rdm_options *options);

int rdm_open(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options);
/* The hints rdm_open asks with, for tests that start from them and change some. */
struct fi_info *rdm_hints(const struct rdm_options *options);
/*
 * rdm_open in steps, for tests that shape them: bolt_getinfo with hints, the
 * fabric and the domain; then an endpoint with its own CQ and AV on owner's
 * domain (owner may be endpoint itself), bound but not enabled.
 */
int rdm_open_domain(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
		    const struct rdm_options *options);
int rdm_open_endpoint(struct bolt_fixture_endpoint *endpoint,
		      const struct bolt_fixture_endpoint *owner, const struct rdm_options *options);

/* rdm_open, then its own name inserted as its peer: an endpoint talking to itself. */
int rdm_open_self(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options);

/* Exchanges names over the socket and inserts the peer's into the AV. */
int rdm_connect(struct bolt_fixture_endpoint *endpoint, int socket);
/* rdm_open, then rdm_connect: either side's start of a two-process test. */
int rdm_open_connected(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		       int socket);

/* One completion (entry in FI_CQ_FORMAT_TAGGED layout); -FI_EAVAIL fills error. */
int rdm_wait(struct bolt_fixture_endpoint *endpoint, struct fi_cq_tagged_entry *entry,
	     struct fi_cq_err_entry *error);
/* Asserts the next completion is context's, with expected_error (0: success). */
void rdm_expect_completion(struct bolt_fixture_endpoint *endpoint, void *context, int expected_error);
/* Drives progress until the peer's side channel has nothing left for us. */
void rdm_progress_for(struct bolt_fixture_endpoint *endpoint, int milliseconds);

/* Serves the peer (progress) until it sends a value over the socket; 0 or -FI_EIO. */
int rdm_serve_until_told(struct bolt_fixture_endpoint *endpoint, int socket, uint64_t *value);

/* A region registered; under FI_MR_ENDPOINT also bound to the endpoint and enabled. */
int rdm_register_region(struct bolt_fixture_endpoint *endpoint, void *buffer, size_t length,
			uint64_t access, struct fid_mr **mr);
/* A target's start: its endpoint, and a region whose address and key it tells the initiator. */
int rdm_offer_region(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr);

/* rdm_offer_region, then serving the initiator until it says it is done. */
int rdm_serve_region(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr);
/* A target's end: closes its region (if any) and endpoint, frees region; returns ret. */
int rdm_region_peer_end(struct bolt_fixture_endpoint *endpoint, struct fid_mr *mr, void *region, int ret);

int rdm_send_value(int socket, uint64_t value);
int rdm_receive_value(int socket, uint64_t *value);

/*
 * The start of a two-process test: the environment, the peer forked to run
 * peer(socket, argument), and this side's endpoint open and connected to it.
 * The peer's pid, or a negative error code.
 */
pid_t rdm_pair_start(const struct rdm_options *options, const char *tag,
		     int (*peer)(int socket, void *argument), void *argument,
		     struct bolt_fixture_endpoint *endpoint, int *socket);
/* Its end: the peer's exit status (bolt_fixture_process_status), then this side closed and cleaned up. */
int rdm_pair_finish(const struct rdm_options *options, struct bolt_fixture_endpoint *endpoint, pid_t peer,
		    int socket);

/*
 * Forks the peer; it runs peer(socket, argument) and exits with its result
 * (bolt_fixture_process_status gives it: 0 when the peer returned 0).
 * Between two hosts (BOLT_TEST_PEER_ROLE, util/bolt_peer_host.h, as
 * test/hosts runs the tests) the same program runs on both: on the test
 * side the pid is a local stand-in that exits with the peer's status, and
 * killing it kills the peer; on the peer side, the peer runs here and the
 * test ends there (skipped: the test side reports). One peer per test.
 */
pid_t rdm_fork(int (*peer)(int socket, void *argument), void *argument, int *socket);

/*
 * Bytes ep's stripes carried to every peer on data rails first_rail to
 * end_rail - 1, by bolt's own count (rails from BOLT_MAX_DATA_RAILS on are on
 * other cables than the domain's).
 */
uint64_t rdm_striped_bytes(struct fid_ep *ep, int first_rail, int end_rail);
/* Segments of UC writes written again after a timeout or a loss, on ep's connections. */
uint64_t rdm_rewritten_segments(struct fid_ep *ep);
/*
 * Registrations endpoint's domain has made or reused on its own port: one per
 * rendezvous end, none for segments.
 */
uint64_t rdm_registrations_used(struct bolt_fixture_endpoint *endpoint);

void rdm_fill(void *buffer, size_t length, uint32_t seed);
bool rdm_check(const void *buffer, size_t length, uint32_t seed);

#endif /* RDM_FIXTURE_H */
