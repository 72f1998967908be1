/*
 * softrdma_fault.c: injected faults, kept in the shared segment so every
 * process sees them: cut cables, ports down, cables that lose RC
 * acknowledgements, and the settings of UC packet drops (whose generator is
 * softrdma_drop.c).
 */
#include "softrdma/softrdma_internal.h"

static int softrdma_fault_device(int host, int device_index, int *device_id)
{
	struct softrdma_segment *segment = softrdma_process.segment;

	if (!segment)
		return -ENODEV;
	*device_id = softrdma_device_id(segment, host, device_index);
	return *device_id < 0 ? -EINVAL : 0;
}

/* Sets one device's fault; a port that went down or up counts a change (async events). */
static void softrdma_fault_set_one_locked(struct softrdma_segment *segment, int device_id,
					  enum softrdma_fault_kind kind, bool fault)
{
	struct softrdma_shared_device *device = &segment->devices[device_id];
	bool was_active = softrdma_port_active(segment, device_id);

	if (kind == SOFTRDMA_FAULT_CABLE)
		device->link_cut = fault;
	else if (kind == SOFTRDMA_FAULT_ACKS)
		device->acks_lost = fault;
	else
		device->port_down = fault;
	if (was_active != softrdma_port_active(segment, device_id))
		__atomic_add_fetch(&device->port_changes, 1, __ATOMIC_RELEASE);
}

void softrdma_fault_set_locked(struct softrdma_segment *segment, int device_id,
			       enum softrdma_fault_kind kind, bool fault)
{
	int peer = segment->devices[device_id].peer;

	softrdma_fault_set_one_locked(segment, device_id, kind, fault);
	if (kind != SOFTRDMA_FAULT_PORT && peer >= 0)
		softrdma_fault_set_one_locked(segment, peer, kind, fault);
}

static int softrdma_fault_set(int host, int device_index, enum softrdma_fault_kind kind, bool fault)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	int device_id, ret;

	ret = softrdma_fault_device(host, device_index, &device_id);
	if (ret)
		return ret;
	softrdma_lock(segment);
	softrdma_fault_set_locked(segment, device_id, kind, fault);
	softrdma_unlock(segment);
	return 0;
}

/* Both ends of the cable lose their link, and their ports go down. */
int softrdma_fault_cut_link(int host, int device_index, bool cut)
{
	return softrdma_fault_set(host, device_index, SOFTRDMA_FAULT_CABLE, cut);
}

int softrdma_fault_port_down(int host, int device_index, bool down)
{
	return softrdma_fault_set(host, device_index, SOFTRDMA_FAULT_PORT, down);
}

int softrdma_fault_drop(int every, int ppm, unsigned int seed)
{
	struct softrdma_segment *segment = softrdma_process.segment;

	if (!segment)
		return -ENODEV;
	if (every < 0 || ppm < 0 || ppm > 1000000)
		return -EINVAL;
	softrdma_lock(segment);
	softrdma_drop_reset_locked(segment, every, ppm, seed);
	softrdma_unlock(segment);
	return 0;
}
