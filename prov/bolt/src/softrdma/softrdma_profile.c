/*
 * softrdma_profile.c: the profiles the software device reproduces (Apple's
 * Thunderbolt RDMA and a Linux RoCE v2 NIC such as rxe) and the limits a
 * config ends up with.
 */
#include <string.h>

#include "softrdma/softrdma_internal.h"

/* Apple's driver reports its transport as "Thunderbolt (100)". */
#define SOFTRDMA_TRANSPORT_THUNDERBOLT 100

struct softrdma_profile_description {
	const char *name;
	const char *device_prefix;
	int transport;
	struct softrdma_profile_limits limits;
};

static const struct softrdma_profile_description softrdma_profiles[] = {
	[SOFTRDMA_PROFILE_THUNDERBOLT] = {
		.name = "thunderbolt",
		.device_prefix = "rdma_en",
		.transport = SOFTRDMA_TRANSPORT_THUNDERBOLT,
		.limits = {
			.max_mr = 100,
			.max_qp = 10,
			.reported_max_wr = 8192,
			.accepted_max_wr = 63,
			.path_mtu_bytes = 1024,
			.max_mtu_bytes = 1024,
			.rc_supported = false,
			.receiver_not_ready_retry = false,
			.frames_must_match = true,
			.receive_errors_as_malformed_wqe = false,
			.max_sge = SOFTRDMA_MAX_SGE,
			.max_inline_data = SOFTRDMA_MAX_INLINE,
			.max_cqe = SOFTRDMA_CQ_RING,
			.gid_table_length = 4,
			.gid_count = 2,
		},
	},
	[SOFTRDMA_PROFILE_ROCEV2] = {
		.name = "rocev2",
		.device_prefix = "softroce",
		.transport = IBV_TRANSPORT_IB,
		.limits = {
			.max_mr = 65536,
			.max_qp = 1024,
			.reported_max_wr = SOFTRDMA_RECEIVE_RING,
			.accepted_max_wr = SOFTRDMA_RECEIVE_RING,
			/* rxe on a 1500-byte Ethernet link: 1024 active, up to 4096 taken. */
			.path_mtu_bytes = 1024,
			.max_mtu_bytes = 4096,
			.rc_supported = true,
			.receiver_not_ready_retry = true,
			.frames_must_match = false,
			.receive_errors_as_malformed_wqe = true,
			.max_sge = SOFTRDMA_MAX_SGE,
			.max_inline_data = SOFTRDMA_MAX_INLINE,
			.max_cqe = SOFTRDMA_CQ_RING,
			/* rxe: RXE_PORT_GID_TBL_LEN entries, one RoCE v2 GID per address */
			.gid_table_length = 1024,
			.gid_count = 2,
		},
	},
};

static bool softrdma_profile_valid(enum softrdma_profile profile)
{
	return (unsigned int) profile < BOLT_ARRAY_LENGTH(softrdma_profiles);
}

int softrdma_profile_parse(const char *name, enum softrdma_profile *profile)
{
	if (!name)
		return -EINVAL;
	for (size_t index = 0; index < BOLT_ARRAY_LENGTH(softrdma_profiles); index++) {
		if (!strcmp(name, softrdma_profiles[index].name)) {
			*profile = (enum softrdma_profile) index;
			return 0;
		}
	}
	return -EINVAL;
}

const char *softrdma_profile_name(enum softrdma_profile profile)
{
	return softrdma_profile_valid(profile) ? softrdma_profiles[profile].name : "unknown";
}

void softrdma_profile_limits(enum softrdma_profile profile, struct softrdma_profile_limits *limits)
{
	if (!softrdma_profile_valid(profile))
		profile = SOFTRDMA_PROFILE_ROCEV2;
	*limits = softrdma_profiles[profile].limits;
}

const char *softrdma_profile_device_prefix(enum softrdma_profile profile)
{
	return softrdma_profile_valid(profile) ? softrdma_profiles[profile].device_prefix : "soft";
}

int softrdma_profile_transport(enum softrdma_profile profile)
{
	return softrdma_profile_valid(profile) ? softrdma_profiles[profile].transport :
						 IBV_TRANSPORT_UNKNOWN;
}

/* 256 << 0 is IBV_MTU_256, ..., 4096 is IBV_MTU_4096. */
enum ibv_mtu softrdma_mtu_enum(int bytes)
{
	enum ibv_mtu mtu = IBV_MTU_256;

	while (mtu < IBV_MTU_4096 && (128 << mtu) < bytes)
		mtu++;
	return mtu;
}

static int softrdma_limit_override(int profile_value, int config_value, int ceiling)
{
	int value = config_value > 0 ? config_value : profile_value;

	return value < ceiling ? value : ceiling;
}

/*
 * The config's max_wr changes what the device accepts; a profile that reports
 * what it accepts (rocev2) reports the new value too, one that overstates its
 * capacity (thunderbolt) keeps overstating it.
 */
void softrdma_limits_effective(const struct softrdma_config *config,
			       struct softrdma_profile_limits *limits)
{
	bool reports_what_it_accepts;

	softrdma_profile_limits(config->profile, limits);
	reports_what_it_accepts = limits->reported_max_wr == limits->accepted_max_wr;
	limits->max_mr = softrdma_limit_override(limits->max_mr, config->max_mr,
						 SOFTRDMA_MR_SLOTS);
	limits->max_qp = softrdma_limit_override(limits->max_qp, config->max_qp,
						 SOFTRDMA_QP_SLOTS);
	limits->accepted_max_wr = softrdma_limit_override(limits->accepted_max_wr,
							  config->max_wr, SOFTRDMA_RECEIVE_RING);
	if (reports_what_it_accepts)
		limits->reported_max_wr = limits->accepted_max_wr;
}
