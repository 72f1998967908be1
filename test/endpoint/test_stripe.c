/*
 * test_stripe.c: large transfers striped over several cables. On a mesh of
 * two hosts joined by two cables, each process's domain has the other
 * cable's port as a stripe port; the first large message makes a data rail
 * there, found by probing, and the messages after it go in stripes over
 * both cables, both ways, and arrive intact. On three hosts with two cables
 * between each pair, the two ports that lead to the third host reach no port
 * of the peer: their rails end up unavailable, the one that does reach it
 * carries stripes. A peer on the third host, which only the domain's other
 * ports reach: the link is on one of those, its data rail beside it, and the
 * stripes go over the other cable to that host. A port that another domain
 * of the process has as its own is left to that domain. Writes into a granted region from
 * FI_BOLT_STRIPE_THRESHOLD on ask again, to stripe; smaller ones stay direct.
 * Large reads are written back in stripes too. A peer that stops progressing
 * for longer than FI_BOLT_RAIL_PROBE_TIMEOUT while a probe is on its way
 * does not lose the cable.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "rdm_fixture.h"

#define MR_MODE (FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_LOCAL | FI_MR_ALLOCATED)
#define MESSAGE_SIZE (1024 * 1024 + 7)
#define MESSAGES 6
#define SETTLE_MS 10000

struct stripe_case {
	const char *topology;
	int ready_stripe_rails;         /* expected at host 0, once probing settles */
	int unavailable_stripe_rails;
	const char *claimed_port;       /* host 0 opens a domain on this port too, or NULL */
	int peer_host;                  /* 0: host 1 */
};

/* What the peer needs: the endpoint's options, and whether its messages must stripe. */
struct stripe_peer_argument {
	const struct rdm_options *options;
	bool striped;
};

static struct bolt_connection *only_connection(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_endpoint *bolt = bolt_container_of(endpoint->ep, struct bolt_endpoint, ep_fid);

	return bolt->connection_manager.connections;
}

/* Stripe rails of connection in state. */
static int stripe_rails_in(const struct bolt_connection *connection, enum bolt_data_rail_state state)
{
	int count = 0;

	for (int index = BOLT_MAX_DATA_RAILS; index < BOLT_MAX_CONNECTION_RAILS; index++)
		count += connection->data_rails[index].state == state;
	return count;
}

/* Whether every rail asked for is ready or given up. */
static bool rails_settled(const struct bolt_connection *connection)
{
	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		enum bolt_data_rail_state state = connection->data_rails[index].state;

		if (state != BOLT_DATA_RAIL_NONE && state != BOLT_DATA_RAIL_READY &&
		    state != BOLT_DATA_RAIL_UNAVAILABLE)
			return false;
	}
	return true;
}

/* Bytes this end's stripes carried on stripe rails (stripe true) or on the domain's port. */
static uint64_t striped_bytes(struct bolt_fixture_endpoint *endpoint, bool stripe)
{
	return stripe ? rdm_striped_bytes(endpoint->ep, BOLT_MAX_DATA_RAILS, BOLT_MAX_CONNECTION_RAILS) :
			rdm_striped_bytes(endpoint->ep, 0, BOLT_MAX_DATA_RAILS);
}

static int send_message(struct bolt_fixture_endpoint *endpoint, char *buffer, uint32_t seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret;

	rdm_fill(buffer, MESSAGE_SIZE, seed);
	ret = (int) fi_send(endpoint->ep, buffer, MESSAGE_SIZE, NULL, endpoint->peer, buffer);
	return ret ? ret : rdm_wait(endpoint, &entry, &error);
}

/* 0 when a message of seed arrives intact. */
static int receive_message(struct bolt_fixture_endpoint *endpoint, char *buffer, uint32_t seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret;

	memset(buffer, 0, MESSAGE_SIZE);
	ret = (int) fi_recv(endpoint->ep, buffer, MESSAGE_SIZE, NULL, endpoint->peer, buffer);
	if (!ret)
		ret = rdm_wait(endpoint, &entry, &error);
	if (!ret && (entry.len != MESSAGE_SIZE || !rdm_check(buffer, MESSAGE_SIZE, seed)))
		ret = -FI_EIO;
	return ret;
}

