/*
 * test_direct_write.c: writes into a region the target granted. After the
 * first write to a region, later writes go as one RDMA write each,
 * without asking: the data lands, remote CQ data arrives with its length,
 * out-of-bounds and delivery-complete writes still ask (and the first fails),
 * and closing the region revokes the grant, so a write to it fails with
 * FI_EACCES instead of being lost. Writes streaming while the target closes
 * the region land or are refused, and the connection (on RC, its queue pair)
 * survives. On RC, to a target that counts no remote writes, direct writes
 * are plain RDMA writes; a counting target sees each. At the device, the
 * grant opens exactly the region, for writing only: a raw RDMA read with its
 * rkey fails, as does a write a byte past its end; and a peer that never
 * answers the revoke is failed after the liveness time, the registration
 * dropped.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "rdm_fixture.h"

#define REGION_SIZE (1024 * 1024)
#define SEED 21
#define CQ_DATA 0x1234
#define CQ_DATA_LENGTH 8192
#define GRANT_WAIT_MS 2000
#define FIRST_WRITE 100                 /* in segments: the grant comes with its ack */

/* The writes after the grant: offset and length in the region, the same in the local buffer. */
static const struct { size_t offset, length; } direct_writes[] = {
	{ FIRST_WRITE, 131072 - FIRST_WRITE }, { 131072, 100 }, { 131172, 4096 },
	{ 135268, 65536 }, { 200804, 262144 },
	{ 462948, 3 }, { 462951, 300000 },
};
#define WRITTEN_END (462951 + 300000)   /* then the writedata ones */

static struct bolt_connection *only_connection(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_endpoint *bolt = bolt_container_of(endpoint->ep, struct bolt_endpoint, ep_fid);

	return bolt->connection_manager.connections;
}

/* Every write that succeeded: the first, the direct ones, three writedata, one delivery complete. */
#define REMOTE_WRITES (1 + BOLT_ARRAY_LENGTH(direct_writes) + 3 + 1)

/* A counting target sees each write, direct ones too, within GRANT_WAIT_MS. */
static bool remote_writes_counted(struct bolt_fixture_endpoint *endpoint)
{
	struct fi_cq_tagged_entry entry;

	for (int waited = 0; waited < GRANT_WAIT_MS; waited += 10) {
		if (fi_cntr_read(endpoint->remote_writes) == REMOTE_WRITES)
			return true;
		fi_cq_read(endpoint->cq, &entry, 0);
		rdm_progress_for(endpoint, 10);
	}
	return false;
}

/*
 * The target: checks the remote CQ data it gets, the data, and with a
 * counter the count, then closes the region.
 */
static int target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *region = calloc(1, REGION_SIZE);
	struct fid_mr *mr = NULL;
	uint64_t told;
	int ret, data_seen = 0;

	ret = rdm_serve_region(&endpoint, options, socket, region, REGION_SIZE, FI_REMOTE_WRITE, &mr);
	/* Three writedata: directly with CQ_DATA, then data 0 and the RC grant immediate, which ask. */
	for (int i = 0; !ret && i < 3; i++) {
		ret = rdm_wait(&endpoint, &entry, &error);
		if (!ret && (!(entry.flags & FI_REMOTE_CQ_DATA) || !(entry.flags & FI_REMOTE_WRITE) ||
			     entry.len != CQ_DATA_LENGTH))
			ret = 2;
		if (!ret)
			data_seen |= entry.data == CQ_DATA ? 1 : entry.data == 0 ? 2 :
				     entry.data == BOLT_IMMEDIATE_RC_GRANTED ? 4 : 8;
	}
	if (!ret && (data_seen != 7 || !rdm_check(region, WRITTEN_END + 3 * CQ_DATA_LENGTH, SEED)))
		ret = 3;
	if (!ret && options->count_remote_writes && !remote_writes_counted(&endpoint))
		ret = 4;
	if (mr && !ret) {
		ret = fi_close(&mr->fid);
		mr = ret ? mr : NULL;
	}
	if (!ret)
		ret = rdm_send_value(socket, 1) ? -FI_EIO : 0;    /* closed */
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

