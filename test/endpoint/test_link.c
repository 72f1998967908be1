/*
 * test_link.c: the connections between the endpoints of one domain and those
 * of a peer domain share one control queue pair, a link
 * (connection/bolt_link.c). Twelve endpoint pairs on a device that allows
 * six queue pairs all move messages, writes with remote CQ data and reads,
 * each to the right endpoint; a pair that closes leaves the others working
 * and a new pair joins; a peer that dies fails every pair on the link.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "rdm_fixture.h"

#define MOST_PAIRS 12
#define SMALL 200
#define LARGE (256 * 1024)
#define REGION (64 * 1024)
#define CQ_DATA_BASE 0x1000u
/* Receives name their pair's peer: when it goes, they fail. */
#define LINK_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV)

struct link_pair {
	struct bolt_fixture_endpoint endpoint;
	char small_in[SMALL], small_out[SMALL];
	char *large_in, *large_out;
	char *region;                   /* written and read by the peer */
	char *written;                  /* what this end writes into the peer's region, read back */
	struct fid_mr *mr;
	uint64_t peer_address, peer_key;
};

struct link_side {
	const struct rdm_options *options;
	int socket;
	int count;
	struct link_pair pairs[MOST_PAIRS];
};

static struct bolt_connection *pair_connection(struct link_pair *pair)
{
	return bolt_container_of(pair->endpoint.ep, struct bolt_endpoint, ep_fid)->connection_manager.connections;
}

static struct bolt_link *pair_link(struct link_pair *pair)
{
	struct bolt_connection *connection = pair_connection(pair);

	return connection ? connection->link : NULL;
}

/* Opens pair index on the first pair's domain (the first: a domain of its own), connects it, offers a region. */
static int link_pair_open(struct link_side *side, int index)
{
	struct link_pair *pair = &side->pairs[index];
	int ret;

	pair->large_in = calloc(1, LARGE);
	pair->large_out = malloc(LARGE);
	pair->region = calloc(1, REGION);
	pair->written = malloc(REGION);
	if (!pair->large_in || !pair->large_out || !pair->region || !pair->written)
		return -FI_ENOMEM;
	if (index == 0) {
		ret = rdm_open(&pair->endpoint, side->options);
	} else {
		ret = rdm_open_endpoint(&pair->endpoint, &side->pairs[0].endpoint, side->options);
		if (!ret)
			ret = fi_enable(pair->endpoint.ep);
	}
	if (!ret)
		ret = rdm_connect(&pair->endpoint, side->socket);
	if (!ret)
		ret = rdm_register_region(&pair->endpoint, pair->region, REGION,
					  FI_REMOTE_WRITE | FI_REMOTE_READ, &pair->mr);
	if (!ret && (rdm_send_value(side->socket, (uintptr_t) pair->region) ||
		     rdm_send_value(side->socket, fi_mr_key(pair->mr)) ||
		     rdm_receive_value(side->socket, &pair->peer_address) ||
		     rdm_receive_value(side->socket, &pair->peer_key)))
		ret = -FI_EIO;
	return ret;
}

static void link_pair_close(struct link_pair *pair)
{
	if (pair->mr)
		fi_close(&pair->mr->fid);
	bolt_fixture_close(&pair->endpoint);
	free(pair->large_in);
	free(pair->large_out);
	free(pair->region);
	free(pair->written);
	memset(pair, 0, sizeof(*pair));
}

static int link_side_open(struct link_side *side)
{
	for (int index = 0; index < side->count; index++) {
		int ret = link_pair_open(side, index);

		if (ret)
			return ret;
	}
	return 0;
}

/* Closes the pairs in reverse: the first holds the domain. */
static void link_side_close(struct link_side *side)
{
	for (int index = side->count - 1; index >= 0; index--)
		link_pair_close(&side->pairs[index]);
}

/* Seeds of what each end sends on pair index in round: the two ends never send the same bytes. */
static uint32_t link_seed(int sender, int index, int round, int what)
{
	return (uint32_t) (sender * 100000 + round * 1000 + index * 10 + what);
}

/*
 * One round on pairs first to end - 1, at both ends at once: a small tagged
 * message, a large message and a write with remote CQ data each way, all
 * posted before any is waited for; then each end reads its write back.
 * Returns 0, or which check failed.
 */
