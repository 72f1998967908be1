/*
 * softrdma_device.c: the devices a process sees (those of its emulated
 * host), their list, contexts, and what query_device, query_port, query_gid
 * and query_gid_type report; and protection domains.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_VENDOR_ID 0x0b017    /* made up: no registered vendor */
#define SOFTRDMA_MAX_PD 65536

/* Called with the process lock held, once attached: this host's devices. */
int softrdma_devices_create(void)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_segment *segment = process->segment;
	int count = 0;

	process->devices = calloc(SOFTRDMA_MAX_DEVICES, sizeof(*process->devices));
	if (!process->devices)
		return -ENOMEM;
	for (int id = 0; id < segment->device_count; id++) {
		const struct softrdma_shared_device *shared = &segment->devices[id];
		struct softrdma_device *device = &process->devices[count];

		if (shared->host != process->host)
			continue;
		device->device_id = id;
		device->ibv.node_type = IBV_NODE_CA;
		device->ibv.transport_type =
			(enum ibv_transport_type) softrdma_profile_transport(segment->config.profile);
		snprintf(device->ibv.name, sizeof(device->ibv.name), "%s%d",
			 softrdma_profile_device_prefix(segment->config.profile), shared->index);
		snprintf(device->ibv.dev_name, sizeof(device->ibv.dev_name), "uverbs%d",
			 shared->index);
		snprintf(device->ibv.dev_path, sizeof(device->ibv.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", shared->index);
		snprintf(device->ibv.ibdev_path, sizeof(device->ibv.ibdev_path),
			 "/sys/class/infiniband/%s", device->ibv.name);
		count++;
	}
	process->device_count = count;
	return 0;
}

void softrdma_devices_destroy(void)
{
	free(softrdma_process.devices);
	softrdma_process.devices = NULL;
	softrdma_process.device_count = 0;
}

struct ibv_device **softrdma_get_device_list(int *num_devices)
{
	struct softrdma_process *process = &softrdma_process;
	struct ibv_device **list;
	int count;

	pthread_mutex_lock(&process->lock);
	count = process->attach_count ? process->device_count : 0;
	list = calloc((size_t) count + 1, sizeof(*list));
	for (int index = 0; list && index < count; index++)
		list[index] = &process->devices[index].ibv;
	pthread_mutex_unlock(&process->lock);
	if (!list)
		return softrdma_fail_null(ENOMEM);
	if (num_devices)
		*num_devices = count;
	return list;
}

void softrdma_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *softrdma_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

static struct softrdma_device *softrdma_device_of(struct ibv_device *device)
{
	struct softrdma_process *process = &softrdma_process;

	for (int index = 0; index < process->device_count; index++) {
		if (&process->devices[index].ibv == device)
			return &process->devices[index];
	}
	return NULL;
}

struct ibv_context *softrdma_open_device(struct ibv_device *device)
{
	struct softrdma_context *context;
	struct softrdma_device *own;

	pthread_mutex_lock(&softrdma_process.lock);
	own = softrdma_device_of(device);
	pthread_mutex_unlock(&softrdma_process.lock);
	if (!own)
		return softrdma_fail_null(ENODEV);
	context = calloc(1, sizeof(*context));
	if (!context)
		return softrdma_fail_null(ENOMEM);
	context->device = own;
	context->port_changes_reported = __atomic_load_n(
		&softrdma_process.segment->devices[own->device_id].port_changes, __ATOMIC_ACQUIRE);
	context->port_reported_active = softrdma_port_active(softrdma_process.segment,
							     own->device_id);
	pthread_mutex_init(&context->event_lock, NULL);
	context->ibv.device = &own->ibv;
	context->ibv.cmd_fd = -1;
	context->ibv.async_fd = -1;
	context->ibv.num_comp_vectors = 1;
	/* So that verbs.h's inline ibv_poll_cq and ibv_post_* work on it too. */
	context->ibv.ops.poll_cq = softrdma_poll_cq;
	context->ibv.ops.post_send = softrdma_post_send;
	context->ibv.ops.post_recv = softrdma_post_recv;
	pthread_mutex_init(&context->ibv.mutex, NULL);
	return &context->ibv;
}

int softrdma_close_device(struct ibv_context *ibv_context)
{
	struct softrdma_context *context = (struct softrdma_context *) ibv_context;

	if (!context)
		return softrdma_fail(EINVAL);
	if (__atomic_load_n(&context->children, __ATOMIC_ACQUIRE))
		return softrdma_fail(EBUSY);
	pthread_mutex_destroy(&context->ibv.mutex);
	pthread_mutex_destroy(&context->event_lock);
	free(context);
	return 0;
}

static int softrdma_context_device_id(struct ibv_context *context)
{
	return ((struct softrdma_context *) context)->device->device_id;
}

/*
 * A port's changes since the last event, one event each, alternating from the
 * state the last one said: a port that went down and up between two calls
 * still gives IBV_EVENT_PORT_ERR, then IBV_EVENT_PORT_ACTIVE. Never waits:
 * EAGAIN when there is none (the system library's, on a non-blocking fd).
 */
int softrdma_get_async_event(struct ibv_context *ibv_context, struct ibv_async_event *event)
{
	struct softrdma_context *context = (struct softrdma_context *) ibv_context;
	uint32_t changes;

	if (!context || !event)
		return softrdma_fail(EINVAL);
	softrdma_fault_plan_tick();
	changes = __atomic_load_n(
		&softrdma_process.segment->devices[context->device->device_id].port_changes,
		__ATOMIC_ACQUIRE);
	pthread_mutex_lock(&context->event_lock);
	if (changes == context->port_changes_reported) {
		pthread_mutex_unlock(&context->event_lock);
		return softrdma_fail(EAGAIN);
	}
	context->port_changes_reported++;
	context->port_reported_active = !context->port_reported_active;
	memset(event, 0, sizeof(*event));
	event->event_type = context->port_reported_active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
	event->element.port_num = SOFTRDMA_PORT;
	pthread_mutex_unlock(&context->event_lock);
	return 0;
}

void softrdma_ack_async_event(struct ibv_async_event *event)
{
	(void) event;
}

int softrdma_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	const struct softrdma_segment *segment = softrdma_process.segment;
	const struct softrdma_profile_limits *limits = &segment->limits;
	const struct softrdma_shared_device *device =
		&segment->devices[softrdma_context_device_id(context)];
	uint64_t guid = 0x02b017fffe000000ull | (uint64_t) device->host << 8 |
			(uint64_t) device->index;

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "softrdma %s %d",
		 softrdma_profile_name(segment->config.profile), SOFTRDMA_LAYOUT_VERSION);
	attr->node_guid = htobe64(guid);
	attr->sys_image_guid = htobe64(guid & ~0xffull);
	attr->max_mr_size = SOFTRDMA_MAX_MR_SIZE;
	attr->page_size_cap = 4096;
	attr->vendor_id = SOFTRDMA_VENDOR_ID;
	attr->vendor_part_id = (uint32_t) segment->config.profile;
	attr->max_qp = limits->max_qp;
	attr->max_qp_wr = limits->reported_max_wr;
	attr->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_RC_RNR_NAK_GEN;
	attr->max_sge = limits->max_sge;
	attr->max_sge_rd = limits->max_sge;
	attr->max_cq = SOFTRDMA_CQ_SLOTS;
	attr->max_cqe = limits->max_cqe;
	attr->max_mr = limits->max_mr;
	attr->max_pd = SOFTRDMA_MAX_PD;
	attr->max_qp_rd_atom = SOFTRDMA_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = SOFTRDMA_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = SOFTRDMA_MAX_RD_ATOMIC * limits->max_qp;
	attr->atomic_cap = IBV_ATOMIC_NONE;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	return 0;
}