static bool reliable(struct bolt_fixture_endpoint *endpoint)
{
	return only_connection(endpoint)->link->qp->qp_type == IBV_QPT_RC;
}

/* Progress until the connection holds count grants; false after GRANT_WAIT_MS. */
static bool wait_for_grants(struct bolt_fixture_endpoint *endpoint, unsigned int count)
{
	for (int waited = 0; waited < GRANT_WAIT_MS; waited += 10) {
		if (HASH_COUNT(bolt_peer_of(only_connection(endpoint))->grants) == count)
			return true;
		rdm_progress_for(endpoint, 10);
	}
	return false;
}

/* The initiator's side of a test: its endpoint, a local region, and the target's region. */
struct initiator {
	struct bolt_fixture_endpoint endpoint;
	char *local;
	struct fid_mr *local_mr;
	void *desc;
	uint64_t remote_address, remote_key;
	int socket;
	pid_t peer;
};

/* Starts target in a process of its own, learns where its region is, fills the local one. */
static void initiator_start(struct initiator *side, const struct rdm_options *options,
			    const char *tag, int (*target)(int socket, void *argument))
{
	side->peer = rdm_pair_start(options, tag, target, (void *) options, &side->endpoint,
				    &side->socket);
	cr_assert(side->peer > 0);
	/* After the fork: the target has no copy to leak. */
	side->local = malloc(REGION_SIZE);
	cr_assert(side->local);
	cr_assert_eq(rdm_register_region(&side->endpoint, side->local, REGION_SIZE, FI_WRITE,
					 &side->local_mr), 0);
	side->desc = fi_mr_desc(side->local_mr);
	cr_assert_eq(rdm_receive_value(side->socket, &side->remote_address), 0);
	cr_assert_eq(rdm_receive_value(side->socket, &side->remote_key), 0);
	rdm_fill(side->local, REGION_SIZE, SEED);
}

/* The initiator's end: tells the target it is done, and waits for its verdict. */
static void initiator_finish(struct initiator *side, const struct rdm_options *options)
{
	cr_assert_eq(rdm_send_value(side->socket, 1), 0);
	cr_assert_eq(fi_close(&side->local_mr->fid), 0);
	cr_assert_eq(rdm_pair_finish(options, &side->endpoint, side->peer, side->socket), 0,
		     "the target failed");
	free(side->local);
}

