/*
 * bolt_domain.c: the domain: one port of one device, with its protection
 * domain, the completion queue every queue pair of the domain shares, the
 * slab pool of control buffers, the registration cache, and progress.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"
#include "bolt_getinfo.h"
#include "bolt_random.h"
#include "bolt_hints.h"
#include "bolt_unsupported.h"
#include "collective/bolt_collective.h"
#include "connection/bolt_job_key.h"

#define BOLT_DOMAIN_CQ_SIZE 4096
#define BOLT_DOMAIN_POLL_BATCH 16
/* One Thunderbolt frame: a SEND and its receive must span as many 4 KiB frames. */
#define BOLT_DOMAIN_CONTROL_BUFFER_SIZE 4096
#define BOLT_DOMAIN_CONTROL_BUFFERS 2048

/* Hands each completion of cq to the code that posted its work request. */
static void bolt_domain_poll_cq(struct bolt_domain *domain, struct ibv_cq *cq)
{
	struct bolt_verbs *verbs = &domain->fabric->verbs;
	struct ibv_wc wc[BOLT_DOMAIN_POLL_BATCH];
	int count;

	do {
		count = verbs->poll_cq(cq, BOLT_DOMAIN_POLL_BATCH, wc);
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
}

void bolt_domain_poll_device(struct bolt_domain *domain)
{
	bolt_domain_poll_cq(domain, domain->primary.handle.cq);
	for (int index = 0; index < domain->stripe_port_count; index++)
		bolt_domain_poll_cq(domain, domain->stripe_ports[index].handle.cq);
	domain->poll_generation++;
	if (domain->retired_links)
		bolt_link_reclaim(domain);
}

/* How many progress calls apart the device's asynchronous events are read: a system call each. */
#define BOLT_DOMAIN_EVENT_INTERVAL 64

void bolt_domain_progress(struct bolt_domain *domain)
{
	struct bolt_endpoint *endpoint;

	bool events = !(++domain->progress_count % BOLT_DOMAIN_EVENT_INTERVAL);

	if (events)
		bolt_data_rail_watch_ports(domain);
	bolt_domain_poll_device(domain);
	DL_FOREACH(domain->endpoints, endpoint) {
		bolt_endpoint_progress(endpoint);
		bolt_receive_grant_check_revokes(endpoint);
		/* Seconds to answer: checked now and then, so a progress pays nothing for it. */
		if (events)
			bolt_tag_grant_check_revokes(endpoint);
	}
	/* Peers that never answer a revoke keep no access past the liveness time. */
	bolt_direct_write_check_revokes(domain);
}

/*
 * A random id, never 0, by which peers tell this domain from others: their
 * connections to its endpoints share links (bolt_link.c).
 */
static uint64_t bolt_domain_new_id(void)
{
	uint64_t id = 0;

	while (!id)
		id = (uint64_t) bolt_random_u32() << 32 | bolt_random_u32();
	return id;
}

/*
 * A stripe port: another usable port of the host that carries rails as the
 * domain's own does (same QP type, RDMA write). False, closed, otherwise.
 */
static bool bolt_domain_open_stripe_port(struct bolt_domain *domain,
					 const struct bolt_device_report *device,
					 const struct bolt_port_report *port)
{
	struct bolt_rail_port *stripe_port = &domain->stripe_ports[domain->stripe_port_count];

	if (!port->usable || (!strcmp(device->name, domain->primary.device.name) &&
			      port->port_num == domain->primary.port.port_num))
		return false;
	if (bolt_rail_port_open(&domain->fabric->verbs, device, port, BOLT_DOMAIN_CQ_SIZE,
				stripe_port))
		return false;
	if (stripe_port->qp_type != domain->primary.qp_type || !stripe_port->rdma_write) {
		FI_INFO(&bolt_prov, FI_LOG_DOMAIN, "%s:%u cannot carry %s's stripes\n",
			device->name, port->port_num, domain->primary.device.name);
		bolt_rail_port_close(stripe_port);
		return false;
	}
	domain->stripe_port_count++;
	return true;
}

/* Up to FI_BOLT_STRIPE_PORTS of the host's other ports, where the domain's own writes. */
static void bolt_domain_open_stripe_ports(struct bolt_domain *domain,
					  const struct bolt_device_report *devices, int count)
{
	int wanted = domain->fabric->params.stripe_ports;

	if (wanted < 0 || wanted > BOLT_MAX_STRIPE_PORTS)
		wanted = BOLT_MAX_STRIPE_PORTS;
	if (!domain->primary.rdma_write)
		return;
	for (int i = 0; i < count; i++)
		for (int j = 0; j < devices[i].port_count; j++)
			if (domain->stripe_port_count < wanted)
				bolt_domain_open_stripe_port(domain, &devices[i], &devices[i].ports[j]);
}

static void bolt_domain_close_stripe_ports(struct bolt_domain *domain)
{
	while (domain->stripe_port_count)
		bolt_rail_port_close(&domain->stripe_ports[--domain->stripe_port_count]);
}

/*
 * RC queue pairs on every port retry for as long as the side channel gives a
 * silent peer host: a cable down for a second must not fail them sooner.
 */
static void bolt_domain_set_patience(struct bolt_domain *domain)
{
	uint8_t ack_timeout = bolt_qp_ack_timeout(domain->fabric->params.liveness_timeout);

	domain->primary.qp_local.ack_timeout = ack_timeout;
	for (int index = 0; index < domain->stripe_port_count; index++)
		domain->stripe_ports[index].qp_local.ack_timeout = ack_timeout;
}

/* The device port the domain name ("rdma_en0", "rdma_en0:2") stands for, and the stripe ports. */
static int bolt_domain_open_ports(struct bolt_domain *domain, const char *name)
{
	struct bolt_fabric *fabric = domain->fabric;
	struct bolt_device_report *devices, device;
	struct bolt_port_report port;
	int count, ret;

	ret = bolt_device_reports_create(&fabric->verbs, fabric->params.gid_index, &devices, &count);
	if (ret)
		return ret;
	ret = bolt_device_find_domain(devices, count, name, &device, &port);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "domain %s: no such usable device port\n", name);
	} else {
		ret = bolt_getinfo_check_offered(&device, &port, domain->info);
		if (ret)
			FI_WARN(&bolt_prov, FI_LOG_DOMAIN,
				"domain %s: the fi_info is not one bolt offers for it (FI_LOG_LEVEL=info says why)\n",
				name);
	}
	if (!ret)
		ret = bolt_rail_port_open(&fabric->verbs, &device, &port, BOLT_DOMAIN_CQ_SIZE,
					  &domain->primary);
	if (!ret) {
		bolt_rail_port_claim(&domain->primary);
		bolt_domain_open_stripe_ports(domain, devices, count);
		bolt_domain_set_patience(domain);
	}
	bolt_device_reports_destroy(devices);
	return ret;
}

