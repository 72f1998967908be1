/*
 * test_av.c: address vectors on the fixture domain: FI_AV_TABLE and FI_AV_MAP
 * insertion, lookup and removal, invalid addresses and FI_SYNC_ERR, reverse
 * lookup with duplicates, growth far past the count hint, fi_av_straddr, and
 * FI_EVENT insertions completing on a bound event queue.
 */
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include <rdma/fi_collective.h>

#include "bolt_fi_compat.h"
#include "objects_fixture.h"

TestSuite(av, .init = objects_setup, .fini = objects_teardown);

/* fi_av_bind, which libfabric 2.x deprecates and bolt offers to applications of API 1.x. */
static int av_bind(struct fid_av *av, struct fid *fid, uint64_t flags)
{
	int ret;

	BOLT_DEPRECATED_CALLS_BEGIN
	ret = fi_av_bind(av, fid, flags);
	BOLT_DEPRECATED_CALLS_END
	return ret;
}

static struct fid_av *open_av(enum fi_av_type type, size_t count, uint64_t flags)
{
	struct fi_av_attr attr = { .type = type, .count = count, .flags = flags };
	struct fid_av *av = NULL;

	cr_assert_eq(bolt_av_open(&objects.domain.domain_fid, &attr, &av, NULL), 0);
	return av;
}

static struct bolt_av *bolt_av_of(struct fid_av *av_fid)
{
	return bolt_container_of(av_fid, struct bolt_av, av_fid);
}

static struct fid_eq *open_eq(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;

	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), 0);
	return eq;
}

