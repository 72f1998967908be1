/*
 * test_loss.c: what UC loses is sent again. With the software device
 * dropping UC packets at a seeded rate (FI_BOLT_SOFT_DROP_PPM), messages of
 * every size the control rail carries (one segment, several, written whole
 * into a bounce buffer) all complete, each with its own data, in order and
 * once: a lost message neither fails its connection nor arrives twice.
 * Large messages, writes and reads survive the same way by RDMA write (the
 * lost segments written again) and, with FI_BOLT_UC_DATA_WRITES=no, as
 * messages.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "rdm_fixture.h"
#include "softrdma/softrdma.h"

/*
 * One segment, the most one takes, several, and written whole (bounce
 * buffers, 32 KiB); the large ones only when the test asks (FI_BOLT_UC_DATA_WRITES).
 */
static const size_t loss_lengths[] = { 8, 1000, 4024, 4025, 9000, 16384, 30000, 70000, 300000 };
#define LOSS_LENGTH_MAX 300000
#define LOSS_SMALL_COUNT 7
#define LOSS_LENGTH_COUNT (sizeof(loss_lengths) / sizeof(loss_lengths[0]))
/* Sends the sender keeps in flight at once. */
#define LOSS_IN_FLIGHT 8

struct loss_setup {
	struct rdm_options options;
	int messages;
	bool large;             /* large messages too */
};

static size_t loss_length(const struct loss_setup *setup, int index)
{
	return loss_lengths[(size_t) index % (setup->large ? LOSS_LENGTH_COUNT : LOSS_SMALL_COUNT)];
}

/* Receives every message, tagged with its number, and checks each one's length and bytes. */
static int loss_receiver(int socket, void *argument)
{
	const struct loss_setup *setup = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *buffer = malloc(LOSS_LENGTH_MAX);
	int ret = buffer ? rdm_open_connected(&endpoint, &setup->options, socket) : -FI_ENOMEM;
	uint64_t done;

	for (int i = 0; !ret && i < setup->messages; i++) {
		memset(buffer, 0, LOSS_LENGTH_MAX);
		ret = (int) fi_trecv(endpoint.ep, buffer, LOSS_LENGTH_MAX, NULL, endpoint.peer,
				     (uint64_t) i, 0, NULL);
		if (!ret)
			ret = rdm_wait(&endpoint, &entry, &error);
		if (!ret && (entry.len != loss_length(setup, i) || entry.tag != (uint64_t) i ||
			     !rdm_check(buffer, loss_length(setup, i), (uint32_t) i)))
			ret = 3;
	}
	/* The sender resends until we have it all, then we wait for its word to go. */
	if (!ret)
		ret = rdm_send_value(socket, 1);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	bolt_fixture_close(&endpoint);
	free(buffer);
	return ret;
}

static double loss_seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* A free buffer of the LOSS_IN_FLIGHT, taken; one is, while fewer are in flight. */
static int loss_take_buffer(bool *busy)
{
	for (int slot = 0; slot < LOSS_IN_FLIGHT; slot++)
		if (!busy[slot]) {
			busy[slot] = true;
			return slot;
		}
	return -1;
}

/*
 * Sends setup->messages tagged messages, a few in flight, calling between
 * (if any) before each step; every send must complete without error, once.
 * A send's buffer is the application's until its own completion, which
 * may come after later ones' (a large message waits for its receive).
 */
static void loss_stream(const struct loss_setup *setup, struct bolt_fixture_endpoint *endpoint,
			void (*between)(int sent))
{
	char *buffers = malloc((size_t) LOSS_IN_FLIGHT * LOSS_LENGTH_MAX);
	bool busy[LOSS_IN_FLIGHT] = { false };
	struct fi_cq_tagged_entry entry;
	int sent = 0, completed = 0;
	struct timespec start;

	cr_assert(buffers);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (completed < setup->messages) {
		size_t slot;
		ssize_t ret;

		cr_assert_lt(loss_seconds_since(&start), RDM_SERVE_TIMEOUT_MS / 1000.0,
			     "%d of %d messages sent and completed", completed, setup->messages);
		if (between)
			between(sent);
		/* The first alone: the others find the link, and its bounce buffers, known. */
		if (sent < setup->messages && sent - completed < (sent ? LOSS_IN_FLIGHT : 1)) {
			int free_slot = loss_take_buffer(busy);
			char *buffer = buffers + (size_t) free_slot * LOSS_LENGTH_MAX;

			cr_assert_geq(free_slot, 0);
			rdm_fill(buffer, loss_length(setup, sent), (uint32_t) sent);
			ret = fi_tsend(endpoint->ep, buffer, loss_length(setup, sent), NULL, endpoint->peer,
				       (uint64_t) sent, buffer);
			cr_assert(ret == 0 || ret == -FI_EAGAIN, "send %d: %zd", sent, ret);
			busy[free_slot] = ret == 0;
			sent += ret == 0;
			continue;
		}
		ret = fi_cq_read(endpoint->cq, &entry, 1);
		cr_assert(ret == 1 || ret == -FI_EAGAIN, "message %d: %zd", completed, ret);
		if (ret != 1)
			continue;
		/* Its buffer is free again: a second completion of a send would find it so. */
		slot = (size_t) ((char *) entry.op_context - buffers) / LOSS_LENGTH_MAX;

		cr_assert(slot < LOSS_IN_FLIGHT && busy[slot], "a completion for no send in flight");
		busy[slot] = false;
		completed++;
	}
	free(buffers);
}

