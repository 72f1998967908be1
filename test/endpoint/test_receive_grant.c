/*
 * test_receive_grant.c: receives granted ahead. Once a peer has sent two
 * large untagged messages, the receiver grants it its posted receives, and
 * the peer writes its next large messages straight into them. Messages that
 * cannot use a grant (small, too long, with remote CQ data) still take the
 * receive granted for them, in order. Another peer's message gets granted
 * receives back, as do a cancel and the death of the peer that held them;
 * a cancelled receive ends FI_ECANCELED and is never written, also when
 * the holder never answers (its connection fails after the liveness time,
 * which takes the grants and their registrations back). Receives short
 * enough for UC's bounce buffers are not granted. A lost
 * granted write fails the connection; a connection that fails holding
 * grants takes its shared link with it.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "softrdma/softrdma.h"
#include "rdm_fixture.h"

#define SIZE 65536
#define SMALL 100
#define CQ_DATA 0x5eed
#define GRANT_WAIT_MS 5000

/* The sender's messages, in order, and what each receive of SIZE bytes gets. */
enum message_kind { LARGE, SMALL_ONE, TOO_LONG, WITH_DATA };
static const enum message_kind plan[] = {
	LARGE, LARGE,           /* the receiver learns who sends large messages */
	SMALL_ONE, TOO_LONG, WITH_DATA,
	LARGE, LARGE, LARGE, LARGE, LARGE, LARGE, LARGE,
};
#define MESSAGES BOLT_ARRAY_LENGTH(plan)
#define BEFORE_GRANTS 2
#define GRANTABLE 7             /* the large ones after the grants came */
#define GRANTABLE_POSTED (MESSAGES - BEFORE_GRANTS)     /* receives granted, all at once */

static size_t message_length(enum message_kind kind)
{
	return kind == SMALL_ONE ? SMALL : kind == TOO_LONG ? 2 * SIZE : SIZE;
}

/* The endpoint's connection to its peer at fi_addr. */
static struct bolt_connection *connection_to(struct bolt_fixture_endpoint *endpoint, fi_addr_t peer)
{
	struct bolt_endpoint *bolt = bolt_container_of(endpoint->ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;

	HASH_ITER(hh, bolt->connection_manager.connections, connection, next)
		if (bolt_peer_fi_addr(connection) == peer)
			return connection;
	return NULL;
}

/* Progress until the peer has granted count receives; false if it did not within GRANT_WAIT_MS. */
static bool wait_for_grants(struct bolt_fixture_endpoint *endpoint, uint32_t count)
{
	for (int waited = 0; waited < GRANT_WAIT_MS; waited += 10) {
		struct bolt_connection *connection = connection_to(endpoint, endpoint->peer);

		if (connection && bolt_peer_of(connection)->peer_grants_count >= count)
			return true;
		rdm_progress_for(endpoint, 10);
	}
	return false;
}

/* Sends length bytes of buffer filled with seed (with remote CQ data if asked) and waits. */
static int send_one(struct bolt_fixture_endpoint *endpoint, char *buffer, size_t length, uint32_t seed,
		    bool cq_data)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	ssize_t ret;

	rdm_fill(buffer, length, seed);
	ret = cq_data ? fi_senddata(endpoint->ep, buffer, length, NULL, CQ_DATA, endpoint->peer, buffer) :
	      fi_send(endpoint->ep, buffer, length, NULL, endpoint->peer, buffer);
	return ret ? (int) ret : rdm_wait(endpoint, &entry, &error);
}

/* A sender's end: it serves the receiver until told, then closes (if it opened) and frees buffer. */
static int sender_end(struct bolt_fixture_endpoint *endpoint, int socket, void *buffer, int ret)
{
	uint64_t done;

	if (!ret)
		ret = rdm_serve_until_told(endpoint, socket, &done);
	if (buffer)
		bolt_fixture_close(endpoint);
	free(buffer);
	return ret;
}

struct plan_setup {
	struct rdm_options options;
	bool grants;            /* whether the receiver grants */
	bool second_slot;       /* the plan runs on its link's second connection */
};

/*
 * Opens second on first's domain and connects it to its peer; then the first
 * pair exchanges a message, so that its connection is the link's first
 * (slot 0) and second's the next one. sends: this end sends that message.
 */
static int open_second_pair(struct bolt_fixture_endpoint *first, struct bolt_fixture_endpoint *second,
			    const struct rdm_options *options, int socket, bool sends)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char message[SMALL] = { 0 };
	int ret = rdm_open_endpoint(second, first, options);

	if (!ret)
		ret = fi_enable(second->ep);
	if (!ret)
		ret = rdm_connect(second, socket);
	if (!ret)
		ret = (int) (sends ? fi_send(first->ep, message, SMALL, NULL, first->peer, message) :
			     fi_recv(first->ep, message, SMALL, NULL, first->peer, message));
	return ret ? ret : rdm_wait(first, &entry, &error);
}