Test(av, opens_and_counts_on_the_domain)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC };
	struct fid_av *av = NULL;

	cr_assert_eq(bolt_av_open(&objects.domain.domain_fid, &attr, &av, (void *) 0xc0de), 0);
	cr_assert_eq(attr.type, FI_AV_TABLE, "the type chosen for FI_AV_UNSPEC is returned");
	cr_assert_eq(av->fid.fclass, FI_CLASS_AV);
	cr_assert_eq(av->fid.context, (void *) 0xc0de);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);

	av = open_av(FI_AV_MAP, 0, FI_SYMMETRIC);
	cr_assert_eq(bolt_av_of(av)->type, FI_AV_MAP);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, refuses_what_it_cannot_honour)
{
	struct fid_domain *domain = &objects.domain.domain_fid;
	struct fid_av *av = NULL;

	cr_assert_eq(bolt_av_open(domain, NULL, &av, NULL), -FI_EINVAL);
	cr_assert_eq(bolt_av_open(domain, &(struct fi_av_attr) { .rx_ctx_bits = 2 }, &av, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(bolt_av_open(domain, &(struct fi_av_attr) { .name = "shared" }, &av, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(bolt_av_open(domain, &(struct fi_av_attr) { .flags = FI_READ }, &av, NULL),
		     -FI_ENOSYS);
	cr_assert_eq(bolt_av_open(domain, &(struct fi_av_attr) { .flags = FI_MORE }, &av, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(bolt_av_open(domain, &(struct fi_av_attr) { .type = (enum fi_av_type) 9 },
				  &av, NULL), -FI_EINVAL);
	cr_assert_null(av);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);
}

/* Inserts three addresses, looks each up, and checks fi_addr is the index. */
static void check_insert_and_lookup(enum fi_av_type type)
{
	struct fid_av *av = open_av(type, 0, 0);
	struct bolt_address addresses[3] = {
		objects_ipv4_address(1), objects_ipv6_address(2), objects_ipv4_address(3),
	};
	struct bolt_address found;
	fi_addr_t fi_addr[3];
	unsigned char prefix[4];
	size_t length;

	cr_assert_eq(fi_av_insert(av, addresses, 3, fi_addr, 0, NULL), 3);
	for (fi_addr_t i = 0; i < 3; i++) {
		cr_assert_eq(fi_addr[i], i);
		length = sizeof(found);
		cr_assert_eq(fi_av_lookup(av, fi_addr[i], &found, &length), 0);
		cr_assert_eq(length, sizeof(struct bolt_address));
		cr_assert_eq(memcmp(&found, &addresses[i], sizeof(found)), 0);
	}
	length = sizeof(prefix);
	cr_assert_eq(fi_av_lookup(av, fi_addr[1], prefix, &length), 0);
	cr_assert_eq(length, sizeof(struct bolt_address), "the size the whole address needs");
	cr_assert_eq(memcmp(prefix, &addresses[1], sizeof(prefix)), 0);
	length = 0;
	cr_assert_eq(fi_av_lookup(av, fi_addr[1], NULL, &length), 0);
	cr_assert_eq(length, sizeof(struct bolt_address));
	cr_assert_eq(fi_av_lookup(av, 3, &found, &length), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, FI_ADDR_NOTAVAIL, &found, &length), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, &addresses[0], 1, NULL, 0, NULL), 1, "fi_addr may be NULL");
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, table_insert_and_lookup)
{
	check_insert_and_lookup(FI_AV_TABLE);
}

Test(av, map_insert_and_lookup)
{
	check_insert_and_lookup(FI_AV_MAP);
}

Test(av, invalid_addresses_take_no_index)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);
	struct bolt_address addresses[5] = {
		objects_ipv4_address(1), objects_ipv4_address(2), objects_ipv4_address(3),
		objects_ipv4_address(4), objects_ipv6_address(5),
	};
	fi_addr_t fi_addr[5];

	addresses[1].version = 2;
	addresses[2].ip[7] = 1;         /* IPv4 with bytes past its four */
	addresses[3].family = 5;
	cr_assert_eq(fi_av_insert(av, addresses, 5, fi_addr, 0, NULL), 2);
	cr_assert_eq(fi_addr[0], 0);
	cr_assert_eq(fi_addr[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_addr[2], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_addr[3], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_addr[4], 1, "indexes stay sequential");
	cr_assert_eq(fi_av_insert(av, NULL, 1, fi_addr, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, addresses, 0, fi_addr, 0, NULL), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, sync_err_reports_each_address)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);
	struct bolt_address addresses[3] = {
		objects_ipv4_address(1), objects_ipv4_address(2), objects_ipv4_address(3),
	};
	int errors[3] = { -1, -1, -1 };

	addresses[1].version = 0;
	cr_assert_eq(fi_av_insert(av, addresses, 3, NULL, FI_SYNC_ERR, errors), 2);
	cr_assert_eq(errors[0], 0);
	cr_assert_eq(errors[1], FI_EINVAL);
	cr_assert_eq(errors[2], 0);
	cr_assert_eq(fi_av_insert(av, addresses, 3, NULL, FI_SYNC_ERR, NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, addresses, 1, NULL, FI_AV_USER_ID, NULL), -FI_EBADFLAGS);
	cr_assert_eq(fi_av_insert(av, addresses, 1, NULL, FI_MORE, NULL), 1);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, removed_addresses_are_gone_and_their_index_not_reused)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);
	struct bolt_address addresses[3] = {
		objects_ipv4_address(1), objects_ipv4_address(2), objects_ipv4_address(3),
	};
	struct bolt_address found;
	size_t length = sizeof(found);
	fi_addr_t fi_addr[3], again;

	cr_assert_eq(fi_av_insert(av, addresses, 3, fi_addr, 0, NULL), 3);
	cr_assert_eq(fi_av_remove(av, &fi_addr[1], 1, 0), 0);
	cr_assert_eq(fi_av_lookup(av, fi_addr[1], &found, &length), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, fi_addr[2], &found, &length), 0);
	cr_assert_eq(fi_av_remove(av, &fi_addr[1], 1, 0), -FI_EINVAL, "removed twice");
	cr_assert_eq(fi_av_remove(av, &fi_addr[0], 1, 1), -FI_EINVAL, "flags must be 0");
	cr_assert_eq(fi_av_insert(av, &addresses[1], 1, &again, 0, NULL), 1);
	cr_assert_eq(again, 3, "a removed index is never handed out again");
	cr_assert_eq(bolt_av_lookup_address(bolt_av_of(av), again, &found), 0);
	cr_assert_eq(memcmp(&found, &addresses[1], sizeof(found)), 0);
	cr_assert_eq(bolt_av_lookup_address(bolt_av_of(av), fi_addr[1], &found), -FI_EINVAL);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, reverse_lookup_follows_insertions_removals_and_duplicates)
{
	struct fid_av *av = open_av(FI_AV_MAP, 0, 0);
	struct bolt_av *bolt_av = bolt_av_of(av);
	struct bolt_address a = objects_ipv4_address(1), b = objects_ipv6_address(1);
	struct bolt_address unknown = objects_ipv4_address(2);
	fi_addr_t fi_addr[3];

	cr_assert_eq(fi_av_insert(av, &a, 1, &fi_addr[0], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &b, 1, &fi_addr[1], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fi_addr[2], 0, NULL), 1, "a duplicate");
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &a), fi_addr[0]);
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &b), fi_addr[1]);
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &unknown), FI_ADDR_NOTAVAIL);

	cr_assert_eq(fi_av_remove(av, &fi_addr[0], 1, 0), 0);
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &a), fi_addr[2], "the duplicate answers");
	cr_assert_eq(fi_av_remove(av, &fi_addr[2], 1, 0), 0);
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &a), FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fi_addr[0], 0, NULL), 1);
	cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &a), fi_addr[0], "reinserted after removal");
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, grows_far_past_the_count_hint)
{
	enum { COUNT = 10000 };
	struct fid_av *av = open_av(FI_AV_TABLE, 4, 0);
	struct bolt_av *bolt_av = bolt_av_of(av);
	struct bolt_address *addresses = calloc(COUNT, sizeof(*addresses));
	fi_addr_t *fi_addr = calloc(COUNT, sizeof(*fi_addr));
	struct bolt_address found;

	cr_assert(addresses && fi_addr);
	for (uint32_t i = 0; i < COUNT; i++)
		addresses[i] = i % 2 ? objects_ipv6_address(i) : objects_ipv4_address(i);
	/* One at a time for the first thousand, then the rest in a single call. */
	for (uint32_t i = 0; i < 1000; i++)
		cr_assert_eq(fi_av_insert(av, &addresses[i], 1, &fi_addr[i], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &addresses[1000], COUNT - 1000, &fi_addr[1000], 0, NULL),
		     COUNT - 1000);
	for (uint32_t i = 0; i < COUNT; i++) {
		cr_assert_eq(fi_addr[i], i);
		cr_assert_eq(bolt_av_lookup_address(bolt_av, i, &found), 0);
		cr_assert_eq(memcmp(&found, &addresses[i], sizeof(found)), 0, "address %u", i);
		cr_assert_eq(bolt_av_reverse_lookup(bolt_av, &addresses[i]), i);
	}
	free(addresses);
	free(fi_addr);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, straddr_is_readable_and_truncates_safely)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);
	struct bolt_address ipv4 = objects_ipv4_address(7), ipv6 = objects_ipv6_address(258);
	const char *ipv4_text = "bolt://10.0.0.7:5007/7";
	char buffer[128], small[8];
	size_t length = sizeof(buffer);

	cr_assert_eq(fi_av_straddr(av, &ipv4, buffer, &length), buffer);
	cr_assert_str_eq(buffer, ipv4_text);
	cr_assert_eq(length, strlen(ipv4_text) + 1);

	length = sizeof(buffer);
	fi_av_straddr(av, &ipv6, buffer, &length);
	cr_assert_str_eq(buffer, "bolt://[fe80::102]:6258/258");

	length = sizeof(small);
	cr_assert_eq(fi_av_straddr(av, &ipv4, small, &length), small);
	cr_assert_str_eq(small, "bolt://", "truncated and terminated");
	cr_assert_eq(length, strlen(ipv4_text) + 1, "the size the whole text needs");

	length = 0;
	cr_assert_null(fi_av_straddr(av, &ipv4, NULL, &length));
	cr_assert_eq(length, strlen(ipv4_text) + 1);

	ipv4.version = 9;
	length = sizeof(buffer);
	fi_av_straddr(av, &ipv4, buffer, &length);
	cr_assert_str_eq(buffer, "bolt://(invalid address)");
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, event_insertions_complete_on_the_bound_eq)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, FI_EVENT);
	struct fid_eq *eq = open_eq();
	struct bolt_address addresses[3] = {
		objects_ipv4_address(1), objects_ipv4_address(2), objects_ipv4_address(3),
	};
	struct fi_eq_err_entry error = { 0 };
	struct fi_eq_entry entry = { 0 };
	fi_addr_t fi_addr[3];
	uint32_t event = 0;

	cr_assert_eq(fi_av_insert(av, addresses, 3, fi_addr, 0, NULL), -FI_ENOEQ,
		     "no event queue bound yet");
	cr_assert_eq(av_bind(av, &eq->fid, 0), 0);
	addresses[1].version = 0;
	cr_assert_eq(fi_av_insert(av, addresses, 3, fi_addr, 0, (void *) 0xc0), 0);
	cr_assert_eq(fi_addr[0], 0);
	cr_assert_eq(fi_addr[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_addr[2], 1);

	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0), -FI_EAVAIL,
		     "the failure comes before the completion");
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), sizeof(error));
	cr_assert_eq(error.fid, &av->fid);
	cr_assert_eq(error.context, (void *) 0xc0);
	cr_assert_eq(error.data, 1, "the index of the failed address");
	cr_assert_eq(error.err, FI_EINVAL);

	cr_assert_eq(fi_eq_sread(eq, &event, &entry, sizeof(entry), 1000, 0), sizeof(entry));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(entry.fid, &av->fid);
	cr_assert_eq(entry.context, (void *) 0xc0);
	cr_assert_eq(entry.data, 2, "the number inserted");
	cr_assert_eq(fi_av_insert(av, addresses, 1, NULL, FI_SYNC_ERR, (int[1]) { 0 }), -FI_EINVAL,
		     "FI_SYNC_ERR is for synchronous insertions");

	cr_assert_eq(fi_close(&eq->fid), -FI_EBUSY, "the AV still holds the event queue");
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(av, bind_takes_one_event_queue_and_nothing_else)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, FI_EVENT);
	struct fid_eq *eq = open_eq(), *other = open_eq();

	cr_assert_eq(av_bind(av, &av->fid, 0), -FI_EINVAL);
	cr_assert_eq(av_bind(av, &eq->fid, 1), -FI_EINVAL, "flags must be 0");
	cr_assert_eq(av_bind(av, &eq->fid, 0), 0);
	cr_assert_eq(av_bind(av, &other->fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(&other->fid), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(av, close_while_bound_is_busy)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);

	atomic_fetch_add(&bolt_av_of(av)->bind_count, 1);
	cr_assert_eq(fi_close(&av->fid), -FI_EBUSY);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	atomic_fetch_sub(&bolt_av_of(av)->bind_count, 1);
	cr_assert_eq(fi_close(&av->fid), 0);
}