static void writes_into_a_granted_region(struct rdm_options *options, const char *tag)
{
	bool granted = !options->send_only;
	struct initiator side;
	uint64_t told, direct_before;
	struct fi_msg_rma message;
	struct fi_rma_iov rma_iov;
	struct iovec iov;

	initiator_start(&side, options, tag, target_peer);

	/* The first write goes in segments, and the target grants the region with its ack. */
	cr_assert_eq(fi_write(side.endpoint.ep, side.local, FIRST_WRITE, side.desc, side.endpoint.peer,
			      side.remote_address, side.remote_key, side.local), 0);
	rdm_expect_completion(&side.endpoint, side.local, 0);
	if (granted)
		cr_assert(wait_for_grants(&side.endpoint, 1), "no grant came with the answer");
	else
		cr_assert(!wait_for_grants(&side.endpoint, 1), "a grant without RDMA write");
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes, 0);

	/* Every later write, small or large, goes directly. */
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(direct_writes); i++)
		cr_assert_eq(fi_write(side.endpoint.ep, side.local + direct_writes[i].offset,
				      direct_writes[i].length, side.desc, side.endpoint.peer,
				      side.remote_address + direct_writes[i].offset, side.remote_key,
				      side.local + direct_writes[i].offset), 0);
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(direct_writes); i++)
		rdm_expect_completion(&side.endpoint, side.local + direct_writes[i].offset, 0);
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes,
		     granted ? BOLT_ARRAY_LENGTH(direct_writes) : 0);
	/* Plain, the target never sees them: only on RC (UC loses writes silently), to a target that counts none. */
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->plain_writes,
		     granted && reliable(&side.endpoint) && !options->count_remote_writes ?
		     BOLT_ARRAY_LENGTH(direct_writes) : 0);

	/* Remote CQ data rides in the immediate; data 0 would read as none, so that one asks. */
	cr_assert_eq(fi_writedata(side.endpoint.ep, side.local + WRITTEN_END, CQ_DATA_LENGTH, side.desc,
				  CQ_DATA, side.endpoint.peer, side.remote_address + WRITTEN_END,
				  side.remote_key, &side.socket), 0);
	rdm_expect_completion(&side.endpoint, &side.socket, 0);
	direct_before = bolt_peer_of(only_connection(&side.endpoint))->direct_writes;
	cr_assert_eq(fi_writedata(side.endpoint.ep, side.local + WRITTEN_END + CQ_DATA_LENGTH,
				  CQ_DATA_LENGTH, side.desc, 0, side.endpoint.peer,
				  side.remote_address + WRITTEN_END + CQ_DATA_LENGTH, side.remote_key,
				  &side.peer), 0);
	rdm_expect_completion(&side.endpoint, &side.peer, 0);
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes, direct_before);
	/* On RC that value names a message written into a granted receive: it asks too, everywhere. */
	cr_assert_eq(fi_writedata(side.endpoint.ep, side.local + WRITTEN_END + 2 * CQ_DATA_LENGTH,
				  CQ_DATA_LENGTH, side.desc, BOLT_IMMEDIATE_RC_GRANTED, side.endpoint.peer,
				  side.remote_address + WRITTEN_END + 2 * CQ_DATA_LENGTH, side.remote_key,
				  &side.endpoint), 0);
	rdm_expect_completion(&side.endpoint, &side.endpoint, 0);
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes, direct_before);

	/* Past the region's end: asks, and the target refuses. */
	cr_assert_eq(fi_write(side.endpoint.ep, side.local, 100, side.desc, side.endpoint.peer,
			      side.remote_address + REGION_SIZE - 10, side.remote_key, side.local + 1), 0);
	rdm_expect_completion(&side.endpoint, side.local + 1, FI_EINVAL);

	/* Delivery complete needs the target's word: asks. */
	iov = (struct iovec) { .iov_base = side.local, .iov_len = 4096 };
	rma_iov = (struct fi_rma_iov) { .addr = side.remote_address, .len = 4096, .key = side.remote_key };
	message = (struct fi_msg_rma) { .msg_iov = &iov, .desc = &side.desc, .iov_count = 1,
					.addr = side.endpoint.peer, .rma_iov = &rma_iov, .rma_iov_count = 1,
					.context = side.local + 2 };
	cr_assert_eq(fi_writemsg(side.endpoint.ep, &message, FI_COMPLETION | FI_DELIVERY_COMPLETE), 0);
	rdm_expect_completion(&side.endpoint, side.local + 2, 0);
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes, direct_before);

	/* The target checks the data and closes the region: the grant goes, writes to it fail. */
	cr_assert_eq(rdm_send_value(side.socket, 1), 0);
	cr_assert_eq(rdm_receive_value(side.socket, &told), 0, "the target found wrong data");
	cr_assert(wait_for_grants(&side.endpoint, 0), "the closed region's grant stayed");
	cr_assert_eq(fi_write(side.endpoint.ep, side.local, 4096, side.desc, side.endpoint.peer,
			      side.remote_address, side.remote_key, side.local + 3), 0);
	rdm_expect_completion(&side.endpoint, side.local + 3, FI_EACCES);
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->direct_writes, direct_before);

	initiator_finish(&side, options);
}