/*
 * The end of a stream: a send completes once copied, and what UC lost is
 * sent again while progress runs, so this end serves until the receiver
 * has it all and checked it.
 */
static void loss_finish(const struct loss_setup *setup, struct bolt_fixture_endpoint *endpoint,
			pid_t peer, int socket)
{
	uint64_t received;

	cr_assert_eq(rdm_serve_until_told(endpoint, socket, &received), 0, "the receiver failed");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&setup->options, endpoint, peer, socket), 0,
		     "a message was lost, damaged or failed at the receiver");
	bolt_fixture_clear_loss();
}

/*
 * messages tagged messages with UC packets dropped at ppm per million: all
 * arrive. Large ones go by RDMA write (rendezvous, stripes) with data_writes,
 * else as messages.
 */
static void messages_survive(const char *ppm, const char *tag, int messages, bool large,
			     bool data_writes)
{
	struct loss_setup setup = {
		.options = { .profile = "thunderbolt", .software_device_only = true,
			     .caps = FI_MSG | FI_TAGGED | FI_RMA },
		.messages = messages,
		.large = large,
	};
	struct bolt_fixture_endpoint endpoint;
	int socket;
	pid_t peer;

	bolt_fixture_set_loss(ppm, data_writes);
	peer = rdm_pair_start(&setup.options, tag, loss_receiver, &setup, &endpoint, &socket);
	cr_assert(peer > 0);
	loss_stream(&setup, &endpoint, NULL);
	loss_finish(&setup, &endpoint, peer, socket);
}

/* 1 % of packets: a 30000-byte message (30 packets) is lost about one time in four. */
Test(loss, messages_survive_one_percent_thunderbolt_uc)
{
	messages_survive("10000", "loss-1", 700, false, true);
}

/* 10 %: most large messages take several attempts. */
Test(loss, messages_survive_ten_percent_thunderbolt_uc)
{
	messages_survive("100000", "loss-10", 140, false, true);
}

/* Large messages as messages (FI_BOLT_UC_DATA_WRITES=no): 1 % of packets. */
Test(loss, large_messages_survive_one_percent_without_data_writes_thunderbolt_uc)
{
	messages_survive("10000", "loss-large", 90, true, false);
}

/*
 * Large messages by RDMA write (rendezvous into the matched receive, stripes
 * on the data rail): the lost segments are written again, 1 % of packets.
 */
Test(loss, large_messages_survive_one_percent_with_data_writes_thunderbolt_uc)
{
	messages_survive("10000", "loss-large-w1", 90, true, true);
}

/* 10 %: a 16 KiB segment arrives one time in five. */
Test(loss, large_messages_survive_ten_percent_with_data_writes_thunderbolt_uc)
{
	messages_survive("100000", "loss-large-w10", 45, true, true);
}

#define LOSS_REGION (256 * 1024)
#define LOSS_RMA_ROUNDS 40

