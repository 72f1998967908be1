/*
 * bolt_fabric.c: the fabric object. Nothing can be opened from it until
 * endpoints exist, so for now it refuses plainly instead of returning a
 * fabric that fails later.
 */
#include "bolt.h"
#include "bolt_fabric.h"

int bolt_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	*fabric = NULL;
	FI_WARN(&bolt_prov, FI_LOG_FABRIC,
		"fabric %s: bolt has no endpoints yet, so it opens no fabric\n",
		attr && attr->name ? attr->name : "(unnamed)");
	return -FI_ENOSYS;
}