Test(av, every_slot_answers)
{
	struct fid_av *av = open_av(FI_AV_TABLE, 0, 0);
	struct fi_av_set_attr set_attr = { .start_addr = FI_ADDR_NOTAVAIL, .end_addr = FI_ADDR_NOTAVAIL };
	struct fid_av_set *set = NULL;
	fi_addr_t fi_addr;
	void *wait = NULL, *ops = NULL;

	cr_assert_eq(av->ops->size, sizeof(struct fi_ops_av));
	cr_assert(av->ops->insert && av->ops->insertsvc && av->ops->insertsym && av->ops->remove &&
		  av->ops->lookup && av->ops->straddr && av->ops->av_set);
	cr_assert_eq(fi_av_insertsvc(av, "10.0.0.1", "5000", &fi_addr, 0, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 2, "5000", 2, &fi_addr, 0, NULL), -FI_ENOSYS);
	/* AV sets are the collectives' (test/collective/test_collective_api.c): an empty one opens. */
	cr_assert_eq(av->ops->av_set(av, &set_attr, &set, NULL), 0);
	cr_assert_eq(fi_close(&set->fid), 0);
	cr_assert_eq(fi_control(&av->fid, FI_GETWAIT, &wait), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&av->fid, "bolt", 0, &ops, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_close(&av->fid), 0);
}
