/*
 * setup_bench.c: what a first contact between two endpoints costs. Between
 * two processes on the software device, each round opens an endpoint at
 * both ends, exchanges their names, sends a first 8-byte message (the
 * connection is made under it: side channel, key handshake, hello and its
 * confirmation, link) and closes both. Prints, over the rounds, the median
 * and range of the first send (from fi_send to its completion) and of the
 * whole round. Built by make check, not run by it:
 *   test/endpoint/setup_bench [rounds]      (default 200)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rdm_fixture.h"

static int rounds = 200;

static double elapsed_us(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1e6 + (now.tv_nsec - start->tv_nsec) / 1e3;
}

/* Each round: open, take the first message, close. */
static int receiving_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t message;
	int ret = 0;

	for (int round = 0; !ret && round < rounds; round++) {
		struct bolt_fixture_endpoint endpoint;

		ret = rdm_open_connected(&endpoint, options, socket);
		if (ret)
			break;
		ret = (int) fi_recv(endpoint.ep, &message, sizeof(message), NULL, FI_ADDR_UNSPEC, &message);
		if (!ret)
			ret = rdm_wait(&endpoint, &entry, &error);
		/* The sender closes only once we are done: no round's close meets the next's hello. */
		if (!ret)
			ret = rdm_send_value(socket, 1);
		bolt_fixture_close(&endpoint);
	}
	return ret;
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static void report(const char *what, double *values)
{
	qsort(values, (size_t) rounds, sizeof(*values), compare);
	printf("%-28s %10.1f %10.1f %10.1f\n", what, values[rounds / 2], values[0], values[rounds - 1]);
}

int main(int argc, char **argv)
{
	struct rdm_options options = { .profile = "thunderbolt" };
	double *first_send, *round_time;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t message = 42, done;
	int socket, ret = 0;
	pid_t peer;

	if (argc > 1)
		rounds = atoi(argv[1]);
	if (rounds < 1)
		return 2;
	first_send = calloc((size_t) rounds, sizeof(*first_send));
	round_time = calloc((size_t) rounds, sizeof(*round_time));
	if (!first_send || !round_time)
		return 1;
	rdm_environment(&options, "setup-bench");
	peer = rdm_fork(receiving_peer, &options, &socket);
	if (peer <= 0)
		return 1;
	for (int round = 0; !ret && round < rounds; round++) {
		struct bolt_fixture_endpoint endpoint;
		struct timespec start, sent;

		clock_gettime(CLOCK_MONOTONIC, &start);
		ret = rdm_open_connected(&endpoint, &options, socket);
		if (ret)
			break;
		clock_gettime(CLOCK_MONOTONIC, &sent);
		ret = (int) fi_send(endpoint.ep, &message, sizeof(message), NULL, endpoint.peer, &message);
		if (!ret)
			ret = rdm_wait(&endpoint, &entry, &error);
		first_send[round] = elapsed_us(&sent);
		if (!ret)
			ret = rdm_receive_value(socket, &done);
		bolt_fixture_close(&endpoint);
		round_time[round] = elapsed_us(&start);
	}
	if (ret) {
		fprintf(stderr, "setup_bench: failed: %d\n", ret);
		return 1;
	}
	printf("# connection set-up, thunderbolt profile, 2 processes, %d rounds, microseconds\n", rounds);
	printf("%-28s %10s %10s %10s\n", "#", "median", "min", "max");
	report("first send (connect incl.)", first_send);
	report("open+names+send+close", round_time);
	ret = bolt_fixture_process_status(peer);
	rdm_environment_cleanup(&options);
	free(first_send);
	free(round_time);
	return ret ? 1 : 0;
}