static int link_round(struct link_side *side, int me, int first, int end, int round)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int peer = 1 - me;

	for (int index = first; index < end; index++) {
		struct link_pair *pair = &side->pairs[index];
		struct fid_ep *ep = pair->endpoint.ep;
		fi_addr_t to = pair->endpoint.peer;

		rdm_fill(pair->small_out, SMALL, link_seed(me, index, round, 0));
		rdm_fill(pair->large_out, LARGE, link_seed(me, index, round, 1));
		rdm_fill(pair->written, REGION, link_seed(me, index, round, 2));
		if (fi_trecv(ep, pair->small_in, SMALL, NULL, to, (uint64_t) index, 0, pair->small_in) ||
		    fi_recv(ep, pair->large_in, LARGE, NULL, to, pair->large_in) ||
		    fi_tsend(ep, pair->small_out, SMALL, NULL, to, (uint64_t) index, pair->small_out) ||
		    fi_send(ep, pair->large_out, LARGE, NULL, to, pair->large_out) ||
		    fi_writedata(ep, pair->written, REGION, NULL, CQ_DATA_BASE + (uint32_t) index, to,
				 pair->peer_address, pair->peer_key, pair->written))
			return 1;
	}
	for (int index = first; index < end; index++) {
		struct link_pair *pair = &side->pairs[index];
		bool remote_write = false;

		/* Two receives, the peer's write, and three transmits of our own. */
		for (int seen = 0; seen < 6; seen++) {
			if (rdm_wait(&pair->endpoint, &entry, &error))
				return 2;
			if (entry.flags & FI_REMOTE_CQ_DATA)
				remote_write = entry.data == CQ_DATA_BASE + (uint32_t) index;
		}
		if (!remote_write)
			return 3;
		if (!rdm_check(pair->small_in, SMALL, link_seed(peer, index, round, 0)) ||
		    !rdm_check(pair->large_in, LARGE, link_seed(peer, index, round, 1)) ||
		    !rdm_check(pair->region, REGION, link_seed(peer, index, round, 2)))
			return 4;
	}
	for (int index = first; index < end; index++) {
		struct link_pair *pair = &side->pairs[index];

		memset(pair->large_in, 0, REGION);
		if (fi_read(pair->endpoint.ep, pair->large_in, REGION, NULL, pair->endpoint.peer,
			    pair->peer_address, pair->peer_key, NULL) ||
		    rdm_wait(&pair->endpoint, &entry, &error) ||
		    memcmp(pair->large_in, pair->written, REGION))
			return 5;
	}
	return 0;
}

/*
 * Whether pairs first to end - 1 share links: at most two, which each end
 * may make when both answer a first hello at once, with every pair on one.
 */
static bool link_shared(struct link_side *side, int first, int end)
{
	struct bolt_link *links[2] = { NULL, NULL };
	int users = 0;

	for (int index = first; index < end; index++) {
		struct bolt_link *link = pair_link(&side->pairs[index]);

		if (!link)
			return false;
		if (link == links[0] || link == links[1])
			continue;
		if (links[1])
			return false;
		links[links[0] ? 1 : 0] = link;
		users += link->users;
	}
	return users == end - first;
}

/* Both ends have finished what they checked: neither closes under the other's reads. */
static int link_barrier(struct link_side *side)
{
	uint64_t value;

	if (rdm_send_value(side->socket, 1))
		return -FI_EIO;
	return rdm_serve_until_told(&side->pairs[0].endpoint, side->socket, &value);
}

struct link_test {
	struct rdm_options options;
	int pairs;
	bool shared;                    /* FI_BOLT_SHARE_QUEUE_PAIRS */
};

static struct link_test link_test_of(const char *profile, int pairs, bool shared)
{
	struct link_test test = {
		.options = { .profile = profile, .caps = LINK_CAPS, .mr_mode = RDM_MR_MODE },
		.pairs = pairs,
		.shared = shared,
	};

	return test;
}

/* Either end's start: its pairs open and connected to the other's. */
static int link_side_start(const struct link_test *test, struct link_side *side, int socket)
{
	memset(side, 0, sizeof(*side));
	side->options = &test->options;
	side->socket = socket;
	side->count = test->pairs;
	return link_side_open(side);
}