Test(direct_write, thunderbolt)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };

	writes_into_a_granted_region(&options, "direct-tb");
}

Test(direct_write, rocev2)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };

	writes_into_a_granted_region(&options, "direct-roce");
}

/* A target that counts remote writes must see each: no plain ones, even on RC. */
Test(direct_write, rocev2_counting_target)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE,
				       .count_remote_writes = true };

	writes_into_a_granted_region(&options, "direct-roce-count");
}

Test(direct_write, thunderbolt_counting_target)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE,
				       .count_remote_writes = true };

	writes_into_a_granted_region(&options, "direct-tb-count");
}

/* Without RDMA write nothing is granted: every write goes in segments, with the same results. */
Test(direct_write, thunderbolt_send_only)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE, .send_only = true };

	writes_into_a_granted_region(&options, "direct-tb-so");
}

#define CLOSING_WRITE_LENGTH 65536
#define CLOSING_WRITES_AFTER 64         /* written after the first one refused */
#define CLOSING_WRITES_MOST 100000
#define CLOSING_MESSAGE "still connected"

/*
 * The target of writes that its region's close overtakes: closes the region
 * at the initiator's word, while the initiator's writes stream in, then
 * takes a message over the same connection, by which time every peer has
 * answered the close and the region's registration is gone.
 */
static int closing_target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *region = calloc(1, REGION_SIZE), message[sizeof(CLOSING_MESSAGE)] = "";
	struct fid_mr *mr = NULL;
	uint64_t told;
	int ret;

	ret = rdm_offer_region(&endpoint, options, socket, region, REGION_SIZE, FI_REMOTE_WRITE, &mr);
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);  /* writing from now on */
	if (!ret) {
		ret = fi_close(&mr->fid);
		mr = ret ? mr : NULL;
	}
	if (!ret)
		ret = (int) fi_recv(endpoint.ep, message, sizeof(message), NULL, FI_ADDR_UNSPEC, message);
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret && strcmp(message, CLOSING_MESSAGE))
		ret = 5;
	if (!ret && bolt_container_of(endpoint.domain, struct bolt_domain, domain_fid)->revokes)
		ret = 6;
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &told);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* One completion of a write into the closing region: 1 done, 0 refused; fails on anything else. */
static int closing_write_completed(struct bolt_fixture_endpoint *endpoint)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = rdm_wait(endpoint, &entry, &error);

	cr_assert(!ret || ret == -FI_EAVAIL, "a write did not complete: %d", ret);
	cr_assert(!ret || error.err == FI_EACCES, "a write failed with %d, not FI_EACCES", error.err);
	return !ret;
}

/*
 * Writes stream into a region the target closes meanwhile. Those the peer
 * posted before it learned of the close land; those after ask and are
 * refused; none fails the connection (or, on RC, the queue pair of its link):
 * a message still goes through it afterwards.
 */
