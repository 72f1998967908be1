/*
 * api_version: an application of the libfabric it is built against (it links
 * libfabric only) that asks fi_getinfo for bolt at that libfabric's own API
 * version and, under libfabric 2.x, at FI_VERSION(2,0), as applications
 * written for 2.x do. bolt, built against the same libfabric, must be offered
 * at each, and a fabric, domain and endpoint must open on what it offers.
 * Prints "api_version: N passed, N failed".
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

/* opens FABRIC, DOMAIN, ENDPOINT on info and closes them in reverse; 0 or a libfabric error */
static int open_endpoint(struct fi_info *info)
{
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_ep *endpoint = NULL;
	int ret;

	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		return ret;
	ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret) {
		ret = fi_endpoint(domain, info, &endpoint, NULL);
		if (!ret)
			fi_close(&endpoint->fid);
		fi_close(&domain->fid);
	}
	fi_close(&fabric->fid);
	return ret;
}

/* asks for bolt at version; 1 when it is offered and its endpoint opens */
static int bolt_offered_at(uint32_t version)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_info *info = NULL;
	int ret;

	if (!hints)
		return 0;
	hints->fabric_attr->prov_name = strdup("bolt");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
	ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);
	if (!ret)
		ret = open_endpoint(info);
	printf("%s: bolt at FI_VERSION(%u,%u) (libfabric %u.%u): %s\n", ret ? "FAILED" : "ok",
	       FI_MAJOR(version), FI_MINOR(version), FI_MAJOR(fi_version()),
	       FI_MINOR(fi_version()), ret ? fi_strerror(-ret) : "offered, endpoint opens");
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return !ret;
}

int main(void)
{
	int passed = 0, failed = 0;
	uint32_t versions[] = {
		FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
#if FI_MAJOR_VERSION >= 2
		FI_VERSION(2, 0),
#endif
	};

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		if (bolt_offered_at(versions[i]))
			passed++;
		else
			failed++;
	}
	printf("api_version: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
