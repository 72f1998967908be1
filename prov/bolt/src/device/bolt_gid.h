/*
 * bolt_gid.h: GID classification and selection. Thunderbolt exposes only
 * link-local fe80:: GIDs, RoCE v2 IPv4-mapped ones; the choice must never be
 * left uninitialised, and the chosen index is the sgid_index used later.
 */
#ifndef BOLT_GID_H
#define BOLT_GID_H

#include <stddef.h>
#include <infiniband/verbs.h>
#include <rdma/fi_errno.h>

enum bolt_gid_kind {
	BOLT_GID_KIND_ZERO,
	BOLT_GID_KIND_LINK_LOCAL,   /* fe80::/10 */
	BOLT_GID_KIND_IPV4_MAPPED,  /* ::ffff:a.b.c.d */
	BOLT_GID_KIND_OTHER,
};

/* A GID table entry; type is enum ibv_gid_type, or BOLT_GID_TYPE_UNKNOWN. */
#define BOLT_GID_TYPE_UNKNOWN (-1)
struct bolt_gid_entry {
	union ibv_gid gid;
	int type;
};

enum bolt_gid_reason {
	BOLT_GID_REASON_OVERRIDE,           /* FI_BOLT_GID_INDEX */
	BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2,
	BOLT_GID_REASON_IPV4_MAPPED,
	BOLT_GID_REASON_LINK_LOCAL,
	BOLT_GID_REASON_OTHER,
};

struct bolt_gid_choice {
	int index;
	enum bolt_gid_reason reason;
};

enum bolt_gid_kind bolt_gid_kind(const union ibv_gid *gid);
const char *bolt_gid_kind_name(enum bolt_gid_kind kind);
const char *bolt_gid_type_name(int type);
const char *bolt_gid_reason_text(enum bolt_gid_reason reason);
/* Writes the GID as an IPv6 address; size of at least BOLT_GID_TEXT_SIZE. */
#define BOLT_GID_TEXT_SIZE 46
void bolt_gid_format(const union ibv_gid *gid, char *text, size_t size);

/*
 * Chooses the GID of a port: an IPv4-mapped GID (RoCE v2 type first), else a
 * non-zero link-local one (index 1, then 0, then the rest), else any other
 * non-zero one. override_index >= 0 forces that index if its GID is non-zero.
 * 0, or -FI_ENODATA (nothing usable) / -FI_EINVAL (bad override).
 */
int bolt_gid_select(const struct bolt_gid_entry *table, int length, int override_index,
		    struct bolt_gid_choice *choice);

#endif /* BOLT_GID_H */