/* The sender of the plan: on the second pair of a link, if asked, whose first it closes last. */
static int planned_sender(int socket, void *argument)
{
	const struct plan_setup *setup = argument;
	struct bolt_fixture_endpoint first = { 0 }, endpoint = { 0 };
	struct bolt_fixture_endpoint *planned = setup->second_slot ? &endpoint : &first;
	char *buffer = malloc(2 * SIZE);
	int ret = buffer ? rdm_open_connected(&first, &setup->options, socket) : 1;

	if (!ret && setup->second_slot)
		ret = open_second_pair(&first, &endpoint, &setup->options, socket, true);
	for (size_t i = 0; !ret && i < MESSAGES; i++) {
		if (i == BEFORE_GRANTS && setup->grants &&
		    !wait_for_grants(planned, GRANTABLE_POSTED))
			ret = 10;
		if (!ret)
			ret = send_one(planned, buffer, message_length(plan[i]), (uint32_t) i,
				       plan[i] == WITH_DATA);
	}
	ret = sender_end(planned, socket, buffer, ret);
	if (setup->second_slot)
		bolt_fixture_close(&first);
	return ret;
}

/* Receive i of the plan completed as its message should have made it. */
static void expect_planned(struct bolt_fixture_endpoint *endpoint, char *buffers, size_t i)
{
	char *buffer = buffers + i * SIZE;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = rdm_wait(endpoint, &entry, &error);

	if (plan[i] == TOO_LONG) {
		cr_assert_eq(ret, -FI_EAVAIL, "receive %zu: a longer message did not truncate", i);
		cr_assert_eq(error.err, FI_ETRUNC);
		cr_assert_eq(error.op_context, buffer, "receive %zu: another truncated", i);
		cr_assert(rdm_check(buffer, SIZE, (uint32_t) i), "receive %zu: not its message's start", i);
		return;
	}
	cr_assert_eq(ret, 0, "receive %zu: %d", i, ret);
	cr_assert_eq(entry.op_context, buffer, "receive %zu completed out of order", i);
	cr_assert_eq(entry.len, message_length(plan[i]), "receive %zu: %zu bytes", i, entry.len);
	cr_assert(rdm_check(buffer, entry.len, (uint32_t) i), "receive %zu: its data is damaged", i);
	cr_assert_eq(!!(entry.flags & FI_REMOTE_CQ_DATA), plan[i] == WITH_DATA);
	if (plan[i] == WITH_DATA)
		cr_assert_eq(entry.data, CQ_DATA);
}

/*
 * The plan, received. A message written into its granted receive comes as
 * one write with immediate data naming it, except on RC from a link's
 * second connection, where the immediate is the first's: a write and a DONE.
 */
static void receive_plan(const char *profile, const char *tag, bool grants, bool second_slot)
{
	struct plan_setup setup = { .options = { .profile = profile }, .grants = grants,
				    .second_slot = second_slot };
	struct bolt_fixture_endpoint first = { 0 }, endpoint = { 0 };
	struct bolt_fixture_endpoint *planned = second_slot ? &endpoint : &first;
	bool by_immediate = grants && (strcmp(profile, "rocev2") || !second_slot);
	char *buffers = calloc(MESSAGES, SIZE);
	struct bolt_connection *connection;
	int socket;
	pid_t peer;

	cr_assert(buffers);
	setenv("FI_BOLT_RECEIVE_GRANTS", grants ? "16" : "0", 1);
	peer = rdm_pair_start(&setup.options, tag, planned_sender, &setup, &first, &socket);
	cr_assert(peer > 0);
	if (second_slot)
		cr_assert_eq(open_second_pair(&first, &endpoint, &setup.options, socket, false), 0);
	for (size_t i = 0; i < MESSAGES; i++)
		cr_assert_eq(fi_recv(planned->ep, buffers + i * SIZE, SIZE, NULL, FI_ADDR_UNSPEC,
				     buffers + i * SIZE), 0);
	for (size_t i = 0; i < MESSAGES; i++)
		expect_planned(planned, buffers, i);
	connection = connection_to(planned, planned->peer);
	cr_assert_eq(connection->slot != 0, second_slot, "the plan ran on slot %u", connection->slot);
	cr_assert_eq(bolt_peer_of(connection)->messages_arrived, MESSAGES);
	cr_assert_eq(bolt_peer_of(connection)->granted_written, grants ? GRANTABLE : 0,
		     "%" PRIu64 " messages written into granted receives", bolt_peer_of(connection)->granted_written);
	cr_assert_eq(bolt_peer_of(connection)->granted_by_immediate, by_immediate ? GRANTABLE : 0,
		     "%" PRIu64 " of them with immediate data", bolt_peer_of(connection)->granted_by_immediate);
	cr_assert_eq(bolt_peer_of(connection)->granted_count, 0, "receives still granted with none posted");
	/* All there were, at once: as few messages as a batch allows. */
	cr_assert_eq(bolt_peer_of(connection)->grant_messages,
		     grants ? (GRANTABLE_POSTED + BOLT_WIRE_RECEIVE_GRANT_BATCH - 1) /
			      BOLT_WIRE_RECEIVE_GRANT_BATCH : 0,
		     "%" PRIu64 " grant messages", bolt_peer_of(connection)->grant_messages);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	if (second_slot)
		bolt_fixture_close(&endpoint);
	cr_assert_eq(rdm_pair_finish(&setup.options, &first, peer, socket), 0,
		     "the sender failed (10: no grants came)");
	unsetenv("FI_BOLT_RECEIVE_GRANTS");
	free(buffers);
}

