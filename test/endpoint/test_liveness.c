/*
 * test_liveness.c: a peer process that dies. UC reports nothing when a peer
 * is gone, so bolt watches the side channel: operations in flight and new
 * ones to the dead peer must end with an error within 2 seconds, not hang.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rdm_fixture.h"

#define LARGE (4 << 20)

/* Connects, answers one message, then stops progressing until it is killed. */
static int sleeping_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct rdm_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char buffer[64];
	int ret;

	ret = rdm_open(&endpoint, options);
	if (!ret)
		ret = rdm_connect(&endpoint, socket);
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
	struct rdm_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *large = calloc(1, LARGE);
	char small[64] = "hello";
	struct timespec killed;
	uint64_t answered;
	int socket, errors = 0;
	pid_t peer;

	rdm_environment(options, tag);
	peer = rdm_fork(sleeping_peer, options, &socket);
	cr_assert(peer > 0 && large);
	cr_assert_eq(rdm_open(&endpoint, options), 0);
	cr_assert_eq(rdm_connect(&endpoint, socket), 0);
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

	cr_assert_eq(rdm_join(peer), 128 + SIGKILL);
	rdm_close(&endpoint);
	rdm_environment_cleanup(options);
	close(socket);
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