/* The target: a region to write and read, served until the initiator is done. */
static int loss_target(int socket, void *argument)
{
	const struct loss_setup *setup = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = calloc(1, LOSS_REGION);
	struct fid_mr *mr = NULL;
	int ret = region ? 0 : -FI_ENOMEM;

	if (!ret)
		ret = rdm_serve_region(&endpoint, &setup->options, socket, region, LOSS_REGION,
				       FI_REMOTE_WRITE | FI_REMOTE_READ, &mr);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/*
 * Writes of every size into the target's region, each read back and checked,
 * with UC packets dropped at ppm per million, by RDMA write (data_writes:
 * rendezvous, then direct writes into the granted region, reads written
 * back) or as messages: none fails, none reads back other bytes.
 */
static void rma_survives(const char *ppm, const char *tag, bool data_writes)
{
	static const size_t lengths[] = { 64, 5000, 20000, 100000, LOSS_REGION };
	struct loss_setup setup = {
		.options = { .profile = "thunderbolt", .software_device_only = true,
			     .mr_mode = RDM_MR_MODE },
	};
	struct bolt_fixture_endpoint endpoint;
	uint64_t remote_address, remote_key;
	char *local = malloc(2 * LOSS_REGION);
	struct fid_mr *local_mr;
	int socket;
	pid_t peer;

	cr_assert(local);
	bolt_fixture_set_loss(ppm, data_writes);
	peer = rdm_pair_start(&setup.options, tag, loss_target, &setup, &endpoint, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(rdm_register_region(&endpoint, local, 2 * LOSS_REGION,
					 FI_READ | FI_WRITE | FI_REMOTE_READ, &local_mr), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_address), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_key), 0);
	for (int round = 0; round < LOSS_RMA_ROUNDS; round++) {
		size_t length = lengths[round % (sizeof(lengths) / sizeof(lengths[0]))];
		uint64_t offset = (uint64_t) (round * 4096) % (LOSS_REGION - length + 1);

		rdm_fill(local, length, (uint32_t) round);
		cr_assert_eq(fi_write(endpoint.ep, local, length, fi_mr_desc(local_mr), endpoint.peer,
				      remote_address + offset, remote_key, local), 0);
		rdm_expect_completion(&endpoint, local, 0);
		memset(local + LOSS_REGION, 0, length);
		cr_assert_eq(fi_read(endpoint.ep, local + LOSS_REGION, length, fi_mr_desc(local_mr),
				     endpoint.peer, remote_address + offset, remote_key, local + 1), 0);
		rdm_expect_completion(&endpoint, local + 1, 0);
		cr_assert(rdm_check(local + LOSS_REGION, length, (uint32_t) round),
			  "round %d: %zu bytes read back differ", round, length);
	}
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	/* FI_MR_ENDPOINT: regions close before their endpoint. */
	cr_assert_eq(fi_close(&local_mr->fid), 0);
	cr_assert_eq(rdm_pair_finish(&setup.options, &endpoint, peer, socket), 0, "the target failed");
	bolt_fixture_clear_loss();
	free(local);
}

Test(loss, rma_survives_one_percent_without_data_writes_thunderbolt_uc)
{
	rma_survives("10000", "loss-rma-1", false);
}

Test(loss, rma_survives_ten_percent_without_data_writes_thunderbolt_uc)
{
	rma_survives("100000", "loss-rma-10", false);
}

Test(loss, rma_survives_one_percent_with_data_writes_thunderbolt_uc)
{
	rma_survives("10000", "loss-rma-w1", true);
}

Test(loss, rma_survives_ten_percent_with_data_writes_thunderbolt_uc)
{
	rma_survives("100000", "loss-rma-w10", true);
}

/* Cuts (or restores) both cables between the two hosts of mesh:2x2. */
static void both_cables(bool cut)
{
	cr_assert_eq(softrdma_fault_cut_link(0, 0, cut), 0);
	cr_assert_eq(softrdma_fault_cut_link(0, 1, cut), 0);
}

#define CUT_MESSAGES 300
static struct timespec cut_at;
static bool cables_cut, cables_restored;

/* A third of the way through, both cables go; half a second later they come back. */
static void cut_then_restore(int sent)
{
	if (sent == CUT_MESSAGES / 3 && !cables_cut) {
		both_cables(true);
		clock_gettime(CLOCK_MONOTONIC, &cut_at);
		cables_cut = true;
	}
	if (cables_cut && !cables_restored && loss_seconds_since(&cut_at) > 0.5) {
		both_cables(false);
		cables_restored = true;
	}
	cr_assert(!cables_cut || loss_seconds_since(&cut_at) < 30.0, "the stream never came back");
}

/*
 * Both cables between two hosts cut in the middle of a stream of messages
 * and brought back half a second later, well within the liveness time:
 * what went out meanwhile is sent again once they are back, and every
 * message arrives, in order, once, with no error at either end.
 */
Test(loss, cables_cut_and_restored_thunderbolt_uc)
{
	struct loss_setup setup = {
		.options = { .profile = "thunderbolt", .software_device_only = true,
			     .caps = FI_MSG | FI_TAGGED | FI_RMA, .topology = "mesh:2x2" },
		.messages = CUT_MESSAGES,
	};
	struct bolt_fixture_endpoint endpoint;
	int socket;
	pid_t peer;

	bolt_fixture_set_loss("0", false);
	peer = rdm_pair_start(&setup.options, "loss-cut", loss_receiver, &setup, &endpoint, &socket);
	cr_assert(peer > 0);
	loss_stream(&setup, &endpoint, cut_then_restore);
	cr_assert(cables_restored);
	loss_finish(&setup, &endpoint, peer, socket);
}
