/*
 * bolt_bench.c: what an application sees of bolt, next to libfabric's own
 * shm and tcp providers, in one run on one machine: fi_send and fi_write
 * bandwidth with a window of operations in flight, and fi_send ping-pong
 * latency, between this process (the initiator, which prints) and a child it
 * forks (the target). The two exchange endpoint names, memory keys and
 * requests over a socket pair. Only the public libfabric API is used; bolt is
 * found through FI_PROVIDER_PATH like any provider, and the software device's
 * profile comes from FI_BOLT_SOFT (with FI_BOLT_SOFT_TOPOLOGY=mesh:2x2, the
 * target is host 1, two cables away). util/bolt_bench_compare.sh puts these
 * figures next to the raw device's (util/softrdma_bench).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "bolt_fixture.h"
#include "bolt_peer_host.h"

#define BENCH_POOL_SIZE 256             /* operations in flight, receives included */
#define BENCH_MAX_WINDOW 64
#define BENCH_TIMEOUT_S 30.0            /* without a completion, and for data to land */
#define BENCH_LANDING_TIMEOUT_S 5.0     /* for written data to show at the target */
#define BENCH_SOCKET_TIMEOUT_MS 120000  /* for the peer's next message */
#define BENCH_MR_KEY 0xb017             /* requested keys, without FI_MR_PROV_KEY */
#define BENCH_BANDWIDTH_BYTES (1024ull << 20)  /* as util/softrdma_bench */
#define BENCH_LATENCY_BYTES (64ull << 20)

enum bench_kind { BENCH_RECEIVE, BENCH_SEND, BENCH_WRITE };
enum bench_test { BENCH_TEST_DONE, BENCH_TEST_SEND, BENCH_TEST_WRITE, BENCH_TEST_PINGPONG };

struct bench_options {
	char *providers;
	size_t min_size, max_size, latency_max_size;
	unsigned int iterations;        /* of every figure; 0: from the size */
	unsigned int factor, window;
	bool csv;
	unsigned int trace_ms;          /* 0: the tables; else a write trace in steps of this */
	double trace_seconds;           /* for so long */
};

/* One posted operation; its fi_context comes first, so op_context points to it. */
struct bench_operation {
	struct fi_context context;
	enum bench_kind kind;
	struct bench_operation *next_free;
};

struct bench_endpoint {
	const char *provider;           /* as asked: bolt, shm, tcp */
	struct bolt_fixture_endpoint fixture;
	size_t buffer_size;
	char *source;                   /* what this side sends or writes */
	char *target;                   /* where this side receives, and where the peer writes */
	struct fid_mr *source_mr, *target_mr;
	void *source_desc, *target_desc;
	uint64_t peer_key, peer_address;
	struct bench_operation operations[BENCH_POOL_SIZE];
	struct bench_operation *free_operations;
	uint64_t receives_done, transmits_done;
	int socket;
};

/* What the initiator asks of the target, over the socket pair. */
struct bench_request {
	uint32_t test;
	uint32_t seed;
	uint32_t window;
	uint32_t unused;
	uint64_t size;
	uint64_t iterations;
};

/* Where a side's target buffer is written to (its name travels first). */
struct bench_address {
	uint64_t key;
	uint64_t address;
};

static const char *bench_role = "initiator";
static double bench_started;            /* the program's start: a fault plan's times count from about then */

static double bench_now(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) now.tv_sec + (double) now.tv_nsec * 1e-9;
}

/* Reports a failed call; ret is a negative libfabric error code, and is returned. */
static int bench_fail(const char *call, int ret)
{
	fprintf(stderr, "bolt_bench %s: %s failed: %s\n", bench_role, call, fi_strerror(-ret));
	return ret;
}

static uint64_t bench_pattern_word(uint64_t index, uint32_t seed)
{
	return (index + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t) seed << 32 | seed);
}

static void bench_fill(char *buffer, size_t size, uint32_t seed)
{
	for (size_t offset = 0; offset < size; offset += 8) {
		uint64_t word = bench_pattern_word(offset / 8, seed);

		memcpy(buffer + offset, &word, size - offset < 8 ? size - offset : 8);
	}
}

static bool bench_check(const char *buffer, size_t size, uint32_t seed)
{
	for (size_t offset = 0; offset < size; offset += 8) {
		uint64_t word = bench_pattern_word(offset / 8, seed);

		if (memcmp(buffer + offset, &word, size - offset < 8 ? size - offset : 8))
			return false;
	}
	return true;
}

/* Completions: each returns its operation to the pool and is counted. */
static int bench_cq_error(struct bench_endpoint *endpoint)
{
	struct fi_cq_err_entry error = { 0 };
	char text[256];
	ssize_t ret = fi_cq_readerr(endpoint->fixture.cq, &error, 0);

	if (ret < 0)
		return bench_fail("fi_cq_readerr", (int) ret);
	if (error.prov_errno)
		fi_cq_strerror(endpoint->fixture.cq, error.prov_errno, error.err_data, text,
			       sizeof(text));
	fprintf(stderr, "bolt_bench %s: completion error: %s%s%s\n", bench_role,
		fi_strerror(error.err), error.prov_errno ? "; provider: " : "",
		error.prov_errno ? text : "");
	return error.err ? -error.err : -FI_EIO;
}

