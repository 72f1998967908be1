/*
 * test_hints.c: bolt's hints matching, exercised against the full design
 * template (every capability the design will offer, whatever is implemented
 * yet): the hint sets of aws-ofi-nccl, Open MPI and fabtests are accepted and
 * narrowed as those users expect, and each kind of unsupported request is
 * rejected.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "bolt_address.h"
#include "bolt_attr.h"
#include "bolt_hints.h"
#include "bolt_fi_compat.h"
#include "consumer_hints.h"

#define API_VERSION FI_VERSION(1, 17)
#define OLD_API_VERSION FI_VERSION(1, 4)
#define DOMAIN_NAME "rdma_test0"
#define DESIGN_MR_COUNT 96
#define ALL_COMM (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define ALL_RMA (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define FABTESTS_MR_MODE (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
			  FI_MR_PROV_KEY)
/* Open MPI's MTL asks for all 64 tag bits and reads bit 63 back. */
#define OPEN_MPI_TAG_FORMAT 0x8000FFFFFFFFFFFFULL

static struct fi_info *provider;
static struct fi_info *hints;
static struct fi_info *result;

static void setup(void)
{
	provider = bolt_attr_info_dup(BOLT_DESIGN_CAPS);
	cr_assert_not_null(provider);
	provider->domain_attr->name = strdup(DOMAIN_NAME);
	cr_assert_not_null(provider->domain_attr->name);
	provider->domain_attr->mr_cnt = DESIGN_MR_COUNT;
	hints = fi_allocinfo();
	cr_assert_not_null(hints);
	result = NULL;
}

static void teardown(void)
{
	fi_freeinfo(result);
	fi_freeinfo(hints);
	fi_freeinfo(provider);
}

TestSuite(hints, .init = setup, .fini = teardown);

/* What fi_getinfo does with one port: check, then narrow a copy into result. */
static int match(uint32_t version)
{
	int ret = bolt_hints_check(provider, hints, version);

	if (ret)
		return ret;
	result = fi_dupinfo(provider);
	cr_assert_not_null(result);
	bolt_hints_narrow(result, hints, version);
	return 0;
}

#define expect_accepted() cr_assert_eq(match(API_VERSION), 0)
#define expect_rejected() cr_assert_eq(match(API_VERSION), -FI_ENODATA)

/* Open MPI's ofi MTL: tags, directed receives, the source rank in CQ data, no MR mode. */
static void set_open_mpi_hints(struct fi_info *h)
{
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->mem_tag_format = OPEN_MPI_TAG_FORMAT;
	h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->rx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->cq_data_size = 4;
	h->domain_attr->mr_mode = 0;
}

/* fabtests 1.17 fi_rdm_pingpong (benchmarks/rdm_pingpong.c with INIT_OPTS). */
static void set_fabtests_rdm_pingpong_hints(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FABTESTS_MR_MODE;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->tx_attr->tclass = FI_TC_LOW_LATENCY;
	h->addr_format = FI_FORMAT_UNSPEC;
}

/* fabtests 1.17 fi_rma_bw (benchmarks/rma_bw.c); ft_getinfo sets the endpoint type. */
static void set_fabtests_rma_bw_hints(struct fi_info *h)
{
	h->caps = FI_MSG | FI_RMA;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->mode = FI_CONTEXT;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->mr_mode = FABTESTS_MR_MODE;
	h->tx_attr->tclass = FI_TC_BULK_DATA;
	h->ep_attr->type = FI_EP_RDM;
}

Test(hints, null_hints_match_the_whole_design)
{
	result = fi_dupinfo(provider);
	cr_assert_not_null(result);
	cr_assert_eq(bolt_hints_check(provider, NULL, API_VERSION), 0);
	bolt_hints_narrow(result, NULL, API_VERSION);
	cr_expect_eq(result->caps, BOLT_DESIGN_CAPS);
	cr_expect_eq(result->mode, 0);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_MODE_SUPPORTED);
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_SAFE);
	cr_expect_eq(result->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	cr_expect_eq(result->ep_attr->type, FI_EP_RDM);
	cr_expect_eq(result->addr_format, BOLT_ADDRESS_FORMAT);
	cr_expect_eq(result->ep_attr->mem_tag_format, BOLT_TAG_FORMAT);
	cr_expect_null(result->fabric_attr->prov_name, "libfabric's core fills in prov_name");
}

