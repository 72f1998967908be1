/*
 * bolt_hints.c: fi_getinfo's hints matching, one small check per attribute
 * group, each a table of (field, bolt's value, the hint's value) that logs the
 * first field it rejects with both values; then the narrowing of an accepted
 * fi_info to what the hints ask. The rules are those of fi_getinfo(3),
 * fi_domain(3), fi_endpoint(3) and fi_mr(3): a zero hint is a wildcard,
 * except mode bits, where zero means the application supports none.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "bolt.h"
#include "bolt_address.h"
#include "bolt_attr.h"
#include "bolt_hints.h"
#include "bolt_fi_compat.h"

/*
 * Applications often copy their info caps into tx_attr and rx_attr; the bits
 * that belong to the other side, or to the domain, are ignored there.
 */
#define BOLT_RECEIVE_SIDE_CAPS (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | \
				FI_MULTI_RECV | FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT | \
				FI_VARIABLE_MSG)
#define BOLT_TRANSMIT_SIDE_CAPS (FI_SEND | FI_READ | FI_WRITE | FI_FENCE | FI_MULTICAST | \
				 FI_NAMED_RX_CTX)
#define BOLT_DOMAIN_SIDE_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)

/* What FI_MR_BASIC stands for (fi_mr(3)). */
#define BOLT_MR_BASIC_MODES (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

#define BOLT_TEXT_SIZE 512
#define BOLT_BIT(value) (1ULL << (value))

/* libfabric cannot print enum fi_resource_mgmt; bolt_text does. */
#define BOLT_TYPE_RESOURCE_MGMT ((enum fi_type) -1)

static const char *bolt_resource_mgmt_name(int value)
{
	switch (value) {
	case FI_RM_UNSPEC: return "FI_RM_UNSPEC";
	case FI_RM_DISABLED: return "FI_RM_DISABLED";
	case FI_RM_ENABLED: return "FI_RM_ENABLED";
	}
	return "Unknown";
}

/* Prints a libfabric value by its type; "none" for an empty set of flags. */
static const char *bolt_text(char *buffer, enum fi_type type, const void *value)
{
	if (type == BOLT_TYPE_RESOURCE_MGMT)
		snprintf(buffer, BOLT_TEXT_SIZE, "%s", bolt_resource_mgmt_name(*(const int *) value));
	else
		fi_tostr_r(buffer, BOLT_TEXT_SIZE, value, type);
	if (!buffer[0])
		snprintf(buffer, BOLT_TEXT_SIZE, "none");
	return buffer;
}

enum bolt_rule {
	BOLT_AT_MOST,           /* a size or count: the hint may not exceed bolt's */
	BOLT_SUBSET,            /* flags: bolt offers every one the hint asks */
	BOLT_REQUIRED_MODE,     /* mode bits: the hint supports every one bolt requires */
	BOLT_ONE_OF,            /* an enumeration: unspecified (0) or one bolt accepts */
};

struct bolt_check {
	const char *field;
	enum bolt_rule rule;
	enum fi_type type;      /* how to print the values, except BOLT_AT_MOST's */
	uint64_t offered;
	uint64_t requested;
	uint64_t accepted;      /* BOLT_ONE_OF: BOLT_BIT of each accepted value */
};

#define BOLT_LIMIT(field, offered, requested) \
	{ field, BOLT_AT_MOST, FI_TYPE_INFO, offered, requested, 0 }
#define BOLT_FLAGS(field, type, offered, requested) \
	{ field, BOLT_SUBSET, type, offered, requested, 0 }
#define BOLT_MODE(field, required, supported) \
	{ field, BOLT_REQUIRED_MODE, FI_TYPE_MODE, required, supported, 0 }
#define BOLT_CHOICE(field, type, offered, requested, accepted) \
	{ field, BOLT_ONE_OF, type, (uint64_t) (offered), (uint64_t) (requested), accepted }

