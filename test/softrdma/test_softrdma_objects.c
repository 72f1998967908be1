/*
 * test_softrdma_objects.c: the device as verbs show it: device list and
 * names, query_device, query_port, the GID tables of both profiles, PDs,
 * MRs (keys, access rules, bounds), CQs and QPs, and destroy refusing while
 * children exist.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/mman.h>

#include "softrdma_test.h"

static struct softrdma_config config;
static struct test_device device;

static void open_device(enum softrdma_profile profile, const char *tag)
{
	test_config_init(&config, profile, "single", tag);
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
}

static void close_device(void)
{
	test_device_close(&device);
	softrdma_detach();
	test_segment_remove(&config);
}

static void check_gid(int index, const char *expected)
{
	union ibv_gid gid, parsed;

	cr_assert_eq(softrdma_query_gid(device.context, 1, index, &gid), 0);
	cr_assert_eq(inet_pton(AF_INET6, expected, parsed.raw), 1);
	cr_assert_eq(memcmp(gid.raw, parsed.raw, 16), 0, "GID %d", index);
}

/* expected -1: an empty entry, which has no type (ENODATA, as the kernel answers). */
static void check_gid_type(int index, int expected)
{
	enum ibv_gid_type type;
	int ret = softrdma_query_gid_type(device.context, 1, index, &type);

	if (expected < 0) {
		cr_assert_eq(ret, ENODATA, "GID %d", index);
		return;
	}
	cr_assert_eq(ret, 0);
	cr_assert_eq(type, (enum ibv_gid_type) expected, "GID %d type", index);
}

Test(objects, thunderbolt_device_as_apple_reports_it)
{
	struct ibv_device **list;
	struct ibv_port_attr port;
	int count;

	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "tb-device");
	list = softrdma_get_device_list(&count);
	cr_assert_eq(count, 1);
	cr_assert_str_eq(softrdma_get_device_name(list[0]), "rdma_en0");
	cr_assert_eq((int) list[0]->transport_type, 100);
	cr_assert_eq(list[0]->node_type, IBV_NODE_CA);
	cr_assert_null(list[1]);
	softrdma_free_device_list(list);
	cr_assert_eq(softrdma_query_port(device.context, 1, &port), 0);
	cr_assert_eq(port.state, IBV_PORT_ACTIVE);
	cr_assert_eq(port.active_mtu, IBV_MTU_1024);
	cr_assert_eq(port.max_mtu, IBV_MTU_1024);
	cr_assert_eq(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(port.gid_tbl_len, 4);
	cr_assert_eq(softrdma_query_port(device.context, 2, &port), EINVAL);
	check_gid(0, "fe80::2b0:17ff:fe00:1");
	check_gid(1, "fe80::1042:a3d5:4100:e9");
	check_gid(2, "::");
	check_gid(3, "::");
	check_gid_type(1, IBV_GID_TYPE_ROCE_V2);
	check_gid_type(2, -1);
	cr_assert_eq(softrdma_query_gid(device.context, 1, 4, &(union ibv_gid) { 0 }), EINVAL);
	cr_assert_eq(softrdma_query_gid_type(device.context, 1, 4, &(enum ibv_gid_type) { 0 }), EINVAL);
	close_device();
}

Test(objects, rocev2_device_as_rxe_reports_it)
{
	struct ibv_device **list;
	struct ibv_port_attr port;
	int count;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "roce-device");
	list = softrdma_get_device_list(&count);
	cr_assert_eq(count, 1);
	cr_assert_str_eq(list[0]->name, "softroce0");
	cr_assert_eq(list[0]->transport_type, IBV_TRANSPORT_IB);
	softrdma_free_device_list(list);
	cr_assert_eq(softrdma_query_port(device.context, 1, &port), 0);
	/* As rxe on veth in test/rxe: a 1500-byte link, one RoCE v2 GID per address. */
	cr_assert_eq(port.active_mtu, IBV_MTU_1024);
	cr_assert_eq(port.max_mtu, IBV_MTU_4096);
	cr_assert_eq(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(port.gid_tbl_len, 1024);
	check_gid(0, "fe80::2b0:17ff:fe00:1");
	check_gid(1, "::ffff:198.18.0.1");
	check_gid(2, "::");
	check_gid(1023, "::");
	check_gid_type(0, IBV_GID_TYPE_ROCE_V2);
	check_gid_type(1, IBV_GID_TYPE_ROCE_V2);
	check_gid_type(2, -1);
	check_gid_type(1023, -1);
	close_device();
}

Test(objects, query_device)
{
	struct ibv_device_attr attr;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "query-device");
	cr_assert_eq(softrdma_query_device(device.context, &attr), 0);
	cr_assert_eq(attr.phys_port_cnt, 1);
	cr_assert_geq(attr.max_sge, 1);
	cr_assert_geq(attr.max_cqe, 1024);
	cr_assert_geq(attr.max_mr_size, 1ull << 31);
	cr_assert_neq(attr.node_guid, 0);
	close_device();
}

