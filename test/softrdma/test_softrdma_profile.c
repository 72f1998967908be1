/*
 * test_softrdma_profile.c: profiles (names, limits), config overrides, and
 * the topology: parsing, numbering, cables joining every pair of hosts.
 * Internal functions are reached through softrdma_internal.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"
#include "softrdma_test.h"

Test(profile, names_parse_both_ways)
{
	enum softrdma_profile profile;

	cr_assert_eq(softrdma_profile_parse("thunderbolt", &profile), 0);
	cr_assert_eq(profile, SOFTRDMA_PROFILE_THUNDERBOLT);
	cr_assert_eq(softrdma_profile_parse("rocev2", &profile), 0);
	cr_assert_eq(profile, SOFTRDMA_PROFILE_ROCEV2);
	cr_assert_eq(softrdma_profile_parse("infiniband", &profile), -EINVAL);
	cr_assert_eq(softrdma_profile_parse(NULL, &profile), -EINVAL);
	cr_assert_str_eq(softrdma_profile_name(SOFTRDMA_PROFILE_THUNDERBOLT), "thunderbolt");
	cr_assert_str_eq(softrdma_profile_name((enum softrdma_profile) 7), "unknown");
}

Test(profile, thunderbolt_limits)
{
	struct softrdma_profile_limits limits;

	softrdma_profile_limits(SOFTRDMA_PROFILE_THUNDERBOLT, &limits);
	cr_assert_eq(limits.max_mr, 100);
	cr_assert_eq(limits.max_qp, 10);
	cr_assert_eq(limits.accepted_max_wr, 63);
	cr_assert_gt(limits.reported_max_wr, limits.accepted_max_wr);
	cr_assert_eq(limits.path_mtu_bytes, 1024);
	cr_assert_eq(limits.max_mtu_bytes, 1024);
	cr_assert_not(limits.rc_supported);
	cr_assert_not(limits.receiver_not_ready_retry);
	cr_assert(limits.frames_must_match);
	cr_assert_eq(limits.gid_count, 2);
}

Test(profile, rocev2_limits)
{
	struct softrdma_profile_limits limits;

	softrdma_profile_limits(SOFTRDMA_PROFILE_ROCEV2, &limits);
	cr_assert_geq(limits.max_mr, 65536);
	cr_assert_geq(limits.max_qp, 1024);
	cr_assert_eq(limits.accepted_max_wr, limits.reported_max_wr);
	cr_assert_eq(limits.path_mtu_bytes, 1024);
	cr_assert_eq(limits.max_mtu_bytes, 4096);
	cr_assert(limits.rc_supported);
	cr_assert(limits.receiver_not_ready_retry);
	cr_assert_eq(limits.gid_count, 2);
}

Test(profile, overrides)
{
	struct softrdma_config config = { .profile = SOFTRDMA_PROFILE_THUNDERBOLT, .max_mr = 7,
					  .max_wr = 32 };
	struct softrdma_profile_limits limits;

	softrdma_limits_effective(&config, &limits);
	cr_assert_eq(limits.max_mr, 7);
	cr_assert_eq(limits.max_qp, 10);
	cr_assert_eq(limits.accepted_max_wr, 32);
	cr_assert_eq(limits.reported_max_wr, 8192, "thunderbolt keeps overstating");
	config.profile = SOFTRDMA_PROFILE_ROCEV2;
	config.max_wr = 100000;
	softrdma_limits_effective(&config, &limits);
	cr_assert_eq(limits.accepted_max_wr, SOFTRDMA_RECEIVE_RING);
	cr_assert_eq(limits.reported_max_wr, limits.accepted_max_wr);
}

Test(profile, mtu_enum)
{
	cr_assert_eq(softrdma_mtu_enum(1024), IBV_MTU_1024);
	cr_assert_eq(softrdma_mtu_enum(4096), IBV_MTU_4096);
	cr_assert_eq(softrdma_mtu_enum(256), IBV_MTU_256);
}

Test(topology, parse)
{
	int hosts, cables;

	cr_assert_eq(softrdma_topology_parse("single", &hosts, &cables), 0);
	cr_assert_eq(hosts, 1);
	cr_assert_eq(softrdma_topology_parse("", &hosts, &cables), 0);
	cr_assert_eq(softrdma_topology_parse("mesh:4", &hosts, &cables), 0);
	cr_assert_eq(hosts, 4);
	cr_assert_eq(cables, 1);
	cr_assert_eq(softrdma_topology_parse("mesh:3x2", &hosts, &cables), 0);
	cr_assert_eq(hosts, 3);
	cr_assert_eq(cables, 2);
	cr_assert_eq(softrdma_topology_parse("mesh:8", &hosts, &cables), 0);
	cr_assert_eq(softrdma_topology_parse("mesh:1", &hosts, &cables), -EINVAL);
	cr_assert_eq(softrdma_topology_parse("mesh:9", &hosts, &cables), -EINVAL);
	cr_assert_eq(softrdma_topology_parse("mesh:4x", &hosts, &cables), -EINVAL);
	cr_assert_eq(softrdma_topology_parse("mesh:4x0", &hosts, &cables), -EINVAL);
	cr_assert_eq(softrdma_topology_parse("mesh:", &hosts, &cables), -EINVAL);
	cr_assert_eq(softrdma_topology_parse("ring:4", &hosts, &cables), -EINVAL);
}

static struct softrdma_segment *segment_for(const char *topology, enum softrdma_profile profile)
{
	struct softrdma_segment *segment = calloc(1, sizeof(*segment));

	segment->config.profile = profile;
	softrdma_profile_limits(profile, &segment->limits);
	cr_assert_eq(softrdma_topology_parse(topology, &segment->hosts, &segment->cables), 0);
	softrdma_topology_build(segment);
	return segment;
}

static void check_mesh(const char *topology, int hosts, int cables)
{
	struct softrdma_segment *segment = segment_for(topology, SOFTRDMA_PROFILE_THUNDERBOLT);
	int links[8][8] = { { 0 } };

	cr_assert_eq(segment->device_count, hosts * (hosts - 1) * cables);
	for (int id = 0; id < segment->device_count; id++) {
		const struct softrdma_shared_device *device = &segment->devices[id];
		int peer = device->peer;

		cr_assert_geq(peer, 0);
		cr_assert_eq(segment->devices[peer].peer, id, "cables join two ends");
		cr_assert_neq(segment->devices[peer].host, device->host);
		cr_assert_eq(softrdma_device_id(segment, device->host, device->index), id);
		cr_assert(softrdma_device_reachable(segment, id, peer));
		cr_assert(softrdma_device_reachable(segment, id, id));
		links[device->host][segment->devices[peer].host]++;
	}
	for (int host = 0; host < hosts; host++) {
		for (int other = 0; other < hosts; other++)
			cr_assert_eq(links[host][other], host == other ? 0 : cables);
	}
	free(segment);
}

Test(topology, every_pair_of_hosts_is_cabled)
{
	check_mesh("mesh:2", 2, 1);
	check_mesh("mesh:4", 4, 1);
	check_mesh("mesh:3x2", 3, 2);
	check_mesh("mesh:8", 8, 1);
}

Test(topology, gids_are_unique_and_found)
{
	struct softrdma_segment *segment = segment_for("mesh:4x2", SOFTRDMA_PROFILE_ROCEV2);

	for (int id = 0; id < segment->device_count; id++) {
		for (int index = 0; index < segment->limits.gid_count; index++) {
			union ibv_gid gid;

			softrdma_device_gid(segment, id, index, &gid);
			cr_assert_eq(softrdma_device_find_gid(segment, &gid), id);
		}
	}
	free(segment);
}

Test(topology, not_reachable_across_hosts_without_a_cable)
{
	struct softrdma_segment *segment = segment_for("mesh:3", SOFTRDMA_PROFILE_ROCEV2);
	int host0_to_1 = softrdma_device_id(segment, 0, 0);
	int host0_to_2 = softrdma_device_id(segment, 0, 1);
	int host1_to_0 = softrdma_device_id(segment, 1, 0);

	cr_assert(softrdma_device_reachable(segment, host0_to_1, host1_to_0));
	cr_assert_not(softrdma_device_reachable(segment, host0_to_2, host1_to_0));
	cr_assert_not(softrdma_device_reachable(segment, host0_to_1, host0_to_2));
	segment->devices[host1_to_0].port_down = 1;
	cr_assert_not(softrdma_device_reachable(segment, host0_to_1, host1_to_0));
	free(segment);
}
