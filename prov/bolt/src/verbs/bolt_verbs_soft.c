/*
 * bolt_verbs_soft.c: fills the verbs table from the software device, with the
 * profile, topology, limits, faults and copy mode the FI_BOLT_SOFT* parameters
 * ask for.
 */
#include <stdio.h>
#include <string.h>

#include "softrdma/softrdma.h"
#include "verbs/bolt_verbs.h"

static int bolt_verbs_soft_config(const struct bolt_params *params,
				  struct softrdma_config *config)
{
	memset(config, 0, sizeof(*config));
	if (softrdma_profile_parse(params->soft_profile, &config->profile) ||
	    softrdma_copy_mode_parse(params->soft_copy, &config->copy_mode))
		return -FI_EINVAL;
	snprintf(config->topology, sizeof(config->topology), "%s", params->soft_topology);
	snprintf(config->namespace_name, sizeof(config->namespace_name), "%s",
		 params->soft_namespace);
	config->host = params->soft_host;
	config->max_mr = params->soft_max_mr;
	config->max_qp = params->soft_max_qp;
	config->max_wr = params->soft_max_wr;
	config->send_only = params->soft_send_only;
	config->drop_every = params->soft_drop_every;
	config->drop_ppm = params->soft_drop_ppm;
	config->seed = (unsigned int) params->soft_seed;
	snprintf(config->fault_plan, sizeof(config->fault_plan), "%s", params->soft_fault_plan);
	return 0;
}

int bolt_verbs_soft_open(const struct bolt_params *params, struct bolt_verbs *verbs)
{
	struct softrdma_config config;
	int ret;

	ret = bolt_verbs_soft_config(params, &config);
	if (ret)
		return ret;
	ret = softrdma_attach(&config);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device (%s) could not start: %s\n",
			params->soft_profile, strerror(-ret));
		/* A segment file others could reach is refused: say so, not just "I/O error". */
		return ret == -EACCES ? -FI_EACCES : -FI_EIO;
	}
	snprintf(verbs->name, sizeof(verbs->name), "softrdma %s (copy %s)", params->soft_profile,
		 softrdma_copy_mode_name(softrdma_copy_mode_current()));
	verbs->software = true;
	verbs->get_device_list = softrdma_get_device_list;
	verbs->free_device_list = softrdma_free_device_list;
	verbs->get_device_name = softrdma_get_device_name;
	verbs->open_device = softrdma_open_device;
	verbs->close_device = softrdma_close_device;
	verbs->query_device = softrdma_query_device;
	verbs->query_port = softrdma_query_port;
	verbs->query_gid = softrdma_query_gid;
	verbs->query_gid_type = softrdma_query_gid_type;
	verbs->alloc_pd = softrdma_alloc_pd;
	verbs->dealloc_pd = softrdma_dealloc_pd;
	verbs->reg_mr = softrdma_reg_mr;
	verbs->dereg_mr = softrdma_dereg_mr;
	verbs->create_cq = softrdma_create_cq;
	verbs->destroy_cq = softrdma_destroy_cq;
	verbs->poll_cq = softrdma_poll_cq;
	verbs->create_qp = softrdma_create_qp;
	verbs->destroy_qp = softrdma_destroy_qp;
	verbs->modify_qp = softrdma_modify_qp;
	verbs->query_qp = softrdma_query_qp;
	verbs->post_send = softrdma_post_send;
	verbs->post_recv = softrdma_post_recv;
	verbs->wc_status_str = softrdma_wc_status_str;
	verbs->get_async_event = softrdma_get_async_event;
	verbs->ack_async_event = softrdma_ack_async_event;
	FI_INFO(&bolt_prov, FI_LOG_CORE,
		"verbs from the software device, profile %s, copy mode %s\n", params->soft_profile,
		softrdma_copy_mode_name(softrdma_copy_mode_current()));
	return 0;
}

void bolt_verbs_soft_close(struct bolt_verbs *verbs)
{
	(void) verbs;
	softrdma_detach();
}
