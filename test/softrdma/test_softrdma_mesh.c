/*
 * test_softrdma_mesh.c: a mesh:4 topology of four processes, one per
 * emulated host: each sees its own three devices, and host 0 reaches each
 * peer through the cable that joins them, and not through another one (RTR
 * succeeds, since the GID exists; the message is lost on UC and fails with
 * RETRY_EXC_ERR on RC).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "softrdma_test.h"

#define HOSTS 4
#define MESSAGE 256

struct mesh {
	struct softrdma_config config;
	enum ibv_qp_type type;
	struct test_channel channels[HOSTS];
};

static struct mesh mesh;

/* Host h's device toward host 0 is its device 0: host 0 is its first peer. */
static int peer_check_devices(void)
{
	char expected[32];
	struct ibv_device **list;
	int count, ret = 0;

	list = softrdma_get_device_list(&count);
	if (!list)
		return 10;
	if (count != HOSTS - 1)
		ret = 11;
	for (int index = 0; !ret && index < count; index++) {
		snprintf(expected, sizeof(expected), "%s%d",
			 mesh.config.profile == SOFTRDMA_PROFILE_THUNDERBOLT ? "rdma_en" : "softroce",
			 index);
		if (strcmp(softrdma_get_device_name(list[index]), expected))
			ret = 12;
	}
	softrdma_free_device_list(list);
	return ret;
}

/* Serves one message from host 0 on its device 0, then says what arrived. */
static int peer_main(void *argument)
{
	int host = (int) (intptr_t) argument;
	struct test_channel *channel = &mesh.channels[host];
	struct softrdma_config config = mesh.config;
	struct test_address self, parent;
	static char buffer[MESSAGE];
	struct test_device device;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int32_t arrived;
	int ret;

	config.host = host;
	if (softrdma_attach(&config))
		return 1;
	ret = peer_check_devices();
	if (ret || test_device_open(&device, 0))
		return ret ? ret : 2;
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE);
	qp = test_qp_create(device.pd, device.cq, mesh.type, 8);
	if (!mr || !qp || test_address_of(&device, qp, mr, &self) ||
	    test_channel_send(channel, false, &self, sizeof(self)) ||
	    test_channel_receive(channel, false, &parent, sizeof(parent)) ||
	    test_qp_connect(qp, &parent, 7) || test_post_recv(qp, mr, 0, MESSAGE, 1) ||
	    test_channel_send(channel, false, &self, sizeof(self)))
		return 3;
	/* Host 0 says when it is done sending; then count what came. */
	if (test_channel_receive(channel, false, &arrived, sizeof(arrived)))
		return 4;
	arrived = 0;
	while (test_poll(device.cq, &wc, 50) == 1)
		arrived += wc.status == IBV_WC_SUCCESS && test_pattern_check(buffer, MESSAGE, 5);
	if (test_channel_send(channel, false, &arrived, sizeof(arrived)))
		return 5;
	softrdma_destroy_qp(qp);
	softrdma_dereg_mr(mr);
	test_device_close(&device);
	softrdma_detach();
	return 0;
}

static struct test_device devices[HOSTS - 1];
static char buffer[MESSAGE];

/* A QP of host 0 on one of its devices, with the message buffer registered. */
struct endpoint {
	int index;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct test_address self;
};

static void endpoint_open(struct endpoint *endpoint, int index)
{
	endpoint->index = index;
	endpoint->mr = softrdma_reg_mr(devices[index].pd, buffer, sizeof(buffer), 0);
	endpoint->qp = test_qp_create(devices[index].pd, devices[index].cq, mesh.type, 8);
	cr_assert_not_null(endpoint->qp);
	cr_assert_eq(test_address_of(&devices[index], endpoint->qp, endpoint->mr,
				     &endpoint->self), 0);
}

static enum ibv_wc_status endpoint_send(struct endpoint *endpoint)
{
	struct ibv_wc wc;

	cr_assert_eq(test_post_send(endpoint->qp, IBV_WR_SEND, endpoint->mr, 0, MESSAGE, NULL, 0,
				    0, IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(devices[endpoint->index].cq, &wc, TEST_TIMEOUT_MS), 1);
	return wc.status;
}

static void endpoint_close(struct endpoint *endpoint)
{
	cr_assert_eq(softrdma_destroy_qp(endpoint->qp), 0);
	cr_assert_eq(softrdma_dereg_mr(endpoint->mr), 0);
}

static void check_peer(int host)
{
	struct test_channel *channel = &mesh.channels[host];
	struct endpoint wrong, right;
	struct test_address peer;
	int32_t arrived = 0;
	enum ibv_wc_status status;

	cr_assert_eq(test_channel_receive(channel, true, &peer, sizeof(peer)), 0);
	/* Through another cable: RTR accepts the GID, which exists, but nothing gets there. */
	endpoint_open(&wrong, host % (HOSTS - 1));
	cr_assert_eq(test_qp_connect(wrong.qp, &peer, 7), 0);
	status = endpoint_send(&wrong);
	cr_assert_eq(status, mesh.type == IBV_QPT_RC ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS,
		     "host %d through device %d: %s", host, wrong.index,
		     softrdma_wc_status_str(status));
	endpoint_close(&wrong);
	/* Through the cable to the peer, once the peer is connected to this QP. */
	endpoint_open(&right, host - 1);
	cr_assert_eq(test_channel_send(channel, true, &right.self, sizeof(right.self)), 0);
	cr_assert_eq(test_qp_connect(right.qp, &peer, 7), 0);
	cr_assert_eq(test_channel_receive(channel, true, &peer, sizeof(peer)), 0);
	status = endpoint_send(&right);
	cr_assert_eq(status, IBV_WC_SUCCESS, "host %d through device %d: %s", host, right.index,
		     softrdma_wc_status_str(status));
	endpoint_close(&right);
	cr_assert_eq(test_channel_send(channel, true, &arrived, sizeof(arrived)), 0);
	cr_assert_eq(test_channel_receive(channel, true, &arrived, sizeof(arrived)), 0);
	cr_assert_eq(arrived, 1, "host %d received %d messages", host, arrived);
}

static void run_mesh(enum softrdma_profile profile, enum ibv_qp_type type, const char *tag)
{
	pid_t peers[HOSTS];

	test_config_init(&mesh.config, profile, "mesh:4", tag);
	mesh.type = type;
	test_pattern_fill(buffer, MESSAGE, 5);
	for (int host = 1; host < HOSTS; host++) {
		cr_assert_eq(test_channel_open(&mesh.channels[host]), 0);
		peers[host] = test_fork(peer_main, (void *) (intptr_t) host);
	}
	cr_assert_eq(test_attach(&mesh.config), 0);
	for (int index = 0; index < HOSTS - 1; index++)
		cr_assert_eq(test_device_open(&devices[index], index), 0);
	cr_assert_eq(test_device_open(&(struct test_device) { 0 }, HOSTS - 1), ENODEV);
	for (int host = 1; host < HOSTS; host++)
		check_peer(host);
	for (int host = 1; host < HOSTS; host++) {
		cr_assert_eq(test_wait(peers[host]), 0, "host %d", host);
		test_channel_close(&mesh.channels[host]);
	}
	for (int index = 0; index < HOSTS - 1; index++)
		test_device_close(&devices[index]);
	softrdma_detach();
	test_segment_remove(&mesh.config);
}

Test(mesh, rocev2_rc_reaches_each_peer_through_its_cable)
{
	run_mesh(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "mesh-rc");
}

Test(mesh, thunderbolt_uc_reaches_each_peer_through_its_cable)
{
	run_mesh(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "mesh-uc");
}
