/*
 * bolt_verbs.h: the verbs access layer. One table holds every verbs call the
 * provider makes; it is filled from the system verbs library opened at run
 * time or from the software device. Nothing above this layer knows which.
 * The calls keep verbs' own conventions: NULL or a positive errno on failure.
 */
#ifndef BOLT_VERBS_H
#define BOLT_VERBS_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "bolt.h"

struct bolt_verbs {
	char name[64];          /* where the table came from, for reports */
	bool software;          /* filled from the software device */
	void *library_handle;   /* dlopen handle of the system library */

	struct ibv_device **(*get_device_list)(int *num_devices);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *device);
	struct ibv_context *(*open_device)(struct ibv_device *device);
	int (*close_device)(struct ibv_context *context);
	int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *context, uint8_t port_num, int index,
			 union ibv_gid *gid);
	/* The GID's type (RoCE v1 or v2); ENOSYS where the library cannot tell. */
	int (*query_gid_type)(struct ibv_context *context, uint8_t port_num, int index,
			      enum ibv_gid_type *type);

	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
	int (*dereg_mr)(struct ibv_mr *mr);

	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);

	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

	const char *(*wc_status_str)(enum ibv_wc_status status);
	/*
	 * The device's next asynchronous event (a port down or up, ...), without
	 * waiting: 0, EAGAIN when there is none, ENOSYS where the library has none.
	 * Each event taken is acknowledged.
	 */
	int (*get_async_event)(struct ibv_context *context, struct ibv_async_event *event);
	void (*ack_async_event)(struct ibv_async_event *event);
};

/*
 * Fills verbs from the software device when params name a profile, else from
 * the system library. -FI_ENODATA: neither is there (no devices, no error).
 */
int bolt_verbs_open(const struct bolt_params *params, struct bolt_verbs *verbs);
void bolt_verbs_close(struct bolt_verbs *verbs);

/* The two sources; each fills the whole table or fails. */
int bolt_verbs_system_open(const char *library_path, struct bolt_verbs *verbs);
void bolt_verbs_system_close(struct bolt_verbs *verbs);
int bolt_verbs_soft_open(const struct bolt_params *params, struct bolt_verbs *verbs);

/*
 * A GID's type as the kernel shows it in sysfs
 * (ibdev_path/ports/N/gid_attrs/types/INDEX), for libraries without
 * _ibv_query_gid_ex (rdma-core before v32): 0, ENODATA for an empty entry,
 * EINVAL for text it does not know, or the errno of a file it cannot read.
 */
int bolt_verbs_system_sysfs_gid_type(const char *ibdev_path, uint8_t port_num, int index,
				     enum ibv_gid_type *type);
void bolt_verbs_soft_close(struct bolt_verbs *verbs);

#endif /* BOLT_VERBS_H */
