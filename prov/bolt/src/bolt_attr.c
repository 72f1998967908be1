/*
 * bolt_attr.c: the static attributes fi_getinfo starts from, as the product's
 * design gives them. fi_getinfo copies them per device port, masks the
 * capabilities to what is implemented, then narrows them to the hints.
 */
#include "bolt.h"
#include "bolt_address.h"
#include "bolt_attr.h"
#include "bolt_fi_compat.h"

#define BOLT_TX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_COLLECTIVE | \
		      FI_SEND | FI_READ | FI_WRITE)
#define BOLT_RX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_COLLECTIVE | FI_DIRECTED_RECV | \
		      FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* Completion levels the protocols give, and FI_INJECT, which any send can honour. */
#define BOLT_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
			  FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define BOLT_RX_OP_FLAGS FI_COMPLETION

/*
 * Sends to one peer are matched in order (one control rail carries every
 * header); RMA is striped across data rails, so nothing else is ordered.
 */
#define BOLT_MSG_ORDER FI_ORDER_SAS

static struct fi_tx_attr bolt_tx_attr = {
	.caps = BOLT_TX_CAPS,
	.mode = 0,
	.op_flags = BOLT_TX_OP_FLAGS,
	.msg_order = BOLT_MSG_ORDER,
	.comp_order = BOLT_ORDER_NONE,
	.inject_size = BOLT_INJECT_SIZE,
	.size = BOLT_QUEUE_SIZE,
	.iov_limit = BOLT_IOV_LIMIT,
	.rma_iov_limit = BOLT_RMA_IOV_LIMIT,
};

static struct fi_rx_attr bolt_rx_attr = {
	.caps = BOLT_RX_CAPS,
	.mode = 0,
	.op_flags = BOLT_RX_OP_FLAGS,
	.msg_order = BOLT_MSG_ORDER,
	.comp_order = BOLT_ORDER_NONE,
	.total_buffered_recv = 0,
	.size = BOLT_QUEUE_SIZE,
	.iov_limit = BOLT_IOV_LIMIT,
};

static struct fi_ep_attr bolt_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = 1,
	.max_msg_size = BOLT_MAX_MSG_SIZE,
	.max_order_raw_size = 0,
	.max_order_war_size = 0,
	.max_order_waw_size = 0,
	.mem_tag_format = BOLT_TAG_FORMAT,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr bolt_domain_attr = {
	.name = NULL,                           /* the device port's, set per port */
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,         /* credit-based sends never overrun a peer */
	.av_type = FI_AV_UNSPEC,                /* both FI_AV_MAP and FI_AV_TABLE */
	.mr_mode = BOLT_MR_MODE_SUPPORTED,
	.mr_key_size = BOLT_MR_KEY_SIZE,
	.cq_data_size = BOLT_CQ_DATA_SIZE,
	.cq_cnt = 64,
	.ep_cnt = BOLT_ENDPOINT_COUNT,
	.tx_ctx_cnt = BOLT_ENDPOINT_COUNT,
	.rx_ctx_cnt = BOLT_ENDPOINT_COUNT,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 64,
	.mr_iov_limit = 1,
	.caps = BOLT_SECONDARY_CAPS,
	.mode = 0,
	.mr_cnt = 0,                            /* the device's budget, set per port */
};

static struct fi_fabric_attr bolt_fabric_attr = {
	.name = BOLT_FABRIC_NAME,
	/* prov_name stays NULL: libfabric's core fills it in and asserts it was empty. */
	.prov_version = BOLT_PROVIDER_VERSION,
};

static struct fi_info bolt_info_template = {
	.caps = BOLT_DESIGN_CAPS,
	.mode = 0,
	.addr_format = BOLT_ADDRESS_FORMAT,
	.tx_attr = &bolt_tx_attr,
	.rx_attr = &bolt_rx_attr,
	.ep_attr = &bolt_ep_attr,
	.domain_attr = &bolt_domain_attr,
	.fabric_attr = &bolt_fabric_attr,
};

struct fi_info *bolt_attr_info_dup(uint64_t caps_mask)
{
	struct fi_info *info = fi_dupinfo(&bolt_info_template);

	if (!info)
		return NULL;
	info->caps &= caps_mask;
	info->tx_attr->caps &= caps_mask;
	info->rx_attr->caps &= caps_mask;
	info->domain_attr->caps &= caps_mask;
	return info;
}
