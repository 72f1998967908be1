/*
 * bolt_getinfo.c: fi_getinfo for bolt. Reads the parameters, opens verbs,
 * reads the devices, and gives one fi_info per usable port: bolt_attr's
 * attributes masked to what is implemented, the port's name and limits,
 * matched against and narrowed to the hints, with node and service as an
 * address. Everything opened is closed before returning.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fi_ext_bolt.h>

#include "bolt.h"
#include "bolt_attr.h"
#include "bolt_getinfo.h"
#include "bolt_hints.h"
#include "device/bolt_device.h"
#include "device/bolt_device_advice.h"
#include "verbs/bolt_verbs.h"

/* Hints asking for what the design has but this stage lacks get a clear answer. */
static int bolt_getinfo_check_implemented(const struct fi_info *hints)
{
	uint64_t pending = hints ? hints->caps & BOLT_DESIGN_CAPS & ~BOLT_CAPS_IMPLEMENTED : 0;
	char text[256];

	if (!pending)
		return 0;
	FI_INFO(&bolt_prov, FI_LOG_CORE, "hints caps ask %s, not implemented yet in bolt %u.%u\n",
		fi_tostr_r(text, sizeof(text), &pending, FI_TYPE_CAPS),
		FI_MAJOR(BOLT_PROVIDER_VERSION), FI_MINOR(BOLT_PROVIDER_VERSION));
	return -FI_ENODATA;
}

int bolt_getinfo_resolve(const char *node, const char *service, uint64_t flags,
			 struct bolt_address *address)
{
	/* The address is where the side channel listens: a TCP port. */
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *results, *result;
	int ret;

	if (flags & FI_SOURCE)
		hints.ai_flags |= AI_PASSIVE;
	if (flags & FI_NUMERICHOST)
		hints.ai_flags |= AI_NUMERICHOST;
	ret = getaddrinfo(node, service, &hints, &results);
	if (ret) {
		FI_INFO(&bolt_prov, FI_LOG_CORE, "node \"%s\" service \"%s\" do not resolve: %s\n",
			node ? node : "", service ? service : "", gai_strerror(ret));
		return -FI_ENODATA;
	}
	ret = -FI_ENODATA;
	for (result = results; result && ret; result = result->ai_next)
		ret = bolt_address_from_sockaddr(result->ai_addr, 0, address) ? -FI_ENODATA : 0;
	freeaddrinfo(results);
	return ret;
}

/* Loopback reaches no other host: 127/8 and ::1. */
static bool bolt_getinfo_is_loopback(const struct sockaddr *address)
{
	if (address->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *) address)->sin_addr.s_addr) >> 24 == 127;
	return address->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) address)->sin6_addr);
}

/*
 * An address of an interface that is up and reaches other hosts, IPv4 first;
 * not IPv6 link-local, which reaches one link only, of the several a host
 * may have (name one with FI_BOLT_SIDE_CHANNEL_ADDRESS).
 */
static int bolt_getinfo_interface_address(struct bolt_address *address)
{
	static const int families[] = { AF_INET, AF_INET6 };
	struct ifaddrs *interfaces;
	int ret = -FI_ENODATA;

	if (getifaddrs(&interfaces))
		return ret;
	for (size_t i = 0; ret && i < BOLT_ARRAY_LENGTH(families); i++) {
		for (const struct ifaddrs *entry = interfaces; ret && entry; entry = entry->ifa_next) {
			const struct sockaddr *found = entry->ifa_addr;

			if (!found || found->sa_family != families[i] || !(entry->ifa_flags & IFF_UP) ||
			    bolt_getinfo_is_loopback(found) ||
			    (found->sa_family == AF_INET6 &&
			     IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *) found)->sin6_addr)))
				continue;
			ret = bolt_address_from_sockaddr(found, 0, address) ? -FI_ENODATA : 0;
		}
	}
	freeifaddrs(interfaces);
	return ret;
}

int bolt_getinfo_default_source(const struct bolt_params *params, bool software,
				struct bolt_address *address)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	const char *host = params->side_channel_address;
	struct addrinfo *results, *result;
	bool named = host[0] != '\0', host_name = !named && !software;
	char name[256];
	int ret;

	/* The software device's peers are processes of this host. */
	if (!named && software)
		host = "127.0.0.1";
	if (host_name) {
		if (gethostname(name, sizeof(name)))
			return -FI_EINVAL;
		name[sizeof(name) - 1] = '\0';
		host = name;
	}
	ret = getaddrinfo(host, NULL, &hints, &results);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "side channel address %s: %s\n", host, gai_strerror(ret));
		return -FI_EINVAL;
	}
	/*
	 * The host's name often resolves to loopback only (Debian maps it to
	 * 127.0.1.1), which peers on other hosts cannot reach: an interface's
	 * address then, if there is one.
	 */
	for (result = results; result && bolt_getinfo_is_loopback(result->ai_addr); result = result->ai_next)
		;
	if (!result && host_name && !bolt_getinfo_interface_address(address)) {
		freeaddrinfo(results);
		return 0;
	}
	ret = bolt_address_from_sockaddr(result ? result->ai_addr : results->ai_addr, 0, address);
	freeaddrinfo(results);
	return ret;
}