Test(receive_grant, messages_take_their_receives_thunderbolt)
{
	receive_plan("thunderbolt", "grant-plan-tb", true, false);
}

Test(receive_grant, messages_take_their_receives_rocev2)
{
	receive_plan("rocev2", "grant-plan-roce", true, false);
}

Test(receive_grant, second_connection_of_a_link_thunderbolt)
{
	receive_plan("thunderbolt", "grant-second-tb", true, true);
}

Test(receive_grant, second_connection_of_a_link_rocev2)
{
	receive_plan("rocev2", "grant-second-roce", true, true);
}

Test(receive_grant, none_granted_when_turned_off)
{
	receive_plan("thunderbolt", "grant-off", false, false);
}

/*
 * A peer that holds grants of the receiver's last two receives: it sent two
 * large messages, then waits with both grants until told, and then sends
 * one more, into whichever receive is left.
 */
#define HELD_RECEIVES 4
#define HOLDER_SEED 3
#define OTHER_SEED 50

/*
 * A holder's start: two large messages seeded from seed, then it waits for
 * its grants, says it holds them, and waits to be told to go on.
 */
static int hold_grants(struct bolt_fixture_endpoint *endpoint, int socket, char *buffer, uint32_t seed)
{
	uint64_t go;
	int ret = 0;

	for (uint32_t i = 0; !ret && i < 2; i++)
		ret = send_one(endpoint, buffer, SIZE, seed + i, false);
	if (!ret && !wait_for_grants(endpoint, HELD_RECEIVES - 2))
		ret = 10;
	if (!ret)
		ret = rdm_send_value(socket, 1);        /* holding */
	return ret ? ret : rdm_serve_until_told(endpoint, socket, &go);
}

static int holding_sender(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *buffer = malloc(SIZE);
	uint64_t go;
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : 1;

	if (!ret)
		ret = hold_grants(&endpoint, socket, buffer, 0);
	if (!ret)
		ret = send_one(&endpoint, buffer, SIZE, HOLDER_SEED, false);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &go);
	if (buffer)
		bolt_fixture_close(&endpoint);
	free(buffer);
	return ret;
}

/* Another peer: count large messages, seeded from OTHER_SEED, then serves until told. */
struct other_sender {
	struct rdm_options options;
	uint32_t count;
};

static int other_sender(int socket, void *argument)
{
	const struct other_sender *setup = argument;
	struct bolt_fixture_endpoint endpoint;
	char *buffer = malloc(SIZE);
	int ret = buffer ? rdm_open_connected(&endpoint, &setup->options, socket) : 1;

	for (uint32_t i = 0; !ret && i < setup->count; i++)
		ret = send_one(&endpoint, buffer, SIZE, OTHER_SEED + i, false);
	return sender_end(&endpoint, socket, buffer, ret);
}

/*
 * The receiver's start: HELD_RECEIVES posted, the holder's two messages in,
 * its grants held. holder: holding_sender, or another that starts as it does.
 */
static pid_t start_holder_with(struct rdm_options *options, const char *tag,
			       int (*holder)(int socket, void *argument),
			       struct bolt_fixture_endpoint *endpoint, int *socket, char *buffers)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t holding;
	pid_t peer = rdm_pair_start(options, tag, holder, options, endpoint, socket);

	cr_assert(peer > 0);
	for (size_t i = 0; i < HELD_RECEIVES; i++)
		cr_assert_eq(fi_recv(endpoint->ep, buffers + i * SIZE, SIZE, NULL, FI_ADDR_UNSPEC,
				     buffers + i * SIZE), 0);
	for (uint32_t i = 0; i < 2; i++) {
		cr_assert_eq(rdm_wait(endpoint, &entry, &error), 0);
		cr_assert_eq(entry.op_context, buffers + i * SIZE);
		cr_assert(rdm_check(buffers + i * SIZE, SIZE, i));
	}
	cr_assert_eq(rdm_serve_until_told(endpoint, *socket, &holding), 0, "the holder got no grants");
	cr_assert_eq(bolt_peer_of(connection_to(endpoint, endpoint->peer))->granted_count, HELD_RECEIVES - 2);
	return peer;
}