Test(hints, empty_hints_match_the_whole_design)
{
	expect_accepted();
	cr_expect_eq(result->caps, BOLT_DESIGN_CAPS);
	cr_expect_eq(result->domain_attr->mr_mode, 0, "mr_mode 0 allows no mode");
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_SAFE);
	cr_expect_eq(result->domain_attr->av_type, FI_AV_UNSPEC);
	cr_expect_eq(result->tx_attr->size, BOLT_QUEUE_SIZE);
}

Test(hints, nccl_rdma_hints_rejected_for_hmem)
{
	consumer_hints_nccl_rdma(hints);
	cr_assert_eq(match(FI_VERSION(1, 18)), -FI_ENODATA);
}

Test(hints, nccl_rdma_hints_without_hmem)
{
	consumer_hints_nccl_rdma(hints);
	hints->caps &= ~FI_HMEM;
	cr_assert_eq(match(FI_VERSION(1, 18)), 0);
	cr_expect_eq(result->caps, FI_MSG | FI_RMA | FI_SEND | FI_RECV | ALL_RMA | ALL_COMM);
	cr_expect_eq(result->mode, 0, "bolt requires no mode");
	cr_expect_eq(result->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_VIRT_ADDR |
		     FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT, "no FI_MR_HMEM");
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_COMPLETION);
	cr_expect_eq(result->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	cr_expect_eq(result->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	cr_expect_eq(result->domain_attr->cq_data_size, 4);
	cr_expect_geq(result->domain_attr->mr_key_size, 2);
	cr_expect_eq(result->tx_attr->caps, FI_MSG | FI_RMA | FI_SEND | FI_READ | FI_WRITE);
	cr_expect_eq(result->rx_attr->caps, FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ |
		     FI_REMOTE_WRITE);
}

Test(hints, nccl_sendrecv_hints)
{
	consumer_hints_nccl_sendrecv(hints);
	cr_assert_eq(match(FI_VERSION(1, 6)), 0);
	cr_expect_eq(result->caps, FI_TAGGED | FI_MSG | FI_SEND | FI_RECV | ALL_COMM);
	cr_expect_eq(result->mode, 0);
	cr_expect_eq(result->domain_attr->mr_mode, hints->domain_attr->mr_mode);
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_SAFE);
	cr_expect_eq(result->tx_attr->msg_order & FI_ORDER_SAS, FI_ORDER_SAS);
	cr_expect_eq(result->rx_attr->msg_order & FI_ORDER_SAS, FI_ORDER_SAS);
}

Test(hints, nccl_sendrecv_hints_with_gpudirect_rejected)
{
	consumer_hints_nccl_sendrecv(hints);
	hints->caps |= FI_HMEM | FI_RMA | FI_READ;
	hints->domain_attr->mr_mode |= FI_MR_HMEM;
	cr_assert_eq(match(FI_VERSION(1, 18)), -FI_ENODATA);
}

Test(hints, open_mpi_hints)
{
	set_open_mpi_hints(hints);
	expect_accepted();
	cr_expect_eq(result->caps, FI_TAGGED | FI_DIRECTED_RECV | FI_SEND | FI_RECV | ALL_COMM);
	cr_expect_eq(result->domain_attr->mr_mode, 0, "bolt registers internally");
	cr_expect_eq(result->domain_attr->av_type, FI_AV_MAP);
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_DOMAIN);
	cr_expect_eq(result->domain_attr->resource_mgmt, FI_RM_ENABLED);
	cr_expect_eq(result->domain_attr->cq_data_size, 4);
	cr_expect_neq(result->ep_attr->mem_tag_format & (1ULL << 63), 0);
	cr_expect_eq(result->tx_attr->op_flags, FI_COMPLETION);
	cr_expect_eq(result->rx_attr->op_flags, FI_COMPLETION);
}

