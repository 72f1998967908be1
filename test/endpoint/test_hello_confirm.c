/*
 * test_hello_confirm.c: side channels from strangers. A hello is believed
 * only once the listener at the sender it claims confirms it, and nothing is
 * allocated for its peer before: a process of the same host that claims
 * another's address gets nothing and disturbs nothing, a flood of hellos
 * from invented senders leaves no connection behind, an endpoint out of file
 * descriptors neither spins nor floods its log and serves again once some
 * are free, a failed connection keeps no side channel buffers, and one its
 * peer replaced by coming back is freed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "connection/bolt_handshake.h"
#include "rdm_fixture.h"

#define FLOOD_ROUNDS 160
#define FLOOD_ROUND 25          /* below FI_BOLT_SIDE_CHANNEL_PENDING_PER_SOURCE */

static struct bolt_endpoint *bolt_of(struct bolt_fixture_endpoint *endpoint)
{
	return bolt_container_of(endpoint->ep, struct bolt_endpoint, ep_fid);
}

static size_t connection_count(struct bolt_endpoint *bolt)
{
	return HASH_COUNT(bolt->connection_manager.connections) +
	       HASH_COUNT(bolt->connection_manager.retired);
}

static struct bolt_connection *connection_to(struct bolt_endpoint *bolt, const struct bolt_address *peer)
{
	struct bolt_connection *connection;

	HASH_FIND(hh, bolt->connection_manager.connections, peer, sizeof(*peer), connection);
	return connection;
}

/* From this process, a side channel to target's listener that says hello as sender. */
static void start_hello(struct bolt_endpoint *target, const struct bolt_address *sender,
			struct bolt_side_channel_stream *stream)
{
	struct bolt_handshake hello = {
		.sender = *sender,
		.receiver = target->connection_manager.address,
		.byte_order = BOLT_HANDSHAKE_BYTE_ORDER,
		.qp_type = target->domain->primary.qp_type,
		.domain_id = 0x5eed,
		.port_count = 1,
	};
	struct sockaddr_storage address;
	socklen_t length;

	cr_assert_eq(bolt_address_to_sockaddr(&target->connection_manager.address, &address, &length), 0);
	cr_assert_eq(bolt_side_channel_connect((struct sockaddr *) &address, length, 0,
					       &target->domain->job_key, 10000, stream), 0);
	cr_assert_eq(bolt_side_channel_send(stream, BOLT_HANDSHAKE_HELLO, &hello, sizeof(hello)), 0);
}

/* Whether the stream's hello has left (or the stream failed: it never will). */
static bool hello_gone(struct bolt_side_channel_stream *stream)
{
	return bolt_side_channel_progress(stream) || (stream->authenticated && !stream->out_length);
}

/* Progress of endpoint and of count streams until every hello has left, then for milliseconds more. */
static void drive(struct bolt_fixture_endpoint *endpoint, struct bolt_side_channel_stream *streams,
		  int count, int milliseconds)
{
	struct fi_cq_tagged_entry entry;
	struct timespec start;
	bool all_gone = false;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!all_gone && bolt_fixture_elapsed_ms(&start) < RDM_TIMEOUT_MS) {
		fi_cq_read(endpoint->cq, &entry, 0);
		all_gone = true;
		for (int i = 0; i < count; i++)
			all_gone &= hello_gone(&streams[i]);
	}
	cr_assert(all_gone, "hellos still unsent");
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (bolt_fixture_elapsed_ms(&start) < milliseconds) {
		fi_cq_read(endpoint->cq, &entry, 0);
		for (int i = 0; i < count; i++)
			bolt_side_channel_progress(&streams[i]);
	}
}

/* Serves until told, then sends one message to the test's endpoint: 0 if it completes. */
static int client_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t message = 0xc0ffee, told;
	int ret = rdm_open_connected(&endpoint, options, socket);

	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	if (!ret)
		ret = (int) fi_send(endpoint.ep, &message, sizeof(message), NULL, endpoint.peer, &message);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	bolt_fixture_close(&endpoint);
	return ret;
}

/* Tells the client to send, and receives its message. */
static void receive_from_client(struct bolt_fixture_endpoint *endpoint, int socket)
{
	uint64_t message = 0;

	cr_assert_eq(fi_recv(endpoint->ep, &message, sizeof(message), NULL, FI_ADDR_UNSPEC, &message), 0);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	rdm_expect_completion(endpoint, &message, 0);
	cr_assert_eq(message, 0xc0ffee);
	cr_assert_eq(rdm_send_value(socket, 2), 0);
}

