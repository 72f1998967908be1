/*
 * softrdma_bell.c: waiting for another process across the shared segment.
 * A bell is a counter: one side rings it (bumps it) after publishing work,
 * the other waits until it moves past the count it saw before looking for
 * work, so no ring is missed. Waiters spin a little, then sleep in the kernel
 * (a futex on Linux; elsewhere short sleeps); ringing makes a system call
 * only when someone sleeps.
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "softrdma/softrdma_internal.h"

/* Spinning first saves two context switches when the other side is quick. */
#define SOFTRDMA_BELL_SPINS 64
#define SOFTRDMA_BELL_NAP_NS 50000ull /* where there is no futex */

uint32_t softrdma_bell_read(struct softrdma_bell *bell)
{
	return __atomic_load_n(&bell->rings, __ATOMIC_SEQ_CST);
}

/* Pairs with softrdma_bell_wait: a sleeper counted itself before checking rings. */
void softrdma_bell_ring(struct softrdma_bell *bell)
{
	__atomic_add_fetch(&bell->rings, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&bell->sleepers, __ATOMIC_SEQ_CST))
		return;
#ifdef __linux__
	syscall(SYS_futex, &bell->rings, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
#endif
}

static void softrdma_bell_sleep(struct softrdma_bell *bell, uint32_t seen, uint64_t timeout_ns)
{
#ifdef __linux__
	struct timespec timeout = {
		.tv_sec = (time_t) (timeout_ns / 1000000000ull),
		.tv_nsec = (long) (timeout_ns % 1000000000ull),
	};

	/* EAGAIN (rung meanwhile), EINTR and ETIMEDOUT all mean: look again. */
	syscall(SYS_futex, &bell->rings, FUTEX_WAIT, seen, &timeout, NULL, 0);
#else
	struct timespec nap = { .tv_sec = 0, .tv_nsec = (long) SOFTRDMA_BELL_NAP_NS };

	(void) seen;
	if (timeout_ns < SOFTRDMA_BELL_NAP_NS)
		nap.tv_nsec = (long) timeout_ns;
	nanosleep(&nap, NULL);
#endif
}

void softrdma_bell_wait(struct softrdma_bell *bell, uint32_t seen, uint64_t timeout_ns)
{
	for (int spin = 0; spin < SOFTRDMA_BELL_SPINS; spin++) {
		if (softrdma_bell_read(bell) != seen)
			return;
		sched_yield();
	}
	__atomic_add_fetch(&bell->sleepers, 1, __ATOMIC_SEQ_CST);
	if (softrdma_bell_read(bell) == seen)
		softrdma_bell_sleep(bell, seen, timeout_ns);
	__atomic_sub_fetch(&bell->sleepers, 1, __ATOMIC_SEQ_CST);
}