static void writes_into_a_closing_region(struct rdm_options *options, const char *tag)
{
	struct initiator side;
	int posted = 0, completed = 0, landed = 0, refused = 0, stop_at = CLOSING_WRITES_MOST;

	initiator_start(&side, options, tag, closing_target_peer);
	cr_assert_eq(fi_write(side.endpoint.ep, side.local, FIRST_WRITE, side.desc, side.endpoint.peer,
			      side.remote_address, side.remote_key, side.local), 0);
	rdm_expect_completion(&side.endpoint, side.local, 0);
	cr_assert(wait_for_grants(&side.endpoint, 1), "no grant came with the answer");

	/* Writes until one is refused, CLOSING_WRITES_AFTER more, then every completion. */
	cr_assert_eq(rdm_send_value(side.socket, 1), 0);
	while (completed < posted || posted < stop_at) {
		if (posted < stop_at) {
			size_t offset = (size_t) posted % (REGION_SIZE / CLOSING_WRITE_LENGTH) *
					CLOSING_WRITE_LENGTH;
			ssize_t ret = fi_write(side.endpoint.ep, side.local + offset, CLOSING_WRITE_LENGTH, side.desc,
					       side.endpoint.peer, side.remote_address + offset, side.remote_key, NULL);

			cr_assert(!ret || ret == -FI_EAGAIN, "fi_write: %zd", ret);
			if (!ret) {
				posted++;
				continue;
			}
		}
		if (closing_write_completed(&side.endpoint))
			landed++;
		else if (!refused++ && posted + CLOSING_WRITES_AFTER < stop_at)
			stop_at = posted + CLOSING_WRITES_AFTER;
		completed++;
	}
	cr_assert(landed > 0 && refused > 0, "%d writes landed, %d were refused", landed, refused);
	cr_assert_eq(only_connection(&side.endpoint)->state, BOLT_CONNECTION_ESTABLISHED);
	cr_assert_eq(fi_send(side.endpoint.ep, CLOSING_MESSAGE, sizeof(CLOSING_MESSAGE), NULL,
			     side.endpoint.peer, &side.socket), 0);
	rdm_expect_completion(&side.endpoint, &side.socket, 0);

	initiator_finish(&side, options);
}

static void closing_region_on(const char *profile, const char *tag)
{
	struct rdm_options options = { .profile = profile, .mr_mode = RDM_MR_MODE };

	writes_into_a_closing_region(&options, tag);
}

Test(direct_write, closing_region_thunderbolt)
{
	closing_region_on("thunderbolt", "direct-closing-tb");
}

Test(direct_write, closing_region_rocev2)
{
	closing_region_on("rocev2", "direct-closing-roce");
}

/* A region for endpoint: bound and enabled under FI_MR_ENDPOINT, else enabled at registration. */
static int register_for(struct bolt_fixture_endpoint *endpoint, uint64_t mr_mode, void *buffer,
			size_t length, uint64_t access, struct fid_mr **mr)
{
	if (mr_mode & FI_MR_ENDPOINT)
		return rdm_register_region(endpoint, buffer, length, access, mr);
	return fi_mr_reg(endpoint->domain, buffer, length, access, 0, 0, 0, mr, NULL);
}

/*
 * An endpoint writing to itself: granted like a peer; closing the region
 * revokes at once. Remote addresses are virtual ones with FI_MR_VIRT_ADDR,
 * else offsets into the region.
 */
