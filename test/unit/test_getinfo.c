/*
 * test_getinfo.c: bolt's fi_getinfo end to end: what this stage advertises
 * (caps within BOLT_CAPS_IMPLEMENTED), one fi_info per usable port of the
 * software device with the port's name and limits, node and service as
 * addresses, and -FI_ENODATA when there are no devices or nothing matches.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <criterion/criterion.h>

#include "bolt.h"
#include "bolt_address.h"
#include "bolt_attr.h"
#include "bolt_fabric.h"
#include "bolt_getinfo.h"
#include "device/bolt_device.h"
#include "softrdma/softrdma.h"

#define API_VERSION FI_VERSION(1, 17)

static struct fi_info *hints;
static struct fi_info *info;

static void clear_environment(void)
{
	const char *names[] = {
		"FI_BOLT_SOFT", "FI_BOLT_GID_INDEX", "FI_BOLT_VERBS_LIBRARY",
		"FI_BOLT_SOFT_TOPOLOGY", "FI_BOLT_SOFT_HOST", "FI_BOLT_SOFT_NAMESPACE",
		"FI_BOLT_SOFT_MAX_MR", "FI_BOLT_SOFT_MAX_QP",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

static void setup(void)
{
	clear_environment();
	hints = fi_allocinfo();
	cr_assert_not_null(hints);
	info = NULL;
}

static void teardown(void)
{
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

TestSuite(getinfo, .init = setup, .fini = teardown);

/* A software device of its own for each test (Criterion runs each in a process). */
static void use_software_device(const char *profile, const char *topology)
{
	char namespace_name[64];

	snprintf(namespace_name, sizeof(namespace_name), "test-getinfo-%d", (int) getpid());
	setenv("FI_BOLT_SOFT", profile, 1);
	setenv("FI_BOLT_SOFT_TOPOLOGY", topology, 1);
	setenv("FI_BOLT_SOFT_NAMESPACE", namespace_name, 1);
}

static size_t info_count(const struct fi_info *list)
{
	size_t count = 0;

	for (; list; list = list->next)
		count++;
	return count;
}

static void expect_address(const void *data, size_t length, int family, uint16_t port)
{
	struct bolt_address address;

	cr_assert_not_null(data);
	cr_assert_eq(length, sizeof(address));
	cr_assert(bolt_address_is_valid(data, length));
	memcpy(&address, data, sizeof(address));
	cr_expect_eq(address.family, family);
	cr_expect_eq(ntohs(address.port), port);
	cr_expect_eq(address.endpoint_id, 0);
}

Test(getinfo, unimplemented_caps_rejected)
{
	uint64_t pending = BOLT_DESIGN_CAPS & ~BOLT_CAPS_IMPLEMENTED;

	for (int bit = 0; bit < 64; bit++) {
		if (!(pending & (1ULL << bit)))
			continue;
		hints->caps = 1ULL << bit;
		cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA,
			     "caps %s is not implemented yet", fi_tostr(&hints->caps, FI_TYPE_CAPS));
		cr_expect_null(info);
	}
}

Test(getinfo, no_verbs_library_means_no_devices)
{
	setenv("FI_BOLT_VERBS_LIBRARY", "libbolt-test-no-such-verbs.so", 1);
	cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, NULL, &info), -FI_ENODATA);
	cr_expect_null(info);
}

Test(getinfo, bad_parameter_is_an_error)
{
	setenv("FI_BOLT_SOFT", "no-such-profile", 1);
	cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, NULL, &info), -FI_EINVAL);
	cr_expect_null(info);
}

Test(getinfo, unresolvable_node_or_service)
{
	cr_expect_eq(bolt_getinfo(API_VERSION, "not-a-number", "4242", FI_NUMERICHOST, NULL, &info),
		     -FI_ENODATA);
	cr_expect_eq(bolt_getinfo(API_VERSION, "127.0.0.1", "no-such-service-of-bolt", 0, NULL,
				  &info), -FI_ENODATA);
	cr_expect_null(info);
}

Test(getinfo, resolve_numeric_hosts)
{
	struct bolt_address address;
	const uint8_t loopback4[4] = { 127, 0, 0, 1 };

	cr_assert_eq(bolt_getinfo_resolve("127.0.0.1", "4242", 0, &address), 0);
	expect_address(&address, sizeof(address), BOLT_ADDRESS_FAMILY_IPV4, 4242);
	cr_expect_arr_eq(address.ip, loopback4, sizeof(loopback4));

	cr_assert_eq(bolt_getinfo_resolve("::1", "7", FI_NUMERICHOST, &address), 0);
	expect_address(&address, sizeof(address), BOLT_ADDRESS_FAMILY_IPV6, 7);
	cr_expect_eq(address.ip[15], 1);
}