static int bench_progress(struct bench_endpoint *endpoint)
{
	struct fi_cq_entry entries[16];
	ssize_t count = fi_cq_read(endpoint->fixture.cq, entries, 16);

	if (count == -FI_EAGAIN)
		return 0;
	if (count == -FI_EAVAIL)
		return bench_cq_error(endpoint);
	if (count < 0)
		return bench_fail("fi_cq_read", (int) count);
	for (ssize_t index = 0; index < count; index++) {
		struct bench_operation *operation = entries[index].op_context;

		if (operation->kind == BENCH_RECEIVE)
			endpoint->receives_done++;
		else
			endpoint->transmits_done++;
		operation->next_free = endpoint->free_operations;
		endpoint->free_operations = operation;
	}
	return 0;
}

/*
 * Whether count has not moved for BENCH_TIMEOUT_S: a run is judged by its
 * progress, not its length, which a slow device (Soft-RoCE in a VM) stretches.
 */
static bool bench_stalled(uint64_t count, uint64_t *seen, double *deadline)
{
	double now = bench_now();

	if (count != *seen) {
		*seen = count;
		*deadline = now + BENCH_TIMEOUT_S;
		return false;
	}
	return now > *deadline;
}

/* Progresses until *counter reaches goal. */
static int bench_wait_count(struct bench_endpoint *endpoint, const uint64_t *counter,
			    uint64_t goal)
{
	double deadline = bench_now() + BENCH_TIMEOUT_S;
	uint64_t seen = *counter;

	while (*counter < goal) {
		int ret = bench_progress(endpoint);

		if (ret)
			return ret;
		if (bench_stalled(*counter, &seen, &deadline))
			return bench_fail("waiting for completions", -FI_ETIMEDOUT);
	}
	return 0;
}

static ssize_t bench_start(struct bench_endpoint *endpoint, struct bench_operation *operation,
			   size_t size)
{
	switch (operation->kind) {
	case BENCH_RECEIVE:
		return fi_recv(endpoint->fixture.ep, endpoint->target, size, endpoint->target_desc,
			       FI_ADDR_UNSPEC, &operation->context);
	case BENCH_SEND:
		return fi_send(endpoint->fixture.ep, endpoint->source, size, endpoint->source_desc,
			       endpoint->fixture.peer, &operation->context);
	case BENCH_WRITE:
		return fi_write(endpoint->fixture.ep, endpoint->source, size, endpoint->source_desc,
				endpoint->fixture.peer, endpoint->peer_address, endpoint->peer_key,
				&operation->context);
	}
	return -FI_EINVAL;
}

/* Posts one operation; on -FI_EAGAIN reads the CQ and tries again. */
static int bench_post(struct bench_endpoint *endpoint, enum bench_kind kind, size_t size)
{
	static const char *const calls[] = { "fi_recv", "fi_send", "fi_write" };
	double deadline = bench_now() + BENCH_TIMEOUT_S;
	struct bench_operation *operation;
	ssize_t ret;

	while (!endpoint->free_operations) {
		ret = bench_progress(endpoint);
		if (ret)
			return (int) ret;
		if (bench_now() > deadline)
			return bench_fail("waiting for a free operation", -FI_ETIMEDOUT);
	}
	operation = endpoint->free_operations;
	endpoint->free_operations = operation->next_free;
	operation->kind = kind;
	while ((ret = bench_start(endpoint, operation, size)) == -FI_EAGAIN) {
		ret = bench_progress(endpoint);
		if (!ret && bench_now() > deadline)
			ret = -FI_ETIMEDOUT;
		if (ret)
			break;
	}
	if (!ret)
		return 0;
	operation->next_free = endpoint->free_operations;
	endpoint->free_operations = operation;
	return bench_fail(calls[kind], (int) ret);
}

/* The socket pair. Reading progresses the endpoint, if any, while it waits. */
static int bench_socket_write(int socket, const void *data, size_t size)
{
	int ret = bolt_fixture_socket_write(socket, data, size);

	return ret ? bench_fail("write to the socket pair", ret) : 0;
}

static int bench_progress_while_waiting(void *endpoint)
{
	return bench_progress(endpoint);
}

static int bench_socket_read(struct bench_endpoint *endpoint, int socket, void *data, size_t size)
{
	struct bolt_fixture_idle progress = {
		.idle = bench_progress_while_waiting, .argument = endpoint,
	};
	int ret = bolt_fixture_socket_read(socket, data, size, BENCH_SOCKET_TIMEOUT_MS,
					   endpoint ? &progress : NULL);

	return ret ? bench_fail("waiting for the peer", ret) : 0;
}

/* Values: 0 for ready and done, a count of wrong transfers, or the peer's negative error. */
static int bench_send_value(int socket, int64_t value)
{
	return bench_socket_write(socket, &value, sizeof(value));
}

static int bench_receive_value(struct bench_endpoint *endpoint, int64_t *value)
{
	int ret = bench_socket_read(endpoint, endpoint->socket, value, sizeof(*value));

	if (ret)
		return ret;
	if (*value < 0) {
		fprintf(stderr, "bolt_bench %s: the %s failed: %s\n", bench_role,
			strcmp(bench_role, "target") ? "target" : "initiator",
			fi_strerror((int) -*value));
		return (int) *value;
	}
	return 0;
}

/* Opening and closing one provider's objects. */
static struct fi_info *bench_hints(const char *provider)
{
	struct fi_info *hints = bolt_fixture_hints(FI_MSG | FI_RMA, provider);

	if (!hints)
		return NULL;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	return hints;
}

/* "tcp" is served as "tcp;ofi_rxm": the asked name, then utility providers. */
static bool bench_provider_matches(const char *asked, const char *returned)
{
	size_t length = strlen(asked);

	return !strncmp(asked, returned, length) &&
	       (returned[length] == '\0' || returned[length] == ';');
}

