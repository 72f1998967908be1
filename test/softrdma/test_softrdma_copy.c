/*
 * test_softrdma_copy.c: the copy modes. Their names; the mode a process ends
 * up with (the one it asks for, auto, its segment creator's, auto where a
 * seccomp filter forbids cross-memory attach); and what copy mode shm adds:
 * a target that never calls the device while several senders stage RDMA
 * writes and reads to it at once, and a stopped target of a message too
 * large to ride in its completion (RC rides out a short stop and gives up on
 * a long one; UC loses the message, and the receive it took serves the next
 * one).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"
#include "softrdma_test.h"

Test(copy, names_parse_both_ways)
{
	static const enum softrdma_copy_mode modes[] = {
		SOFTRDMA_COPY_AUTO, SOFTRDMA_COPY_CMA, SOFTRDMA_COPY_SHM,
	};
	enum softrdma_copy_mode mode;

	for (size_t index = 0; index < TEST_ARRAY_LENGTH(modes); index++) {
		cr_assert_eq(softrdma_copy_mode_parse(softrdma_copy_mode_name(modes[index]), &mode),
			     0);
		cr_assert_eq(mode, modes[index]);
	}
	cr_assert_str_eq(softrdma_copy_mode_name(SOFTRDMA_COPY_SHM), "shm");
	cr_assert_eq(softrdma_copy_mode_parse("ptrace", &mode), -EINVAL);
	cr_assert_eq(softrdma_copy_mode_parse(NULL, &mode), -EINVAL);
	cr_assert_str_eq(softrdma_copy_mode_name((enum softrdma_copy_mode) 9), "unknown");
}

/* A child's exit status: the mode it attached in, or ATTACH_FAILED + the errno. */
#define ATTACH_FAILED 50

static int attach_and_report_mode(void *argument)
{
	const struct softrdma_config *config = argument;
	int mode, ret = softrdma_attach(config);

	if (ret)
		return ATTACH_FAILED - ret;
	mode = (int) softrdma_copy_mode_current();
	softrdma_detach();
	return mode;
}

static int forbid_cma_attach_and_report_mode(void *argument)
{
	return test_forbid_cma() ? 99 : attach_and_report_mode(argument);
}

static int mode_of(enum softrdma_copy_mode requested, const char *tag)
{
	struct softrdma_config config;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", tag);
	config.copy_mode = requested;
	return attach_and_report_mode(&config);
}

/* Where the tests run may itself forbid cross-memory attach. */
static bool cma_permitted(void)
{
	return softrdma_copy_probe() == 0;
}

Test(copy, a_process_attaches_in_the_mode_it_asks_for)
{
	cr_assert_eq(softrdma_copy_mode_current(), SOFTRDMA_COPY_AUTO, "not attached");
	cr_assert_eq(mode_of(SOFTRDMA_COPY_SHM, "ask-shm"), SOFTRDMA_COPY_SHM);
	cr_assert_eq(mode_of(SOFTRDMA_COPY_AUTO, "ask-auto"),
		     cma_permitted() ? SOFTRDMA_COPY_CMA : SOFTRDMA_COPY_SHM);
	cr_assert_eq(mode_of(SOFTRDMA_COPY_CMA, "ask-cma"),
		     cma_permitted() ? SOFTRDMA_COPY_CMA : ATTACH_FAILED - softrdma_copy_probe());
	cr_assert_eq(mode_of((enum softrdma_copy_mode) 3, "ask-bad"), ATTACH_FAILED + EINVAL);
}

static void check_joiner_follows(enum softrdma_copy_mode creator, enum softrdma_copy_mode asks,
				 const char *tag)
{
	struct softrdma_config config, joiner;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", tag);
	config.copy_mode = creator;
	joiner = config;
	joiner.copy_mode = asks;
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_wait(test_fork(attach_and_report_mode, &joiner)), creator);
	softrdma_detach();
}

Test(copy, a_joiner_follows_the_mode_of_the_segment_creator)
{
	check_joiner_follows(SOFTRDMA_COPY_SHM, SOFTRDMA_COPY_CMA, "follow-shm");
	if (cma_permitted())
		check_joiner_follows(SOFTRDMA_COPY_CMA, SOFTRDMA_COPY_SHM, "follow-cma");
}

