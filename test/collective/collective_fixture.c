/*
 * collective_fixture.c: forking the ranks, their endpoints, the shared page
 * they meet on, waiting for completions and for joins.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collective_fixture.h"
#include "rdm_fixture.h"

#define COLLECTIVE_NAME_SIZE 64

/* The page the ranks share, mapped before they are forked. */
struct collective_shared {
	struct bolt_fixture_barrier barrier;    /* its departed: ranks killed on purpose */
	char names[COLLECTIVE_MAX_RANKS][COLLECTIVE_NAME_SIZE];
	size_t name_lengths[COLLECTIVE_MAX_RANKS];
	uint64_t published[COLLECTIVE_MAX_RANKS];
};

void collective_barrier(struct collective_rank *rank)
{
	bolt_fixture_barrier_wait(&rank->shared->barrier, rank->size, &rank->endpoint);
}

void collective_die(struct collective_rank *rank)
{
	atomic_fetch_add(&rank->shared->barrier.departed, 1);
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
	int ret = bolt_fixture_wait_completion(&rank->endpoint, &entry, &error_entry,
					       COLLECTIVE_TIMEOUT_MS, NULL);

	if (!ret)
		return entry.op_context == context && (entry.flags & FI_COLLECTIVE) ? 0 : -FI_EOTHER;
	if (ret != -FI_EAVAIL)
		return ret;
	if (error)
		*error = error_entry.err;
	return error_entry.op_context == context ? -FI_EAVAIL : -FI_EOTHER;
}

int collective_join(struct collective_rank *rank, struct fid_av_set *set, struct fid_mc **mc,
		    fi_addr_t *coll_addr)
{
	return bolt_fixture_join(&rank->endpoint, set, mc, coll_addr, COLLECTIVE_TIMEOUT_MS);
}

static int collective_open(struct collective_rank *rank)
{
	struct bolt_fixture_options options = {
		.entry_points = &rdm_provider_entry_points, .av_type = FI_AV_TABLE,
		.event_queue = true,
	};
	struct fi_info *hints = bolt_fixture_hints(FI_MSG | FI_TAGGED | FI_COLLECTIVE, NULL);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	ret = bolt_fixture_open(&rank->endpoint, hints, &options);
	fi_freeinfo(hints);
	return ret;
}

/* Every rank's name into every AV, in rank order: AV index = rank. */
static int collective_exchange_names(struct collective_rank *rank)
{
	struct collective_shared *shared = rank->shared;
	size_t length = COLLECTIVE_NAME_SIZE;
	int ret;

	ret = fi_getname(&rank->endpoint.ep->fid, shared->names[rank->rank], &length);
	if (ret)
		return ret;
	shared->name_lengths[rank->rank] = length;
	collective_barrier(rank);
	return bolt_fixture_insert_names(&rank->endpoint, shared->names, COLLECTIVE_NAME_SIZE,
					 rank->size, rank->addresses);
}

static int collective_rank_main(struct collective_rank *rank, const struct collective_options *options,
				int (*body)(struct collective_rank *, void *), void *argument)
{
	int ret = collective_open(rank);

	if (!ret)
		ret = collective_exchange_names(rank);
	if (!ret && !options->no_join)
		ret = bolt_fixture_join_all(&rank->endpoint, rank->size, COLLECTIVE_TIMEOUT_MS);
	if (!ret)
		ret = body(rank, argument);
	if (ret)
		fprintf(stderr, "rank %d of %d: %s%s%s (%d)\n", rank->rank, rank->size,
			rank->endpoint.failed_call ? rank->endpoint.failed_call : "",
			rank->endpoint.failed_call ? ": " : "", fi_strerror(-ret), ret);
	/* Nobody closes while a peer may still need this rank's progress. */
	collective_barrier(rank);
	bolt_fixture_close(&rank->endpoint);
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

	rdm_environment(&rdm, tag);
	setenv("FI_BOLT_SOFT_TOPOLOGY", options->topology ? options->topology : "single", 1);
	bolt_fixture_scale_software_limits(scaled ? options->size : 0, true);
	collective_setenv("FI_BOLT_COLLECTIVE_RING_THRESHOLD", options->ring_threshold);
	collective_setenv("FI_BOLT_COLLECTIVE_SEGMENT_SIZE", options->segment_size);
	collective_setenv("FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS", options->doubling_members);
	collective_setenv("FI_BOLT_COLLECTIVE_LANES", options->lanes);
	collective_setenv("FI_BOLT_COLLECTIVE_YIELD", options->yield);
	collective_setenv("FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD", options->rendezvous_threshold);
	collective_setenv("FI_BOLT_UNEXPECTED_LIMIT", options->unexpected_limit);
	collective_setenv("FI_BOLT_COLLECTIVE_PULL", options->pull);
	collective_setenv("FI_BOLT_COLLECTIVE_GRANTS", options->grants);
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

			bolt_fixture_set_software_host(options->topology ? index : 0);
			if (index == 0 && options->grants_at_rank0)
				setenv("FI_BOLT_COLLECTIVE_GRANTS", options->grants_at_rank0, 1);
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