static int bench_register(struct bench_endpoint *endpoint, char *buffer, uint64_t access,
			  uint64_t requested_key, struct fid_mr **mr)
{
	int ret = bolt_fixture_register_region(&endpoint->fixture, buffer, endpoint->buffer_size,
					       access, requested_key, false, mr);

	return ret ? bench_fail(endpoint->fixture.failed_call, ret) : 0;
}

/* The target buffer is always registered: the peer writes to it. */
static int bench_register_buffers(struct bench_endpoint *endpoint)
{
	bool local = endpoint->fixture.info->domain_attr->mr_mode & FI_MR_LOCAL;
	int ret;

	ret = bench_register(endpoint, endpoint->target, FI_RECV | FI_REMOTE_WRITE, BENCH_MR_KEY,
			     &endpoint->target_mr);
	if (ret || !local)
		return ret;
	endpoint->target_desc = fi_mr_desc(endpoint->target_mr);
	ret = bench_register(endpoint, endpoint->source, FI_SEND | FI_WRITE, BENCH_MR_KEY + 1,
			     &endpoint->source_mr);
	if (!ret)
		endpoint->source_desc = fi_mr_desc(endpoint->source_mr);
	return ret;
}

static int bench_allocate_buffers(struct bench_endpoint *endpoint)
{
	void *source = NULL, *target = NULL;

	if (posix_memalign(&source, 4096, endpoint->buffer_size) ||
	    posix_memalign(&target, 4096, endpoint->buffer_size)) {
		free(source);
		return bench_fail("posix_memalign", -FI_ENOMEM);
	}
	/* Touched now, so that no measurement pays for the first page faults. */
	memset(source, 0, endpoint->buffer_size);
	memset(target, 0, endpoint->buffer_size);
	endpoint->source = source;
	endpoint->target = target;
	for (int index = BENCH_POOL_SIZE - 1; index >= 0; index--) {
		endpoint->operations[index].next_free = endpoint->free_operations;
		endpoint->free_operations = &endpoint->operations[index];
	}
	return 0;
}

static int bench_open(struct bench_endpoint *endpoint)
{
	struct bolt_fixture_options options = {
		.version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
		.cq_format = FI_CQ_FORMAT_CONTEXT, .cq_size = 2 * BENCH_POOL_SIZE,
		.av_type = FI_AV_TABLE,
	};
	struct bolt_fixture_endpoint *fixture = &endpoint->fixture;
	struct fi_info *hints = bench_hints(endpoint->provider);
	int ret;

	if (!hints)
		return bench_fail("fi_allocinfo", -FI_ENOMEM);
	ret = bolt_fixture_open_domain(fixture, hints, &options);
	fi_freeinfo(hints);
	if (ret)
		return bench_fail(fixture->failed_call, ret);
	if (!bench_provider_matches(endpoint->provider, fixture->info->fabric_attr->prov_name)) {
		fprintf(stderr, "bolt_bench %s: fi_getinfo for %s returned provider %s\n",
			bench_role, endpoint->provider, fixture->info->fabric_attr->prov_name);
		return -FI_ENODATA;
	}
	if (fixture->info->domain_attr->av_type != FI_AV_UNSPEC)
		options.av_type = fixture->info->domain_attr->av_type;
	ret = bolt_fixture_open_endpoint(fixture, fixture, &options);
	if (ret)
		return bench_fail(fixture->failed_call, ret);
	ret = fi_enable(fixture->ep);
	if (ret)
		return bench_fail("fi_enable", ret);
	ret = bench_allocate_buffers(endpoint);
	return ret ? ret : bench_register_buffers(endpoint);
}

static void bench_close_mr(struct fid_mr *mr)
{
	int ret = mr ? fi_close(&mr->fid) : 0;

	if (ret)
		bench_fail("fi_close (MR)", ret);
}

static void bench_close(struct bench_endpoint *endpoint)
{
	int ret;

	bench_close_mr(endpoint->source_mr);
	bench_close_mr(endpoint->target_mr);
	ret = bolt_fixture_close(&endpoint->fixture);
	if (ret)
		bench_fail(endpoint->fixture.failed_call, ret);
	free(endpoint->source);
	free(endpoint->target);
}

/* Exchanges names (inserting the peer's into the AV), then target keys and addresses. */
static int bench_connect(struct bench_endpoint *endpoint)
{
	struct bench_address self = { 0 }, peer;
	int ret;

	ret = bolt_fixture_exchange_names(&endpoint->fixture, endpoint->socket,
					  BENCH_SOCKET_TIMEOUT_MS);
	if (ret)
		return bench_fail(endpoint->fixture.failed_call, ret);
	self.key = fi_mr_key(endpoint->target_mr);
	if (self.key == FI_KEY_NOTAVAIL)
		return bench_fail("fi_mr_key", -FI_ENOKEY);
	self.address = endpoint->fixture.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
		       (uint64_t) (uintptr_t) endpoint->target : 0;
	ret = bench_socket_write(endpoint->socket, &self, sizeof(self));
	if (!ret)
		ret = bench_socket_read(NULL, endpoint->socket, &peer, sizeof(peer));
	if (ret)
		return ret;
	endpoint->peer_key = peer.key;
	endpoint->peer_address = peer.address;
	return 0;
}