static void bolt_domain_close_ports(struct bolt_domain *domain)
{
	bolt_domain_close_stripe_ports(domain);
	bolt_rail_port_unclaim(&domain->primary);
	bolt_rail_port_close(&domain->primary);
}

static void bolt_domain_log(const struct bolt_domain *domain)
{
	char gid[BOLT_GID_TEXT_SIZE];

	bolt_gid_format(&domain->primary.gid, gid, sizeof(gid));
	FI_INFO(&bolt_prov, FI_LOG_DOMAIN,
		"domain %s: GID[%d] %s (%s), %s queue pairs, %s (%s), %d queue depth, %d data rails, "
		"%d stripe ports\n",
		domain->info->domain_attr->name, domain->primary.qp_local.gid_index, gid,
		bolt_gid_reason_text(domain->primary.port.gid_choice.reason),
		domain->primary.qp_type == IBV_QPT_RC ? "RC" : "UC",
		domain->primary.rdma_write ? "RDMA write data path" : "send-only data path",
		domain->primary.device.rdma_write_reason, domain->primary.budget.queue_depth,
		domain->data_rails, domain->stripe_port_count);
	for (int index = 0; index < domain->stripe_port_count; index++)
		FI_INFO(&bolt_prov, FI_LOG_DOMAIN, "domain %s: stripe port %s:%u\n",
			domain->info->domain_attr->name, domain->stripe_ports[index].device.name,
			domain->stripe_ports[index].port.port_num);
}

/*
 * The control buffers on every port: a peer that only a stripe port reaches
 * gets its link there (bolt_link.c). A port that cannot register them
 * carries no link, only stripes.
 */
static void bolt_domain_register_control(struct bolt_domain *domain)
{
	struct bolt_slab_pool *pool = &domain->control_pool;

	domain->primary.control_mr = pool->mr;
	for (int index = 0; index < domain->stripe_port_count; index++) {
		struct bolt_rail_port *port = &domain->stripe_ports[index];

		port->control_mr = domain->fabric->verbs.reg_mr(port->handle.pd, pool->memory,
								pool->memory_size, IBV_ACCESS_LOCAL_WRITE);
		if (!port->control_mr)
			FI_INFO(&bolt_prov, FI_LOG_DOMAIN, "%s:%u cannot carry links: %s\n",
				port->device.name, port->port.port_num, strerror(errno));
	}
}

