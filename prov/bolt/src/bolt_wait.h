/*
 * bolt_wait.h: how bolt's completion queues, counters and event queues wait.
 * bolt has no file descriptor or device interrupt to sleep on, and its
 * progress is manual, so a waiter keeps driving progress until what it waits
 * for happens or its timeout passes.
 */
#ifndef BOLT_WAIT_H
#define BOLT_WAIT_H

#include <stdbool.h>
#include <time.h>

#include "bolt_provider.h"

/*
 * Whether wait_object can be honoured: FI_WAIT_NONE, FI_WAIT_UNSPEC and
 * FI_WAIT_YIELD can; FI_WAIT_FD, FI_WAIT_POLLFD, FI_WAIT_MUTEX_COND and
 * FI_WAIT_SET need an object bolt cannot hand out (-FI_ENOSYS); anything else
 * is -FI_EINVAL. subsystem names the caller in the log.
 */
int bolt_wait_object_check(enum fi_wait_obj wait_object, enum fi_log_subsys subsystem);

/* The CLOCK_MONOTONIC time timeout_ms from now; a negative timeout never comes. */
void bolt_wait_deadline(int timeout_ms, struct timespec *deadline);
/* Whether deadline, from bolt_wait_deadline(timeout_ms), has passed. */
bool bolt_wait_expired(int timeout_ms, const struct timespec *deadline);

/* Whether a wait is over; called with the domain lock held, right after progress. */
typedef bool (*bolt_wait_condition)(void *argument);

/*
 * Drives bolt_domain_progress until condition(argument) holds (0) or
 * timeout_ms passes (-FI_ETIMEDOUT; negative waits forever). The caller holds
 * the domain lock; it is released between polls so that other threads can
 * post and progress meanwhile, and held again when this returns.
 */
int bolt_wait_progress(struct bolt_domain *domain, bolt_wait_condition condition,
		       void *argument, int timeout_ms);

#endif /* BOLT_WAIT_H */
