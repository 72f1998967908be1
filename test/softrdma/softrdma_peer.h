/*
 * softrdma_peer.h: what a program driving the software device directly
 * needs to move data with a peer, shared by the tests (softrdma_test.h) and
 * util/softrdma_bench: a device with its PD and CQ, one side's objects, a
 * QP's address and its
 * bring-up through INIT, RTR and RTS, posting one buffer, the pipes over
 * which peers swap addresses, and the clock. Each returns an errno (0 on
 * success) rather than asserting or printing, so that a test, a forked
 * child and the benchmark each report failures their own way.
 */
#ifndef SOFTRDMA_PEER_H
#define SOFTRDMA_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "softrdma/softrdma.h"

#define TEST_GID_INDEX 1
#define TEST_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct test_device {
	struct ibv_context *context;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

/* Where a peer's QP and buffer are: what a side channel would carry. */
struct test_address {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

/* One process's end of a connection: its objects and both ends' addresses. */
struct test_side {
	struct test_device device;
	struct ibv_qp *qp;
	char *buffer;
	struct ibv_mr *mr;
	struct test_address self;
	struct test_address peer;
};

/* The device at index, a PD and a CQ of 1024 entries; ENODEV if there is no such device. */
int test_device_open(struct test_device *device, int index);
void test_device_close(struct test_device *device);
/* Destroys what side holds (any of it may be missing), frees its buffer and detaches. */
void test_side_close(struct test_side *side);
/* qp's number, mr's buffer and key (either may be NULL), and the GID at TEST_GID_INDEX. */
int test_address_of(struct test_device *device, struct ibv_qp *qp, struct ibv_mr *mr,
		    struct test_address *address);

/* INIT accepting the remote operations of access. */
int test_qp_init(struct ibv_qp *qp, int access);
/* RTR towards remote, from the GID at sgid_index. */
int test_qp_rtr(struct ibv_qp *qp, const struct test_address *remote, int sgid_index,
		enum ibv_mtu path_mtu);
/* RTS; RC waits 4.096 us * 2^timeout for an answer, and retries RNR rnr_retry times. */
int test_qp_rts(struct ibv_qp *qp, int timeout, int rnr_retry);

/* One WR over [offset, offset + length) of mr; remote (or NULL) gives RDMA's target. */
int test_post_send(struct ibv_qp *qp, enum ibv_wr_opcode opcode, struct ibv_mr *mr,
		   size_t offset, size_t length, const struct test_address *remote,
		   size_t remote_offset, uint32_t imm, unsigned int flags, uint64_t wr_id);
int test_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, size_t offset, size_t length,
		   uint64_t wr_id);

/* All of data through fd; EIO if the other end is gone. */
int test_write_all(int fd, const void *data, size_t size);
/* All of size bytes from fd; ETIMEDOUT after timeout_ms without any, EIO if the writer is gone. */
int test_read_all(int fd, void *data, size_t size, int timeout_ms);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t test_now_ns(void);

#endif /* SOFTRDMA_PEER_H */
