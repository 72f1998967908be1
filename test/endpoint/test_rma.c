/*
 * test_rma.c: RMA between two processes, with FI_MR_ENDPOINT as NCCL
 * plugins use it: write, writedata (the target gets FI_REMOTE_CQ_DATA
 * without posting a receive), inject_write, read (its data written back by
 * RDMA where the devices can; also from the endpoint's own address, the
 * plugins' flush), and the errors: a key that was never enabled, out of
 * bounds, no access right. Also FI_MR_BASIC, the mode of older applications,
 * raw keys, requested keys, and the registrations bolt refuses.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "bolt_fi_compat.h"
#include "rails/bolt_mr_cache.h"
#include "rdm_fixture.h"

#define REGION_SIZE (256 * 1024)

/*
 * The target: registers a region for remote write and read, tells its
 * address and key, then waits for the initiator's writedata and checks it.
 */
static int target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *region = calloc(1, REGION_SIZE);
	struct fid_mr *mr = NULL;
	uint64_t done;
	int ret;

	if (region)
		rdm_fill(region + REGION_SIZE / 2, REGION_SIZE / 2, 99);   /* for the initiator to read */
	ret = rdm_offer_region(&endpoint, options, socket, region, REGION_SIZE,
			   FI_REMOTE_WRITE | FI_REMOTE_READ, &mr);
	/* writedata: a remote CQ data completion, with no receive posted for it. */
	if (!ret)
		ret = rdm_wait(&endpoint, &entry, &error);
	if (!ret && (!(entry.flags & FI_REMOTE_CQ_DATA) || entry.data != 0xcafe ||
		     !rdm_check(region, 100000, 7)))
		ret = 2;
	/* Serve the initiator's reads and bad accesses until it is done. */
	if (!ret)
		ret = rdm_serve_until_told(&endpoint, socket, &done);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* Reads of this endpoint whose data a peer wrote back by RDMA, from every peer. */
