/*
 * fi_ext_bolt.h: bolt's public extension to libfabric: what applications may
 * use beyond the standard API when they run on the bolt provider.
 */
#ifndef FI_EXT_BOLT_H
#define FI_EXT_BOLT_H

/* The name to select bolt with, as in FI_PROVIDER=bolt or hints->fabric_attr->prov_name. */
#define FI_BOLT_PROVIDER_NAME "bolt"

/* bolt's endpoint names are at most this long (NCCL plugins require <= 56). */
#define FI_BOLT_MAX_NAME_LENGTH 56

#endif /* FI_EXT_BOLT_H */