Test(hints, open_mpi_hints_at_api_1_0)
{
	set_open_mpi_hints(hints);
	hints->mode = FI_CONTEXT;
	cr_assert_eq(match(FI_VERSION(1, 0)), 0);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_BASIC, "0 meant basic or scalable");
}

Test(hints, fabtests_rdm_pingpong_hints)
{
	set_fabtests_rdm_pingpong_hints(hints);
	expect_accepted();
	cr_expect_eq(result->caps, FI_MSG | FI_SEND | FI_RECV | ALL_COMM);
	cr_expect_eq(result->mode, 0);
	cr_expect_eq(result->domain_attr->mr_mode, FABTESTS_MR_MODE);
	cr_expect_eq(result->domain_attr->threading, FI_THREAD_DOMAIN);
	cr_expect_eq(result->ep_attr->type, FI_EP_RDM);
}

Test(hints, fabtests_rdm_pingpong_with_every_mode)
{
	set_fabtests_rdm_pingpong_hints(hints);
	hints->mode = ~0ULL;
	expect_accepted();
	cr_expect_eq(result->mode, 0);
}

/* Without op_flags asked for, the defaults returned make no send an inject (limited to 4 KiB). */
Test(hints, no_hints_make_no_send_an_inject)
{
	fi_freeinfo(hints);
	hints = NULL;
	expect_accepted();
	cr_expect_eq(result->tx_attr->op_flags & FI_INJECT, 0);
	cr_expect_neq(result->tx_attr->op_flags & FI_COMPLETION, 0);
	fi_freeinfo(result);
	result = NULL;

	hints = fi_allocinfo();
	cr_assert_not_null(hints);
	free(hints->tx_attr);
	hints->tx_attr = NULL;
	expect_accepted();
	cr_expect_eq(result->tx_attr->op_flags & FI_INJECT, 0);
}

/* Asked for, it is the endpoint's default. */
Test(hints, inject_asked_for_is_the_default)
{
	hints->tx_attr->op_flags = FI_INJECT;
	expect_accepted();
	cr_expect_eq(result->tx_attr->op_flags, FI_INJECT);
}

Test(hints, fabtests_delivery_complete)
{
	set_fabtests_rdm_pingpong_hints(hints);
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	expect_accepted();
	cr_expect_eq(result->tx_attr->op_flags, FI_DELIVERY_COMPLETE);
}

Test(hints, fabtests_rma_bw_hints)
{
	set_fabtests_rma_bw_hints(hints);
	expect_accepted();
	cr_expect_eq(result->caps, FI_MSG | FI_RMA | FI_SEND | FI_RECV | ALL_RMA | ALL_COMM);
	cr_expect_eq(result->domain_attr->resource_mgmt, FI_RM_ENABLED);
}

Test(hints, fabtests_rma_bw_writedata_hints)
{
	set_fabtests_rma_bw_hints(hints);
	hints->caps |= FI_WRITE | FI_REMOTE_WRITE;
	hints->mode |= FI_RX_CQ_DATA;
	hints->domain_attr->cq_data_size = 4;
	expect_accepted();
	cr_expect_eq(result->caps, FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_WRITE |
		     FI_REMOTE_WRITE | ALL_COMM);
	cr_expect_eq(result->mode & FI_RX_CQ_DATA, 0, "never require FI_RX_CQ_DATA");
}

Test(hints, unspecified_endpoint_type_is_rdm)
{
	hints->ep_attr->type = FI_EP_UNSPEC;
	expect_accepted();
	cr_expect_eq(result->ep_attr->type, FI_EP_RDM);
}

Test(hints, msg_endpoint_rejected) { hints->ep_attr->type = FI_EP_MSG; expect_rejected(); }
Test(hints, dgram_endpoint_rejected) { hints->ep_attr->type = FI_EP_DGRAM; expect_rejected(); }
Test(hints, hmem_rejected) { hints->caps = FI_MSG | FI_HMEM; expect_rejected(); }
Test(hints, atomic_rejected) { hints->caps = FI_ATOMIC; expect_rejected(); }