/* Host 1: takes the warm-up and MESSAGES messages, sends MESSAGES back. */
static int stripe_peer(int socket, void *argument)
{
	const struct stripe_peer_argument *peer = argument;
	const struct rdm_options *options = peer->options;
	struct bolt_fixture_endpoint endpoint;
	uint64_t done;
	char *buffer;
	int ret;

	ret = rdm_open_connected(&endpoint, options, socket);
	buffer = malloc(MESSAGE_SIZE);
	if (!buffer)
		ret = -FI_ENOMEM;
	for (int i = 0; !ret && i <= MESSAGES; i++)
		ret = receive_message(&endpoint, buffer, 100 + (uint32_t) i);
	for (int i = 0; !ret && i < MESSAGES; i++)
		ret = send_message(&endpoint, buffer, 200 + (uint32_t) i);
	/* Its messages went over the second cable too, where that was not taken. */
	if (!ret && (striped_bytes(&endpoint, true) > 0) != peer->striped)
		ret = -FI_EOTHER;
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	free(buffer);
	bolt_fixture_close(&endpoint);
	return ret;
}

static void striped_messages(const char *profile, const struct stripe_case *stripe, const char *tag)
{
	struct rdm_options options = {
		.profile = profile, .mr_mode = MR_MODE, .software_device_only = true,
		.topology = stripe->topology, .peer_host = stripe->peer_host,
	};
	struct stripe_peer_argument argument = {
		.options = &options, .striped = stripe->ready_stripe_rails > 0,
	};
	struct bolt_fixture_endpoint endpoint, other = { 0 };
	struct bolt_connection *connection;
	char *buffer;
	int socket;
	pid_t peer;

	setenv("FI_BOLT_DATA_RAILS", "1", 1);
	peer = rdm_pair_start(&options, tag, stripe_peer, &argument, &endpoint, &socket);
	cr_assert(peer > 0);
	if (stripe->claimed_port) {
		struct fi_info *hints = rdm_hints(&options);

		cr_assert(hints);
		hints->domain_attr->name = strdup(stripe->claimed_port);
		cr_assert_eq(rdm_open_domain(&other, hints, &options), 0);
		fi_freeinfo(hints);
	}
	buffer = malloc(MESSAGE_SIZE);
	cr_assert(buffer);
	/* The first large message asks for the rails; probing settles behind it. */
	cr_assert_eq(send_message(&endpoint, buffer, 100), 0);
	connection = only_connection(&endpoint);
	for (int waited = 0; waited < SETTLE_MS && !rails_settled(connection); waited += 10)
		rdm_progress_for(&endpoint, 10);
	cr_assert(rails_settled(connection), "data rails still probing after %d ms", SETTLE_MS);
	cr_assert_eq(bolt_link_on_own_ports(connection->link), !stripe->peer_host);
	cr_assert_eq(connection->data_rails[0].state, BOLT_DATA_RAIL_READY);
	cr_assert_eq(connection->data_rails[0].port, connection->link->port,
		     "the data rail is not beside the link");
	cr_assert_eq(stripe_rails_in(connection, BOLT_DATA_RAIL_READY), stripe->ready_stripe_rails);
	cr_assert_eq(stripe_rails_in(connection, BOLT_DATA_RAIL_UNAVAILABLE),
		     stripe->unavailable_stripe_rails);
	for (int index = BOLT_MAX_DATA_RAILS; index < BOLT_MAX_CONNECTION_RAILS; index++)
		if (connection->data_rails[index].state == BOLT_DATA_RAIL_READY)
			cr_assert_neq(connection->data_rails[index].port, connection->link->port);

	for (int i = 1; i <= MESSAGES; i++)
		cr_assert_eq(send_message(&endpoint, buffer, 100 + (uint32_t) i), 0);
	cr_assert_eq(striped_bytes(&endpoint, true) > 0, argument.striped,
		     "%llu bytes went over the second cable",
		     (unsigned long long) striped_bytes(&endpoint, true));
	cr_assert_gt(striped_bytes(&endpoint, false), 0, "nothing went over the first cable");
	for (int i = 0; i < MESSAGES; i++)
		cr_assert_eq(receive_message(&endpoint, buffer, 200 + (uint32_t) i), 0,
			     "message %d back from the peer", i);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	free(buffer);
	if (stripe->claimed_port)
		bolt_fixture_close(&other);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the peer failed");
	unsetenv("FI_BOLT_DATA_RAILS");
}

