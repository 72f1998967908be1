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
#include "bolt_endpoint.h"
#include "bolt_fabric.h"
#include "bolt_getinfo.h"
#include "softrdma/softrdma.h"

static char rdm_namespace[64];

/*
 * libfabric reads FI_LOG_LEVEL when it initialises, in its first fi_getinfo;
 * ask it for a provider that does not exist so that bolt's FI_WARN lines show.
 */
static void rdm_logging_start(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_info *info = NULL;

	if (!hints)
		return;
	hints->fabric_attr->prov_name = strdup("bolt-logging-only");
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

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
		rdm_logging_start();
		return;
	}
	rdm_logging_start();
	snprintf(rdm_namespace, sizeof(rdm_namespace), "%s-%d", tag, getpid());
	setenv("FI_BOLT_SOFT", options->profile, 1);
	setenv("FI_BOLT_SOFT_NAMESPACE", rdm_namespace, 1);
	setenv("FI_BOLT_SOFT_SEND_ONLY", options->send_only ? "1" : "0", 1);
	setenv("FI_BOLT_SOFT_TOPOLOGY", options->topology ? options->topology : "single", 1);
	setenv("FI_BOLT_SOFT_HOST", "0", 1);
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
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = options->caps ? options->caps : FI_MSG | FI_TAGGED | FI_RMA;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = (int) options->mr_mode;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->av_type = options->av_type;
	hints->tx_attr->op_flags = options->tx_op_flags;
	hints->tx_attr->size = options->tx_size;
	return hints;
}

int rdm_open_domain(struct rdm_endpoint *endpoint, const struct fi_info *hints,
		    const struct rdm_options *options)
{
	int ret;

	memset(endpoint, 0, sizeof(*endpoint));
	ret = bolt_getinfo(FI_VERSION(1, 17), options ? options->node : NULL,
			   options ? options->service : NULL, options ? options->flags : 0, hints,
			   &endpoint->info);
	if (ret)
		return ret;
	ret = bolt_fabric_open(endpoint->info->fabric_attr, &endpoint->fabric, NULL);
	if (ret)
		return ret;
	return fi_domain(endpoint->fabric, endpoint->info, &endpoint->domain, NULL);
}

int rdm_open_endpoint(struct rdm_endpoint *endpoint, const struct rdm_endpoint *owner,
		      const struct rdm_options *options)
{
	struct fi_cq_attr cq_attr = {
		.format = options->cq_format ? options->cq_format : FI_CQ_FORMAT_TAGGED,
		.size = 4096,
	};
	struct fi_av_attr av_attr = { .type = options->av_type };
	int ret;

	if (endpoint != owner) {
		memset(endpoint, 0, sizeof(*endpoint));
		endpoint->info = owner->info;
		endpoint->fabric = owner->fabric;
		endpoint->domain = owner->domain;
		endpoint->shares_domain = true;
	}
	ret = fi_endpoint(endpoint->domain, endpoint->info, &endpoint->ep, NULL);
	if (ret)
		return ret;
	ret = fi_cq_open(endpoint->domain, &cq_attr, &endpoint->cq, NULL);
	if (ret)
		return ret;
	ret = fi_av_open(endpoint->domain, &av_attr, &endpoint->av, NULL);
	if (ret)
		return ret;
	ret = fi_ep_bind(endpoint->ep, &endpoint->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(endpoint->ep, &endpoint->av->fid, 0);
	if (!ret && options->count_remote_writes) {
		struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };

		ret = fi_cntr_open(endpoint->domain, &cntr_attr, &endpoint->remote_writes, NULL);
		if (!ret)
			ret = fi_ep_bind(endpoint->ep, &endpoint->remote_writes->fid, FI_REMOTE_WRITE);
	}
	return ret;
}

int rdm_open(struct rdm_endpoint *endpoint, const struct rdm_options *options)
{
	struct fi_info *hints = rdm_hints(options);
	int ret;

	if (!hints) {
		memset(endpoint, 0, sizeof(*endpoint));
		return -FI_ENOMEM;
	}
	ret = rdm_open_domain(endpoint, hints, options);
	fi_freeinfo(hints);
	if (!ret)
		ret = rdm_open_endpoint(endpoint, endpoint, options);
	if (!ret)
		ret = fi_enable(endpoint->ep);
	return ret;
}

