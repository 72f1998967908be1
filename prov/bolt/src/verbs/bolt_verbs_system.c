/*
 * bolt_verbs_system.c: fills the verbs table from the system verbs library,
 * opened with dlopen so that libbolt-fi.so has no link-time dependency on it.
 * Calls that verbs.h implements inline through the context's ops table
 * (post_send, post_recv, poll_cq) need no symbol and are wrapped here.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "verbs/bolt_verbs.h"

#ifdef __APPLE__
#define BOLT_SYSTEM_VERBS_LIBRARY "librdma.dylib"
#else
#define BOLT_SYSTEM_VERBS_LIBRARY "libibverbs.so.1"
#endif

/* verbs.h's query_port takes the compat struct; the symbol fills the full one. */
typedef int (*bolt_query_port_symbol)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
typedef int (*bolt_query_gid_ex_symbol)(struct ibv_context *, uint32_t, uint32_t,
					struct ibv_gid_entry *, uint32_t, size_t);

typedef int (*bolt_get_async_event_symbol)(struct ibv_context *, struct ibv_async_event *);
typedef void (*bolt_ack_async_event_symbol)(struct ibv_async_event *);

static bolt_query_port_symbol bolt_system_query_port_symbol;
static bolt_query_gid_ex_symbol bolt_system_query_gid_ex_symbol;
static bolt_get_async_event_symbol bolt_system_get_async_event_symbol;
static bolt_ack_async_event_symbol bolt_system_ack_async_event_symbol;

static int bolt_system_query_port(struct ibv_context *context, uint8_t port_num,
				  struct ibv_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return bolt_system_query_port_symbol(context, port_num, attr);
}

int bolt_verbs_system_sysfs_gid_type(const char *ibdev_path, uint8_t port_num, int index,
				     enum ibv_gid_type *type)
{
	char path[512], text[32] = "";
	FILE *file;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/types/%d", ibdev_path, port_num,
		     index) >= (int) sizeof(path))
		return ENAMETOOLONG;
	file = fopen(path, "r");
	if (!file)
		return errno;
	/* The kernel fails the read of an empty entry's type. */
	if (!fgets(text, sizeof(text), file))
		ret = ferror(file) && errno ? errno : ENODATA;
	fclose(file);
	if (ret)
		return ret;
	text[strcspn(text, "\n")] = '\0';
	if (!strcmp(text, "RoCE v2"))
		*type = IBV_GID_TYPE_ROCE_V2;
	else if (!strcmp(text, "IB/RoCE v1"))
		*type = IBV_GID_TYPE_ROCE_V1;
	else
		return EINVAL;
	return 0;
}

static int bolt_system_query_gid_type(struct ibv_context *context, uint8_t port_num,
				      int index, enum ibv_gid_type *type)
{
	struct ibv_gid_entry entry;
	int ret;

	/* rdma-core before v32: the kernel's sysfs says what the library cannot. */
	if (!bolt_system_query_gid_ex_symbol)
		return bolt_verbs_system_sysfs_gid_type(context->device->ibdev_path, port_num,
							index, type);
	ret = bolt_system_query_gid_ex_symbol(context, port_num, (uint32_t) index,
					      &entry, 0, sizeof(entry));
	if (ret)
		return ret;
	*type = (enum ibv_gid_type) entry.gid_type;
	return 0;
}

static int bolt_system_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return cq->context->ops.poll_cq(cq, num_entries, wc);
}

static int bolt_system_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr)
{
	return qp->context->ops.post_send(qp, wr, bad_wr);
}

static int bolt_system_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr)
{
	return qp->context->ops.post_recv(qp, wr, bad_wr);
}

/*
 * ibv_get_async_event blocks on the context's event file unless it is
 * non-blocking: made so on the first call, so that progress never waits.
 */
