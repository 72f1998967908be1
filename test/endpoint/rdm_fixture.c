/*
 * rdm_fixture.c: opening and closing RDM endpoints through bolt's entry
 * points, exchanging names, waiting for completions, and forked peers.
 */
#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rdm_fixture.h"
#include "bolt_peer_host.h"
#include "bolt_endpoint.h"
#include "bolt_fabric.h"
#include "bolt_getinfo.h"
#include "rails/bolt_mr_cache.h"
#include "softrdma/softrdma.h"

static char rdm_namespace[64];

static bool rdm_system_device(void)
{
	const char *device = getenv("BOLT_TEST_DEVICE");

	return device && !strcmp(device, "system");
}

void rdm_environment(const struct rdm_options *options, const char *tag)
{
	if (rdm_system_device()) {
		if (options->send_only)
			cr_skip_test("send-only is a mode of the software device");
		if (options->software_device_only)
			cr_skip_test("this tests the software device itself");
		unsetenv("FI_BOLT_SOFT");
		bolt_fixture_logging_start();
		return;
	}
	bolt_fixture_logging_start();
	snprintf(rdm_namespace, sizeof(rdm_namespace), "%s-%d", tag, getpid());
	setenv("FI_BOLT_SOFT", options->profile, 1);
	setenv("FI_BOLT_SOFT_NAMESPACE", rdm_namespace, 1);
	setenv("FI_BOLT_SOFT_SEND_ONLY", options->send_only ? "1" : "0", 1);
	setenv("FI_BOLT_SOFT_TOPOLOGY", options->topology ? options->topology : "single", 1);
	bolt_fixture_set_software_host(0);
}

void rdm_environment_cleanup(const struct rdm_options *options)
{
	struct softrdma_config config = { 0 };
	char name[256];

	if (rdm_system_device())
		return;
	if (softrdma_profile_parse(options->profile, &config.profile))
		return;
	snprintf(config.namespace_name, sizeof(config.namespace_name), "%s", rdm_namespace);
	if (!softrdma_segment_name(&config, name, sizeof(name)))
		shm_unlink(name);
}

struct fi_info *rdm_hints(const struct rdm_options *options)
{
	struct fi_info *hints = bolt_fixture_hints(options->caps ? options->caps :
						   FI_MSG | FI_TAGGED | FI_RMA, NULL);

	if (!hints)
		return NULL;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = (int) options->mr_mode;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->av_type = options->av_type;
	hints->tx_attr->op_flags = options->tx_op_flags;
	hints->tx_attr->size = options->tx_size;
	return hints;
}

const struct bolt_fixture_entry_points rdm_provider_entry_points = {
	.getinfo = bolt_getinfo,
	.fabric = bolt_fabric_open,
};

/* The shared fixture's options for an RDM test's. */
static struct bolt_fixture_options rdm_fixture_options(const struct rdm_options *options)
{
	struct bolt_fixture_options fixture = { .entry_points = &rdm_provider_entry_points };

	if (!options)
		return fixture;
	fixture.node = options->node;
	fixture.service = options->service;
	fixture.flags = options->flags;
	fixture.cq_format = options->cq_format;
	fixture.av_type = options->av_type;
	fixture.count_remote_writes = options->count_remote_writes;
	return fixture;
}

int rdm_open_domain(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
		    const struct rdm_options *options)
{
	struct bolt_fixture_options fixture = rdm_fixture_options(options);

	return bolt_fixture_open_domain(endpoint, hints, &fixture);
}

int rdm_open_endpoint(struct bolt_fixture_endpoint *endpoint,
		      const struct bolt_fixture_endpoint *owner, const struct rdm_options *options)
{
	struct bolt_fixture_options fixture = rdm_fixture_options(options);

	return bolt_fixture_open_endpoint(endpoint, owner, &fixture);
}

int rdm_open(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options)
{
	struct bolt_fixture_options fixture = rdm_fixture_options(options);
	struct fi_info *hints = rdm_hints(options);
	int ret;

	if (!hints) {
		memset(endpoint, 0, sizeof(*endpoint));
		return -FI_ENOMEM;
	}
	ret = bolt_fixture_open(endpoint, hints, &fixture);
	fi_freeinfo(hints);
	return ret;
}