/*
 * A process of the same host (here the test itself: same IP) says hello
 * claiming the client's listening address, before the client first sends.
 * The claim must not be believed (no connection to the client appears), and
 * the client's own connection must still work.
 */
Test(hello_confirm, a_spoofed_sender_on_the_same_ip_is_not_believed)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_side_channel_stream spoof;
	struct bolt_address client;
	size_t length = sizeof(client);
	struct bolt_endpoint *bolt;
	int socket;
	pid_t peer = rdm_pair_start(&options, "spoof", client_peer, &options, &endpoint, &socket);

	cr_assert_gt(peer, 0);
	bolt = bolt_of(&endpoint);
	cr_assert_eq(fi_av_lookup(endpoint.av, endpoint.peer, &client, &length), 0);
	start_hello(bolt, &client, &spoof);
	drive(&endpoint, &spoof, 1, 300);
	/* The client answers the question when it progresses: a loaded host may take a while. */
	for (int waited = 0; bolt->connection_manager.accepted && waited < RDM_TIMEOUT_MS; waited += 50)
		rdm_progress_for(&endpoint, 50);
	cr_assert_null(connection_to(bolt, &client), "the spoofed hello was believed");
	cr_assert_eq(connection_count(bolt), 0);
	cr_assert_null(bolt->connection_manager.accepted, "the spoofed side channel is still kept");
	receive_from_client(&endpoint, socket);
	cr_assert_not_null(connection_to(bolt, &client));
	bolt_side_channel_stream_close(&spoof);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the client failed");
}

/*
 * Thousands of hellos, each from an invented sender of the same IP where
 * nothing listens: none is believed, so no connection, link or buffer is
 * made for any, their refusals are said at most once a second, and a real
 * client connects afterwards.
 */
Test(hello_confirm, a_hello_flood_leaves_nothing_behind)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_side_channel_stream *streams = calloc(FLOOD_ROUND, sizeof(*streams));
	struct bolt_fixture_endpoint endpoint;
	struct timespec flood_start;
	struct bolt_address sender;
	size_t length = sizeof(sender);
	struct bolt_endpoint *bolt;
	int socket;
	pid_t peer = rdm_pair_start(&options, "flood", client_peer, &options, &endpoint, &socket);

	cr_assert_gt(peer, 0);
	cr_assert_not_null(streams);
	bolt = bolt_of(&endpoint);
	cr_assert_eq(fi_av_lookup(endpoint.av, endpoint.peer, &sender, &length), 0);
	clock_gettime(CLOCK_MONOTONIC, &flood_start);
	for (int round = 0; round < FLOOD_ROUNDS; round++) {
		for (int i = 0; i < FLOOD_ROUND; i++) {
			/* Port 1 upwards: privileged, no test process listens there. */
			sender.port = htons((uint16_t) (1 + (round * FLOOD_ROUND + i) % 1000));
			sender.endpoint_id = htonl((uint32_t) (round * FLOOD_ROUND + i));
			start_hello(bolt, &sender, &streams[i]);
		}
		drive(&endpoint, streams, FLOOD_ROUND, 5);
		cr_assert_eq(connection_count(bolt), 0, "round %d: hellos from invented senders made connections",
			     round);
		for (int i = 0; i < FLOOD_ROUND; i++)
			bolt_side_channel_stream_close(&streams[i]);
	}
	rdm_progress_for(&endpoint, 100);
	cr_assert_null(bolt->connection_manager.accepted, "side channels of the flood are still kept");
	cr_assert_eq(bolt->connection_manager.refusals, FLOOD_ROUNDS * FLOOD_ROUND);
	cr_assert_leq(bolt->connection_manager.refusal_warnings,
		      (uint64_t) bolt_fixture_elapsed_ms(&flood_start) / 1000 + 1,
		      "%lu warnings for a flood of %d ms: not rate-limited",
		      (unsigned long) bolt->connection_manager.refusal_warnings,
		      (int) bolt_fixture_elapsed_ms(&flood_start));
	receive_from_client(&endpoint, socket);
	cr_assert_eq(connection_count(bolt), 1);
	free(streams);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the client failed");
}

#define FLOOD_SOCKETS 64
#define ROOM_FDS 4

/*
 * The highest file descriptor this process opened, below limit: valgrind
 * keeps its own above the limit it shows the process.
 */
static int highest_fd(rlim_t limit)
{
	DIR *directory = opendir("/proc/self/fd");
	struct dirent *entry;
	int highest = 2;

	if (!directory)
		return 1023;
	while ((entry = readdir(directory)))
		if (atoi(entry->d_name) > highest && (rlim_t) atoi(entry->d_name) < limit)
			highest = atoi(entry->d_name);
	closedir(directory);
	return highest;
}

