/*
 * test_limits.c: the device limits seen through endpoints. Running out of
 * queue pairs fails the connection with an error that names the limit;
 * 10,000 registered regions on the Thunderbolt profile (100 device MRs) all
 * take data; a full transmit queue (tx_attr->size) refuses more with
 * -FI_EAGAIN until progress completes some, silent injects included.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rdm_fixture.h"

#define REGION_COUNT 10000
#define REGION_BYTES 64

/* Registers REGION_COUNT regions and tells their keys; checks what lands in them. */
static int many_regions_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fid_mr **regions = calloc(REGION_COUNT, sizeof(*regions));
	char *memory = calloc(REGION_COUNT, REGION_BYTES);
	uint64_t done;
	int ret;

	if (!regions || !memory)
		return 1;
	ret = rdm_open_connected(&endpoint, options, socket);
	for (int i = 0; !ret && i < REGION_COUNT; i++) {
		ret = fi_mr_reg(endpoint.domain, memory + i * REGION_BYTES, REGION_BYTES,
				FI_REMOTE_WRITE, 0, 0, 0, &regions[i], NULL);
		if (!ret)
			ret = fi_mr_bind(regions[i], &endpoint.ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(regions[i]);
		if (!ret)
			ret = rdm_send_value(socket, fi_mr_key(regions[i]));
	}
	if (!ret)
		ret = rdm_send_value(socket, (uintptr_t) memory);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	for (int i = 0; !ret && i < REGION_COUNT; i++)
		if (!rdm_check(memory + i * REGION_BYTES, REGION_BYTES, (uint32_t) i))
			ret = 2;
	for (int i = 0; i < REGION_COUNT; i++)
		if (regions[i])
			fi_close(&regions[i]->fid);
	bolt_fixture_close(&endpoint);
	free(memory);
	free(regions);
	return ret;
}

Test(limits, ten_thousand_regions_on_thunderbolt)
{
	struct rdm_options options = {
		.profile = "thunderbolt",
		.mr_mode = FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		.software_device_only = true,
	};
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t *keys = calloc(REGION_COUNT, sizeof(*keys));
	char data[REGION_BYTES];
	uint64_t memory;
	int socket;
	pid_t peer;

	peer = rdm_pair_start(&options, "limits-mr", many_regions_peer, &options, &endpoint,
			      &socket);
	cr_assert(peer > 0 && keys);
	for (int i = 0; i < REGION_COUNT; i++)
		cr_assert_eq(rdm_receive_value(socket, &keys[i]), 0);
	cr_assert_eq(rdm_receive_value(socket, &memory), 0);
	for (int i = 0; i < REGION_COUNT; i++) {
		rdm_fill(data, sizeof(data), (uint32_t) i);
		cr_assert_eq(fi_write(endpoint.ep, data, sizeof(data), NULL, endpoint.peer,
				      memory + (uint64_t) i * REGION_BYTES, keys[i], NULL), 0);
		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0, "write %d: error %d", i, error.err);
	}
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 0,
		     "a region's data differs at the target");
	free(keys);
}

/* Several endpoints of one domain in one process, each connected to the first. */
Test(limits, queue_pair_budget_names_the_limit, .timeout = 60)
{
	struct rdm_options options = { .profile = "thunderbolt", .software_device_only = true };
	struct bolt_fixture_endpoint first, others[3];
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char name[64], buffer[8] = "x";
	fi_addr_t addresses[3];
	size_t length;
	int ret;

	setenv("FI_BOLT_SOFT_MAX_QP", "5", 1);
	rdm_environment(&options, "limits-qp");
	cr_assert_eq(rdm_open(&first, &options), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rdm_open(&others[i], &options), 0);
		length = sizeof(name);
		cr_assert_eq(fi_getname(&others[i].ep->fid, name, &length), 0);
		cr_assert_eq(fi_av_insert(first.av, name, 1, &addresses[i], 0, NULL), 1);
	}
	/* Each connection takes a queue pair at both ends: 2, 4, then the sixth fails. */
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fi_send(first.ep, buffer, sizeof(buffer), NULL, addresses[i], &addresses[i]), 0);
		/* Each endpoint has a domain of its own: all of them need progress. */
		do {
			for (int j = 0; j < 3; j++)
				fi_cq_read(others[j].cq, &entry, 0);
			ret = (int) fi_cq_read(first.cq, &entry, 1);
		} while (ret == -FI_EAGAIN);
		if (ret == -FI_EAVAIL)
			fi_cq_readerr(first.cq, &error, 0);
		else
			ret = ret == 1 ? 0 : ret;
		if (i < 2)
			cr_assert_eq(ret, 0, "connection %d: %d (error %d)", i, ret, error.err);
		else
			cr_assert(ret == -FI_EAVAIL && error.err == FI_ENOSPC,
				  "connection %d past the limit: %d (error %d)", i, ret, error.err);
	}
	for (int i = 0; i < 3; i++)
		bolt_fixture_close(&others[i]);
	bolt_fixture_close(&first);
	rdm_environment_cleanup(&options);
	unsetenv("FI_BOLT_SOFT_MAX_QP");
}

/* fabtests' fi_rma_bw posts inject writes faster than they complete: the queue must say so. */
Test(limits, full_transmit_queue_asks_for_progress)
{
	struct rdm_options options = { .profile = "thunderbolt", .tx_size = 4 };
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	char name[64], in[8] = { 0 }, out[8] = "payload";
	size_t length = sizeof(name);
	int posted = 0, ret;

	rdm_environment(&options, "limits-queue");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_assert_eq(endpoint.info->tx_attr->size, 4);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
	cr_assert_eq(fi_av_insert(endpoint.av, name, 1, &endpoint.peer, 0, NULL), 1);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fi_recv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, NULL), 0);
	/* No CQ is read here, so nothing drives progress: the fifth transmit finds the queue full. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(fi_inject(endpoint.ep, out, sizeof(out), endpoint.peer), 0, "inject %d", i);
	cr_assert_eq(fi_inject(endpoint.ep, out, sizeof(out), endpoint.peer), -FI_EAGAIN);
	cr_assert_eq(fi_send(endpoint.ep, out, sizeof(out), NULL, endpoint.peer, NULL), -FI_EAGAIN);
	/* Progress ends the injects (they complete silently); then the queue takes more. */
	for (int tries = 0; tries < 100000 && posted == 0; tries++) {
		fi_cq_read(endpoint.cq, &entry, 0);
		ret = (int) fi_inject(endpoint.ep, out, sizeof(out), endpoint.peer);
		cr_assert(ret == 0 || ret == -FI_EAGAIN, "inject: %d", ret);
		posted = ret == 0;
		sched_yield();
	}
	cr_assert(posted, "the queue never emptied");
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}