/*
 * The test's start: the environment, the peer forked to run peer(socket,
 * test), this end open. On a mesh this end is host 0 and the peer host 2.
 */
static pid_t link_start(struct link_test *test, struct link_side *side, const char *tag,
			int (*peer)(int socket, void *argument))
{
	int socket;
	pid_t pid;

	rdm_environment(&test->options, tag);
	if (test->options.topology)
		setenv("FI_BOLT_SOFT_HOST", "2", 1);
	pid = rdm_fork(peer, test, &socket);
	setenv("FI_BOLT_SOFT_HOST", "0", 1);
	cr_assert(pid > 0);
	cr_assert_eq(link_side_start(test, side, socket), 0);
	return pid;
}

/* The test's end: this end closed, the environment cleaned up. */
static void link_finish(struct link_test *test, struct link_side *side)
{
	int socket = side->socket;

	link_side_close(side);
	close(socket);
	rdm_environment_cleanup(&test->options);
}

/* The test's end after both ends' checks: the peer's status, then link_finish. */
static void link_end(struct link_test *test, struct link_side *side, pid_t peer)
{
	cr_assert_eq(link_barrier(side), 0);
	cr_assert_eq(bolt_fixture_process_status(peer), 0, "the peer checked its end");
	link_finish(test, side);
}

/* The peer: the same rounds as the test's end; its exit status says which check failed. */
static int all_pairs_peer(int socket, void *argument)
{
	const struct link_test *test = argument;
	struct link_side side;
	int ret = link_side_start(test, &side, socket);

	if (!ret)
		ret = link_round(&side, 1, 0, side.count, 0);
	if (!ret && test->shared && !link_shared(&side, 0, side.count))
		ret = 20;
	if (!ret)
		ret = link_barrier(&side);
	link_side_close(&side);
	return ret;
}

static void all_pairs(const char *profile, int pairs, bool shared)
{
	struct link_test test = link_test_of(profile, pairs, shared);
	struct link_side side;
	pid_t peer;
	int ret;

	/* It sets the software device's queue pair limit. */
	test.options.software_device_only = true;
	/* Fewer than one per pair, with room for each domain's probes when it opens. */
	setenv("FI_BOLT_SOFT_MAX_QP", "6", 1);
	setenv("FI_BOLT_SHARE_QUEUE_PAIRS", shared ? "1" : "0", 1);
	peer = link_start(&test, &side, "link", all_pairs_peer);
	ret = link_round(&side, 0, 0, pairs, 0);
	cr_assert_eq(ret, 0, "check %d of the round failed", ret);
	if (shared)
		cr_assert(link_shared(&side, 0, pairs), "the pairs share at most two links");
	else
		for (int index = 1; index < pairs; index++)
			cr_assert_neq(pair_link(&side.pairs[index]), pair_link(&side.pairs[0]));
	link_end(&test, &side, peer);
	unsetenv("FI_BOLT_SOFT_MAX_QP");
	unsetenv("FI_BOLT_SHARE_QUEUE_PAIRS");
}

/*
 * Every test here has the same timeout: criterion 2.4 leaks a timer record
 * when tests of different timeouts overlap, which LeakSanitizer reports.
 */
Test(links, twelve_pairs_on_six_queue_pairs_thunderbolt, .timeout = 120)
{
	all_pairs("thunderbolt", MOST_PAIRS, true);
}

Test(links, twelve_pairs_on_six_queue_pairs_rocev2, .timeout = 120)
{
	all_pairs("rocev2", MOST_PAIRS, true);
}

/* FI_BOLT_SHARE_QUEUE_PAIRS=0: a link, and a queue pair, per connection, as before links. */
Test(links, unshared_when_asked_thunderbolt, .timeout = 120)
{
	all_pairs("thunderbolt", 2, false);
}

#define FEW_PAIRS 4