int rdm_open_self(struct rdm_endpoint *endpoint, const struct rdm_options *options)
{
	char name[64];
	size_t length = sizeof(name);
	int ret = rdm_open(endpoint, options);

	if (!ret)
		ret = fi_getname(&endpoint->ep->fid, name, &length);
	if (!ret && fi_av_insert(endpoint->av, name, 1, &endpoint->peer, 0, NULL) != 1)
		ret = -FI_EINVAL;
	return ret;
}

static void rdm_close_fid(struct fid *fid)
{
	if (fid)
		fi_close(fid);
}

void rdm_close(struct rdm_endpoint *endpoint)
{
	rdm_close_fid(endpoint->ep ? &endpoint->ep->fid : NULL);
	rdm_close_fid(endpoint->remote_writes ? &endpoint->remote_writes->fid : NULL);
	rdm_close_fid(endpoint->av ? &endpoint->av->fid : NULL);
	rdm_close_fid(endpoint->cq ? &endpoint->cq->fid : NULL);
	if (endpoint->shares_domain) {
		memset(endpoint, 0, sizeof(*endpoint));
		return;
	}
	rdm_close_fid(endpoint->domain ? &endpoint->domain->fid : NULL);
	rdm_close_fid(endpoint->fabric ? &endpoint->fabric->fid : NULL);
	fi_freeinfo(endpoint->info);
	memset(endpoint, 0, sizeof(*endpoint));
}

static int rdm_write_all(int socket, const void *data, size_t length)
{
	return write(socket, data, length) == (ssize_t) length ? 0 : -FI_EIO;
}

static int rdm_read_all(int socket, void *data, size_t length)
{
	size_t done = 0;

	while (done < length) {
		ssize_t got = read(socket, (char *) data + done, length - done);

		if (got <= 0)
			return -FI_EIO;
		done += (size_t) got;
	}
	return 0;
}

int rdm_connect(struct rdm_endpoint *endpoint, int socket)
{
	char name[64], peer_name[64];
	size_t length = sizeof(name);
	uint64_t peer_length;
	int ret;

	ret = fi_getname(&endpoint->ep->fid, name, &length);
	if (ret)
		return ret;
	if (rdm_send_value(socket, length) || rdm_write_all(socket, name, length) ||
	    rdm_receive_value(socket, &peer_length) || peer_length > sizeof(peer_name) ||
	    rdm_read_all(socket, peer_name, peer_length))
		return -FI_EIO;
	ret = fi_av_insert(endpoint->av, peer_name, 1, &endpoint->peer, 0, NULL);
	return ret == 1 ? 0 : -FI_EINVAL;
}

long rdm_elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

int rdm_wait(struct rdm_endpoint *endpoint, struct fi_cq_tagged_entry *entry,
	     struct fi_cq_err_entry *error)
{
	struct timespec start;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		ret = fi_cq_read(endpoint->cq, entry, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(error, 0, sizeof(*error));
			fi_cq_readerr(endpoint->cq, error, 0);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN)
			return (int) ret;
		/* CI runs tests side by side on two cores: let the peer run. */
		sched_yield();
	} while (rdm_elapsed_ms(&start) < RDM_TIMEOUT_MS);
	return -FI_ETIMEDOUT;
}

void rdm_expect_completion(struct rdm_endpoint *endpoint, void *context, int expected_error)
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

void rdm_progress_for(struct rdm_endpoint *endpoint, int milliseconds)
{
	struct fi_cq_tagged_entry entry;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (rdm_elapsed_ms(&start) < milliseconds) {
		if (fi_cq_read(endpoint->cq, &entry, 0) == -FI_EAVAIL)
			break;
		sched_yield();
	}
}

