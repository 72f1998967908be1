/*
 * test_softrdma_pair.c: two processes exchanging data through the device by
 * every operation the profile offers, and data integrity over sizes from
 * 1 byte to 16 MiB at several alignments. The parent initiates; a forked
 * child is the target, driven by commands over a pipe.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma_test.h"

#define PAIR_BUFFER_SIZE ((16u << 20) + 8192)

enum command_kind {
	COMMAND_RECEIVE,        /* post a receive at offset, of length */
	COMMAND_EXPECT,         /* poll a receive completion; check it and the data */
	COMMAND_VERIFY,         /* check the pattern at offset */
	COMMAND_FILL,           /* write the pattern at offset */
	COMMAND_QUIT,
};

struct command {
	uint32_t kind;
	uint32_t opcode;        /* COMMAND_EXPECT: the completion's opcode */
	uint64_t offset;
	uint64_t length;
	uint32_t seed;
	uint32_t imm;
};

/* What both processes share before the fork. */
struct pair {
	struct softrdma_config config;
	enum ibv_qp_type type;
	struct test_channel channel;
};

static int side_open(struct test_side *side, struct pair *pair, bool parent)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int ret;

	memset(side, 0, sizeof(*side));
	ret = test_attach(&pair->config);
	if (!ret)
		ret = test_device_open(&side->device, 0);
	if (ret)
		return ret;
	side->buffer = calloc(1, PAIR_BUFFER_SIZE);
	side->mr = softrdma_reg_mr(side->device.pd, side->buffer, PAIR_BUFFER_SIZE, access);
	side->qp = test_qp_create(side->device.pd, side->device.cq, pair->type, 32);
	if (!side->mr || !side->qp)
		return ENOMEM;
	ret = test_address_of(&side->device, side->qp, side->mr, &side->self);
	if (!ret)
		ret = test_channel_send(&pair->channel, parent, &side->self, sizeof(side->self));
	if (!ret)
		ret = test_channel_receive(&pair->channel, parent, &side->peer, sizeof(side->peer));
	if (!ret)
		ret = test_qp_connect(side->qp, &side->peer, 7);
	/* Neither side sends before the other is ready to receive (RTR). */
	if (!ret)
		ret = test_channel_send(&pair->channel, parent, &side->self, sizeof(side->self));
	if (!ret)
		ret = test_channel_receive(&pair->channel, parent, &side->peer, sizeof(side->peer));
	return ret;
}

/* Distinct codes, so a failed child says what failed. */
static uint32_t target_expect(struct test_side *side, const struct command *command)
{
	struct ibv_wc wc;

	if (test_poll(side->device.cq, &wc, TEST_TIMEOUT_MS) != 1)
		return 10;
	if (wc.status != IBV_WC_SUCCESS)
		return 11;
	if (wc.opcode != command->opcode || wc.byte_len != command->length)
		return 12;
	if (command->imm && (wc.imm_data != command->imm || !(wc.wc_flags & IBV_WC_WITH_IMM)))
		return 13;
	if (wc.opcode == IBV_WC_RECV &&
	    !test_pattern_check(side->buffer + command->offset, command->length, command->seed))
		return 14;
	return 0;
}

static uint32_t target_execute(struct test_side *side, const struct command *command)
{
	switch (command->kind) {
	case COMMAND_RECEIVE:
		return (uint32_t) test_post_recv(side->qp, side->mr, command->offset,
						 command->length, 1);
	case COMMAND_EXPECT:
		return target_expect(side, command);
	case COMMAND_VERIFY:
		return test_pattern_check(side->buffer + command->offset, command->length,
					  command->seed) ? 0 : 20;
	case COMMAND_FILL:
		test_pattern_fill(side->buffer + command->offset, command->length, command->seed);
		return 0;
	default:
		return 0;
	}
}

static int target_main(void *argument)
{
	struct pair *pair = argument;
	struct command command;
	struct test_side side;
	int ret = side_open(&side, pair, false);

	while (!ret) {
		uint32_t reply;

		if (test_channel_receive(&pair->channel, false, &command, sizeof(command)))
			return 2;
		if (command.kind == COMMAND_QUIT)
			break;
		reply = target_execute(&side, &command);
		if (test_channel_send(&pair->channel, false, &reply, sizeof(reply)))
			return 3;
	}
	test_side_close(&side);
	return ret ? 1 : 0;
}

static struct pair pair;
static struct test_side initiator;
static pid_t target;

static void pair_open(enum softrdma_profile profile, enum ibv_qp_type type, const char *tag)
{
	test_config_init(&pair.config, profile, "single", tag);
	pair.type = type;
	cr_assert_eq(test_channel_open(&pair.channel), 0);
	target = test_fork(target_main, &pair);
	cr_assert_gt(target, 0);
	cr_assert_eq(side_open(&initiator, &pair, true), 0);
}

static void pair_close(void)
{
	struct command quit = { .kind = COMMAND_QUIT };

	cr_assert_eq(test_channel_send(&pair.channel, true, &quit, sizeof(quit)), 0);
	cr_assert_eq(test_wait(target), 0);
	test_side_close(&initiator);
	test_channel_close(&pair.channel);
	test_segment_remove(&pair.config);
}

