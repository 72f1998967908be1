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

void softrdma_anchor_start(void)
{
	struct softrdma_process *process = &softrdma_process;
	pthread_mutex_t *anchor = softrdma_anchor_of(process->segment, process->slot);
	sigset_t all, previous;
	int ret;

	ret = softrdma_shared_mutex_init(anchor);
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
			"software device: no anchor thread (%s): RC senders copy their small "
			"messages to this process\n", strerror(ret));
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
 * read is checked against pid, so a stale one only costs a search. Read
 * and written under the segment lock, as the table is.
 */
#define SOFTRDMA_ANCHOR_CACHE 64
static uint64_t softrdma_anchor_cache[SOFTRDMA_ANCHOR_CACHE];

static int softrdma_anchor_slot_locked(const struct softrdma_segment *segment, pid_t pid)
{
	uint64_t *cached = &softrdma_anchor_cache[(uint32_t) pid % SOFTRDMA_ANCHOR_CACHE];
	int slot = (int) (uint32_t) *cached - 1;

	if ((pid_t) (*cached >> 32) == pid && slot >= 0 && slot < SOFTRDMA_MAX_PROCESSES &&
	    segment->processes[slot].pid == pid)
		return slot;
	slot = softrdma_process_slot_locked(segment, pid);
	if (slot >= 0)
		*cached = (uint64_t) (uint32_t) pid << 32 | (uint32_t) (slot + 1);
	return slot;
}

bool softrdma_anchor_holds_locked(struct softrdma_segment *segment, pid_t pid)
{
	int slot = pid > 0 ? softrdma_anchor_slot_locked(segment, pid) : -1;
	uint32_t word;

	if (slot < 0)
		return false;
	/* The entry stays pid's while the lock is held; its anchor's word may change meanwhile. */
	word = softrdma_shared_mutex_word(softrdma_anchor_of(segment, slot));
	return (word & FUTEX_TID_MASK) && !(word & FUTEX_OWNER_DIED);
}