int rdm_serve_until_told(struct rdm_endpoint *endpoint, int socket, uint64_t *value)
{
	struct pollfd told = { .fd = socket, .events = POLLIN };
	struct fi_cq_tagged_entry entry;
	struct timespec start;

	/* The peer tells when it is done; until then it may take long, but never sits idle. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (rdm_elapsed_ms(&start) < RDM_SERVE_TIMEOUT_MS) {
		/* Manual progress: the peer's reads are served from inside this call. */
		fi_cq_read(endpoint->cq, &entry, 0);
		if (poll(&told, 1, 0) == 1)
			return rdm_receive_value(socket, value);
		sched_yield();
	}
	return -FI_EIO;
}

int rdm_register_region(struct rdm_endpoint *endpoint, void *buffer, size_t length,
			uint64_t access, struct fid_mr **mr)
{
	int ret = fi_mr_reg(endpoint->domain, buffer, length, access, 0, 0, 0, mr, NULL);

	if (ret || !(endpoint->info->domain_attr->mr_mode & FI_MR_ENDPOINT))
		return ret;
	if (fi_mr_key(*mr) != FI_KEY_NOTAVAIL)
		return -FI_EOTHER;      /* FI_MR_ENDPOINT: no key before enable */
	ret = fi_mr_bind(*mr, &endpoint->ep->fid, 0);
	if (!ret)
		ret = fi_mr_enable(*mr);
	return ret;
}

int rdm_offer_region(struct rdm_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr)
{
	int ret = region ? rdm_open_connected(endpoint, options, socket) : -FI_ENOMEM;

	if (!ret)
		ret = rdm_register_region(endpoint, region, length, access, mr);
	if (!ret && (rdm_send_value(socket, (uintptr_t) region) || rdm_send_value(socket, fi_mr_key(*mr))))
		ret = -FI_EIO;
	return ret;
}

int rdm_serve_region(struct rdm_endpoint *endpoint, const struct rdm_options *options,
		     int socket, char *region, size_t length, uint64_t access, struct fid_mr **mr)
{
	uint64_t done;
	int ret = rdm_offer_region(endpoint, options, socket, region, length, access, mr);

	return ret ? ret : rdm_serve_until_told(endpoint, socket, &done);
}

int rdm_region_peer_end(struct rdm_endpoint *endpoint, struct fid_mr *mr, void *region, int ret)
{
	if (mr)
		fi_close(&mr->fid);
	rdm_close(endpoint);
	free(region);
	return ret;
}

int rdm_send_value(int socket, uint64_t value)
{
	return rdm_write_all(socket, &value, sizeof(value));
}

int rdm_receive_value(int socket, uint64_t *value)
{
	return rdm_read_all(socket, value, sizeof(*value));
}

int rdm_open_connected(struct rdm_endpoint *endpoint, const struct rdm_options *options,
		       int socket)
{
	int ret = rdm_open(endpoint, options);

	return ret ? ret : rdm_connect(endpoint, socket);
}

pid_t rdm_pair_start(const struct rdm_options *options, const char *tag,
		     int (*peer)(int socket, void *argument), void *argument,
		     struct rdm_endpoint *endpoint, int *socket)
{
	pid_t pid;
	int ret;

	rdm_environment(options, tag);
	/* On a mesh, the peer is the next host unless another is named. */
	if (options->topology) {
		char host[16];

		snprintf(host, sizeof(host), "%d", options->peer_host ? options->peer_host : 1);
		setenv("FI_BOLT_SOFT_HOST", host, 1);
	}
	pid = rdm_fork(peer, argument, socket);
	setenv("FI_BOLT_SOFT_HOST", "0", 1);
	if (pid <= 0)
		return pid < 0 ? pid : -FI_EOTHER;
	ret = rdm_open_connected(endpoint, options, *socket);
	return ret ? ret : pid;
}

int rdm_pair_finish(const struct rdm_options *options, struct rdm_endpoint *endpoint, pid_t peer,
		    int socket)
{
	int status = rdm_join(peer);

	rdm_close(endpoint);
	rdm_environment_cleanup(options);
	close(socket);
	return status;
}

pid_t rdm_fork(int (*peer)(int socket, void *argument), void *argument, int *socket)
{
	int sockets[2];
	pid_t pid;

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

int rdm_join(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
