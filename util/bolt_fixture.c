/*
 * bolt_fixture.c: opening and closing one process's libfabric objects,
 * exchanging names between processes, a shared-page barrier, and waiting for
 * completions and joins, for the tests and the tools alike.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bolt_fixture.h"

#define BOLT_FIXTURE_NAME_SIZE 256      /* fi_getname: bolt's are 56 bytes, others' longer */

const struct bolt_fixture_entry_points bolt_fixture_libfabric = {
	.getinfo = fi_getinfo,
	.fabric = fi_fabric,
};

/* Records which call failed with ret (if it did); returns ret. */
static int bolt_fixture_check(struct bolt_fixture_endpoint *endpoint, const char *call, int ret)
{
	if (ret)
		endpoint->failed_call = call;
	return ret;
}

struct fi_info *bolt_fixture_hints(uint64_t caps, const char *provider_name)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	if (!provider_name)
		return hints;
	hints->fabric_attr->prov_name = strdup(provider_name);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

int bolt_fixture_open_domain(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
			     const struct bolt_fixture_options *options)
{
	static const struct bolt_fixture_options defaults = { 0 };
	const struct bolt_fixture_entry_points *entry_points;
	int ret;

	memset(endpoint, 0, sizeof(*endpoint));
	if (!options)
		options = &defaults;
	entry_points = options->entry_points ? options->entry_points : &bolt_fixture_libfabric;
	ret = entry_points->getinfo(options->version ? options->version : FI_VERSION(1, 17),
				    options->node, options->service, options->flags, hints,
				    &endpoint->info);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_getinfo", ret);
	ret = entry_points->fabric(endpoint->info->fabric_attr, &endpoint->fabric, NULL);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_fabric", ret);
	ret = fi_domain(endpoint->fabric, endpoint->info, &endpoint->domain, NULL);
	return bolt_fixture_check(endpoint, "fi_domain", ret);
}

/* The endpoint and the objects it reports to, not yet bound. */
static int bolt_fixture_open_objects(struct bolt_fixture_endpoint *endpoint,
				     const struct bolt_fixture_options *options)
{
	struct fi_cq_attr cq_attr = {
		.format = options->cq_format ? options->cq_format : FI_CQ_FORMAT_TAGGED,
		.size = options->cq_size ? options->cq_size : 4096,
	};
	struct fi_av_attr av_attr = { .type = options->av_type };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	ret = fi_endpoint(endpoint->domain, endpoint->info, &endpoint->ep, NULL);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_endpoint", ret);
	ret = fi_cq_open(endpoint->domain, &cq_attr, &endpoint->cq, NULL);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_cq_open", ret);
	ret = fi_av_open(endpoint->domain, &av_attr, &endpoint->av, NULL);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_av_open", ret);
	if (options->event_queue) {
		ret = fi_eq_open(endpoint->fabric, &eq_attr, &endpoint->eq, NULL);
		if (ret)
			return bolt_fixture_check(endpoint, "fi_eq_open", ret);
	}
	if (options->count_remote_writes) {
		ret = fi_cntr_open(endpoint->domain, &cntr_attr, &endpoint->remote_writes, NULL);
		if (ret)
			return bolt_fixture_check(endpoint, "fi_cntr_open", ret);
	}
	return 0;
}

static int bolt_fixture_bind(struct bolt_fixture_endpoint *endpoint)
{
	int ret = fi_ep_bind(endpoint->ep, &endpoint->cq->fid, FI_TRANSMIT | FI_RECV);

	if (ret)
		return bolt_fixture_check(endpoint, "fi_ep_bind (CQ)", ret);
	ret = fi_ep_bind(endpoint->ep, &endpoint->av->fid, 0);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_ep_bind (AV)", ret);
	if (endpoint->eq) {
		ret = fi_ep_bind(endpoint->ep, &endpoint->eq->fid, 0);
		if (ret)
			return bolt_fixture_check(endpoint, "fi_ep_bind (EQ)", ret);
	}
	if (endpoint->remote_writes) {
		ret = fi_ep_bind(endpoint->ep, &endpoint->remote_writes->fid, FI_REMOTE_WRITE);
		if (ret)
			return bolt_fixture_check(endpoint, "fi_ep_bind (counter)", ret);
	}
	return 0;
}