Test(copy, auto_moves_data_through_shared_memory_where_cross_memory_attach_is_forbidden)
{
	struct softrdma_config config;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "forbidden");
	cr_assert_eq(test_wait(test_fork(forbid_cma_attach_and_report_mode, &config)),
		     SOFTRDMA_COPY_SHM);
	config.copy_mode = SOFTRDMA_COPY_CMA;
	cr_assert_eq(test_wait(test_fork(forbid_cma_attach_and_report_mode, &config)),
		     ATTACH_FAILED + EPERM);
	if (!cma_permitted())
		return;
	/* Nor may such a process join processes that move data by cross-memory attach. */
	cr_assert_eq(softrdma_attach(&config), 0);
	config.copy_mode = SOFTRDMA_COPY_AUTO;
	cr_assert_eq(test_wait(test_fork(forbid_cma_attach_and_report_mode, &config)),
		     ATTACH_FAILED + EPERM);
	softrdma_detach();
}

/* ---- Several senders, one target that only waits for them ---- */

#define SENDERS 3
#define SHARE ((3u << 20) + 1000) /* each sender's: more than a channel's ring */

struct crowd {
	struct softrdma_config config;
	struct test_channel channels[SENDERS];
};

static struct crowd crowd;

/* Sender `index` writes its share of the target's first half and reads its share of the second. */
static int crowd_exchange(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
			  const struct test_address *target, int index)
{
	struct ibv_wc wc;

	if (test_post_send(qp, IBV_WR_RDMA_WRITE, mr, 0, SHARE, target, (size_t) index * SHARE,
			   0, IBV_SEND_SIGNALED, 1) ||
	    test_post_send(qp, IBV_WR_RDMA_READ, mr, SHARE, SHARE, target,
			   (size_t) (SENDERS + index) * SHARE, 0, IBV_SEND_SIGNALED, 2))
		return 10;
	for (int count = 0; count < 2; count++) {
		if (test_poll(cq, &wc, TEST_TIMEOUT_MS) != 1 || wc.status != IBV_WC_SUCCESS)
			return 11;
	}
	return test_pattern_check((char *) mr->addr + SHARE, SHARE, 20 + (uint32_t) index) ?
	       0 : 12;
}

static int crowd_sender(void *argument)
{
	int index = (int) (intptr_t) argument, ret;
	struct test_channel *channel = &crowd.channels[index];
	struct test_address self, target;
	struct test_device device;
	char *buffer = malloc(2 * SHARE), go;
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	if (!buffer || test_attach(&crowd.config) || test_device_open(&device, 0))
		return 1;
	test_pattern_fill(buffer, SHARE, 10 + (uint32_t) index);
	mr = softrdma_reg_mr(device.pd, buffer, 2 * SHARE, IBV_ACCESS_LOCAL_WRITE);
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_RC, 8);
	if (!mr || !qp || test_address_of(&device, qp, mr, &self) ||
	    test_channel_send(channel, false, &self, sizeof(self)) ||
	    test_channel_receive(channel, false, &target, sizeof(target)) ||
	    test_qp_connect(qp, &target, 7) || test_channel_receive(channel, false, &go, 1))
		return 2;
	ret = crowd_exchange(qp, device.cq, mr, &target, index);
	softrdma_destroy_qp(qp);
	softrdma_dereg_mr(mr);
	test_device_close(&device);
	softrdma_detach();
	free(buffer);
	return ret;
}