int rdm_open_self(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options)
{
	char name[64];
	size_t length = sizeof(name);
	int ret = rdm_open(endpoint, options);

	if (!ret)
		ret = fi_getname(&endpoint->ep->fid, name, &length);
	return ret ? ret : bolt_fixture_insert_names(endpoint, name, 0, 1, &endpoint->peer);
}

/* No time limit: a peer may wait as long as the test's other side takes. */
int rdm_connect(struct bolt_fixture_endpoint *endpoint, int socket)
{
	return bolt_fixture_exchange_names(endpoint, socket, -1);
}

int rdm_wait(struct bolt_fixture_endpoint *endpoint, struct fi_cq_tagged_entry *entry,
	     struct fi_cq_err_entry *error)
{
	return bolt_fixture_wait_completion(endpoint, entry, error, RDM_TIMEOUT_MS, NULL);
}

void rdm_expect_completion(struct bolt_fixture_endpoint *endpoint, void *context, int expected_error)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = rdm_wait(endpoint, &entry, &error);

	if (!expected_error) {
		cr_assert_eq(ret, 0, "completion: %d (error %d)", ret, error.err);
		cr_assert_eq(entry.op_context, context);
		return;
	}
	cr_assert_eq(ret, -FI_EAVAIL, "expected an error completion, got %d", ret);
	cr_assert_eq(error.err, expected_error, "error %d, expected %d", error.err, expected_error);
	cr_assert_eq(error.op_context, context);
}

void rdm_progress_for(struct bolt_fixture_endpoint *endpoint, int milliseconds)
{
	struct fi_cq_tagged_entry entry;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (bolt_fixture_elapsed_ms(&start) < milliseconds) {
		if (fi_cq_read(endpoint->cq, &entry, 0) == -FI_EAVAIL)
			break;
		sched_yield();
	}
}

int rdm_serve_until_told(struct bolt_fixture_endpoint *endpoint, int socket, uint64_t *value)
{
	struct pollfd told = { .fd = socket, .events = POLLIN };
	struct fi_cq_tagged_entry entry;
	struct timespec start;

	/* The peer tells when it is done; until then it may take long, but never sits idle. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (bolt_fixture_elapsed_ms(&start) < RDM_SERVE_TIMEOUT_MS) {
		/* Manual progress: the peer's reads are served from inside this call. */
		fi_cq_read(endpoint->cq, &entry, 0);
		if (poll(&told, 1, 0) == 1)
			return rdm_receive_value(socket, value);
		sched_yield();
	}
	return -FI_EIO;
}

int rdm_register_region(struct bolt_fixture_endpoint *endpoint, void *buffer, size_t length,
			uint64_t access, struct fid_mr **mr)
{
	/* FI_MR_ENDPOINT: no key before enable. */
	return bolt_fixture_register_region(endpoint, buffer, length, access, 0, true, mr);
}

int rdm_offer_region(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr)
{
	int ret = region ? rdm_open_connected(endpoint, options, socket) : -FI_ENOMEM;

	if (!ret)
		ret = rdm_register_region(endpoint, region, length, access, mr);
	if (!ret && (rdm_send_value(socket, (uintptr_t) region) || rdm_send_value(socket, fi_mr_key(*mr))))
		ret = -FI_EIO;
	return ret;
}

int rdm_serve_region(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr)
{
	uint64_t done;
	int ret = rdm_offer_region(endpoint, options, socket, region, length, access, mr);

	return ret ? ret : rdm_serve_until_told(endpoint, socket, &done);
}

int rdm_region_peer_end(struct bolt_fixture_endpoint *endpoint, struct fid_mr *mr, void *region, int ret)
{
	if (mr)
		fi_close(&mr->fid);
	bolt_fixture_close(endpoint);
	free(region);
	return ret;
}

int rdm_send_value(int socket, uint64_t value)
{
	return bolt_fixture_socket_write(socket, &value, sizeof(value)) ? -FI_EIO : 0;
}

/* No time limit, as rdm_connect. */
int rdm_receive_value(int socket, uint64_t *value)
{
	return bolt_fixture_socket_read(socket, value, sizeof(*value), -1, NULL) ? -FI_EIO : 0;
}

