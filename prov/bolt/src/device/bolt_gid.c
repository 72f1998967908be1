/*
 * bolt_gid.c: classifies GIDs and chooses the one a port's queue pairs use.
 * See seed 000: choosing only IPv4-mapped GIDs left Thunderbolt ports with an
 * uninitialised GID; here every path either chooses an index or fails.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "bolt.h"
#include "device/bolt_gid.h"

static bool bolt_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid->raw, zero.raw, sizeof(zero.raw));
}

enum bolt_gid_kind bolt_gid_kind(const union ibv_gid *gid)
{
	static const uint8_t ipv4_mapped_prefix[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (bolt_gid_is_zero(gid))
		return BOLT_GID_KIND_ZERO;
	if (!memcmp(gid->raw, ipv4_mapped_prefix, sizeof(ipv4_mapped_prefix)))
		return BOLT_GID_KIND_IPV4_MAPPED;
	/* fe80::/10 */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		return BOLT_GID_KIND_LINK_LOCAL;
	return BOLT_GID_KIND_OTHER;
}

const char *bolt_gid_kind_name(enum bolt_gid_kind kind)
{
	switch (kind) {
	case BOLT_GID_KIND_ZERO: return "zero";
	case BOLT_GID_KIND_LINK_LOCAL: return "link-local";
	case BOLT_GID_KIND_IPV4_MAPPED: return "IPv4-mapped";
	case BOLT_GID_KIND_OTHER: return "other";
	}
	return "unknown";
}

const char *bolt_gid_type_name(int type)
{
	switch (type) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	case BOLT_GID_TYPE_UNKNOWN: return "unknown";
	}
	return "unknown";
}

const char *bolt_gid_reason_text(enum bolt_gid_reason reason)
{
	switch (reason) {
	case BOLT_GID_REASON_OVERRIDE:
		return "FI_BOLT_GID_INDEX asks for it";
	case BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2:
		return "IPv4-mapped RoCE v2 GID, routable between hosts";
	case BOLT_GID_REASON_IPV4_MAPPED:
		return "IPv4-mapped GID, the RoCE v2 preference";
	case BOLT_GID_REASON_LINK_LOCAL:
		return "no IPv4-mapped GID; link-local GID (Thunderbolt), index 1 preferred, then 0";
	case BOLT_GID_REASON_OTHER:
		return "no IPv4-mapped or link-local GID; first other non-zero GID";
	}
	return "unknown";
}

void bolt_gid_format(const union ibv_gid *gid, char *text, size_t size)
{
	if (!inet_ntop(AF_INET6, gid->raw, text, (socklen_t) size))
		snprintf(text, size, "?");
}

/* The first index in search order whose GID is of kind (and type, if not unknown). */
static int bolt_gid_find(const struct bolt_gid_entry *table, int length,
			 const int *order, int order_length,
			 enum bolt_gid_kind kind, int type)
{
	for (int i = 0; i < order_length; i++) {
		int index = order[i];

		if (index < 0 || index >= length)
			continue;
		if (bolt_gid_kind(&table[index].gid) != kind)
			continue;
		if (type != BOLT_GID_TYPE_UNKNOWN && table[index].type != type)
			continue;
		return index;
	}
	return -1;
}

static int bolt_gid_select_override(const struct bolt_gid_entry *table, int length,
				    int override_index, struct bolt_gid_choice *choice)
{
	if (override_index >= length ||
	    bolt_gid_kind(&table[override_index].gid) == BOLT_GID_KIND_ZERO)
		return -FI_EINVAL;
	choice->index = override_index;
	choice->reason = BOLT_GID_REASON_OVERRIDE;
	return 0;
}

int bolt_gid_select(const struct bolt_gid_entry *table, int length, int override_index,
		    struct bolt_gid_choice *choice)
{
	/* Search order: index 1 first (the pre-regression MLX choice, the primary
	 * link-local GID on Apple's driver), then 0, then the rest. */
	int order[length > 0 ? length : 1];
	int order_length = 0;
	const struct {
		enum bolt_gid_kind kind;
		int type;
		enum bolt_gid_reason reason;
	} preferences[] = {
		{ BOLT_GID_KIND_IPV4_MAPPED, IBV_GID_TYPE_ROCE_V2, BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2 },
		{ BOLT_GID_KIND_IPV4_MAPPED, BOLT_GID_TYPE_UNKNOWN, BOLT_GID_REASON_IPV4_MAPPED },
		{ BOLT_GID_KIND_LINK_LOCAL, BOLT_GID_TYPE_UNKNOWN, BOLT_GID_REASON_LINK_LOCAL },
		{ BOLT_GID_KIND_OTHER, BOLT_GID_TYPE_UNKNOWN, BOLT_GID_REASON_OTHER },
	};

	choice->index = -1;
	if (override_index >= 0)
		return bolt_gid_select_override(table, length, override_index, choice);

	if (length > 1)
		order[order_length++] = 1;
	if (length > 0)
		order[order_length++] = 0;
	for (int index = 2; index < length; index++)
		order[order_length++] = index;

	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(preferences); i++) {
		int index = bolt_gid_find(table, length, order, order_length,
					  preferences[i].kind, preferences[i].type);

		if (index >= 0) {
			choice->index = index;
			choice->reason = preferences[i].reason;
			return 0;
		}
	}
	return -FI_ENODATA;
}
