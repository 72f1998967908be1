/*
 * bolt_domain.c: the domain: one port of one device, with its protection
 * domain, the completion queue every queue pair of the domain shares, the
 * slab pool of control buffers, the registration cache, and progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "bolt_unsupported.h"
#include "collective/bolt_collective.h"
#include "connection/bolt_job_key.h"

#define BOLT_DOMAIN_CQ_SIZE 4096
#define BOLT_DOMAIN_POLL_BATCH 16
/* One Thunderbolt frame: a SEND and its receive must span as many 4 KiB frames. */
#define BOLT_DOMAIN_CONTROL_BUFFER_SIZE 4096
#define BOLT_DOMAIN_CONTROL_BUFFERS 2048

void bolt_domain_poll_device(struct bolt_domain *domain)
{
	struct bolt_verbs *verbs = &domain->fabric->verbs;
	struct ibv_wc wc[BOLT_DOMAIN_POLL_BATCH];
	int count;

	do {
		count = verbs->poll_cq(domain->handle.cq, BOLT_DOMAIN_POLL_BATCH, wc);
		for (int i = 0; i < count; i++) {
			struct bolt_work_completion *work =
				(struct bolt_work_completion *) (uintptr_t) wc[i].wr_id;

			/* Unsignaled rendezvous writes carry no record; one reports only
			 * by failing, and the DONE behind it then fails its connection. */
			if (work)
				work->handle(work, &wc[i]);
			else
				FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "RDMA write failed: %s\n",
					verbs->wc_status_str(wc[i].status));
		}
	} while (count == BOLT_DOMAIN_POLL_BATCH);
	if (count < 0)
		FI_WARN_SPARSE(&bolt_prov, FI_LOG_DOMAIN, "poll_cq failed: %s\n", strerror(-count));
	domain->poll_generation++;
}

void bolt_domain_progress(struct bolt_domain *domain)
{
	struct bolt_endpoint *endpoint;

	bolt_domain_poll_device(domain);
	DL_FOREACH(domain->endpoints, endpoint)
		bolt_endpoint_progress(endpoint);
}

/* The device and port the domain name ("rdma_en0", "rdma_en0:2") stands for. */
static int bolt_domain_find_port(struct bolt_domain *domain, const char *name)
{
	struct bolt_fabric *fabric = domain->fabric;
	struct bolt_device_report *devices;
	int count, ret;

	ret = bolt_device_reports_create(&fabric->verbs, fabric->params.gid_index, &devices, &count);
	if (ret)
		return ret;
	ret = bolt_device_find_domain(devices, count, name, &domain->device, &domain->port);
	bolt_device_reports_destroy(devices);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "domain %s: no such usable device port\n", name);
		return ret;
	}
	return 0;
}

/* RC where the device has it, for its retries; UC otherwise (Thunderbolt). */
static int bolt_domain_probe(struct bolt_domain *domain)
{
	bolt_device_probe_qp_types(&domain->handle, &domain->device);
	if (!domain->device.rc_supported && !domain->device.uc_supported) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s accepts neither RC nor UC queue pairs\n",
			domain->device.name);
		return -FI_ENODEV;
	}
	domain->qp_type = domain->device.rc_supported ? IBV_QPT_RC : IBV_QPT_UC;
	bolt_device_probe_rdma_write(&domain->handle, &domain->device, &domain->port,
				     domain->qp_type);
	domain->rdma_write = domain->device.rdma_write_supported;
	return 0;
}

static void bolt_domain_log(const struct bolt_domain *domain)
{
	char gid[BOLT_GID_TEXT_SIZE];

	bolt_gid_format(&domain->gid, gid, sizeof(gid));
	FI_INFO(&bolt_prov, FI_LOG_DOMAIN,
		"domain %s: GID[%d] %s (%s), %s queue pairs, %s (%s), %d queue depth, %d data rails\n",
		domain->info->domain_attr->name, domain->qp_local.gid_index, gid,
		bolt_gid_reason_text(domain->port.gid_choice.reason),
		domain->qp_type == IBV_QPT_RC ? "RC" : "UC",
		domain->rdma_write ? "RDMA write data path" : "send-only data path",
		domain->device.rdma_write_reason, domain->budget.queue_depth, domain->data_rails);
}

