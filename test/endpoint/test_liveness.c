/*
 * test_liveness.c: a peer process that dies. UC reports nothing when a peer
 * is gone, so bolt watches the side channel: operations in flight and new
 * ones to the dead peer must end with an error within 2 seconds, not hang.
 * The same for a peer that is alive but whose messages are all lost: UC drops
 * them without a trace, bolt sends them again, and once the peer has
 * acknowledged nothing for the liveness time the connection fails; and for
 * a first message to a peer long gone, whose side channel refuses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "rdm_fixture.h"

#define LARGE (4 << 20)

/* Connects, answers one message, then stops progressing until it is killed. */
static int sleeping_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char buffer[64];
	int ret;

	ret = rdm_open_connected(&endpoint, options, socket);
	if (!ret)
		ret = (int) fi_recv(endpoint.ep, buffer, sizeof(buffer), NULL, FI_ADDR_UNSPEC, NULL);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret)
		ret = rdm_send_value(socket, 1);
	while (!ret)
		pause();
	return ret;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) (now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static void peer_dies(struct rdm_options *options, const char *tag)
{
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *large = calloc(1, LARGE);
	char small[64] = "hello";
	struct timespec killed;
	uint64_t answered;
	int socket, errors = 0;
	pid_t peer;

	peer = rdm_pair_start(options, tag, sleeping_peer, options, &endpoint, &socket);
	cr_assert(peer > 0 && large);
	cr_assert_eq(fi_send(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, small), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0);
	cr_assert_eq(rdm_receive_value(socket, &answered), 0);

	/* The peer no longer returns credits: this send stalls part way. */
	cr_assert_eq(fi_send(endpoint.ep, large, LARGE, NULL, endpoint.peer, large), 0);
	rdm_progress_for(&endpoint, 100);
	kill(peer, SIGKILL);
	clock_gettime(CLOCK_MONOTONIC, &killed);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL, "the stalled send ended well?");
	cr_expect_eq(error.op_context, large);
	cr_expect_neq(error.err, 0);
	errors++;

	/* A new operation to the dead peer fails too, rather than waiting. */
	cr_assert_eq(fi_send(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, small), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL);
	cr_expect_eq(error.op_context, small);
	errors++;
	cr_expect_lt(seconds_since(&killed), 2.0, "errors took %.2f s", seconds_since(&killed));
	cr_assert_eq(errors, 2);

	cr_assert_eq(rdm_pair_finish(options, &endpoint, peer, socket), 128 + SIGKILL);
	free(large);
}

Test(liveness, thunderbolt_uc)
{
	struct rdm_options options = { .profile = "thunderbolt" };

	peer_dies(&options, "live-tb");
}

Test(liveness, rocev2_rc)
{
	struct rdm_options options = { .profile = "rocev2" };

	peer_dies(&options, "live-roce");
}

/*
 * RC's own retries outlast the liveness time: a cable down for a second, or a
 * peer host stopped for less than FI_BOLT_LIVENESS_TIMEOUT, is no error, and
 * only the side channel judges a peer gone. With bolt's former 67 ms local
 * ACK timeout, rxe gave up after half a second (7 retries) and failed every
 * transfer in flight with "transport retry counter exceeded".
 */
Test(liveness, rc_retries_outlast_the_liveness_time)
{
	struct rdm_options options = { .profile = "rocev2" };
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct bolt_endpoint *bolt;
	struct ibv_qp *qp;
	char small[64] = "hello";
	uint64_t answered;
	double retrying;
	int socket;
	pid_t peer;

	setenv("FI_BOLT_LIVENESS_TIMEOUT", "5000", 1);
	peer = rdm_pair_start(&options, "live-patience", sleeping_peer, &options, &endpoint, &socket);
	cr_assert_gt(peer, 0);
	cr_assert_eq(fi_send(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, small), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0);
	cr_assert_eq(rdm_receive_value(socket, &answered), 0);

	bolt = bolt_container_of(endpoint.ep, struct bolt_endpoint, ep_fid);
	qp = bolt->connection_manager.connections->link->qp;
	cr_assert_eq(qp->qp_type, IBV_QPT_RC, "the rocev2 profile and rxe connect with RC");
	cr_assert_eq(bolt->domain->fabric->verbs.query_qp(qp, &attr, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT,
							  &init), 0);
	/* The first try and each retry wait one local ACK timeout, 4.096 us * 2^timeout. */
	retrying = (attr.retry_cnt + 1) * 4.096e-6 * (double) (1ull << attr.timeout);
	cr_expect_geq(retrying, 5.0, "RC gives up after %.2f s (timeout %u, retry_cnt %u)", retrying,
		      attr.timeout, attr.retry_cnt);
	cr_expect_lt(retrying, 20.0, "RC retries for %.2f s", retrying);

	kill(peer, SIGKILL);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 128 + SIGKILL);
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
}