/* The target's side of each test. */
static int bench_serve_send(struct bench_endpoint *endpoint, const struct bench_request *request)
{
	uint64_t depth = 2 * (uint64_t) request->window, posted = 0, base = endpoint->receives_done;
	uint64_t seen = endpoint->receives_done;
	double deadline = bench_now() + BENCH_TIMEOUT_S;
	int ret = 0;

	memset(endpoint->target, 0, request->size);
	if (depth > request->iterations)
		depth = request->iterations;
	for (; posted < depth && !ret; posted++)
		ret = bench_post(endpoint, BENCH_RECEIVE, request->size);
	if (!ret)
		ret = bench_send_value(endpoint->socket, 0);    /* ready */
	while (!ret && endpoint->receives_done - base < request->iterations) {
		ret = bench_progress(endpoint);
		for (; !ret && posted < request->iterations &&
		       posted - (endpoint->receives_done - base) < depth; posted++)
			ret = bench_post(endpoint, BENCH_RECEIVE, request->size);
		if (!ret && bench_stalled(endpoint->receives_done, &seen, &deadline))
			ret = bench_fail("receiving every message", -FI_ETIMEDOUT);
	}
	if (!ret)
		ret = bench_send_value(endpoint->socket, 0);    /* received */
	if (!ret)
		ret = bench_send_value(endpoint->socket,
				       !bench_check(endpoint->target, request->size, request->seed));
	return ret;
}

/* Writes raise no completion here: the data is checked until it is right or time is up. */
static int bench_serve_write(struct bench_endpoint *endpoint, const struct bench_request *request)
{
	double deadline;
	int64_t finished;
	int ret;

	memset(endpoint->target, 0, request->size);
	ret = bench_send_value(endpoint->socket, 0);            /* ready */
	if (!ret)
		ret = bench_receive_value(endpoint, &finished);
	deadline = bench_now() + BENCH_LANDING_TIMEOUT_S;
	while (!ret && !bench_check(endpoint->target, request->size, request->seed)) {
		ret = bench_progress(endpoint);
		if (!ret && bench_now() > deadline)
			return bench_send_value(endpoint->socket, 1);
	}
	return ret ? ret : bench_send_value(endpoint->socket, 0);
}

static int bench_serve_pingpong(struct bench_endpoint *endpoint,
				const struct bench_request *request)
{
	uint64_t receives = endpoint->receives_done, transmits = endpoint->transmits_done;
	int ret;

	memset(endpoint->target, 0, request->size);
	bench_fill(endpoint->source, request->size, request->seed);
	ret = bench_post(endpoint, BENCH_RECEIVE, request->size);
	if (!ret)
		ret = bench_send_value(endpoint->socket, 0);    /* ready */
	for (uint64_t index = 0; !ret && index < request->iterations; index++) {
		ret = bench_wait_count(endpoint, &endpoint->receives_done, receives + index + 1);
		if (!ret && index + 1 < request->iterations)
			ret = bench_post(endpoint, BENCH_RECEIVE, request->size);
		if (!ret)
			ret = bench_post(endpoint, BENCH_SEND, request->size);
	}
	if (!ret)
		ret = bench_wait_count(endpoint, &endpoint->transmits_done,
				       transmits + request->iterations);
	if (!ret)
		ret = bench_send_value(endpoint->socket,
				       !bench_check(endpoint->target, request->size, request->seed));
	return ret;
}

/* Serves requests until the initiator is done; a failure is reported to it. */
static int bench_serve(struct bench_endpoint *endpoint)
{
	for (;;) {
		struct bench_request request;
		int ret = bench_socket_read(endpoint, endpoint->socket, &request, sizeof(request));

		if (ret)
			return ret;
		if (request.size > endpoint->buffer_size)
			ret = bench_fail("the request", -FI_EINVAL);
		else if (request.test == BENCH_TEST_DONE)
			return 0;
		else if (request.test == BENCH_TEST_SEND)
			ret = bench_serve_send(endpoint, &request);
		else if (request.test == BENCH_TEST_WRITE)
			ret = bench_serve_write(endpoint, &request);
		else if (request.test == BENCH_TEST_PINGPONG)
			ret = bench_serve_pingpong(endpoint, &request);
		else
			ret = bench_fail("the request", -FI_EINVAL);
		if (ret) {
			bench_send_value(endpoint->socket, ret);
			return ret;
		}
	}
}

/* The initiator's side: each measurement returns its seconds and wrong transfers. */
static int bench_ask(struct bench_endpoint *endpoint, const struct bench_request *request)
{
	int64_t ready;
	int ret = bench_socket_write(endpoint->socket, request, sizeof(*request));

	return ret ? ret : bench_receive_value(endpoint, &ready);
}

/* Keeps request->window operations in flight until request->iterations have completed. */
static int bench_transmit_window(struct bench_endpoint *endpoint, enum bench_kind kind,
				 const struct bench_request *request)
{
	uint64_t base = endpoint->transmits_done, posted = 0, seen = endpoint->transmits_done;
	double deadline = bench_now() + BENCH_TIMEOUT_S;
	int ret = 0;

	while (!ret && endpoint->transmits_done - base < request->iterations) {
		for (; !ret && posted < request->iterations &&
		       posted - (endpoint->transmits_done - base) < request->window; posted++)
			ret = bench_post(endpoint, kind, request->size);
		if (!ret)
			ret = bench_progress(endpoint);
		if (!ret && bench_stalled(endpoint->transmits_done, &seen, &deadline))
			ret = bench_fail("waiting for completions", -FI_ETIMEDOUT);
	}
	return ret;
}

/*
 * A window of sends or writes, timed from the first post: fi_send until the
 * target has every message (it says so), fi_write until the last write
 * completion, after which the target is told to look at the data.
 */
