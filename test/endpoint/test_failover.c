/*
 * test_failover.c: a connection over two cables (mesh:2x2) whose second
 * cable, which carries the stripes of its large transfers, is cut or loses
 * a port in the middle of a stream of large tagged messages and fi_writes,
 * by the software device's fault plan (FI_BOLT_SOFT_FAULT_PLAN): no
 * operation ends with an error, every message arrives once, in order, with
 * its bytes, every write lands, and once the cable is back stripes cross it
 * again. The same when the first cable, the domain's own, which carries the
 * control rail, is cut or this host's port of it goes down: the control
 * rail moves to the second cable; and back to the first when the second is
 * cut in turn, the writes that crossed a move asking the target for its key
 * on the new port. With both cables cut, the operations end with an error
 * within the liveness time. On RC and UC.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdm_fixture.h"
#include "bolt_endpoint.h"

#define FAILOVER_MESSAGE (256 * 1024)
#define FAILOVER_WRITE (1024 * 1024)            /* a write stripes from FI_BOLT_STRIPE_THRESHOLD */
#define FAILOVER_SLOTS 4                        /* of the target's region, written in turn */
#define FAILOVER_BATCH 4                        /* rounds (a message and a write) in flight */
#define FAILOVER_END_TAG (1ull << 40)
#define FAILOVER_WRITE_SEED 0x10000u
#define FAILOVER_LIVENESS "2000"

struct failover_setup {
	struct rdm_options options;
	bool both_cut;                          /* no path remains: the peer's errors are expected */
};

/* The seed of the last write into slot, of rounds writes. */
static uint32_t failover_slot_seed(uint64_t rounds, int slot)
{
	uint64_t last = rounds - 1 - ((rounds - 1 - (uint64_t) slot) % FAILOVER_SLOTS);

	return FAILOVER_WRITE_SEED + (uint32_t) last;
}

/* Receives and checks message after message until the end one; 0, or where it went wrong. */
static int failover_receive_all(struct bolt_fixture_endpoint *endpoint, char *buffer)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;

	for (uint64_t expected = 0;; expected++) {
		int ret = (int) fi_trecv(endpoint->ep, buffer, FAILOVER_MESSAGE, NULL, endpoint->peer, 0,
					 ~0ull, NULL);

		if (!ret)
			ret = rdm_wait(endpoint, &entry, &error);
		if (ret)
			return ret;
		if (entry.tag == FAILOVER_END_TAG)
			return 0;
		/* Once, in order, whole: a message lost, sent twice or damaged shows here. */
		if (entry.tag != expected || entry.len != FAILOVER_MESSAGE ||
		    !rdm_check(buffer, FAILOVER_MESSAGE, (uint32_t) expected))
			return 3;
	}
}

/* The peer: a region for the writes, every message checked, then the region. */
static int failover_peer(int socket, void *argument)
{
	const struct failover_setup *setup = argument;
	char *region = calloc(FAILOVER_SLOTS, FAILOVER_WRITE);
	/* Zeroed: the device writes it from another process, which valgrind cannot see. */
	char *buffer = calloc(1, FAILOVER_MESSAGE);
	struct bolt_fixture_endpoint endpoint;
	struct fid_mr *mr = NULL;
	uint64_t rounds = 0;
	int ret = buffer ? rdm_offer_region(&endpoint, &setup->options, socket, region,
					    (size_t) FAILOVER_SLOTS * FAILOVER_WRITE, FI_REMOTE_WRITE, &mr) :
			   -FI_ENOMEM;

	/* With no path left, nothing arrives: it serves until told. */
	if (!ret && !setup->both_cut)
		ret = failover_receive_all(&endpoint, buffer);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &rounds);
	for (int slot = 0; !ret && !setup->both_cut && slot < FAILOVER_SLOTS && (uint64_t) slot < rounds; slot++)
		if (!rdm_check(region + (size_t) slot * FAILOVER_WRITE, FAILOVER_WRITE,
			       failover_slot_seed(rounds, slot)))
			ret = 4;
	free(buffer);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* The initiator's side of the stream. */
struct failover_stream {
	struct bolt_fixture_endpoint endpoint;
	struct bolt_endpoint *bolt;
	char *local;                            /* FAILOVER_BATCH messages, then as many writes */
	struct fid_mr *local_mr;
	uint64_t remote_address, remote_key;
	uint64_t rounds;
	int errors;                             /* error completions */
	int last_error;
};

