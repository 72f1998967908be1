/*
 * softrdma_test.c: the helpers declared in softrdma_test.h.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "softrdma_test.h"

/* The namespaces this test process made, removed at its exit even if a test failed. */
#define TEST_CONFIGS_REMEMBERED 8

static struct softrdma_config test_configs[TEST_CONFIGS_REMEMBERED];
static int test_config_count;
static pid_t test_config_owner;

/* FI_BOLT_SOFT_COPY, as the provider reads it: the shm test programs set it to shm. */
static enum softrdma_copy_mode test_copy_mode(void)
{
	const char *name = getenv("FI_BOLT_SOFT_COPY");
	enum softrdma_copy_mode mode = SOFTRDMA_COPY_AUTO;

	if (name && softrdma_copy_mode_parse(name, &mode)) {
		fprintf(stderr, "FI_BOLT_SOFT_COPY=%s is not auto, cma or shm\n", name);
		abort();
	}
	return mode;
}

void test_config_init(struct softrdma_config *config, enum softrdma_profile profile,
		      const char *topology, const char *tag)
{
	memset(config, 0, sizeof(*config));
	config->profile = profile;
	config->copy_mode = test_copy_mode();
	snprintf(config->topology, sizeof(config->topology), "%s", topology);
	snprintf(config->namespace_name, sizeof(config->namespace_name), "test-%s-%d", tag,
		 (int) getpid());
	test_config_owner = getpid();
	if (test_config_count < TEST_CONFIGS_REMEMBERED)
		test_configs[test_config_count++] = *config;
}

__attribute__((destructor)) static void test_configs_remove(void)
{
	if (test_config_owner != getpid())
		return;
	for (int index = 0; index < test_config_count; index++)
		test_segment_remove(&test_configs[index]);
}

void test_segment_remove(const struct softrdma_config *config)
{
	char name[160];

	if (!softrdma_segment_name(config, name, sizeof(name)))
		shm_unlink(name);
}

int test_attach(const struct softrdma_config *config)
{
	int ret = -softrdma_attach(config);

	if (ret || config->copy_mode == SOFTRDMA_COPY_AUTO ||
	    softrdma_copy_mode_current() == config->copy_mode)
		return ret;
	softrdma_detach();
	return EPROTO;
}

int test_forbid_cma(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog program = {
		.len = (unsigned short) TEST_ARRAY_LENGTH(filter),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0))
		return errno;
	return 0;
}

struct ibv_qp *test_qp_create(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
			      uint32_t depth)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = depth,
			.max_send_sge = 4,
			.max_recv_sge = 4,
			.max_inline_data = 64,
		},
		.qp_type = type,
	};

	return softrdma_create_qp(pd, &attr);
}

int test_qp_connect(struct ibv_qp *qp, const struct test_address *remote, int rnr_retry)
{
	int ret = test_qp_init(qp, TEST_ACCESS_ALL);

	if (!ret)
		ret = test_qp_rtr(qp, remote, TEST_GID_INDEX, IBV_MTU_1024);
	if (!ret)
		ret = test_qp_rts(qp, TEST_RC_TIMEOUT, rnr_retry);
	return ret;
}

static int test_loopback_objects(struct test_loopback *loopback, enum ibv_qp_type type,
				 uint32_t depth)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct test_device *device = &loopback->device;

	loopback->cq_b = softrdma_create_cq(device->context, 1024, NULL, NULL, 0);
	if (!loopback->cq_b)
		return ENOMEM;
	loopback->qp_a = test_qp_create(device->pd, device->cq, type, depth);
	loopback->qp_b = test_qp_create(device->pd, loopback->cq_b, type, depth);
	if (!loopback->qp_a || !loopback->qp_b)
		return errno;
	loopback->buffer_a = calloc(1, loopback->size);
	loopback->buffer_b = calloc(1, loopback->size);
	if (!loopback->qp_b || !loopback->buffer_a || !loopback->buffer_b)
		return ENOMEM;
	loopback->mr_a = softrdma_reg_mr(loopback->device.pd, loopback->buffer_a, loopback->size,
					 access);
	loopback->mr_b = softrdma_reg_mr(loopback->device.pd, loopback->buffer_b, loopback->size,
					 access);
	return loopback->mr_a && loopback->mr_b ? 0 : ENOMEM;
}

