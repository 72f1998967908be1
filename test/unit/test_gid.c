/*
 * test_gid.c: GID classification and selection over GID tables as real
 * devices show them: Thunderbolt (only fe80:: at 0 and 1), Linux rxe (RoCE v1
 * and v2 entries, link-local and IPv4-mapped), zero and empty tables, and the
 * FI_BOLT_GID_INDEX override.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "device/bolt_device.h"
#include "device/bolt_gid.h"
#include "verbs/bolt_verbs.h"

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

/*
 * A port as a RoCE host with many addresses shows it: 300 entries, global
 * IPv6 GIDs first, the IPv4-mapped RoCE v2 GID at 200 (mlx5 adds entries per
 * address and per VLAN or macvlan device on the port).
 */
#define WIDE_TABLE_LENGTH 300
#define WIDE_TABLE_IPV4_INDEX 200

static struct ibv_device wide_device;
static struct ibv_device *wide_device_list[] = { &wide_device, NULL };
static struct ibv_context wide_context;

static struct ibv_device **wide_get_device_list(int *count)
{
	*count = 1;
	return wide_device_list;
}

static void wide_free_device_list(struct ibv_device **list)
{
	(void) list;
}

static const char *wide_get_device_name(struct ibv_device *device)
{
	(void) device;
	return "mlx5_0";
}

static struct ibv_context *wide_open_device(struct ibv_device *device)
{
	(void) device;
	return &wide_context;
}

static int wide_close_device(struct ibv_context *context)
{
	(void) context;
	return 0;
}

static int wide_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	(void) context;
	memset(attr, 0, sizeof(*attr));
	attr->phys_port_cnt = 1;
	return 0;
}

static int wide_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr)
{
	(void) context;
	(void) port_num;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	attr->gid_tbl_len = WIDE_TABLE_LENGTH;
	return 0;
}

static int wide_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			  union ibv_gid *gid)
{
	char text[INET6_ADDRSTRLEN];

	(void) context;
	(void) port_num;
	if (index < 0 || index >= WIDE_TABLE_LENGTH)
		return EINVAL;
	if (index == WIDE_TABLE_IPV4_INDEX)
		snprintf(text, sizeof(text), "::ffff:10.0.0.1");
	else if (index < WIDE_TABLE_IPV4_INDEX)
		snprintf(text, sizeof(text), "2001:db8::%x", index + 1);
	else
		snprintf(text, sizeof(text), "::");
	return inet_pton(AF_INET6, text, gid->raw) == 1 ? 0 : EINVAL;
}

static int wide_query_gid_type(struct ibv_context *context, uint8_t port_num, int index,
			       enum ibv_gid_type *type)
{
	(void) context;
	(void) port_num;
	if (index < 0 || index > WIDE_TABLE_IPV4_INDEX)
		return ENODATA;
	*type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

static void expect_wide_choice(int override_index, int expected_index, enum bolt_gid_reason reason)
{
	struct bolt_verbs verbs = {
		.name = "wide", .get_device_list = wide_get_device_list,
		.free_device_list = wide_free_device_list, .get_device_name = wide_get_device_name,
		.open_device = wide_open_device, .close_device = wide_close_device,
		.query_device = wide_query_device, .query_port = wide_query_port,
		.query_gid = wide_query_gid, .query_gid_type = wide_query_gid_type,
	};
	struct bolt_device_report *reports;
	int count;

	cr_assert_eq(bolt_device_reports_create(&verbs, override_index, &reports, &count), 0);
	cr_assert_eq(count, 1);
	cr_expect(reports[0].ports[0].usable, "%s", reports[0].ports[0].unusable_reason);
	cr_expect_eq(reports[0].ports[0].gid_choice.index, expected_index,
		     "chose GID %d, not %d", reports[0].ports[0].gid_choice.index, expected_index);
	cr_expect_eq(reports[0].ports[0].gid_choice.reason, reason);
	bolt_device_reports_destroy(reports);
}

Test(gid, tables_of_hundreds_of_entries)
{
	expect_wide_choice(-1, WIDE_TABLE_IPV4_INDEX, BOLT_GID_REASON_IPV4_MAPPED_ROCE_V2);
	expect_wide_choice(150, 150, BOLT_GID_REASON_OVERRIDE);
}

/* One file of a fake sysfs GID type directory: ports/1/gid_attrs/types/<index>. */
static void write_type_file(const char *types, int index, const char *text)
{
	char path[320];
	FILE *file;

	snprintf(path, sizeof(path), "%s/%d", types, index);
	file = fopen(path, "w");
	cr_assert_not_null(file);
	cr_assert_eq(fputs(text, file) >= 0, true);
	cr_assert_eq(fclose(file), 0);
}

/*
 * Without _ibv_query_gid_ex (rdma-core before v32) the types come from
 * sysfs, as the kernel writes them: otherwise a mlx5 port's RoCE v1 entry,
 * listed before its v2 twin, would be chosen.
 */
Test(gid, types_from_sysfs)
{
	char root[] = "/tmp/bolt-gid-types-XXXXXX", types[128], path[160];
	enum ibv_gid_type type = IBV_GID_TYPE_IB;

	cr_assert_not_null(mkdtemp(root));
	snprintf(types, sizeof(types), "%s/ports/1/gid_attrs/types", root);
	snprintf(path, sizeof(path), "%s/ports", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ports/1", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ports/1/gid_attrs", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(mkdir(types, 0700), 0);
	write_type_file(types, 0, "IB/RoCE v1\n");
	write_type_file(types, 1, "RoCE v2\n");
	write_type_file(types, 2, "");
	write_type_file(types, 3, "RoCE v3\n");

	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 1, 0, &type), 0);
	cr_expect_eq(type, IBV_GID_TYPE_ROCE_V1);
	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 1, 1, &type), 0);
	cr_expect_eq(type, IBV_GID_TYPE_ROCE_V2);
	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 1, 2, &type), ENODATA);
	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 1, 3, &type), EINVAL);
	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 1, 4, &type), ENOENT);
	cr_expect_eq(bolt_verbs_system_sysfs_gid_type(root, 2, 0, &type), ENOENT);

	for (int index = 0; index < 4; index++) {
		snprintf(path, sizeof(path), "%s/%d", types, index);
		unlink(path);
	}
	rmdir(types);
	snprintf(path, sizeof(path), "%s/ports/1/gid_attrs", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/ports/1", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/ports", root);
	rmdir(path);
	cr_expect_eq(rmdir(root), 0);
}
