/*
 * softrdma_service.c: the target's side of staged copies (copy mode shm),
 * what a NIC's receive engine does without its host. A thread of each
 * attached process waits on the process's bell and, when it rings, places
 * the data staged toward the process in its memory (SEND, RDMA write) or
 * fills channels from it (RDMA read). The process's verbs calls (poll_cq,
 * post_send, post_recv) do the same work when they find the bell rung, which
 * spares the thread's wake-up when the application polls anyway.
 */
#include <sched.h>
#include <signal.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_SERVICE_BATCH 16                 /* channels one pass holds */
/* Most bytes a channel gets per pass: a sender that keeps refilling starves no other. */
#define SOFTRDMA_SERVICE_SHARE SOFTRDMA_CHANNEL_RING
#define SOFTRDMA_SERVICE_NAP_NS 100000000ull      /* the thread looks at least this often */

static struct softrdma_bell *softrdma_service_bell(void)
{
	return &softrdma_process.segment->bells[softrdma_process.slot];
}

static int softrdma_service_iov(const struct softrdma_shared_channel *channel, struct iovec *iov)
{
	/* The segment is shared memory: a count past what a WR may hold takes nothing. */
	if (channel->segment_count > SOFTRDMA_MAX_SGE)
		return 0;
	for (uint32_t index = 0; index < channel->segment_count; index++) {
		iov[index].iov_base = (void *) (uintptr_t) channel->segments[index].addr;
		iov[index].iov_len = channel->segments[index].length;
	}
	return (int) channel->segment_count;
}

/* SEND and RDMA write: the staged bytes into our memory. Whether it moved any. */
static bool softrdma_service_place(struct softrdma_shared_channel *channel)
{
	struct iovec iov[SOFTRDMA_MAX_SGE];
	int count = softrdma_service_iov(channel, iov);
	uint64_t first = __atomic_load_n(&channel->consumed, __ATOMIC_RELAXED); /* ours now */
	uint64_t consumed = first, last = first + SOFTRDMA_SERVICE_SHARE;

	for (;;) {
		uint64_t produced = __atomic_load_n(&channel->produced, __ATOMIC_ACQUIRE);
		size_t bytes;

		if (produced > last)
			produced = last;
		if (consumed == produced)
			return consumed != first;
		bytes = softrdma_channel_step(consumed, produced);
		softrdma_channel_drain(channel, consumed, iov, count, bytes);
		consumed += bytes;
		__atomic_store_n(&channel->consumed, consumed, __ATOMIC_RELEASE);
		softrdma_bell_ring(&channel->bell);
	}
}

/* RDMA read: our memory into the ring, as far as there is room. Whether it moved any. */
static bool softrdma_service_supply(struct softrdma_shared_channel *channel)
{
	struct iovec iov[SOFTRDMA_MAX_SGE];
	int count = softrdma_service_iov(channel, iov);
	uint64_t first = __atomic_load_n(&channel->produced, __ATOMIC_RELAXED); /* ours now */
	uint64_t produced = first, last = first + SOFTRDMA_SERVICE_SHARE;

	for (;;) {
		uint64_t consumed = __atomic_load_n(&channel->consumed, __ATOMIC_ACQUIRE);
		uint64_t end = channel->length - consumed > SOFTRDMA_CHANNEL_RING ?
			       consumed + SOFTRDMA_CHANNEL_RING : channel->length;
		size_t bytes;

		if (end > last)
			end = last;
		if (produced == end)
			return produced != first;
		bytes = softrdma_channel_step(produced, end);
		softrdma_channel_fill(channel, produced, iov, count, bytes);
		produced += bytes;
		__atomic_store_n(&channel->produced, produced, __ATOMIC_RELEASE);
		softrdma_bell_ring(&channel->bell);
	}
}

static int softrdma_service_hold_locked(struct softrdma_segment *segment, uint32_t *held)
{
	int count = 0;

	for (uint32_t index = 0;
	     index < segment->channels.high_water && count < SOFTRDMA_SERVICE_BATCH; index++) {
		if (softrdma_channel_hold_locked(segment, index, softrdma_process.pid))
			held[count++] = index;
	}
	return count;
}

/* One pass over the channels waiting for this process: whether it moved anything. */
static bool softrdma_service_pass(void)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	uint32_t held[SOFTRDMA_SERVICE_BATCH];
	bool moved = false;
	int count;

	softrdma_lock(segment);
	count = softrdma_service_hold_locked(segment, held);
	softrdma_unlock(segment);
	if (!count)
		return false;
	for (int index = 0; index < count; index++) {
		struct softrdma_shared_channel *channel = softrdma_channel_at(segment, held[index]);

		moved |= channel->to_target ? softrdma_service_place(channel) :
					      softrdma_service_supply(channel);
	}
	softrdma_lock(segment);
	for (int index = 0; index < count; index++)
		softrdma_channel_drop_locked(segment, held[index]);
	softrdma_unlock(segment);
	return moved;
}

void softrdma_service_poll(void)
{
	struct softrdma_process *process = &softrdma_process;
	uint32_t rings;

	if (process->copy_mode != SOFTRDMA_COPY_SHM || !process->segment)
		return;
	rings = softrdma_bell_read(softrdma_service_bell());
	if (rings == __atomic_load_n(&process->service_seen, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&process->service_seen, rings, __ATOMIC_RELAXED);
	while (softrdma_service_pass())
		;
}

/* The bell is read before looking for work, so a ring during the pass is not missed. */
static void *softrdma_service_main(void *argument)
{
	struct softrdma_bell *bell = softrdma_service_bell();

	__atomic_store_n(&softrdma_process.service_ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		uint32_t seen = softrdma_bell_read(bell);

		if (__atomic_load_n(&softrdma_process.service_stop, __ATOMIC_ACQUIRE))
			return NULL;
		if (!softrdma_service_pass())
			softrdma_bell_wait(bell, seen, SOFTRDMA_SERVICE_NAP_NS);
	}
}

/*
 * Until the thread has started, the C library or a sanitizer may hold locks
 * of its own for it, which a fork in that window would leave locked in the
 * child forever. Attach returns once it runs: its loop takes no such lock.
 */
static void softrdma_service_wait_ready(void)
{
	while (!__atomic_load_n(&softrdma_process.service_ready, __ATOMIC_ACQUIRE))
		sched_yield();
}

/* The thread takes no signals: the application's handlers run in its own threads. */
int softrdma_service_start(void)
{
	struct softrdma_process *process = &softrdma_process;
	sigset_t all, previous;
	int ret;

	__atomic_store_n(&process->service_stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&process->service_ready, 0, __ATOMIC_RELEASE);
	process->service_seen = softrdma_bell_read(softrdma_service_bell());
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &previous);
	ret = pthread_create(&process->service_thread, NULL, softrdma_service_main, NULL);
	pthread_sigmask(SIG_SETMASK, &previous, NULL);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: starting the service thread (copy mode shm) failed: %s\n",
			strerror(ret));
		return -ret;
	}
	softrdma_service_wait_ready();
	process->service_running = true;
	return 0;
}

void softrdma_service_stop(void)
{
	struct softrdma_process *process = &softrdma_process;

	if (!process->service_running)
		return;
	__atomic_store_n(&process->service_stop, 1, __ATOMIC_RELEASE);
	softrdma_bell_ring(softrdma_service_bell());
	pthread_join(process->service_thread, NULL);
	process->service_running = false;
}

void softrdma_service_forget(void)
{
	softrdma_process.service_running = false;
}