static void writes_to_own_address(uint64_t mr_mode, const char *tag)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = mr_mode };
	struct bolt_fixture_endpoint endpoint;
	char *local = malloc(2 * REGION_SIZE), *region = local + REGION_SIZE;
	uint64_t base = mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t) region : 0, key;
	struct fid_mr *local_mr, *region_mr;
	void *desc;

	cr_assert(local);
	rdm_environment(&options, tag);
	cr_assert_eq(rdm_open_self(&endpoint, &options), 0);
	cr_assert_eq(register_for(&endpoint, mr_mode, local, REGION_SIZE, FI_WRITE, &local_mr), 0);
	cr_assert_eq(register_for(&endpoint, mr_mode, region, REGION_SIZE, FI_REMOTE_WRITE, &region_mr), 0);
	desc = fi_mr_desc(local_mr);
	memset(region, 0, REGION_SIZE);
	rdm_fill(local, REGION_SIZE, SEED);

	cr_assert_eq(fi_write(endpoint.ep, local, 131072, desc, endpoint.peer, base,
			      fi_mr_key(region_mr), local), 0);
	rdm_expect_completion(&endpoint, local, 0);
	cr_assert(wait_for_grants(&endpoint, 1), "no grant to ourselves");
	cr_assert_eq(fi_write(endpoint.ep, local + 131072, 5000, desc, endpoint.peer, base + 131072,
			      fi_mr_key(region_mr), local + 1), 0);
	rdm_expect_completion(&endpoint, local + 1, 0);
	cr_assert_eq(bolt_peer_of(only_connection(&endpoint))->direct_writes, 1);
	cr_assert(rdm_check(region, 131072 + 5000, SEED), "the data differs");
	/* Past the end by one byte: asks, and fails. */
	cr_assert_eq(fi_write(endpoint.ep, local, 4096, desc, endpoint.peer, base + REGION_SIZE - 4095,
			      fi_mr_key(region_mr), local + 2), 0);
	rdm_expect_completion(&endpoint, local + 2, FI_EINVAL);

	key = fi_mr_key(region_mr);
	cr_assert_eq(fi_close(&region_mr->fid), 0);
	cr_assert_eq(HASH_COUNT(bolt_peer_of(only_connection(&endpoint))->grants), 0);
	cr_assert_eq(fi_write(endpoint.ep, local, 4096, desc, endpoint.peer, base, key, local + 3), 0);
	rdm_expect_completion(&endpoint, local + 3, FI_EACCES);
	cr_assert_eq(bolt_peer_of(only_connection(&endpoint))->direct_writes, 1);
	cr_assert_eq(fi_close(&local_mr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
	free(local);
}

Test(direct_write, own_address)
{
	writes_to_own_address(RDM_MR_MODE, "direct-self");
}

/* Domain-wide keys, and offsets for addresses. */
Test(direct_write, own_address_domain_keys_offsets)
{
	writes_to_own_address(FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ALLOCATED, "direct-self-offsets");
}

/*
 * What the target's grant opens at the device, judged by the device alone:
 * the initiator posts raw verbs work requests with the granted rkey on its
 * link's queue pair, past bolt. The region is FI_REMOTE_WRITE only and ends
 * in the middle of a page: an RDMA read of it, or a write one byte past its
 * end, must fail with a remote access error (and on RC, that fails the
 * queue pair, so each test makes one such attempt on a connection of its own).
 */
#define EXPOSED_OFFSET 100              /* the region starts (and ends) this far into a page */
#define EXPOSED_WAIT_MS 5000

/* A target offering a region that starts and ends EXPOSED_OFFSET bytes into a page. */
static int unaligned_target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	long page = sysconf(_SC_PAGESIZE);
	char *memory = aligned_alloc((size_t) page, REGION_SIZE + 2 * (size_t) page);
	struct fid_mr *mr = NULL;
	int ret;

	if (!memory)
		return 1;
	memset(memory, 0x5a, REGION_SIZE + 2 * (size_t) page);
	ret = rdm_serve_region(&endpoint, options, socket, memory + EXPOSED_OFFSET, REGION_SIZE,
			       FI_REMOTE_WRITE, &mr);
	/* The initiator's attempt may have failed our queue pair: only the set-up counts. */
	if (mr)
		fi_close(&mr->fid);
	bolt_fixture_close(&endpoint);
	free(memory);
	return ret;
}

struct raw_access {
	struct bolt_work_completion work;
	bool done;
	enum ibv_wc_status status;
};

static void raw_access_done(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct raw_access *access = bolt_container_of(work, struct raw_access, work);

	access->done = true;
	access->status = wc->status;
}

/*
 * One raw work request (opcode) of length bytes at offset in the region the
 * target granted, with its rkey; the device's verdict. For a read, *landed
 * says whether any of the region's bytes arrived.
 */
