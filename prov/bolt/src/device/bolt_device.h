/*
 * bolt_device.h: what bolt knows about each verbs device and port: state,
 * transport, GID table and choice, limits and supported QP types. fi_getinfo
 * builds one fi_info per usable port from it; bolt_info prints it.
 */
#ifndef BOLT_DEVICE_H
#define BOLT_DEVICE_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "device/bolt_gid.h"
#include "verbs/bolt_verbs.h"

#define BOLT_DEVICE_MAX_PORTS 4
/* mlx5's RoCE tables hold 256 entries; rxe's 1024, filled from index 0 up. */
#define BOLT_DEVICE_MAX_GIDS 256

/* Apple's driver reports this transport type ("Thunderbolt (100)"). */
#define BOLT_TRANSPORT_THUNDERBOLT 100

struct bolt_port_report {
	uint8_t port_num;
	struct ibv_port_attr attr;
	int gid_count;                  /* entries read, at most BOLT_DEVICE_MAX_GIDS */
	struct bolt_gid_entry gids[BOLT_DEVICE_MAX_GIDS];
	int gid_status;                 /* 0, or why no GID could be chosen */
	struct bolt_gid_choice gid_choice;
	bool usable;                    /* active, with a chosen GID */
	char unusable_reason[160];
};

struct bolt_device_report {
	char name[IBV_SYSFS_NAME_MAX];
	int transport_type;
	struct ibv_device_attr attr;
	/* Found by trying (bolt_device_probe.h); attributes do not say. */
	bool qp_types_probed;
	bool rc_supported;
	bool uc_supported;
	bool rdma_write_probed;
	bool rdma_write_supported;
	char rdma_write_reason[96];
	int port_count;
	struct bolt_port_report ports[BOLT_DEVICE_MAX_PORTS];
};

/*
 * Reads every device of verbs. gid_override is FI_BOLT_GID_INDEX (-1: none).
 * 0 with *count possibly 0; a negative error code when verbs fails.
 */
int bolt_device_reports_create(struct bolt_verbs *verbs, int gid_override,
			       struct bolt_device_report **reports, int *count);
void bolt_device_reports_destroy(struct bolt_device_report *reports);

/* Registrations bolt itself keeps per device: its slab pools. */
#define BOLT_DEVICE_SLAB_MRS 4
/* Work requests bolt keeps outstanding per queue. */
#define BOLT_DEVICE_QUEUE_DEPTH 256
#define BOLT_DEVICE_THUNDERBOLT_QUEUE_DEPTH 32

/* What bolt does about a device's limits. */
struct bolt_device_budget {
	int slab_mr_count;      /* registrations of bolt's own slab pools */
	int user_mr_budget;     /* device MRs left for user registrations */
	int qp_budget;          /* queue pairs bolt may create on the device */
	int queue_depth;        /* outstanding work requests per queue */
};

void bolt_device_budget(const struct bolt_device_report *report, struct bolt_device_budget *budget);

/*
 * Data rails per connection (FI_BOLT_DATA_RAILS): requested when it is 0 or
 * more; by default (-1) one where the device has queue pairs to spare.
 */
#define BOLT_DEVICE_DATA_RAIL_MIN_QPS 64
int bolt_device_data_rails(const struct bolt_device_budget *budget, int requested);

/* A domain's name: the device's for port 1 ("rdma_en0"), with the port for others ("rdma_en0:2"). */
#define BOLT_DEVICE_DOMAIN_NAME_SIZE (IBV_SYSFS_NAME_MAX + 8)
void bolt_device_domain_name(const struct bolt_device_report *device,
			     const struct bolt_port_report *port, char *name, size_t size);
/* The usable device port a domain name stands for: 0 or -FI_ENODEV. */
int bolt_device_find_domain(const struct bolt_device_report *devices, int count,
			    const char *name, struct bolt_device_report *device,
			    struct bolt_port_report *port);

const char *bolt_device_transport_name(int transport_type);
const char *bolt_device_link_layer_name(uint8_t link_layer);
const char *bolt_device_port_state_name(enum ibv_port_state state);

#endif /* BOLT_DEVICE_H */
