/*
 * bolt_attr.h: the attributes fi_getinfo starts from: the product's design
 * (what bolt will offer once every layer is built) and the mask of what works
 * at this stage of the project.
 */
#ifndef BOLT_ATTR_H
#define BOLT_ATTR_H

#include <stdint.h>

#include <rdma/fabric.h>

#define BOLT_FABRIC_NAME "bolt"

/* Primary capabilities: each is returned only when asked for. */
#define BOLT_PRIMARY_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_COLLECTIVE | FI_DIRECTED_RECV)
/* Primary modifiers: restrict a primary capability to one direction. */
#define BOLT_MSG_DIRECTION_CAPS (FI_SEND | FI_RECV)
#define BOLT_RMA_DIRECTION_CAPS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* Secondary capabilities: cost nothing, so reported even when not asked for. */
#define BOLT_SECONDARY_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)

#define BOLT_DESIGN_CAPS (BOLT_PRIMARY_CAPS | BOLT_MSG_DIRECTION_CAPS | \
			  BOLT_RMA_DIRECTION_CAPS | BOLT_SECONDARY_CAPS)

/*
 * What bolt advertises today: fi_getinfo reports caps & BOLT_CAPS_IMPLEMENTED
 * and rejects hints asking for more. RDM endpoints carry messages, tagged
 * messages, RMA and collectives.
 */
#define BOLT_CAPS_IMPLEMENTED BOLT_DESIGN_CAPS

/*
 * Registration modes bolt can live with, any subset of them: it registers
 * internally what the application does not, and maps keys it did not choose.
 * fi_getinfo returns the intersection with what the hints allow.
 */
#define BOLT_MR_MODE_SUPPORTED (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | \
				FI_MR_PROV_KEY | FI_MR_ALLOCATED)

/* libfabric's FI_TAG_GENERIC (in its internal ofi.h): all 64 tag bits, bit 63 set. */
#define BOLT_TAG_FORMAT 0xAAAAAAAAAAAAAAAAULL

#define BOLT_MAX_MSG_SIZE (1ULL << 30)  /* SIZE_MAX overflows applications' arithmetic */
#define BOLT_INJECT_SIZE 4096           /* one eager slab buffer */
#define BOLT_QUEUE_SIZE 1024            /* software queues, above the device's */
#define BOLT_IOV_LIMIT 4
#define BOLT_RMA_IOV_LIMIT 1
#define BOLT_CQ_DATA_SIZE 4
#define BOLT_MR_KEY_SIZE 8
#define BOLT_ENDPOINT_COUNT 16          /* at most the device's queue pair budget */

/*
 * A copy of the design's fi_info with every caps field (info, tx, rx, domain)
 * limited to caps_mask: BOLT_CAPS_IMPLEMENTED for fi_getinfo, BOLT_DESIGN_CAPS
 * for tests of the matcher. The domain name and mr_cnt are left for the
 * caller, who knows the device. NULL when out of memory.
 */
struct fi_info *bolt_attr_info_dup(uint64_t caps_mask);

#endif /* BOLT_ATTR_H */
