/*
 * bolt_peer_host.c: the TCP connection between a program's two sides on two
 * hosts (see bolt_peer_host.h): the test side's listener, the peer's
 * connection attempts until the test side is there, and the tag each
 * connection starts with.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "bolt_fixture.h"
#include "bolt_peer_host.h"

#define BOLT_PEER_HOST_DEFAULT_PORT "7471"
#define BOLT_PEER_HOST_TAG_SIZE 128
#define BOLT_PEER_HOST_RETRY_MS 50

int bolt_peer_host_role(void)
{
	const char *role = getenv("BOLT_TEST_PEER_ROLE");

	if (!role || !*role)
		return BOLT_PEER_HOST_NONE;
	if (!strcmp(role, "test"))
		return BOLT_PEER_HOST_TEST;
	if (!strcmp(role, "peer"))
		return BOLT_PEER_HOST_PEER;
	fprintf(stderr, "BOLT_TEST_PEER_ROLE=%s: use test or peer\n", role);
	return -1;
}

static const char *bolt_peer_host_port(void)
{
	const char *port = getenv("BOLT_TEST_PEER_PORT");

	return port && *port ? port : BOLT_PEER_HOST_DEFAULT_PORT;
}

/* Small values and names go one way and then the other: no Nagle delay. */
static void bolt_peer_host_no_delay(int socket)
{
	int one = 1;

	setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Both sides send their tag and read the other's: equal or -FI_EOTHER. */
static int bolt_peer_host_agree(int socket, const char *tag, int timeout_ms)
{
	char mine[BOLT_PEER_HOST_TAG_SIZE] = { 0 };
	char theirs[BOLT_PEER_HOST_TAG_SIZE];
	int ret;

	snprintf(mine, sizeof(mine), "%s", tag);
	ret = bolt_fixture_socket_write(socket, mine, sizeof(mine));
	if (!ret)
		ret = bolt_fixture_socket_read(socket, theirs, sizeof(theirs), timeout_ms, NULL);
	if (ret)
		return ret;
	if (memcmp(mine, theirs, sizeof(mine))) {
		theirs[sizeof(theirs) - 1] = '\0';
		fprintf(stderr, "bolt_peer_host: this side is at %s, the other host at %s\n", mine, theirs);
		return -FI_EOTHER;
	}
	return 0;
}

static int bolt_peer_host_listener(void)
{
	struct sockaddr_in6 address = {
		.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons((uint16_t) atoi(bolt_peer_host_port())),
	};
	int listener = socket(AF_INET6, SOCK_STREAM, 0);
	int one = 1, zero = 0;

	if (listener < 0)
		return -errno;
	/* IPv4 peers too (as mapped addresses); the previous test's connections may linger. */
	if (setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(listener, (struct sockaddr *) &address, sizeof(address)) || listen(listener, 4)) {
		int ret = -errno;

		close(listener);
		return ret;
	}
	return listener;
}

/* A connection to the other host made: no delay, and both agree on the test; the fd or an error. */
static int bolt_peer_host_meet(int connection, const char *tag, int timeout_ms)
{
	int ret;

	bolt_peer_host_no_delay(connection);
	ret = bolt_peer_host_agree(connection, tag, timeout_ms);
	if (ret) {
		close(connection);
		return ret;
	}
	return connection;
}

static int bolt_peer_host_accept(const char *tag, int timeout_ms)
{
	struct pollfd pollfd = { .events = POLLIN };
	int listener = bolt_peer_host_listener();
	int connection, ready, ret;

	if (listener < 0)
		return listener;
	pollfd.fd = listener;
	do
		ready = poll(&pollfd, 1, timeout_ms < 0 ? -1 : timeout_ms);
	while (ready < 0 && errno == EINTR);
	connection = ready > 0 ? accept(listener, NULL, NULL) : -1;
	ret = ready == 0 ? -FI_ETIMEDOUT : -errno;
	close(listener);
	if (connection < 0)
		return ret;
	return bolt_peer_host_meet(connection, tag, timeout_ms);
}

/* One attempt at every address the test side's name gives; the socket or -errno. */
static int bolt_peer_host_try(const struct addrinfo *addresses)
{
	int ret = -FI_ENOENT;

	for (const struct addrinfo *address = addresses; address; address = address->ai_next) {
		int connection = socket(address->ai_family, SOCK_STREAM, 0);

		if (connection < 0)
			return -errno;
		if (!connect(connection, address->ai_addr, address->ai_addrlen))
			return connection;
		ret = -errno;
		close(connection);
	}
	return ret;
}

static int bolt_peer_host_dial(const char *tag, int timeout_ms)
{
	const char *host = getenv("BOLT_TEST_PEER_HOST");
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *addresses;
	struct timespec start;
	int connection, ret;

	if (!host || !*host) {
		fprintf(stderr, "bolt_peer_host: BOLT_TEST_PEER_HOST names no test side\n");
		return -FI_EINVAL;
	}
	ret = getaddrinfo(host, bolt_peer_host_port(), &hints, &addresses);
	if (ret) {
		fprintf(stderr, "bolt_peer_host: %s: %s\n", host, gai_strerror(ret));
		return -FI_EINVAL;
	}
	/* The test side listens only once it reaches the same point: try until it does. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		connection = bolt_peer_host_try(addresses);
		if (connection >= 0 || (timeout_ms >= 0 && bolt_fixture_elapsed_ms(&start) > timeout_ms))
			break;
		usleep(BOLT_PEER_HOST_RETRY_MS * 1000);
	} while (connection == -ECONNREFUSED || connection == -ENETUNREACH ||
		 connection == -EHOSTUNREACH || connection == -ETIMEDOUT);
	freeaddrinfo(addresses);
	if (connection < 0)
		return connection == -ECONNREFUSED ? -FI_ETIMEDOUT : connection;
	return bolt_peer_host_meet(connection, tag, timeout_ms);
}

int bolt_peer_host_connect(const char *tag, int timeout_ms)
{
	switch (bolt_peer_host_role()) {
	case BOLT_PEER_HOST_TEST:
		return bolt_peer_host_accept(tag, timeout_ms);
	case BOLT_PEER_HOST_PEER:
		return bolt_peer_host_dial(tag, timeout_ms);
	default:
		return -FI_EINVAL;
	}
}
