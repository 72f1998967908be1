/*
 * softrdma_test.h: helpers of the software device's tests: configs with a
 * namespace of their own, QPs connected with the tests' settings, polling,
 * data patterns, and forked peers talking over pipes; with what they share
 * with util/softrdma_bench (softrdma_peer.h: the device, addresses, the
 * INIT/RTR/RTS steps, posting). They return errors instead of asserting, so
 * a forked child can turn them into its exit status.
 */
#ifndef SOFTRDMA_TEST_H
#define SOFTRDMA_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "softrdma/softrdma.h"
#include "softrdma_peer.h"

/* Generous: a 16 MiB transfer through shared memory, sanitized, on two busy cores. */
#define TEST_TIMEOUT_MS 30000
/* RC gives up after 8 * 134 ms without an answer: a target process descheduled
 * for 134 ms on a loaded machine (load 11 on 2 cores, seen) is no lost answer. */
#define TEST_RC_TIMEOUT 15
#define TEST_ARRAY_LENGTH(array) (sizeof(array) / sizeof((array)[0]))

/*
 * A profile and topology in a namespace "<tag>-<pid>" no other test shares,
 * in the copy mode FI_BOLT_SOFT_COPY names (default auto).
 */
void test_config_init(struct softrdma_config *config, enum softrdma_profile profile,
		      const char *topology, const char *tag);
void test_segment_remove(const struct softrdma_config *config);
/* softrdma_attach as an errno; EPROTO if it attached in another copy mode than asked. */
int test_attach(const struct softrdma_config *config);
/* From now on process_vm_readv/writev fail with EPERM in this process (seccomp). */
int test_forbid_cma(void);

/* Sends and receives complete into cq; capacities of depth WRs, 4 SGEs, 64 inline bytes. */
struct ibv_qp *test_qp_create(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
			      uint32_t depth);
/*
 * INIT (all access), RTR (GID index 1, MTU 1024) and RTS (TEST_RC_TIMEOUT),
 * RC retrying receiver-not-ready rnr_retry times.
 */
int test_qp_connect(struct ibv_qp *qp, const struct test_address *remote, int rnr_retry);

/* 1: a completion; 0: none within timeout_ms; negative: poll_cq failed. */
int test_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

void test_pattern_fill(void *buffer, size_t length, uint32_t seed);
bool test_pattern_check(const void *buffer, size_t length, uint32_t seed);

/*
 * Attached, with two QPs on the first device connected to each other: A
 * completes into device.cq, B into cq_b. Each has a registered buffer.
 */
struct test_loopback {
	struct softrdma_config config;
	struct test_device device;
	struct ibv_cq *cq_b;
	struct ibv_qp *qp_a;
	struct ibv_qp *qp_b;
	char *buffer_a;
	char *buffer_b;
	size_t size;
	struct ibv_mr *mr_a;
	struct ibv_mr *mr_b;
	struct test_address address_a;
	struct test_address address_b;
};

int test_loopback_open(struct test_loopback *loopback, const struct softrdma_config *config,
		       enum ibv_qp_type type, size_t size, uint32_t depth);
void test_loopback_close(struct test_loopback *loopback);

/* A child running child(argument) and exiting with its result. */
pid_t test_fork(int (*child)(void *argument), void *argument);
/* The child's exit status; -1 if it did not exit normally. */
int test_wait(pid_t pid);

/* Two pipes between a parent and its child; each side reads with a timeout. */
struct test_channel {
	int down[2];            /* parent to child */
	int up[2];              /* child to parent */
};

int test_channel_open(struct test_channel *channel);
void test_channel_close(struct test_channel *channel);
int test_channel_send(struct test_channel *channel, bool parent, const void *data, size_t size);
int test_channel_receive(struct test_channel *channel, bool parent, void *data, size_t size);

#endif /* SOFTRDMA_TEST_H */