/* Takes one large message, progresses until told, then stops progressing until it is killed. */
static int striping_then_sleeping_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffer = malloc(LARGE);
	uint64_t told;
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : -FI_ENOMEM;

	if (!ret)
		ret = (int) fi_recv(endpoint.ep, buffer, LARGE, NULL, FI_ADDR_UNSPEC, NULL);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	while (!ret)
		pause();
	return ret;
}

/*
 * Two cables, a data rail ready on the second: the peer dies with large
 * messages waiting for it. Each ends with an error within 2 seconds, and
 * so does a new one.
 */
#define STRIPED_SENDS 8

Test(liveness, peer_dies_with_a_rail_on_another_cable_thunderbolt_uc)
{
	struct rdm_options options = {
		.profile = "thunderbolt", .software_device_only = true, .topology = "mesh:2x2",
	};
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct bolt_endpoint *bolt;
	struct timespec killed;
	char *large;
	int socket;
	pid_t peer;

	peer = rdm_pair_start(&options, "live-stripes", striping_then_sleeping_peer, &options,
			      &endpoint, &socket);
	cr_assert(peer > 0);
	large = calloc(1, LARGE);       /* after the fork: the peer has no copy to leak */
	cr_assert(large);
	/* The first asks for the rails; then the second cable's is made. */
	cr_assert_eq(fi_send(endpoint.ep, large, LARGE, NULL, endpoint.peer, NULL), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0);
	bolt = bolt_container_of(endpoint.ep, struct bolt_endpoint, ep_fid);
	for (int waited = 0; waited < 10000 && !bolt_data_rail_striping(bolt->connection_manager.connections); waited += 10)
		rdm_progress_for(&endpoint, 10);
	cr_assert(bolt_data_rail_striping(bolt->connection_manager.connections), "no rail on the second cable");
	cr_assert_eq(rdm_send_value(socket, 1), 0);

	for (int i = 0; i < STRIPED_SENDS; i++)
		cr_assert_eq(fi_send(endpoint.ep, large, LARGE, NULL, endpoint.peer, large), 0);
	rdm_progress_for(&endpoint, 50);
	kill(peer, SIGKILL);
	clock_gettime(CLOCK_MONOTONIC, &killed);
	for (int i = 0; i < STRIPED_SENDS; i++) {
		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL, "send %d ended well", i);
		cr_expect_eq(error.op_context, large);
	}
	cr_assert_eq(fi_send(endpoint.ep, large, 64, NULL, endpoint.peer, NULL), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL, "a send to the dead peer ended well");
	cr_expect_lt(seconds_since(&killed), 2.0, "the sends took %.2f s to end", seconds_since(&killed));
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 128 + SIGKILL);
	free(large);
}

/* Progresses (so it answers the side channel) until told to stop. */
static int serving_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	uint64_t done;
	int ret;

	ret = rdm_open_connected(&endpoint, options, socket);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	bolt_fixture_close(&endpoint);
	return ret;
}

/* Starts operation (given the endpoint and context) and expects it to end with FI_EIO within limit s. */
static void expect_lost(struct bolt_fixture_endpoint *endpoint, void *context, const char *what,
			double limit)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	cr_assert_eq(rdm_wait(endpoint, &entry, &error), -FI_EAVAIL, "%s: it ended well?", what);
	cr_expect_eq(error.op_context, context);
	cr_expect_eq(error.err, FI_EIO, "%s: error %d", what, error.err);
	cr_log_info("%s: the error came after %.2f s", what, seconds_since(&start));
	cr_expect_lt(seconds_since(&start), limit, "%s: the error took %.2f s", what, seconds_since(&start));
}

/*
 * Every UC packet is lost: what is sent again is lost too, and once the peer
 * has acknowledged nothing for the liveness time (2 s here), a read and a
 * large send end in errors instead of waiting.
 */