static uint64_t reads_written_back(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_endpoint *bolt = bolt_container_of(endpoint->ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;
	uint64_t reads = 0;

	HASH_ITER(hh, bolt->connection_manager.connections, connection, next)
		reads += bolt_peer_of(connection)->reads_written_back;
	return reads;
}

static void rma_between_processes(struct rdm_options *options, const char *tag)
{
	struct bolt_fixture_endpoint endpoint;
	char *local = malloc(REGION_SIZE);
	struct fid_mr *local_mr;
	uint64_t remote_address, remote_key;
	int socket;
	pid_t peer;

	peer = rdm_pair_start(options, tag, target_peer, options, &endpoint, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(rdm_register_region(&endpoint, local, REGION_SIZE, FI_READ | FI_WRITE | FI_REMOTE_READ,
				     &local_mr), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_address), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_key), 0);

	/* A plain write, then writedata that the target waits for. */
	rdm_fill(local, 100000, 7);
	cr_assert_eq(fi_write(endpoint.ep, local, 50000, fi_mr_desc(local_mr), endpoint.peer,
			      remote_address, remote_key, &socket), 0);
	rdm_expect_completion(&endpoint, &socket, 0);
	/* 100,000 bytes: written by RDMA where the device can, remote CQ data after the data. */
	cr_assert_eq(fi_writedata(endpoint.ep, local, 100000, fi_mr_desc(local_mr), 0xcafe,
				  endpoint.peer, remote_address, remote_key, &peer), 0);
	rdm_expect_completion(&endpoint, &peer, 0);

	/* A read of the other half, the target's pattern. */
	memset(local, 0, REGION_SIZE);
	cr_assert_eq(fi_read(endpoint.ep, local, REGION_SIZE / 2, fi_mr_desc(local_mr), endpoint.peer,
			     remote_address + REGION_SIZE / 2, remote_key, local), 0);
	rdm_expect_completion(&endpoint, local, 0);
	cr_assert(rdm_check(local, REGION_SIZE / 2, 99), "read data differs");
	/* The target wrote it back by RDMA where both devices carry RDMA write. */
	cr_assert_eq(reads_written_back(&endpoint), options->send_only ? 0 : 1);

	/* inject_write reports nothing; reading the bytes back shows they landed. */
	rdm_fill(local, 64, 11);
	cr_assert_eq(fi_inject_write(endpoint.ep, local, 64, endpoint.peer, remote_address + 200000,
				     remote_key), 0);
	memset(local + 8192, 0, 64);
	cr_assert_eq(fi_read(endpoint.ep, local + 8192, 64, fi_mr_desc(local_mr), endpoint.peer,
			     remote_address + 200000, remote_key, local + 6), 0);
	rdm_expect_completion(&endpoint, local + 6, 0);
	cr_assert(rdm_check(local + 8192, 64, 11), "inject_write data");

	/* Large ones too: out of bounds, and a key the target never enabled. */
	cr_assert_eq(fi_write(endpoint.ep, local, 200000, NULL, endpoint.peer, remote_address + 100000,
			      remote_key, local + 4), 0);
	rdm_expect_completion(&endpoint, local + 4, FI_EINVAL);
	cr_assert_eq(fi_write(endpoint.ep, local, 100000, NULL, endpoint.peer, remote_address,
			      remote_key + 1000, local + 5), 0);
	rdm_expect_completion(&endpoint, local + 5, FI_EACCES);

	/* Out of bounds, and a key the target never enabled. */
	cr_assert_eq(fi_write(endpoint.ep, local, 4096, NULL, endpoint.peer,
			      remote_address + REGION_SIZE - 100, remote_key, local + 1), 0);
	rdm_expect_completion(&endpoint, local + 1, FI_EINVAL);
	cr_assert_eq(fi_read(endpoint.ep, local, 64, NULL, endpoint.peer, remote_address,
			     remote_key + 1000, local + 2), 0);
	rdm_expect_completion(&endpoint, local + 2, FI_EACCES);

	/* The NCCL flush: a read from our own address, of our own region. */
	cr_assert_eq(fi_av_insert(endpoint.av, NULL, 0, NULL, 0, NULL), 0);
	{
		char name[64];
		size_t length = sizeof(name);
		fi_addr_t self;

		cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
		cr_assert_eq(fi_av_insert(endpoint.av, name, 1, &self, 0, NULL), 1);
		rdm_fill(local, 64, 5);
		cr_assert_eq(fi_read(endpoint.ep, local + 4096, 64, fi_mr_desc(local_mr), self,
				     (uintptr_t) local, fi_mr_key(local_mr), local + 3), 0);
		rdm_expect_completion(&endpoint, local + 3, 0);
		cr_assert(rdm_check(local + 4096, 64, 5), "a read from our own address");
	}

	cr_assert_eq(rdm_send_value(socket, 1), 0);
	rdm_progress_for(&endpoint, 50);
	cr_assert_eq(bolt_fixture_process_status(peer), 0, "the target failed");
	/* FI_MR_ENDPOINT: regions close before their endpoint. */
	cr_assert_eq(fi_close(&endpoint.ep->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&local_mr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(options);
	close(socket);
	free(local);
}

Test(rma, thunderbolt)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };

	rma_between_processes(&options, "rma-tb");
}

Test(rma, thunderbolt_send_only)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE, .send_only = true };

	rma_between_processes(&options, "rma-tb-so");
}

Test(rma, rocev2)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };

	rma_between_processes(&options, "rma-roce");
}

