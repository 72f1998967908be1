/*
 * softrdma_segment.c: the floor of the device: the shared-memory segment
 * every process of a profile and namespace attaches to: its name and layout,
 * creation (built under a name of its creator's, then renamed into place, so
 * that a segment under its name is always complete), joining only a file
 * this user alone can reach, the robust lock, leaving (the last process out
 * removes it) and removing one whose processes are all gone. Its table of
 * attached processes is softrdma_processes.c's. It knows no objects: what a
 * dead or detaching process held is given back by the function the opener
 * hands it (softrdma_reap.c), so it calls nothing above it.
 * The segment is sparse: pages are touched only as tables fill, and the
 * staging channels (128 rings of 512 KiB) only as transfers are staged
 * (copy mode shm).
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

/* Creation names: the segment's name, then this mark, its creator's pid and start time. */
#define SOFTRDMA_CREATION_MARK '~'
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

/* The start of the names of every segment of this user: "/bolt-softrdma-<uid>-". */
int softrdma_segment_prefix(char *prefix, size_t size)
{
	int length = snprintf(prefix, size, "/bolt-softrdma-%u-", (unsigned int) geteuid());

	return length < 0 || (size_t) length >= size ? -EINVAL : 0;
}

int softrdma_segment_name(const struct softrdma_config *config, char *name, size_t size)
{
	char namespace_name[sizeof(config->namespace_name)], prefix[64];
	int length;

	/* A '/' or other oddity in a namespace must not escape /dev/shm. */
	snprintf(namespace_name, sizeof(namespace_name), "%s",
		 config->namespace_name[0] ? config->namespace_name : "default");
	for (char *character = namespace_name; *character; character++) {
		if (!isalnum((unsigned char) *character) && !strchr("-_.", *character))
			*character = '_';
	}
	if (softrdma_segment_prefix(prefix, sizeof(prefix)))
		return -EINVAL;
	length = snprintf(name, size, "%s%s-%s", prefix, softrdma_profile_name(config->profile),
			  namespace_name);
	return length < 0 || (size_t) length >= size ? -EINVAL : 0;
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

/* After the locking call: the lock is held and consistent, or it failed (ret). */
static int softrdma_lock_recover(struct softrdma_segment *segment, int ret)
{
	if (ret != EOWNERDEAD)
		return ret;
	FI_WARN(&bolt_prov, FI_LOG_CORE,
		"software device: a process died holding the device lock; recovering\n");
	pthread_mutex_consistent(&segment->lock);
	softrdma_reap_dead_locked(segment);
	return 0;
}

int softrdma_shared_mutex_init(pthread_mutex_t *mutex)
{
	pthread_mutexattr_t attributes;
	int ret = pthread_mutexattr_init(&attributes);

	if (ret)
		return ret;
	ret = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(mutex, &attributes);
	pthread_mutexattr_destroy(&attributes);
	return ret;
}

uint32_t softrdma_shared_mutex_word(pthread_mutex_t *mutex)
{
#ifdef __GLIBC__
	return (uint32_t) __atomic_load_n(&mutex->__data.__lock, __ATOMIC_ACQUIRE);
#else
	(void) mutex;
	return 0;
#endif
}

/*
 * Whether the lock looks held, by reading it only: spinners that each try
 * the lock write its cache line, and slow its holder (elsewhere than glibc,
 * just try).
 */
static bool softrdma_lock_looks_held(struct softrdma_segment *segment)
{
	return softrdma_shared_mutex_word(&segment->lock) != 0;
}

void softrdma_lock(struct softrdma_segment *segment)
{
	int ret = EBUSY;

	for (int spin = 0; ret == EBUSY && spin < SOFTRDMA_LOCK_SPINS; spin++) {
		if (!softrdma_lock_looks_held(segment))
			ret = pthread_mutex_trylock(&segment->lock);
		if (ret == EBUSY)
			softrdma_cpu_relax();
	}
	if (ret == EBUSY)
		ret = pthread_mutex_lock(&segment->lock);
	ret = softrdma_lock_recover(segment, ret);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: locking the shared segment failed: %s\n", strerror(ret));
		abort();
	}
}

bool softrdma_trylock(struct softrdma_segment *segment)
{
	return !softrdma_lock_recover(segment, pthread_mutex_trylock(&segment->lock));
}