Test(hints, unknown_secondary_caps_rejected)
{
	const uint64_t unsupported[] = {
		FI_MULTI_RECV, FI_SOURCE, FI_RMA_EVENT, FI_SHARED_AV, FI_TRIGGER, FI_FENCE,
		FI_SOURCE_ERR, FI_RMA_PMEM, FI_MULTICAST, FI_NAMED_RX_CTX, FI_VARIABLE_MSG,
		FI_AV_USER_ID,
	};

	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		/* libfabric 1.22 retired FI_VARIABLE_MSG: it is 0 there, which asks for nothing. */
		if (!unsupported[i])
			continue;
		hints->caps = FI_MSG | unsupported[i];
		cr_expect_eq(bolt_hints_check(provider, hints, API_VERSION), -FI_ENODATA,
			     "caps %s", fi_tostr(&unsupported[i], FI_TYPE_CAPS));
	}
}

Test(hints, caps_narrowed_to_what_is_asked)
{
	uint64_t offered = BOLT_DESIGN_CAPS;

	cr_expect_eq(bolt_hints_caps(offered, 0), offered);
	cr_expect_eq(bolt_hints_caps(offered, FI_MSG), FI_MSG | FI_SEND | FI_RECV | ALL_COMM);
	cr_expect_eq(bolt_hints_caps(offered, FI_MSG | FI_SEND), FI_MSG | FI_SEND | ALL_COMM);
	cr_expect_eq(bolt_hints_caps(offered, FI_RMA | FI_READ), FI_RMA | FI_READ | ALL_COMM);
	cr_expect_eq(bolt_hints_caps(offered, FI_TAGGED | FI_RMA),
		     FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | ALL_RMA | ALL_COMM);
	cr_expect_eq(bolt_hints_caps(offered, FI_COLLECTIVE | FI_MSG),
		     FI_COLLECTIVE | FI_MSG | FI_SEND | FI_RECV | ALL_COMM);
	cr_expect_eq(bolt_hints_caps(offered & ~ALL_COMM, FI_MSG), FI_MSG | FI_SEND | FI_RECV,
		     "only offered secondary caps are reported");
}

Test(hints, tx_rx_caps_keep_their_side)
{
	hints->caps = FI_MSG;
	hints->tx_attr->caps = FI_MSG | FI_SEND | FI_RECV | FI_LOCAL_COMM;
	expect_accepted();
	cr_expect_eq(result->tx_attr->caps, FI_MSG | FI_SEND);
	cr_expect_eq(result->rx_attr->caps, FI_MSG | FI_RECV);
}

Test(hints, application_without_modes_accepted)
{
	hints->caps = FI_TAGGED;
	hints->mode = 0;
	expect_accepted();
	cr_expect_eq(result->mode, 0);
}

Test(hints, required_mode_must_be_supported)
{
	provider->mode = FI_CONTEXT;
	hints->mode = FI_CONTEXT2;
	expect_rejected();
}

Test(hints, required_mode_returned)
{
	provider->mode = FI_CONTEXT;
	hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	expect_accepted();
	cr_expect_eq(result->mode, FI_CONTEXT);
}

Test(hints, tx_mode_defers_to_info_mode)
{
	provider->tx_attr->mode = FI_CONTEXT;
	hints->mode = FI_CONTEXT;
	expect_accepted();
	hints->tx_attr->mode = FI_CONTEXT2;
	fi_freeinfo(result);
	result = NULL;
	expect_rejected();
}

/* fi_mr(3) negotiation, API 1.5 and later. */
Test(hints, mr_mode_none)
{
	hints->domain_attr->mr_mode = 0;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, 0);
}

Test(hints, mr_mode_local_only)
{
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, FI_MR_LOCAL);
}