static char *failover_message_buffer(struct failover_stream *stream, int index)
{
	return stream->local + (size_t) index * FAILOVER_MESSAGE;
}

static char *failover_write_buffer(struct failover_stream *stream, int index)
{
	return stream->local + (size_t) FAILOVER_BATCH * FAILOVER_MESSAGE + (size_t) index * FAILOVER_WRITE;
}

/* One batch of rounds: a tagged message and a write each, all waited for. */
static void failover_batch(struct failover_stream *stream)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int posted = 0;

	for (int index = 0; index < FAILOVER_BATCH; index++) {
		uint64_t round = stream->rounds + (uint64_t) index;
		char *message = failover_message_buffer(stream, index), *write = failover_write_buffer(stream, index);
		struct iovec iov = { .iov_base = write, .iov_len = FAILOVER_WRITE };
		void *desc = fi_mr_desc(stream->local_mr);
		struct fi_rma_iov rma = {
			.addr = stream->remote_address + (round % FAILOVER_SLOTS) * FAILOVER_WRITE,
			.len = FAILOVER_WRITE,
			.key = stream->remote_key,
		};
		struct fi_msg_rma msg = {
			.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = stream->endpoint.peer,
			.rma_iov = &rma, .rma_iov_count = 1, .context = write,
		};

		rdm_fill(message, FAILOVER_MESSAGE, (uint32_t) round);
		rdm_fill(write, FAILOVER_WRITE, FAILOVER_WRITE_SEED + (uint32_t) round);
		cr_assert_eq(fi_tsend(stream->endpoint.ep, message, FAILOVER_MESSAGE, desc,
				      stream->endpoint.peer, round, message), 0);
		/* Delivery complete: the completion says the bytes are in the target's memory. */
		cr_assert_eq(fi_writemsg(stream->endpoint.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), 0);
		posted += 2;
	}
	while (posted--) {
		int ret = rdm_wait(&stream->endpoint, &entry, &error);

		cr_assert(ret == 0 || ret == -FI_EAVAIL, "completion: %d", ret);
		if (ret) {
			stream->errors++;
			stream->last_error = error.err;
		}
	}
	stream->rounds += FAILOVER_BATCH;
}

/* This host's port of cable 0 (the domain's own, the control rail's) or 1 (the stripes'). */
static struct bolt_rail_port *failover_port(struct failover_stream *stream, int cable)
{
	struct bolt_domain *domain = stream->bolt->domain;

	cr_assert_eq(domain->stripe_port_count, 1, "mesh:2x2: one cable besides the domain's own");
	return cable ? &domain->stripe_ports[0] : &domain->primary;
}

static uint64_t failover_second_cable_bytes(struct failover_stream *stream)
{
	return rdm_striped_bytes(stream->endpoint.ep, BOLT_MAX_DATA_RAILS, BOLT_MAX_CONNECTION_RAILS);
}

static double failover_seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) / 1e9;
}

static pid_t failover_start(struct failover_setup *setup, const char *tag, const char *plan,
			    struct failover_stream *stream, int *socket)
{
	size_t local_length = (size_t) FAILOVER_BATCH * (FAILOVER_MESSAGE + FAILOVER_WRITE);
	pid_t peer;

	setenv("FI_BOLT_SOFT_FAULT_PLAN", plan, 1);
	setenv("FI_BOLT_LIVENESS_TIMEOUT", FAILOVER_LIVENESS, 1);
	setup->options.software_device_only = true;
	setup->options.topology = "mesh:2x2";
	setup->options.caps = FI_MSG | FI_TAGGED | FI_RMA;
	setup->options.mr_mode = RDM_MR_MODE;
	memset(stream, 0, sizeof(*stream));
	peer = rdm_pair_start(&setup->options, tag, failover_peer, setup, &stream->endpoint, socket);
	cr_assert(peer > 0);
	stream->bolt = bolt_container_of(stream->endpoint.ep, struct bolt_endpoint, ep_fid);
	stream->local = malloc(local_length);
	cr_assert(stream->local);
	cr_assert_eq(rdm_register_region(&stream->endpoint, stream->local, local_length,
					 FI_SEND | FI_WRITE, &stream->local_mr), 0);
	cr_assert_eq(rdm_receive_value(*socket, &stream->remote_address), 0);
	cr_assert_eq(rdm_receive_value(*socket, &stream->remote_key), 0);
	return peer;
}