Test(getinfo, resolve_passive_source)
{
	struct bolt_address address;

	cr_assert_eq(bolt_getinfo_resolve(NULL, "9228", FI_SOURCE, &address), 0);
	cr_expect_eq(ntohs(address.port), 9228);
	cr_expect(bolt_address_bytes_are_zero(address.ip, sizeof(address.ip)),
		  "a passive address is the wildcard");
}

Test(getinfo, fabric_opens_by_name_only)
{
	struct fi_fabric_attr attr = { .name = BOLT_FABRIC_NAME };
	struct fi_fabric_attr other = { .name = "not-bolt" };
	struct fid_fabric *fabric = NULL;

	cr_expect_eq(bolt_fabric_open(&other, &fabric, NULL), -FI_ENODATA);
	cr_expect_null(fabric);
	cr_assert_eq(bolt_fabric_open(&attr, &fabric, NULL), 0);
	cr_assert_not_null(fabric);
	cr_expect_eq(fabric->fid.fclass, FI_CLASS_FABRIC);
	cr_expect_eq(fi_close(&fabric->fid), 0);
}

/* The software device: one fi_info per usable port, with the port's limits. */
Test(getinfo, software_device_ports)
{
	struct softrdma_profile_limits limits;

	use_software_device("thunderbolt", "single");
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(info_count(info), 1);
	softrdma_profile_limits(SOFTRDMA_PROFILE_THUNDERBOLT, &limits);
	cr_expect_str_eq(info->domain_attr->name, "rdma_en0");
	cr_expect_str_eq(info->fabric_attr->name, BOLT_FABRIC_NAME);
	cr_expect_null(info->fabric_attr->prov_name, "libfabric's core fills it in");
	cr_expect_eq(info->fabric_attr->api_version, API_VERSION);
	cr_expect_eq(info->ep_attr->type, FI_EP_RDM);
	cr_expect_eq(info->caps, BOLT_DESIGN_CAPS & BOLT_CAPS_IMPLEMENTED);
	cr_expect_eq(info->tx_attr->caps & ~BOLT_CAPS_IMPLEMENTED, 0);
	cr_expect_eq(info->rx_attr->caps & ~BOLT_CAPS_IMPLEMENTED, 0);
	cr_expect_eq(info->domain_attr->caps & ~BOLT_CAPS_IMPLEMENTED, 0);
	cr_expect_eq(info->domain_attr->mr_cnt, (size_t) (limits.max_mr - BOLT_DEVICE_SLAB_MRS));
	cr_expect_leq(info->domain_attr->ep_cnt, (size_t) limits.max_qp);
	cr_expect_eq(info->domain_attr->mr_mode, BOLT_MR_MODE_SUPPORTED);
	cr_expect_eq(info->addr_format, BOLT_ADDRESS_FORMAT);
	/* The default source: loopback on the software device, any port. */
	expect_address(info->src_addr, info->src_addrlen, BOLT_ADDRESS_FAMILY_IPV4, 0);
	cr_expect_null(info->dest_addr);
}

Test(getinfo, one_info_per_device)
{
	use_software_device("rocev2", "mesh:3");
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(info_count(info), 2, "host 0 of a 3-host mesh has a cable to each peer");
	cr_expect_str_eq(info->domain_attr->name, "softroce0");
	cr_expect_str_eq(info->next->domain_attr->name, "softroce1");
}

Test(getinfo, domain_name_selects_one_port)
{
	use_software_device("rocev2", "mesh:3");
	hints->domain_attr->name = strdup("softroce1");
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	cr_assert_eq(info_count(info), 1);
	cr_expect_str_eq(info->domain_attr->name, "softroce1");

	fi_freeinfo(info);
	info = NULL;
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("rdma_en9");
	cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA);
	cr_expect_null(info);
}

Test(getinfo, hints_narrow_each_port)
{
	use_software_device("thunderbolt", "single");
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	cr_expect_eq(info->mode, 0);
	cr_expect_eq(info->domain_attr->mr_mode, hints->domain_attr->mr_mode,
		     "no FI_MR_ENDPOINT where the hints do not allow it");
	cr_expect_eq(info->domain_attr->threading, FI_THREAD_DOMAIN);
}