Test(copy, senders_stage_to_a_target_that_never_calls_the_device)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	size_t size = 2 * (size_t) SENDERS * SHARE;
	char *buffer = calloc(1, size), go = 1;
	struct test_address self, sender;
	struct ibv_qp *qps[SENDERS];
	struct test_device device;
	pid_t pids[SENDERS];
	struct ibv_mr *mr;

	cr_assert_not_null(buffer);
	test_config_init(&crowd.config, SOFTRDMA_PROFILE_ROCEV2, "single", "crowd");
	crowd.config.copy_mode = SOFTRDMA_COPY_SHM;
	for (int index = 0; index < SENDERS; index++) {
		test_pattern_fill(buffer + (size_t) (SENDERS + index) * SHARE, SHARE,
				  20 + (uint32_t) index);
		cr_assert_eq(test_channel_open(&crowd.channels[index]), 0);
		pids[index] = test_fork(crowd_sender, (void *) (intptr_t) index);
	}
	cr_assert_eq(test_attach(&crowd.config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	mr = softrdma_reg_mr(device.pd, buffer, size, access);
	cr_assert_not_null(mr);
	for (int index = 0; index < SENDERS; index++) {
		struct test_channel *channel = &crowd.channels[index];

		qps[index] = test_qp_create(device.pd, device.cq, IBV_QPT_RC, 8);
		cr_assert_not_null(qps[index]);
		cr_assert_eq(test_address_of(&device, qps[index], mr, &self), 0);
		cr_assert_eq(test_channel_receive(channel, true, &sender, sizeof(sender)), 0);
		cr_assert_eq(test_channel_send(channel, true, &self, sizeof(self)), 0);
		cr_assert_eq(test_qp_connect(qps[index], &sender, 7), 0);
	}
	for (int index = 0; index < SENDERS; index++)
		cr_assert_eq(test_channel_send(&crowd.channels[index], true, &go, 1), 0);
	/* From here only this process's service thread works for it. */
	for (int index = 0; index < SENDERS; index++)
		cr_assert_eq(test_wait(pids[index]), 0, "sender %d", index);
	for (int index = 0; index < SENDERS; index++) {
		cr_assert(test_pattern_check(buffer + (size_t) index * SHARE, SHARE,
					     10 + (uint32_t) index), "share of sender %d", index);
		cr_assert_eq(softrdma_destroy_qp(qps[index]), 0);
		test_channel_close(&crowd.channels[index]);
	}
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	test_device_close(&device);
	softrdma_detach();
	free(buffer);
}

/* ---- A target that is stopped (SIGSTOP) while messages come ---- */

/* What the target got: its first completion. */
struct report {
	int32_t status;
	uint32_t byte_len;
	uint64_t wr_id;
	char first;
};

struct sleeper {
	struct softrdma_config config;
	enum ibv_qp_type type;
	struct test_channel channel;
	pid_t pid;
	struct test_device device;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
};

static struct sleeper sleeper;
static char message[2 * SOFTRDMA_COMPLETION_PAYLOAD];
/* More than a receive completion carries: the data goes through a staging channel. */
#define SLEEPER_MESSAGE_LENGTH (SOFTRDMA_COMPLETION_PAYLOAD + 64)

/* Posts one receive, says it is ready, reports its first completion, waits to be told to go. */
static int sleeper_main(void *argument)
{
	struct test_channel *channel = &sleeper.channel;
	struct report report = { .status = -1 };
	struct test_address self, peer;
	struct test_device device;
	static char buffer[2 * SOFTRDMA_COMPLETION_PAYLOAD];
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	char quit;

	if (test_attach(&sleeper.config) || test_device_open(&device, 0))
		return 1;
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE);
	qp = test_qp_create(device.pd, device.cq, sleeper.type, 8);
	if (!mr || !qp || test_address_of(&device, qp, mr, &self) ||
	    test_channel_send(channel, false, &self, sizeof(self)) ||
	    test_channel_receive(channel, false, &peer, sizeof(peer)) ||
	    test_qp_connect(qp, &peer, 7) ||
	    test_post_recv(qp, mr, 0, SLEEPER_MESSAGE_LENGTH, 1) ||
	    test_channel_send(channel, false, &self, sizeof(self)))
		return 2;
	if (test_poll(device.cq, &wc, TEST_TIMEOUT_MS) == 1)
		report = (struct report) { wc.status, wc.byte_len, wc.wr_id, buffer[0] };
	if (test_channel_send(channel, false, &report, sizeof(report)) ||
	    test_channel_receive(channel, false, &quit, 1))
		return 3;
	softrdma_destroy_qp(qp);
	softrdma_dereg_mr(mr);
	test_device_close(&device);
	softrdma_detach();
	return 0;
}

