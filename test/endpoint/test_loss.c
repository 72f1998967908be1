/*
 * test_loss.c: what UC loses is sent again. With the software device
 * dropping UC packets at a seeded rate (FI_BOLT_SOFT_DROP_PPM), messages of
 * every size the control rail carries (one segment, several, written whole
 * into a bounce buffer) all complete, each with its own data, in order and
 * once: a lost message neither fails its connection nor arrives twice.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "rdm_fixture.h"

/* One segment, the most one takes, several, and written whole (bounce buffers, 32 KiB). */
static const size_t loss_lengths[] = { 8, 1000, 4024, 4025, 9000, 16384, 30000 };
#define LOSS_LENGTH_MAX 30000
#define LOSS_LENGTH_COUNT (sizeof(loss_lengths) / sizeof(loss_lengths[0]))
/* Sends the sender keeps in flight at once. */
#define LOSS_IN_FLIGHT 8

struct loss_setup {
	struct rdm_options options;
	int messages;
};

static size_t loss_length(int index)
{
	return loss_lengths[(size_t) index % LOSS_LENGTH_COUNT];
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
		if (!ret && (entry.len != loss_length(i) || entry.tag != (uint64_t) i ||
			     !rdm_check(buffer, loss_length(i), (uint32_t) i)))
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

/* setup->messages tagged messages with UC packets dropped at ppm per million: all arrive. */
static void messages_survive(const char *ppm, const char *tag, int messages)
{
	struct loss_setup setup = {
		.options = { .profile = "thunderbolt", .software_device_only = true,
			     .caps = FI_MSG | FI_TAGGED | FI_RMA },
		.messages = messages,
	};
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t received;
	char *buffers;
	int socket, sent = 0, completed = 0;
	pid_t peer;

	setenv("FI_BOLT_SOFT_DROP_PPM", ppm, 1);
	setenv("FI_BOLT_SOFT_SEED", "28", 1);
	peer = rdm_pair_start(&setup.options, tag, loss_receiver, &setup, &endpoint, &socket);
	cr_assert(peer > 0);
	buffers = malloc((size_t) LOSS_IN_FLIGHT * LOSS_LENGTH_MAX);
	cr_assert(buffers);
	while (completed < messages) {
		/* The first alone: the others find the link, and its bounce buffers, known. */
		if (sent < messages && sent - completed < (sent ? LOSS_IN_FLIGHT : 1)) {
			char *buffer = buffers + (size_t) (sent % LOSS_IN_FLIGHT) * LOSS_LENGTH_MAX;

			rdm_fill(buffer, loss_length(sent), (uint32_t) sent);
			cr_assert_eq(fi_tsend(endpoint.ep, buffer, loss_length(sent), NULL, endpoint.peer,
					      (uint64_t) sent, NULL), 0);
			sent++;
			continue;
		}
		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0, "message %d: error %d", completed,
			     error.err);
		completed++;
	}
	/* A send completes once copied: what UC lost is sent again while progress runs. */
	cr_assert_eq(rdm_serve_until_told(&endpoint, socket, &received), 0, "the receiver failed");
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&setup.options, &endpoint, peer, socket), 0,
		     "a message was lost, damaged or failed at the receiver");
	unsetenv("FI_BOLT_SOFT_DROP_PPM");
	unsetenv("FI_BOLT_SOFT_SEED");
	free(buffers);
}

/* 1 % of packets: a 30000-byte message (30 packets) is lost about one time in four. */
Test(loss, messages_survive_one_percent_thunderbolt_uc)
{
	messages_survive("10000", "loss-1", 700);
}

/* 10 %: most large messages take several attempts. */
Test(loss, messages_survive_ten_percent_thunderbolt_uc)
{
	messages_survive("100000", "loss-10", 140);
}