static int bolt_domain_close(struct fid *fid)
{
	struct bolt_domain *domain = bolt_container_of(fid, struct bolt_domain, domain_fid.fid);

	if (atomic_load(&domain->child_count)) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "domain closed with %d objects still open on it\n",
			atomic_load(&domain->child_count));
		return -FI_EBUSY;
	}
	bolt_mr_cache_destroy(domain->mr_cache);
	free(domain->control_buffers);
	bolt_slab_pool_destroy(&domain->control_pool);
	bolt_device_handle_close(&domain->handle);
	fi_freeinfo(domain->info);
	pthread_mutex_destroy(&domain->lock);
	atomic_fetch_sub(&domain->fabric->child_count, 1);
	free(domain);
	return 0;
}

static struct fi_ops bolt_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_domain_close,
	.bind = bolt_no_bind,
	.control = bolt_no_control,
	.ops_open = bolt_no_ops_open,
};

static struct fi_ops_domain bolt_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = bolt_av_open,
	.cq_open = bolt_cq_open,
	.endpoint = bolt_endpoint_open,
	.scalable_ep = bolt_no_scalable_ep,
	.cntr_open = bolt_cntr_open,
	.poll_open = bolt_poll_open,
	.stx_ctx = bolt_no_stx_context,
	.srx_ctx = bolt_no_srx_context,
	.query_atomic = bolt_no_query_atomic,
	.query_collective = bolt_collective_query,
	.endpoint2 = bolt_no_endpoint2,
};

/* The device resources of a domain, acquired in order; undone in reverse on failure. */
static int bolt_domain_open_device(struct bolt_domain *domain)
{
	struct bolt_fabric *fabric = domain->fabric;
	int ret;

	ret = bolt_domain_find_port(domain, domain->info->domain_attr->name);
	if (ret)
		return ret;
	bolt_device_budget(&domain->device, &domain->budget);
	domain->qp_local.port_num = domain->port.port_num;
	domain->qp_local.gid_index = domain->port.gid_choice.index;
	domain->qp_local.path_mtu = domain->port.attr.active_mtu;
	domain->gid = domain->port.gids[domain->port.gid_choice.index].gid;

	ret = bolt_device_handle_open(&fabric->verbs, domain->device.name, BOLT_DOMAIN_CQ_SIZE,
				      &domain->handle);
	if (ret)
		return ret;
	ret = bolt_domain_probe(domain);
	if (ret)
		goto close_handle;
	ret = bolt_slab_pool_create(&fabric->verbs, domain->handle.pd,
				    BOLT_DOMAIN_CONTROL_BUFFER_SIZE, BOLT_DOMAIN_CONTROL_BUFFERS,
				    IBV_ACCESS_LOCAL_WRITE, &domain->control_pool);
	if (ret)
		goto close_handle;
	domain->control_buffers = calloc(domain->control_pool.buffer_count,
					 sizeof(*domain->control_buffers));
	if (!domain->control_buffers) {
		ret = -FI_ENOMEM;
		goto destroy_pool;
	}
	ret = bolt_mr_cache_create(&fabric->verbs, domain->handle.pd, domain->budget.user_mr_budget,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   (domain->qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ : 0),
				   &domain->mr_cache);
	if (ret)
		goto free_records;
	return 0;

free_records:
	free(domain->control_buffers);
destroy_pool:
	bolt_slab_pool_destroy(&domain->control_pool);
close_handle:
	bolt_device_handle_close(&domain->handle);
	return ret;
}

int bolt_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_fid, void *context)
{
	struct bolt_fabric *fabric = bolt_container_of(fabric_fid, struct bolt_fabric, fabric_fid);
	struct bolt_domain *domain;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->fabric = fabric;
	domain->info = fi_dupinfo(info);
	if (!domain->info) {
		free(domain);
		return -FI_ENOMEM;
	}
	ret = bolt_domain_open_device(domain);
	if (ret) {
		fi_freeinfo(domain->info);
		free(domain);
		return ret;
	}
	pthread_mutex_init(&domain->lock, NULL);
	domain->job_key_digest = bolt_job_key_digest(fabric->params.job_key);
	domain->data_rails = bolt_device_data_rails(&domain->budget, fabric->params.data_rails);
	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->domain_fid.fid.ops = &bolt_domain_fi_ops;
	domain->domain_fid.ops = &bolt_domain_ops;
	domain->domain_fid.mr = &bolt_mr_ops;
	atomic_fetch_add(&fabric->child_count, 1);
	bolt_domain_log(domain);
	*domain_fid = &domain->domain_fid;
	return 0;
}