static pid_t start_holder(struct rdm_options *options, const char *tag, struct bolt_fixture_endpoint *endpoint,
			  int *socket, char *buffers)
{
	return start_holder_with(options, tag, holding_sender, endpoint, socket, buffers);
}

/* The next completion is receive index's, with a message seeded seed. */
static void expect_receive(struct bolt_fixture_endpoint *endpoint, char *buffers, size_t index, uint32_t seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = rdm_wait(endpoint, &entry, &error);

	cr_assert_eq(ret, 0, "receive %zu: %d (%s)", index, ret, ret == -FI_EAVAIL ?
		     fi_strerror(error.err) : "");
	cr_assert_eq(entry.op_context, buffers + index * SIZE, "another receive than %zu completed",
		     index);
	cr_assert_eq(entry.len, SIZE);
	cr_assert(rdm_check(buffers + index * SIZE, SIZE, seed), "receive %zu: wrong data", index);
}

/* Forks another sender of count messages and connects to it; its pid. */
static pid_t start_other(struct bolt_fixture_endpoint *endpoint, struct other_sender *setup, int *socket)
{
	fi_addr_t holder = endpoint->peer;
	pid_t peer = rdm_fork(other_sender, setup, socket);

	cr_assert(peer > 0);
	cr_assert_eq(rdm_connect(endpoint, *socket), 0);
	endpoint->peer = holder;
	return peer;
}

/* The receiver, the holder with its grants, and another sender: the tests of giving back. */
struct two_senders {
	struct other_sender other;
	struct bolt_fixture_endpoint endpoint;
	char *buffers;
	int socket, other_socket;
	pid_t holder, other_peer;
};

/*
 * Starts the holder (killed at once if kill_holder), then another sender of
 * count messages, whose first takes receive 2.
 */
static void two_senders_start(struct two_senders *test, const char *tag, uint32_t count,
			      bool kill_holder)
{
	test->other = (struct other_sender) { .options = { .profile = "thunderbolt" }, .count = count };
	test->buffers = calloc(HELD_RECEIVES, SIZE);
	cr_assert(test->buffers);
	test->holder = start_holder(&test->other.options, tag, &test->endpoint, &test->socket,
				    test->buffers);
	if (kill_holder)
		kill(test->holder, SIGKILL);
	test->other_peer = start_other(&test->endpoint, &test->other, &test->other_socket);
	expect_receive(&test->endpoint, test->buffers, 2, OTHER_SEED);
}

static void two_senders_finish(struct two_senders *test, int holder_status)
{
	cr_assert_eq(rdm_send_value(test->other_socket, 1), 0);
	cr_assert_eq(bolt_fixture_process_status(test->other_peer), 0, "the other sender failed");
	close(test->other_socket);
	cr_assert_eq(rdm_pair_finish(&test->other.options, &test->endpoint, test->holder, test->socket),
		     holder_status, "the holder ended otherwise");
	free(test->buffers);
}

/* Another peer's message finds every receive granted: the holder gives them back. */
Test(receive_grant, another_peer_gets_them_back)
{
	struct two_senders test;

	two_senders_start(&test, "grant-other", 1, false);
	cr_assert_eq(bolt_peer_of(connection_to(&test.endpoint, test.endpoint.peer))->granted_count, 0,
		     "the holder kept its grants");
	cr_assert_eq(rdm_send_value(test.socket, 1), 0);
	expect_receive(&test.endpoint, test.buffers, 3, HOLDER_SEED);
	cr_assert_eq(rdm_send_value(test.socket, 1), 0);
	two_senders_finish(&test, 0);
}

/* A granted receive cancelled: it ends FI_ECANCELED, unwritten; the next takes the message. */
Test(receive_grant, cancel_asks_it_back)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffers = calloc(HELD_RECEIVES, SIZE), zeros[SMALL] = { 0 };
	int socket;
	pid_t peer;

	cr_assert(buffers);
	peer = start_holder(&options, "grant-cancel", &endpoint, &socket, buffers);
	cr_assert_eq(fi_cancel(&endpoint.ep->fid, buffers + 2 * SIZE), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL);
	cr_assert_eq(error.err, FI_ECANCELED);
	cr_assert_eq(error.op_context, buffers + 2 * SIZE);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	expect_receive(&endpoint, buffers, 3, HOLDER_SEED);
	cr_assert_eq(memcmp(buffers + 2 * SIZE, zeros, SMALL), 0, "the cancelled receive was written");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the holder failed");
	free(buffers);
}

/*
 * A holder that stops (SIGSTOP) once it holds its grants, and so never
 * answers the cancel's revoke: its kernel still answers the side channel's
 * keepalives, so only the missing answer shows.
 */
