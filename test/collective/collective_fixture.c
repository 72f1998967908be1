/*
 * collective_fixture.c: forking the ranks, their endpoints, the shared page
 * they meet on, waiting for completions and for joins.
 */
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collective_fixture.h"
#include "rdm_fixture.h"
#include "bolt_fabric.h"
#include "bolt_getinfo.h"

#define COLLECTIVE_NAME_SIZE 64

/* The page the ranks share, mapped before they are forked. */
struct collective_shared {
	atomic_int arrived;             /* barrier: ranks that reached the current one */
	atomic_int generation;          /* barrier: how many have passed */
	atomic_int departed;            /* ranks killed on purpose */
	char names[COLLECTIVE_MAX_RANKS][COLLECTIVE_NAME_SIZE];
	size_t name_lengths[COLLECTIVE_MAX_RANKS];
	uint64_t published[COLLECTIVE_MAX_RANKS];
};

static long collective_elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

void collective_barrier(struct collective_rank *rank)
{
	struct collective_shared *shared = rank->shared;
	int generation = atomic_load(&shared->generation);

	if (atomic_fetch_add(&shared->arrived, 1) == rank->size - 1 - atomic_load(&shared->departed)) {
		atomic_store(&shared->arrived, 0);
		atomic_fetch_add(&shared->generation, 1);
		return;
	}
	/* Progress while waiting: a peer may need this rank's endpoint to finish. */
	while (atomic_load(&shared->generation) == generation) {
		struct fi_cq_tagged_entry entry;

		fi_cq_read(rank->cq, &entry, 0);
		sched_yield();
	}
}

void collective_die(struct collective_rank *rank)
{
	atomic_fetch_add(&rank->shared->departed, 1);
	raise(SIGKILL);
}

void collective_publish(struct collective_rank *rank, uint64_t value)
{
	rank->shared->published[rank->rank] = value;
}

uint64_t collective_published(struct collective_rank *rank, int from)
{
	return rank->shared->published[from];
}

int collective_wait(struct collective_rank *rank, void *context, int *error)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error_entry;
	struct timespec start;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		ret = fi_cq_read(rank->cq, &entry, 1);
		if (ret == 1) {
			if (entry.op_context != context || !(entry.flags & FI_COLLECTIVE))
				return -FI_EOTHER;
			return 0;
		}
		if (ret == -FI_EAVAIL) {
			memset(&error_entry, 0, sizeof(error_entry));
			fi_cq_readerr(rank->cq, &error_entry, 0);
			if (error)
				*error = error_entry.err;
			return error_entry.op_context == context ? -FI_EAVAIL : -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN)
			return (int) ret;
		sched_yield();
	} while (collective_elapsed_ms(&start) < COLLECTIVE_TIMEOUT_MS);
	return -FI_ETIMEDOUT;
}

int collective_join(struct collective_rank *rank, struct fid_av_set *set, struct fid_mc **mc,
		    fi_addr_t *coll_addr)
{
	struct fi_eq_entry entry;
	struct timespec start;
	fi_addr_t set_addr;
	uint32_t event;
	ssize_t ret;
	int context;

	ret = fi_av_set_addr(set, &set_addr);
	if (!ret)
		ret = fi_join_collective(rank->ep, set_addr, set, 0, mc, &context);
	if (ret)
		return (int) ret;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		ret = fi_eq_read(rank->eq, &event, &entry, sizeof(entry), 0);
		if (ret == sizeof(entry)) {
			if (event != FI_JOIN_COMPLETE || entry.context != &context ||
			    entry.fid != &(*mc)->fid)
				return -FI_EOTHER;
			*coll_addr = fi_mc_addr(*mc);
			return 0;
		}
		if (ret != -FI_EAGAIN)
			return (int) (ret < 0 ? ret : -FI_EOTHER);
		sched_yield();
	} while (collective_elapsed_ms(&start) < COLLECTIVE_TIMEOUT_MS);
	return -FI_ETIMEDOUT;
}