static bool bolt_check_passes(const struct bolt_check *check)
{
	switch (check->rule) {
	case BOLT_AT_MOST:
		return check->requested <= check->offered;
	case BOLT_SUBSET:
		return !(check->requested & ~check->offered);
	case BOLT_REQUIRED_MODE:
		return !(check->offered & ~check->requested);
	case BOLT_ONE_OF:
		return !check->requested ||
		       (check->requested < 64 && (check->accepted & BOLT_BIT(check->requested)));
	}
	return false;
}

static void bolt_check_log(const struct bolt_check *check)
{
	char requested_text[BOLT_TEXT_SIZE], offered_text[BOLT_TEXT_SIZE];
	uint64_t missing = check->requested & ~check->offered;
	/* Enumerations are printed from an int, the size libfabric reads them at. */
	int requested_value = (int) check->requested, offered_value = (int) check->offered;

	switch (check->rule) {
	case BOLT_AT_MOST:
		FI_INFO(&bolt_prov, FI_LOG_CORE, "hints %s %" PRIu64 " exceeds bolt's %" PRIu64 "\n",
			check->field, check->requested, check->offered);
		break;
	case BOLT_SUBSET:
		FI_INFO(&bolt_prov, FI_LOG_CORE, "hints %s ask %s, which bolt does not offer (it offers %s)\n",
			check->field, bolt_text(requested_text, check->type, &missing),
			bolt_text(offered_text, check->type, &check->offered));
		break;
	case BOLT_REQUIRED_MODE:
		FI_INFO(&bolt_prov, FI_LOG_CORE, "hints %s %s lack what bolt requires: %s\n",
			check->field, bolt_text(requested_text, check->type, &check->requested),
			bolt_text(offered_text, check->type, &check->offered));
		break;
	case BOLT_ONE_OF:
		FI_INFO(&bolt_prov, FI_LOG_CORE, "hints %s %s (%d) is not supported: bolt offers %s\n",
			check->field, bolt_text(requested_text, check->type, &requested_value),
			requested_value, bolt_text(offered_text, check->type, &offered_value));
		break;
	}
}

static int bolt_run_checks(const struct bolt_check *checks, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (bolt_check_passes(&checks[i]))
			continue;
		bolt_check_log(&checks[i]);
		return -FI_ENODATA;
	}
	return 0;
}

#define BOLT_RUN_CHECKS(checks) bolt_run_checks(checks, BOLT_ARRAY_LENGTH(checks))

static int bolt_check_name(const char *field, const char *offered, const char *requested)
{
	if (!requested || (offered && !strcmp(offered, requested)))
		return 0;
	FI_INFO(&bolt_prov, FI_LOG_CORE, "hints %s \"%s\" does not name bolt's \"%s\"\n",
		field, requested, offered ? offered : "");
	return -FI_ENODATA;
}

/* The number of tag bits a mem_tag_format leaves to the application. */
static unsigned int bolt_tag_bits(uint64_t mem_tag_format)
{
	unsigned int bits = 0;

	for (; mem_tag_format; mem_tag_format >>= 1)
		bits++;
	return bits;
}

/* Why requested, an mr_mode as fi_mr(3) defines it for version, cannot be met; NULL if it can. */
static const char *bolt_mr_mode_problem(int requested, int offered, uint32_t version)
{
	if (requested == BOLT_MR_BASIC)
		return (offered & BOLT_MR_BASIC_MODES) == BOLT_MR_BASIC_MODES ? NULL :
		       "FI_MR_BASIC needs virtual addresses, allocated memory and provider keys";
	if (requested == BOLT_MR_SCALABLE)
		return NULL;
	if (requested & (BOLT_MR_BASIC | BOLT_MR_SCALABLE))
		return "FI_MR_BASIC and FI_MR_SCALABLE must be set alone";
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return "mr_mode bits other than FI_MR_BASIC and FI_MR_SCALABLE need API 1.5";
	return NULL;
}

/*
 * fi_mr(3)'s negotiation. Before API 1.5 an application knows only
 * FI_MR_BASIC and FI_MR_SCALABLE, 0 meaning either; bolt prefers basic, the
 * verbs model. From 1.5 it lists the mode bits it can live with, and bolt
 * keeps those it supports; FI_MR_BASIC or FI_MR_SCALABLE alone keep their
 * old meaning and are returned as they are.
 */