Test(hints, mr_mode_endpoint_only_where_allowed)
{
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY);
	fi_freeinfo(result);
	result = NULL;
	hints->domain_attr->mr_mode |= FI_MR_ENDPOINT;
	expect_accepted();
	cr_expect_neq(result->domain_attr->mr_mode & FI_MR_ENDPOINT, 0);
}

Test(hints, mr_mode_unneeded_bits_cleared)
{
	hints->domain_attr->mr_mode = FABTESTS_MR_MODE | FI_MR_RAW | FI_MR_MMU_NOTIFY |
				      FI_MR_RMA_EVENT | FI_MR_HMEM | FI_MR_COLLECTIVE;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, FABTESTS_MR_MODE);
}

Test(hints, mr_mode_basic_and_scalable_alone)
{
	hints->domain_attr->mr_mode = BOLT_MR_BASIC;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_BASIC);
	fi_freeinfo(result);
	result = NULL;
	hints->domain_attr->mr_mode = BOLT_MR_SCALABLE;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_SCALABLE);
}

Test(hints, mr_mode_basic_with_other_bits_rejected)
{
	hints->domain_attr->mr_mode = BOLT_MR_BASIC | FI_MR_LOCAL;
	expect_rejected();
}

Test(hints, mr_mode_without_domain_hints_is_everything)
{
	free(hints->domain_attr);
	hints->domain_attr = NULL;
	expect_accepted();
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_MODE_SUPPORTED);
}

/* fi_mr(3) negotiation before API 1.5: FI_MR_BASIC, FI_MR_SCALABLE, or 0 for either. */
Test(hints, old_api_mr_mode_unspecified_is_basic)
{
	hints->domain_attr->mr_mode = BOLT_MR_UNSPEC;
	cr_assert_eq(match(OLD_API_VERSION), 0);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_BASIC);
}

Test(hints, old_api_mr_mode_basic_and_scalable)
{
	hints->domain_attr->mr_mode = BOLT_MR_BASIC;
	cr_assert_eq(match(OLD_API_VERSION), 0);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_BASIC);
	fi_freeinfo(result);
	result = NULL;
	hints->domain_attr->mr_mode = BOLT_MR_SCALABLE;
	cr_assert_eq(match(OLD_API_VERSION), 0);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_SCALABLE);
}

Test(hints, old_api_mr_mode_new_bits_rejected)
{
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	cr_expect_eq(match(OLD_API_VERSION), -FI_ENODATA);
}

Test(hints, old_api_without_hints_is_basic)
{
	result = fi_dupinfo(provider);
	cr_assert_not_null(result);
	bolt_hints_narrow(result, NULL, OLD_API_VERSION);
	cr_expect_eq(result->domain_attr->mr_mode, BOLT_MR_BASIC);
}

Test(hints, every_threading_level_returned_as_asked)
{
	const enum fi_threading levels[] = {
		FI_THREAD_SAFE, FI_THREAD_FID, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
		FI_THREAD_ENDPOINT,
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		hints->domain_attr->threading = levels[i];
		expect_accepted();
		cr_expect_eq(result->domain_attr->threading, levels[i]);
		fi_freeinfo(result);
		result = NULL;
	}
}

Test(hints, unknown_threading_rejected)
{
	hints->domain_attr->threading = (enum fi_threading) 99;
	expect_rejected();
}

Test(hints, auto_control_progress_rejected)
{
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	expect_rejected();
}

Test(hints, auto_data_progress_rejected)
{
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	expect_rejected();
}

Test(hints, manual_progress_accepted)
{
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	expect_accepted();
	cr_expect_eq(result->domain_attr->data_progress, FI_PROGRESS_MANUAL);
}

Test(hints, av_types_returned_as_asked)
{
	hints->domain_attr->av_type = FI_AV_TABLE;
	expect_accepted();
	cr_expect_eq(result->domain_attr->av_type, FI_AV_TABLE);
	fi_freeinfo(result);
	result = NULL;
	hints->domain_attr->av_type = (enum fi_av_type) 7;
	expect_rejected();
}