static enum ibv_wc_status granted_raw_access(struct initiator *side, enum ibv_wr_opcode opcode,
					     size_t offset, size_t length, bool *landed)
{
	struct bolt_connection *connection = only_connection(&side->endpoint);
	struct bolt_domain *domain = bolt_container_of(side->endpoint.domain, struct bolt_domain, domain_fid);
	struct bolt_verbs *verbs = &domain->fabric->verbs;
	struct bolt_region_grant *grant = bolt_peer_of(connection)->grants;
	struct raw_access access = { .work.handle = raw_access_done };
	char *buffer = calloc(1, length);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_mr *mr;

	cr_assert(buffer && grant);
	mr = verbs->reg_mr(connection->link->port->handle.pd, buffer, length, IBV_ACCESS_LOCAL_WRITE);
	cr_assert(mr, "reg_mr of the local buffer: %s", strerror(errno));
	sge = (struct ibv_sge) { .addr = (uintptr_t) buffer, .length = (uint32_t) length, .lkey = mr->lkey };
	wr = (struct ibv_send_wr) { .wr_id = (uintptr_t) &access.work, .sg_list = &sge, .num_sge = 1,
				    .opcode = opcode, .send_flags = IBV_SEND_SIGNALED,
				    .wr.rdma = { .remote_addr = grant->target_address + offset,
						 .rkey = grant->rkey } };
	bolt_domain_lock(domain);
	cr_assert_eq(verbs->post_send(connection->link->qp, &wr, &bad), 0);
	bolt_domain_unlock(domain);
	for (int waited = 0; !access.done && waited < EXPOSED_WAIT_MS; waited += 10)
		rdm_progress_for(&side->endpoint, 10);
	cr_assert(access.done, "the device never answered");
	*landed = false;
	for (size_t i = 0; i < length; i++)
		*landed |= buffer[i] != 0;
	verbs->dereg_mr(mr);
	free(buffer);
	return access.status;
}

/* The initiator against an unaligned write-only region: granted, then one raw access. */
static void raw_access_to_granted_region(const char *tag, enum ibv_wr_opcode opcode, size_t offset,
					 size_t length)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };
	struct initiator side;
	enum ibv_wc_status status;
	bool landed;

	initiator_start(&side, &options, tag, unaligned_target_peer);
	cr_assert_eq(fi_write(side.endpoint.ep, side.local, FIRST_WRITE, side.desc, side.endpoint.peer,
			      side.remote_address, side.remote_key, side.local), 0);
	rdm_expect_completion(&side.endpoint, side.local, 0);
	cr_assert(wait_for_grants(&side.endpoint, 1), "no grant came with the answer");
	cr_assert_eq(bolt_peer_of(only_connection(&side.endpoint))->grants->length, REGION_SIZE);

	status = granted_raw_access(&side, opcode, offset, length, &landed);
	cr_assert_neq(status, IBV_WC_SUCCESS, "the device allowed %s %zu bytes at offset %zu of the region",
		      opcode == IBV_WR_RDMA_READ ? "reading" : "writing", length, offset);
	/*
	 * A refusal by the region (access) or, for reads, by the queue pair, which
	 * takes none from peers either: rxe calls that an invalid request.
	 */
	cr_assert(status == IBV_WC_REM_ACCESS_ERR ||
		  (opcode == IBV_WR_RDMA_READ && status == IBV_WC_REM_INV_REQ_ERR), "status %d", status);
	cr_assert_not(landed, "the region's bytes were read");
	initiator_finish(&side, &options);
}

/* A region registered FI_REMOTE_WRITE only: its grant is no key to read it with. */
Test(direct_write, write_only_region_read)
{
	raw_access_to_granted_region("direct-exposed-read", IBV_WR_RDMA_READ, 0, 4096);
}

/* Nor to write one byte past its end, though that byte shares the region's last page. */
Test(direct_write, region_end_not_writable)
{
	raw_access_to_granted_region("direct-exposed-end", IBV_WR_RDMA_WRITE, REGION_SIZE - 63, 64);
}

/*
 * A peer that never answers a revoke: the initiator writes, gets its grant,
 * and stops itself (SIGSTOP: its kernel still answers the side channel's
 * keepalives, so only the missing answer shows). The target closes the
 * region; within FI_BOLT_LIVENESS_TIMEOUT and a little, the connection fails
 * with FI_ETIMEDOUT and the region's registration is gone.
 */
