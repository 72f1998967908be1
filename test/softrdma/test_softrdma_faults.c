/*
 * test_softrdma_faults.c: injected faults: UC packet drops (every Nth, or a
 * seeded rate, the same losses every run), RC unaffected by drops, a cut
 * cable and a port down (with the port's asynchronous events), the fault
 * plan that applies them at given times (and loses RC acknowledgements),
 * and a peer process that dies, for UC and RC.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "softrdma_test.h"

#define MESSAGES 40
#define SLOT 4096

static struct test_loopback loopback;

static void open_loopback(enum softrdma_profile profile, enum ibv_qp_type type, const char *tag,
			  int drop_every, int drop_ppm, unsigned int seed)
{
	struct softrdma_config config;

	test_config_init(&config, profile, "single", tag);
	config.drop_every = drop_every;
	config.drop_ppm = drop_ppm;
	config.seed = seed;
	cr_assert_eq(test_loopback_open(&loopback, &config, type, (MESSAGES + 1) * SLOT, 63), 0);
}

/*
 * Sends MESSAGES messages of length bytes, each numbered in its first byte,
 * with a receive posted for each; marks which arrived.
 */
static int exchange_messages(size_t length, bool arrived[MESSAGES])
{
	struct ibv_wc wc;
	int count = 0;

	memset(arrived, 0, MESSAGES * sizeof(bool));
	for (int index = 0; index < MESSAGES; index++) {
		cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, (size_t) index * SLOT,
					    length, (uint64_t) index), 0);
		loopback.buffer_a[(size_t) index * SLOT] = (char) index;
		cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a,
					    (size_t) index * SLOT, length, NULL, 0, 0,
					    IBV_SEND_SIGNALED, (uint64_t) index), 0);
		cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "a UC sender never sees a loss");
	}
	while (test_poll(loopback.cq_b, &wc, 20) == 1) {
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		arrived[(unsigned char) loopback.buffer_b[wc.wr_id * SLOT]] = true;
		count++;
	}
	return count;
}

static bool packets_hit_multiple(int message, int packets_per_message, int every)
{
	for (int packet = message * packets_per_message + 1;
	     packet <= (message + 1) * packets_per_message; packet++) {
		if (packet % every == 0)
			return true;
	}
	return false;
}

static void check_drop_every(size_t length, int packets_per_message, int every)
{
	bool arrived[MESSAGES];

	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "drop-every", every, 0, 1);
	exchange_messages(length, arrived);
	for (int message = 0; message < MESSAGES; message++)
		cr_assert_eq(arrived[message],
			     !packets_hit_multiple(message, packets_per_message, every),
			     "message %d", message);
	test_loopback_close(&loopback);
}

Test(faults, drop_every_third_single_packet_message)
{
	check_drop_every(8, 1, 3);
}

Test(faults, a_message_is_lost_if_any_of_its_packets_is)
{
	/* 3000 bytes at the path MTU of 1024: three packets each. */
	check_drop_every(3000, 3, 4);
}

static void run_with_rate(const char *tag, unsigned int seed, bool arrived[MESSAGES])
{
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, tag, 0, 300000, seed);
	exchange_messages(8, arrived);
	test_loopback_close(&loopback);
}

Test(faults, seeded_rate_gives_the_same_losses_every_run)
{
	bool first[MESSAGES], second[MESSAGES], again[MESSAGES], other[MESSAGES];
	int lost = 0;

	run_with_rate("rate-1", 42, first);
	run_with_rate("rate-2", 42, second);
	cr_assert_eq(memcmp(first, second, sizeof(first)), 0);
	for (int message = 0; message < MESSAGES; message++)
		lost += !first[message];
	cr_assert(lost > 0 && lost < MESSAGES, "%d of %d lost at 30%%", lost, MESSAGES);
	/* Resetting the generator at run time replays the same losses. */
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "rate-3", 0, 0, 0);
	cr_assert_eq(softrdma_fault_drop(0, 300000, 42), 0);
	exchange_messages(8, again);
	cr_assert_eq(memcmp(first, again, sizeof(first)), 0);
	cr_assert_eq(softrdma_fault_drop(0, 300000, 43), 0);
	exchange_messages(8, other);
	cr_assert_neq(memcmp(first, other, sizeof(first)), 0);
	cr_assert_eq(softrdma_fault_drop(-1, 0, 0), -EINVAL);
	test_loopback_close(&loopback);
}