static int bolt_mr_mode_negotiate(int offered, const struct fi_info *hints, uint32_t version,
				  int *mr_mode)
{
	bool old_api = FI_VERSION_LT(version, FI_VERSION(1, 5));
	bool hinted = hints && hints->domain_attr;
	int requested = hinted ? hints->domain_attr->mr_mode : 0;
	bool basic_offered = (offered & BOLT_MR_BASIC_MODES) == BOLT_MR_BASIC_MODES;
	char requested_text[BOLT_TEXT_SIZE], offered_text[BOLT_TEXT_SIZE];
	const char *problem;

	if (old_api && requested == BOLT_MR_UNSPEC)
		requested = basic_offered ? BOLT_MR_BASIC : BOLT_MR_SCALABLE;
	else if (!old_api && !hinted)
		requested = offered;
	problem = bolt_mr_mode_problem(requested, offered, version);
	if (problem) {
		FI_INFO(&bolt_prov, FI_LOG_CORE,
			"hints domain_attr->mr_mode %s at API %u.%u: %s (bolt supports %s)\n",
			bolt_text(requested_text, FI_TYPE_MR_MODE, &requested),
			FI_MAJOR(version), FI_MINOR(version), problem,
			bolt_text(offered_text, FI_TYPE_MR_MODE, &offered));
		return -FI_ENODATA;
	}
	*mr_mode = (requested & (BOLT_MR_BASIC | BOLT_MR_SCALABLE)) ? requested : (requested & offered);
	return 0;
}

int bolt_hints_mr_mode_bits(int mr_mode)
{
	int bits = mr_mode & ~(BOLT_MR_BASIC | BOLT_MR_SCALABLE);

	return mr_mode & BOLT_MR_BASIC ? bits | BOLT_MR_BASIC_MODES : bits;
}