static int silent_holder(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *buffer = malloc(SIZE);
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : 1;

	for (uint32_t i = 0; !ret && i < 2; i++)
		ret = send_one(&endpoint, buffer, SIZE, i, false);
	if (!ret && !wait_for_grants(&endpoint, HELD_RECEIVES - 2))
		ret = 10;
	if (!ret)
		ret = rdm_send_value(socket, 1);        /* holding */
	if (!ret)
		raise(SIGSTOP);                         /* killed by the receiver */
	return ret;
}

#define SILENT_LIVENESS_MS 2000
#define SILENT_WAIT_MS (SILENT_LIVENESS_MS + 4000)

/* The stopped holder, killed however the test ends: a stopped process would hold its pipes. */
static pid_t silent_peer;

static void kill_silent_peer(void)
{
	if (silent_peer > 0)
		kill(silent_peer, SIGKILL);
}

/*
 * A granted receive cancelled while its holder never answers: within
 * FI_BOLT_LIVENESS_TIMEOUT and a little, the holder's connection fails with
 * FI_ETIMEDOUT, the receive ends FI_ECANCELED, and no grant (nor its
 * registration) is left to the holder.
 */
Test(receive_grant, silent_holder_cancel, .fini = kill_silent_peer)
{
	struct rdm_options options = { .profile = "rocev2" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_domain *domain;
	struct bolt_connection *connection;
	struct bolt_mr_cache_stats before, after;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct timespec cancelled;
	char *buffers = calloc(HELD_RECEIVES, SIZE);
	int socket, status;

	cr_assert(buffers);
	setenv("FI_BOLT_LIVENESS_TIMEOUT", "2000", 1);
	silent_peer = start_holder_with(&options, "grant-silent", silent_holder, &endpoint, &socket, buffers);
	cr_assert_eq(waitpid(silent_peer, &status, WUNTRACED), silent_peer);
	cr_assert(WIFSTOPPED(status), "the holder did not stop");
	domain = bolt_container_of(endpoint.domain, struct bolt_domain, domain_fid);
	connection = connection_to(&endpoint, endpoint.peer);
	bolt_mr_cache_stats(domain->primary.mr_cache, &before);

	clock_gettime(CLOCK_MONOTONIC, &cancelled);
	cr_assert_eq(fi_cancel(&endpoint.ep->fid, buffers + 2 * SIZE), 0);
	cr_assert_eq(bolt_fixture_wait_completion(&endpoint, &entry, &error, SILENT_WAIT_MS, NULL),
		     -FI_EAVAIL, "the cancel never ended: the holder kept its grants");
	cr_assert_eq(error.err, FI_ECANCELED);
	cr_assert_eq(error.op_context, buffers + 2 * SIZE);
	cr_assert_geq(bolt_fixture_elapsed_ms(&cancelled), SILENT_LIVENESS_MS,
		      "the holder was failed before the liveness time");
	cr_assert_eq(connection->state, BOLT_CONNECTION_FAILED);
	cr_assert_eq(connection->error, FI_ETIMEDOUT);
	cr_assert_eq(bolt_peer_of(connection)->granted_count, 0);
	bolt_mr_cache_stats(domain->primary.mr_cache, &after);
	cr_assert_leq(after.registered, before.registered - (HELD_RECEIVES - 2),
		      "the grants' registrations stayed");

	kill(silent_peer, SIGKILL);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, silent_peer, socket), 128 + SIGKILL);
	silent_peer = 0;
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
	free(buffers);
}

/*
 * On UC, the holder's write into its next granted receive is lost while
 * every packet is dropped, and written again once they are not: the
 * receiver takes it, then the next message, a small one, each intact and
 * in order, and no connection fails.
 */
static int losing_sender(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffer = malloc(SIZE);
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : 1;

	if (!ret)
		ret = hold_grants(&endpoint, socket, buffer, 0);
	if (!ret)
		ret = softrdma_fault_drop(1, 0, 0);
	if (!ret) {
		rdm_fill(buffer, SIZE, HOLDER_SEED);
		ret = (int) fi_send(endpoint.ep, buffer, SIZE, NULL, endpoint.peer, buffer);
	}
	if (!ret)
		rdm_progress_for(&endpoint, 50);
	if (!ret)
		ret = softrdma_fault_drop(0, 0, 0);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret)
		ret = send_one(&endpoint, buffer, SMALL, HOLDER_SEED + 1, false);
	return sender_end(&endpoint, socket, buffer, ret);
}