static int bench_run_window(struct bench_endpoint *endpoint, enum bench_kind kind,
			    const struct bench_request *request, double *seconds, int64_t *wrong)
{
	int64_t received;
	double start;
	int ret;

	bench_fill(endpoint->source, request->size, request->seed);
	ret = bench_ask(endpoint, request);
	start = bench_now();
	if (!ret)
		ret = bench_transmit_window(endpoint, kind, request);
	if (!ret && kind == BENCH_SEND)
		ret = bench_receive_value(endpoint, &received);
	*seconds = bench_now() - start;
	if (!ret && kind == BENCH_WRITE)
		ret = bench_send_value(endpoint->socket, 0);    /* finished */
	return ret ? ret : bench_receive_value(endpoint, wrong);
}

static int bench_run_send(struct bench_endpoint *endpoint, const struct bench_request *request,
			  double *seconds, int64_t *wrong)
{
	return bench_run_window(endpoint, BENCH_SEND, request, seconds, wrong);
}

static int bench_run_write(struct bench_endpoint *endpoint, const struct bench_request *request,
			   double *seconds, int64_t *wrong)
{
	return bench_run_window(endpoint, BENCH_WRITE, request, seconds, wrong);
}

static int bench_run_pingpong(struct bench_endpoint *endpoint,
			      const struct bench_request *request, double *seconds,
			      int64_t *wrong)
{
	uint64_t receives = endpoint->receives_done, transmits = endpoint->transmits_done;
	double start;
	int ret;

	bench_fill(endpoint->source, request->size, request->seed);
	memset(endpoint->target, 0, request->size);
	ret = bench_ask(endpoint, request);
	start = bench_now();
	for (uint64_t index = 0; !ret && index < request->iterations; index++) {
		ret = bench_post(endpoint, BENCH_RECEIVE, request->size);
		if (!ret)
			ret = bench_post(endpoint, BENCH_SEND, request->size);
		if (!ret)
			ret = bench_wait_count(endpoint, &endpoint->receives_done,
					       receives + index + 1);
	}
	*seconds = bench_now() - start;
	if (!ret)
		ret = bench_wait_count(endpoint, &endpoint->transmits_done,
				       transmits + request->iterations);
	if (!ret)
		ret = bench_receive_value(endpoint, wrong);
	*wrong += !bench_check(endpoint->target, request->size, request->seed);
	return ret;
}

typedef int (*bench_runner)(struct bench_endpoint *endpoint, const struct bench_request *request,
			    double *seconds, int64_t *wrong);

/* One figure: a warm-up of an eighth of the iterations, then the measured run. */
static int bench_measure(struct bench_endpoint *endpoint, bench_runner run,
			 struct bench_request request, double *seconds, int64_t *wrong)
{
	struct bench_request warm_up = request;
	int ret;

	warm_up.iterations = request.iterations / 8 + 1;
	ret = run(endpoint, &warm_up, seconds, wrong);
	return ret ? ret : run(endpoint, &request, seconds, wrong);
}

static uint64_t bench_iterations(size_t size, uint64_t bytes, uint64_t least, uint64_t most)
{
	uint64_t iterations = bytes / size;

	return iterations < least ? least : iterations > most ? most : iterations;
}

static const char *bench_profile(const struct bench_endpoint *endpoint)
{
	const char *profile = getenv("FI_BOLT_SOFT");

	if (strcmp(endpoint->provider, "bolt"))
		return "-";
	return profile && *profile ? profile : "hardware";
}

static void bench_print_header(const struct bench_endpoint *endpoint,
			       const struct bench_options *options)
{
	const struct fi_info *info = endpoint->fixture.info;
	int mr_mode = info->domain_attr->mr_mode;
	char mr_text[256];

	if (options->csv)
		return;
	printf("# bolt_bench: provider %s (%s), profile %s, fabric %s, domain %s, FI_EP_RDM, "
	       "2 processes (fork)\n", endpoint->provider, info->fabric_attr->prov_name,
	       bench_profile(endpoint), info->fabric_attr->name, info->domain_attr->name);
	printf("# mr_mode [%s], window %u operations in flight, FI_CQ_FORMAT_CONTEXT\n",
	       fi_tostr_r(mr_text, sizeof(mr_text), &mr_mode, FI_TYPE_MR_MODE), options->window);
	if (options->iterations)
		printf("# iterations: %u per figure, after a warm-up of 1/8\n", options->iterations);
	else
		printf("# iterations: bandwidth %llu MiB per size (16 to 20000), latency %llu MiB per "
		       "size (100 to 10000), each after a warm-up of 1/8\n", BENCH_BANDWIDTH_BYTES >> 20,
		       BENCH_LATENCY_BYTES >> 20);
	printf("# fi_send and fi_write bandwidth, GB/s = 1e9 B/s; send: from the first post until "
	       "the target has every message; write: until the last write completion, as the "
	       "provider defines it (bolt: placed at the target)\n");
	printf("# #wrong: the last transfer of each size checked, send and write\n");
	printf("# %10s %8s %11s %11s %7s\n", "size", "iters", "send_GB/s", "write_GB/s", "#wrong");
}

static void bench_print_csv(const struct bench_endpoint *endpoint, const char *test, size_t size,
			    uint64_t iterations, const char *figures, int64_t wrong)
{
	printf("%s,%s,%s,%s,%s,%zu,%" PRIu64 ",%s,%" PRId64 "\n", endpoint->provider,
	       bench_profile(endpoint), endpoint->fixture.info->fabric_attr->name,
	       endpoint->fixture.info->domain_attr->name, test, size, iterations, figures, wrong);
}

