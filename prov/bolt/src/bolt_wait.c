/*
 * bolt_wait.c: waiting by progress, shared by fi_cq_sread and fi_cntr_wait,
 * the deadlines fi_eq_sread also uses, the check of the wait objects every
 * queue and counter accepts, and FI_WAIT_FD: the eventfds, FI_GETWAIT and
 * fi_trywait.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "bolt_wait.h"

/*
 * A waiter first only yields, since a completion usually follows within a
 * few microseconds; after that it sleeps, longer each time up to a
 * millisecond, so a long wait costs little CPU yet notices an fi_cq_signal
 * or a completion from another thread within about a millisecond.
 */
#define BOLT_WAIT_YIELDS 64
#define BOLT_WAIT_FIRST_SLEEP_NS 10000L
#define BOLT_WAIT_LONGEST_SLEEP_NS 1000000L
#define BOLT_NS_PER_MS 1000000L
#define BOLT_NS_PER_S 1000000000L

int bolt_wait_object_check(enum fi_wait_obj wait_object, enum fi_log_subsys subsystem)
{
	switch (wait_object) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
	case FI_WAIT_FD:
		return 0;
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_SET:
	case FI_WAIT_POLLFD:
		FI_WARN(&bolt_prov, subsystem,
			"wait object %d needs a condition, wait set or set of fds; bolt waits by "
			"driving progress and offers FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_YIELD "
			"and FI_WAIT_FD\n", wait_object);
		return -FI_ENOSYS;
	default:
		FI_WARN(&bolt_prov, subsystem, "unknown wait object %d\n", wait_object);
		return -FI_EINVAL;
	}
}

void bolt_wait_deadline(int timeout_ms, struct timespec *deadline)
{
	clock_gettime(CLOCK_MONOTONIC, deadline);
	if (timeout_ms < 0)
		return;
	deadline->tv_sec += timeout_ms / 1000;
	deadline->tv_nsec += (long) (timeout_ms % 1000) * BOLT_NS_PER_MS;
	if (deadline->tv_nsec >= BOLT_NS_PER_S) {
		deadline->tv_sec++;
		deadline->tv_nsec -= BOLT_NS_PER_S;
	}
}

bool bolt_wait_expired(int timeout_ms, const struct timespec *deadline)
{
	struct timespec now;

	if (timeout_ms < 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec != deadline->tv_sec)
		return now.tv_sec > deadline->tv_sec;
	return now.tv_nsec >= deadline->tv_nsec;
}

/* Gives the CPU away between two polls; polls counts the polls so far. */
static void bolt_wait_pause(unsigned long polls, long *sleep_ns)
{
	struct timespec pause = { 0 };

	if (polls < BOLT_WAIT_YIELDS) {
		sched_yield();
		return;
	}
	pause.tv_nsec = *sleep_ns;
	nanosleep(&pause, NULL);
	if (*sleep_ns < BOLT_WAIT_LONGEST_SLEEP_NS)
		*sleep_ns *= 2;
	if (*sleep_ns > BOLT_WAIT_LONGEST_SLEEP_NS)
		*sleep_ns = BOLT_WAIT_LONGEST_SLEEP_NS;
}

int bolt_wait_progress(struct bolt_domain *domain, bolt_wait_condition condition,
		       void *argument, int timeout_ms)
{
	long sleep_ns = BOLT_WAIT_FIRST_SLEEP_NS;
	struct timespec deadline;

	bolt_wait_deadline(timeout_ms, &deadline);
	for (unsigned long polls = 0;; polls++) {
		bolt_domain_progress(domain);
		if (condition(argument))
			return 0;
		if (bolt_wait_expired(timeout_ms, &deadline))
			return -FI_ETIMEDOUT;
		bolt_domain_unlock(domain);
		bolt_wait_pause(polls, &sleep_ns);
		bolt_domain_lock(domain);
	}
}