/* Progress until the rails settle and the connection holds a grant; false after SETTLE_MS. */
static bool wait_for_rails_and_grant(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_connection *connection = only_connection(endpoint);

	for (int waited = 0; waited < SETTLE_MS; waited += 10) {
		if (rails_settled(connection) && bolt_peer_of(connection)->grants)
			return true;
		rdm_progress_for(endpoint, 10);
	}
	return false;
}

#define REGION_SIZE (4 * 1024 * 1024)
#define FIRST_WRITE (64 * 1024)                 /* asks, and brings the grant */
#define DIRECT_WRITE (512 * 1024)               /* below FI_BOLT_STRIPE_THRESHOLD */
#define STRIPED_WRITE (REGION_SIZE - FIRST_WRITE - DIRECT_WRITE)

/* Host 1: offers a region, serves until told, then checks it. */
static int region_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = calloc(1, REGION_SIZE);
	struct fid_mr *mr = NULL;
	int ret;

	ret = rdm_serve_region(&endpoint, options, socket, region, REGION_SIZE, FI_REMOTE_WRITE, &mr);
	if (!ret && !rdm_check(region, REGION_SIZE, 31))
		ret = -FI_EIO;
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* Host 0's side of a test against the peer's region, on mesh:2x2. */
struct region_pair {
	struct rdm_options options;
	struct bolt_fixture_endpoint endpoint;
	int socket;
	pid_t peer;
	char *local;                    /* REGION_SIZE bytes, registered as mr */
	struct fid_mr *mr;
	uint64_t remote_address, remote_key;
};

static void region_pair_start(struct region_pair *pair, const char *profile, const char *tag,
			      int (*peer)(int socket, void *argument), uint64_t access)
{
	memset(pair, 0, sizeof(*pair));
	pair->options = (struct rdm_options) {
		.profile = profile, .mr_mode = MR_MODE, .software_device_only = true,
		.topology = "mesh:2x2",
	};
	pair->peer = rdm_pair_start(&pair->options, tag, peer, &pair->options, &pair->endpoint,
				    &pair->socket);
	cr_assert(pair->peer > 0);
	pair->local = malloc(REGION_SIZE);
	cr_assert(pair->local);
	cr_assert_eq(rdm_register_region(&pair->endpoint, pair->local, REGION_SIZE, access, &pair->mr), 0);
	cr_assert_eq(rdm_receive_value(pair->socket, &pair->remote_address), 0);
	cr_assert_eq(rdm_receive_value(pair->socket, &pair->remote_key), 0);
}

/* Tells the peer it is done; peer_failure says what its failure would mean. */
static void region_pair_finish(struct region_pair *pair, const char *peer_failure)
{
	cr_assert_eq(rdm_send_value(pair->socket, 1), 0);
	cr_assert_eq(fi_close(&pair->mr->fid), 0);
	free(pair->local);
	cr_assert_eq(rdm_pair_finish(&pair->options, &pair->endpoint, pair->peer, pair->socket), 0,
		     "%s", peer_failure);
}

/* Writes [offset, offset + length) of the local buffer into the peer's region, and waits for it. */
static void write_range(struct region_pair *pair, size_t offset, size_t length)
{
	cr_assert_eq(fi_write(pair->endpoint.ep, pair->local + offset, length, fi_mr_desc(pair->mr),
			      pair->endpoint.peer, pair->remote_address + offset, pair->remote_key,
			      pair->local), 0);
	rdm_expect_completion(&pair->endpoint, pair->local, 0);
}