int test_loopback_open(struct test_loopback *loopback, const struct softrdma_config *config,
		       enum ibv_qp_type type, size_t size, uint32_t depth)
{
	int ret;

	memset(loopback, 0, sizeof(*loopback));
	loopback->config = *config;
	loopback->size = size;
	ret = test_attach(config);
	if (ret)
		return ret;
	ret = test_device_open(&loopback->device, 0);
	if (!ret)
		ret = test_loopback_objects(loopback, type, depth);
	if (!ret)
		ret = test_address_of(&loopback->device, loopback->qp_a, loopback->mr_a,
				      &loopback->address_a);
	if (!ret)
		ret = test_address_of(&loopback->device, loopback->qp_b, loopback->mr_b,
				      &loopback->address_b);
	if (!ret)
		ret = test_qp_connect(loopback->qp_a, &loopback->address_b, 7);
	if (!ret)
		ret = test_qp_connect(loopback->qp_b, &loopback->address_a, 7);
	if (ret)
		test_loopback_close(loopback);
	return ret;
}

void test_loopback_close(struct test_loopback *loopback)
{
	if (loopback->mr_a)
		softrdma_dereg_mr(loopback->mr_a);
	if (loopback->mr_b)
		softrdma_dereg_mr(loopback->mr_b);
	if (loopback->qp_a)
		softrdma_destroy_qp(loopback->qp_a);
	if (loopback->qp_b)
		softrdma_destroy_qp(loopback->qp_b);
	if (loopback->cq_b)
		softrdma_destroy_cq(loopback->cq_b);
	test_device_close(&loopback->device);
	free(loopback->buffer_a);
	free(loopback->buffer_b);
	softrdma_detach();
	test_segment_remove(&loopback->config);
	memset(loopback, 0, sizeof(*loopback));
}

int test_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t deadline = test_now_ns() + (uint64_t) timeout_ms * 1000000;

	do {
		int ret = softrdma_poll_cq(cq, 1, wc);

		if (ret)
			return ret;
		sched_yield();
	} while (test_now_ns() < deadline);
	return 0;
}

static uint8_t test_pattern_byte(size_t position, uint32_t seed)
{
	uint32_t value = (uint32_t) position * 2654435761u + seed * 40503u;

	return (uint8_t) (value >> 24 ^ value >> 11 ^ value);
}

void test_pattern_fill(void *buffer, size_t length, uint32_t seed)
{
	uint8_t *bytes = buffer;

	for (size_t position = 0; position < length; position++)
		bytes[position] = test_pattern_byte(position, seed);
}

bool test_pattern_check(const void *buffer, size_t length, uint32_t seed)
{
	const uint8_t *bytes = buffer;

	for (size_t position = 0; position < length; position++) {
		if (bytes[position] != test_pattern_byte(position, seed))
			return false;
	}
	return true;
}

pid_t test_fork(int (*child)(void *argument), void *argument)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(child(argument));
	return pid;
}

int test_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int test_channel_open(struct test_channel *channel)
{
	if (pipe(channel->down))
		return errno;
	if (pipe(channel->up)) {
		close(channel->down[0]);
		close(channel->down[1]);
		return errno;
	}
	return 0;
}

void test_channel_close(struct test_channel *channel)
{
	close(channel->down[0]);
	close(channel->down[1]);
	close(channel->up[0]);
	close(channel->up[1]);
}

int test_channel_send(struct test_channel *channel, bool parent, const void *data, size_t size)
{
	return test_write_all(parent ? channel->down[1] : channel->up[1], data, size);
}

int test_channel_receive(struct test_channel *channel, bool parent, void *data, size_t size)
{
	return test_read_all(parent ? channel->up[0] : channel->down[0], data, size,
			     TEST_TIMEOUT_MS);
}