static int bench_bandwidth_table(struct bench_endpoint *endpoint,
				 const struct bench_options *options)
{
	uint32_t seed = 1;

	for (size_t size = options->min_size; size <= options->max_size; size *= options->factor) {
		struct bench_request request = {
			.window = options->window, .size = size,
			.iterations = options->iterations ? options->iterations :
				      bench_iterations(size, BENCH_BANDWIDTH_BYTES, 16, 20000),
		};
		double send_seconds, write_seconds, send_rate, write_rate;
		int64_t send_wrong = 0, write_wrong = 0;
		char figures[64];
		int ret;

		request.test = BENCH_TEST_SEND;
		request.seed = seed++;
		ret = bench_measure(endpoint, bench_run_send, request, &send_seconds, &send_wrong);
		request.test = BENCH_TEST_WRITE;
		request.seed = seed++;
		if (!ret)
			ret = bench_measure(endpoint, bench_run_write, request, &write_seconds,
					    &write_wrong);
		if (ret)
			return ret;
		send_rate = (double) size * request.iterations / send_seconds / 1e9;
		write_rate = (double) size * request.iterations / write_seconds / 1e9;
		snprintf(figures, sizeof(figures), "%.4f,%.4f,", send_rate, write_rate);
		if (options->csv)
			bench_print_csv(endpoint, "bandwidth", size, request.iterations, figures,
					send_wrong + write_wrong);
		else
			printf("  %10zu %8" PRIu64 " %11.4f %11.4f %7" PRId64 "\n", size,
			       request.iterations, send_rate, write_rate, send_wrong + write_wrong);
		fflush(stdout);
		if (size > options->max_size / options->factor)
			break;
	}
	return 0;
}

static int bench_latency_table(struct bench_endpoint *endpoint,
			       const struct bench_options *options)
{
	uint32_t seed = 1000;

	if (!options->csv) {
		printf("# fi_send ping-pong latency, half round trip; #wrong: the last ping and "
		       "pong of each size checked\n");
		printf("# %10s %8s %11s %7s\n", "size", "iters", "latency_us", "#wrong");
	}
	for (size_t size = options->min_size; size <= options->latency_max_size;
	     size *= options->factor) {
		struct bench_request request = {
			.test = BENCH_TEST_PINGPONG, .seed = seed++, .window = 1, .size = size,
			.iterations = options->iterations ? options->iterations :
				      bench_iterations(size, BENCH_LATENCY_BYTES, 100, 10000),
		};
		double seconds, latency;
		int64_t wrong = 0;
		char figures[64];
		int ret = bench_measure(endpoint, bench_run_pingpong, request, &seconds, &wrong);

		if (ret)
			return ret;
		latency = seconds / (double) request.iterations / 2 * 1e6;
		snprintf(figures, sizeof(figures), ",,%.2f", latency);
		if (options->csv)
			bench_print_csv(endpoint, "latency", size, request.iterations, figures, wrong);
		else
			printf("  %10zu %8" PRIu64 " %11.2f %7" PRId64 "\n", size,
			       request.iterations, latency, wrong);
		fflush(stdout);
		if (size > options->latency_max_size / options->factor)
			break;
	}
	return 0;
}

#define BENCH_TRACE_GAPS 3

/* What a write trace counts: bytes per interval, and the longest waits for a completion. */
struct bench_trace {
	double start, interval, last_completion;
	double gaps[BENCH_TRACE_GAPS], gap_ends[BENCH_TRACE_GAPS];      /* longest first */
	uint64_t *bytes;                /* per interval */
	size_t intervals;
};

/* A gap of seconds ending at end, kept if it is among the longest. */
static void bench_trace_gap(struct bench_trace *trace, double seconds, double end)
{
	int place = BENCH_TRACE_GAPS;

	while (place > 0 && seconds > trace->gaps[place - 1])
		place--;
	if (place == BENCH_TRACE_GAPS)
		return;
	memmove(&trace->gaps[place + 1], &trace->gaps[place],
		(BENCH_TRACE_GAPS - 1 - place) * sizeof(trace->gaps[0]));
	memmove(&trace->gap_ends[place + 1], &trace->gap_ends[place],
		(BENCH_TRACE_GAPS - 1 - place) * sizeof(trace->gap_ends[0]));
	trace->gaps[place] = seconds;
	trace->gap_ends[place] = end;
}

/* Completions since the last look: their bytes in the interval they came in, and the gap before them. */
static void bench_trace_count(struct bench_trace *trace, uint64_t completions, size_t size)
{
	double now = bench_now();
	size_t interval = (size_t) ((now - trace->start) / trace->interval);

	if (!completions)
		return;
	bench_trace_gap(trace, now - trace->last_completion, now);
	trace->last_completion = now;
	if (interval < trace->intervals)
		trace->bytes[interval] += completions * size;
}

static void bench_trace_print(const struct bench_trace *trace)
{
	printf("# %9s %9s\n", "time_s", "GB/s");
	for (size_t interval = 0; interval < trace->intervals; interval++)
		printf("  %9.3f %9.4f\n", trace->start - bench_started + (double) (interval + 1) * trace->interval,
		       (double) trace->bytes[interval] / trace->interval / 1e9);
	printf("# longest gaps between completions:");
	for (int gap = 0; gap < BENCH_TRACE_GAPS; gap++)
		printf(" %.2f ms ending at %.3f s%s", trace->gaps[gap] * 1e3, trace->gap_ends[gap] - bench_started,
		       gap + 1 < BENCH_TRACE_GAPS ? ";" : "\n");
}