static int bolt_getinfo_copy_address(const void *address, void **copy, size_t *length)
{
	if (!address)
		return 0;
	*copy = malloc(sizeof(struct bolt_address));
	if (!*copy)
		return -FI_ENOMEM;
	memcpy(*copy, address, sizeof(struct bolt_address));
	*length = sizeof(struct bolt_address);
	return 0;
}

/*
 * fi_getinfo(3): node and service give src_addr with FI_SOURCE, dest_addr
 * otherwise; the hints' src_addr counts only without FI_SOURCE, their
 * dest_addr only when node and service do not give one; without any source,
 * the default one (NULL if it did not resolve), as fabtests expects a source
 * in every answer. resolved is NULL without node and service; the hints'
 * addresses were checked already.
 */
static int bolt_getinfo_set_addresses(struct fi_info *info, const struct bolt_address *resolved,
				      uint64_t flags, const struct fi_info *hints,
				      const struct bolt_address *default_source)
{
	const void *named_source = (flags & FI_SOURCE) ? resolved : hints ? hints->src_addr : NULL;
	const void *source = named_source ? named_source : default_source;
	const void *destination = (resolved && !(flags & FI_SOURCE)) ? resolved :
				  hints ? hints->dest_addr : NULL;
	int ret;

	ret = bolt_getinfo_copy_address(source, &info->src_addr, &info->src_addrlen);
	if (!ret)
		ret = bolt_getinfo_copy_address(destination, &info->dest_addr, &info->dest_addrlen);
	return ret;
}

/* bolt's attributes for one port: its name and what the device's limits leave. */
static struct fi_info *bolt_getinfo_port_info(uint32_t version,
					      const struct bolt_device_report *device,
					      const struct bolt_port_report *port)
{
	struct bolt_device_budget budget;
	char name[BOLT_DEVICE_DOMAIN_NAME_SIZE];
	struct fi_info *info;

	info = bolt_attr_info_dup(BOLT_CAPS_IMPLEMENTED);
	if (!info)
		return NULL;
	bolt_device_domain_name(device, port, name, sizeof(name));
	info->domain_attr->name = strdup(name);
	if (!info->domain_attr->name) {
		fi_freeinfo(info);
		return NULL;
	}
	bolt_device_budget(device, &budget);
	info->domain_attr->mr_cnt = (size_t) budget.user_mr_budget;
	/* Every endpoint, with its one transmit and one receive context, needs a queue pair. */
	if (budget.qp_budget >= 0 && info->domain_attr->ep_cnt > (size_t) budget.qp_budget) {
		info->domain_attr->ep_cnt = (size_t) budget.qp_budget;
		info->domain_attr->tx_ctx_cnt = info->domain_attr->ep_cnt;
		info->domain_attr->rx_ctx_cnt = info->domain_attr->ep_cnt;
	}
	info->fabric_attr->api_version = version;
	return info;
}

int bolt_getinfo_check_offered(const struct bolt_device_report *device,
			       const struct bolt_port_report *port, const struct fi_info *info)
{
	uint32_t version = info->fabric_attr && info->fabric_attr->api_version ?
			   info->fabric_attr->api_version :
			   FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	struct fi_info *offered = bolt_getinfo_port_info(version, device, port);
	int ret;

	if (!offered)
		return -FI_ENOMEM;
	ret = bolt_hints_check(offered, info, version);
	fi_freeinfo(offered);
	return ret;
}

/* Whether hints ask for tags that use bit 63. */
static bool bolt_getinfo_needs_tag_bit_63(const struct fi_info *hints)
{
	return hints && hints->ep_attr && (hints->ep_attr->mem_tag_format & FI_BOLT_COLLECTIVE_TAG_BIT);
}

static void bolt_getinfo_drop_collectives(struct fi_info *info)
{
	info->caps &= ~(uint64_t) FI_COLLECTIVE;
	if (info->tx_attr)
		info->tx_attr->caps &= ~(uint64_t) FI_COLLECTIVE;
	if (info->rx_attr)
		info->rx_attr->caps &= ~(uint64_t) FI_COLLECTIVE;
}