#define SILENT_LIVENESS_MS 2000
#define SILENT_WAIT_MS (SILENT_LIVENESS_MS + 4000)

static int silent_initiator(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	uint64_t address, key;
	char *local = calloc(1, FIRST_WRITE);
	int ret = local ? rdm_open_connected(&endpoint, options, socket) : 1;

	if (!ret && (rdm_receive_value(socket, &address) || rdm_receive_value(socket, &key)))
		ret = 2;
	if (!ret)
		ret = (int) fi_write(endpoint.ep, local, FIRST_WRITE, NULL, endpoint.peer, address, key, local);
	if (!ret)
		rdm_expect_completion(&endpoint, local, 0);
	if (!ret && !wait_for_grants(&endpoint, 1))
		ret = 3;
	if (!ret)
		ret = rdm_send_value(socket, 1);        /* granted */
	if (!ret)
		raise(SIGSTOP);                         /* and never answers; killed by the target */
	return ret;
}

/* The stopped initiator, killed however the test ends: a stopped process would hold its pipes. */
static pid_t silent_peer;

static void kill_silent_peer(void)
{
	if (silent_peer > 0)
		kill(silent_peer, SIGKILL);
}

Test(direct_write, silent_revoke, .fini = kill_silent_peer)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR };
	struct bolt_fixture_endpoint endpoint;
	struct bolt_domain *domain;
	struct bolt_connection *connection;
	struct bolt_mr_cache_stats before, after;
	char *region = calloc(1, REGION_SIZE);
	struct fid_mr *mr;
	struct timespec closed;
	uint64_t granted;
	int socket, status;
	pid_t peer;

	cr_assert(region);
	setenv("FI_BOLT_LIVENESS_TIMEOUT", "2000", 1);
	peer = rdm_pair_start(&options, "direct-silent", silent_initiator, &options, &endpoint, &socket);
	silent_peer = peer;
	cr_assert(peer > 0);
	domain = bolt_container_of(endpoint.domain, struct bolt_domain, domain_fid);
	cr_assert_eq(rdm_register_region(&endpoint, region, REGION_SIZE, FI_REMOTE_WRITE, &mr), 0);
	cr_assert_eq(rdm_send_value(socket, (uintptr_t) region), 0);
	cr_assert_eq(rdm_send_value(socket, fi_mr_key(mr)), 0);
	cr_assert_eq(rdm_serve_until_told(&endpoint, socket, &granted), 0, "the initiator got no grant");
	cr_assert_eq(waitpid(peer, &status, WUNTRACED), peer);
	cr_assert(WIFSTOPPED(status), "the initiator did not stop");
	cr_assert_eq(domain->grants_held, 1);
	bolt_mr_cache_stats(domain->primary.mr_cache, &before);

	clock_gettime(CLOCK_MONOTONIC, &closed);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_not_null(domain->revokes, "the close waits for the initiator's answer");
	while (domain->revokes && bolt_fixture_elapsed_ms(&closed) < SILENT_WAIT_MS)
		rdm_progress_for(&endpoint, 10);
	cr_assert_null(domain->revokes, "the silent peer's grant outlived the liveness time");
	cr_assert_geq(bolt_fixture_elapsed_ms(&closed), SILENT_LIVENESS_MS,
		      "the peer was failed before the liveness time");
	connection = only_connection(&endpoint);
	cr_assert_eq(connection->state, BOLT_CONNECTION_FAILED);
	cr_assert_eq(connection->error, FI_ETIMEDOUT);
	cr_assert_eq(domain->grants_held, 0);
	bolt_mr_cache_stats(domain->primary.mr_cache, &after);
	cr_assert_lt(after.registered, before.registered, "the region's registration stayed");

	kill(peer, SIGKILL);
	silent_peer = 0;
	cr_assert_eq(rdm_pair_finish(&options, &endpoint, peer, socket), 128 + SIGKILL);
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
	free(region);
}
