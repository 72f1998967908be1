/*
 * softrdma_fault.c: injected faults, kept in the shared segment so every
 * process sees them: cut cables, ports down, and the settings of UC packet
 * drops (whose generator is softrdma_drop.c).
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

/* Both ends of the cable lose their link, and their ports go down. */
int softrdma_fault_cut_link(int host, int device_index, bool cut)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	int device_id, peer, ret;

	ret = softrdma_fault_device(host, device_index, &device_id);
	if (ret)
		return ret;
	softrdma_lock(segment);
	segment->devices[device_id].link_cut = cut;
	peer = segment->devices[device_id].peer;
	if (peer >= 0)
		segment->devices[peer].link_cut = cut;
	softrdma_unlock(segment);
	return 0;
}

int softrdma_fault_port_down(int host, int device_index, bool down)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	int device_id, ret;

	ret = softrdma_fault_device(host, device_index, &device_id);
	if (ret)
		return ret;
	softrdma_lock(segment);
	segment->devices[device_id].port_down = down;
	softrdma_unlock(segment);
	return 0;
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
