/*
 * test_address.c: endpoints reached through the addresses fi_getinfo makes of
 * node and service. A server opened on a fixed port (fi_getinfo with
 * FI_SOURCE) is reached by a client that knows only host and port, as
 * fabtests' servers and clients find each other. Without any source asked,
 * fi_getinfo names the default one (fabtests' fi_getinfo_test wants a source
 * in every answer), and an endpoint opened on it listens there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <criterion/criterion.h>

#include "bolt_address.h"
#include "rdm_fixture.h"

#define MESSAGE_SIZE 1000

struct fixed_port {
	struct rdm_options options;
	const char *node;
	char service[16];
};

/* A TCP port free at the moment of asking. */
static void free_port(char *service, size_t size)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t length = sizeof(address);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *) &address, sizeof(address)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *) &address, &length), 0);
	snprintf(service, size, "%u", ntohs(address.sin_port));
	close(fd);
}

/* The server: listens on the fixed port, says so, receives one message. */
static int server_peer(int socket, void *argument)
{
	struct fixed_port *fixed = argument;
	struct rdm_options options = fixed->options;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *in = calloc(1, MESSAGE_SIZE);
	int ret;

	if (!in)
		return 1;
	options.node = fixed->node;
	options.service = fixed->service;
	options.flags = FI_SOURCE;
	ret = rdm_open(&endpoint, &options);
	if (!ret)
		ret = (int) fi_recv(endpoint.ep, in, MESSAGE_SIZE, NULL, FI_ADDR_UNSPEC, in);
	if (!ret)
		ret = rdm_send_value(socket, 1);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret && (entry.len != MESSAGE_SIZE || !rdm_check(in, MESSAGE_SIZE, 7)))
		ret = -FI_EIO;
	rdm_progress_for(&endpoint, 50);
	bolt_fixture_close(&endpoint);
	free(in);
	return ret;
}

/* A client that knows only node and a port reaches the server listening there. */
static void reach_fixed_port(const char *profile, const char *node)
{
	struct fixed_port fixed = { .options = { .profile = profile }, .node = node };
	struct rdm_options options = { .profile = profile, .node = node };
	struct bolt_fixture_endpoint client;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *out = malloc(MESSAGE_SIZE);
	uint64_t ready;
	int socket, ret;
	pid_t server;

	cr_assert_not_null(out);
	rdm_fill(out, MESSAGE_SIZE, 7);
	rdm_environment(&fixed.options, "address");
	free_port(fixed.service, sizeof(fixed.service));
	options.service = fixed.service;
	server = rdm_fork(server_peer, &fixed, &socket);
	cr_assert_gt(server, 0);
	cr_assert_eq(rdm_receive_value(socket, &ready), 0, "the server did not start");

	cr_assert_eq(rdm_open(&client, &options), 0);
	cr_assert_eq(client.info->dest_addrlen, sizeof(struct bolt_address));
	cr_assert_eq(fi_av_insert(client.av, client.info->dest_addr, 1, &client.peer, 0, NULL), 1);
	do {
		ret = (int) fi_send(client.ep, out, MESSAGE_SIZE, NULL, client.peer, out);
	} while (ret == -FI_EAGAIN);
	cr_assert_eq(ret, 0);
	ret = rdm_wait(&client, &entry, &error);
	cr_assert_eq(ret, 0, "send: %d, error %d", ret, error.err);
	cr_assert_eq(entry.op_context, out);
	cr_assert_eq(bolt_fixture_process_status(server), 0, "the server did not receive the message intact");

	bolt_fixture_close(&client);
	rdm_environment_cleanup(&fixed.options);
	close(socket);
	free(out);
}

Test(address, host_and_port_reach_a_fixed_port_thunderbolt)
{
	reach_fixed_port("thunderbolt", "127.0.0.1");
}

Test(address, host_and_port_reach_a_fixed_port_rocev2)
{
	reach_fixed_port("rocev2", "127.0.0.1");
}

/* This host's first IPv6 link-local address on an interface that is up, and the interface. */
static bool link_local_address(char *address, size_t size, char *interface)
{
	struct ifaddrs *interfaces, *entry;
	bool found = false;

	cr_assert_eq(getifaddrs(&interfaces), 0);
	for (entry = interfaces; entry && !found; entry = entry->ifa_next) {
		const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *) entry->ifa_addr;

		if (!ipv6 || ipv6->sin6_family != AF_INET6 || !(entry->ifa_flags & IFF_UP) ||
		    !IN6_IS_ADDR_LINKLOCAL(&ipv6->sin6_addr))
			continue;
		found = inet_ntop(AF_INET6, &ipv6->sin6_addr, address, (socklen_t) size) != NULL;
		snprintf(interface, IF_NAMESIZE, "%s", entry->ifa_name);
	}
	freeifaddrs(interfaces);
	return found;
}

/*
 * Thunderbolt bridges between hosts often have IPv6 link-local addresses only.
 * Such an address names a link, so bolt addresses carry no scope: the server
 * binds it, and the client reaches it, through this host's interface. The
 * side channels of both listen on it (FI_BOLT_SIDE_CHANNEL_ADDRESS, with the
 * interface named); the node the client knows has no scope.
 */
Test(address, an_ipv6_link_local_side_channel)
{
	char address[INET6_ADDRSTRLEN], interface[IF_NAMESIZE], named[INET6_ADDRSTRLEN + IF_NAMESIZE + 1];

	if (!link_local_address(address, sizeof(address), interface))
		cr_skip_test("no interface that is up has an IPv6 link-local address");
	snprintf(named, sizeof(named), "%s%%%s", address, interface);
	setenv("FI_BOLT_SIDE_CHANNEL_ADDRESS", named, 1);
	reach_fixed_port("thunderbolt", address);
	unsetenv("FI_BOLT_SIDE_CHANNEL_ADDRESS");
}

/* An IPv4 address on 127.0.0.1, the software device's default source; its port. */
static uint16_t expect_loopback(const void *data, size_t length)
{
	struct bolt_address address;
	const uint8_t loopback[4] = { 127, 0, 0, 1 };

	cr_assert_eq(length, sizeof(address));
	cr_assert(bolt_address_is_valid(data, length));
	memcpy(&address, data, sizeof(address));
	cr_expect_eq(address.family, BOLT_ADDRESS_FAMILY_IPV4);
	cr_expect_arr_eq(address.ip, loopback, sizeof(loopback));
	return ntohs(address.port);
}

Test(address, a_source_in_every_answer)
{
	struct rdm_options options = { .profile = "thunderbolt", .node = "127.0.0.1", .service = "4242" };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_address name;
	size_t length = sizeof(name);

	rdm_environment(&options, "address-source");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_expect_eq(expect_loopback(endpoint.info->src_addr, endpoint.info->src_addrlen), 0,
		     "the default source leaves the port to the endpoint");
	cr_expect_eq(expect_loopback(endpoint.info->dest_addr, endpoint.info->dest_addrlen), 4242);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, &name, &length), 0);
	cr_expect_neq(expect_loopback(&name, length), 0, "the endpoint listens on a port of its own");
	bolt_fixture_close(&endpoint);

	options.node = options.service = NULL;
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_expect_eq(expect_loopback(endpoint.info->src_addr, endpoint.info->src_addrlen), 0);
	cr_expect_null(endpoint.info->dest_addr);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}