Test(objects, open_unknown_device_fails)
{
	struct ibv_device stranger;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "unknown");
	memset(&stranger, 0, sizeof(stranger));
	cr_assert_null(softrdma_open_device(&stranger));
	cr_assert_eq(errno, ENODEV);
	close_device();
}

Test(objects, mr_keys_are_unique_and_non_zero)
{
	static char buffer[64];
	struct ibv_mr *mrs[32];

	open_device(SOFTRDMA_PROFILE_ROCEV2, "keys");
	for (int index = 0; index < 32; index++) {
		mrs[index] = softrdma_reg_mr(device.pd, buffer, sizeof(buffer),
					     IBV_ACCESS_LOCAL_WRITE);
		cr_assert_not_null(mrs[index]);
		cr_assert_neq(mrs[index]->lkey, 0);
		cr_assert_neq(mrs[index]->rkey, 0);
		cr_assert_eq(mrs[index]->addr, buffer);
		cr_assert_eq(mrs[index]->length, sizeof(buffer));
		cr_assert_eq(mrs[index]->pd, device.pd);
		for (int other = 0; other < index; other++)
			cr_assert_neq(mrs[index]->lkey, mrs[other]->lkey);
	}
	/* A freed slot comes back with another key. */
	uint32_t old_key = mrs[5]->lkey;

	cr_assert_eq(softrdma_dereg_mr(mrs[5]), 0);
	mrs[5] = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
	cr_assert_neq(mrs[5]->lkey, old_key);
	for (int index = 0; index < 32; index++)
		cr_assert_eq(softrdma_dereg_mr(mrs[index]), 0);
	close_device();
}

Test(objects, mr_access_rules_of_verbs)
{
	static char buffer[64];
	struct ibv_mr *mr;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "access");
	cr_assert_null(softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_REMOTE_ATOMIC));
	cr_assert_eq(errno, EINVAL);
	/* Remote read alone is allowed, as in the kernel's ib_check_mr_access. */
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	/* rxe registers an empty region, and cannot pin NULL. */
	mr = softrdma_reg_mr(device.pd, buffer, 0, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	cr_assert_null(softrdma_reg_mr(device.pd, NULL, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT);
	cr_assert_null(softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_ON_DEMAND));
	cr_assert_eq(errno, EINVAL);
	close_device();
}

Test(objects, large_registration)
{
	struct ibv_mr *mr;
	/* Address space only: registration does not touch the pages. */
	void *region = mmap(NULL, 3ull << 30, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	cr_assert_neq(region, MAP_FAILED);
	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "large");
	mr = softrdma_reg_mr(device.pd, region, 3ull << 30, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	close_device();
	munmap(region, 3ull << 30);
}

Test(objects, destroy_refuses_while_children_exist)
{
	static char buffer[64];
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "busy");
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_RC, 4);
	cr_assert_not_null(qp);
	cr_assert_eq(softrdma_dealloc_pd(device.pd), EBUSY);
	cr_assert_eq(softrdma_destroy_cq(device.cq), EBUSY);
	cr_assert_eq(softrdma_close_device(device.context), EBUSY);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_eq(softrdma_dealloc_pd(device.pd), EBUSY);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	close_device();
}

Test(objects, cq_completion_channels_are_not_emulated)
{
	struct ibv_comp_channel channel = { 0 };

	open_device(SOFTRDMA_PROFILE_ROCEV2, "channel");
	cr_assert_null(softrdma_create_cq(device.context, 16, NULL, &channel, 0));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_null(softrdma_create_cq(device.context, 16, NULL, NULL, 1));
	cr_assert_eq(errno, EINVAL);
	close_device();
}

Test(objects, qp_fields_and_query)
{
	struct ibv_qp_init_attr init_attr;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp, *other;

	open_device(SOFTRDMA_PROFILE_ROCEV2, "qp-fields");
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_RC, 16);
	other = test_qp_create(device.pd, device.cq, IBV_QPT_UC, 16);
	cr_assert_not_null(qp);
	cr_assert_neq(qp->qp_num, 0);
	cr_assert_neq(qp->qp_num, other->qp_num);
	cr_assert_lt(qp->qp_num, 1u << 24);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(qp->qp_type, IBV_QPT_RC);
	cr_assert_eq(qp->pd, device.pd);
	cr_assert_eq(qp->send_cq, device.cq);
	cr_assert_eq(softrdma_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CAP, &init_attr), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_RESET);
	cr_assert_eq(attr.cap.max_send_wr, 16);
	cr_assert_eq(init_attr.qp_type, IBV_QPT_RC);
	cr_assert_eq(init_attr.cap.max_inline_data, 64);
	cr_assert_null(test_qp_create(device.pd, device.cq, IBV_QPT_RC, 1025));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_eq(softrdma_destroy_qp(other), 0);
	close_device();
}