Test(hints, resource_management_disabled_gets_enabled)
{
	hints->domain_attr->resource_mgmt = FI_RM_DISABLED;
	expect_accepted();
	cr_expect_eq(result->domain_attr->resource_mgmt, FI_RM_ENABLED);
}

Test(hints, sockaddr_format_rejected) { hints->addr_format = FI_SOCKADDR_IN; expect_rejected(); }
Test(hints, string_format_rejected) { hints->addr_format = FI_ADDR_STR; expect_rejected(); }

Test(hints, foreign_source_address_rejected)
{
	struct sockaddr_in socket_address = { .sin_family = AF_INET };

	hints->src_addr = malloc(sizeof(socket_address));
	cr_assert_not_null(hints->src_addr);
	memcpy(hints->src_addr, &socket_address, sizeof(socket_address));
	hints->src_addrlen = sizeof(socket_address);
	expect_rejected();
}

Test(hints, bolt_destination_address_accepted)
{
	/* Socket addresses come in a sockaddr_storage, as getsockname gives them. */
	struct sockaddr_storage storage = { .ss_family = AF_INET };
	struct bolt_address *address = malloc(sizeof(*address));

	cr_assert_not_null(address);
	((struct sockaddr_in *) &storage)->sin_port = htons(4242);
	cr_assert_eq(bolt_address_from_sockaddr((struct sockaddr *) &storage, 7, address), 0);
	cr_expect_eq(ntohl(address->endpoint_id), 7);
	hints->dest_addr = address;
	hints->dest_addrlen = sizeof(*address);
	expect_accepted();
	address->ip[15] = 1;    /* IPv4 leaves the rest of the field zero */
	cr_expect_eq(bolt_hints_check(provider, hints, API_VERSION), -FI_ENODATA);
}

Test(hints, domain_name_must_match)
{
	hints->domain_attr->name = strdup(DOMAIN_NAME);
	expect_accepted();
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("rdma_en9");
	fi_freeinfo(result);
	result = NULL;
	expect_rejected();
}

Test(hints, fabric_name_must_match)
{
	hints->fabric_attr->name = strdup(BOLT_FABRIC_NAME);
	expect_accepted();
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = strdup("IB-0xfe80000000000000");
	fi_freeinfo(result);
	result = NULL;
	expect_rejected();
}

Test(hints, provider_names)
{
	const char *accepted[] = { "bolt", "BOLT", "bolt;ofi_rxm", "ofi_rxm;bolt" };
	const char *rejected[] = { "verbs", "boltx", "bol", "shm;tcp" };

	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		hints->fabric_attr->prov_name = (char *) accepted[i];
		cr_expect_eq(bolt_hints_check(provider, hints, API_VERSION), 0, "%s", accepted[i]);
	}
	for (size_t i = 0; i < sizeof(rejected) / sizeof(rejected[0]); i++) {
		hints->fabric_attr->prov_name = (char *) rejected[i];
		cr_expect_eq(bolt_hints_check(provider, hints, API_VERSION), -FI_ENODATA,
			     "%s", rejected[i]);
	}
	hints->fabric_attr->prov_name = NULL;   /* a string literal: not fi_freeinfo's to free */
}

Test(hints, transmit_limits)
{
	hints->tx_attr->size = BOLT_QUEUE_SIZE + 1;
	expect_rejected();
	hints->tx_attr->size = 0;
	hints->tx_attr->inject_size = BOLT_INJECT_SIZE + 1;
	expect_rejected();
	hints->tx_attr->inject_size = 0;
	hints->tx_attr->iov_limit = BOLT_IOV_LIMIT + 1;
	expect_rejected();
	hints->tx_attr->iov_limit = 0;
	hints->tx_attr->rma_iov_limit = BOLT_RMA_IOV_LIMIT + 1;
	expect_rejected();
}

Test(hints, receive_limits)
{
	hints->rx_attr->size = BOLT_QUEUE_SIZE + 1;
	expect_rejected();
	hints->rx_attr->size = 0;
	hints->rx_attr->iov_limit = BOLT_IOV_LIMIT + 1;
	expect_rejected();
	hints->rx_attr->iov_limit = 0;
	hints->rx_attr->total_buffered_recv = 1;
	expect_rejected();
}

