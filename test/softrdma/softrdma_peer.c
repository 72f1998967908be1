/*
 * softrdma_peer.c: the helpers declared in softrdma_peer.h, which the tests
 * and util/softrdma_bench share.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "softrdma_peer.h"

int test_device_open(struct test_device *device, int index)
{
	struct ibv_device **list;
	int count;

	memset(device, 0, sizeof(*device));
	list = softrdma_get_device_list(&count);
	if (!list)
		return errno;
	if (index < count)
		device->context = softrdma_open_device(list[index]);
	softrdma_free_device_list(list);
	if (!device->context)
		return ENODEV;
	device->pd = softrdma_alloc_pd(device->context);
	if (device->pd)
		device->cq = softrdma_create_cq(device->context, 1024, NULL, NULL, 0);
	if (!device->cq) {
		test_device_close(device);
		return ENOMEM;
	}
	return 0;
}

void test_device_close(struct test_device *device)
{
	if (device->cq)
		softrdma_destroy_cq(device->cq);
	if (device->pd)
		softrdma_dealloc_pd(device->pd);
	if (device->context)
		softrdma_close_device(device->context);
	memset(device, 0, sizeof(*device));
}

void test_side_close(struct test_side *side)
{
	if (side->qp)
		softrdma_destroy_qp(side->qp);
	if (side->mr)
		softrdma_dereg_mr(side->mr);
	test_device_close(&side->device);
	free(side->buffer);
	softrdma_detach();
}

int test_address_of(struct test_device *device, struct ibv_qp *qp, struct ibv_mr *mr,
		    struct test_address *address)
{
	memset(address, 0, sizeof(*address));
	address->qpn = qp ? qp->qp_num : 0;
	if (mr) {
		address->addr = (uintptr_t) mr->addr;
		address->rkey = mr->rkey;
	}
	return softrdma_query_gid(device->context, 1, TEST_GID_INDEX, &address->gid);
}

int test_qp_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = (unsigned int) access,
	};

	return softrdma_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS);
}

int test_qp_rtr(struct ibv_qp *qp, const struct test_address *remote, int sgid_index,
		enum ibv_mtu path_mtu)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = path_mtu,
		.dest_qp_num = remote->qpn,
		.rq_psn = 0,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = remote->gid, .sgid_index = (uint8_t) sgid_index,
				 .hop_limit = 1 },
		},
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return softrdma_modify_qp(qp, &attr, mask);
}

int test_qp_rts(struct ibv_qp *qp, int timeout, int rnr_retry)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = 0,
		.timeout = (uint8_t) timeout,
		.retry_cnt = 7,
		.rnr_retry = (uint8_t) rnr_retry,
		.max_rd_atomic = 1,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return softrdma_modify_qp(qp, &attr, mask);
}

int test_post_send(struct ibv_qp *qp, enum ibv_wr_opcode opcode, struct ibv_mr *mr,
		   size_t offset, size_t length, const struct test_address *remote,
		   size_t remote_offset, uint32_t imm, unsigned int flags, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t) (mr ? (char *) mr->addr + offset : NULL),
		.length = (uint32_t) length,
		.lkey = mr ? mr->lkey : 0,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = length ? 1 : 0,
		.opcode = opcode,
		.send_flags = flags,
		.imm_data = imm,
	}, *bad_wr = NULL;

	if (remote) {
		wr.wr.rdma.remote_addr = remote->addr + remote_offset;
		wr.wr.rdma.rkey = remote->rkey;
	}
	return softrdma_post_send(qp, &wr, &bad_wr);
}

int test_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, size_t offset, size_t length,
		   uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t) (char *) mr->addr + offset,
		.length = (uint32_t) length,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = length ? 1 : 0,
	}, *bad_wr = NULL;

	return softrdma_post_recv(qp, &wr, &bad_wr);
}

int test_write_all(int fd, const void *data, size_t size)
{
	const char *bytes = data;

	while (size) {
		ssize_t written = write(fd, bytes, size);

		if (written < 0 && errno == EINTR)
			continue;
		if (written <= 0)
			return EIO;
		bytes += written;
		size -= (size_t) written;
	}
	return 0;
}

int test_read_all(int fd, void *data, size_t size, int timeout_ms)
{
	struct pollfd pollfd = { .fd = fd, .events = POLLIN };
	char *bytes = data;

	while (size) {
		ssize_t got;

		if (poll(&pollfd, 1, timeout_ms) <= 0)
			return ETIMEDOUT;
		got = read(fd, bytes, size);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return EIO;
		bytes += got;
		size -= (size_t) got;
	}
	return 0;
}

uint64_t test_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000000ull + (uint64_t) now.tv_nsec;
}