/* Tag bit 63 is the application's (Open MPI needs it) unless it asks for collectives. */
Test(getinfo, collectives_take_tag_bit_63)
{
	use_software_device("thunderbolt", "single");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	cr_expect(info->ep_attr->mem_tag_format & (1ULL << 63));
	fi_freeinfo(info);
	info = NULL;
	hints->caps = FI_TAGGED | FI_COLLECTIVE;
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	cr_expect_eq(info->ep_attr->mem_tag_format, (1ULL << 63) - 1);
	fi_freeinfo(info);
	info = NULL;
	/* All 64 bits asked for: no collectives, or no info if they are asked for too. */
	hints->ep_attr->mem_tag_format = ~0ULL;
	cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA);
	hints->caps = 0;
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	cr_expect_eq(info->caps & FI_COLLECTIVE, 0);
	cr_expect_eq(info->tx_attr->caps & FI_COLLECTIVE, 0);
	cr_expect(info->ep_attr->mem_tag_format & (1ULL << 63), "an info must meet its hints");
}

Test(getinfo, mismatching_hints_give_no_data)
{
	use_software_device("thunderbolt", "single");
	hints->ep_attr->type = FI_EP_MSG;
	cr_expect_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA);
	cr_expect_null(info);
}

Test(getinfo, node_and_service_give_the_destination)
{
	use_software_device("thunderbolt", "single");
	cr_assert_eq(bolt_getinfo(API_VERSION, "127.0.0.1", "4242", 0, NULL, &info), 0);
	expect_address(info->dest_addr, info->dest_addrlen, BOLT_ADDRESS_FAMILY_IPV4, 4242);
	expect_address(info->src_addr, info->src_addrlen, BOLT_ADDRESS_FAMILY_IPV4, 0);
}

Test(getinfo, fi_source_gives_the_source)
{
	use_software_device("thunderbolt", "single");
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, "9228", FI_SOURCE, NULL, &info), 0);
	cr_assert_not_null(info->src_addr);
	cr_expect_eq(info->src_addrlen, sizeof(struct bolt_address));
	cr_expect_null(info->dest_addr);
}

Test(getinfo, hints_addresses_passed_on)
{
	struct bolt_address address;

	use_software_device("thunderbolt", "single");
	cr_assert_eq(bolt_getinfo_resolve("10.0.0.2", "5000", FI_NUMERICHOST, &address), 0);
	hints->dest_addr = malloc(sizeof(address));
	cr_assert_not_null(hints->dest_addr);
	memcpy(hints->dest_addr, &address, sizeof(address));
	hints->dest_addrlen = sizeof(address);
	cr_assert_eq(bolt_getinfo(API_VERSION, NULL, NULL, 0, hints, &info), 0);
	expect_address(info->dest_addr, info->dest_addrlen, BOLT_ADDRESS_FAMILY_IPV4, 5000);
	cr_expect_neq(info->dest_addr, hints->dest_addr, "a copy, freed with the info");
}

/* Whether the host has an interface that is up and not loopback (IPv4, or IPv6 not link-local). */
static bool host_has_a_reachable_interface(void)
{
	struct ifaddrs *interfaces;
	bool found = false;

	cr_assert_eq(getifaddrs(&interfaces), 0);
	for (const struct ifaddrs *entry = interfaces; entry && !found; entry = entry->ifa_next) {
		const struct sockaddr *address = entry->ifa_addr;

		if (!address || !(entry->ifa_flags & IFF_UP) || (entry->ifa_flags & IFF_LOOPBACK))
			continue;
		found = address->sa_family == AF_INET ||
			(address->sa_family == AF_INET6 &&
			 !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *) address)->sin6_addr));
	}
	freeifaddrs(interfaces);
	return found;
}

static bool is_loopback(const struct bolt_address *address)
{
	static const uint8_t ipv6_loopback[16] = { [15] = 1 };

	return address->family == BOLT_ADDRESS_FAMILY_IPV4 ? address->ip[0] == 127 :
	       !memcmp(address->ip, ipv6_loopback, sizeof(ipv6_loopback));
}

/*
 * Real devices' peers are on other hosts: the default side channel address
 * is not loopback where the host has an interface that reaches them, even
 * where its name resolves to loopback. Named, or on the software device,
 * loopback is what is asked for.
 */
Test(getinfo, default_source_reaches_other_hosts)
{
	struct bolt_params params = { .side_channel_address = "" };
	struct bolt_address address;

	cr_assert_eq(bolt_getinfo_default_source(&params, false, &address), 0);
	if (host_has_a_reachable_interface())
		cr_expect_not(is_loopback(&address), "a loopback default on a host with an interface");
	cr_assert_eq(bolt_getinfo_default_source(&params, true, &address), 0);
	cr_expect(is_loopback(&address), "the software device's peers are this host's");
	strcpy(params.side_channel_address, "127.0.0.1");
	cr_assert_eq(bolt_getinfo_default_source(&params, false, &address), 0);
	cr_expect(is_loopback(&address), "the address asked for");
}
