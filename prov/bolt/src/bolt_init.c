/*
 * bolt_init.c: the provider object and the entry point libfabric calls when it
 * loads libbolt-fi.so.
 */
#include "bolt.h"
#include "bolt_getinfo.h"
#include "bolt_fabric.h"

struct fi_provider bolt_prov = {
	.name = BOLT_PROVIDER_NAME,
	.version = BOLT_PROVIDER_VERSION,
	.fi_version = BOLT_FI_VERSION,
	.getinfo = bolt_getinfo,
	.fabric = bolt_fabric_open,
	.cleanup = bolt_cleanup,
};
