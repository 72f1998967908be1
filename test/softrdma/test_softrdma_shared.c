/*
 * test_softrdma_shared.c: the shared segment: its name, reference-counted
 * attach, the first config winning, invalid configs, many processes racing
 * to create it, replacing a segment whose users all died, reaping a dead
 * process's objects, recovery from a lock holder that died, fork, and the
 * anchor that tells others a process runs.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"
#include "softrdma_test.h"

static struct softrdma_config config;

static bool segment_exists(void)
{
	char name[160];
	int fd;

	cr_assert_eq(softrdma_segment_name(&config, name, sizeof(name)), 0);
	fd = shm_open(name, O_RDONLY, 0);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* The MR limit the device reports to this process. */
static int reported_max_mr(void)
{
	struct test_device device;
	struct ibv_device_attr attr;

	cr_assert_eq(test_device_open(&device, 0), 0);
	cr_assert_eq(softrdma_query_device(device.context, &attr), 0);
	test_device_close(&device);
	return attr.max_mr;
}

Test(shared, segment_name)
{
	char name[160];

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "name");
	snprintf(config.namespace_name, sizeof(config.namespace_name), "../a b/c");
	cr_assert_eq(softrdma_segment_name(&config, name, sizeof(name)), 0);
	cr_assert_eq(strchr(name + 1, '/'), NULL);
	cr_assert_not_null(strstr(name, "-rocev2-.._a_b_c"));
	cr_assert_eq(softrdma_segment_name(&config, name, 10), -EINVAL);
}

Test(shared, attach_is_reference_counted_and_the_last_detach_removes_the_segment)
{
	int count;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "refcount");
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert(segment_exists());
	cr_assert_eq(softrdma_attach(&config), 0);
	softrdma_detach();
	softrdma_free_device_list(softrdma_get_device_list(&count));
	cr_assert_eq(count, 1, "still attached");
	softrdma_detach();
	cr_assert_not(segment_exists());
	softrdma_free_device_list(softrdma_get_device_list(&count));
	cr_assert_eq(count, 0);
}

Test(shared, first_config_wins_within_a_process)
{
	struct softrdma_config second;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "first-local");
	config.max_mr = 3;
	second = config;
	second.max_mr = 50;
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(softrdma_attach(&second), 0);
	cr_assert_eq(reported_max_mr(), 3);
	softrdma_detach();
	softrdma_detach();
}

static int attach_and_report_max_mr(void *argument)
{
	struct softrdma_config *other = argument;
	int max_mr;

	if (softrdma_attach(other))
		return 255;
	max_mr = reported_max_mr();
	softrdma_detach();
	return max_mr;
}

Test(shared, first_config_wins_across_processes)
{
	struct softrdma_config second;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "first-shared");
	config.max_mr = 3;
	second = config;
	second.max_mr = 50;
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_wait(test_fork(attach_and_report_max_mr, &second)), 3);
	softrdma_detach();
}

Test(shared, invalid_configs)
{
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "ring:4", "invalid");
	cr_assert_eq(softrdma_attach(&config), -EINVAL);
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "mesh:9", "invalid");
	cr_assert_eq(softrdma_attach(&config), -EINVAL);
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "invalid");
	config.host = 1;
	cr_assert_eq(softrdma_attach(&config), -EINVAL);
	cr_assert_not(segment_exists(), "a refused attach leaves nothing behind");
	config.host = 0;
	config.drop_ppm = 2000000;
	cr_assert_eq(softrdma_attach(&config), -EINVAL);
	cr_assert_eq(softrdma_attach(NULL), -EINVAL);
}

#define RACERS 8

struct race {
	int go[2];
	struct test_channel channel;
};

static struct race race;

/* Waits for the start, attaches, holds a QP until the parent is done. */
static int racer_main(void *argument)
{
	struct test_device device;
	struct ibv_qp *qp;
	char byte;
	uint32_t qpn;

	close(race.go[1]); /* or the start signal, end of file, never comes */
	if (read(race.go[0], &byte, 1) != 0)
		return 1;
	if (softrdma_attach(&config) || test_device_open(&device, 0))
		return 2;
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_RC, 4);
	if (!qp)
		return 3;
	qpn = qp->qp_num;
	if (test_channel_send(&race.channel, false, &qpn, sizeof(qpn)) ||
	    test_channel_receive(&race.channel, false, &byte, 1))
		return 4;
	softrdma_destroy_qp(qp);
	test_device_close(&device);
	softrdma_detach();
	return 0;
}