Test(liveness, every_packet_lost_thunderbolt_uc)
{
	/* Only the software device drops packets on request. */
	struct rdm_options options = { .profile = "thunderbolt", .software_device_only = true };
	struct bolt_fixture_endpoint endpoint;
	char *large = calloc(1, LARGE), small[64];
	int socket;
	pid_t peer;

	cr_assert(large);
	setenv("FI_BOLT_SOFT_DROP_EVERY", "1", 1);
	setenv("FI_BOLT_LIVENESS_TIMEOUT", "2000", 1);
	peer = rdm_pair_start(&options, "live-lost", serving_peer, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(fi_read(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, 0, 1, small), 0);
	expect_lost(&endpoint, small, "a read whose request was lost", 4.0);
	/* The connection has failed for good: new operations fail at once. */
	cr_assert_eq(fi_send(endpoint.ep, large, LARGE, NULL, endpoint.peer, large), 0);
	expect_lost(&endpoint, large, "a send to the failed connection", 2.0);
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the peer failed");
	unsetenv("FI_BOLT_SOFT_DROP_EVERY");
	free(large);
}

/*
 * Some UC packets lost, among them whole RDMA writes of large messages (or,
 * of messages no larger than a bounce buffer, writes of header and data
 * both): a receive completes with the data intact or with an error, never
 * with data the write did not bring (on UC a write may be lost while what
 * follows it arrives).
 */
#define SOME_LOST_LENGTH (128 * 1024)
#define SOME_LOST_MESSAGES 64

struct some_lost {
	struct rdm_options options;
	size_t length;          /* of each message */
};

static int receiving_peer(int socket, void *argument)
{
	const struct some_lost *setup = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffer = malloc(setup->length);
	int ret = buffer ? rdm_open_connected(&endpoint, &setup->options, socket) : -FI_ENOMEM;
	/* A receive from any peer outlives one peer's failure; one from this peer ends with it. */
	fi_addr_t source = setup->options.caps & FI_DIRECTED_RECV ? endpoint.peer : FI_ADDR_UNSPEC;

	for (int i = 0; !ret && i < SOME_LOST_MESSAGES; i++) {
		memset(buffer, 0, setup->length);
		ret = (int) fi_recv(endpoint.ep, buffer, setup->length, NULL, source, NULL);
		if (!ret)
			ret = rdm_wait(&endpoint, &entry, &error);
		if (ret == -FI_EAVAIL && error.err == FI_EIO)
			break;          /* the loss was found: the connection failed */
		if (!ret && (entry.len != setup->length ||
			     !rdm_check(buffer, setup->length, (uint32_t) i)))
			ret = 3;        /* a receive that completed with wrong data */
	}
	/* The sender progresses until told: what it lost last is sent again only then. */
	if (rdm_send_value(socket, 0) && !ret)
		ret = -FI_EIO;
	bolt_fixture_close(&endpoint);
	free(buffer);
	/* A loss found ends it early, and well; wrong data or another error does not. */
	return ret == -FI_EAVAIL ? 0 : ret;
}

/*
 * Messages of length bytes, with every drop_every-th packet lost
 * (FI_BOLT_SOFT_DROP_EVERY); a topology with two cables must have used the
 * second. A lost message that no receive had matched yet fails only the
 * receives that name its sender: the peer's do, for eager (small) messages.
 * A send completes once copied (fi_bolt(7)), so the sender goes on
 * progressing until the peer has taken every message: the last ones lost
 * are sent again only then.
 */
static void some_packets_lost(const char *topology, const char *drop_every, const char *tag,
			      size_t length)
{
	struct some_lost setup = {
		.options = { .profile = "thunderbolt", .software_device_only = true,
			     .topology = topology },
		.length = length,
	};
	struct rdm_options options;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int socket, failed = 0;
	uint64_t told;
	char *buffer;
	pid_t peer;

	if (length < SOME_LOST_LENGTH)
		setup.options.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV;
	options = setup.options;
	setenv("FI_BOLT_SOFT_DROP_EVERY", drop_every, 1);
	peer = rdm_pair_start(&options, tag, receiving_peer, &setup, &endpoint, &socket);
	cr_assert(peer > 0);
	buffer = malloc(length);        /* after the fork: the peer has no copy to leak */
	cr_assert(buffer);
	for (int i = 0; i < SOME_LOST_MESSAGES && !failed; i++) {
		rdm_fill(buffer, length, (uint32_t) i);
		cr_assert_eq(fi_send(endpoint.ep, buffer, length, NULL, endpoint.peer, NULL), 0);
		failed = rdm_wait(&endpoint, &entry, &error) != 0;
	}
	if (topology)
		cr_assert_gt(rdm_striped_bytes(endpoint.ep, BOLT_MAX_DATA_RAILS, BOLT_MAX_CONNECTION_RAILS), 0, "nothing went over the second cable");
	cr_assert_eq(rdm_serve_until_told(&endpoint, socket, &told), 0,
		     "the peer never took every message");
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0,
		     "a receive completed with data its lost write never brought");
	unsetenv("FI_BOLT_SOFT_DROP_EVERY");
	free(buffer);
}

