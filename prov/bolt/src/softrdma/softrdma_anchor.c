/*
 * softrdma_anchor.c: this process's anchor, and whether another process's
 * holds. A thread of each attached process holds the robust mutex of the
 * process's entry in the table of attached processes until it detaches.
 * When that thread ends with its process (exit, a signal, exec), the kernel
 * marks the mutex's owner dead, as it walks the thread's robust list, before
 * the process becomes a zombie. So an RC sender learns that its target
 * still runs by reading one word of shared memory, where asking the kernel
 * (a pidfd) costs a system call per message, as much again as a small
 * message itself. An anchor that does not hold tells nothing (not started
 * yet, detached, another C library): the sender then copies, which finds
 * a dead target.
 */
#include <linux/futex.h>
#include <signal.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

static struct {
	pthread_mutex_t lock;   /* guards the rest, and with wake the thread's wait */
	pthread_cond_t wake;
	pthread_t thread;
	bool running;
	bool holding;           /* the thread holds the anchor */
	bool stop;
} softrdma_anchor = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

static pthread_mutex_t *softrdma_anchor_of(struct softrdma_segment *segment, int slot)
{
	return &segment->processes[slot].anchor;
}

/* Holds the anchor until told to stop; then lets go of it, so that it reads as not held. */
static void *softrdma_anchor_main(void *argument)
{
	pthread_mutex_t *anchor = argument;
	int ret = pthread_mutex_lock(anchor);

	/* A fresh mutex: no owner can have died holding it, but a robust one may say so. */
	if (ret == EOWNERDEAD)
		ret = pthread_mutex_consistent(anchor);
	pthread_mutex_lock(&softrdma_anchor.lock);
	softrdma_anchor.holding = !ret;
	pthread_cond_broadcast(&softrdma_anchor.wake);
	while (!softrdma_anchor.stop)
		pthread_cond_wait(&softrdma_anchor.wake, &softrdma_anchor.lock);
	pthread_mutex_unlock(&softrdma_anchor.lock);
	if (!ret)
		pthread_mutex_unlock(anchor);
	return NULL;
}

static int softrdma_anchor_init(pthread_mutex_t *anchor)
{
	pthread_mutexattr_t attributes;
	int ret = pthread_mutexattr_init(&attributes);

	if (ret)
		return ret;
	ret = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(anchor, &attributes);
	pthread_mutexattr_destroy(&attributes);
	return ret;
}

void softrdma_anchor_start(void)
{
	struct softrdma_process *process = &softrdma_process;
	pthread_mutex_t *anchor = softrdma_anchor_of(process->segment, process->slot);
	sigset_t all, previous;
	int ret;

	ret = softrdma_anchor_init(anchor);
	if (!ret) {
		softrdma_anchor.stop = false;
		softrdma_anchor.holding = false;
		/* Signals are the application's threads' business. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &previous);
		ret = pthread_create(&softrdma_anchor.thread, NULL, softrdma_anchor_main, anchor);
		pthread_sigmask(SIG_SETMASK, &previous, NULL);
	}
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: no anchor thread (%s): RC senders ask the kernel whether "
			"this process lives, at each small message\n", strerror(ret));
		return;
	}
	softrdma_anchor.running = true;
	pthread_mutex_lock(&softrdma_anchor.lock);
	while (!softrdma_anchor.holding)
		pthread_cond_wait(&softrdma_anchor.wake, &softrdma_anchor.lock);
	pthread_mutex_unlock(&softrdma_anchor.lock);
}

void softrdma_anchor_stop(void)
{
	if (!softrdma_anchor.running)
		return;
	pthread_mutex_lock(&softrdma_anchor.lock);
	softrdma_anchor.stop = true;
	pthread_cond_broadcast(&softrdma_anchor.wake);
	pthread_mutex_unlock(&softrdma_anchor.lock);
	pthread_join(softrdma_anchor.thread, NULL);
	softrdma_anchor.running = false;
}

void softrdma_anchor_forget(void)
{
	pthread_mutex_init(&softrdma_anchor.lock, NULL);
	pthread_cond_init(&softrdma_anchor.wake, NULL);
	softrdma_anchor.running = false;
}

/*
 * Where pid's entry was last found, by pid: pid << 32 | slot + 1. Any entry
 * read is checked against pid, so a stale one only costs a search.
 */
#define SOFTRDMA_ANCHOR_CACHE 64
static uint64_t softrdma_anchor_cache[SOFTRDMA_ANCHOR_CACHE];

/* Where pid is in the table of attached processes, searched without the lock; -1 if nowhere. */
static int softrdma_anchor_search(const struct softrdma_segment *segment, pid_t pid)
{
	for (int slot = 0; slot < SOFTRDMA_MAX_PROCESSES; slot++) {
		if (__atomic_load_n(&segment->processes[slot].pid, __ATOMIC_RELAXED) == pid) {
			__atomic_store_n(&softrdma_anchor_cache[(uint32_t) pid % SOFTRDMA_ANCHOR_CACHE],
					 (uint64_t) (uint32_t) pid << 32 | (uint32_t) (slot + 1),
					 __ATOMIC_RELAXED);
			return slot;
		}
	}
	return -1;
}

static int softrdma_anchor_slot(const struct softrdma_segment *segment, pid_t pid)
{
	uint64_t cached = __atomic_load_n(&softrdma_anchor_cache[(uint32_t) pid % SOFTRDMA_ANCHOR_CACHE],
					  __ATOMIC_RELAXED);
	int slot = (int) (uint32_t) cached - 1;

	if ((pid_t) (cached >> 32) == pid && slot >= 0 && slot < SOFTRDMA_MAX_PROCESSES &&
	    __atomic_load_n(&segment->processes[slot].pid, __ATOMIC_RELAXED) == pid)
		return slot;
	return softrdma_anchor_search(segment, pid);
}

bool softrdma_anchor_holds(struct softrdma_segment *segment, pid_t pid)
{
#ifdef __GLIBC__
	int slot = pid > 0 ? softrdma_anchor_slot(segment, pid) : -1;
	uint32_t word;

	if (slot < 0)
		return false;
	/* glibc keeps the owner's thread id in the mutex's first word, and the kernel its death. */
	word = (uint32_t) __atomic_load_n(&softrdma_anchor_of(segment, slot)->__data.__lock,
					  __ATOMIC_ACQUIRE);
	/* Read after the word: the entry may have gone to another process meanwhile. */
	return (word & FUTEX_TID_MASK) && !(word & FUTEX_OWNER_DIED) &&
	       __atomic_load_n(&segment->processes[slot].pid, __ATOMIC_ACQUIRE) == pid;
#else
	(void) segment;
	(void) pid;
	return false;
#endif
}