int bolt_wait_fd_open(struct bolt_wait_fd *wait_fd, enum fi_wait_obj wait_object)
{
	wait_fd->readable = false;
	wait_fd->fd = -1;
	if (wait_object != FI_WAIT_FD)
		return 0;
	wait_fd->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wait_fd->fd < 0) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "eventfd for FI_WAIT_FD: %s\n", strerror(errno));
		return errno == ENOMEM ? -FI_ENOMEM : -FI_EMFILE;
	}
	return 0;
}

void bolt_wait_fd_close(struct bolt_wait_fd *wait_fd)
{
	if (wait_fd->fd >= 0)
		close(wait_fd->fd);
	wait_fd->fd = -1;
}

void bolt_wait_fd_set(struct bolt_wait_fd *wait_fd, bool ready)
{
	uint64_t value = 1;

	if (wait_fd->fd < 0 || wait_fd->readable == ready)
		return;
	/* Non-blocking: a write cannot fail short of a counter at its limit, a read of an
	 * fd drained already; either way the fd ends as asked. */
	if (ready)
		(void) !write(wait_fd->fd, &value, sizeof(value));
	else
		(void) !read(wait_fd->fd, &value, sizeof(value));
	wait_fd->readable = ready;
}

int bolt_wait_fd_control(const struct bolt_wait_fd *wait_fd, int command, void *argument)
{
	if (command != FI_GETWAIT && command != FI_GETWAITOBJ)
		return -FI_ENOSYS;
	if (wait_fd->fd < 0)
		return -FI_ENODATA;
	if (!argument)
		return -FI_EINVAL;
	if (command == FI_GETWAIT)
		*(int *) argument = wait_fd->fd;
	else
		*(enum fi_wait_obj *) argument = FI_WAIT_FD;
	return 0;
}

/* Whether a domain's queue or counter may still gain entries: progress must run. */
static bool bolt_wait_domain_busy(struct bolt_domain *domain)
{
	bolt_domain_progress(domain);
	return domain->endpoints != NULL;
}

/* 0 when blocking on fid's fd is safe, -FI_EAGAIN if not, -FI_EINVAL for no FD object. */
static int bolt_wait_try_one(struct fid *fid)
{
	bool not_now;

	if (fid->fclass == FI_CLASS_CQ) {
		struct bolt_cq *cq = bolt_container_of(fid, struct bolt_cq, cq_fid.fid);

		if (cq->wait_fd.fd < 0)
			return -FI_EINVAL;
		bolt_domain_lock(cq->domain);
		not_now = bolt_wait_domain_busy(cq->domain) || cq->count || cq->errors;
		bolt_domain_unlock(cq->domain);
	} else if (fid->fclass == FI_CLASS_CNTR) {
		struct bolt_cntr *cntr = bolt_container_of(fid, struct bolt_cntr, cntr_fid.fid);

		if (cntr->wait_fd.fd < 0)
			return -FI_EINVAL;
		bolt_domain_lock(cntr->domain);
		not_now = bolt_wait_domain_busy(cntr->domain) || cntr->wait_fd.readable;
		bolt_domain_unlock(cntr->domain);
	} else if (fid->fclass == FI_CLASS_EQ) {
		struct bolt_eq *eq = bolt_container_of(fid, struct bolt_eq, eq_fid.fid);

		if (eq->wait_fd.fd < 0)
			return -FI_EINVAL;
		pthread_mutex_lock(&eq->lock);
		/* A watched domain's progress makes its events (joins): only a reader drives it. */
		not_now = eq->count || eq->watched;
		pthread_mutex_unlock(&eq->lock);
	} else {
		return -FI_EINVAL;
	}
	return not_now ? -FI_EAGAIN : 0;
}

int bolt_wait_try(struct fid_fabric *fabric_fid, struct fid **fids, int count)
{
	int ret;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		ret = fids[i] ? bolt_wait_try_one(fids[i]) : -FI_EINVAL;
		if (ret)
			return ret;
	}
	return 0;
}
