/*
 * test_gid.c: GID classification and selection over GID tables as real
 * devices show them: Thunderbolt (only fe80:: at 0 and 1), Linux rxe (RoCE v1
 * and v2 entries, link-local and IPv4-mapped), zero and empty tables, and the
 * FI_BOLT_GID_INDEX override.
 */
#include <arpa/inet.h>
#include <string.h>
#include <criterion/criterion.h>

#include "device/bolt_gid.h"

#define V1 IBV_GID_TYPE_ROCE_V1
#define V2 IBV_GID_TYPE_ROCE_V2
#define UNKNOWN BOLT_GID_TYPE_UNKNOWN

struct gid_case {
	const char *name;
	const char *gids[8];    /* textual; NULL ends; "::" is a zero entry */
	int types[8];
	int override_index;
	int expected_status;
	int expected_index;
	enum bolt_gid_reason expected_reason;
};

static int table_from_case(const struct gid_case *c, struct bolt_gid_entry *table)
{
	int length = 0;

	for (; length < 8 && c->gids[length]; length++) {
		cr_assert_eq(inet_pton(AF_INET6, c->gids[length], table[length].gid.raw), 1,
			     "%s: bad GID text %s", c->name, c->gids[length]);
		table[length].type = c->types[length];
	}
	return length;
}

static const struct gid_case gid_cases[] = {
	{ "thunderbolt: link-local only, index 1 first",
	  { "fe80::3474:d9ff:fe9d:cc84", "fe80::1042:a3d5:410e:95e9" }, { UNKNOWN, UNKNOWN },
	  -1, 0, 1, BOLT_GID_REASON_LINK_LOCAL },
	{ "thunderbolt: only index 0 non-zero",
	  { "fe80::3474:d9ff:fe9d:cc84", "::" }, { UNKNOWN, UNKNOWN },
	  -1, 0, 0, BOLT_GID_REASON_LINK_LOCAL },
	{ "thunderbolt: link-local at 2 when 0 and 1 are zero",
	  { "::", "::", "fe80::1" }, { UNKNOWN, UNKNOWN, UNKNOWN },
	  -1, 0, 2, BOLT_GID_REASON_LINK_LOCAL },
	{ "rxe on Linux 6.1: fe80 v2 at 0, IPv4-mapped v2 at 1",
	  { "fe80::5054:ff:fe12:3456", "::ffff:10.0.2.15" }, { V2, V2 },
	  -1, 0, 1, BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2 },
	{ "older rxe: v1/v2 pairs, IPv4-mapped RoCE v2 at 3",
	  { "fe80::1", "fe80::1", "::ffff:192.168.1.2", "::ffff:192.168.1.2" }, { V1, V2, V1, V2 },
	  -1, 0, 3, BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2 },
	{ "IPv4-mapped v1 only",
	  { "fe80::1", "::ffff:192.168.1.2" }, { V1, V1 },
	  -1, 0, 1, BOLT_GID_REASON_IPV4_MAPPED },
	{ "IPv4-mapped of unknown type (no gid types in the library)",
	  { "::ffff:192.168.1.2", "fe80::1" }, { UNKNOWN, UNKNOWN },
	  -1, 0, 0, BOLT_GID_REASON_IPV4_MAPPED },
	{ "global IPv6 only",
	  { "::", "2001:db8::1" }, { UNKNOWN, UNKNOWN },
	  -1, 0, 1, BOLT_GID_REASON_OTHER },
	{ "link-local beats global",
	  { "2001:db8::1", "::", "fe80::7" }, { UNKNOWN, UNKNOWN, UNKNOWN },
	  -1, 0, 2, BOLT_GID_REASON_LINK_LOCAL },
	{ "all zero", { "::", "::", "::", "::" }, { V2, V2, V2, V2 },
	  -1, -FI_ENODATA, -1, 0 },
	{ "empty table", { NULL }, { 0 }, -1, -FI_ENODATA, -1, 0 },
	{ "override picks index 0 on thunderbolt",
	  { "fe80::1", "fe80::2" }, { UNKNOWN, UNKNOWN }, 0, 0, 0, BOLT_GID_REASON_OVERRIDE },
	{ "override beats the IPv4-mapped preference",
	  { "fe80::1", "::ffff:10.0.0.1" }, { V2, V2 }, 0, 0, 0, BOLT_GID_REASON_OVERRIDE },
	{ "override to a zero entry fails",
	  { "fe80::1", "fe80::2", "::" }, { UNKNOWN, UNKNOWN, UNKNOWN }, 2, -FI_EINVAL, -1, 0 },
	{ "override past the table fails",
	  { "fe80::1", "fe80::2" }, { UNKNOWN, UNKNOWN }, 5, -FI_EINVAL, -1, 0 },
};

Test(gid, selection_cases)
{
	for (size_t i = 0; i < sizeof(gid_cases) / sizeof(gid_cases[0]); i++) {
		const struct gid_case *c = &gid_cases[i];
		struct bolt_gid_entry table[8];
		struct bolt_gid_choice choice = { .index = 1234 };
		int length = table_from_case(c, table);
		int status = bolt_gid_select(table, length, c->override_index, &choice);

		cr_expect_eq(status, c->expected_status, "%s: status %d, expected %d",
			     c->name, status, c->expected_status);
		cr_expect_eq(choice.index, c->expected_index, "%s: index %d, expected %d",
			     c->name, choice.index, c->expected_index);
		if (!status)
			cr_expect_eq(choice.reason, c->expected_reason, "%s: reason %d, expected %d",
				     c->name, choice.reason, c->expected_reason);
	}
}

Test(gid, never_leaves_choice_uninitialised)
{
	struct bolt_gid_entry table[2];
	struct bolt_gid_choice choice;

	memset(table, 0, sizeof(table));
	memset(&choice, 0x5a, sizeof(choice));
	cr_assert_eq(bolt_gid_select(table, 2, -1, &choice), -FI_ENODATA);
	cr_assert_eq(choice.index, -1);
}

Test(gid, kinds)
{
	const struct {
		const char *text;
		enum bolt_gid_kind kind;
	} cases[] = {
		{ "::", BOLT_GID_KIND_ZERO },
		{ "fe80::1", BOLT_GID_KIND_LINK_LOCAL },
		{ "febf::1", BOLT_GID_KIND_LINK_LOCAL },
		{ "fec0::1", BOLT_GID_KIND_OTHER },
		{ "::ffff:1.2.3.4", BOLT_GID_KIND_IPV4_MAPPED },
		{ "::fffe:1.2.3.4", BOLT_GID_KIND_OTHER },
		{ "2001:db8::1", BOLT_GID_KIND_OTHER },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		union ibv_gid gid;

		cr_assert_eq(inet_pton(AF_INET6, cases[i].text, gid.raw), 1);
		cr_expect_eq(bolt_gid_kind(&gid), cases[i].kind, "%s", cases[i].text);
	}
}

Test(gid, format_round_trips)
{
	union ibv_gid gid;
	char text[BOLT_GID_TEXT_SIZE];

	cr_assert_eq(inet_pton(AF_INET6, "fe80::3474:d9ff:fe9d:cc84", gid.raw), 1);
	bolt_gid_format(&gid, text, sizeof(text));
	cr_assert_str_eq(text, "fe80::3474:d9ff:fe9d:cc84");
}