int softrdma_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr)
{
	const struct softrdma_segment *segment = softrdma_process.segment;
	bool active = softrdma_port_active(segment, softrdma_context_device_id(context));

	if (port_num != SOFTRDMA_PORT)
		return softrdma_fail(EINVAL);
	memset(attr, 0, sizeof(*attr));
	attr->state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->max_mtu = softrdma_mtu_enum(segment->limits.max_mtu_bytes);
	attr->active_mtu = softrdma_mtu_enum(segment->limits.path_mtu_bytes);
	attr->gid_tbl_len = segment->limits.gid_table_length;
	attr->port_cap_flags = IBV_PORT_CM_SUP;
	attr->max_msg_sz = (uint32_t) SOFTRDMA_MAX_MESSAGE;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	attr->active_width = 2;  /* 4X */
	attr->active_speed = 32; /* EDR */
	attr->phys_state = active ? 5 : 3; /* LinkUp : Disabled */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int softrdma_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		       union ibv_gid *gid)
{
	const struct softrdma_segment *segment = softrdma_process.segment;

	if (port_num != SOFTRDMA_PORT || index < 0 || index >= segment->limits.gid_table_length)
		return softrdma_fail(EINVAL);
	softrdma_device_gid(segment, softrdma_context_device_id(context), index, gid);
	return 0;
}

int softrdma_query_gid_type(struct ibv_context *context, uint8_t port_num, int index,
			    enum ibv_gid_type *type)
{
	int ret;

	if (port_num != SOFTRDMA_PORT)
		return softrdma_fail(EINVAL);
	ret = softrdma_device_gid_type(softrdma_process.segment, index, type);
	return ret ? softrdma_fail(ret) : 0;
}

struct ibv_pd *softrdma_alloc_pd(struct ibv_context *ibv_context)
{
	struct softrdma_context *context = (struct softrdma_context *) ibv_context;
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_pd *pd;

	if (!context)
		return softrdma_fail_null(EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return softrdma_fail_null(ENOMEM);
	softrdma_lock(segment);
	pd->pd_id = ++segment->next_pd_id;
	softrdma_unlock(segment);
	pd->context = context;
	pd->ibv.context = ibv_context;
	pd->ibv.handle = pd->pd_id;
	__atomic_add_fetch(&context->children, 1, __ATOMIC_ACQ_REL);
	return &pd->ibv;
}

int softrdma_dealloc_pd(struct ibv_pd *ibv_pd)
{
	struct softrdma_pd *pd = (struct softrdma_pd *) ibv_pd;

	if (!pd)
		return softrdma_fail(EINVAL);
	if (__atomic_load_n(&pd->children, __ATOMIC_ACQUIRE))
		return softrdma_fail(EBUSY);
	__atomic_sub_fetch(&pd->context->children, 1, __ATOMIC_ACQ_REL);
	free(pd);
	return 0;
}
