/*
 * softrdma_segment.c: the floor of the device: the shared-memory segment
 * every process of a profile and namespace attaches to: its name and layout,
 * creation (first process, O_EXCL) and joining (wait until initialized), the
 * robust lock, and the table of attached processes, with which of them are
 * dead. It knows no objects: what a dead or detaching process held is given
 * back by the function the opener hands it (softrdma_reap.c), so it calls
 * nothing above it.
 * The segment is sparse: pages are touched only as tables fill, and the
 * staging channels (128 rings of 512 KiB) only as transfers are staged
 * (copy mode shm).
 */
#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

/* How long a joiner waits for a creator before calling its segment stale. */
#define SOFTRDMA_JOIN_TIMEOUT_MS 10000
#define SOFTRDMA_OPEN_ATTEMPTS 100

struct softrdma_layout {
	uint64_t mr_offset;
	uint64_t qp_offset;
	uint64_t cq_offset;
	uint64_t channel_offset;
	uint64_t size;
};

static uint64_t softrdma_page_align(uint64_t bytes)
{
	uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

static void softrdma_layout_compute(struct softrdma_layout *layout)
{
	layout->mr_offset = softrdma_page_align(sizeof(struct softrdma_segment));
	layout->qp_offset = layout->mr_offset +
		softrdma_page_align((uint64_t) SOFTRDMA_MR_SLOTS * sizeof(struct softrdma_shared_mr));
	layout->cq_offset = layout->qp_offset +
		softrdma_page_align((uint64_t) SOFTRDMA_QP_SLOTS * sizeof(struct softrdma_shared_qp));
	layout->channel_offset = layout->cq_offset +
		softrdma_page_align((uint64_t) SOFTRDMA_CQ_SLOTS * sizeof(struct softrdma_shared_cq));
	layout->size = layout->channel_offset +
		softrdma_page_align((uint64_t) SOFTRDMA_CHANNEL_SLOTS *
				    sizeof(struct softrdma_shared_channel));
}

int softrdma_segment_name(const struct softrdma_config *config, char *name, size_t size)
{
	char namespace_name[sizeof(config->namespace_name)];
	int length;

	/* A '/' or other oddity in a namespace must not escape /dev/shm. */
	snprintf(namespace_name, sizeof(namespace_name), "%s",
		 config->namespace_name[0] ? config->namespace_name : "default");
	for (char *character = namespace_name; *character; character++) {
		if (!isalnum((unsigned char) *character) && !strchr("-_.", *character))
			*character = '_';
	}
	length = snprintf(name, size, "/bolt-softrdma-%u-%s-%s", (unsigned int) getuid(),
			  softrdma_profile_name(config->profile), namespace_name);
	return length < 0 || (size_t) length >= size ? -EINVAL : 0;
}

/* Cheap enough for every message: a process that exited and was reaped is gone. */
bool softrdma_process_exists(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* Also false for a zombie (exited, not yet reaped by its parent), whose memory is gone. */
bool softrdma_process_alive(pid_t pid)
{
	char path[64], status[512], *state;
	FILE *file;
	size_t length;

	if (!softrdma_process_exists(pid))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	file = fopen(path, "r");
	if (!file)
		return errno != ENOENT;
	length = fread(status, 1, sizeof(status) - 1, file);
	fclose(file);
	status[length] = '\0';
	/* "pid (name) S ...": the name may hold anything, the state follows its last ')'. */
	state = strrchr(status, ')');
	return !state || (state[1] != ' ' || (state[2] != 'Z' && state[2] != 'X'));
}

/* Where pid is in the table of attached processes; -1 if it is not attached. */
int softrdma_process_slot_locked(const struct softrdma_segment *segment, pid_t pid)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (pid && segment->processes[index] == pid)
			return index;
	}
	return -1;
}

/* pid leaves the table of attached processes (it died or detached). */
void softrdma_process_forget_locked(struct softrdma_segment *segment, pid_t pid)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (segment->processes[index] == pid)
			segment->processes[index] = 0;
	}
}

/*
 * What the dead held goes back through the function the opener handed over;
 * without one (not open yet) they stay in the table, to be reaped later.
 */
void softrdma_reap_dead_locked(struct softrdma_segment *segment)
{
	softrdma_owner_release release = softrdma_process.release_owner_locked;

	for (int index = 0; release && index < SOFTRDMA_MAX_PROCESSES; index++) {
		pid_t pid = segment->processes[index];

		if (pid && !softrdma_process_alive(pid)) {
			FI_INFO(&bolt_prov, FI_LOG_CORE,
				"software device: reclaiming the state of dead process %d\n", pid);
			release(segment, pid);
		}
	}
}

bool softrdma_device_full_locked(struct softrdma_segment *segment, const int32_t *count, int limit)
{
	if (*count < limit)
		return false;
	softrdma_reap_dead_locked(segment);
	return *count >= limit;
}

/*
 * The lock survives a holder that dies (robust mutex): the next locker makes
 * it consistent and reclaims what dead processes held. Any other failure
 * means the segment is corrupt, and no caller could go on safely.
 */