void softrdma_unlock(struct softrdma_segment *segment)
{
	pthread_mutex_unlock(&segment->lock);
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
	softrdma_fault_plan_start_locked(segment, hosts, cables);
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
	int ret = softrdma_shared_mutex_init(&segment->lock);

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

int softrdma_segment_creation_name(const char *name, pid_t pid, uint64_t start_time,
				   char *creation, size_t size)
{
	int length = snprintf(creation, size, "%s%c%d-%llu", name, SOFTRDMA_CREATION_MARK,
			      (int) pid, (unsigned long long) start_time);

	return length < 0 || (size_t) length >= size ? -EINVAL : 0;
}

bool softrdma_segment_creation_parse(const char *creation, pid_t *pid, uint64_t *start_time)
{
	const char *mark = strrchr(creation, SOFTRDMA_CREATION_MARK);
	unsigned long long start;
	int creator, consumed = 0;

	if (!mark || sscanf(mark + 1, "%d-%llu%n", &creator, &start, &consumed) != 2 ||
	    mark[1 + consumed] || creator <= 0)
		return false;
	*pid = creator;
	*start_time = start;
	return true;
}

/*
 * Why the file status describes cannot be trusted, or NULL: only a regular
 * file of this user, reachable by no one else (mode 0600) and under no other
 * name (one link), is a segment no other user can read, write or have made.
 */
static const char *softrdma_segment_distrust(const struct stat *status)
{
	if (!S_ISREG(status->st_mode))
		return "it is not a regular file";
	if (status->st_uid != geteuid())
		return "it belongs to another user";
	if ((status->st_mode & 0777) != 0600)
		return "its mode is not 0600";
	if (status->st_nlink != 1)
		return "it has other names (hard links)";
	return NULL;
}

static void softrdma_segment_refuse(const char *name, const struct stat *status,
				    const char *reason)
{
	char path[PATH_MAX];

	if (softrdma_linux_shm_path(name, path, sizeof(path)))
		snprintf(path, sizeof(path), "%s", name);
	if (status) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: refusing %s: %s (owner %u, mode %04o, links %lu); only a file of uid %u with mode 0600 and one link is joined\n",
			path, reason, (unsigned int) status->st_uid,
			(unsigned int) (status->st_mode & 07777),
			(unsigned long) status->st_nlink, (unsigned int) geteuid());
	} else {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: refusing %s: %s\n", path,
			reason);
	}
}

/*
 * An fd of segment name, if this user alone can reach it and it has the size
 * of a segment of this version; its status in identity. -ENOENT: none;
 * -EAGAIN: its last process removed it since it was opened; -EACCES: not
 * trusted; -EPROTO: another size. Refusals are logged if asked.
 */
static int softrdma_segment_open_trusted(const char *name, uint64_t size, bool log,
					 struct stat *identity)
{
	const char *reason;
	int fd;

	fd = softrdma_linux_shm_open(name, O_RDWR);
	if (fd == -ELOOP || fd == -EACCES || fd == -EPERM) {
		if (log)
			softrdma_segment_refuse(name, NULL, fd == -ELOOP ? "it is a symbolic link" :
						"this user may not open it (another user's file)");
		return -EACCES;
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, identity)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	/* No link left: a process that probed and left removed it, as fi_getinfo does. */
	if (identity->st_nlink == 0) {
		close(fd);
		return -EAGAIN;
	}
	reason = softrdma_segment_distrust(identity);
	if (!reason && (uint64_t) identity->st_size == size)
		return fd;
	close(fd);
	if (reason) {
		if (log)
			softrdma_segment_refuse(name, identity, reason);
		return -EACCES;
	}
	if (log) {
		char because[128];

		snprintf(because, sizeof(because),
			 "%lld bytes, not the %llu of a segment of this version of bolt; remove it",
			 (long long) identity->st_size, (unsigned long long) size);
		softrdma_segment_refuse(name, NULL, because);
	}
	return -EPROTO;
}

static bool softrdma_segment_ours(const struct softrdma_segment *segment)
{
	return segment->magic == SOFTRDMA_MAGIC && segment->version == SOFTRDMA_LAYOUT_VERSION;
}

/* Its name goes: joiners that opened it before see unlinked and start over. */
static void softrdma_segment_remove_locked(struct softrdma_segment *segment, const char *name,
					   const struct stat *identity)
{
	segment->unlinked = 1;
	softrdma_linux_shm_unlink(name, identity);
}

/*
 * Builds the segment under a creation name of this process's, registers this
 * process in it and renames it into place. -EEXIST: another process's
 * segment got there first. Returns this process's slot.
 */
static int softrdma_segment_create(const char *name, const struct softrdma_layout *layout,
				   const struct softrdma_config *config, int hosts, int cables,
				   struct softrdma_segment **segment, struct stat *identity)
{
	char creation[PATH_MAX];
	uint64_t start_time = 0;
	int fd, ret;

	softrdma_linux_process_start(getpid(), &start_time);
	ret = softrdma_segment_creation_name(name, getpid(), start_time, creation,
					     sizeof(creation));
	if (ret)
		return ret;
	fd = softrdma_linux_shm_open(creation, O_RDWR | O_CREAT | O_EXCL);
	if (fd == -EEXIST) {
		/* No process of this user made it: the name is this process's alone. */
		softrdma_segment_refuse(creation, NULL, "another file holds this creation name");
		return -EACCES;
	}
	if (fd < 0)
		return fd;
	/* The umask may have taken bits away: joiners accept 0600 only. */
	ret = fchmod(fd, 0600) || ftruncate(fd, (off_t) layout->size) || fstat(fd, identity) ?
	      -errno : 0;
	if (!ret)
		ret = softrdma_segment_map(fd, layout->size, segment);
	close(fd);
	if (!ret) {
		ret = softrdma_segment_initialize(*segment, layout, config, hosts, cables);
		/* No other process can see it yet: no lock needed. */
		if (!ret)
			ret = softrdma_process_register_locked(*segment);
		if (ret >= 0) {
			int published = softrdma_linux_shm_publish(creation, name);

			ret = published ? published : ret;
		}
		if (ret < 0)
			munmap(*segment, layout->size);
	}
	if (ret < 0) {
		if (ret != -EEXIST)
			FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: creating %s failed: %s\n",
				name, strerror(-ret));
		softrdma_linux_shm_unlink(creation, NULL);
	}
	return ret;
}