/*
 * The endpoint under test, with ROOM_FDS file descriptors to spare: serves
 * while the test floods its listener, tells how often accepting failed, then
 * takes the test's message once the flood's descriptors are free again.
 */
static int fd_limited_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct rlimit limit;
	uint64_t message = 0, told;
	int ret = rdm_open_connected(&endpoint, options, socket);

	if (!ret)
		ret = getrlimit(RLIMIT_NOFILE, &limit);
	if (!ret) {
		limit.rlim_cur = (rlim_t) (highest_fd(limit.rlim_cur) + 1 + ROOM_FDS);
		ret = setrlimit(RLIMIT_NOFILE, &limit);
	}
	if (!ret)
		ret = rdm_send_value(socket, 1);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	if (!ret)
		ret = rdm_send_value(socket, bolt_of(&endpoint)->connection_manager.accept_failures);
	if (!ret)
		ret = (int) fi_recv(endpoint.ep, &message, sizeof(message), NULL, FI_ADDR_UNSPEC, &message);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret && message != 0xc0ffee)
		ret = 3;
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	bolt_fixture_close(&endpoint);
	return ret;
}

/* Connects without waiting: the kernel completes it into the listener's backlog. */
static int flood_connect(const struct bolt_address *target)
{
	struct sockaddr_storage address;
	socklen_t length;
	int fd;

	cr_assert_eq(bolt_address_to_sockaddr(target, &address, &length), 0);
	fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	connect(fd, (struct sockaddr *) &address, length);
	return fd;
}

/*
 * An endpoint out of file descriptors (RLIMIT_NOFILE low, in a forked child)
 * while connections flood its listener: accepting backs off instead of
 * spinning (a few failures in 1.5 s, and their warning said at most every
 * 10 s), and once the flood's sockets close, a real client connects and
 * sends.
 */
Test(hello_confirm, out_of_file_descriptors_the_endpoint_backs_off_then_serves)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_address target;
	size_t length = sizeof(target);
	int socket, flood[FLOOD_SOCKETS];
	uint64_t ready, failures, message = 0xc0ffee;
	pid_t peer = rdm_pair_start(&options, "emfile", fd_limited_peer, &options, &endpoint, &socket);

	cr_assert_gt(peer, 0);
	cr_assert_eq(rdm_receive_value(socket, &ready), 0);
	cr_assert_eq(fi_av_lookup(endpoint.av, endpoint.peer, &target, &length), 0);
	for (int i = 0; i < FLOOD_SOCKETS; i++)
		flood[i] = flood_connect(&target);
	usleep(1500 * 1000);
	for (int i = 0; i < FLOOD_SOCKETS; i++)
		close(flood[i]);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_receive_value(socket, &failures), 0);
	cr_assert_geq(failures, 1, "accepting never ran out of file descriptors");
	cr_assert_leq(failures, 15, "accepting failed %lu times in 1.5 s: it spins", (unsigned long) failures);
	cr_assert_eq(fi_send(endpoint.ep, &message, sizeof(message), NULL, endpoint.peer, &message), 0);
	rdm_expect_completion(&endpoint, &message, 0);
	cr_assert_eq(rdm_send_value(socket, 2), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the endpoint out of descriptors failed");
}

/*
 * A failed connection stays while the protocols may name it (unexpected
 * messages, directed receives, collective groups), but its side channel's
 * buffers, most of its memory, go with the failure.
 */
static int leaving_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t message = 0xc0ffee, go;
	int ret = rdm_open_connected(&endpoint, options, socket);

	if (!ret)
		ret = (int) fi_send(endpoint.ep, &message, sizeof(message), NULL, endpoint.peer, &message);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	/* Leaves once the test has seen the connection up (a slow test, under valgrind, might not). */
	if (!ret)
		ret = rdm_receive_value(socket, &go);
	bolt_fixture_close(&endpoint);
	return ret;
}

