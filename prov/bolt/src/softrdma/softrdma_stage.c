/*
 * softrdma_stage.c: the sender's side of a staged copy (copy mode shm). It
 * opens a channel toward the target process; for a SEND or RDMA write it
 * fills the channel's ring from local memory while the target drains it into
 * its own, for an RDMA read it drains into local memory what the target
 * fills. It returns once every byte went through, so the completions that
 * follow mean what they mean in cma mode. It waits for the target as a link
 * with flow control waits for a slow receiver, and gives up on a target that
 * moves nothing for the stage's stall time, or that died.
 */
#include "softrdma/softrdma_internal.h"

/* How often the life of a target that moves nothing is checked (/proc). */
#define SOFTRDMA_STAGE_LIVENESS_NS 10000000ull

struct softrdma_stage_run {
	const struct softrdma_stage *stage;
	struct softrdma_shared_channel *channel;
	struct softrdma_bell *target_bell;
	uint64_t position;      /* our counter: produced (to the target) or consumed */
	uint64_t target_seen;   /* the target's counter when it last moved */
	uint64_t progress_ns;   /* when that was */
	uint64_t checked_ns;    /* when the target's life was last checked */
};

static void softrdma_stage_note(struct softrdma_stage_run *run, uint64_t target_counter)
{
	if (target_counter == run->target_seen)
		return;
	run->target_seen = target_counter;
	run->progress_ns = softrdma_now_ns();
}

/* Waits for the target to move: 0, or why waiting is over. */
static int softrdma_stage_wait(struct softrdma_stage_run *run, uint32_t seen)
{
	uint64_t stall_ns = run->stage->stall_ns, now = softrdma_now_ns(), waited, slice;
	int error = __atomic_load_n(&run->channel->error, __ATOMIC_ACQUIRE);

	if (error)
		return error;
	waited = now - run->progress_ns;
	if (waited >= stall_ns)
		return -ETIMEDOUT;
	slice = stall_ns - waited < SOFTRDMA_STAGE_LIVENESS_NS ? stall_ns - waited :
								 SOFTRDMA_STAGE_LIVENESS_NS;
	softrdma_bell_wait(&run->channel->bell, seen, slice);
	now = softrdma_now_ns();
	if (now - run->checked_ns < SOFTRDMA_STAGE_LIVENESS_NS)
		return 0;
	run->checked_ns = now;
	return softrdma_process_alive(run->stage->target_pid) ? 0 : -ESRCH;
}

/* SEND and RDMA write: fill the ring as the target drains it. */
static int softrdma_stage_push(struct softrdma_stage_run *run)
{
	struct softrdma_shared_channel *channel = run->channel;
	const struct softrdma_stage *stage = run->stage;

	for (;;) {
		uint32_t seen = softrdma_bell_read(&channel->bell);
		uint64_t consumed = __atomic_load_n(&channel->consumed, __ATOMIC_ACQUIRE);
		uint64_t end = stage->length - consumed > SOFTRDMA_CHANNEL_RING ?
			       consumed + SOFTRDMA_CHANNEL_RING : stage->length;
		size_t bytes;
		int ret;

		softrdma_stage_note(run, consumed);
		if (consumed == stage->length)
			return 0;
		if (run->position == end) {
			ret = softrdma_stage_wait(run, seen);
			if (ret)
				return ret;
			continue;
		}
		bytes = softrdma_channel_step(run->position, end);
		softrdma_channel_fill(channel, run->position, stage->local, stage->local_count,
				      bytes);
		run->position += bytes;
		__atomic_store_n(&channel->produced, run->position, __ATOMIC_RELEASE);
		softrdma_bell_ring(run->target_bell);
	}
}

/* RDMA read: drain what the target supplies. */
static int softrdma_stage_pull(struct softrdma_stage_run *run)
{
	struct softrdma_shared_channel *channel = run->channel;
	const struct softrdma_stage *stage = run->stage;

	softrdma_bell_ring(run->target_bell); /* nothing is staged: say so */
	while (run->position < stage->length) {
		uint32_t seen = softrdma_bell_read(&channel->bell);
		uint64_t produced = __atomic_load_n(&channel->produced, __ATOMIC_ACQUIRE);
		size_t bytes;
		int ret;

		softrdma_stage_note(run, produced);
		if (run->position == produced) {
			ret = softrdma_stage_wait(run, seen);
			if (ret)
				return ret;
			continue;
		}
		bytes = softrdma_channel_step(run->position, produced);
		softrdma_channel_drain(channel, run->position, stage->local, stage->local_count,
				       bytes);
		run->position += bytes;
		__atomic_store_n(&channel->consumed, run->position, __ATOMIC_RELEASE);
		softrdma_bell_ring(run->target_bell); /* room for more */
	}
	return 0;
}

int softrdma_stage_copy(const struct softrdma_stage *stage)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_stage_run run = { .stage = stage };
	int index, ret;

	softrdma_lock(segment);
	index = softrdma_channel_open_locked(segment, stage);
	if (index >= 0) {
		run.channel = softrdma_channel_at(segment, (uint32_t) index);
		run.target_bell = &segment->bells[run.channel->target_slot];
	}
	softrdma_unlock(segment);
	if (index < 0)
		return index;
	run.progress_ns = softrdma_now_ns();
	run.checked_ns = run.progress_ns;
	ret = stage->to_target ? softrdma_stage_push(&run) : softrdma_stage_pull(&run);
	softrdma_lock(segment);
	softrdma_channel_release_locked(segment, (uint32_t) index);
	softrdma_unlock(segment);
	return ret;
}
