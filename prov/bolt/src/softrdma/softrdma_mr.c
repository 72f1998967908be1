/*
 * softrdma_mr.c: memory regions. Each lives in the shared MR table so that a
 * remote process can check an rkey; its key (lkey == rkey) is the slot with a
 * generation. Registration enforces the device's MR limit and verbs' rules
 * for access flags; the key checks of the data path are here too.
 */
#include <stdlib.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_MR_ACCESS_SUPPORTED \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)

/*
 * Verbs' rule (IB spec, kernel ib_check_mr_access): remote write and remote
 * atomic need local write. Remote read alone does not.
 */
static int softrdma_mr_access_check(int access)
{
	if (access & ~SOFTRDMA_MR_ACCESS_SUPPORTED)
		return EINVAL;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/* A full device fails gracefully with ENOMEM, as Thunderbolt's does at its 101st MR. */
static int softrdma_mr_insert(struct softrdma_mr *mr, int device_id, void *addr, size_t length,
			      int access)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_shared_device *device = &segment->devices[device_id];
	struct softrdma_shared_mr *shared;
	int index;

	softrdma_lock(segment);
	if (softrdma_device_full_locked(segment, &device->mr_count, segment->limits.max_mr)) {
		softrdma_unlock(segment);
		return ENOMEM;
	}
	index = softrdma_table_alloc(segment, &segment->mrs, softrdma_process.pid);
	if (index < 0) {
		softrdma_unlock(segment);
		return ENOMEM;
	}
	shared = softrdma_table_slot(segment, &segment->mrs, (uint32_t) index);
	shared->key = softrdma_table_handle(&segment->mrs, &shared->slot, (uint32_t) index);
	shared->device = device_id;
	shared->pd_id = mr->pd->pd_id;
	shared->access = access;
	shared->addr = (uintptr_t) addr;
	shared->length = length;
	device->mr_count++;
	softrdma_unlock(segment);
	mr->index = (uint32_t) index;
	mr->ibv.lkey = shared->key;
	mr->ibv.rkey = shared->key;
	return 0;
}

struct ibv_mr *softrdma_reg_mr(struct ibv_pd *ibv_pd, void *addr, size_t length, int access)
{
	struct softrdma_pd *pd = (struct softrdma_pd *) ibv_pd;
	struct softrdma_mr *mr;
	int ret;

	/* As rxe: an empty region registers; NULL is memory no device can pin. */
	if (!pd || length > SOFTRDMA_MAX_MR_SIZE || (uintptr_t) addr + length < (uintptr_t) addr)
		return softrdma_fail_null(EINVAL);
	if (!addr)
		return softrdma_fail_null(EFAULT);
	ret = softrdma_mr_access_check(access);
	if (ret)
		return softrdma_fail_null(ret);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return softrdma_fail_null(ENOMEM);
	mr->pd = pd;
	ret = softrdma_mr_insert(mr, pd->context->device->device_id, addr, length, access);
	if (ret) {
		free(mr);
		return softrdma_fail_null(ret);
	}
	mr->ibv.context = ibv_pd->context;
	mr->ibv.pd = ibv_pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->index;
	__atomic_add_fetch(&pd->children, 1, __ATOMIC_ACQ_REL);
	return &mr->ibv;
}

void softrdma_mr_release_locked(struct softrdma_segment *segment, uint32_t index)
{
	struct softrdma_shared_mr *shared = softrdma_table_slot(segment, &segment->mrs, index);

	segment->devices[shared->device].mr_count--;
	softrdma_table_free(segment, &segment->mrs, index);
}

int softrdma_dereg_mr(struct ibv_mr *ibv_mr)
{
	struct softrdma_mr *mr = (struct softrdma_mr *) ibv_mr;
	struct softrdma_segment *segment = softrdma_process.segment;

	if (!mr)
		return softrdma_fail(EINVAL);
	softrdma_lock(segment);
	if (softrdma_table_lookup(segment, &segment->mrs, mr->ibv.lkey))
		softrdma_mr_release_locked(segment, mr->index);
	softrdma_unlock(segment);
	__atomic_sub_fetch(&mr->pd->children, 1, __ATOMIC_ACQ_REL);
	free(mr);
	return 0;
}

struct softrdma_shared_mr *softrdma_mr_check_locked(struct softrdma_segment *segment,
						    uint32_t key, uint32_t pd_id, int access,
						    uint64_t addr, uint64_t length)
{
	struct softrdma_shared_mr *mr = softrdma_table_lookup(segment, &segment->mrs, key);

	if (!mr || mr->pd_id != pd_id || (mr->access & access) != access)
		return NULL;
	if (addr < mr->addr || length > mr->length || addr - mr->addr > mr->length - length)
		return NULL;
	return mr;
}