int rdm_open_connected(struct bolt_fixture_endpoint *endpoint, const struct rdm_options *options,
		       int socket)
{
	int ret = rdm_open(endpoint, options);

	return ret ? ret : rdm_connect(endpoint, socket);
}

pid_t rdm_pair_start(const struct rdm_options *options, const char *tag,
		     int (*peer)(int socket, void *argument), void *argument,
		     struct bolt_fixture_endpoint *endpoint, int *socket)
{
	pid_t pid;
	int ret;

	rdm_environment(options, tag);
	/* On a mesh, the peer is the next host unless another is named. */
	if (options->topology)
		bolt_fixture_set_software_host(options->peer_host ? options->peer_host : 1);
	pid = rdm_fork(peer, argument, socket);
	bolt_fixture_set_software_host(0);
	if (pid <= 0) {
		fprintf(stderr, "rdm_pair_start(%s): the peer could not be started: %d\n", tag, (int) pid);
		return pid < 0 ? pid : -FI_EOTHER;
	}
	ret = rdm_open_connected(endpoint, options, *socket);
	if (ret)
		fprintf(stderr, "rdm_pair_start(%s): opening this side and meeting the peer: %s\n", tag,
			fi_strerror(ret < 0 ? -ret : ret));
	return ret ? ret : pid;
}

int rdm_pair_finish(const struct rdm_options *options, struct bolt_fixture_endpoint *endpoint, pid_t peer,
		    int socket)
{
	int status = bolt_fixture_process_status(peer);

	bolt_fixture_close(endpoint);
	rdm_environment_cleanup(options);
	close(socket);
	return status;
}

/* The test's name, and which of its connections: what both hosts must agree on. */
static void rdm_peer_host_tag(char *tag, size_t size, const char *which)
{
	snprintf(tag, size, "%s/%s %s", criterion_current_test->category, criterion_current_test->name,
		 which);
}

/* Connections for the peer's names and values, and for its end. */
static int rdm_peer_host_connect(int *data, int *control)
{
	char tag[128];

	rdm_peer_host_tag(tag, sizeof(tag), "values");
	*data = bolt_peer_host_connect(tag, RDM_SERVE_TIMEOUT_MS);
	if (*data < 0)
		return *data;
	rdm_peer_host_tag(tag, sizeof(tag), "end");
	*control = bolt_peer_host_connect(tag, RDM_SERVE_TIMEOUT_MS);
	if (*control < 0) {
		close(*data);
		return *control;
	}
	return 0;
}

/*
 * On the end connection, in place of an exit status (0 or 1, or 128 and a
 * signal): the peer stopped itself (SIGSTOP), which its tests wait for.
 */
#define RDM_PEER_HOST_STOPPED 255

/*
 * The stand-in's life: it stops when the peer stops, and exits with the
 * peer's exit status, or as killed when the connection ends without one.
 */
static int rdm_stand_in(int control)
{
	uint8_t status;

	for (;;) {
		if (bolt_fixture_socket_read(control, &status, 1, -1, NULL))
			return 128 + SIGKILL;
		if (status != RDM_PEER_HOST_STOPPED)
			return status;
		raise(SIGSTOP);
	}
}

/*
 * The test side of a peer on the other host: a local stand-in process whose
 * exit status is the peer's (read from the end connection), and which stops
 * when the peer does, so the tests wait for it and kill it as they would a
 * forked peer; killed, it closes the connection and the other host kills the
 * peer.
 */
static pid_t rdm_fork_to_peer_host(int *socket)
{
	static pid_t first_peer;
	int data, control;
	pid_t pid;

	/* The other host serves one peer per test: the first ends there, killed. */
	if (first_peer > 0) {
		kill(first_peer, SIGKILL);
		waitpid(first_peer, NULL, 0);
		cr_skip_test("a test with two peers runs on one host only");
	}
	if (rdm_peer_host_connect(&data, &control))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(data);
		_exit(rdm_stand_in(control));
	}
	close(control);
	*socket = data;
	first_peer = pid;
	return pid;
}

/*
 * Until the peer ends, or the test side's stand-in does (then the peer is
 * killed); each time the peer stops itself, the stand-in is told to stop too.
 */
