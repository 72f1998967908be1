/*
 * softrdma_channel.c: the staging channels of copy mode shm. A table of them
 * in the segment: a sender opens one for one transfer and releases it; a
 * thread of the target holds it while it works on it; the channels of a
 * process that died are let go of. And the copies between a channel's ring
 * and memory, which both sides use. Free channels are reused last-in first
 * out, so a job makes resident only its peak number of staged transfers in
 * flight times the ring, however large the table.
 */
#include <string.h>

#include "softrdma/softrdma_internal.h"

struct softrdma_shared_channel *softrdma_channel_at(struct softrdma_segment *segment,
						    uint32_t index)
{
	return softrdma_table_slot(segment, &segment->channels, index);
}

static void softrdma_channel_describe(struct softrdma_shared_channel *channel,
				      const struct softrdma_stage *stage, int target_slot)
{
	channel->target = stage->target_pid;
	channel->target_slot = target_slot;
	channel->to_target = stage->to_target;
	channel->pd_id = stage->pd_id;
	channel->access = stage->access;
	channel->length = stage->length;
	channel->segment_count = (uint32_t) stage->remote_count;
	for (int index = 0; index < stage->remote_count; index++) {
		channel->segments[index].addr = (uintptr_t) stage->remote[index].iov_base;
		channel->segments[index].length = stage->remote[index].iov_len;
		channel->segments[index].key = stage->remote_keys[index];
	}
}

int softrdma_channel_open_locked(struct softrdma_segment *segment,
				 const struct softrdma_stage *stage)
{
	int target_slot = softrdma_process_slot_locked(segment, stage->target_pid);
	int index;

	if (target_slot < 0)
		return -ESRCH;
	index = softrdma_table_alloc(segment, &segment->channels, softrdma_process.pid);
	if (index < 0) {
		softrdma_reap_dead_locked(segment);
		index = softrdma_table_alloc(segment, &segment->channels, softrdma_process.pid);
	}
	if (index < 0)
		return -EBUSY;
	softrdma_channel_describe(softrdma_channel_at(segment, (uint32_t) index), stage,
				  target_slot);
	return index;
}

static void softrdma_channel_free_if_unused_locked(struct softrdma_segment *segment,
						   uint32_t index)
{
	struct softrdma_shared_channel *channel = softrdma_channel_at(segment, index);

	if (channel->released && !channel->held)
		softrdma_table_free(segment, &segment->channels, index);
}

void softrdma_channel_release_locked(struct softrdma_segment *segment, uint32_t index)
{
	softrdma_channel_at(segment, index)->released = 1;
	softrdma_channel_free_if_unused_locked(segment, index);
}

/* Bytes staged and not placed yet, or room to supply the bytes of a read. */
static bool softrdma_channel_has_work(struct softrdma_shared_channel *channel)
{
	uint64_t produced = __atomic_load_n(&channel->produced, __ATOMIC_ACQUIRE);
	uint64_t consumed = __atomic_load_n(&channel->consumed, __ATOMIC_ACQUIRE);

	if (channel->to_target)
		return produced > consumed;
	return produced < channel->length && produced - consumed < SOFTRDMA_CHANNEL_RING;
}

/*
 * The sender checked the keys when it opened the channel; the target may
 * have deregistered since. Checking again at every hold keeps the target
 * from writing into memory it gave back (cma's copy would fail with EFAULT).
 */
static int softrdma_channel_check_memory_locked(struct softrdma_segment *segment,
						const struct softrdma_shared_channel *channel)
{
	for (uint32_t index = 0; index < channel->segment_count; index++) {
		const struct softrdma_channel_segment *piece = &channel->segments[index];

		if (!softrdma_mr_check_locked(segment, piece->key, channel->pd_id, channel->access,
					      piece->addr, piece->length))
			return -EFAULT;
	}
	return 0;
}

static void softrdma_channel_fail_locked(struct softrdma_shared_channel *channel, int error)
{
	__atomic_store_n(&channel->error, error, __ATOMIC_RELEASE);
	softrdma_bell_ring(&channel->bell);
}

bool softrdma_channel_hold_locked(struct softrdma_segment *segment, uint32_t index, pid_t pid)
{
	struct softrdma_shared_channel *channel = softrdma_channel_at(segment, index);
	int error;

	if (!channel->slot.in_use || channel->target != pid || channel->held ||
	    channel->released || channel->error || !softrdma_channel_has_work(channel))
		return false;
	error = softrdma_channel_check_memory_locked(segment, channel);
	if (error) {
		softrdma_channel_fail_locked(channel, error);
		return false;
	}
	channel->held = 1;
	return true;
}

void softrdma_channel_drop_locked(struct softrdma_segment *segment, uint32_t index)
{
	softrdma_channel_at(segment, index)->held = 0;
	softrdma_channel_free_if_unused_locked(segment, index);
}

/* pid died or detached: its senders' channels are let go, its targets' senders told. */
void softrdma_channel_release_owner_locked(struct softrdma_segment *segment, pid_t pid)
{
	for (uint32_t index = 0; index < segment->channels.high_water; index++) {
		struct softrdma_shared_channel *channel = softrdma_channel_at(segment, index);

		if (!channel->slot.in_use)
			continue;
		if (channel->target == pid) {
			channel->held = 0;
			softrdma_channel_fail_locked(channel, -ESRCH);
		}
		if (channel->slot.owner == pid)
			channel->released = 1;
		softrdma_channel_free_if_unused_locked(segment, index);
	}
}

size_t softrdma_channel_step(uint64_t position, uint64_t end)
{
	uint64_t to_ring_end = SOFTRDMA_CHANNEL_RING - position % SOFTRDMA_CHANNEL_RING;
	uint64_t bytes = end - position;

	if (bytes > to_ring_end)
		bytes = to_ring_end;
	return bytes < SOFTRDMA_CHANNEL_STEP ? (size_t) bytes : SOFTRDMA_CHANNEL_STEP;
}

/* Copies bytes between buffer and iov, starting `offset` bytes into iov. */
static void softrdma_iov_copy(const struct iovec *iov, int count, uint64_t offset,
			      uint8_t *buffer, size_t bytes, bool into_iov)
{
	for (int index = 0; index < count && bytes; index++) {
		size_t length = iov[index].iov_len, take;
		uint8_t *place;

		if (offset >= length) {
			offset -= length;
			continue;
		}
		take = length - offset < bytes ? (size_t) (length - offset) : bytes;
		place = (uint8_t *) iov[index].iov_base + offset;
		if (into_iov)
			memcpy(place, buffer, take);
		else
			memcpy(buffer, place, take);
		buffer += take;
		bytes -= take;
		offset = 0;
	}
}

/* iov is the whole transfer's: stream position `position` is also its offset in iov. */
void softrdma_channel_fill(struct softrdma_shared_channel *channel, uint64_t position,
			   const struct iovec *iov, int count, size_t bytes)
{
	softrdma_iov_copy(iov, count, position,
			  channel->ring + position % SOFTRDMA_CHANNEL_RING, bytes, false);
}

void softrdma_channel_drain(struct softrdma_shared_channel *channel, uint64_t position,
			    const struct iovec *iov, int count, size_t bytes)
{
	softrdma_iov_copy(iov, count, position,
			  channel->ring + position % SOFTRDMA_CHANNEL_RING, bytes, true);
}
