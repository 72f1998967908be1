/*
 * softrdma_member.c: one process of a job on the software device, for the
 * segment tests (test_softrdma_segment.c): "softrdma_member PROFILE NAMESPACE
 * END" attaches, opens the first device and makes a QP and an MR, writes one
 * byte to its standard output, waits for its standard input to close, then
 * ends as END says: close (destroys its objects and detaches), exit (returns
 * from main holding them, as many applications and aborting MPI ranks do) or
 * kill (dies by SIGKILL). END attach stops after attaching, with
 * FI_LOG_LEVEL's lines on standard error. Exit status: 0, or the errno of
 * what failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "bolt_fixture.h"
#include "softrdma_test.h"

/* Reachable after main returns: a member that exits holding its objects leaks nothing. */
static struct test_side member_side;

static int member_objects(struct test_side *side)
{
	static char buffer[4096];
	int ret = test_device_open(&side->device, 0);

	if (ret)
		return ret;
	side->qp = test_qp_create(side->device.pd, side->device.cq, IBV_QPT_UC, 4);
	if (!side->qp)
		return errno;
	side->mr = softrdma_reg_mr(side->device.pd, buffer, sizeof(buffer), TEST_ACCESS_ALL);
	return side->mr ? 0 : errno;
}

int main(int argc, char **argv)
{
	struct softrdma_config config;
	enum softrdma_profile profile;
	const char *end;
	char byte = 1;
	int ret;

	if (argc != 4 || softrdma_profile_parse(argv[1], &profile)) {
		fprintf(stderr, "usage: %s thunderbolt|rocev2 NAMESPACE close|exit|kill|attach\n",
			argv[0]);
		return EINVAL;
	}
	end = argv[3];
	/* Not test_config_init's: a test process removes the segments of those at its exit. */
	memset(&config, 0, sizeof(config));
	config.profile = profile;
	snprintf(config.topology, sizeof(config.topology), "single");
	snprintf(config.namespace_name, sizeof(config.namespace_name), "%s", argv[2]);
	if (getenv("FI_BOLT_SOFT_COPY") &&
	    softrdma_copy_mode_parse(getenv("FI_BOLT_SOFT_COPY"), &config.copy_mode))
		return EINVAL;
	bolt_fixture_logging_start();
	ret = -softrdma_attach(&config);
	if (ret || !strcmp(end, "attach"))
		return ret;
	ret = member_objects(&member_side);
	if (!ret)
		ret = test_write_all(STDOUT_FILENO, &byte, 1);
	/* Standard input closes when the job ends this member. */
	while (!ret && read(STDIN_FILENO, &byte, 1) > 0)
		;
	if (ret || !strcmp(end, "close"))
		test_side_close(&member_side);
	else if (!strcmp(end, "kill"))
		raise(SIGKILL);
	return ret;
}