Test(receive_grant, lost_granted_write_written_again)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_connection *connection;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffers = calloc(HELD_RECEIVES, SIZE);
	int socket;
	pid_t peer;

	cr_assert(buffers);
	peer = start_holder_with(&options, "grant-lost", losing_sender, &endpoint, &socket, buffers);
	connection = connection_to(&endpoint, endpoint.peer);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	/* The first two took the messages that earned the grants. */
	expect_receive(&endpoint, buffers, 2, HOLDER_SEED);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0, "the next message failed");
	cr_assert_eq(entry.op_context, buffers + 3 * SIZE, "another receive than the next completed");
	cr_assert_eq(entry.len, SMALL);
	cr_assert(rdm_check(buffers + 3 * SIZE, SMALL, HOLDER_SEED + 1), "the next message differs");
	cr_assert_eq(connection->state, BOLT_CONNECTION_ESTABLISHED);
	for (size_t i = 4; i < HELD_RECEIVES; i++)
		cr_assert_eq(fi_cancel(&endpoint.ep->fid, buffers + i * SIZE), 0);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the holder failed");
	free(buffers);
}

/*
 * A connection that fails while its peer lives on and holds grants, on a link
 * another connection keeps up (the peer's second endpoint): the peer may
 * write into those receives until it learns of the failure, and they are the
 * application's again. The link fails with the connection, and its queue
 * pair with it: the peer's next write lands nowhere.
 */
#define SHARED_SEED 70

static int second_pair_holder(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint first = { 0 }, second = { 0 };
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffer = malloc(SIZE);
	uint64_t go;
	int ret = buffer ? rdm_open_connected(&first, options, socket) : 1;

	if (!ret)
		ret = open_second_pair(&first, &second, options, socket, true);
	if (!ret)
		ret = hold_grants(&second, socket, buffer, SHARED_SEED);
	/* Into its grant, unless it has heard already: either way nothing may land. */
	if (!ret) {
		rdm_fill(buffer, SIZE, SHARED_SEED + 2);
		if (!fi_send(second.ep, buffer, SIZE, NULL, second.peer, buffer))
			rdm_wait(&second, &entry, &error);
		ret = rdm_send_value(socket, 1);        /* sent */
	}
	if (!ret)
		ret = rdm_serve_until_told(&second, socket, &go);
	bolt_fixture_close(&second);
	bolt_fixture_close(&first);
	free(buffer);
	return ret;
}

Test(receive_grant, failing_with_grants_fails_the_shared_link)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	struct bolt_fixture_endpoint first = { 0 }, endpoint = { 0 };
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct bolt_connection *planned, *sibling;
	char *buffers = calloc(HELD_RECEIVES, SIZE), zeros[SMALL] = { 0 };
	uint64_t value;
	int socket;
	pid_t peer;

	cr_assert(buffers);
	peer = rdm_pair_start(&options, "grant-shared", second_pair_holder, &options, &first, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(open_second_pair(&first, &endpoint, &options, socket, false), 0);
	for (size_t i = 0; i < HELD_RECEIVES; i++)
		cr_assert_eq(fi_recv(endpoint.ep, buffers + i * SIZE, SIZE, NULL, FI_ADDR_UNSPEC,
				     buffers + i * SIZE), 0);
	for (uint32_t i = 0; i < 2; i++) {
		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0);
		cr_assert(rdm_check(buffers + i * SIZE, SIZE, SHARED_SEED + i));
	}
	cr_assert_eq(rdm_serve_until_told(&endpoint, socket, &value), 0, "the peer got no grants");
	planned = connection_to(&endpoint, endpoint.peer);
	sibling = connection_to(&first, first.peer);
	cr_assert_eq(planned->link, sibling->link, "the two connections share no link");
	cr_assert_eq(bolt_peer_of(planned)->granted_count, HELD_RECEIVES - 2);

	bolt_connection_fail(planned, FI_EIO, "failed by the test");
	cr_assert_eq(sibling->state, BOLT_CONNECTION_FAILED, "the link outlived the failure");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_serve_until_told(&endpoint, socket, &value), 0);
	rdm_progress_for(&endpoint, 100);
	for (size_t i = 2; i < HELD_RECEIVES; i++) {
		cr_assert_eq(memcmp(buffers + i * SIZE, zeros, SMALL), 0,
			     "receive %zu was written after its connection failed", i);
		cr_assert_eq(fi_cancel(&endpoint.ep->fid, buffers + i * SIZE), 0);
	}
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	bolt_fixture_close(&endpoint);
	cr_assert_eq(rdm_pair_finish(&options, &first, peer, socket), 0, "the peer failed");
	free(buffers);
}

/* The holder dies: its granted receives take another peer's messages. */
Test(receive_grant, holder_dies)
{
	struct two_senders test;

	two_senders_start(&test, "grant-dies", 2, true);
	expect_receive(&test.endpoint, test.buffers, 3, OTHER_SEED + 1);
	two_senders_finish(&test, 128 + SIGKILL);
}

/*
 * A stream: STREAM_MESSAGES large messages, STREAM_WINDOW in flight, into
 * STREAM_POSTED receives posted again as they complete. Grants go out in
 * batches, and every message lands whole in the receive posted for its turn.
 * A receiver whose reposts lag behind (it waits for half of what a peer may
 * hold to land first) still grants in batches, not each receive as posted.
 */