static void bolt_domain_deregister_control(struct bolt_domain *domain)
{
	for (int index = domain->stripe_port_count - 1; index >= 0; index--) {
		struct bolt_rail_port *port = &domain->stripe_ports[index];

		if (port->control_mr)
			domain->fabric->verbs.dereg_mr(port->control_mr);
		port->control_mr = NULL;
	}
	domain->primary.control_mr = NULL;
}

static int bolt_domain_close(struct fid *fid)
{
	struct bolt_domain *domain = bolt_container_of(fid, struct bolt_domain, domain_fid.fid);

	if (atomic_load(&domain->child_count)) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "domain closed with %d objects still open on it\n",
			atomic_load(&domain->child_count));
		return -FI_EBUSY;
	}
	/* A reader of an event queue may still drive the progress of a join just ended. */
	while (atomic_load(&domain->progress_pins))
		sched_yield();
	/* Links retired by the last endpoints: the poll returns their buffers. */
	bolt_domain_poll_device(domain);
	/* Their connections went with the endpoints; this is only in case. */
	bolt_direct_write_release_all(domain);
	bolt_domain_deregister_control(domain);
	free(domain->control_buffers);
	bolt_slab_pool_destroy(&domain->control_pool);
	bolt_domain_close_ports(domain);
	bolt_job_key_clear(&domain->job_key);
	fi_freeinfo(domain->info);
	pthread_mutex_destroy(&domain->lock);
	atomic_fetch_sub(&domain->fabric->child_count, 1);
	free(domain);
	return 0;
}

/* Raw keys are keys (bolt_mr.c): mapping one allocates nothing to release. */
static int bolt_domain_control(struct fid *fid, int command, void *argument)
{
	(void) fid;
	switch (command) {
	case FI_MAP_RAW_MR:
		return bolt_mr_map_raw(argument);
	case FI_UNMAP_KEY:
		return argument ? 0 : -FI_EINVAL;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops bolt_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_domain_close,
	.bind = bolt_no_bind,
	.control = bolt_domain_control,
	.ops_open = bolt_no_ops_open,
};

/*
 * An endpoint: the point-to-point one, with the collectives on top. Every
 * endpoint has them: without FI_COLLECTIVE in its caps they refuse joins
 * (-FI_EOPBADSTATE) and find no group, and their state waits for a join.
 */
static int bolt_domain_endpoint_open(struct fid_domain *domain_fid, struct fi_info *info,
				     struct fid_ep **ep_fid, void *context)
{
	int ret = bolt_endpoint_open(domain_fid, info, ep_fid, context);

	if (ret)
		return ret;
	bolt_collective_endpoint_attach(bolt_container_of(*ep_fid, struct bolt_endpoint, ep_fid));
	return 0;
}

static struct fi_ops_domain bolt_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = bolt_av_open,
	.cq_open = bolt_cq_open,
	.endpoint = bolt_domain_endpoint_open,
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

	ret = bolt_domain_open_ports(domain, domain->info->domain_attr->name);
	if (ret)
		return ret;
	ret = bolt_slab_pool_create(&fabric->verbs, domain->primary.handle.pd,
				    BOLT_DOMAIN_CONTROL_BUFFER_SIZE, BOLT_DOMAIN_CONTROL_BUFFERS,
				    IBV_ACCESS_LOCAL_WRITE, &domain->control_pool);
	if (ret)
		goto close_ports;
	domain->control_buffers = calloc(domain->control_pool.buffer_count,
					 sizeof(*domain->control_buffers));
	if (!domain->control_buffers) {
		ret = -FI_ENOMEM;
		goto destroy_pool;
	}
	bolt_domain_register_control(domain);
	return 0;

destroy_pool:
	bolt_slab_pool_destroy(&domain->control_pool);
close_ports:
	bolt_domain_close_ports(domain);
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
	domain->mr_mode = bolt_hints_mr_mode_bits(domain->info->domain_attr->mr_mode);
	ret = bolt_job_key_load(fabric->params.job_key, fabric->params.job_key_file,
				&domain->job_key);
	if (!ret)
		ret = bolt_domain_open_device(domain);
	if (ret) {
		bolt_job_key_clear(&domain->job_key);
		fi_freeinfo(domain->info);
		free(domain);
		return ret;
	}
	pthread_mutex_init(&domain->lock, NULL);
	domain->domain_id = bolt_domain_new_id();
	domain->data_rails = bolt_device_data_rails(&domain->primary.budget, fabric->params.data_rails);
	bolt_data_rail_domain_init(domain);
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