/* Every 300th packet: a 128 KiB write is 128 packets, its header one. */
Test(liveness, some_packets_lost_thunderbolt_uc)
{
	some_packets_lost(NULL, "300", "live-some", SOME_LOST_LENGTH);
}

/* 16 KiB messages go written whole into bounce buffers, 17 packets each. */
Test(liveness, some_packets_lost_bounce_buffers_thunderbolt_uc)
{
	some_packets_lost(NULL, "300", "live-some-bounce", 16 * 1024);
}

/* Two cables: stripes on the second one's rail are lost too; fewer, so that some go first. */
Test(liveness, some_packets_lost_thunderbolt_uc_two_cables)
{
	some_packets_lost("mesh:2x2", "1000", "live-cables", SOME_LOST_LENGTH);
}

/* Offers a region of SOME_LOST_LENGTH bytes filled with seed 7, and serves reads of it. */
static int region_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = malloc(SOME_LOST_LENGTH);
	struct fid_mr *mr = NULL;
	int ret;

	if (region)
		rdm_fill(region, SOME_LOST_LENGTH, 7);
	ret = rdm_serve_region(&endpoint, options, socket, region, SOME_LOST_LENGTH, FI_REMOTE_READ,
			       &mr);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* Large reads, whose data the target writes back: what UC lost is written again, intact. */
Test(liveness, some_packets_lost_reads_thunderbolt_uc)
{
	struct rdm_options options = {
		.profile = "thunderbolt", .software_device_only = true,
		.mr_mode = FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
	};
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t address, key;
	int socket, ret = 0;
	char *buffer;
	pid_t peer;

	setenv("FI_BOLT_SOFT_DROP_EVERY", "300", 1);
	peer = rdm_pair_start(&options, "live-some-reads", region_peer, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	buffer = malloc(SOME_LOST_LENGTH);      /* after the fork: the peer has no copy to leak */
	cr_assert(buffer);
	cr_assert_eq(rdm_receive_value(socket, &address), 0);
	cr_assert_eq(rdm_receive_value(socket, &key), 0);
	for (int i = 0; i < SOME_LOST_MESSAGES && !ret; i++) {
		memset(buffer, 0, SOME_LOST_LENGTH);
		cr_assert_eq(fi_read(endpoint.ep, buffer, SOME_LOST_LENGTH, NULL, endpoint.peer, address,
				     key, NULL), 0);
		ret = rdm_wait(&endpoint, &entry, &error);
		cr_assert_eq(ret, 0, "read %d failed: its lost write was not written again", i);
		cr_assert(rdm_check(buffer, SOME_LOST_LENGTH, 7),
			  "read %d completed with data its lost write never brought", i);
	}
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the peer failed");
	unsetenv("FI_BOLT_SOFT_DROP_EVERY");
	free(buffer);
}

/* The time since start, in milliseconds. */
static double liveness_elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1e3 + (now.tv_nsec - start->tv_nsec) / 1e6;
}

/* A listener on 127.0.0.1 at the lowest free port from 1025: below the endpoint's own. */
static int low_listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	for (*port = 1025; *port < 32768; (*port)++) {
		struct sockaddr_in address = {
			.sin_family = AF_INET, .sin_port = htons(*port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		};

		if (!bind(fd, (struct sockaddr *) &address, sizeof(address)) && !listen(fd, 4))
			return fd;
	}
	cr_assert_fail("no free port below 32768");
	return -1;
}

/*
 * A first message to address fails after at least at_least_ms and within
 * within_ms, with expected_error if not 0; drop, if not -1, is closed after 50 ms.
 */
