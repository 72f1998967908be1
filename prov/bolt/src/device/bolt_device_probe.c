/*
 * bolt_device_probe.c: finds out by trying what a device accepts: QP types
 * and RDMA write. Each probe costs one queue pair (and the write probe one
 * small MR) for a moment, so fi_getinfo never runs them; a domain does once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/bolt_device_probe.h"
#include "rails/bolt_qp.h"

#define BOLT_PROBE_BYTES 64
#define BOLT_PROBE_TIMEOUT_NS 200000000L

int bolt_device_handle_open(struct bolt_verbs *verbs, const char *name, int cq_size,
			    struct bolt_device_handle *handle)
{
	int count = 0;
	int ret = -FI_ENODEV;

	memset(handle, 0, sizeof(*handle));
	handle->verbs = verbs;
	handle->device_list = verbs->get_device_list(&count);
	if (!handle->device_list)
		return -FI_ENODEV;
	for (int i = 0; i < count && !handle->context; i++) {
		if (strcmp(verbs->get_device_name(handle->device_list[i]), name))
			continue;
		handle->context = verbs->open_device(handle->device_list[i]);
		if (!handle->context)
			FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s: open_device failed: %s\n", name,
				strerror(errno));
	}
	if (!handle->context)
		goto free_list;
	ret = -FI_ENOMEM;
	handle->pd = verbs->alloc_pd(handle->context);
	if (!handle->pd) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s: alloc_pd failed: %s\n", name, strerror(errno));
		goto close_device;
	}
	handle->cq = verbs->create_cq(handle->context, cq_size, NULL, NULL, 0);
	if (!handle->cq) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s: create_cq of %d entries failed: %s\n", name,
			cq_size, strerror(errno));
		goto dealloc_pd;
	}
	return 0;

dealloc_pd:
	verbs->dealloc_pd(handle->pd);
close_device:
	verbs->close_device(handle->context);
free_list:
	verbs->free_device_list(handle->device_list);
	memset(handle, 0, sizeof(*handle));
	return ret;
}

void bolt_device_handle_close(struct bolt_device_handle *handle)
{
	struct bolt_verbs *verbs = handle->verbs;

	verbs->destroy_cq(handle->cq);
	verbs->dealloc_pd(handle->pd);
	verbs->close_device(handle->context);
	verbs->free_device_list(handle->device_list);
	memset(handle, 0, sizeof(*handle));
}

static bool bolt_device_accepts_qp_type(struct bolt_device_handle *handle, enum ibv_qp_type type)
{
	struct ibv_qp *qp = bolt_qp_create(handle->verbs, handle->pd, handle->cq, type, 1, 0);

	if (!qp)
		return false;
	handle->verbs->destroy_qp(qp);
	return true;
}

void bolt_device_probe_qp_types(struct bolt_device_handle *handle,
				struct bolt_device_report *report)
{
	report->rc_supported = bolt_device_accepts_qp_type(handle, IBV_QPT_RC);
	report->uc_supported = bolt_device_accepts_qp_type(handle, IBV_QPT_UC);
	report->qp_types_probed = true;
}

static long bolt_probe_elapsed_ns(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000000000L + (now.tv_nsec - start->tv_nsec);
}

/* Writes a probe tries before it believes the device moves no data. */
#define BOLT_PROBE_WRITE_ATTEMPTS 8