Test(shared, processes_racing_to_create_share_one_segment)
{
	pid_t racers[RACERS];
	uint32_t qpns[RACERS];
	struct test_device device;
	char go = 0;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "race");
	config.max_qp = RACERS;
	cr_assert_eq(pipe(race.go), 0);
	cr_assert_eq(test_channel_open(&race.channel), 0);
	for (int index = 0; index < RACERS; index++)
		racers[index] = test_fork(racer_main, NULL);
	close(race.go[1]); /* every racer starts at once */
	for (int index = 0; index < RACERS; index++) {
		cr_assert_eq(test_channel_receive(&race.channel, true, &qpns[index],
						  sizeof(qpns[index])), 0);
		for (int other = 0; other < index; other++)
			cr_assert_neq(qpns[index], qpns[other]);
	}
	/* One segment: the device's 8 QPs are taken. */
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	cr_assert_null(test_qp_create(device.pd, device.cq, IBV_QPT_RC, 4));
	cr_assert_eq(errno, EBUSY);
	for (int index = 0; index < RACERS; index++)
		cr_assert_eq(test_channel_send(&race.channel, true, &go, 1), 0);
	for (int index = 0; index < RACERS; index++)
		cr_assert_eq(test_wait(racers[index]), 0);
	test_device_close(&device);
	softrdma_detach();
	cr_assert_not(segment_exists());
	close(race.go[0]);
	test_channel_close(&race.channel);
}

/* Still reachable when the process holding them dies, for valgrind. */
struct ibv_mr *dead_process_mrs[8];

/* Attaches and dies without detaching, holding n MRs. */
static int die_holding_mrs(void *argument)
{
	static char buffer[64];
	struct test_device device;
	int count = *(int *) argument;

	if (softrdma_attach(&config) || test_device_open(&device, 0))
		return 1;
	for (int index = 0; index < count && index < 8; index++) {
		dead_process_mrs[index] = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
		if (!dead_process_mrs[index])
			return 2;
	}
	kill(getpid(), SIGKILL);
	return 3;
}

/* (Whether the dead process left it behind depends on whether another test attached since.) */
Test(shared, a_segment_whose_users_all_died_is_replaced)
{
	int none = 0;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "stale");
	config.max_mr = 3;
	cr_assert_eq(test_wait(test_fork(die_holding_mrs, &none)), -1);
	config.max_mr = 7;
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(reported_max_mr(), 7);
	softrdma_detach();
}

static int attach_and_detach(void *argument)
{
	if (softrdma_attach(&config))
		return 1;
	softrdma_detach();
	return 0;
}

/*
 * What a dead process held goes back, as the kernel frees it at exit: at
 * the next attach anywhere, or when the device is full and asked for more.
 */
Test(shared, objects_of_a_dead_process_are_reaped)
{
	static char buffer[64];
	struct test_device device;
	struct ibv_mr *mr;
	int limit = 4, less = 3;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "reap");
	config.max_mr = limit;
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	cr_assert_eq(test_wait(test_fork(die_holding_mrs, &less)), -1);
	/* The next attach anywhere reaps what the dead process held. */
	cr_assert_eq(test_wait(test_fork(attach_and_detach, NULL)), 0);
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	/* A full device reaps before it refuses: the dead held every MR. */
	cr_assert_eq(test_wait(test_fork(die_holding_mrs, &limit)), -1);
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
	cr_assert_not_null(mr, "a device full of a dead process's MRs refused");
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	test_device_close(&device);
	softrdma_detach();
}

static int die_holding_the_lock(void *argument)
{
	if (softrdma_attach(&config))
		return 1;
	softrdma_lock(softrdma_process.segment);
	kill(getpid(), SIGKILL);
	return 2;
}

