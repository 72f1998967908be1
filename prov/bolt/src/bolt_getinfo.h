/*
 * bolt_getinfo.h: the provider's fi_getinfo and cleanup entry points.
 */
#ifndef BOLT_GETINFO_H
#define BOLT_GETINFO_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "bolt.h"
#include "bolt_address.h"
#include "device/bolt_device.h"

/*
 * One fi_info per usable device port that satisfies hints, narrowed to them.
 * node and service become dest_addr, or src_addr with FI_SOURCE. 0, or
 * -FI_ENODATA when nothing matches (no devices included), or another error.
 */
int bolt_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);

/* Undoes what fi_getinfo left behind when libfabric unloads the provider. */
void bolt_cleanup(void);

/*
 * node and service as a bolt address (endpoint id 0), through getaddrinfo:
 * FI_SOURCE resolves a local, passive address; FI_NUMERICHOST takes numeric
 * hosts only. -FI_ENODATA when they do not resolve.
 */
int bolt_getinfo_resolve(const char *node, const char *service, uint64_t flags,
			 struct bolt_address *address);

/*
 * Whether info is one fi_getinfo offers for the device port (narrowed to
 * hints or not): 0, else -FI_ENODATA with the reason logged (FI_INFO), as
 * for another provider's info or one asking for more than bolt does.
 */
int bolt_getinfo_check_offered(const struct bolt_device_report *device,
			       const struct bolt_port_report *port, const struct fi_info *info);

/*
 * Where an endpoint's side channel listens when the application names no
 * source: FI_BOLT_SIDE_CHANNEL_ADDRESS, else loopback on the software device,
 * else the address of the host's name, or, where that is loopback only, of an
 * interface that is up; port 0 (any), endpoint id 0. fi_getinfo reports it as
 * src_addr. -FI_EINVAL when it does not resolve.
 */
int bolt_getinfo_default_source(const struct bolt_params *params, bool software,
				struct bolt_address *address);

#endif /* BOLT_GETINFO_H */