/* 0 when the write completed and the data arrived; else why not, in reason (-FI_EAGAIN: no data). */
static int bolt_probe_write(struct bolt_device_handle *handle, struct ibv_qp *qp,
			    struct ibv_mr *mr, char *buffer, char *reason, size_t reason_size)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t) buffer, .length = BOLT_PROBE_BYTES, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t) buffer + BOLT_PROBE_BYTES, .rkey = mr->rkey },
	};
	struct ibv_send_wr *bad_wr;
	struct ibv_wc wc;
	struct timespec start;
	int ret;

	for (int i = 0; i < BOLT_PROBE_BYTES; i++)
		buffer[i] = (char) (i * 7 + 1);
	memset(buffer + BOLT_PROBE_BYTES, 0, BOLT_PROBE_BYTES);
	ret = handle->verbs->post_send(qp, &wr, &bad_wr);
	if (ret) {
		snprintf(reason, reason_size, "posting an RDMA write fails: %s", strerror(ret));
		return -FI_EOPNOTSUPP;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	while ((ret = handle->verbs->poll_cq(handle->cq, 1, &wc)) == 0 &&
	       bolt_probe_elapsed_ns(&start) < BOLT_PROBE_TIMEOUT_NS)
		;
	if (ret <= 0) {
		snprintf(reason, reason_size, "an RDMA write never completes");
		return -FI_ETIMEDOUT;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		snprintf(reason, reason_size, "an RDMA write completes with %s",
			 handle->verbs->wc_status_str(wc.status));
		return -FI_EOPNOTSUPP;
	}
	if (memcmp(buffer, buffer + BOLT_PROBE_BYTES, BOLT_PROBE_BYTES)) {
		snprintf(reason, reason_size, "an RDMA write completes but moves no data");
		return -FI_EAGAIN;
	}
	snprintf(reason, reason_size, "an RDMA write moved data");
	return 0;
}

void bolt_device_probe_rdma_write(struct bolt_device_handle *handle,
				  struct bolt_device_report *report,
				  const struct bolt_port_report *port, enum ibv_qp_type type)
{
	struct bolt_verbs *verbs = handle->verbs;
	struct bolt_qp_local local = {
		.port_num = port->port_num,
		.gid_index = port->gid_choice.index,
		.path_mtu = port->attr.active_mtu,
	};
	struct bolt_qp_remote remote = { .gid = port->gids[port->gid_choice.index].gid };
	char *buffer = aligned_alloc(64, 2 * BOLT_PROBE_BYTES);
	struct ibv_qp *qp;
	struct ibv_mr *mr;

	report->rdma_write_probed = true;
	report->rdma_write_supported = false;
	if (!buffer) {
		snprintf(report->rdma_write_reason, sizeof(report->rdma_write_reason),
			 "probe needs memory");
		report->rdma_write_probed = false;
		return;
	}
	mr = verbs->reg_mr(handle->pd, buffer, 2 * BOLT_PROBE_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		snprintf(report->rdma_write_reason, sizeof(report->rdma_write_reason),
			 "probe needs an MR: %s", strerror(errno));
		report->rdma_write_probed = false;
		goto free_buffer;
	}
	qp = bolt_qp_create(verbs, handle->pd, handle->cq, type, 1, 0);
	if (!qp) {
		snprintf(report->rdma_write_reason, sizeof(report->rdma_write_reason),
			 "probe needs a QP: %s", strerror(errno));
		report->rdma_write_probed = false;
		goto dereg_mr;
	}
	remote.qpn = qp->qp_num;
	if (bolt_qp_init(verbs, qp, port->port_num) || bolt_qp_connect(verbs, qp, &local, &remote)) {
		snprintf(report->rdma_write_reason, sizeof(report->rdma_write_reason),
			 "probe QP does not connect to itself");
		report->rdma_write_probed = false;
		goto destroy_qp;
	}
	/* UC may lose the write on the way (a lossy link): only writes that never land say no. */
	for (int attempt = 0; attempt < BOLT_PROBE_WRITE_ATTEMPTS; attempt++) {
		int ret = bolt_probe_write(handle, qp, mr, buffer, report->rdma_write_reason,
					   sizeof(report->rdma_write_reason));

		report->rdma_write_supported = !ret;
		if (ret != -FI_EAGAIN)
			break;
	}
destroy_qp:
	verbs->destroy_qp(qp);
dereg_mr:
	verbs->dereg_mr(mr);
free_buffer:
	free(buffer);
}
