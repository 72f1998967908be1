/*
 * bolt_device.c: reads what bolt needs to know of every verbs device and port
 * (attributes, state, GID table, the GID choice) into plain reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/bolt_device.h"

const char *bolt_device_transport_name(int transport_type)
{
	switch (transport_type) {
	case IBV_TRANSPORT_IB: return "InfiniBand";
	case IBV_TRANSPORT_IWARP: return "iWARP";
	case IBV_TRANSPORT_USNIC: return "usNIC";
	case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
	case BOLT_TRANSPORT_THUNDERBOLT: return "Thunderbolt";
	}
	return "unknown";
}

const char *bolt_device_link_layer_name(uint8_t link_layer)
{
	switch (link_layer) {
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	}
	return "unspecified";
}

const char *bolt_device_port_state_name(enum ibv_port_state state)
{
	switch (state) {
	case IBV_PORT_NOP: return "NOP";
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	}
	return "unknown";
}

/* Entries that cannot be read count as zero: real drivers fail on empty slots. */
static void bolt_port_read_gids(struct bolt_verbs *verbs, struct ibv_context *context,
				struct bolt_port_report *port)
{
	int length = port->attr.gid_tbl_len;

	port->gid_count = length < BOLT_DEVICE_MAX_GIDS ? length : BOLT_DEVICE_MAX_GIDS;
	for (int index = 0; index < port->gid_count; index++) {
		struct bolt_gid_entry *entry = &port->gids[index];
		enum ibv_gid_type type;

		if (verbs->query_gid(context, port->port_num, index, &entry->gid))
			memset(&entry->gid, 0, sizeof(entry->gid));
		entry->type = verbs->query_gid_type(context, port->port_num, index, &type) ?
			      BOLT_GID_TYPE_UNKNOWN : (int) type;
	}
}

static void bolt_port_warn_no_gid(const char *device_name, const struct bolt_port_report *port,
				  int override_index)
{
	char text[BOLT_GID_TEXT_SIZE];

	if (override_index >= 0)
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"%s port %u: FI_BOLT_GID_INDEX=%d is not a non-zero entry of its %d-entry GID table\n",
			device_name, port->port_num, override_index, port->gid_count);
	else
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"%s port %u: no usable GID in its %d-entry GID table:\n",
			device_name, port->port_num, port->gid_count);
	for (int index = 0; index < port->gid_count; index++) {
		bolt_gid_format(&port->gids[index].gid, text, sizeof(text));
		FI_WARN(&bolt_prov, FI_LOG_CORE, "  GID[%d] %s (%s, %s)\n", index, text,
			bolt_gid_kind_name(bolt_gid_kind(&port->gids[index].gid)),
			bolt_gid_type_name(port->gids[index].type));
	}
}

static int bolt_port_report_read(struct bolt_verbs *verbs, struct ibv_context *context,
				 const char *device_name, uint8_t port_num, int gid_override,
				 struct bolt_port_report *port)
{
	int ret;

	port->port_num = port_num;
	ret = verbs->query_port(context, port_num, &port->attr);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "%s port %u: query_port failed: %s\n",
			device_name, port_num, strerror(ret));
		return -FI_EIO;
	}
	bolt_port_read_gids(verbs, context, port);
	port->gid_status = bolt_gid_select(port->gids, port->gid_count, gid_override,
					   &port->gid_choice);
	if (port->gid_status)
		bolt_port_warn_no_gid(device_name, port, gid_override);
	if (port->gid_status && gid_override >= 0)
		snprintf(port->unusable_reason, sizeof(port->unusable_reason),
			 "FI_BOLT_GID_INDEX=%d names no usable GID", gid_override);
	else if (port->gid_status)
		snprintf(port->unusable_reason, sizeof(port->unusable_reason),
			 "no usable GID in the GID table");
	else if (port->attr.state != IBV_PORT_ACTIVE)
		snprintf(port->unusable_reason, sizeof(port->unusable_reason),
			 "port state is %s", bolt_device_port_state_name(port->attr.state));
	else
		port->usable = true;
	return 0;
}