/* FI_MR_ENDPOINT misuse: enable before bind, bind twice, a disabled region as a descriptor. */
Test(rma, mr_endpoint_misuse)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };
	struct bolt_fixture_endpoint endpoint;
	struct fid_mr *mr;
	char buffer[256];

	rdm_environment(&options, "rma-misuse");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer, sizeof(buffer), FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL), 0);
	cr_expect_eq(fi_mr_key(mr), FI_KEY_NOTAVAIL);
	cr_expect_eq(fi_mr_enable(mr), -FI_EOPBADSTATE, "enable before bind");
	cr_expect_eq(fi_send(endpoint.ep, buffer, 8, fi_mr_desc(mr), 0, NULL), -FI_EINVAL,
		     "a descriptor of a disabled region");
	cr_assert_eq(fi_mr_bind(mr, &endpoint.ep->fid, 0), 0);
	cr_expect_eq(fi_mr_bind(mr, &endpoint.ep->fid, 0), -FI_EINVAL, "bound twice");
	cr_assert_eq(fi_mr_enable(mr), 0);
	cr_expect_neq(fi_mr_key(mr), FI_KEY_NOTAVAIL);
	cr_expect_eq(fi_close(&endpoint.ep->fid), -FI_EBUSY, "endpoint closed before its region");
	cr_assert_eq(fi_close(&mr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/*
 * FI_MR_BASIC, as applications before API 1.5 get it: provider keys and
 * virtual addresses (fi_mr(3)), with no binding to an endpoint. Two regions
 * asked for with the same requested key get keys of their own, and a peer
 * reaches the target's region by its virtual address.
 */
static int basic_target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = calloc(1, REGION_SIZE);
	struct fid_mr *mr = NULL;
	int ret;

	ret = rdm_serve_region(&endpoint, options, socket, region, REGION_SIZE,
			       FI_REMOTE_WRITE | FI_REMOTE_READ, &mr);
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

static void rma_with_basic_mr_mode(const char *profile, const char *tag)
{
	struct rdm_options options = { .profile = profile, .mr_mode = BOLT_MR_BASIC };
	struct bolt_fixture_endpoint endpoint;
	char *local = calloc(1, REGION_SIZE), *other = calloc(1, 4096);
	struct fid_mr *local_mr, *other_mr;
	uint64_t remote_address, remote_key;
	int socket;
	pid_t peer;

	cr_assert(local && other);
	peer = rdm_pair_start(&options, tag, basic_target_peer, &options, &endpoint, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(endpoint.info->domain_attr->mr_mode, BOLT_MR_BASIC);
	cr_assert_eq(fi_mr_reg(endpoint.domain, local, REGION_SIZE, FI_READ | FI_WRITE, 0, 0, 0,
			       &local_mr, NULL), 0);
	cr_assert_eq(fi_mr_reg(endpoint.domain, other, 4096, FI_READ | FI_WRITE, 0, 0, 0, &other_mr,
			       NULL), 0, "the provider gives keys: the requested one is no matter");
	cr_assert_neq(fi_mr_key(local_mr), FI_KEY_NOTAVAIL);
	cr_assert_neq(fi_mr_key(local_mr), fi_mr_key(other_mr));
	cr_assert_eq(rdm_receive_value(socket, &remote_address), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_key), 0);

	/* Small and large, at the target's virtual addresses. */
	rdm_fill(local, 100000, 21);
	cr_assert_eq(fi_write(endpoint.ep, local, 100000, fi_mr_desc(local_mr), endpoint.peer,
			      remote_address + 1000, remote_key, local), 0);
	rdm_expect_completion(&endpoint, local, 0);
	rdm_fill(other, 64, 22);
	cr_assert_eq(fi_write(endpoint.ep, other, 64, fi_mr_desc(other_mr), endpoint.peer,
			      remote_address + 200000, remote_key, other), 0);
	rdm_expect_completion(&endpoint, other, 0);
	memset(local, 0, REGION_SIZE);
	cr_assert_eq(fi_read(endpoint.ep, local, 100000, fi_mr_desc(local_mr), endpoint.peer,
			     remote_address + 1000, remote_key, &socket), 0);
	rdm_expect_completion(&endpoint, &socket, 0);
	cr_assert(rdm_check(local, 100000, 21), "the large write, read back");
	cr_assert_eq(fi_read(endpoint.ep, local + 200000, 64, fi_mr_desc(local_mr), endpoint.peer,
			     remote_address + 200000, remote_key, &peer), 0);
	rdm_expect_completion(&endpoint, &peer, 0);
	cr_assert(rdm_check(local + 200000, 64, 22), "the small write, read back");

	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(bolt_fixture_process_status(peer), 0, "the target failed");
	cr_assert_eq(fi_close(&other_mr->fid), 0);
	cr_assert_eq(fi_close(&local_mr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
	close(socket);
	free(other);
	free(local);
}

Test(rma, basic_mr_mode_thunderbolt)
{
	rma_with_basic_mr_mode("thunderbolt", "rma-basic-tb");
}

Test(rma, basic_mr_mode_rocev2)
{
	rma_with_basic_mr_mode("rocev2", "rma-basic-roce");
}

/*
 * fi_mr(3)'s raw key calls work on any region: the raw key is the 8-byte key
 * and maps back to it. What bolt cannot honour fails with the documented
 * code: FI_RMA_EVENT and FI_RMA_PMEM registrations, a counter bound to a
 * region. iface is not looked at without FI_HMEM.
 */
Test(rma, mr_raw_keys_and_what_bolt_does_not_offer)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };
	struct bolt_fixture_endpoint endpoint;
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct iovec iov;
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1, .access = FI_REMOTE_WRITE };
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	char buffer[256];
	uint8_t raw[16];
	size_t raw_size = 4;
	uint64_t base = 0, mapped = 0;

	rdm_environment(&options, "rma-raw");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_expect_eq(fi_mr_reg(endpoint.domain, buffer, sizeof(buffer), FI_REMOTE_WRITE, 0, 0,
			       FI_RMA_EVENT, &mr, NULL), -FI_EBADFLAGS);
	cr_expect_eq(fi_mr_reg(endpoint.domain, buffer, sizeof(buffer), FI_REMOTE_WRITE, 0, 0,
			       FI_RMA_PMEM, &mr, NULL), -FI_EBADFLAGS);
	iov = (struct iovec) { .iov_base = buffer, .iov_len = sizeof(buffer) };
	attr.iface = (enum fi_hmem_iface) 77;   /* left uninitialised, say: ignored */
	cr_assert_eq(fi_mr_regattr(endpoint.domain, &attr, 0, &mr), 0);
	cr_assert_eq(fi_close(&mr->fid), 0);

	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer, sizeof(buffer), FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL), 0);
	cr_expect_eq(fi_mr_raw_attr(mr, &base, raw, &raw_size, 0), -FI_EOPBADSTATE,
		     "no key before enable");
	cr_assert_eq(fi_cntr_open(endpoint.domain, &cntr_attr, &cntr, NULL), 0);
	cr_expect_eq(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE), -FI_ENOSYS);
	cr_assert_eq(fi_mr_bind(mr, &endpoint.ep->fid, 0), 0);
	cr_assert_eq(fi_mr_enable(mr), 0);

	cr_expect_eq(fi_mr_raw_attr(mr, &base, raw, &raw_size, 0), -FI_ETOOSMALL);
	cr_assert_eq(raw_size, sizeof(uint64_t), "the size a raw key needs");
	cr_assert_eq(fi_mr_raw_attr(mr, &base, raw, &raw_size, 0), 0);
	cr_expect_eq(base, (uintptr_t) buffer, "FI_MR_VIRT_ADDR: the region's address");
	cr_expect_eq(fi_mr_map_raw(endpoint.domain, base, raw, 4, &mapped, 0), -FI_EINVAL);
	cr_assert_eq(fi_mr_map_raw(endpoint.domain, base, raw, raw_size, &mapped, 0), 0);
	cr_expect_eq(mapped, fi_mr_key(mr));
	cr_expect_eq(fi_mr_unmap_key(endpoint.domain, mapped), 0);

	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/* Without FI_MR_PROV_KEY the application's key is used; the one that means "no key" is refused. */
