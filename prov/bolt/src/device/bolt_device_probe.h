/*
 * bolt_device_probe.h: what a device's attributes do not say and bolt must
 * find out by trying: which QP types it accepts (Apple's driver refuses RC)
 * and whether RDMA write moves data (unconfirmed on Apple's driver; the
 * software device's send-only switch turns it off).
 */
#ifndef BOLT_DEVICE_PROBE_H
#define BOLT_DEVICE_PROBE_H

#include "device/bolt_device.h"

/* An open device with a PD and a CQ, found by name. */
struct bolt_device_handle {
	struct bolt_verbs *verbs;
	struct ibv_device **device_list;
	struct ibv_context *context;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

/* 0, -FI_ENODEV when no device has that name, or another negative error code. */
int bolt_device_handle_open(struct bolt_verbs *verbs, const char *name, int cq_size,
			    struct bolt_device_handle *handle);
void bolt_device_handle_close(struct bolt_device_handle *handle);

/* Creates a QP of each type for a moment; fills report->rc_supported and uc_supported. */
void bolt_device_probe_qp_types(struct bolt_device_handle *handle,
				struct bolt_device_report *report);

/*
 * Writes a pattern from one half of a buffer to the other through a queue
 * pair of type connected to itself on port; fills report->rdma_write_*.
 */
void bolt_device_probe_rdma_write(struct bolt_device_handle *handle,
				  struct bolt_device_report *report,
				  const struct bolt_port_report *port, enum ibv_qp_type type);

#endif /* BOLT_DEVICE_PROBE_H */