/*
 * A write trace: fi_write of the largest size, a window in flight, for
 * trace_seconds; the bytes completed in each interval of trace_ms, and the
 * longest gap between two completions: a cable cut by the software device's
 * fault plan (FI_BOLT_SOFT_FAULT_PLAN) shows as the pause and the bandwidth
 * that follows. Times count from the program's start, as the plan's (from
 * the device's set-up, a few ms later) about do.
 */
static int bench_write_trace(struct bench_endpoint *endpoint, const struct bench_options *options)
{
	struct bench_request request = { .test = BENCH_TEST_WRITE, .seed = 7, .window = options->window,
					 .size = options->max_size };
	struct bench_trace trace = { .interval = options->trace_ms / 1e3 };
	uint64_t posted = 0, counted = endpoint->transmits_done, base = endpoint->transmits_done;
	int64_t wrong = 0;
	double end;
	int ret;

	trace.intervals = (size_t) (options->trace_seconds / trace.interval) + 1;
	trace.bytes = calloc(trace.intervals, sizeof(*trace.bytes));
	if (!trace.bytes)
		return bench_fail("calloc", -FI_ENOMEM);
	printf("# bolt_bench write trace: provider %s, profile %s, fi_write of %zu B, window %u, "
	       "GB/s per %u ms for %.1f s, times from the program's start\n", endpoint->provider,
	       bench_profile(endpoint), options->max_size, options->window, options->trace_ms,
	       options->trace_seconds);
	bench_fill(endpoint->source, request.size, request.seed);
	ret = bench_ask(endpoint, &request);
	trace.start = trace.last_completion = bench_now();
	end = trace.start + options->trace_seconds;
	while (!ret && (bench_now() < end || endpoint->transmits_done - base < posted)) {
		for (; !ret && bench_now() < end && posted - (endpoint->transmits_done - base) < request.window;
		     posted++)
			ret = bench_post(endpoint, BENCH_WRITE, request.size);
		if (!ret)
			ret = bench_progress(endpoint);
		bench_trace_count(&trace, endpoint->transmits_done - counted, request.size);
		counted = endpoint->transmits_done;
	}
	if (!ret)
		ret = bench_send_value(endpoint->socket, 0);    /* finished */
	if (!ret)
		ret = bench_receive_value(endpoint, &wrong);
	if (!ret) {
		bench_trace_print(&trace);
		printf("# %" PRIu64 " writes, #wrong (the last checked): %" PRId64 "\n", posted, wrong);
	}
	free(trace.bytes);
	return ret;
}

static int bench_lead(struct bench_endpoint *endpoint, const struct bench_options *options)
{
	struct bench_request done = { .test = BENCH_TEST_DONE };
	int ret;

	if (options->trace_ms) {
		ret = bench_write_trace(endpoint, options);
		return ret ? ret : bench_socket_write(endpoint->socket, &done, sizeof(done));
	}
	bench_print_header(endpoint, options);
	ret = bench_bandwidth_table(endpoint, options);
	if (!ret)
		ret = bench_latency_table(endpoint, options);
	return ret ? ret : bench_socket_write(endpoint->socket, &done, sizeof(done));
}

/*
 * One provider on both sides: 0 when measured, 1 when it could not be opened
 * on one side (both sides go on to the next), negative when a measurement
 * failed (both sides stop).
 */
static int bench_provider(const struct bench_options *options, const char *provider, int socket,
			  bool initiator)
{
	struct bench_endpoint *endpoint = calloc(1, sizeof(*endpoint));
	int64_t opened, peer_opened;
	int ret;

	if (!endpoint)
		return bench_fail("calloc", -FI_ENOMEM);
	endpoint->provider = provider;
	endpoint->socket = socket;
	endpoint->buffer_size = options->max_size > options->latency_max_size ?
				options->max_size : options->latency_max_size;
	opened = bench_open(endpoint);
	ret = bench_send_value(socket, opened ? -1 : 0);
	if (!ret)
		ret = bench_socket_read(NULL, socket, &peer_opened, sizeof(peer_opened));
	if (!ret && (opened || peer_opened)) {
		if (initiator)
			fprintf(options->csv ? stderr : stdout,
				"# bolt_bench: provider %s: not available (%s)\n", provider,
				opened ? fi_strerror((int) -opened) : "on the target");
		ret = 1;
	}
	if (!ret)
		ret = bench_connect(endpoint);
	if (!ret)
		ret = initiator ? bench_lead(endpoint, options) : bench_serve(endpoint);
	bench_close(endpoint);
	free(endpoint);
	return ret;
}

/* Both processes go through the same list of providers in the same order. */
static int bench_run(const struct bench_options *options, int socket, bool initiator)
{
	char *list = strdup(options->providers), *saved = NULL, *provider;
	int failures = 0;

	if (!list)
		return bench_fail("strdup", -FI_ENOMEM);
	for (provider = strtok_r(list, ",", &saved); provider;
	     provider = strtok_r(NULL, ",", &saved)) {
		int ret = bench_provider(options, provider, socket, initiator);

		if (ret)
			failures++;
		if (ret < 0)
			break;
	}
	free(list);
	return failures ? -1 : 0;
}

static int bench_parse_size(const char *text, size_t *size)
{
	char *end;
	unsigned long long value = strtoull(text, &end, 0);

	if (*end == 'K' || *end == 'k')
		value <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		value <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		value <<= 30, end++;
	*size = (size_t) value;
	return end == text || *end || !value ? -1 : 0;
}