Test(rma, requested_keys_without_provider_keys)
{
	struct rdm_options options = { .profile = "rocev2",
				       .mr_mode = RDM_MR_MODE & ~(uint64_t) FI_MR_PROV_KEY };
	struct bolt_fixture_endpoint endpoint;
	struct fid_mr *mr, *refused, *taken;
	char buffer[256];

	rdm_environment(&options, "rma-keys");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer, 128, FI_REMOTE_WRITE, 0, 0x1234, 0, &mr,
			       NULL), 0);
	cr_assert_eq(fi_mr_bind(mr, &endpoint.ep->fid, 0), 0);
	cr_assert_eq(fi_mr_enable(mr), 0);
	cr_expect_eq(fi_mr_key(mr), 0x1234);
	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer + 128, 128, FI_REMOTE_WRITE, 0, 0x1234, 0,
			       &taken, NULL), 0);
	cr_assert_eq(fi_mr_bind(taken, &endpoint.ep->fid, 0), 0);
	cr_expect_eq(fi_mr_enable(taken), -FI_ENOKEY, "a key in use on the endpoint");
	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer + 128, 128, FI_REMOTE_WRITE, 0,
			       FI_KEY_NOTAVAIL, 0, &refused, NULL), 0);
	cr_assert_eq(fi_mr_bind(refused, &endpoint.ep->fid, 0), 0);
	cr_expect_eq(fi_mr_enable(refused), -FI_EKEYREJECTED);
	cr_assert_eq(fi_close(&refused->fid), 0);
	cr_assert_eq(fi_close(&taken->fid), 0);
	cr_assert_eq(fi_close(&mr->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/* Device MRs the domain's registration cache holds now. */
/* Registrations the cache keeps for later transfers: not those held, as a link's bounce buffers. */
static int cached_registrations(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_domain *domain = bolt_container_of(endpoint->domain, struct bolt_domain, domain_fid);
	struct bolt_mr_cache_stats stats;

	bolt_mr_cache_stats(domain->primary.mr_cache, &stats);
	return stats.registered - stats.pinned;
}

/* Bytes this endpoint's writes sent as stripes on data rails, to every peer. */
static uint64_t striped_bytes(struct bolt_fixture_endpoint *endpoint)
{
	return rdm_striped_bytes(endpoint->ep, 0, BOLT_MAX_CONNECTION_RAILS);
}

/*
 * A burst of writes posted at once, large (several rendezvous on the wire at
 * a time) and small, with one out-of-bounds write among them: each lands in
 * its own range, the bad one alone fails.
 */
#define BURST_CHUNK (128 * 1024)
#define BURST_WRITES 16
#define BURST_REGION (BURST_CHUNK * BURST_WRITES)

static size_t burst_write_length(int i)
{
	return i % 3 == 2 ? 3000 : BURST_CHUNK - (size_t) i * 1000;
}

static int burst_target_peer(int socket, void *argument)
{
	const struct rdm_options *options = argument;
	struct bolt_fixture_endpoint endpoint;
	char *region = calloc(1, BURST_REGION);
	struct fid_mr *mr = NULL;
	int ret;

	ret = rdm_serve_region(&endpoint, options, socket, region, BURST_REGION, FI_REMOTE_WRITE, &mr);
	for (int i = 0; !ret && i < BURST_WRITES; i++)
		if (!rdm_check(region + (size_t) i * BURST_CHUNK, burst_write_length(i), (uint32_t) (40 + i)))
			ret = 2;
	return rdm_region_peer_end(&endpoint, mr, region, ret);
}

/* data_rails: FI_BOLT_DATA_RAILS; with striped, every large write goes in stripes, else none. */
static void burst_of_writes(struct rdm_options *options, const char *tag, const char *data_rails,
			    bool striped)
{
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	char *local = malloc(BURST_REGION);
	struct fid_mr *local_mr;
	uint64_t remote_address, remote_key;
	int socket, failed = 0, succeeded = 0;
	uint64_t large_bytes = 0;
	pid_t peer;

	cr_assert(local);
	setenv("FI_BOLT_DATA_RAILS", data_rails, 1);
	peer = rdm_pair_start(options, tag, burst_target_peer, options, &endpoint, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(rdm_register_region(&endpoint, local, BURST_REGION, FI_WRITE, &local_mr), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_address), 0);
	cr_assert_eq(rdm_receive_value(socket, &remote_key), 0);
	for (int i = 0; i < BURST_WRITES; i++) {
		size_t offset = (size_t) i * BURST_CHUNK;

		rdm_fill(local + offset, burst_write_length(i), (uint32_t) (40 + i));
		if (burst_write_length(i) >= BOLT_RENDEZVOUS_THRESHOLD)
			large_bytes += burst_write_length(i);
		cr_assert_eq(fi_write(endpoint.ep, local + offset, burst_write_length(i),
				      fi_mr_desc(local_mr), endpoint.peer, remote_address + offset,
				      remote_key, local + offset), 0);
		if (i == BURST_WRITES / 2)
			cr_assert_eq(fi_write(endpoint.ep, local, BURST_CHUNK, fi_mr_desc(local_mr),
					      endpoint.peer, remote_address + BURST_REGION - 10,
					      remote_key, &socket), 0);
	}
	for (int i = 0; i <= BURST_WRITES; i++) {
		int ret = rdm_wait(&endpoint, &entry, &error);

		if (ret == -FI_EAVAIL) {
			cr_assert_eq(error.op_context, &socket);
			cr_assert_eq(error.err, FI_EINVAL);
			failed++;
			continue;
		}
		cr_assert_eq(ret, 0);
		cr_assert_neq(entry.op_context, &socket, "the out-of-bounds write succeeded");
		succeeded++;
	}
	cr_assert_eq(failed, 1);
	cr_assert_eq(succeeded, BURST_WRITES);
	/* A segment written again counts its bytes again: then at least every large write's. */
	if (striped && rdm_rewritten_segments(endpoint.ep))
		cr_assert_geq(striped_bytes(&endpoint), large_bytes, "%llu bytes went in stripes",
			      (unsigned long long) striped_bytes(&endpoint));
	else
		cr_assert_eq(striped_bytes(&endpoint), striped ? large_bytes : 0,
			     "%llu bytes went in stripes (%llu segments written again)",
			     (unsigned long long) striped_bytes(&endpoint),
			     (unsigned long long) rdm_rewritten_segments(endpoint.ep));
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(bolt_fixture_process_status(peer), 0, "the target found wrong data");
	/* Registrations of memory in an open MR stay for the next transfer; closing it drops them. */
	if (!options->send_only)
		cr_assert_gt(cached_registrations(&endpoint), 0);
	cr_assert_eq(fi_close(&local_mr->fid), 0);
	cr_assert_eq(cached_registrations(&endpoint), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(options);
	unsetenv("FI_BOLT_DATA_RAILS");
	close(socket);
	free(local);
}

Test(rma, burst_thunderbolt)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };

	burst_of_writes(&options, "rma-burst-tb", "1", true);
}

/* By default: none on Thunderbolt, whose few queue pairs connections need; one on RoCE. */
Test(rma, burst_thunderbolt_default_data_rails)
{
	/* The Thunderbolt profile's 10 queue pairs. */
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE,
				       .software_device_only = true };

	burst_of_writes(&options, "rma-burst-tb-d", "-1", false);
}