Test(faults, rc_never_loses_data_to_drops)
{
	bool arrived[MESSAGES];

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "drop-rc", 1, 0, 0);
	cr_assert_eq(exchange_messages(8, arrived), MESSAGES);
	test_loopback_close(&loopback);
}

static enum ibv_port_state port_state(void)
{
	struct ibv_port_attr attr;

	cr_assert_eq(softrdma_query_port(loopback.device.context, 1, &attr), 0);
	return attr.state;
}

/* The context's next async event's type, or -1 if none is waiting. */
static int next_event(void)
{
	struct ibv_async_event event;
	int ret = softrdma_get_async_event(loopback.device.context, &event);

	if (ret == EAGAIN)
		return -1;
	cr_assert_eq(ret, 0);
	cr_assert_eq(event.element.port_num, 1);
	softrdma_ack_async_event(&event);
	return (int) event.event_type;
}

/* With the link broken by fault(true): UC loses silently, RC fails; fault(false) heals it. */
static void check_broken_link(enum ibv_qp_type type, int (*fault)(int, int, bool))
{
	struct ibv_wc wc;

	cr_assert_eq(port_state(), IBV_PORT_ACTIVE);
	cr_assert_eq(next_event(), -1, "no event before the port changes");
	cr_assert_eq(fault(0, 0, true), 0);
	cr_assert_eq(port_state(), IBV_PORT_DOWN);
	cr_assert_eq(next_event(), IBV_EVENT_PORT_ERR);
	cr_assert_eq(next_event(), -1, "one event per change");
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, type == IBV_QPT_RC ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS,
		     "%s", softrdma_wc_status_str(wc.status));
	cr_assert_eq(test_poll(loopback.cq_b, &wc, 20), 0);
	cr_assert_eq(fault(0, 0, false), 0);
	cr_assert_eq(port_state(), IBV_PORT_ACTIVE);
	cr_assert_eq(next_event(), IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(next_event(), -1);
	if (type == IBV_QPT_UC) {
		cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL,
					    0, 0, 0, 2), 0);
		cr_assert_eq(test_poll(loopback.cq_b, &wc, TEST_TIMEOUT_MS), 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	}
}

Test(faults, cut_link_uc)
{
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "cut-uc", 0, 0, 0);
	check_broken_link(IBV_QPT_UC, softrdma_fault_cut_link);
	test_loopback_close(&loopback);
}

Test(faults, cut_link_rc)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "cut-rc", 0, 0, 0);
	check_broken_link(IBV_QPT_RC, softrdma_fault_cut_link);
	test_loopback_close(&loopback);
}

Test(faults, port_down_uc)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "down-uc", 0, 0, 0);
	check_broken_link(IBV_QPT_UC, softrdma_fault_port_down);
	test_loopback_close(&loopback);
}

Test(faults, port_down_rc)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "down-rc", 0, 0, 0);
	check_broken_link(IBV_QPT_RC, softrdma_fault_port_down);
	test_loopback_close(&loopback);
}

/* A port that went down and up between two looks still shows both changes, in order. */
Test(faults, port_down_and_up_gives_both_events)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "down-up", 0, 0, 0);
	cr_assert_eq(softrdma_fault_port_down(0, 0, true), 0);
	cr_assert_eq(softrdma_fault_port_down(0, 0, true), 0);
	cr_assert_eq(softrdma_fault_port_down(0, 0, false), 0);
	cr_assert_eq(next_event(), IBV_EVENT_PORT_ERR);
	cr_assert_eq(next_event(), IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(next_event(), -1, "taking a port down twice is one change");
	test_loopback_close(&loopback);
}

