/*
 * test_hello_sender.c: a hello's claimed sender against the side channel's
 * peer (bolt_connection_sender_matches_peer): a remote peer may claim only
 * its own IP, a loopback peer only an address of this host.
 */
#include <arpa/inet.h>
#include <string.h>
#include <criterion/criterion.h>

#include "bolt_address.h"
#include "connection/bolt_connection.h"

static struct bolt_address ipv4_address(const char *text)
{
	struct bolt_address address = { .family = BOLT_ADDRESS_FAMILY_IPV4, .port = htons(4242) };

	cr_assert_eq(inet_pton(AF_INET, text, address.ip), 1);
	return address;
}

static struct sockaddr_in ipv4_peer(const char *text)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(55555) };

	cr_assert_eq(inet_pton(AF_INET, text, &peer.sin_addr), 1);
	return peer;
}

static bool matches(const char *sender_text, const char *peer_text)
{
	struct bolt_address sender = ipv4_address(sender_text);
	struct sockaddr_in peer = ipv4_peer(peer_text);

	return bolt_connection_sender_matches_peer(&sender, (struct sockaddr *) &peer, sizeof(peer));
}

Test(hello_sender, a_peer_may_claim_its_own_ip_whatever_the_port)
{
	cr_assert(matches("169.254.7.1", "169.254.7.1"));
	cr_assert(matches("127.0.0.1", "127.0.0.1"));
}

Test(hello_sender, a_remote_peer_may_not_claim_another_ip)
{
	cr_assert_not(matches("169.254.7.2", "169.254.7.1"), "a spoofed sender");
	cr_assert_not(matches("127.0.0.1", "169.254.7.1"), "a remote peer claiming our loopback");
}

/* 192.0.2.0/24 is documentation space: no interface of a test machine holds it. */
Test(hello_sender, a_loopback_peer_may_claim_only_this_hosts_addresses)
{
	cr_assert(matches("127.0.0.2", "127.0.0.1"));
	cr_assert_not(matches("192.0.2.1", "127.0.0.1"), "a local process claiming a remote host");
}

Test(hello_sender, an_ipv4_peer_on_an_ipv6_listener_compares_as_ipv4)
{
	struct bolt_address sender = ipv4_address("169.254.7.1");
	struct sockaddr_in6 peer = { .sin6_family = AF_INET6 };

	cr_assert_eq(inet_pton(AF_INET6, "::ffff:169.254.7.1", &peer.sin6_addr), 1);
	cr_assert(bolt_connection_sender_matches_peer(&sender, (struct sockaddr *) &peer, sizeof(peer)));
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:169.254.7.9", &peer.sin6_addr), 1);
	cr_assert_not(bolt_connection_sender_matches_peer(&sender, (struct sockaddr *) &peer,
							  sizeof(peer)));
}
