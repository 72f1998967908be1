/*
 * bolt_wait.h: how bolt's completion queues, counters and event queues wait.
 * bolt has no device interrupt to sleep on, and its progress is manual, so a
 * waiter keeps driving progress until what it waits for happens or its
 * timeout passes. FI_WAIT_FD gives the application an fd to poll besides.
 */
#ifndef BOLT_WAIT_H
#define BOLT_WAIT_H

#include <stdbool.h>
#include <time.h>

#include "bolt_provider.h"

/*
 * Whether wait_object can be honoured: FI_WAIT_NONE, FI_WAIT_UNSPEC,
 * FI_WAIT_YIELD and FI_WAIT_FD can; FI_WAIT_POLLFD, FI_WAIT_MUTEX_COND and
 * FI_WAIT_SET need an object bolt does not hand out (-FI_ENOSYS); anything
 * else is -FI_EINVAL. subsystem names the caller in the log.
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

/*
 * FI_WAIT_FD. bolt has no device interrupt to sleep on and its progress is
 * manual: the fd becomes readable when some thread's progress (or the
 * application) queues something, and fi_trywait answers -FI_EAGAIN while the
 * domain has endpoints, whose completions only progress can bring. The fd
 * changes only on transitions, so a busy queue costs no system call per entry.
 */
/* Opens the eventfd when wait_object is FI_WAIT_FD; fd -1 otherwise. 0 or -FI_E*. */
int bolt_wait_fd_open(struct bolt_wait_fd *wait_fd, enum fi_wait_obj wait_object);
void bolt_wait_fd_close(struct bolt_wait_fd *wait_fd);
/* Makes the fd readable, or drains it, as ready says. The owner's lock is held. */
void bolt_wait_fd_set(struct bolt_wait_fd *wait_fd, bool ready);
/*
 * fi_control on a CQ, counter or EQ: FI_GETWAIT writes the fd to an int,
 * FI_GETWAITOBJ the wait object; -FI_ENODATA without an fd, -FI_ENOSYS for
 * other commands.
 */
int bolt_wait_fd_control(const struct bolt_wait_fd *wait_fd, int command, void *argument);
/* fi_trywait: 0 when the application may block on the fds, else -FI_EAGAIN. */
int bolt_wait_try(struct fid_fabric *fabric_fid, struct fid **fids, int count);

#endif /* BOLT_WAIT_H */