Test(shared, a_lock_holder_that_died_is_recovered_from)
{
	static char buffer[64];
	struct test_device device;
	struct ibv_mr *mr;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "lock");
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	cr_assert_eq(test_wait(test_fork(die_holding_the_lock, NULL)), -1);
	mr = softrdma_reg_mr(device.pd, buffer, sizeof(buffer), 0);
	cr_assert_not_null(mr);
	cr_assert_eq(softrdma_dereg_mr(mr), 0);
	test_device_close(&device);
	softrdma_detach();
}

static int child_of_an_attached_parent(void *argument)
{
	struct test_device device;
	struct ibv_qp *qp;

	if (softrdma_attach(&config) || test_device_open(&device, 0))
		return 1;
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_UC, 4);
	if (!qp)
		return 2;
	softrdma_destroy_qp(qp);
	test_device_close(&device);
	softrdma_detach();
	return 0;
}

Test(shared, a_forked_child_attaches_again)
{
	struct test_device device;
	struct ibv_qp *qp;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "fork");
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_UC, 4);
	cr_assert_not_null(qp);
	cr_assert_eq(test_wait(test_fork(child_of_an_attached_parent, NULL)), 0);
	cr_assert(segment_exists(), "the child's detach leaves the parent's segment");
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	test_device_close(&device);
	softrdma_detach();
	cr_assert_not(segment_exists());
}

static void *attach_in_a_thread(void *argument)
{
	(void) argument;
	return (void *) (intptr_t) softrdma_attach(&config);
}

/* Attaches from a thread that ends, detaches too if argued, says so and waits to be killed. */
static int attach_and_wait(struct test_channel *channel, bool detach)
{
	pthread_t thread;
	void *attached;
	char ready = 1;

	if (pthread_create(&thread, NULL, attach_in_a_thread, NULL) ||
	    pthread_join(thread, &attached) || attached)
		return 1;
	if (detach)
		softrdma_detach();
	if (test_channel_send(channel, false, &ready, 1))
		return 2;
	for (;;)
		pause();
}

static int attach_from_a_thread_and_wait(void *argument)
{
	return attach_and_wait(argument, false);
}

static int attach_detach_and_wait(void *argument)
{
	return attach_and_wait(argument, true);
}

/* A child started with start, once it says it is ready. */
static pid_t start_child(struct test_channel *channel, int (*start)(void *))
{
	char ready;
	pid_t pid;

	cr_assert_eq(test_channel_open(channel), 0);
	pid = test_fork(start, channel);
	cr_assert_eq(test_channel_receive(channel, true, &ready, 1), 0);
	return pid;
}

/* Whether pid's anchor holds, asked as a sender asks: under the segment lock. */
static bool anchor_holds(pid_t pid)
{
	bool holds;

	softrdma_lock(softrdma_process.segment);
	holds = softrdma_anchor_holds_locked(softrdma_process.segment, pid);
	softrdma_unlock(softrdma_process.segment);
	return holds;
}

/*
 * A process's anchor holds while it runs, after the thread that attached it
 * ended too; not once it was killed (a zombie already), nor once it
 * detached: RC senders to it then ask the kernel.
 */
Test(shared, the_anchor_of_a_process_holds_while_it_runs_attached)
{
	struct test_channel channel;
	pid_t pid;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "anchor");
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert(anchor_holds(getpid()));
	pid = start_child(&channel, attach_from_a_thread_and_wait);
	cr_assert(anchor_holds(pid));
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitid(P_PID, (id_t) pid, &(siginfo_t) { 0 }, WEXITED | WNOWAIT), 0);
	cr_assert_not(anchor_holds(pid));
	cr_assert_eq(test_wait(pid), -1);
	test_channel_close(&channel);
	pid = start_child(&channel, attach_detach_and_wait);
	cr_assert_not(anchor_holds(pid));
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(test_wait(pid), -1);
	test_channel_close(&channel);
	softrdma_detach();
}

Test(shared, a_segment_of_another_layout_is_refused)
{
	char name[160];
	int fd;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "layout");
	cr_assert_eq(softrdma_segment_name(&config, name, sizeof(name)), 0);
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	close(fd);
	cr_assert_eq(softrdma_attach(&config), -EPROTO);
	shm_unlink(name);
}
