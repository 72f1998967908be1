/*
 * consumer_hints.h: the fi_getinfo hints third-party consumers ask bolt with,
 * as their sources set them, for the tests that check bolt's answer.
 */
#ifndef CONSUMER_HINTS_H
#define CONSUMER_HINTS_H

#include <rdma/fabric.h>

/* aws-ofi-nccl's RDMA protocol (nccl_ofi_rdma.cpp, get_hints), with GPUDirect: FI_HMEM. */
void consumer_hints_nccl_rdma(struct fi_info *hints);
/* aws-ofi-nccl's send/recv protocol (nccl_ofi_sendrecv.cpp), without GPUDirect. */
void consumer_hints_nccl_sendrecv(struct fi_info *hints);

#endif /* CONSUMER_HINTS_H */