Test(hints, smaller_sizes_narrowed_to_the_hint)
{
	hints->tx_attr->size = 64;
	hints->tx_attr->inject_size = 128;
	hints->rx_attr->size = 32;
	hints->rx_attr->iov_limit = 1;
	expect_accepted();
	cr_expect_eq(result->tx_attr->size, 64);
	cr_expect_eq(result->tx_attr->inject_size, 128);
	cr_expect_eq(result->rx_attr->size, 32);
	cr_expect_eq(result->rx_attr->iov_limit, 1);
	cr_expect_eq(result->tx_attr->iov_limit, BOLT_IOV_LIMIT);
}

Test(hints, message_order_beyond_ours_rejected)
{
	hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
	expect_rejected();
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAW;
	expect_rejected();
	hints->rx_attr->msg_order = 0;
	hints->tx_attr->comp_order = BOLT_ORDER_STRICT;
	expect_rejected();
}

Test(hints, operation_flags_beyond_ours_rejected)
{
	hints->tx_attr->op_flags = FI_COMMIT_COMPLETE;
	expect_rejected();
	hints->tx_attr->op_flags = 0;
	hints->rx_attr->op_flags = FI_MULTI_RECV;
	expect_rejected();
}

Test(hints, cq_data_size)
{
	hints->domain_attr->cq_data_size = 4;
	expect_accepted();
	cr_expect_eq(result->domain_attr->cq_data_size, BOLT_CQ_DATA_SIZE);
	hints->domain_attr->cq_data_size = 8;
	fi_freeinfo(result);
	result = NULL;
	expect_rejected();
}

Test(hints, domain_limits)
{
	hints->domain_attr->mr_key_size = BOLT_MR_KEY_SIZE + 1;
	expect_rejected();
	hints->domain_attr->mr_key_size = 0;
	hints->domain_attr->mr_cnt = DESIGN_MR_COUNT + 1;
	expect_rejected();
	hints->domain_attr->mr_cnt = 0;
	hints->domain_attr->max_ep_tx_ctx = 2;
	expect_rejected();
	hints->domain_attr->max_ep_tx_ctx = 0;
	hints->domain_attr->caps = FI_SHARED_AV;
	expect_rejected();
}

Test(hints, endpoint_limits)
{
	hints->ep_attr->max_msg_size = BOLT_MAX_MSG_SIZE + 1;
	expect_rejected();
	hints->ep_attr->max_msg_size = 0;
	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	expect_rejected();
	hints->ep_attr->tx_ctx_cnt = 0;
	hints->ep_attr->rx_ctx_cnt = 2;
	expect_rejected();
	hints->ep_attr->rx_ctx_cnt = 0;
	hints->ep_attr->auth_key_size = 8;
	expect_rejected();
	hints->ep_attr->auth_key_size = 0;
	hints->ep_attr->protocol = FI_PROTO_RXM;
	expect_rejected();
}

Test(hints, rma_ordering_sizes_only_with_rma)
{
	hints->caps = FI_MSG;
	hints->ep_attr->max_order_waw_size = 64;
	expect_accepted();
	hints->caps = FI_MSG | FI_RMA;
	fi_freeinfo(result);
	result = NULL;
	expect_rejected();
}

Test(hints, mem_tag_format_within_ours)
{
	provider->ep_attr->mem_tag_format = 0x0000FFFFFFFFFFFFULL;
	hints->caps = FI_TAGGED;
	hints->ep_attr->mem_tag_format = OPEN_MPI_TAG_FORMAT;
	expect_rejected();
	hints->ep_attr->mem_tag_format = 0x00000000FFFFFFFFULL;
	expect_accepted();
	fi_freeinfo(result);
	result = NULL;
	hints->caps = FI_MSG;
	hints->ep_attr->mem_tag_format = OPEN_MPI_TAG_FORMAT;
	expect_accepted();
}