static int bolt_device_report_read(struct bolt_verbs *verbs, struct ibv_device *device,
				   int gid_override, struct bolt_device_report *report)
{
	struct ibv_context *context;
	int ret;

	snprintf(report->name, sizeof(report->name), "%s", verbs->get_device_name(device));
	report->transport_type = device->transport_type;
	context = verbs->open_device(device);
	if (!context) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "%s: open_device failed: %s\n",
			report->name, strerror(errno));
		return -FI_EIO;
	}
	ret = verbs->query_device(context, &report->attr);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "%s: query_device failed: %s\n",
			report->name, strerror(ret));
		ret = -FI_EIO;
		goto close;
	}
	report->port_count = report->attr.phys_port_cnt < BOLT_DEVICE_MAX_PORTS ?
			     report->attr.phys_port_cnt : BOLT_DEVICE_MAX_PORTS;
	for (int i = 0; i < report->port_count; i++) {
		ret = bolt_port_report_read(verbs, context, report->name, (uint8_t) (i + 1),
					    gid_override, &report->ports[i]);
		if (ret)
			goto close;
	}
close:
	verbs->close_device(context);
	return ret;
}

int bolt_device_reports_create(struct bolt_verbs *verbs, int gid_override,
			       struct bolt_device_report **reports, int *count)
{
	struct ibv_device **devices;
	int device_count = 0;
	int ret = 0;

	*reports = NULL;
	*count = 0;
	devices = verbs->get_device_list(&device_count);
	if (!devices) {
		/* No kernel support or no devices: nothing to report, not an error. */
		FI_INFO(&bolt_prov, FI_LOG_CORE, "%s lists no devices: %s\n",
			verbs->name, strerror(errno));
		return 0;
	}
	if (device_count > 0) {
		*reports = calloc((size_t) device_count, sizeof(**reports));
		if (!*reports) {
			ret = -FI_ENOMEM;
			goto free_list;
		}
	}
	for (int i = 0; i < device_count; i++) {
		/* A device that cannot be read is skipped; the others still count. */
		if (!bolt_device_report_read(verbs, devices[i], gid_override,
					     &(*reports)[*count]))
			(*count)++;
		else
			memset(&(*reports)[*count], 0, sizeof(**reports));
	}
free_list:
	verbs->free_device_list(devices);
	return ret;
}

void bolt_device_reports_destroy(struct bolt_device_report *reports)
{
	free(reports);
}

void bolt_device_domain_name(const struct bolt_device_report *device,
			     const struct bolt_port_report *port, char *name, size_t size)
{
	if (port->port_num == 1)
		snprintf(name, size, "%s", device->name);
	else
		snprintf(name, size, "%s:%u", device->name, port->port_num);
}

int bolt_device_find_domain(const struct bolt_device_report *devices, int count,
			    const char *name, struct bolt_device_report *device,
			    struct bolt_port_report *port)
{
	char candidate[BOLT_DEVICE_DOMAIN_NAME_SIZE];

	for (int i = 0; i < count; i++) {
		for (int j = 0; j < devices[i].port_count; j++) {
			if (!devices[i].ports[j].usable)
				continue;
			bolt_device_domain_name(&devices[i], &devices[i].ports[j], candidate,
						sizeof(candidate));
			if (strcmp(candidate, name))
				continue;
			*device = devices[i];
			*port = devices[i].ports[j];
			return 0;
		}
	}
	return -FI_ENODEV;
}

void bolt_device_budget(const struct bolt_device_report *report, struct bolt_device_budget *budget)
{
	int max_mr = report->attr.max_mr;
	bool thunderbolt = report->transport_type == BOLT_TRANSPORT_THUNDERBOLT;

	budget->slab_mr_count = BOLT_DEVICE_SLAB_MRS;
	budget->user_mr_budget = max_mr > BOLT_DEVICE_SLAB_MRS ? max_mr - BOLT_DEVICE_SLAB_MRS : 0;
	budget->qp_budget = report->attr.max_qp;
	/* Apple's driver reports more than it accepts; past 63 posting fails. */
	budget->queue_depth = thunderbolt ? BOLT_DEVICE_THUNDERBOLT_QUEUE_DEPTH :
			      report->attr.max_qp_wr < BOLT_DEVICE_QUEUE_DEPTH ?
			      report->attr.max_qp_wr : BOLT_DEVICE_QUEUE_DEPTH;
}

/*
 * A device's queue pairs are shared by every process on it, and a domain
 * cannot see how many the others hold: data rails are only made by default
 * where the device has plenty, never where connections need them all
 * (Thunderbolt's 10).
 */
int bolt_device_data_rails(const struct bolt_device_budget *budget, int requested)
{
	if (requested >= 0)
		return requested;
	return budget->qp_budget >= BOLT_DEVICE_DATA_RAIL_MIN_QPS ? 1 : 0;
}