#define STREAM_MESSAGES 96
#define STREAM_WINDOW 16
#define STREAM_POSTED 40
#define LAGGING_POSTED 32       /* as many as the peer may hold: none left ungranted */
#define LAGGING_LAG 16

static int stream_sender(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	char *buffers = malloc((size_t) STREAM_MESSAGES * SIZE);
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct bolt_fixture_endpoint endpoint;
	uint32_t sent = 0, completed = 0;
	int ret = buffers ? rdm_open_connected(&endpoint, options, socket) : 1;

	while (!ret && completed < STREAM_MESSAGES) {
		if (sent < STREAM_MESSAGES && sent - completed < STREAM_WINDOW) {
			char *buffer = buffers + (size_t) sent * SIZE;
			ssize_t posted;

			rdm_fill(buffer, SIZE, sent);
			posted = fi_send(endpoint.ep, buffer, SIZE, NULL, endpoint.peer, buffer);
			if (!posted) {
				sent++;
				continue;
			}
			if (posted != -FI_EAGAIN) {
				ret = (int) posted;
				break;
			}
		}
		ret = rdm_wait(&endpoint, &entry, &error);
		completed += !ret;
	}
	return sender_end(&endpoint, socket, buffers, ret);
}

/* Posts the receive of buffer slot, which the next message, number posted, takes. */
static void post_stream_receive(struct bolt_fixture_endpoint *endpoint, char *buffers, uint32_t slot,
				uint32_t *slot_message, uint32_t *posted)
{
	char *buffer = buffers + (size_t) slot * SIZE;

	slot_message[slot] = (*posted)++;
	cr_assert_eq(fi_recv(endpoint->ep, buffer, SIZE, NULL, FI_ADDR_UNSPEC, buffer), 0);
}

