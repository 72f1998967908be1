/*
 * softrdma_topology.c: the emulated hosts and cables. "single" is one host
 * with one device; "mesh:H" or "mesh:HxC" is H hosts, every pair joined by C
 * cables, each cable one device at each end. This file numbers the devices,
 * derives their GIDs, and says which device can reach which.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

static int softrdma_topology_parse_mesh(const char *text, int *hosts, int *cables)
{
	char *end;
	long host_count, cable_count = 1;

	host_count = strtol(text, &end, 10);
	if (end == text)
		return -EINVAL;
	if (*end == 'x') {
		const char *cables_text = end + 1;

		cable_count = strtol(cables_text, &end, 10);
		if (end == cables_text)
			return -EINVAL;
	}
	if (*end || host_count < 2 || cable_count < 1 ||
	    host_count * (host_count - 1) * cable_count > SOFTRDMA_MAX_DEVICES)
		return -EINVAL;
	*hosts = (int) host_count;
	*cables = (int) cable_count;
	return 0;
}

int softrdma_topology_parse(const char *text, int *hosts, int *cables)
{
	if (!text[0] || !strcmp(text, "single")) {
		*hosts = 1;
		*cables = 0;
		return 0;
	}
	if (!strncmp(text, "mesh:", 5))
		return softrdma_topology_parse_mesh(text + 5, hosts, cables);
	return -EINVAL;
}

static int softrdma_devices_per_host(const struct softrdma_segment *segment)
{
	return segment->hosts == 1 ? 1 : (segment->hosts - 1) * segment->cables;
}

/* Where host `other` sits among the peers of `host`: the peers in order, `host` left out. */
static int softrdma_peer_rank(int host, int other)
{
	return other < host ? other : other - 1;
}

int softrdma_device_id(const struct softrdma_segment *segment, int host, int index)
{
	int per_host = softrdma_devices_per_host(segment);

	if (host < 0 || host >= segment->hosts || index < 0 || index >= per_host)
		return -1;
	return host * per_host + index;
}

void softrdma_topology_build(struct softrdma_segment *segment)
{
	int per_host = softrdma_devices_per_host(segment);

	memset(segment->devices, 0, sizeof(segment->devices));
	segment->device_count = segment->hosts * per_host;
	for (int id = 0; id < segment->device_count; id++) {
		struct softrdma_shared_device *device = &segment->devices[id];

		device->host = id / per_host;
		device->index = id % per_host;
		device->peer = -1;
		if (segment->hosts > 1) {
			int rank = device->index / segment->cables;
			int cable = device->index % segment->cables;
			int peer_host = rank < device->host ? rank : rank + 1;
			int peer_index = softrdma_peer_rank(peer_host, device->host) *
					 segment->cables + cable;

			device->peer = softrdma_device_id(segment, peer_host, peer_index);
		}
	}
}

/*
 * Link-local GIDs in the shape real devices show (an EUI-64 one and a
 * random-looking one), and for rocev2 the IPv4-mapped 198.18.<host>.<index+1>
 * (the benchmarking range of RFC 2544). Host and index make each unique.
 */
static void softrdma_gid_link_local(const struct softrdma_shared_device *device, bool eui64,
				    union ibv_gid *gid)
{
	static const uint8_t eui64_prefix[] = { 0x02, 0xb0, 0x17, 0xff, 0xfe };
	static const uint8_t random_prefix[] = { 0x10, 0x42, 0xa3, 0xd5, 0x41 };

	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	memcpy(&gid->raw[8], eui64 ? eui64_prefix : random_prefix, 5);
	gid->raw[13] = (uint8_t) device->host;
	gid->raw[14] = (uint8_t) device->index;
	gid->raw[15] = eui64 ? 0x01 : 0xe9;
}

static void softrdma_gid_ipv4_mapped(const struct softrdma_shared_device *device,
				     union ibv_gid *gid)
{
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = 198;
	gid->raw[13] = 18;
	gid->raw[14] = (uint8_t) device->host;
	gid->raw[15] = (uint8_t) (device->index + 1);
}

void softrdma_device_gid(const struct softrdma_segment *segment, int device_id, int gid_index,
			 union ibv_gid *gid)
{
	const struct softrdma_shared_device *device = &segment->devices[device_id];

	memset(gid, 0, sizeof(*gid));
	if (gid_index < 0 || gid_index >= segment->limits.gid_count)
		return;
	if (segment->config.profile == SOFTRDMA_PROFILE_THUNDERBOLT)
		softrdma_gid_link_local(device, gid_index == 0, gid);
	else if (gid_index == 0)  /* rxe: the link-local address, then the IPv4 one */
		softrdma_gid_link_local(device, true, gid);
	else
		softrdma_gid_ipv4_mapped(device, gid);
}

/*
 * Every GID is RoCE v2 (rxe lists each address once, as v2). An empty entry
 * has no type: the kernel answers ENODATA; past the table, EINVAL.
 */
int softrdma_device_gid_type(const struct softrdma_segment *segment, int gid_index,
			     enum ibv_gid_type *type)
{
	if (gid_index < 0 || gid_index >= segment->limits.gid_table_length)
		return EINVAL;
	if (gid_index >= segment->limits.gid_count)
		return ENODATA;
	*type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

int softrdma_device_find_gid(const struct softrdma_segment *segment, const union ibv_gid *gid)
{
	for (int id = 0; id < segment->device_count; id++) {
		for (int index = 0; index < segment->limits.gid_count; index++) {
			union ibv_gid candidate;

			softrdma_device_gid(segment, id, index, &candidate);
			if (!memcmp(candidate.raw, gid->raw, sizeof(gid->raw)))
				return id;
		}
	}
	return -1;
}

bool softrdma_port_active(const struct softrdma_segment *segment, int device_id)
{
	const struct softrdma_shared_device *device = &segment->devices[device_id];

	return !device->port_down && !device->link_cut;
}

/* A device reaches itself (loopback) and the far end of its cable, with both ports up. */
bool softrdma_device_reachable(const struct softrdma_segment *segment, int from, int to)
{
	if (from < 0 || to < 0 || from >= segment->device_count || to >= segment->device_count)
		return false;
	if (from != to && segment->devices[from].peer != to)
		return false;
	return softrdma_port_active(segment, from) && softrdma_port_active(segment, to);
}
