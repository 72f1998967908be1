/*
 * bolt_rail_port.h: a device port whose queue pairs carry rails: the device
 * and port as probed, the budget bolt keeps within on it, its protection
 * domain and the completion queue its queue pairs share, where those queue
 * pairs sit (port, GID), and the registration cache for user memory moved
 * through it. A domain has its own port, for the control rail and its data
 * rails, and may have stripe ports: the host's other ports, over which
 * large transfers are striped to peers they reach (another cable, another
 * NIC). Registrations are per port: a key of one port means nothing on
 * another.
 */
#ifndef BOLT_RAIL_PORT_H
#define BOLT_RAIL_PORT_H

#include "device/bolt_device.h"
#include "device/bolt_device_probe.h"
#include "rails/bolt_mr_cache.h"
#include "rails/bolt_qp.h"

struct bolt_rail_port {
	struct bolt_device_report device;
	struct bolt_port_report port;
	struct bolt_device_budget budget;
	struct bolt_device_handle handle;
	struct bolt_qp_local qp_local;  /* port, GID index, path MTU */
	union ibv_gid gid;
	enum ibv_qp_type qp_type;       /* RC where the device has it, else UC */
	bool rdma_write;                /* the device carries RDMA write (probed at open) */
	int qp_count;                   /* queue pairs made on it, within budget.qp_budget */
	struct bolt_mr_cache *mr_cache; /* device MRs for user memory, under budget */
	struct ibv_mr *control_mr;      /* the domain's control buffers, registered here: links
					 * to peers only this port reaches use them; NULL: none */
	struct bolt_rail_port *next_claimed;    /* the process's claimed ports */
	bool down;                      /* the port's last asynchronous event said it is down */
	uint32_t state_changes;         /* port down and up events read */
};

/*
 * Opens port of device: its handle with a CQ of cq_size entries, the QP
 * type and RDMA write found by trying, and its registration cache. 0, or
 * -FI_ENODEV when the port accepts neither RC nor UC, or another negative
 * error code; nothing is left open on failure.
 */
int bolt_rail_port_open(struct bolt_verbs *verbs, const struct bolt_device_report *device,
			const struct bolt_port_report *port, int cq_size,
			struct bolt_rail_port *rail_port);
void bolt_rail_port_close(struct bolt_rail_port *rail_port);

/*
 * A domain's own port is claimed while the domain is open: no other domain
 * of the process stripes over it, since its queue pairs (Thunderbolt has
 * 10) are that domain's connections'. An application that opens a domain
 * per cable keeps each to its own.
 */
void bolt_rail_port_claim(struct bolt_rail_port *rail_port);
void bolt_rail_port_unclaim(struct bolt_rail_port *rail_port);
/* Whether another open domain of the process has this device port as its own. */
bool bolt_rail_port_claimed(const struct bolt_rail_port *rail_port);

/*
 * Reads the device's asynchronous events that are waiting, without waiting
 * (IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE for this port: down); true if
 * the port went down or came back.
 */
bool bolt_rail_port_read_events(struct bolt_rail_port *rail_port);

/* Whether the port has a queue pair to spare beyond reserve more. */
bool bolt_rail_port_has_qp(const struct bolt_rail_port *rail_port, int reserve);

#endif /* BOLT_RAIL_PORT_H */