static void sleeper_open(enum ibv_qp_type type, const char *tag)
{
	struct test_address self, peer;

	test_config_init(&sleeper.config, SOFTRDMA_PROFILE_ROCEV2, "single", tag);
	sleeper.config.copy_mode = SOFTRDMA_COPY_SHM;
	sleeper.type = type;
	cr_assert_eq(test_channel_open(&sleeper.channel), 0);
	sleeper.pid = test_fork(sleeper_main, NULL);
	cr_assert_eq(test_attach(&sleeper.config), 0);
	cr_assert_eq(test_device_open(&sleeper.device, 0), 0);
	sleeper.mr = softrdma_reg_mr(sleeper.device.pd, message, sizeof(message), 0);
	sleeper.qp = test_qp_create(sleeper.device.pd, sleeper.device.cq, type, 8);
	cr_assert_not_null(sleeper.qp);
	cr_assert_eq(test_address_of(&sleeper.device, sleeper.qp, sleeper.mr, &self), 0);
	cr_assert_eq(test_channel_receive(&sleeper.channel, true, &peer, sizeof(peer)), 0);
	cr_assert_eq(test_channel_send(&sleeper.channel, true, &self, sizeof(self)), 0);
	cr_assert_eq(test_qp_connect(sleeper.qp, &peer, 7), 0);
	cr_assert_eq(test_channel_receive(&sleeper.channel, true, &peer, sizeof(peer)), 0);
}

static void sleeper_stop(void)
{
	int status;

	cr_assert_eq(kill(sleeper.pid, SIGSTOP), 0);
	cr_assert_eq(waitpid(sleeper.pid, &status, WUNTRACED), sleeper.pid);
	cr_assert(WIFSTOPPED(status));
}

static void sleeper_continue(void)
{
	cr_assert_eq(kill(sleeper.pid, SIGCONT), 0);
}

static void post_message(char first)
{
	message[0] = first;
	cr_assert_eq(test_post_send(sleeper.qp, IBV_WR_SEND, sleeper.mr, 0, SLEEPER_MESSAGE_LENGTH,
				    NULL, 0, 0, IBV_SEND_SIGNALED, 1), 0);
}

static enum ibv_wc_status message_status(void)
{
	struct ibv_wc wc;

	cr_assert_eq(test_poll(sleeper.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	return wc.status;
}

/* The target received the message starting with `first` in its one receive. */
static void expect_received(char first)
{
	struct report report;

	cr_assert_eq(test_channel_receive(&sleeper.channel, true, &report, sizeof(report)), 0);
	cr_assert_eq(report.status, IBV_WC_SUCCESS, "target: status %d", report.status);
	cr_assert_eq(report.wr_id, 1);
	cr_assert_eq(report.byte_len, SLEEPER_MESSAGE_LENGTH);
	cr_assert_eq(report.first, first, "target got '%c'", report.first);
}

/* killed: the target is still stopped, and is killed; else it is told to finish. */
static void sleeper_close(bool killed)
{
	char quit = 1;

	if (killed)
		cr_assert_eq(kill(sleeper.pid, SIGKILL), 0);
	else
		cr_assert_eq(test_channel_send(&sleeper.channel, true, &quit, 1), 0);
	cr_assert_eq(test_wait(sleeper.pid), killed ? -1 : 0);
	cr_assert_eq(softrdma_destroy_qp(sleeper.qp), 0);
	cr_assert_eq(softrdma_dereg_mr(sleeper.mr), 0);
	test_device_close(&sleeper.device);
	softrdma_detach();
	test_channel_close(&sleeper.channel);
}

Test(copy, uc_loses_a_message_to_a_stopped_target_and_its_receive_takes_the_next)
{
	sleeper_open(IBV_QPT_UC, "stopped-uc");
	sleeper_stop();
	post_message('A');
	cr_assert_eq(message_status(), IBV_WC_SUCCESS, "a UC sender never sees a loss");
	sleeper_continue();
	post_message('B');
	cr_assert_eq(message_status(), IBV_WC_SUCCESS);
	expect_received('B');
	sleeper_close(false);
}

Test(copy, rc_rides_out_a_target_stopped_for_less_than_its_retries)
{
	struct timespec pause = { .tv_sec = 0, .tv_nsec = 30000000 };

	sleeper_open(IBV_QPT_RC, "paused-rc");
	sleeper_stop();
	post_message('C');
	nanosleep(&pause, NULL);
	sleeper_continue();
	cr_assert_eq(message_status(), IBV_WC_SUCCESS);
	expect_received('C');
	sleeper_close(false);
}

Test(copy, rc_gives_up_on_a_target_stopped_past_its_retries)
{
	sleeper_open(IBV_QPT_RC, "stopped-rc");
	sleeper_stop();
	post_message('D');
	cr_assert_eq(message_status(), IBV_WC_RETRY_EXC_ERR);
	sleeper_close(true);
}