/*
 * A fault plan cuts the cable at once and restores it later, while the
 * process only polls: the port goes down, then comes back, with its events.
 */
Test(faults, plan_cuts_and_restores)
{
	struct softrdma_config config;
	struct ibv_wc wc;
	int polls = 0;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "plan");
	snprintf(config.fault_plan, sizeof(config.fault_plan),
		 " at 150ms restore cable 0 ;at 0ms cut cable 0");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 2 * SLOT, 63), 0);
	test_poll(loopback.cq_b, &wc, 1);
	cr_assert_eq(next_event(), IBV_EVENT_PORT_ERR, "the first event is due at once");
	cr_assert_eq(port_state(), IBV_PORT_DOWN);
	/* The restore is due 150 ms after the start: poll until it comes (not a timing check). */
	while (next_event() == -1 && polls++ < TEST_TIMEOUT_MS)
		test_poll(loopback.cq_b, &wc, 1);
	cr_assert_eq(port_state(), IBV_PORT_ACTIVE, "the restore never came");
	test_loopback_close(&loopback);
}

/*
 * A cable that loses acknowledgements (from the plan, at once) carries an RC
 * message to its target, which takes it once, while the sender retries and
 * fails it: the ambiguity a sender must resolve. The port stays up.
 */
Test(faults, plan_loses_acknowledgements)
{
	struct softrdma_config config;
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "plan-acks");
	snprintf(config.fault_plan, sizeof(config.fault_plan), "at 0ms acks 0 lost; at 3600s acks 0 kept");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, 2 * SLOT, 63), 0);
	/* A verbs call applies what the plan has due. */
	cr_assert_eq(test_poll(loopback.cq_b, &wc, 1), 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, SLOT, 64, 2), 0);
	memcpy(loopback.buffer_a, "arrived", 8);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", softrdma_wc_status_str(wc.status));
	cr_assert_eq(test_poll(loopback.cq_b, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_str_eq(loopback.buffer_b, "arrived");
	cr_assert_eq(test_poll(loopback.cq_b, &wc, 20), 0, "the retries delivered it again");
	cr_assert_eq(port_state(), IBV_PORT_ACTIVE);
	cr_assert_eq(next_event(), -1, "the port never changed");
	test_loopback_close(&loopback);
}

/* Plans that do not parse, or name a device the topology lacks, fail the attach. */
Test(faults, plan_refused)
{
	static const char *const plans[] = {
		"at 10ms cut cable 1",          /* single: one device */
		"at 10 cut cable 0",            /* no unit */
		"at 10ms cut port 0",
		"at 10ms port 0 sideways",
		"at 10ms cut cable 0 at 20ms restore cable 0",
		"at 10ms cut cable 1.0",        /* no host 1 */
		"at 10ms acks 0 gone",
		"at 10ms acks lost 0",
	};
	struct softrdma_config config;

	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
		test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "plan-bad");
		snprintf(config.fault_plan, sizeof(config.fault_plan), "%s", plans[i]);
		cr_expect_eq(softrdma_attach(&config), -EINVAL, "plan \"%s\"", plans[i]);
	}
	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "mesh:2x2", "plan-good");
	snprintf(config.fault_plan, sizeof(config.fault_plan),
		 "at 1s port 1.1 down; at 2s port 1.1 up; at 3s acks 1.0 lost; at 4s acks 1.0 kept");
	cr_assert_eq(softrdma_attach(&config), 0);
	softrdma_detach();
}

Test(faults, unknown_device)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "unknown", 0, 0, 0);
	cr_assert_eq(softrdma_fault_cut_link(1, 0, true), -EINVAL);
	cr_assert_eq(softrdma_fault_port_down(0, 1, true), -EINVAL);
	test_loopback_close(&loopback);
}

/*
 * A peer that connects its QP to the parent's, posts two receives (the
 * message after its death finds one: no receiver-not-ready retry finds the
 * death first), says so, and waits to be killed.
 */