static int collective_open(struct collective_rank *rank)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_COLLECTIVE;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	ret = bolt_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &rank->info);
	fi_freeinfo(hints);
	if (!ret)
		ret = bolt_fabric_open(rank->info->fabric_attr, &rank->fabric, NULL);
	if (!ret)
		ret = fi_domain(rank->fabric, rank->info, &rank->domain, NULL);
	if (!ret)
		ret = fi_endpoint(rank->domain, rank->info, &rank->ep, NULL);
	if (!ret)
		ret = fi_cq_open(rank->domain, &cq_attr, &rank->cq, NULL);
	if (!ret)
		ret = fi_av_open(rank->domain, &av_attr, &rank->av, NULL);
	if (!ret)
		ret = fi_eq_open(rank->fabric, &eq_attr, &rank->eq, NULL);
	if (!ret)
		ret = fi_ep_bind(rank->ep, &rank->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(rank->ep, &rank->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(rank->ep, &rank->eq->fid, 0);
	return ret ? ret : fi_enable(rank->ep);
}

static void collective_close_fid(struct fid *fid)
{
	if (fid)
		fi_close(fid);
}

static void collective_close(struct collective_rank *rank)
{
	collective_close_fid(rank->mc ? &rank->mc->fid : NULL);
	collective_close_fid(rank->set ? &rank->set->fid : NULL);
	collective_close_fid(rank->ep ? &rank->ep->fid : NULL);
	collective_close_fid(rank->av ? &rank->av->fid : NULL);
	collective_close_fid(rank->cq ? &rank->cq->fid : NULL);
	collective_close_fid(rank->eq ? &rank->eq->fid : NULL);
	collective_close_fid(rank->domain ? &rank->domain->fid : NULL);
	collective_close_fid(rank->fabric ? &rank->fabric->fid : NULL);
	fi_freeinfo(rank->info);
}

/* Every rank's name into every AV, in rank order: AV index = rank. */
static int collective_exchange_names(struct collective_rank *rank)
{
	struct collective_shared *shared = rank->shared;
	size_t length = COLLECTIVE_NAME_SIZE;
	int ret;

	ret = fi_getname(&rank->ep->fid, shared->names[rank->rank], &length);
	if (ret)
		return ret;
	shared->name_lengths[rank->rank] = length;
	collective_barrier(rank);
	for (int other = 0; other < rank->size; other++) {
		ret = fi_av_insert(rank->av, shared->names[other], 1, &rank->addresses[other], 0, NULL);
		if (ret != 1)
			return -FI_EINVAL;
	}
	return 0;
}

static int collective_join_all(struct collective_rank *rank)
{
	struct fi_av_set_attr attr = {
		.count = (size_t) rank->size, .start_addr = 0, .end_addr = (fi_addr_t) rank->size - 1,
		.stride = 1,
	};
	int ret = fi_av_set(rank->av, &attr, &rank->set, NULL);

	return ret ? ret : collective_join(rank, rank->set, &rank->mc, &rank->coll_addr);
}

static int collective_rank_main(struct collective_rank *rank, const struct collective_options *options,
				int (*body)(struct collective_rank *, void *), void *argument)
{
	int ret = collective_open(rank);

	if (!ret)
		ret = collective_exchange_names(rank);
	if (!ret && !options->no_join)
		ret = collective_join_all(rank);
	if (!ret)
		ret = body(rank, argument);
	if (ret)
		fprintf(stderr, "rank %d of %d: %s (%d)\n", rank->rank, rank->size, fi_strerror(-ret), ret);
	/* Nobody closes while a peer may still need this rank's progress. */
	collective_barrier(rank);
	collective_close(rank);
	return ret;
}

/* name=value, or name unset for NULL: the provider's default. */
static void collective_setenv(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

/*
 * The software device's single topology stands for every rank's host: on real
 * Thunderbolt each host has its own device, so the limits scale with the ranks.
 * A mesh has a host per rank, each with devices of its own.
 */
static void collective_environment(const struct collective_options *options, const char *tag)
{
	struct rdm_options rdm = { .profile = options->profile };
	bool scaled = !options->topology && !strcmp(options->profile, "thunderbolt");
	char value[32];

	rdm_environment(&rdm, tag);
	setenv("FI_BOLT_SOFT_TOPOLOGY", options->topology ? options->topology : "single", 1);
	snprintf(value, sizeof(value), "%d", 10 * options->size);
	setenv("FI_BOLT_SOFT_MAX_QP", scaled ? value : "0", 1);
	snprintf(value, sizeof(value), "%d", 100 * options->size);
	setenv("FI_BOLT_SOFT_MAX_MR", scaled ? value : "0", 1);
	collective_setenv("FI_BOLT_COLLECTIVE_RING_THRESHOLD", options->ring_threshold);
	collective_setenv("FI_BOLT_COLLECTIVE_SEGMENT_SIZE", options->segment_size);
	collective_setenv("FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS", options->doubling_members);
	collective_setenv("FI_BOLT_UNEXPECTED_LIMIT", options->unexpected_limit);
}

int collective_run(const struct collective_options *options, const char *tag,
		   int (*body)(struct collective_rank *rank, void *argument), void *argument)
{
	struct collective_shared *shared;
	struct rdm_options rdm = { .profile = options->profile };
	pid_t pids[COLLECTIVE_MAX_RANKS];
	int failures = 0;

	if (options->size < 1 || options->size > COLLECTIVE_MAX_RANKS)
		return -FI_EINVAL;
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -FI_ENOMEM;
	memset(shared, 0, sizeof(*shared));
	collective_environment(options, tag);
	for (int index = 0; index < options->size; index++) {
		pids[index] = fork();
		if (pids[index] == 0) {
			struct collective_rank rank = {
				.rank = index, .size = options->size, .shared = shared,
			};

			char host[16];

			snprintf(host, sizeof(host), "%d", index);
			setenv("FI_BOLT_SOFT_HOST", options->topology ? host : "0", 1);
			alarm(COLLECTIVE_TIMEOUT_MS / 1000 + 60);
			_exit(collective_rank_main(&rank, options, body, argument) ? 1 : 0);
		}
		if (pids[index] < 0)
			failures++;
	}
	for (int index = 0; index < options->size; index++) {
		bool dies = options->last_rank_dies && index == options->size - 1;

		if (pids[index] > 0 && bolt_fixture_process_status(pids[index]) != (dies ? 128 + SIGKILL : 0))
			failures++;
	}
	rdm_environment_cleanup(&rdm);
	munmap(shared, sizeof(*shared));
	return failures ? -FI_EOTHER : 0;
}