int bolt_fixture_open_endpoint(struct bolt_fixture_endpoint *endpoint,
			       const struct bolt_fixture_endpoint *owner,
			       const struct bolt_fixture_options *options)
{
	int ret;

	if (endpoint != owner) {
		memset(endpoint, 0, sizeof(*endpoint));
		endpoint->info = owner->info;
		endpoint->fabric = owner->fabric;
		endpoint->domain = owner->domain;
		endpoint->shares_domain = true;
	}
	ret = bolt_fixture_open_objects(endpoint, options);
	return ret ? ret : bolt_fixture_bind(endpoint);
}

int bolt_fixture_open(struct bolt_fixture_endpoint *endpoint, const struct fi_info *hints,
		      const struct bolt_fixture_options *options)
{
	int ret = bolt_fixture_open_domain(endpoint, hints, options);

	if (!ret)
		ret = bolt_fixture_open_endpoint(endpoint, endpoint, options);
	if (!ret)
		ret = bolt_fixture_check(endpoint, "fi_enable", fi_enable(endpoint->ep));
	return ret;
}

/* Closes fid if it is open; remembers the first failure in *first. */
static void bolt_fixture_close_fid(struct fid *fid, const char *call, int *first,
				   const char **first_call)
{
	int ret = fid ? fi_close(fid) : 0;

	if (ret && !*first) {
		*first = ret;
		*first_call = call;
	}
}

#define BOLT_FIXTURE_FID(object) ((object) ? &(object)->fid : NULL)

/*
 * The endpoint goes first (with its group), since the objects bound to it
 * cannot close while it holds them; then those, then the domain and fabric.
 */
int bolt_fixture_close(struct bolt_fixture_endpoint *endpoint)
{
	const char *call = NULL;
	int ret = 0;

	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->mc), "fi_close (multicast)", &ret, &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->set), "fi_close (AV set)", &ret, &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->ep), "fi_close (endpoint)", &ret, &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->remote_writes), "fi_close (counter)", &ret,
			       &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->av), "fi_close (AV)", &ret, &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->cq), "fi_close (CQ)", &ret, &call);
	bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->eq), "fi_close (EQ)", &ret, &call);
	if (!endpoint->shares_domain) {
		bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->domain), "fi_close (domain)", &ret,
				       &call);
		bolt_fixture_close_fid(BOLT_FIXTURE_FID(endpoint->fabric), "fi_close (fabric)", &ret,
				       &call);
		fi_freeinfo(endpoint->info);
	}
	memset(endpoint, 0, sizeof(*endpoint));
	endpoint->failed_call = call;
	return ret;
}

int bolt_fixture_insert_names(struct bolt_fixture_endpoint *endpoint, const void *names,
			      size_t name_stride, int count, fi_addr_t *addresses)
{
	for (int index = 0; index < count; index++) {
		int ret = fi_av_insert(endpoint->av, (const char *) names + (size_t) index * name_stride,
				       1, addresses ? &addresses[index] : NULL, 0, NULL);

		if (ret != 1)
			return bolt_fixture_check(endpoint, "fi_av_insert", ret < 0 ? ret : -FI_EINVAL);
	}
	return 0;
}

int bolt_fixture_register_region(struct bolt_fixture_endpoint *endpoint, void *buffer,
				 size_t length, uint64_t access, uint64_t requested_key,
				 bool keyless_until_enabled, struct fid_mr **mr)
{
	int ret = fi_mr_reg(endpoint->domain, buffer, length, access, 0, requested_key, 0, mr,
			    NULL);

	if (ret)
		return bolt_fixture_check(endpoint, "fi_mr_reg", ret);
	if (!(endpoint->info->domain_attr->mr_mode & FI_MR_ENDPOINT))
		return 0;
	if (keyless_until_enabled && fi_mr_key(*mr) != FI_KEY_NOTAVAIL)
		return bolt_fixture_check(endpoint, "fi_mr_key (before fi_mr_enable)", -FI_EOTHER);
	ret = fi_mr_bind(*mr, &endpoint->ep->fid, 0);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_mr_bind", ret);
	return bolt_fixture_check(endpoint, "fi_mr_enable", fi_mr_enable(*mr));
}