/* The stream into posted_count receives, each posted again once lag more have landed. */
static void receive_stream(const char *profile, const char *tag, uint32_t posted_count,
			   uint32_t lag, uint32_t least_batch)
{
	struct rdm_options options = { .profile = profile };
	char *buffers = calloc(STREAM_POSTED, SIZE);
	uint32_t slot_message[STREAM_POSTED], posted = 0;
	uint32_t landed[STREAM_POSTED], landed_first = 0, landed_end = 0; /* not posted again yet */
	struct bolt_connection *connection;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct bolt_fixture_endpoint endpoint;
	int socket;
	pid_t peer;

	cr_assert(buffers);
	cr_assert_leq(posted_count, STREAM_POSTED);
	setenv("FI_BOLT_RECEIVE_GRANTS", "32", 1);
	peer = rdm_pair_start(&options, tag, stream_sender, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	for (uint32_t slot = 0; slot < posted_count; slot++)
		post_stream_receive(&endpoint, buffers, slot, slot_message, &posted);
	/* Completions may come in any order (comp_order FI_ORDER_NONE); messages take receives in order. */
	for (uint32_t i = 0; i < STREAM_MESSAGES; i++) {
		int ret = rdm_wait(&endpoint, &entry, &error);
		uint32_t slot;

		cr_assert_eq(ret, 0, "completion %u: %d (%s)", i, ret,
			     ret == -FI_EAVAIL ? fi_strerror(error.err) : "");
		slot = (uint32_t) (((char *) entry.op_context - buffers) / SIZE);
		cr_assert_lt(slot, STREAM_POSTED);
		cr_assert_eq(entry.len, SIZE);
		cr_assert(rdm_check(entry.op_context, SIZE, slot_message[slot]),
			  "receive %u: not message %u", slot, slot_message[slot]);
		landed[landed_end++ % STREAM_POSTED] = slot;
		while (landed_end - landed_first > lag && posted < STREAM_MESSAGES)
			post_stream_receive(&endpoint, buffers, landed[landed_first++ % STREAM_POSTED],
					    slot_message, &posted);
	}
	connection = connection_to(&endpoint, endpoint.peer);
	cr_assert_eq(bolt_peer_of(connection)->messages_arrived, STREAM_MESSAGES);
	cr_assert_gt(bolt_peer_of(connection)->granted_written, 0, "no message written into a granted receive");
	/* Batches of one would be one grant message per message. */
	cr_assert_geq(bolt_peer_of(connection)->receives_granted, least_batch * bolt_peer_of(connection)->grant_messages,
		      "%" PRIu64 " receives granted in %" PRIu64 " messages",
		      bolt_peer_of(connection)->receives_granted, bolt_peer_of(connection)->grant_messages);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the sender failed");
	unsetenv("FI_BOLT_RECEIVE_GRANTS");
	free(buffers);
}

Test(receive_grant, stream_granted_in_batches_thunderbolt)
{
	receive_stream("thunderbolt", "grant-stream-tb", STREAM_POSTED, 0, 2);
}

Test(receive_grant, stream_granted_in_batches_rocev2)
{
	receive_stream("rocev2", "grant-stream-roce", STREAM_POSTED, 0, 2);
}

Test(receive_grant, lagging_reposts_granted_in_batches_thunderbolt)
{
	receive_stream("thunderbolt", "grant-lag-tb", LAGGING_POSTED, LAGGING_LAG, 2);
}

Test(receive_grant, lagging_reposts_granted_in_batches_rocev2)
{
	receive_stream("rocev2", "grant-lag-roce", LAGGING_POSTED, LAGGING_LAG, 2);
}

/*
 * On UC a message that fits the link's bounce buffers goes whole into one
 * of them, granted or not: receives that short are not granted there, which
 * would only cost a registration and a message each. RC has no bounce
 * buffers and grants them.
 */
#define BOUNCE_FITS (16 * 1024)
#define BOUNCE_FIRST 2          /* the receiver learns who sends them */
#define BOUNCE_LATER 4

/* Sends the first messages, waits until told the receives are posted, sends the rest. */
static int bounce_sized_sender(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint = { 0 };
	char *buffer = malloc(BOUNCE_FITS);
	int ret = buffer ? rdm_open_connected(&endpoint, options, socket) : 1;
	uint64_t posted;

	for (uint32_t i = 0; !ret && i < BOUNCE_FIRST + BOUNCE_LATER; i++) {
		if (i == BOUNCE_FIRST)
			ret = rdm_serve_until_told(&endpoint, socket, &posted);
		if (!ret)
			ret = send_one(&endpoint, buffer, BOUNCE_FITS, i, false);
	}
	return sender_end(&endpoint, socket, buffer, ret);
}

/* Receive i, of BOUNCE_FITS bytes at buffers + i * BOUNCE_FITS, completed with its message. */
static void expect_bounce_sized(struct bolt_fixture_endpoint *endpoint, char *buffers, size_t i)
{
	char *buffer = buffers + i * BOUNCE_FITS;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;

	cr_assert_eq(rdm_wait(endpoint, &entry, &error), 0, "receive %zu", i);
	cr_assert_eq(entry.op_context, buffer, "receive %zu completed out of order", i);
	cr_assert_eq(entry.len, BOUNCE_FITS);
	cr_assert(rdm_check(buffer, BOUNCE_FITS, (uint32_t) i), "receive %zu: its data is damaged", i);
}

static void post_bounce_sized(struct bolt_fixture_endpoint *endpoint, char *buffers, size_t i)
{
	char *buffer = buffers + i * BOUNCE_FITS;

	cr_assert_eq(fi_recv(endpoint->ep, buffer, BOUNCE_FITS, NULL, FI_ADDR_UNSPEC, buffer), 0);
}

static void bounce_sized_receives(const char *profile, const char *tag, bool granted)
{
	struct rdm_options options = { .profile = profile };
	struct bolt_fixture_endpoint endpoint = { 0 };
	char *buffers = calloc(BOUNCE_FIRST + BOUNCE_LATER, BOUNCE_FITS);
	struct bolt_connection *connection;
	int socket;
	pid_t peer;

	cr_assert(buffers);
	setenv("FI_BOLT_RECEIVE_GRANTS", "16", 1);
	peer = rdm_pair_start(&options, tag, bounce_sized_sender, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	for (size_t i = 0; i < BOUNCE_FIRST; i++) {
		post_bounce_sized(&endpoint, buffers, i);
		expect_bounce_sized(&endpoint, buffers, i);
	}
	/* The later ones are posted before their messages are sent, and granted then or never. */
	for (size_t i = BOUNCE_FIRST; i < BOUNCE_FIRST + BOUNCE_LATER; i++)
		post_bounce_sized(&endpoint, buffers, i);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	for (size_t i = BOUNCE_FIRST; i < BOUNCE_FIRST + BOUNCE_LATER; i++)
		expect_bounce_sized(&endpoint, buffers, i);
	connection = connection_to(&endpoint, endpoint.peer);
	cr_assert_eq(bolt_peer_of(connection)->receives_granted, granted ? BOUNCE_LATER : 0,
		     "%" PRIu64 " receives granted", bolt_peer_of(connection)->receives_granted);
	cr_assert_eq(bolt_peer_of(connection)->granted_written, granted ? BOUNCE_LATER : 0,
		     "%" PRIu64 " messages written into granted receives",
		     bolt_peer_of(connection)->granted_written);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0, "the sender failed");
	unsetenv("FI_BOLT_RECEIVE_GRANTS");
	free(buffers);
}

Test(receive_grant, bounce_sized_not_granted_thunderbolt)
{
	bounce_sized_receives("thunderbolt", "grant-bounce-tb", false);
}

Test(receive_grant, bounce_sized_granted_rocev2)
{
	bounce_sized_receives("rocev2", "grant-bounce-roce", true);
}