/* The peer of a pair that closes: closes its last pair, then both ends carry on and open it again. */
static int close_and_join_peer(int socket, void *argument)
{
	const struct link_test *test = argument;
	struct link_side side;
	int last = FEW_PAIRS - 1;
	int ret = link_side_start(test, &side, socket);

	if (!ret)
		ret = link_round(&side, 1, 0, FEW_PAIRS, 0);
	if (!ret)
		ret = link_barrier(&side);
	if (!ret) {
		link_pair_close(&side.pairs[last]);
		ret = rdm_send_value(socket, 1) ? -FI_EIO : 0;
	}
	if (!ret)
		ret = link_round(&side, 1, 0, last, 1);
	if (!ret)
		ret = link_barrier(&side);
	if (!ret)
		ret = link_pair_open(&side, last);
	if (!ret)
		ret = link_round(&side, 1, 0, FEW_PAIRS, 2);
	if (!ret && !link_shared(&side, 0, FEW_PAIRS))
		ret = 20;
	if (!ret)
		ret = link_barrier(&side);
	link_side_close(&side);
	return ret;
}

static void close_and_join(const char *profile)
{
	struct link_test test = link_test_of(profile, FEW_PAIRS, true);
	struct link_side side;
	struct bolt_fixture_endpoint *closed = &side.pairs[FEW_PAIRS - 1].endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char byte = 1;
	uint64_t told;
	pid_t peer = link_start(&test, &side, "link-close", close_and_join_peer);

	cr_assert_eq(link_round(&side, 0, 0, FEW_PAIRS, 0), 0);
	cr_assert_eq(link_barrier(&side), 0);
	cr_assert_eq(fi_recv(closed->ep, &byte, 1, NULL, closed->peer, &byte), 0);
	cr_assert_eq(rdm_receive_value(side.socket, &told), 0);
	/*
	 * The pair the peer closed fails: a receive from it, posted before or
	 * after that shows, and a send. The others share the link still.
	 */
	cr_assert_eq(rdm_wait(closed, &entry, &error), -FI_EAVAIL);
	cr_assert(error.op_context == &byte && error.err);
	cr_assert_eq(fi_send(closed->ep, &byte, 1, NULL, closed->peer, NULL), 0);
	cr_assert_eq(rdm_wait(closed, &entry, &error), -FI_EAVAIL);
	cr_assert_neq(error.err, 0);
	cr_assert_eq(link_round(&side, 0, 0, FEW_PAIRS - 1, 1), 0);
	cr_assert_eq(link_barrier(&side), 0);
	/* A new pair joins in its place. */
	link_pair_close(&side.pairs[FEW_PAIRS - 1]);
	cr_assert_eq(link_pair_open(&side, FEW_PAIRS - 1), 0);
	cr_assert_eq(link_round(&side, 0, 0, FEW_PAIRS, 2), 0);
	cr_assert(link_shared(&side, 0, FEW_PAIRS));
	link_end(&test, &side, peer);
}

Test(links, a_pair_closes_and_a_new_one_joins_thunderbolt, .timeout = 120)
{
	close_and_join("thunderbolt");
}

Test(links, a_pair_closes_and_a_new_one_joins_rocev2, .timeout = 120)
{
	close_and_join("rocev2");
}

/* A peer's start: its pairs open, one round on all of them, both ends' checks done. */
static int link_peer_one_round(void *argument, int socket, struct link_side *side)
{
	int ret = link_side_start(argument, side, socket);

	if (!ret)
		ret = link_round(side, 1, 0, side->count, 0);
	if (!ret)
		ret = link_barrier(side);
	return ret;
}

/* The peer: one round, then it stops progressing until it is killed. */
static int dying_peer(int socket, void *argument)
{
	struct link_side side;
	int ret = link_peer_one_round(argument, socket, &side);

	while (!ret)
		pause();
	return ret;
}

/* A peer that dies fails every pair on the link: what waited for it, and what comes after. */
static void peer_dies(const char *profile)
{
	struct link_test test = link_test_of(profile, FEW_PAIRS, true);
	struct link_side side;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct timespec start;
	char byte = 1;
	int status;
	pid_t peer = link_start(&test, &side, "link-death", dying_peer);

	cr_assert_eq(link_round(&side, 0, 0, FEW_PAIRS, 0), 0);
	cr_assert(link_shared(&side, 0, FEW_PAIRS));
	cr_assert_eq(link_barrier(&side), 0);
	for (int index = 0; index < FEW_PAIRS; index++) {
		struct link_pair *pair = &side.pairs[index];

		cr_assert_eq(fi_recv(pair->endpoint.ep, pair->large_in, LARGE, NULL, pair->endpoint.peer,
				     pair->large_in), 0);
	}
	cr_assert_eq(kill(peer, SIGKILL), 0);
	cr_assert_eq(waitpid(peer, &status, 0), peer);
	cr_assert(WIFSIGNALED(status), "the peer checked its end, then was killed");
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int index = 0; index < FEW_PAIRS; index++) {
		struct bolt_fixture_endpoint *endpoint = &side.pairs[index].endpoint;

		cr_assert_eq(rdm_wait(endpoint, &entry, &error), -FI_EAVAIL, "pair %d", index);
		cr_assert_eq(error.op_context, side.pairs[index].large_in);
		cr_assert_eq(fi_send(endpoint->ep, &byte, 1, NULL, endpoint->peer, &byte), 0);
		cr_assert_eq(rdm_wait(endpoint, &entry, &error), -FI_EAVAIL, "pair %d", index);
	}
	cr_assert_lt(bolt_fixture_elapsed_ms(&start), 2000, "every pair failed within 2 seconds");
	link_finish(&test, &side);
}