int bolt_fixture_socket_write(int socket, const void *data, size_t length)
{
	const char *bytes = data;

	while (length) {
		/* A peer that died is an error to report, not a SIGPIPE that kills the test. */
		ssize_t written = send(socket, bytes, length, MSG_NOSIGNAL);

		if (written < 0 && errno == EINTR)
			continue;
		if (written <= 0)
			return written ? -errno : -FI_EIO;
		bytes += written;
		length -= (size_t) written;
	}
	return 0;
}

/* Whether timeout_ms (negative: none) has passed since start. */
static bool bolt_fixture_expired(const struct timespec *start, int timeout_ms)
{
	return timeout_ms >= 0 && bolt_fixture_elapsed_ms(start) > timeout_ms;
}

int bolt_fixture_socket_read(int socket, void *data, size_t length, int timeout_ms,
			     const struct bolt_fixture_idle *idle)
{
	struct pollfd pollfd = { .fd = socket, .events = POLLIN };
	bool busy = idle && idle->idle;
	char *bytes = data;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (length) {
		/* With work to do while waiting, only look; without, sleep a little. */
		int ready = poll(&pollfd, 1, busy ? 0 : 100);
		ssize_t got;

		if (ready < 0 && errno != EINTR)
			return -errno;
		if (ready <= 0) {
			int ret = busy ? idle->idle(idle->argument) : 0;

			if (ret)
				return ret;
			if (bolt_fixture_expired(&start, timeout_ms))
				return -FI_ETIMEDOUT;
			continue;
		}
		got = read(socket, bytes, length);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got ? -errno : -FI_ECONNRESET;
		bytes += got;
		length -= (size_t) got;
	}
	return 0;
}

int bolt_fixture_exchange_names(struct bolt_fixture_endpoint *endpoint, int socket, int timeout_ms)
{
	char name[BOLT_FIXTURE_NAME_SIZE], peer_name[BOLT_FIXTURE_NAME_SIZE];
	size_t length = sizeof(name);
	uint64_t sent_length, peer_length;
	int ret;

	ret = fi_getname(&endpoint->ep->fid, name, &length);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_getname", ret);
	sent_length = length;
	ret = bolt_fixture_socket_write(socket, &sent_length, sizeof(sent_length));
	if (!ret)
		ret = bolt_fixture_socket_write(socket, name, length);
	if (!ret)
		ret = bolt_fixture_socket_read(socket, &peer_length, sizeof(peer_length), timeout_ms,
					       NULL);
	if (!ret && peer_length > sizeof(peer_name))
		ret = -FI_EINVAL;
	if (!ret)
		ret = bolt_fixture_socket_read(socket, peer_name, peer_length, timeout_ms, NULL);
	if (ret)
		return bolt_fixture_check(endpoint, "exchanging names over the socket", ret);
	return bolt_fixture_insert_names(endpoint, peer_name, 0, 1, &endpoint->peer);
}

int bolt_fixture_wait_completion(struct bolt_fixture_endpoint *endpoint,
				 struct fi_cq_tagged_entry *entry, struct fi_cq_err_entry *error,
				 int timeout_ms, const atomic_int *abandoned)
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
		if (abandoned && atomic_load(abandoned))
			return -FI_ECANCELED;
		/* Processes may outnumber cores (CI runs tests side by side): let the peers run. */
		sched_yield();
	} while (!bolt_fixture_expired(&start, timeout_ms));
	return -FI_ETIMEDOUT;
}

/* The FI_JOIN_COMPLETE of the join with context, on the endpoint's EQ. */
static int bolt_fixture_wait_join(struct bolt_fixture_endpoint *endpoint, void *context,
				  struct fid_mc *mc, int timeout_ms)
{
	struct fi_eq_entry entry;
	struct timespec start;
	uint32_t event;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		ret = fi_eq_read(endpoint->eq, &event, &entry, sizeof(entry), 0);
		if (ret == sizeof(entry)) {
			if (event != FI_JOIN_COMPLETE || entry.context != context ||
			    entry.fid != &mc->fid)
				return bolt_fixture_check(endpoint, "fi_eq_read (join)", -FI_EOTHER);
			return 0;
		}
		if (ret != -FI_EAGAIN)
			return bolt_fixture_check(endpoint, "fi_eq_read (join)",
						  (int) (ret < 0 ? ret : -FI_EOTHER));
		sched_yield();
	} while (!bolt_fixture_expired(&start, timeout_ms));
	return bolt_fixture_check(endpoint, "fi_eq_read (join)", -FI_ETIMEDOUT);
}

