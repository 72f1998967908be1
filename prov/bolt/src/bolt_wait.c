/*
 * bolt_wait.c: waiting by progress, shared by fi_cq_sread and fi_cntr_wait,
 * the deadlines fi_eq_sread also uses, and the check of the wait objects every
 * queue and counter accepts.
 */
#include <sched.h>

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
		return 0;
	case FI_WAIT_FD:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_SET:
	case FI_WAIT_POLLFD:
		FI_WARN(&bolt_prov, subsystem,
			"wait object %d needs a file descriptor, condition or wait set; bolt waits "
			"by driving progress and offers only FI_WAIT_NONE, FI_WAIT_UNSPEC and "
			"FI_WAIT_YIELD\n", wait_object);
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