Test(rma, burst_rocev2_default_data_rails)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };

	burst_of_writes(&options, "rma-burst-roce-d", "-1", true);
}

Test(rma, burst_thunderbolt_without_data_rails)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };

	burst_of_writes(&options, "rma-burst-tb-0", "0", false);
}

Test(rma, burst_rocev2_four_data_rails)
{
	struct rdm_options options = { .profile = "rocev2", .mr_mode = RDM_MR_MODE };

	burst_of_writes(&options, "rma-burst-roce", "4", true);
}

Test(rma, burst_thunderbolt_send_only)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE, .send_only = true };

	burst_of_writes(&options, "rma-burst-tb-so", "1", false);
}

/*
 * A region bound to one endpoint is a local descriptor on every endpoint of
 * its domain, as fabtests' fi_multi_ep uses one region for all its endpoints;
 * remote access stays with the endpoint the region is bound to.
 */
Test(rma, descriptor_of_another_endpoint_of_the_domain)
{
	struct rdm_options options = { .profile = "thunderbolt", .mr_mode = RDM_MR_MODE };
	struct bolt_fixture_endpoint endpoint;
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct fid_ep *other;
	struct fid_mr *mr;
	char buffer[512], name[64];
	size_t length = sizeof(name);
	void *desc;
	int ret;

	rdm_environment(&options, "rma-other");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_assert_eq(fi_endpoint(endpoint.domain, endpoint.info, &other, NULL), 0);
	cr_assert_eq(fi_ep_bind(other, &endpoint.cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(other, &endpoint.av->fid, 0), 0);
	cr_assert_eq(fi_enable(other), 0);
	cr_assert_eq(fi_mr_reg(endpoint.domain, buffer, sizeof(buffer), FI_SEND | FI_RECV, 0, 0, 0,
			       &mr, NULL), 0);
	cr_assert_eq(fi_mr_bind(mr, &other->fid, 0), 0);
	cr_assert_eq(fi_mr_enable(mr), 0);
	desc = fi_mr_desc(mr);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
	cr_assert_eq(fi_av_insert(endpoint.av, name, 1, &endpoint.peer, 0, NULL), 1);

	memset(buffer + 256, 0, 256);
	rdm_fill(buffer, 256, 5);
	ret = (int) fi_recv(endpoint.ep, buffer + 256, 256, desc, FI_ADDR_UNSPEC, buffer + 256);
	cr_assert_eq(ret, 0, "fi_recv: %d", ret);
	cr_assert_eq(fi_send(endpoint.ep, buffer, 256, desc, endpoint.peer, buffer), 0);
	for (int completions = 0; completions < 2; completions++)
		cr_assert_eq(rdm_wait(&endpoint, &entry, &error), 0, "error %d", error.err);
	cr_assert(rdm_check(buffer + 256, 256, 5), "the message arrived damaged");

	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(fi_close(&other->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}
