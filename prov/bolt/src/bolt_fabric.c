/*
 * bolt_fabric.c: the fabric object: the provider's parameters as read when it
 * opened and the verbs access table, shared by the domains and event queues
 * opened from it.
 */
#include <stdlib.h>
#include <string.h>

#include "bolt_attr.h"
#include "bolt_fabric.h"
#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include "bolt_wait.h"

static int bolt_fabric_close(struct fid *fid)
{
	struct bolt_fabric *fabric = bolt_container_of(fid, struct bolt_fabric, fabric_fid.fid);

	if (atomic_load(&fabric->child_count)) {
		FI_WARN(&bolt_prov, FI_LOG_FABRIC, "fabric closed with %d domains or EQs open on it\n",
			atomic_load(&fabric->child_count));
		return -FI_EBUSY;
	}
	bolt_verbs_close(&fabric->verbs);
	free(fabric);
	return 0;
}

static int bolt_fabric_no_domain2(struct fid_fabric *fabric, struct fi_info *info,
				  struct fid_domain **domain, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops bolt_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_fabric_close,
	.bind = bolt_no_bind,
	.control = bolt_no_control,
	.ops_open = bolt_no_ops_open,
};

static struct fi_ops_fabric bolt_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = bolt_domain_open,
	.passive_ep = bolt_no_passive_ep,
	.eq_open = bolt_eq_open,
	.wait_open = bolt_no_wait_open,
	.trywait = bolt_wait_try,
	.domain2 = bolt_fabric_no_domain2,
};

int bolt_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_fid, void *context)
{
	struct bolt_fabric *fabric;
	int ret;

	if (!attr || !attr->name || strcmp(attr->name, BOLT_FABRIC_NAME))
		return -FI_ENODATA;
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	ret = bolt_params_read(&fabric->params);
	if (!ret)
		ret = bolt_verbs_open(&fabric->params, &fabric->verbs);
	if (ret) {
		free(fabric);
		return ret == -FI_ENODATA ? -FI_ENODEV : ret;
	}
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.fid.ops = &bolt_fabric_fi_ops;
	fabric->fabric_fid.ops = &bolt_fabric_ops;
	*fabric_fid = &fabric->fabric_fid;
	return 0;
}