/*
 * Tries before sleeping: the lock is held for a few hundred nanoseconds at a
 * time, and a process that sleeps on it costs both sides a context switch
 * (a robust mutex never spins by itself).
 */
#define SOFTRDMA_LOCK_SPINS 200

static inline void softrdma_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

void softrdma_lock(struct softrdma_segment *segment)
{
	int ret = EBUSY;

	for (int spin = 0; ret == EBUSY && spin < SOFTRDMA_LOCK_SPINS; spin++) {
		ret = pthread_mutex_trylock(&segment->lock);
		if (ret == EBUSY)
			softrdma_cpu_relax();
	}
	if (ret == EBUSY)
		ret = pthread_mutex_lock(&segment->lock);

	if (ret == EOWNERDEAD) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: a process died holding the device lock; recovering\n");
		pthread_mutex_consistent(&segment->lock);
		softrdma_reap_dead_locked(segment);
	} else if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: locking the shared segment failed: %s\n", strerror(ret));
		abort();
	}
}

void softrdma_unlock(struct softrdma_segment *segment)
{
	pthread_mutex_unlock(&segment->lock);
}

static int softrdma_live_process_count_locked(const struct softrdma_segment *segment)
{
	int count = 0;

	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++)
		count += segment->processes[index] != 0;
	return count;
}

/* Sets the whole segment up for config: topology, limits, empty tables. */
static void softrdma_segment_reset(struct softrdma_segment *segment,
				   const struct softrdma_config *config, int hosts, int cables)
{
	segment->config = *config;
	softrdma_limits_effective(config, &segment->limits);
	segment->hosts = hosts;
	segment->cables = cables;
	softrdma_topology_build(segment);
	segment->next_pd_id = 0;
	softrdma_drop_reset_locked(segment, config->drop_every, config->drop_ppm, config->seed);
	memset(segment->processes, 0, sizeof(segment->processes));
	memset(segment->bells, 0, sizeof(segment->bells));
	softrdma_table_reset(&segment->mrs);
	softrdma_table_reset(&segment->qps);
	softrdma_table_reset(&segment->cqs);
	softrdma_table_reset(&segment->channels);
}

static int softrdma_segment_initialize(struct softrdma_segment *segment,
				       const struct softrdma_layout *layout,
				       const struct softrdma_config *config, int hosts, int cables)
{
	pthread_mutexattr_t attributes;
	int ret;

	ret = pthread_mutexattr_init(&attributes);
	if (ret)
		return -ret;
	ret = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(&segment->lock, &attributes);
	pthread_mutexattr_destroy(&attributes);
	if (ret)
		return -ret;
	segment->magic = SOFTRDMA_MAGIC;
	segment->version = SOFTRDMA_LAYOUT_VERSION;
	segment->size = layout->size;
	softrdma_table_init(&segment->mrs, layout->mr_offset, sizeof(struct softrdma_shared_mr),
			    sizeof(struct softrdma_shared_mr), SOFTRDMA_MR_INDEX_BITS, 32);
	softrdma_table_init(&segment->qps, layout->qp_offset, sizeof(struct softrdma_shared_qp),
			    offsetof(struct softrdma_shared_qp, receives), SOFTRDMA_QP_INDEX_BITS, 24);
	softrdma_table_init(&segment->cqs, layout->cq_offset, sizeof(struct softrdma_shared_cq),
			    offsetof(struct softrdma_shared_cq, ring), SOFTRDMA_CQ_INDEX_BITS, 32);
	softrdma_table_init(&segment->channels, layout->channel_offset,
			    sizeof(struct softrdma_shared_channel),
			    offsetof(struct softrdma_shared_channel, ring),
			    SOFTRDMA_CHANNEL_INDEX_BITS, 32);
	softrdma_segment_reset(segment, config, hosts, cables);
	__atomic_store_n(&segment->initialized, 1, __ATOMIC_RELEASE);
	return 0;
}

static int softrdma_segment_map(int fd, uint64_t size, struct softrdma_segment **segment)
{
	void *address = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (address == MAP_FAILED)
		return -errno;
	*segment = address;
	return 0;
}

/* The first process creates the segment; -EEXIST: another one did. */
static int softrdma_segment_create(const char *name, const struct softrdma_layout *layout,
				   const struct softrdma_config *config, int hosts, int cables,
				   struct softrdma_segment **segment)
{
	int fd, ret;

	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, (off_t) layout->size) ? -errno : 0;
	if (!ret)
		ret = softrdma_segment_map(fd, layout->size, segment);
	close(fd);
	if (!ret) {
		ret = softrdma_segment_initialize(*segment, layout, config, hosts, cables);
		if (ret)
			munmap(*segment, layout->size);
	}
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: creating %s failed: %s\n",
			name, strerror(-ret));
		shm_unlink(name);
	}
	return ret;
}

static void softrdma_sleep_millisecond(void)
{
	struct timespec delay = { .tv_sec = 0, .tv_nsec = 1000000 };

	nanosleep(&delay, NULL);
}