static void granted_writes(const char *profile, const char *tag)
{
	struct region_pair pair;
	struct bolt_connection *connection;
	uint64_t striped, direct;

	region_pair_start(&pair, profile, tag, region_peer, FI_WRITE);
	rdm_fill(pair.local, REGION_SIZE, 31);
	write_range(&pair, 0, FIRST_WRITE);
	cr_assert(wait_for_rails_and_grant(&pair.endpoint), "no grant, or rails still probing");
	connection = only_connection(&pair.endpoint);
	cr_assert(bolt_data_rail_striping(connection));

	striped = striped_bytes(&pair.endpoint, true);
	direct = bolt_peer_of(connection)->direct_writes;
	write_range(&pair, FIRST_WRITE, DIRECT_WRITE);
	cr_assert_eq(bolt_peer_of(connection)->direct_writes, direct + 1, "a write below the threshold asked");
	cr_assert_eq(striped_bytes(&pair.endpoint, true), striped);
	write_range(&pair, FIRST_WRITE + DIRECT_WRITE, STRIPED_WRITE);
	cr_assert_eq(bolt_peer_of(connection)->direct_writes, direct + 1, "a write above the threshold went direct");
	cr_assert_gt(striped_bytes(&pair.endpoint, true), striped, "nothing went over the second cable");
	region_pair_finish(&pair, "the region holds wrong data");
}

Test(stripe, thunderbolt_large_granted_writes_stripe)
{
	granted_writes("thunderbolt", "stripe-granted-tb");
}

Test(stripe, rocev2_large_granted_writes_stripe)
{
	granted_writes("rocev2", "stripe-granted-roce");
}

/* Host 1: offers a region of seed 57 to read, serves, and must have written some in stripes. */
static int read_region_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = malloc(REGION_SIZE);
	struct fid_mr *mr = NULL;
	int ret;

	if (region)
		rdm_fill(region, REGION_SIZE, 57);
	ret = rdm_serve_region(&endpoint, options, socket, region, REGION_SIZE, FI_REMOTE_READ, &mr);
	if (!ret && striped_bytes(&endpoint, true) == 0)
		ret = -FI_EOTHER;
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

static void striped_reads(const char *profile, const char *tag)
{
	struct region_pair pair;
	struct bolt_connection *connection = NULL;

	region_pair_start(&pair, profile, tag, read_region_peer, FI_READ);
	/* The first asks for the rails; the second has them. */
	for (int i = 0; i < 2; i++) {
		memset(pair.local, 0, REGION_SIZE);
		cr_assert_eq(fi_read(pair.endpoint.ep, pair.local, REGION_SIZE, fi_mr_desc(pair.mr),
				     pair.endpoint.peer, pair.remote_address, pair.remote_key,
				     pair.local), 0);
		rdm_expect_completion(&pair.endpoint, pair.local, 0);
		cr_assert(rdm_check(pair.local, REGION_SIZE, 57), "read %d brought wrong data", i);
		connection = only_connection(&pair.endpoint);
		for (int waited = 0; waited < SETTLE_MS && !rails_settled(connection); waited += 10)
			rdm_progress_for(&pair.endpoint, 10);
	}
	cr_assert_eq(bolt_peer_of(connection)->reads_written_back, 2);
	region_pair_finish(&pair, "the peer wrote nothing over the second cable");
}

Test(stripe, thunderbolt_large_reads_stripe)
{
	striped_reads("thunderbolt", "stripe-read-tb");
}

Test(stripe, rocev2_large_reads_stripe)
{
	striped_reads("rocev2", "stripe-read-roce");
}

static const struct stripe_case two_hosts = { "mesh:2x2", 1, 0, NULL, 0 };
static const struct stripe_case three_hosts = { "mesh:3x2", 1, 2, NULL, 0 };
static const struct stripe_case second_port_claimed = { "mesh:2x2", 0, 1, "rdma_en1", 0 };
static const struct stripe_case third_host = { "mesh:3x2", 1, 2, NULL, 2 };

Test(stripe, rocev2_two_cables)
{
	striped_messages("rocev2", &two_hosts, "stripe-rocev2");
}

Test(stripe, thunderbolt_two_cables)
{
	striped_messages("thunderbolt", &two_hosts, "stripe-tb");
}

Test(stripe, thunderbolt_ports_to_another_host_are_given_up)
{
	striped_messages("thunderbolt", &three_hosts, "stripe-tb3");
}