static void bench_usage(const char *program)
{
	fprintf(stderr,
		"usage: %s [-p bolt,shm,tcp] [-b 8] [-e 64M] [-f 2] [-l 64K] [-w 16] [-i N] [--csv]\n"
		"  -p, --providers  providers to measure, in order (tcp is served as tcp;ofi_rxm)\n"
		"  -b, --min-size   smallest size;  -e, --max-size  largest bandwidth size\n"
		"  -f, --factor     size step (x2, x4, ...);  -l, --latency-max  largest latency size\n"
		"  -w, --window     operations in flight for bandwidth (1 to %d)\n"
		"  -i, --iterations of every figure (default: 1 GiB per bandwidth size, 64 MiB per\n"
		"                   latency size, within 16 to 20000 and 100 to 10000)\n"
		"  -c, --csv        machine-readable rows only\n"
		"  -t, --trace MS   instead: fi_write of the max size, GB/s per MS ms and the longest\n"
		"                   gaps between completions (a cable cut by FI_BOLT_SOFT_FAULT_PLAN)\n"
		"  -s, --seconds S  how long the trace runs (default 3)\n", program, BENCH_MAX_WINDOW);
}

static int bench_parse_options(int argc, char **argv, struct bench_options *options)
{
	static const struct option long_options[] = {
		{ "providers", required_argument, NULL, 'p' }, { "min-size", required_argument, NULL, 'b' },
		{ "max-size", required_argument, NULL, 'e' }, { "factor", required_argument, NULL, 'f' },
		{ "latency-max", required_argument, NULL, 'l' }, { "window", required_argument, NULL, 'w' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "csv", no_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
		{ "trace", required_argument, NULL, 't' }, { "seconds", required_argument, NULL, 's' }, { 0 },
	};
	int option, bad = 0;

	*options = (struct bench_options) { .providers = "bolt,shm,tcp", .min_size = 8,
		.max_size = 64u << 20, .latency_max_size = 64u << 10, .factor = 2, .window = 16,
		.trace_seconds = 3.0 };
	while ((option = getopt_long(argc, argv, "p:b:e:f:l:w:i:cht:s:", long_options, NULL)) != -1) {
		if (option == 'p')
			options->providers = optarg;
		else if (option == 'b')
			bad |= bench_parse_size(optarg, &options->min_size);
		else if (option == 'e')
			bad |= bench_parse_size(optarg, &options->max_size);
		else if (option == 'l')
			bad |= bench_parse_size(optarg, &options->latency_max_size);
		else if (option == 'i')
			bad |= !(options->iterations = (unsigned int) strtoul(optarg, NULL, 0));
		else if (option == 'f')
			options->factor = (unsigned int) strtoul(optarg, NULL, 0);
		else if (option == 'w')
			options->window = (unsigned int) strtoul(optarg, NULL, 0);
		else if (option == 'c')
			options->csv = true;
		else if (option == 't')
			bad |= !(options->trace_ms = (unsigned int) strtoul(optarg, NULL, 0));
		else if (option == 's')
			bad |= !((options->trace_seconds = strtod(optarg, NULL)) > 0);
		else
			bad = 1;
	}
	if (bad || optind != argc || options->factor < 2 || !options->window ||
	    options->window > BENCH_MAX_WINDOW || options->max_size > (1ull << 30) ||
	    options->latency_max_size > (1ull << 30)) {
		bench_usage(argv[0]);
		return -1;
	}
	return 0;
}

/* Before the target forks, so that it has nothing of it to flush. */
static void bench_print_csv_header(const struct bench_options *options)
{
	if (options->csv)
		printf("provider,profile,fabric,domain,test,size,iters,send_GB/s,write_GB/s,"
		       "latency_us,#wrong\n");
	fflush(stdout);
}

/*
 * The target on another host (test/hosts): the same program runs there with
 * BOLT_TEST_PEER_ROLE=peer, this one with test, and they meet over TCP.
 */
static int bench_run_on_two_hosts(const struct bench_options *options)
{
	bool initiator = bolt_peer_host_role() == BOLT_PEER_HOST_TEST;
	int socket, ret;

	if (bolt_peer_host_role() < 0)
		return 2;
	bench_role = initiator ? "initiator" : "target";
	socket = bolt_peer_host_connect("bolt_bench", BENCH_SOCKET_TIMEOUT_MS);
	if (socket < 0)
		return bench_fail("meeting the other host", socket) ? 1 : 0;
	/* For test/hosts: from here on a fault hits bolt, not this meeting. */
	fprintf(stderr, "# bolt_bench %s: met the other host\n", bench_role);
	if (initiator)
		bench_print_csv_header(options);
	ret = bench_run(options, socket, initiator);
	close(socket);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct bench_options options;
	int sockets[2], ret;
	pid_t target;

	bench_started = bench_now();
	if (bench_parse_options(argc, argv, &options))
		return 2;
	if (bolt_peer_host_role() != BOLT_PEER_HOST_NONE)
		return bench_run_on_two_hosts(&options);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets))
		return bench_fail("socketpair", -errno) ? 1 : 0;
	bench_print_csv_header(&options);
	target = fork();
	if (target < 0)
		return bench_fail("fork", -errno) ? 1 : 0;
	if (target == 0) {
		const char *topology = getenv("FI_BOLT_SOFT_TOPOLOGY");

		close(sockets[0]);
		bench_role = "target";
		/* On a mesh of the software device's hosts, the target is on the next one. */
		if (topology && !strncmp(topology, "mesh:", 5))
			bolt_fixture_set_software_host(1);
		_exit(bench_run(&options, sockets[1], false) ? 1 : 0);
	}
	close(sockets[1]);
	ret = bench_run(&options, sockets[0], true);
	close(sockets[0]);
	if (bolt_fixture_process_status(target))
		ret = -1;
	return ret ? 1 : 0;
}