/*
 * Under the lock: a segment whose name was removed is dropped, and one whose
 * processes are all gone is removed; both -EAGAIN (start over). Returns
 * this process's slot in the table of attached processes.
 */
static int softrdma_segment_enter(struct softrdma_segment *segment, const char *name,
				  const struct stat *identity)
{
	int ret = -EAGAIN;

	softrdma_lock(segment);
	if (segment->unlinked)
		goto out;
	if (softrdma_processes_all_gone_locked(segment)) {
		FI_INFO(&bolt_prov, FI_LOG_CORE,
			"software device: the processes of %s are all gone; replacing it\n", name);
		softrdma_segment_remove_locked(segment, name, identity);
		goto out;
	}
	softrdma_reap_dead_locked(segment);
	ret = softrdma_process_register_locked(segment);
out:
	softrdma_unlock(segment);
	return ret;
}

/*
 * Joins the segment another process created. -ENOENT: there is none;
 * -EAGAIN: it is going away. Returns this process's slot.
 */
static int softrdma_segment_join(const char *name, const struct softrdma_layout *layout,
				 struct softrdma_segment **segment, struct stat *identity)
{
	int fd, ret;

	fd = softrdma_segment_open_trusted(name, layout->size, true, identity);
	if (fd < 0)
		return fd;
	ret = softrdma_segment_map(fd, layout->size, segment);
	close(fd);
	if (ret)
		return ret;
	if (!softrdma_segment_ours(*segment)) {
		softrdma_segment_refuse(name, NULL,
					"it is not a segment of this version of bolt; remove it");
		ret = -EPROTO;
	} else {
		ret = softrdma_segment_enter(*segment, name, identity);
	}
	if (ret < 0)
		munmap(*segment, layout->size);
	return ret;
}

int softrdma_segment_open(const struct softrdma_config *config, int hosts, int cables,
			  softrdma_owner_release release_owner_locked)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_layout layout;
	int ret = -EAGAIN;

	process->release_owner_locked = release_owner_locked;
	softrdma_layout_compute(&layout);
	for (int attempt = 0; attempt < SOFTRDMA_OPEN_ATTEMPTS; attempt++) {
		struct softrdma_segment *segment = NULL;
		struct stat identity;

		ret = softrdma_segment_join(process->segment_name, &layout, &segment, &identity);
		if (ret == -ENOENT)
			ret = softrdma_segment_create(process->segment_name, &layout, config, hosts,
						      cables, &segment, &identity);
		if (ret == -EAGAIN || ret == -EEXIST)
			continue;
		if (ret < 0)
			return ret;
		process->slot = ret;
		process->segment = segment;
		process->segment_size = layout.size;
		process->segment_identity = identity;
		return 0;
	}
	return ret;
}

void softrdma_segment_remove_if_abandoned(const char *name)
{
	struct softrdma_segment *segment = NULL;
	struct softrdma_layout layout;
	struct stat identity;
	int fd, ret;

	softrdma_layout_compute(&layout);
	fd = softrdma_segment_open_trusted(name, layout.size, false, &identity);
	if (fd < 0)
		return;
	ret = softrdma_segment_map(fd, layout.size, &segment);
	close(fd);
	if (ret)
		return;
	/*
	 * Another version's lock is not ours to take, and a segment whose lock
	 * is held has a live process (or one stopped in a debugger, which this
	 * must not wait for): either stays.
	 */
	if (softrdma_segment_ours(segment) && softrdma_trylock(segment)) {
		if (!segment->unlinked && softrdma_processes_all_gone_locked(segment)) {
			FI_INFO(&bolt_prov, FI_LOG_CORE,
				"software device: removing %s: its processes are all gone\n", name);
			softrdma_segment_remove_locked(segment, name, &identity);
		}
		softrdma_unlock(segment);
	}
	munmap(segment, layout.size);
}

void softrdma_segment_leave(void)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_segment *segment = process->segment;

	softrdma_lock(segment);
	process->release_owner_locked(segment, getpid());
	if (!segment->unlinked && softrdma_processes_all_gone_locked(segment))
		softrdma_segment_remove_locked(segment, process->segment_name,
					       &process->segment_identity);
	softrdma_unlock(segment);
}

void softrdma_segment_close(void)
{
	struct softrdma_process *process = &softrdma_process;

	softrdma_segment_leave();
	munmap(process->segment, process->segment_size);
	process->segment = NULL;
}