Test(stripe, rocev2_ports_to_another_host_are_given_up)
{
	striped_messages("rocev2", &three_hosts, "stripe-rocev3");
}

/* The third host, which only host 0's other ports reach: rails beside that link. */
Test(stripe, thunderbolt_far_peer_stripes)
{
	striped_messages("thunderbolt", &third_host, "stripe-tb-far");
}

Test(stripe, rocev2_far_peer_stripes)
{
	striped_messages("rocev2", &third_host, "stripe-rocev-far");
}

/* A domain of the process on the second cable's port keeps its queue pairs: no stripes there. */
Test(stripe, thunderbolt_port_of_another_domain_is_left_alone)
{
	striped_messages("thunderbolt", &second_port_claimed, "stripe-claimed");
}

/*
 * The peer answers the stripe rail's request (it arrives ahead of the large
 * message), takes a small message, and then stops progressing for longer
 * than the probe timeout; our probe lands in its CQ while it pauses. The
 * cable is still found: the peer judges the probe when it looks again.
 */
#define PAUSE_MS 600
#define LARGE_TAG 1
#define SMALL_TAG 2
#define WARM_UP_TAG 3

static int tagged_wait(struct bolt_fixture_endpoint *endpoint, char *buffer, size_t length, uint64_t tag)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = (int) fi_trecv(endpoint->ep, buffer, length, NULL, endpoint->peer, tag, 0, buffer);

	return ret ? ret : rdm_wait(endpoint, &entry, &error);
}

static int pausing_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *buffer = calloc(1, MESSAGE_SIZE), small[8];
	uint64_t done;
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : -FI_ENOMEM;

	if (!ret)
		ret = tagged_wait(&endpoint, small, sizeof(small), WARM_UP_TAG);
	if (!ret)
		ret = tagged_wait(&endpoint, small, sizeof(small), SMALL_TAG);
	if (!ret)
		usleep(PAUSE_MS * 1000);
	if (!ret)
		ret = tagged_wait(&endpoint, buffer, MESSAGE_SIZE, LARGE_TAG);
	if (!ret && !rdm_check(buffer, MESSAGE_SIZE, 100))
		ret = -FI_EIO;
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	bolt_fixture_close(&endpoint);
	free(buffer);
	return ret;
}

Test(stripe, thunderbolt_peer_pausing_keeps_the_cable)
{
	struct rdm_options options = {
		.profile = "thunderbolt", .mr_mode = MR_MODE, .software_device_only = true,
		.topology = "mesh:2x2", .caps = FI_MSG | FI_TAGGED | FI_RMA,
	};
	struct bolt_fixture_endpoint endpoint;
	struct bolt_connection *connection;
	char *buffer, small[8] = "small";
	int socket;
	pid_t peer;

	peer = rdm_pair_start(&options, "stripe-pause", pausing_peer, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	buffer = malloc(MESSAGE_SIZE);
	cr_assert(buffer);
	rdm_fill(buffer, MESSAGE_SIZE, 100);
	/* Connected first, so that what follows goes out at once. */
	cr_assert_eq(fi_tsend(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, WARM_UP_TAG, small), 0);
	rdm_expect_completion(&endpoint, small, 0);
	cr_assert_eq(fi_tsend(endpoint.ep, buffer, MESSAGE_SIZE, NULL, endpoint.peer, LARGE_TAG, buffer), 0);
	cr_assert_eq(fi_tsend(endpoint.ep, small, sizeof(small), NULL, endpoint.peer, SMALL_TAG, small), 0);
	/* The peer answers, takes the small message and pauses before we see its answer. */
	usleep(PAUSE_MS / 3 * 1000);
	for (int i = 0; i < 2; i++) {
		struct fi_cq_tagged_entry entry;
		struct fi_cq_err_entry error;

		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0);
	}
	connection = only_connection(&endpoint);
	for (int waited = 0; waited < SETTLE_MS && !rails_settled(connection); waited += 10)
		rdm_progress_for(&endpoint, 10);
	cr_assert_eq(stripe_rails_in(connection, BOLT_DATA_RAIL_READY), 1,
		     "the cable was given up while the peer paused");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	free(buffer);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the peer failed");
}