static int bolt_system_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	int flags;

	if (!bolt_system_get_async_event_symbol || context->async_fd < 0)
		return ENOSYS;
	flags = fcntl(context->async_fd, F_GETFL);
	if (flags < 0)
		return errno;
	if (!(flags & O_NONBLOCK) && fcntl(context->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return errno;
	if (bolt_system_get_async_event_symbol(context, event))
		return errno ? errno : EIO;
	return 0;
}

static void bolt_system_ack_async_event(struct ibv_async_event *event)
{
	if (bolt_system_ack_async_event_symbol)
		bolt_system_ack_async_event_symbol(event);
}

/* Looks up one required symbol; names it when it is missing. */
static int bolt_system_symbol(struct bolt_verbs *verbs, const char *symbol, void *slot)
{
	void *address = dlsym(verbs->library_handle, symbol);

	if (!address) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "%s has no symbol %s\n",
			verbs->name, symbol);
		return -FI_ENOSYS;
	}
	memcpy(slot, &address, sizeof(address));
	return 0;
}

int bolt_verbs_system_open(const char *library_path, struct bolt_verbs *verbs)
{
	const char *path = library_path && library_path[0] ? library_path :
			   BOLT_SYSTEM_VERBS_LIBRARY;
	const struct {
		const char *symbol;
		void *slot;
	} required[] = {
		{ "ibv_get_device_list", &verbs->get_device_list },
		{ "ibv_free_device_list", &verbs->free_device_list },
		{ "ibv_get_device_name", &verbs->get_device_name },
		{ "ibv_open_device", &verbs->open_device },
		{ "ibv_close_device", &verbs->close_device },
		{ "ibv_query_device", &verbs->query_device },
		{ "ibv_query_port", &bolt_system_query_port_symbol },
		{ "ibv_query_gid", &verbs->query_gid },
		{ "ibv_alloc_pd", &verbs->alloc_pd },
		{ "ibv_dealloc_pd", &verbs->dealloc_pd },
		{ "ibv_reg_mr", &verbs->reg_mr },
		{ "ibv_dereg_mr", &verbs->dereg_mr },
		{ "ibv_create_cq", &verbs->create_cq },
		{ "ibv_destroy_cq", &verbs->destroy_cq },
		{ "ibv_create_qp", &verbs->create_qp },
		{ "ibv_destroy_qp", &verbs->destroy_qp },
		{ "ibv_modify_qp", &verbs->modify_qp },
		{ "ibv_query_qp", &verbs->query_qp },
		{ "ibv_wc_status_str", &verbs->wc_status_str },
	};
	int ret;

	snprintf(verbs->name, sizeof(verbs->name), "%s", path);
	verbs->library_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!verbs->library_handle) {
		FI_INFO(&bolt_prov, FI_LOG_CORE, "no verbs library: %s\n", dlerror());
		return -FI_ENODATA;
	}
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(required); i++) {
		ret = bolt_system_symbol(verbs, required[i].symbol, required[i].slot);
		if (ret) {
			dlclose(verbs->library_handle);
			verbs->library_handle = NULL;
			return ret;
		}
	}
	/* Optional: older libraries and Apple's have none; sysfs stands in on Linux. */
	*(void **) &bolt_system_query_gid_ex_symbol =
		dlsym(verbs->library_handle, "_ibv_query_gid_ex");
	*(void **) &bolt_system_get_async_event_symbol =
		dlsym(verbs->library_handle, "ibv_get_async_event");
	*(void **) &bolt_system_ack_async_event_symbol =
		dlsym(verbs->library_handle, "ibv_ack_async_event");
	verbs->get_async_event = bolt_system_get_async_event;
	verbs->ack_async_event = bolt_system_ack_async_event;
	verbs->query_port = bolt_system_query_port;
	verbs->query_gid_type = bolt_system_query_gid_type;
	verbs->poll_cq = bolt_system_poll_cq;
	verbs->post_send = bolt_system_post_send;
	verbs->post_recv = bolt_system_post_recv;
	FI_INFO(&bolt_prov, FI_LOG_CORE, "verbs from %s\n", path);
	return 0;
}

void bolt_verbs_system_close(struct bolt_verbs *verbs)
{
	if (verbs->library_handle)
		dlclose(verbs->library_handle);
	verbs->library_handle = NULL;
}
