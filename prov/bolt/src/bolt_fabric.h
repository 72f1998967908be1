/*
 * bolt_fabric.h: the fabric object, what fi_fabric opens from an fi_info that
 * fi_getinfo returned.
 */
#ifndef BOLT_FABRIC_H
#define BOLT_FABRIC_H

#include <rdma/fabric.h>

int bolt_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

#endif /* BOLT_FABRIC_H */
