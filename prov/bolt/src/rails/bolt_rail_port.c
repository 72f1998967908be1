/*
 * bolt_rail_port.c: opening and closing a device port for rails (see
 * bolt_rail_port.h): handle, probe, registration cache, in that order; and
 * the process-wide list of ports that are some domain's own.
 */
#include <pthread.h>
#include <string.h>
#include <utlist.h>

#include "bolt.h"
#include "rails/bolt_rail_port.h"

/* RC where the device has it, for its retries; UC otherwise (Thunderbolt). */
static int bolt_rail_port_probe(struct bolt_rail_port *rail_port)
{
	bolt_device_probe_qp_types(&rail_port->handle, &rail_port->device);
	if (!rail_port->device.rc_supported && !rail_port->device.uc_supported) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s accepts neither RC nor UC queue pairs\n",
			rail_port->device.name);
		return -FI_ENODEV;
	}
	rail_port->qp_type = rail_port->device.rc_supported ? IBV_QPT_RC : IBV_QPT_UC;
	bolt_device_probe_rdma_write(&rail_port->handle, &rail_port->device, &rail_port->port,
				     rail_port->qp_type);
	rail_port->rdma_write = rail_port->device.rdma_write_supported;
	return 0;
}

int bolt_rail_port_open(struct bolt_verbs *verbs, const struct bolt_device_report *device,
			const struct bolt_port_report *port, int cq_size,
			struct bolt_rail_port *rail_port)
{
	int ret;

	memset(rail_port, 0, sizeof(*rail_port));
	rail_port->device = *device;
	rail_port->port = *port;
	bolt_device_budget(device, &rail_port->budget);
	rail_port->qp_local.port_num = port->port_num;
	rail_port->qp_local.gid_index = port->gid_choice.index;
	rail_port->qp_local.path_mtu = port->attr.active_mtu;
	rail_port->gid = port->gids[port->gid_choice.index].gid;

	ret = bolt_device_handle_open(verbs, device->name, cq_size, &rail_port->handle);
	if (ret)
		return ret;
	ret = bolt_rail_port_probe(rail_port);
	if (!ret)
		ret = bolt_mr_cache_create(verbs, rail_port->handle.pd, rail_port->budget.user_mr_budget,
					   IBV_ACCESS_LOCAL_WRITE, &rail_port->mr_cache);
	if (ret)
		bolt_device_handle_close(&rail_port->handle);
	return ret;
}

void bolt_rail_port_close(struct bolt_rail_port *rail_port)
{
	bolt_mr_cache_destroy(rail_port->mr_cache);
	bolt_device_handle_close(&rail_port->handle);
}

bool bolt_rail_port_has_qp(const struct bolt_rail_port *rail_port, int reserve)
{
	return rail_port->qp_count + reserve < rail_port->budget.qp_budget;
}

static pthread_mutex_t bolt_rail_port_claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bolt_rail_port *bolt_rail_port_claims;

void bolt_rail_port_claim(struct bolt_rail_port *rail_port)
{
	pthread_mutex_lock(&bolt_rail_port_claims_lock);
	LL_PREPEND2(bolt_rail_port_claims, rail_port, next_claimed);
	pthread_mutex_unlock(&bolt_rail_port_claims_lock);
}

void bolt_rail_port_unclaim(struct bolt_rail_port *rail_port)
{
	pthread_mutex_lock(&bolt_rail_port_claims_lock);
	LL_DELETE2(bolt_rail_port_claims, rail_port, next_claimed);
	pthread_mutex_unlock(&bolt_rail_port_claims_lock);
}

bool bolt_rail_port_claimed(const struct bolt_rail_port *rail_port)
{
	struct bolt_rail_port *claimed;
	bool found = false;

	pthread_mutex_lock(&bolt_rail_port_claims_lock);
	LL_FOREACH2(bolt_rail_port_claims, claimed, next_claimed)
		if (claimed != rail_port && claimed->port.port_num == rail_port->port.port_num &&
		    !strcmp(claimed->device.name, rail_port->device.name))
			found = true;
	pthread_mutex_unlock(&bolt_rail_port_claims_lock);
	return found;
}

bool bolt_rail_port_read_events(struct bolt_rail_port *rail_port)
{
	struct bolt_verbs *verbs = rail_port->handle.verbs;
	struct ibv_async_event event;
	bool was_down = rail_port->down;

	if (!rail_port->handle.context || !verbs->get_async_event)
		return false;
	while (!verbs->get_async_event(rail_port->handle.context, &event)) {
		bool port_event = event.event_type == IBV_EVENT_PORT_ERR ||
				  event.event_type == IBV_EVENT_PORT_ACTIVE;

		if (port_event && event.element.port_num == rail_port->port.port_num) {
			rail_port->down = event.event_type == IBV_EVENT_PORT_ERR;
			rail_port->state_changes++;
			FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "%s:%u: port %s\n", rail_port->device.name,
				rail_port->port.port_num, rail_port->down ? "down" : "active again");
		}
		verbs->ack_async_event(&event);
	}
	return was_down != rail_port->down;
}