/* The end message, the rounds told, and both ends closed: the peer's verdict. */
static void failover_finish(struct failover_setup *setup, struct failover_stream *stream, pid_t peer,
			    int socket)
{
	if (!setup->both_cut) {
		cr_assert_eq(fi_tsend(stream->endpoint.ep, stream->local, 8, fi_mr_desc(stream->local_mr),
				      stream->endpoint.peer, FAILOVER_END_TAG, NULL), 0);
		rdm_expect_completion(&stream->endpoint, NULL, 0);
	}
	cr_assert_eq(rdm_send_value(socket, stream->rounds), 0);
	cr_assert_eq(fi_close(&stream->local_mr->fid), 0);
	cr_assert_eq(rdm_pair_finish(&setup->options, &stream->endpoint, peer, socket), 0,
		     "the peer found a message or a write lost, damaged or twice");
	free(stream->local);
	unsetenv("FI_BOLT_SOFT_FAULT_PLAN");
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
}

/*
 * Batches until the cable's port's events say it went down (1 change) or up
 * again (2); every one ends well. Counted, not its state: a batch on a loaded
 * machine may outlast the whole time the port is down.
 */
static void failover_stream_until(struct failover_stream *stream, int cable, uint32_t changes,
				  const char *what)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (failover_port(stream, cable)->state_changes < changes) {
		cr_assert_lt(failover_seconds_since(&start), 20.0, "the port never went %s", what);
		failover_batch(stream);
		cr_assert_eq(stream->errors, 0, "an operation failed (%s) before the port went %s",
			     fi_strerror(stream->last_error), what);
	}
}

/* Batches until a stripe crossed the second cable beyond bytes_before; every one ends well. */
static void failover_stream_until_second_cable_carries(struct failover_stream *stream,
						       uint64_t bytes_before)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		cr_assert_lt(failover_seconds_since(&start), 20.0,
			     "no stripe crossed the second cable after it came back");
		failover_batch(stream);
	} while (failover_second_cable_bytes(stream) == bytes_before);
	cr_assert_eq(stream->errors, 0, "an operation failed: %s", fi_strerror(stream->last_error));
}

/*
 * A cable fails by plan (cut, or its port here down) while the stream runs,
 * and comes back: the stream goes on without an error. The second cable's
 * stripes cross it again once it is back; the first's failure moves the
 * control rail to the second cable, where it may stay.
 */
static void failover_survives(const char *profile, const char *tag, const char *plan, int cable)
{
	struct failover_setup setup = { .options = { .profile = profile } };
	struct failover_stream stream;
	int socket;
	pid_t peer = failover_start(&setup, tag, plan, &stream, &socket);

	/* Striping first (the plan's failure comes later): the first transfers ask for the rails. */
	failover_batch(&stream);
	cr_assert(bolt_data_rail_striping(stream.bolt->connection_manager.connections),
		  "no stripes on the second cable before the failure: set-up too slow for the plan?");
	failover_stream_until(&stream, cable, 1, "down");
	failover_batch(&stream);
	failover_batch(&stream);
	failover_stream_until(&stream, cable, 2, "up again");
	failover_stream_until_second_cable_carries(&stream, cable ? failover_second_cable_bytes(&stream) : 0);
	cr_log_info("%s: %llu rounds, %llu stripes moved to the control rail\n", tag,
		    (unsigned long long) stream.rounds,
		    (unsigned long long) bolt_peer_of(stream.bolt->connection_manager.connections)->stripes_moved);
	failover_finish(&setup, &stream, peer, socket);
}

#define FAILOVER_CUT_PLAN "at 700ms cut cable 1; at 1400ms restore cable 1"
#define FAILOVER_PORT_PLAN "at 700ms port 1 down; at 1400ms port 1 up"
/*
 * The first cable: the domain's own, the control rail's; host 0's port of it
 * (the test's host). Cut once the connection and its rails are surely up (a
 * link still being set up is not moved), and out for longer than the liveness
 * time (and RC's retries), so that a connection that stayed on it would fail.
 */
#define FAILOVER_FIRST_CUT_PLAN "at 1200ms cut cable 0; at 4500ms restore cable 0"
#define FAILOVER_FIRST_PORT_PLAN "at 1200ms port 0 down; at 4500ms port 0 up"

Test(failover, second_cable_cut_and_restored_rocev2_rc)
{
	failover_survives("rocev2", "failover-cut-rc", FAILOVER_CUT_PLAN, 1);
}