Test(links, peer_dies_thunderbolt, .timeout = 120)
{
	peer_dies("thunderbolt");
}

Test(links, peer_dies_rocev2, .timeout = 120)
{
	peer_dies("rocev2");
}

/* The peer of a pair that only another port reaches: one round, checked. */
static int far_peer(int socket, void *argument)
{
	struct link_side side;
	int ret = link_peer_one_round(argument, socket, &side);

	link_side_close(&side);
	return ret;
}

/*
 * A write into the peer's region after the round's: the peer granted it,
 * registered on the port of the link, so it goes directly; read back.
 */
static void far_peer_direct_write(struct link_pair *pair)
{
	struct bolt_connection *connection = pair_connection(pair);
	uint64_t direct_writes = bolt_peer_of(connection)->direct_writes;

	cr_assert_eq(HASH_COUNT(bolt_peer_of(connection)->grants), 1, "the peer's grant came over the other port");
	rdm_fill(pair->written, REGION, link_seed(0, 0, 99, 2));
	cr_assert_eq(fi_write(pair->endpoint.ep, pair->written, REGION, NULL, pair->endpoint.peer,
			      pair->peer_address, pair->peer_key, pair->written), 0);
	rdm_expect_completion(&pair->endpoint, pair->written, 0);
	cr_assert_eq(bolt_peer_of(connection)->direct_writes, direct_writes + 1, "the write went directly");
	memset(pair->large_in, 0, REGION);
	cr_assert_eq(fi_read(pair->endpoint.ep, pair->large_in, REGION, NULL, pair->endpoint.peer,
			     pair->peer_address, pair->peer_key, pair->large_in), 0);
	rdm_expect_completion(&pair->endpoint, pair->large_in, 0);
	cr_assert(!memcmp(pair->large_in, pair->written, REGION), "the write landed");
}

/*
 * Three hosts, each cabled to the two others: host 0's own port reaches one
 * of them, its other port host 2. The link to host 2 is found by probing, on
 * the other port; large messages, writes and reads cross it by RDMA write,
 * from and to buffers registered on that port, and granted regions are
 * written directly.
 */
static void far_peer_reached(const char *profile)
{
	struct link_test test = link_test_of(profile, 2, true);
	struct bolt_mr_cache_stats registrations;
	struct link_side side;
	struct bolt_link *link;
	pid_t peer;

	/* The software device's topology. */
	test.options.software_device_only = true;
	test.options.topology = "mesh:3";
	peer = link_start(&test, &side, "link-far", far_peer);
	cr_assert_eq(link_round(&side, 0, 0, side.count, 0), 0);
	cr_assert(link_shared(&side, 0, side.count));
	link = pair_link(&side.pairs[0]);
	cr_assert_neq(bolt_link_port_index(link), 0, "the link is on the other port");
	cr_assert(!bolt_link_on_own_ports(link));
	bolt_mr_cache_stats(link->port->mr_cache, &registrations);
	cr_assert_gt(registrations.hits + registrations.misses, 0, "transfers registered on the link's port");
	far_peer_direct_write(&side.pairs[0]);
	link_end(&test, &side, peer);
}

Test(links, a_peer_only_another_port_reaches_thunderbolt, .timeout = 120)
{
	far_peer_reached("thunderbolt");
}

Test(links, a_peer_only_another_port_reaches_rocev2, .timeout = 120)
{
	far_peer_reached("rocev2");
}