static int softrdma_segment_wait_size(int fd, const char *name, uint64_t size)
{
	for (int waited = 0; waited < SOFTRDMA_JOIN_TIMEOUT_MS; waited++) {
		struct stat status;

		if (fstat(fd, &status))
			return -errno;
		if ((uint64_t) status.st_size == size)
			return 0;
		if (status.st_size) {
			FI_WARN(&bolt_prov, FI_LOG_CORE,
				"software device: %s was made by another version of bolt (%lld bytes, not %llu); remove it\n",
				name, (long long) status.st_size, (unsigned long long) size);
			return -EPROTO;
		}
		softrdma_sleep_millisecond();
	}
	return -ETIMEDOUT;
}

static int softrdma_segment_wait_initialized(struct softrdma_segment *segment, const char *name)
{
	for (int waited = 0; waited < SOFTRDMA_JOIN_TIMEOUT_MS; waited++) {
		if (__atomic_load_n(&segment->initialized, __ATOMIC_ACQUIRE)) {
			if (segment->magic == SOFTRDMA_MAGIC &&
			    segment->version == SOFTRDMA_LAYOUT_VERSION)
				return 0;
			FI_WARN(&bolt_prov, FI_LOG_CORE,
				"software device: %s is not a segment of this version of bolt; remove it\n",
				name);
			return -EPROTO;
		}
		softrdma_sleep_millisecond();
	}
	return -ETIMEDOUT;
}

/*
 * Joins a segment another process created. -EAGAIN: it vanished, or its
 * creator died before finishing it (then it is removed): start over.
 */
static int softrdma_segment_join(const char *name, const struct softrdma_layout *layout,
				 struct softrdma_segment **segment)
{
	int fd, ret;

	fd = shm_open(name, O_RDWR, 0600);
	if (fd < 0)
		return errno == ENOENT ? -EAGAIN : -errno;
	ret = softrdma_segment_wait_size(fd, name, layout->size);
	if (!ret)
		ret = softrdma_segment_map(fd, layout->size, segment);
	close(fd);
	if (!ret) {
		ret = softrdma_segment_wait_initialized(*segment, name);
		if (ret)
			munmap(*segment, layout->size);
	}
	if (ret == -ETIMEDOUT) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: %s was never finished by its creator; recreating it\n", name);
		shm_unlink(name);
		ret = -EAGAIN;
	}
	return ret;
}

/* The process's slot in the table, its bell silent; -EUSERS when full. */
static int softrdma_register_locked(struct softrdma_segment *segment, pid_t pid)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (!segment->processes[index]) {
			segment->processes[index] = pid;
			memset(&segment->bells[index], 0, sizeof(segment->bells[index]));
			return index;
		}
	}
	FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: more than %d processes attached\n",
		SOFTRDMA_MAX_PROCESSES);
	return -EUSERS;
}

/*
 * Under the lock: a segment its last user unlinked is dropped (start over);
 * one whose users all died is reinitialized with this config. Returns this
 * process's slot in the table of attached processes.
 */
static int softrdma_segment_enter(struct softrdma_segment *segment, bool created,
				  const struct softrdma_config *config, int hosts, int cables)
{
	int ret;

	softrdma_lock(segment);
	if (segment->unlinked) {
		softrdma_unlock(segment);
		return -EAGAIN;
	}
	softrdma_reap_dead_locked(segment);
	if (!created && !softrdma_live_process_count_locked(segment)) {
		FI_INFO(&bolt_prov, FI_LOG_CORE,
			"software device: no live process was attached; reinitializing\n");
		softrdma_segment_reset(segment, config, hosts, cables);
	}
	ret = softrdma_register_locked(segment, getpid());
	softrdma_unlock(segment);
	return ret;
}

int softrdma_segment_open(const struct softrdma_config *config, int hosts, int cables,
			  softrdma_owner_release release_owner_locked)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_layout layout;
	int ret;

	process->release_owner_locked = release_owner_locked;
	softrdma_layout_compute(&layout);
	for (int attempt = 0; attempt < SOFTRDMA_OPEN_ATTEMPTS; attempt++) {
		struct softrdma_segment *segment = NULL;
		bool created;

		ret = softrdma_segment_create(process->segment_name, &layout, config, hosts,
					      cables, &segment);
		created = !ret;
		if (ret == -EEXIST)
			ret = softrdma_segment_join(process->segment_name, &layout, &segment);
		if (ret == -EAGAIN)
			continue;
		if (ret)
			return ret;
		ret = softrdma_segment_enter(segment, created, config, hosts, cables);
		if (ret < 0) {
			munmap(segment, layout.size);
			if (ret == -EAGAIN)
				continue;
			return ret;
		}
		process->slot = ret;
		process->segment = segment;
		process->segment_size = layout.size;
		return 0;
	}
	return -EAGAIN;
}

/* Leaves the segment; the last process out removes it. */
void softrdma_segment_close(void)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_segment *segment = process->segment;

	softrdma_lock(segment);
	process->release_owner_locked(segment, getpid());
	if (!softrdma_live_process_count_locked(segment)) {
		segment->unlinked = 1;
		shm_unlink(process->segment_name);
	}
	softrdma_unlock(segment);
	munmap(segment, process->segment_size);
	process->segment = NULL;
}