Test(failover, second_cable_cut_and_restored_thunderbolt_uc)
{
	failover_survives("thunderbolt", "failover-cut-uc", FAILOVER_CUT_PLAN, 1);
}

Test(failover, second_port_down_and_up_rocev2_rc)
{
	failover_survives("rocev2", "failover-port-rc", FAILOVER_PORT_PLAN, 1);
}

Test(failover, second_port_down_and_up_thunderbolt_uc)
{
	failover_survives("thunderbolt", "failover-port-uc", FAILOVER_PORT_PLAN, 1);
}

Test(failover, first_cable_cut_control_rail_moves_rocev2_rc)
{
	failover_survives("rocev2", "failover-first-cut-rc", FAILOVER_FIRST_CUT_PLAN, 0);
}

Test(failover, first_cable_cut_control_rail_moves_thunderbolt_uc)
{
	failover_survives("thunderbolt", "failover-first-cut-uc", FAILOVER_FIRST_CUT_PLAN, 0);
}

Test(failover, first_port_down_control_rail_moves_rocev2_rc)
{
	failover_survives("rocev2", "failover-first-port-rc", FAILOVER_FIRST_PORT_PLAN, 0);
}

Test(failover, first_port_down_control_rail_moves_thunderbolt_uc)
{
	failover_survives("thunderbolt", "failover-first-port-uc", FAILOVER_FIRST_PORT_PLAN, 0);
}

/*
 * The control rail moves to the second cable when the first is cut, and back
 * to the first, which came back meanwhile, when the second is cut in turn:
 * the stream goes on without an error through both moves, and stripes cross
 * the second cable again once it is back.
 */
#define FAILOVER_THERE_AND_BACK_PLAN \
	"at 1200ms cut cable 0; at 4500ms restore cable 0; at 6000ms cut cable 1; at 9300ms restore cable 1"

static void failover_there_and_back(const char *profile, const char *tag)
{
	struct failover_setup setup = { .options = { .profile = profile } };
	struct failover_stream stream;
	int socket;
	pid_t peer = failover_start(&setup, tag, FAILOVER_THERE_AND_BACK_PLAN, &stream, &socket);

	failover_batch(&stream);
	failover_stream_until(&stream, 0, 2, "down and up again");
	failover_stream_until(&stream, 1, 2, "down and up again");
	failover_stream_until_second_cable_carries(&stream, failover_second_cable_bytes(&stream));
	cr_assert_eq(stream.bolt->connection_manager.connections->link->port, &stream.bolt->domain->primary,
		     "the control rail is not back on the first cable");
	failover_finish(&setup, &stream, peer, socket);
}

Test(failover, control_rail_moves_there_and_back_rocev2_rc)
{
	failover_there_and_back("rocev2", "failover-back-rc");
}

Test(failover, control_rail_moves_there_and_back_thunderbolt_uc)
{
	failover_there_and_back("thunderbolt", "failover-back-uc");
}

/* Both cables cut: no path remains, and the operations end with an error within the liveness time. */
static void failover_no_path(const char *profile, const char *tag)
{
	struct failover_setup setup = { .options = { .profile = profile }, .both_cut = true };
	struct failover_stream stream;
	struct timespec start;
	double after_cut;
	int socket;
	pid_t peer;

	/* The plan counts from the device's set-up, which is later: the cut is at start + 0.5 s or after. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	peer = failover_start(&setup, tag, "at 500ms cut cable 0; at 500ms cut cable 1", &stream, &socket);
	while (!stream.errors) {
		cr_assert_lt(failover_seconds_since(&start), 15.0, "no error with both cables cut");
		failover_batch(&stream);
	}
	after_cut = failover_seconds_since(&start) - 0.5;
	/* At most: the set-up's time (up to a second on a loaded machine) is counted in. */
	cr_log_info("%s: the first error at most %.2f s after the cut\n", tag, after_cut);
	cr_expect_lt(after_cut, 2.0 + 2.0, "the error took up to %.2f s, the liveness time is 2 s", after_cut);
	failover_finish(&setup, &stream, peer, socket);
}

Test(failover, both_cables_cut_fail_within_liveness_rocev2_rc)
{
	failover_no_path("rocev2", "failover-none-rc");
}

Test(failover, both_cables_cut_fail_within_liveness_thunderbolt_uc)
{
	failover_no_path("thunderbolt", "failover-none-uc");
}