struct peer {
	struct softrdma_config config;
	enum ibv_qp_type type;
	struct test_channel channel;
};

static int peer_main(void *argument)
{
	struct peer *peer = argument;
	struct test_address self, parent;
	struct test_device device;
	static char buffer[4096];
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	if (softrdma_attach(&peer->config) || test_device_open(&device, 0))
		return 1;
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE);
	qp = test_qp_create(device.pd, device.cq, peer->type, 8);
	if (!mr || !qp || test_address_of(&device, qp, mr, &self) ||
	    test_channel_send(&peer->channel, false, &self, sizeof(self)) ||
	    test_channel_receive(&peer->channel, false, &parent, sizeof(parent)) ||
	    test_qp_connect(qp, &parent, 7) || test_post_recv(qp, mr, 0, 64, 1) ||
	    test_post_recv(qp, mr, 64, 64, 2) ||
	    test_channel_send(&peer->channel, false, &self, sizeof(self)))
		return 2;
	for (;;)
		pause();
}

/* reaped: the parent waits for the peer before sending; else the peer is a zombie. */
/* length 0 moves no bytes, so no copy finds the target gone: the route must. */
static void check_dead_peer(enum ibv_qp_type type, const char *tag, bool reaped, uint32_t length)
{
	struct test_device device;
	struct test_address self, child;
	static char buffer[4096];
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct peer peer = { .type = type };
	pid_t pid;

	test_config_init(&peer.config, SOFTRDMA_PROFILE_ROCEV2, "single", tag);
	cr_assert_eq(test_channel_open(&peer.channel), 0);
	pid = test_fork(peer_main, &peer);
	cr_assert_eq(test_attach(&peer.config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE);
	qp = test_qp_create(device.pd, device.cq, type, 8);
	cr_assert_eq(test_address_of(&device, qp, mr, &self), 0);
	cr_assert_eq(test_channel_receive(&peer.channel, true, &child, sizeof(child)), 0);
	cr_assert_eq(test_channel_send(&peer.channel, true, &self, sizeof(self)), 0);
	cr_assert_eq(test_qp_connect(qp, &child, 7), 0);
	cr_assert_eq(test_channel_receive(&peer.channel, true, &child, sizeof(child)), 0);
	/* Alive: the first SEND arrives. */
	cr_assert_eq(test_post_send(qp, IBV_WR_SEND, mr, 0, 64, NULL, 0, 0, IBV_SEND_SIGNALED, 1),
		     0);
	cr_assert_eq(test_poll(device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	kill(pid, SIGKILL);
	if (reaped)
		cr_assert_eq(test_wait(pid), -1);
	else
		cr_assert_eq(waitid(P_PID, (id_t) pid, &(siginfo_t) { 0 }, WEXITED | WNOWAIT), 0);
	cr_assert_eq(test_post_send(qp, IBV_WR_SEND, mr, 0, length, NULL, 0, 0, IBV_SEND_SIGNALED,
				    2), 0);
	cr_assert_eq(test_poll(device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, type == IBV_QPT_RC ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS,
		     "%s", softrdma_wc_status_str(wc.status));
	if (!reaped)
		cr_assert_eq(test_wait(pid), -1);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	test_device_close(&device);
	softrdma_detach();
	test_channel_close(&peer.channel);
	test_segment_remove(&peer.config);
}

Test(faults, killed_peer_uc_sees_nothing)
{
	check_dead_peer(IBV_QPT_UC, "dead-uc", true, 64);
}

Test(faults, killed_peer_rc_retry_exceeded)
{
	check_dead_peer(IBV_QPT_RC, "dead-rc", true, 64);
}

Test(faults, killed_peer_not_yet_reaped_rc_retry_exceeded)
{
	check_dead_peer(IBV_QPT_RC, "zombie-rc", false, 64);
}

Test(faults, killed_peer_rc_empty_message_retry_exceeded)
{
	check_dead_peer(IBV_QPT_RC, "dead-rc-empty", true, 0);
}