/* The endpoint type rules out most infos, so it is checked first. */
static int bolt_check_ep_type(const struct fi_info *provider, const struct fi_info *hints,
			      uint32_t version)
{
	const struct bolt_check checks[] = {
		BOLT_CHOICE("ep_attr->type", FI_TYPE_EP_TYPE, provider->ep_attr->type,
			    hints->ep_attr ? hints->ep_attr->type : FI_EP_UNSPEC,
			    BOLT_BIT(provider->ep_attr->type)),
	};

	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_caps(const struct fi_info *provider, const struct fi_info *hints,
			   uint32_t version)
{
	const struct bolt_check checks[] = {
		BOLT_FLAGS("caps", FI_TYPE_CAPS, provider->caps, hints->caps),
	};

	if ((hints->caps & FI_HMEM) && !(provider->caps & FI_HMEM)) {
		FI_INFO(&bolt_prov, FI_LOG_CORE,
			"hints caps ask FI_HMEM: bolt does not reach device (GPU) memory; "
			"ask again without FI_HMEM\n");
		return -FI_ENODATA;
	}
	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_mode(const struct fi_info *provider, const struct fi_info *hints,
			   uint32_t version)
{
	const struct bolt_check checks[] = {
		BOLT_MODE("mode", provider->mode, hints->mode),
	};

	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_address(const char *field, const void *address, size_t length)
{
	if (!address || bolt_address_is_valid(address, length))
		return 0;
	FI_INFO(&bolt_prov, FI_LOG_CORE,
		"hints %s (%zu bytes) is not a bolt address (version %d, %zu bytes)\n",
		field, length, BOLT_ADDRESS_VERSION, sizeof(struct bolt_address));
	return -FI_ENODATA;
}

static int bolt_check_addr(const struct fi_info *provider, const struct fi_info *hints,
			   uint32_t version)
{
	const struct bolt_check checks[] = {
		BOLT_CHOICE("addr_format", FI_TYPE_ADDR_FORMAT, provider->addr_format,
			    hints->addr_format, BOLT_BIT(provider->addr_format)),
	};

	if (BOLT_RUN_CHECKS(checks) ||
	    bolt_check_address("src_addr", hints->src_addr, hints->src_addrlen) ||
	    bolt_check_address("dest_addr", hints->dest_addr, hints->dest_addrlen))
		return -FI_ENODATA;
	return 0;
}

/* libfabric passes prov_name on, possibly a layering such as "bolt;ofi_rxm". */
static bool bolt_prov_name_names_bolt(const char *prov_name)
{
	size_t length = strlen(BOLT_PROVIDER_NAME);
	const char *name = prov_name;

	while (name) {
		if (!strncasecmp(name, BOLT_PROVIDER_NAME, length) &&
		    (name[length] == '\0' || name[length] == ';'))
			return true;
		name = strchr(name, ';');
		if (name)
			name++;
	}
	return false;
}

bool bolt_hints_name_bolt(const struct fi_info *hints)
{
	return hints && hints->fabric_attr && hints->fabric_attr->prov_name &&
	       bolt_prov_name_names_bolt(hints->fabric_attr->prov_name);
}

static int bolt_check_fabric(const struct fi_info *provider, const struct fi_info *hints,
			     uint32_t version)
{
	const struct fi_fabric_attr *offered = provider->fabric_attr;
	const struct fi_fabric_attr *requested = hints->fabric_attr;

	if (!requested)
		return 0;

	const struct bolt_check checks[] = {
		BOLT_LIMIT("fabric_attr->prov_version", offered->prov_version,
			   requested->prov_version),
	};

	if (requested->prov_name && !bolt_prov_name_names_bolt(requested->prov_name)) {
		FI_INFO(&bolt_prov, FI_LOG_CORE, "hints fabric_attr->prov_name \"%s\" does not name %s\n",
			requested->prov_name, BOLT_PROVIDER_NAME);
		return -FI_ENODATA;
	}
	if (bolt_check_name("fabric_attr->name", offered->name, requested->name))
		return -FI_ENODATA;
	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_domain(const struct fi_info *provider, const struct fi_info *hints,
			     uint32_t version)
{
	const struct fi_domain_attr *offered = provider->domain_attr;
	const struct fi_domain_attr *requested = hints->domain_attr;
	int mr_mode;

	if (!requested)
		return 0;

	/*
	 * A stronger threading level, or enabled resource management, serves a
	 * weaker request. cq_cnt, ep_cnt, tx_ctx_cnt and rx_ctx_cnt are optimal
	 * counts, not limits, so they are not checked.
	 */
	const struct bolt_check checks[] = {
		BOLT_CHOICE("domain_attr->threading", FI_TYPE_THREADING, offered->threading,
			    requested->threading,
			    BOLT_BIT(FI_THREAD_SAFE) | BOLT_BIT(FI_THREAD_FID) |
			    BOLT_BIT(FI_THREAD_DOMAIN) | BOLT_BIT(FI_THREAD_COMPLETION) |
			    BOLT_BIT(FI_THREAD_ENDPOINT)),
		BOLT_CHOICE("domain_attr->control_progress", FI_TYPE_PROGRESS,
			    offered->control_progress, requested->control_progress,
			    BOLT_BIT(offered->control_progress)),
		BOLT_CHOICE("domain_attr->data_progress", FI_TYPE_PROGRESS, offered->data_progress,
			    requested->data_progress, BOLT_BIT(offered->data_progress)),
		BOLT_CHOICE("domain_attr->resource_mgmt", BOLT_TYPE_RESOURCE_MGMT,
			    offered->resource_mgmt, requested->resource_mgmt,
			    BOLT_BIT(FI_RM_ENABLED) | BOLT_BIT(FI_RM_DISABLED)),
		BOLT_CHOICE("domain_attr->av_type", FI_TYPE_AV_TYPE, offered->av_type,
			    requested->av_type, offered->av_type == FI_AV_UNSPEC ?
			    BOLT_BIT(FI_AV_MAP) | BOLT_BIT(FI_AV_TABLE) : BOLT_BIT(offered->av_type)),
		BOLT_LIMIT("domain_attr->cq_data_size", offered->cq_data_size, requested->cq_data_size),
		BOLT_LIMIT("domain_attr->mr_key_size", offered->mr_key_size, requested->mr_key_size),
		BOLT_LIMIT("domain_attr->mr_iov_limit", offered->mr_iov_limit, requested->mr_iov_limit),
		BOLT_LIMIT("domain_attr->mr_cnt", offered->mr_cnt, requested->mr_cnt),
		BOLT_LIMIT("domain_attr->cntr_cnt", offered->cntr_cnt, requested->cntr_cnt),
		BOLT_LIMIT("domain_attr->max_err_data", offered->max_err_data, requested->max_err_data),
		BOLT_LIMIT("domain_attr->max_ep_tx_ctx", offered->max_ep_tx_ctx,
			   requested->max_ep_tx_ctx),
		BOLT_LIMIT("domain_attr->max_ep_rx_ctx", offered->max_ep_rx_ctx,
			   requested->max_ep_rx_ctx),
		BOLT_LIMIT("domain_attr->max_ep_stx_ctx", offered->max_ep_stx_ctx,
			   requested->max_ep_stx_ctx),
		BOLT_LIMIT("domain_attr->max_ep_srx_ctx", offered->max_ep_srx_ctx,
			   requested->max_ep_srx_ctx),
		BOLT_LIMIT("domain_attr->auth_key_size", offered->auth_key_size,
			   requested->auth_key_size),
		BOLT_FLAGS("domain_attr->caps", FI_TYPE_CAPS, offered->caps, requested->caps),
		BOLT_MODE("domain_attr->mode", offered->mode, requested->mode),
	};

	if (bolt_check_name("domain_attr->name", offered->name, requested->name) ||
	    BOLT_RUN_CHECKS(checks))
		return -FI_ENODATA;
	return bolt_mr_mode_negotiate(offered->mr_mode, hints, version, &mr_mode);
}

static int bolt_check_ep(const struct fi_info *provider, const struct fi_info *hints,
			 uint32_t version)
{
	const struct fi_ep_attr *offered = provider->ep_attr;
	const struct fi_ep_attr *requested = hints->ep_attr;

	if (!requested)
		return 0;

	/* Ordering sizes and tags matter only to the capabilities that use them. */
	bool rma = !hints->caps || (hints->caps & (FI_RMA | FI_ATOMIC));
	bool tagged = !hints->caps || (hints->caps & FI_TAGGED);
	const struct bolt_check checks[] = {
		BOLT_CHOICE("ep_attr->protocol", FI_TYPE_PROTOCOL, offered->protocol,
			    requested->protocol, BOLT_BIT(offered->protocol)),
		BOLT_LIMIT("ep_attr->protocol_version", offered->protocol_version,
			   requested->protocol_version),
		BOLT_LIMIT("ep_attr->max_msg_size", offered->max_msg_size, requested->max_msg_size),
		BOLT_LIMIT("ep_attr->tx_ctx_cnt", provider->domain_attr->max_ep_tx_ctx,
			   requested->tx_ctx_cnt),
		BOLT_LIMIT("ep_attr->rx_ctx_cnt", provider->domain_attr->max_ep_rx_ctx,
			   requested->rx_ctx_cnt),
		BOLT_LIMIT("ep_attr->auth_key_size", offered->auth_key_size, requested->auth_key_size),
		BOLT_LIMIT("ep_attr->max_order_raw_size", offered->max_order_raw_size,
			   rma ? requested->max_order_raw_size : 0),
		BOLT_LIMIT("ep_attr->max_order_war_size", offered->max_order_war_size,
			   rma ? requested->max_order_war_size : 0),
		BOLT_LIMIT("ep_attr->max_order_waw_size", offered->max_order_waw_size,
			   rma ? requested->max_order_waw_size : 0),
		BOLT_LIMIT("ep_attr->mem_tag_format (tag bits)", bolt_tag_bits(offered->mem_tag_format),
			   tagged ? bolt_tag_bits(requested->mem_tag_format) : 0),
	};

	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_tx(const struct fi_info *provider, const struct fi_info *hints,
			 uint32_t version)
{
	const struct fi_tx_attr *offered = provider->tx_attr;
	const struct fi_tx_attr *requested = hints->tx_attr;

	if (!requested)
		return 0;

	/* A zero tx mode defers to the info's mode. tclass is a wish bolt may ignore. */
	const struct bolt_check checks[] = {
		BOLT_FLAGS("tx_attr->caps", FI_TYPE_CAPS, offered->caps,
			   requested->caps & ~(BOLT_RECEIVE_SIDE_CAPS | BOLT_DOMAIN_SIDE_CAPS)),
		BOLT_MODE("tx_attr->mode", offered->mode,
			  requested->mode ? requested->mode : hints->mode),
		BOLT_FLAGS("tx_attr->op_flags", FI_TYPE_OP_FLAGS, offered->op_flags,
			   requested->op_flags),
		BOLT_FLAGS("tx_attr->msg_order", FI_TYPE_MSG_ORDER, offered->msg_order,
			   requested->msg_order),
		BOLT_FLAGS("tx_attr->comp_order", FI_TYPE_MSG_ORDER, offered->comp_order,
			   requested->comp_order),
		BOLT_LIMIT("tx_attr->inject_size", offered->inject_size, requested->inject_size),
		BOLT_LIMIT("tx_attr->size", offered->size, requested->size),
		BOLT_LIMIT("tx_attr->iov_limit", offered->iov_limit, requested->iov_limit),
		BOLT_LIMIT("tx_attr->rma_iov_limit", offered->rma_iov_limit, requested->rma_iov_limit),
	};

	return BOLT_RUN_CHECKS(checks);
}

static int bolt_check_rx(const struct fi_info *provider, const struct fi_info *hints,
			 uint32_t version)
{
	const struct fi_rx_attr *offered = provider->rx_attr;
	const struct fi_rx_attr *requested = hints->rx_attr;

	if (!requested)
		return 0;

	/* A zero rx mode defers to the info's mode. */
	const struct bolt_check checks[] = {
		BOLT_FLAGS("rx_attr->caps", FI_TYPE_CAPS, offered->caps,
			   requested->caps & ~(BOLT_TRANSMIT_SIDE_CAPS | BOLT_DOMAIN_SIDE_CAPS)),
		BOLT_MODE("rx_attr->mode", offered->mode,
			  requested->mode ? requested->mode : hints->mode),
		BOLT_FLAGS("rx_attr->op_flags", FI_TYPE_OP_FLAGS, offered->op_flags,
			   requested->op_flags),
		BOLT_FLAGS("rx_attr->msg_order", FI_TYPE_MSG_ORDER, offered->msg_order,
			   requested->msg_order),
		BOLT_FLAGS("rx_attr->comp_order", FI_TYPE_MSG_ORDER, offered->comp_order,
			   requested->comp_order),
		BOLT_LIMIT("rx_attr->total_buffered_recv", offered->total_buffered_recv,
			   requested->total_buffered_recv),
		BOLT_LIMIT("rx_attr->size", offered->size, requested->size),
		BOLT_LIMIT("rx_attr->iov_limit", offered->iov_limit, requested->iov_limit),
	};

	return BOLT_RUN_CHECKS(checks);
}

typedef int (*bolt_group_check)(const struct fi_info *provider, const struct fi_info *hints,
				uint32_t version);

static const bolt_group_check bolt_group_checks[] = {
	bolt_check_ep_type, bolt_check_caps, bolt_check_mode, bolt_check_addr,
	bolt_check_fabric, bolt_check_domain, bolt_check_ep, bolt_check_tx, bolt_check_rx,
};

int bolt_hints_check(const struct fi_info *provider_info, const struct fi_info *hints,
		     uint32_t version)
{
	if (!hints)
		return 0;
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(bolt_group_checks); i++)
		if (bolt_group_checks[i](provider_info, hints, version))
			return -FI_ENODATA;
	return 0;
}

uint64_t bolt_hints_caps(uint64_t offered, uint64_t requested)
{
	uint64_t caps;

	if (!requested)
		return offered;
	caps = requested & (BOLT_PRIMARY_CAPS | BOLT_MSG_DIRECTION_CAPS | BOLT_RMA_DIRECTION_CAPS);
	/* A primary capability without modifiers means every direction (fi_getinfo(3)). */
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & BOLT_MSG_DIRECTION_CAPS))
		caps |= BOLT_MSG_DIRECTION_CAPS;
	if ((caps & FI_RMA) && !(caps & BOLT_RMA_DIRECTION_CAPS))
		caps |= BOLT_RMA_DIRECTION_CAPS;
	return (caps | BOLT_SECONDARY_CAPS) & offered;
}

static void bolt_narrow_caps(struct fi_info *info, const struct fi_info *hints)
{
	uint64_t requested = hints->caps;

	info->caps = bolt_hints_caps(info->caps, requested);
	info->tx_attr->caps = bolt_hints_caps(info->tx_attr->caps,
		hints->tx_attr && hints->tx_attr->caps ? hints->tx_attr->caps : requested);
	info->rx_attr->caps = bolt_hints_caps(info->rx_attr->caps,
		hints->rx_attr && hints->rx_attr->caps ? hints->rx_attr->caps : requested);
	if (hints->domain_attr)
		info->domain_attr->caps = bolt_hints_caps(info->domain_attr->caps,
							  hints->domain_attr->caps);
}

/* Mode bits left set are those bolt requires; the check made sure the application supports them. */
static void bolt_narrow_mode(struct fi_info *info, const struct fi_info *hints)
{
	info->mode &= hints->mode;
	if (hints->tx_attr)
		info->tx_attr->mode &= hints->tx_attr->mode ? hints->tx_attr->mode : hints->mode;
	if (hints->rx_attr)
		info->rx_attr->mode &= hints->rx_attr->mode ? hints->rx_attr->mode : hints->mode;
}

static void bolt_narrow_domain(struct fi_domain_attr *attr, const struct fi_domain_attr *hints)
{
	if (!hints)
		return;
	if (hints->threading)
		attr->threading = hints->threading;
	if (hints->control_progress)
		attr->control_progress = hints->control_progress;
	if (hints->data_progress)
		attr->data_progress = hints->data_progress;
	if (hints->av_type)
		attr->av_type = hints->av_type;
}

/*
 * Sizes shrink to what was asked, so endpoints allocate no more than that.
 * With none asked for, the op_flags returned are the endpoint's defaults:
 * FI_INJECT is offered, not a default, or every send would be an inject.
 */
static void bolt_narrow_tx(struct fi_tx_attr *attr, const struct fi_tx_attr *hints)
{
	if (!hints) {
		attr->op_flags &= ~(uint64_t) FI_INJECT;
		return;
	}
	attr->op_flags = hints->op_flags;
	if (hints->inject_size)
		attr->inject_size = hints->inject_size;
	if (hints->size)
		attr->size = hints->size;
	if (hints->iov_limit)
		attr->iov_limit = hints->iov_limit;
	if (hints->rma_iov_limit)
		attr->rma_iov_limit = hints->rma_iov_limit;
}

static void bolt_narrow_rx(struct fi_rx_attr *attr, const struct fi_rx_attr *hints)
{
	if (!hints)
		return;
	attr->op_flags = hints->op_flags;
	attr->total_buffered_recv = hints->total_buffered_recv;
	if (hints->size)
		attr->size = hints->size;
	if (hints->iov_limit)
		attr->iov_limit = hints->iov_limit;
}

void bolt_hints_narrow(struct fi_info *info, const struct fi_info *hints, uint32_t version)
{
	int mr_mode;

	if (!bolt_mr_mode_negotiate(info->domain_attr->mr_mode, hints, version, &mr_mode))
		info->domain_attr->mr_mode = mr_mode;
	if (!hints) {
		bolt_narrow_tx(info->tx_attr, NULL);
		return;
	}
	bolt_narrow_caps(info, hints);
	bolt_narrow_mode(info, hints);
	bolt_narrow_domain(info->domain_attr, hints->domain_attr);
	bolt_narrow_tx(info->tx_attr, hints->tx_attr);
	bolt_narrow_rx(info->rx_attr, hints->rx_attr);
	/* fi_getinfo(3): a passive endpoint given as hints->handle is passed on. */
	info->handle = hints->handle;
}