static void expect_first_message_fails_between(struct bolt_fixture_endpoint *endpoint,
					       const struct bolt_address *address, int drop,
					       double at_least_ms, double within_ms, int expected_error)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct timespec start;
	char message[8] = { 0 };
	fi_addr_t peer;
	int ret;

	cr_assert_eq(fi_av_insert(endpoint->av, address, 1, &peer, 0, NULL), 1);
	clock_gettime(CLOCK_MONOTONIC, &start);
	cr_assert_eq(fi_send(endpoint->ep, message, sizeof(message), NULL, peer, message), 0);
	if (drop >= 0) {
		rdm_progress_for(endpoint, 50);
		close(drop);
	}
	ret = rdm_wait(endpoint, &entry, &error);
	cr_assert_eq(ret, -FI_EAVAIL);
	cr_expect_eq(error.op_context, message);
	if (expected_error)
		cr_expect_eq(error.err, expected_error, "error %d (%s)", error.err, fi_strerror(error.err));
	cr_expect_geq(liveness_elapsed_ms(&start), at_least_ms, "failed before %.0f ms", at_least_ms);
	cr_expect_lt(liveness_elapsed_ms(&start), within_ms, "the error took longer than %.0f ms", within_ms);
}

/* A first message to address fails within 2 s; drop, if not -1, is closed after 50 ms. */
static void expect_first_message_fails(struct bolt_fixture_endpoint *endpoint, const struct bolt_address *address,
				       int drop)
{
	expect_first_message_fails_between(endpoint, address, drop, 0.0, 2000.0, 0);
}

/*
 * A first message to a peer that is gone, when this end's address is the
 * higher (the one that gives way when both connect at once): where no side
 * channel listens at all, and where the peer's listener took ours but it
 * died before it said hello. Either way the message fails within 2 s.
 */
Test(liveness, first_message_to_a_peer_that_is_gone)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_address gone = {
		.version = BOLT_ADDRESS_VERSION, .family = BOLT_ADDRESS_FAMILY_IPV4,
		.port = htons(1), .ip = { 127, 0, 0, 1 },
	};
	uint16_t port;
	int listener;

	rdm_environment(&options, "gone");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	expect_first_message_fails(&endpoint, &gone, -1);
	listener = low_listener(&port);
	gone.port = htons(port);
	expect_first_message_fails(&endpoint, &gone, listener);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/*
 * A TCP client of the side channel that never says hello is no peer: the
 * endpoint drops it after 2 s instead of keeping its socket and memory.
 */
Test(liveness, a_silent_side_channel_client_is_dropped)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_address name;
	size_t length = sizeof(name);
	struct sockaddr_in address = { .sin_family = AF_INET };
	struct bolt_endpoint *bolt;
	struct timespec start;
	uint8_t heard[256];
	size_t total = 0;
	ssize_t received;
	int fd;

	rdm_environment(&options, "silent");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	bolt = bolt_container_of(endpoint.ep, struct bolt_endpoint, ep_fid);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, &name, &length), 0);
	address.sin_port = name.port;
	memcpy(&address.sin_addr, name.ip, 4);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *) &address, sizeof(address)), 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	rdm_progress_for(&endpoint, 200);
	cr_assert_not_null(bolt->connection_manager.accepted, "not even accepted");
	while (bolt->connection_manager.accepted && liveness_elapsed_ms(&start) < 5000.0)
		rdm_progress_for(&endpoint, 50);
	cr_assert_null(bolt->connection_manager.accepted, "kept a client that never said hello");
	cr_expect_geq(liveness_elapsed_ms(&start), 1900.0, "dropped before its 2 s");
	/* All it ever heard is the side channel's challenge, then the close. */
	while ((received = recv(fd, heard + total, sizeof(heard) - total, 0)) > 0)
		total += (size_t) received;
	cr_assert_eq(received, 0, "its socket is still open");
	cr_assert_eq(total, BOLT_SIDE_CHANNEL_HEADER_SIZE + BOLT_SIDE_CHANNEL_NONCE_SIZE,
		     "it heard %zu bytes, not only the challenge", total);
	close(fd);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/*
 * A peer whose host takes the side channel's connection but whose process
 * never answers (stopped in a debugger, or its machine paused right after
 * the kernel accepted): the handshake fails within the liveness time, not
 * after a fixed longer one, and not before that time either.
 */
Test(liveness, a_peer_silent_in_the_handshake_fails_within_the_liveness_time)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_address silent = {
		.version = BOLT_ADDRESS_VERSION, .family = BOLT_ADDRESS_FAMILY_IPV4,
		.ip = { 127, 0, 0, 1 },
	};
	uint16_t port;
	int listener;

	setenv("FI_BOLT_LIVENESS_TIMEOUT", "2000", 1);
	rdm_environment(&options, "handshake");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	/* The kernel completes the connection into the backlog; nobody reads or writes. */
	listener = low_listener(&port);
	silent.port = htons(port);
	expect_first_message_fails_between(&endpoint, &silent, -1, 1900.0, 3500.0, FI_ETIMEDOUT);
	close(listener);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
}