Test(hello_confirm, a_failed_connection_keeps_no_side_channel_buffers)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_connection *connection;
	struct bolt_address client;
	size_t length = sizeof(client);
	uint64_t message = 0;
	int socket;
	pid_t peer = rdm_pair_start(&options, "leaving", leaving_peer, &options, &endpoint, &socket);

	cr_assert_gt(peer, 0);
	cr_assert_eq(fi_av_lookup(endpoint.av, endpoint.peer, &client, &length), 0);
	cr_assert_eq(fi_recv(endpoint.ep, &message, sizeof(message), NULL, FI_ADDR_UNSPEC, &message), 0);
	rdm_expect_completion(&endpoint, &message, 0);
	connection = connection_to(bolt_of(&endpoint), &client);
	cr_assert_not_null(connection);
	cr_assert_not_null(connection->stream);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	for (int waited = 0; connection->state != BOLT_CONNECTION_FAILED && waited < 5000; waited += 50)
		rdm_progress_for(&endpoint, 50);
	cr_assert_eq(connection->state, BOLT_CONNECTION_FAILED, "the peer left and its connection lives on");
	cr_assert_null(connection->stream, "a failed connection keeps its side channel");
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the peer failed");
}

#define RETURNING_ROUNDS 8

/* A free TCP port of the loopback address, for a peer that comes back at the same address. */
static int free_port(void)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t length = sizeof(address);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *) &address, length), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *) &address, &length), 0);
	close(fd);
	return ntohs(address.sin_port);
}

/*
 * A process that leaves and comes back at the same address, RETURNING_ROUNDS
 * times: each time it opens its endpoint, sends one message, closes, says so,
 * and waits for the test's word before it comes back.
 */
static int returning_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct bolt_address target;
	size_t length = sizeof(target);
	fi_addr_t target_fi_addr;
	uint64_t message, told;
	int ret = rdm_open_connected(&endpoint, options, socket);

	if (!ret)
		ret = fi_av_lookup(endpoint.av, endpoint.peer, &target, &length);
	for (int round = 0; !ret && round < RETURNING_ROUNDS; round++) {
		if (round && !(ret = rdm_open(&endpoint, options)))
			ret = fi_av_insert(endpoint.av, &target, 1, &target_fi_addr, 0, NULL) == 1 ? 0 : 1;
		message = 0xc0ffee00u + (uint64_t) round;
		if (!ret)
			ret = (int) fi_send(endpoint.ep, &message, sizeof(message), NULL,
					    round ? target_fi_addr : endpoint.peer, &message);
		if (!ret)
			ret = rdm_wait(&endpoint, &entry, &error);
		bolt_fixture_close(&endpoint);
		if (!ret)
			ret = rdm_send_value(socket, (uint64_t) round);
		if (!ret)
			ret = rdm_receive_value(socket, &told);
	}
	return ret;
}

/*
 * Each time the peer comes back, its new hello replaces the failed
 * connection, and the failed one, named by nothing any more, is freed: a
 * peer that connects and fails again and again costs nothing lasting.
 */
Test(hello_confirm, a_peer_that_keeps_coming_back_leaves_no_failed_connections)
{
	char service[8];
	struct rdm_options options = { .profile = "thunderbolt" };
	struct rdm_options returning = { .profile = "thunderbolt", .node = "127.0.0.1",
					 .service = service, .flags = FI_SOURCE };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_connection *connection;
	struct bolt_address client;
	size_t length = sizeof(client);
	uint64_t message, round;
	int socket;
	pid_t peer;

	snprintf(service, sizeof(service), "%d", free_port());
	peer = rdm_pair_start(&options, "returning", returning_peer, &returning, &endpoint, &socket);
	cr_assert_gt(peer, 0);
	cr_assert_eq(fi_av_lookup(endpoint.av, endpoint.peer, &client, &length), 0);
	for (uint64_t expected = 0; expected < RETURNING_ROUNDS; expected++) {
		cr_assert_eq(fi_recv(endpoint.ep, &message, sizeof(message), NULL, FI_ADDR_UNSPEC, &message), 0);
		rdm_expect_completion(&endpoint, &message, 0);
		cr_assert_eq(message, 0xc0ffee00u + expected);
		cr_assert_eq(rdm_receive_value(socket, &round), 0);
		connection = connection_to(bolt_of(&endpoint), &client);
		cr_assert_not_null(connection, "round %lu: the peer's messages came without a connection",
				   (unsigned long) expected);
		for (int waited = 0; connection->state != BOLT_CONNECTION_FAILED && waited < 5000; waited += 50)
			rdm_progress_for(&endpoint, 50);
		cr_assert_eq(connection->state, BOLT_CONNECTION_FAILED);
		cr_assert_eq(rdm_send_value(socket, 1), 0);
	}
	rdm_progress_for(&endpoint, 100);
	cr_assert_eq(HASH_COUNT(bolt_of(&endpoint)->connection_manager.retired), 0,
		     "%u failed connections replaced by their peer's return are kept",
		     HASH_COUNT(bolt_of(&endpoint)->connection_manager.retired));
	cr_assert_eq(connection_count(bolt_of(&endpoint)), 1);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the returning peer failed");
}