/* Appends to *list the fi_info of each usable port that matches the hints. */
static int bolt_getinfo_ports(uint32_t version, const struct bolt_device_report *device,
			      const struct fi_info *hints, const struct bolt_address *resolved,
			      const struct bolt_address *default_source, uint64_t flags,
			      struct fi_info **list, struct fi_info **tail)
{
	for (int i = 0; i < device->port_count; i++) {
		const struct bolt_port_report *port = &device->ports[i];
		struct fi_info *info;

		if (!port->usable) {
			FI_INFO(&bolt_prov, FI_LOG_CORE, "%s port %u skipped: %s\n",
				device->name, port->port_num, port->unusable_reason);
			continue;
		}
		info = bolt_getinfo_port_info(version, device, port);
		if (!info)
			return -FI_ENOMEM;
		if (bolt_hints_check(info, hints, version)) {
			fi_freeinfo(info);
			continue;
		}
		bolt_hints_narrow(info, hints, version);
		/*
		 * With FI_COLLECTIVE, tag bit 63 carries bolt's collective messages
		 * (fi_ext_bolt.h). Hints that need all 64 tag bits get no collectives,
		 * or, if they ask for them too, no info: an info must meet its hints.
		 */
		if ((info->caps & FI_COLLECTIVE) && bolt_getinfo_needs_tag_bit_63(hints)) {
			if (hints->caps & FI_COLLECTIVE) {
				fi_freeinfo(info);
				continue;
			}
			bolt_getinfo_drop_collectives(info);
		}
		if (info->caps & FI_COLLECTIVE)
			info->ep_attr->mem_tag_format = FI_BOLT_COLLECTIVE_TAG_BIT - 1;
		if (bolt_getinfo_set_addresses(info, resolved, flags, hints, default_source)) {
			fi_freeinfo(info);
			return -FI_ENOMEM;
		}
		if (*tail)
			(*tail)->next = info;
		else
			*list = info;
		*tail = info;
	}
	return 0;
}

static int bolt_getinfo_devices(uint32_t version, const struct bolt_device_report *devices,
				int device_count, const struct fi_info *hints,
				const struct bolt_address *resolved,
				const struct bolt_address *default_source, uint64_t flags,
				struct fi_info **info)
{
	struct fi_info *tail = NULL;
	int ret;

	for (int i = 0; i < device_count; i++) {
		ret = bolt_getinfo_ports(version, &devices[i], hints, resolved, default_source, flags,
					 info, &tail);
		if (ret) {
			fi_freeinfo(*info);
			*info = NULL;
			return ret;
		}
	}
	return *info ? 0 : -FI_ENODATA;
}

/*
 * Whether the caller asked for bolt itself (fi_info -p bolt), not libfabric
 * asking every provider in turn, nor a utility provider (ofi_rxm, ofi_rxd)
 * asking for the message or datagram endpoints bolt never offers.
 */
static bool bolt_getinfo_asks_for_bolt(const struct fi_info *hints)
{
	return bolt_hints_name_bolt(hints) &&
	       (!hints->ep_attr || hints->ep_attr->type == FI_EP_UNSPEC ||
		hints->ep_attr->type == FI_EP_RDM);
}

/*
 * Says why bolt offers nothing where the machine is the reason (no verbs
 * library, no device, no usable port), not the hints: as a warning when the
 * caller asked for bolt, so that `fi_info -p bolt` explains its -FI_ENODATA,
 * else only as information.
 */
static void bolt_getinfo_explain_none(const struct bolt_verbs *verbs, int verbs_status,
				      const struct bolt_device_report *devices, int count,
				      const struct fi_info *hints)
{
	enum fi_log_level level = bolt_getinfo_asks_for_bolt(hints) ? FI_LOG_WARN : FI_LOG_INFO;
	char advice[BOLT_DEVICE_ADVICE_SIZE];
	char *line, *next;

	if (!bolt_device_advice(verbs, verbs_status, devices, count, advice, sizeof(advice)))
		return;
	for (line = advice; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		FI_LOG(&bolt_prov, level, FI_LOG_CORE, "%s\n", line);
	}
}

int bolt_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	struct bolt_device_report *devices = NULL;
	struct bolt_address resolved, default_source;
	struct bolt_params params;
	struct bolt_verbs verbs;
	int device_count = 0;
	int ret;

	*info = NULL;
	ret = bolt_getinfo_check_implemented(hints);
	if (ret)
		return ret;
	if (node || service) {
		ret = bolt_getinfo_resolve(node, service, flags, &resolved);
		if (ret)
			return ret;
	}
	ret = bolt_params_read(&params);
	if (ret)
		return ret;
	ret = bolt_verbs_open(&params, &verbs);
	if (ret == -FI_ENODATA)
		bolt_getinfo_explain_none(&verbs, ret, NULL, 0, hints);
	if (ret)
		return ret;     /* -FI_ENODATA: no verbs at all, so no devices */
	ret = bolt_device_reports_create(&verbs, params.gid_index, &devices, &device_count);
	if (!ret) {
		bool has_default = !bolt_getinfo_default_source(&params, verbs.software, &default_source);

		bolt_getinfo_explain_none(&verbs, 0, devices, device_count, hints);
		ret = bolt_getinfo_devices(version, devices, device_count, hints,
					   node || service ? &resolved : NULL,
					   has_default ? &default_source : NULL, flags, info);
		bolt_device_reports_destroy(devices);
	}
	bolt_verbs_close(&verbs);
	return ret;
}

void bolt_cleanup(void)
{
	/* fi_getinfo closes all it opens, and bolt has no other global state yet. */
}
