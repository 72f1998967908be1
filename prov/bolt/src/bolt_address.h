/*
 * bolt_address.h: bolt's endpoint address, what fi_getname returns and
 * fi_av_insert takes: where a peer's side channel listens (IP address and TCP
 * port) and which endpoint behind it. Fixed size, at most 56 bytes (NCCL
 * network plugins require that of fi_getname), and the same bytes on every
 * host: multi-byte fields are in network order and the family is bolt's own
 * number, since AF_INET6 is 10 on Linux and 30 on macOS.
 */
#ifndef BOLT_ADDRESS_H
#define BOLT_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#define BOLT_ADDRESS_VERSION 1

enum bolt_address_family {
	BOLT_ADDRESS_FAMILY_IPV4 = 4,
	BOLT_ADDRESS_FAMILY_IPV6 = 6,
};

struct bolt_address {
	uint8_t version;        /* BOLT_ADDRESS_VERSION */
	uint8_t family;         /* enum bolt_address_family */
	uint16_t port;          /* TCP port of the endpoint's side channel */
	uint32_t endpoint_id;   /* which endpoint listens behind that port */
	uint8_t ip[16];         /* IPv4 in the first 4 bytes, the rest zero */
};

_Static_assert(sizeof(struct bolt_address) == 24, "bolt_address has no padding");
_Static_assert(sizeof(struct bolt_address) <= 56, "NCCL plugins take names of at most 56 bytes");

/*
 * libfabric has no format for a provider's own binary address: such
 * providers report FI_FORMAT_UNSPEC and applications treat it as opaque.
 */
#define BOLT_ADDRESS_FORMAT FI_FORMAT_UNSPEC

static inline bool bolt_address_bytes_are_zero(const uint8_t *bytes, size_t length)
{
	for (size_t i = 0; i < length; i++)
		if (bytes[i])
			return false;
	return true;
}

/* Whether length bytes at data are a well-formed bolt address. */
static inline bool bolt_address_is_valid(const void *data, size_t length)
{
	struct bolt_address address;

	if (!data || length != sizeof(address))
		return false;
	memcpy(&address, data, sizeof(address));
	if (address.version != BOLT_ADDRESS_VERSION)
		return false;
	if (address.family == BOLT_ADDRESS_FAMILY_IPV4)
		return bolt_address_bytes_are_zero(address.ip + 4, sizeof(address.ip) - 4);
	return address.family == BOLT_ADDRESS_FAMILY_IPV6;
}

/* The address of endpoint_id behind an IPv4 or IPv6 socket address; -FI_EINVAL otherwise. */
static inline int bolt_address_from_sockaddr(const struct sockaddr *sockaddr,
					     uint32_t endpoint_id, struct bolt_address *address)
{
	memset(address, 0, sizeof(*address));
	address->version = BOLT_ADDRESS_VERSION;
	address->endpoint_id = htonl(endpoint_id);
	if (sockaddr->sa_family == AF_INET) {
		const struct sockaddr_in *ipv4 = (const struct sockaddr_in *) sockaddr;

		address->family = BOLT_ADDRESS_FAMILY_IPV4;
		address->port = ipv4->sin_port;
		memcpy(address->ip, &ipv4->sin_addr, sizeof(ipv4->sin_addr));
		return 0;
	}
	if (sockaddr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *) sockaddr;

		address->family = BOLT_ADDRESS_FAMILY_IPV6;
		address->port = ipv6->sin6_port;
		memcpy(address->ip, &ipv6->sin6_addr, sizeof(ipv6->sin6_addr));
		return 0;
	}
	return -FI_EINVAL;
}

/* The socket address of the side channel behind address; -FI_EINVAL if malformed. */
static inline int bolt_address_to_sockaddr(const struct bolt_address *address,
					   struct sockaddr_storage *sockaddr, socklen_t *length)
{
	memset(sockaddr, 0, sizeof(*sockaddr));
	if (address->family == BOLT_ADDRESS_FAMILY_IPV4) {
		struct sockaddr_in *ipv4 = (struct sockaddr_in *) sockaddr;

		ipv4->sin_family = AF_INET;
		ipv4->sin_port = address->port;
		memcpy(&ipv4->sin_addr, address->ip, sizeof(ipv4->sin_addr));
		*length = sizeof(*ipv4);
		return 0;
	}
	if (address->family == BOLT_ADDRESS_FAMILY_IPV6) {
		struct sockaddr_in6 *ipv6 = (struct sockaddr_in6 *) sockaddr;

		ipv6->sin6_family = AF_INET6;
		ipv6->sin6_port = address->port;
		memcpy(&ipv6->sin6_addr, address->ip, sizeof(ipv6->sin6_addr));
		*length = sizeof(*ipv6);
		return 0;
	}
	return -FI_EINVAL;
}

/* Room for bolt_address_format's text of any address. */
#define BOLT_ADDRESS_TEXT_SIZE (INET6_ADDRSTRLEN + 32)

/* "bolt://10.1.2.3:5000/7" or "bolt://[fe80::1]:5000/7" into text; snprintf's return. */
static inline int bolt_address_format(const struct bolt_address *address, char *text, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (address->family == BOLT_ADDRESS_FAMILY_IPV4) {
		inet_ntop(AF_INET, address->ip, ip, sizeof(ip));
		return snprintf(text, size, "bolt://%s:%u/%u", ip, ntohs(address->port),
				ntohl(address->endpoint_id));
	}
	inet_ntop(AF_INET6, address->ip, ip, sizeof(ip));
	return snprintf(text, size, "bolt://[%s]:%u/%u", ip, ntohs(address->port),
			ntohl(address->endpoint_id));
}

#endif /* BOLT_ADDRESS_H */