static int rdm_peer_host_watch(pid_t peer, int control)
{
	struct pollfd ended = { .fd = control, .events = POLLIN };
	uint8_t stopped = RDM_PEER_HOST_STOPPED;
	pid_t changed;
	int status;

	for (;;) {
		changed = waitpid(peer, &status, WNOHANG | WUNTRACED);
		if (changed == peer && !WIFSTOPPED(status))
			break;
		if (changed == peer && bolt_fixture_socket_write(control, &stopped, 1))
			changed = -1;
		if (changed < 0 || poll(&ended, 1, 20) == 1) {
			kill(peer, SIGKILL);
			waitpid(peer, &status, 0);
			return -1;
		}
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The peer's side on this host: the peer runs in a child, as forked on one
 * host, and its exit status goes to the test side. This side's test ends
 * there: the rest of it is the test side's.
 */
static void rdm_serve_peer_host(int (*peer)(int socket, void *argument), void *argument)
{
	int data, control, status;
	uint8_t byte;
	pid_t pid;

	cr_assert_eq(rdm_peer_host_connect(&data, &control), 0, "no test side on the other host");
	pid = fork();
	if (pid == 0) {
		close(control);
		_exit(peer(data, argument) ? 1 : 0);
	}
	close(data);
	cr_assert_gt(pid, 0, "fork");
	status = rdm_peer_host_watch(pid, control);
	byte = (uint8_t) status;
	if (status >= 0)
		bolt_fixture_socket_write(control, &byte, 1);
	close(control);
	if (status < 0)
		cr_skip_test("the peer's side of a two-host test, killed by the test side");
	cr_assert_eq(status, 0, "the peer's side of a two-host test failed");
	cr_skip_test("the peer's side of a two-host test: passed");
}

pid_t rdm_fork(int (*peer)(int socket, void *argument), void *argument, int *socket)
{
	int sockets[2];
	pid_t pid;

	switch (bolt_peer_host_role()) {
	case BOLT_PEER_HOST_TEST:
		return rdm_fork_to_peer_host(socket);
	case BOLT_PEER_HOST_PEER:
		rdm_serve_peer_host(peer, argument);
		return -1;
	case BOLT_PEER_HOST_NONE:
		break;
	default:
		return -1;
	}

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(sockets[0]);
		_exit(peer(sockets[1], argument) ? 1 : 0);
	}
	close(sockets[1]);
	*socket = sockets[0];
	return pid;
}

uint64_t rdm_striped_bytes(struct fid_ep *ep, int first_rail, int end_rail)
{
	struct bolt_endpoint *endpoint = bolt_container_of(ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;
	uint64_t bytes = 0;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next)
		for (int rail = first_rail; rail < end_rail; rail++)
			bytes += connection->data_rails[rail].bytes_written;
	return bytes;
}

uint64_t rdm_registrations_used(struct bolt_fixture_endpoint *endpoint)
{
	struct bolt_domain *domain = bolt_container_of(endpoint->domain, struct bolt_domain, domain_fid);
	struct bolt_mr_cache_stats stats;

	bolt_mr_cache_stats(domain->primary.mr_cache, &stats);
	return stats.hits + stats.misses;
}

uint64_t rdm_rewritten_segments(struct fid_ep *ep)
{
	struct bolt_endpoint *endpoint = bolt_container_of(ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;
	uint64_t segments = 0;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next)
		segments += connection->rewrite.rewrites;
	return segments;
}

void rdm_fill(void *buffer, size_t length, uint32_t seed)
{
	unsigned char *bytes = buffer;
	uint32_t state = seed * 2654435761u + 1;

	for (size_t i = 0; i < length; i++) {
		state = state * 1103515245u + 12345u;
		bytes[i] = (unsigned char) (state >> 16);
	}
}

bool rdm_check(const void *buffer, size_t length, uint32_t seed)
{
	const unsigned char *bytes = buffer;
	uint32_t state = seed * 2654435761u + 1;

	for (size_t i = 0; i < length; i++) {
		state = state * 1103515245u + 12345u;
		if (bytes[i] != (unsigned char) (state >> 16))
			return false;
	}
	return true;
}