int bolt_fixture_join(struct bolt_fixture_endpoint *endpoint, struct fid_av_set *set,
		      struct fid_mc **mc, fi_addr_t *coll_addr, int timeout_ms)
{
	fi_addr_t set_addr;
	int context;
	int ret;

	ret = fi_av_set_addr(set, &set_addr);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_av_set_addr", ret);
	ret = fi_join_collective(endpoint->ep, set_addr, set, 0, mc, &context);
	if (ret)
		return bolt_fixture_check(endpoint, "fi_join_collective", ret);
	ret = bolt_fixture_wait_join(endpoint, &context, *mc, timeout_ms);
	if (!ret)
		*coll_addr = fi_mc_addr(*mc);
	return ret;
}

int bolt_fixture_join_all(struct bolt_fixture_endpoint *endpoint, int members, int timeout_ms)
{
	struct fi_av_set_attr attr = {
		.count = (size_t) members, .start_addr = 0, .end_addr = (fi_addr_t) members - 1,
		.stride = 1,
	};
	int ret = fi_av_set(endpoint->av, &attr, &endpoint->set, NULL);

	if (ret)
		return bolt_fixture_check(endpoint, "fi_av_set", ret);
	return bolt_fixture_join(endpoint, endpoint->set, &endpoint->mc, &endpoint->coll_addr,
				 timeout_ms);
}

void bolt_fixture_barrier_wait(struct bolt_fixture_barrier *barrier, int members,
			       struct bolt_fixture_endpoint *endpoint)
{
	int generation = atomic_load(&barrier->generation);

	if (atomic_fetch_add(&barrier->arrived, 1) == members - 1 - atomic_load(&barrier->departed)) {
		atomic_store(&barrier->arrived, 0);
		atomic_fetch_add(&barrier->generation, 1);
		return;
	}
	/* Progress while waiting: a peer may need this process's endpoint to finish. */
	while (atomic_load(&barrier->generation) == generation && !atomic_load(&barrier->failed)) {
		struct fi_cq_tagged_entry entry;

		if (endpoint && endpoint->cq)
			fi_cq_read(endpoint->cq, &entry, 0);
		sched_yield();
	}
}

void bolt_fixture_set_software_host(int host)
{
	char value[16];

	snprintf(value, sizeof(value), "%d", host);
	setenv("FI_BOLT_SOFT_HOST", value, 1);
}

void bolt_fixture_scale_software_limits(int hosts, bool overwrite)
{
	char value[32];

	snprintf(value, sizeof(value), "%d", 10 * hosts);
	setenv("FI_BOLT_SOFT_MAX_QP", value, overwrite);
	snprintf(value, sizeof(value), "%d", 100 * hosts);
	setenv("FI_BOLT_SOFT_MAX_MR", value, overwrite);
}

long bolt_fixture_elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

void bolt_fixture_set_loss(const char *ppm, bool data_writes)
{
	const char *seed = getenv("BOLT_TEST_LOSS_SEED");

	setenv("FI_BOLT_SOFT_DROP_PPM", ppm, 1);
	setenv("FI_BOLT_SOFT_SEED", seed && *seed ? seed : "28", 1);
	setenv("FI_BOLT_UC_DATA_WRITES", data_writes ? "1" : "0", 1);
}

void bolt_fixture_clear_loss(void)
{
	unsetenv("FI_BOLT_SOFT_DROP_PPM");
	unsetenv("FI_BOLT_SOFT_SEED");
	unsetenv("FI_BOLT_UC_DATA_WRITES");
}

int bolt_fixture_process_status(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void bolt_fixture_logging_start(void)
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