static void command(uint32_t kind, uint32_t opcode, uint64_t offset, uint64_t length,
		    uint32_t seed, uint32_t imm)
{
	struct command message = { kind, opcode, offset, length, seed, imm };
	uint32_t reply;

	cr_assert_eq(test_channel_send(&pair.channel, true, &message, sizeof(message)), 0);
	cr_assert_eq(test_channel_receive(&pair.channel, true, &reply, sizeof(reply)), 0);
	cr_assert_eq(reply, 0, "target: command %u failed with %u (length %llu)", kind, reply,
		     (unsigned long long) length);
}

static void initiator_complete(enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;

	cr_assert_eq(test_poll(initiator.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, opcode);
}

/* One operation of length bytes from initiator offset local to target offset remote. */
static void exchange(enum ibv_wr_opcode opcode, size_t length, size_t local, size_t remote,
		     uint32_t seed)
{
	uint32_t imm = htonl(seed | 1);

	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		test_pattern_fill(initiator.buffer + local, length, seed);
		command(COMMAND_RECEIVE, 0, remote, length, 0, 0);
		cr_assert_eq(test_post_send(initiator.qp, opcode, initiator.mr, local, length, NULL,
					    0, imm, IBV_SEND_SIGNALED, 1), 0);
		initiator_complete(IBV_WC_SEND);
		command(COMMAND_EXPECT, IBV_WC_RECV, remote, length, seed,
			opcode == IBV_WR_SEND_WITH_IMM ? imm : 0);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		test_pattern_fill(initiator.buffer + local, length, seed);
		if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			command(COMMAND_RECEIVE, 0, 0, 0, 0, 0);
		cr_assert_eq(test_post_send(initiator.qp, opcode, initiator.mr, local, length,
					    &initiator.peer, remote, imm, IBV_SEND_SIGNALED, 1), 0);
		initiator_complete(IBV_WC_RDMA_WRITE);
		if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			command(COMMAND_EXPECT, IBV_WC_RECV_RDMA_WITH_IMM, remote, length, seed, imm);
		command(COMMAND_VERIFY, 0, remote, length, seed, 0);
		break;
	case IBV_WR_RDMA_READ:
		command(COMMAND_FILL, 0, remote, length, seed, 0);
		cr_assert_eq(test_post_send(initiator.qp, opcode, initiator.mr, local, length,
					    &initiator.peer, remote, 0, IBV_SEND_SIGNALED, 1), 0);
		initiator_complete(IBV_WC_RDMA_READ);
		cr_assert(test_pattern_check(initiator.buffer + local, length, seed),
			  "read of %zu bytes", length);
		break;
	default:
		cr_assert_fail("opcode %d", opcode);
	}
}

static const enum ibv_wr_opcode all_opcodes[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
	IBV_WR_RDMA_READ,
};

static void exchange_every_operation(int opcode_count)
{
	static const size_t lengths[] = { 8, 1000, 4096, 100000 };

	for (int opcode = 0; opcode < opcode_count; opcode++) {
		for (size_t index = 0; index < TEST_ARRAY_LENGTH(lengths); index++)
			exchange(all_opcodes[opcode], lengths[index], 0, 0,
				 (uint32_t) (opcode * 100 + (int) index));
	}
}

Test(pair, thunderbolt_uc_every_operation)
{
	pair_open(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "pair-tb");
	exchange_every_operation(4);
	pair_close();
}

Test(pair, rocev2_rc_every_operation)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "pair-rc");
	exchange_every_operation(5);
	pair_close();
}

Test(pair, rocev2_uc_every_operation)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "pair-uc");
	exchange_every_operation(4);
	pair_close();
}

static const size_t integrity_lengths[] = {
	1, 3, 64, 1000, 4095, 4096, 4097, 65543, 1u << 20, (4u << 20) + 1, 16u << 20,
};

static const size_t integrity_offsets[][2] = { { 0, 0 }, { 1, 3 }, { 7, 4093 } };

static void integrity(enum ibv_wr_opcode opcode)
{
	uint32_t seed = 1;

	for (size_t length = 0; length < TEST_ARRAY_LENGTH(integrity_lengths); length++) {
		for (size_t offset = 0; offset < TEST_ARRAY_LENGTH(integrity_offsets); offset++)
			exchange(opcode, integrity_lengths[length], integrity_offsets[offset][0],
				 integrity_offsets[offset][1], seed++);
	}
}

Test(integrity, send)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "integrity-send");
	integrity(IBV_WR_SEND);
	pair_close();
}

Test(integrity, send_with_imm_thunderbolt)
{
	pair_open(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "integrity-send-imm");
	integrity(IBV_WR_SEND_WITH_IMM);
	pair_close();
}

Test(integrity, write)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "integrity-write");
	integrity(IBV_WR_RDMA_WRITE);
	pair_close();
}

Test(integrity, write_with_imm)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "integrity-write-imm");
	integrity(IBV_WR_RDMA_WRITE_WITH_IMM);
	pair_close();
}

Test(integrity, read)
{
	pair_open(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "integrity-read");
	integrity(IBV_WR_RDMA_READ);
	pair_close();
}
