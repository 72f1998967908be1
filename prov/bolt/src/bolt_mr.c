/*
 * bolt_mr.c: memory regions. Under FI_MR_ENDPOINT (seed 004: NCCL plugins
 * register a buffer once per endpoint), fi_mr_reg gives a disabled region
 * with no key; fi_mr_bind ties it to one endpoint and fi_mr_enable gives it
 * its key there, so only that endpoint's peers can reach it. Without the
 * mode, a region is enabled at registration with a domain-wide key. Regions
 * cost no device MR: bolt moves their data through its own registered
 * buffers, which is what keeps 10,000 registrations within Thunderbolt's 100.
 * A key is its own raw key (fi_mr_raw_attr, fi_mr_map_raw): 8 bytes, as
 * domain_attr->mr_key_size says.
 */
#include <stdlib.h>
#include <string.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "bolt_unsupported.h"

static bool bolt_mr_endpoint_mode(const struct bolt_domain *domain)
{
	return domain->mr_mode & FI_MR_ENDPOINT;
}

/* Where enabled regions are found by key: the endpoint's table or the domain's. */
static struct bolt_mr **bolt_mr_table(struct bolt_mr *mr)
{
	return mr->endpoint ? &mr->endpoint->mrs : &mr->domain->mrs;
}

static int bolt_mr_enable(struct bolt_mr *mr, uint64_t requested_key)
{
	struct bolt_domain *domain = mr->domain;
	struct bolt_mr **table;
	struct bolt_mr *existing;
	uint64_t key;

	if (mr->enabled)
		return 0;
	if (bolt_mr_endpoint_mode(domain) && !mr->endpoint) {
		FI_WARN(&bolt_prov, FI_LOG_MR,
			"FI_MR_ENDPOINT: bind the memory region to an endpoint before enabling it\n");
		return -FI_EOPBADSTATE;
	}
	key = domain->mr_mode & FI_MR_PROV_KEY ? ++domain->next_mr_key :
	      requested_key;
	/* The value that means "no key" is no key to give. */
	if (key == FI_KEY_NOTAVAIL) {
		FI_WARN(&bolt_prov, FI_LOG_MR, "key %#llx cannot be a region's key\n",
			(unsigned long long) key);
		return -FI_EKEYREJECTED;
	}
	table = bolt_mr_table(mr);
	HASH_FIND(hh, *table, &key, sizeof(key), existing);
	if (existing) {
		FI_WARN(&bolt_prov, FI_LOG_MR, "key %#llx is taken\n", (unsigned long long) key);
		return -FI_ENOKEY;
	}
	mr->mr_fid.key = key;
	HASH_ADD(hh, *table, mr_fid.key, sizeof(mr->mr_fid.key), mr);
	mr->enabled = true;
	return 0;
}

static int bolt_mr_close(struct fid *fid)
{
	struct bolt_mr *mr = bolt_container_of(fid, struct bolt_mr, mr_fid.fid);
	struct bolt_domain *domain = mr->domain;

	bolt_domain_lock(domain);
	if (mr->enabled)
		HASH_DEL(*bolt_mr_table(mr), mr);
	bolt_direct_write_revoke(mr);
	/* Registrations kept for transfers in this region: its memory may go now. */
	bolt_mr_cache_invalidate(domain->primary.mr_cache, mr->address, mr->length);
	for (int index = 0; index < domain->stripe_port_count; index++)
		bolt_mr_cache_invalidate(domain->stripe_ports[index].mr_cache, mr->address, mr->length);
	if (mr->endpoint)
		mr->endpoint->bound_mr_count--;
	bolt_domain_unlock(domain);
	atomic_fetch_sub(&domain->child_count, 1);
	free(mr);
	return 0;
}

static int bolt_mr_bind(struct fid *fid, struct fid *bound_fid, uint64_t flags)
{
	struct bolt_mr *mr = bolt_container_of(fid, struct bolt_mr, mr_fid.fid);
	struct bolt_endpoint *endpoint;

	/* Counters would count remote accesses: bolt offers no FI_RMA_EVENT. */
	if (bound_fid->fclass == FI_CLASS_CNTR)
		return -FI_ENOSYS;
	if (bound_fid->fclass != FI_CLASS_EP || !bolt_mr_endpoint_mode(mr->domain))
		return -FI_EINVAL;
	endpoint = bolt_container_of(bound_fid, struct bolt_endpoint, ep_fid.fid);
	if (endpoint->domain != mr->domain || mr->endpoint || mr->enabled)
		return -FI_EINVAL;
	bolt_domain_lock(mr->domain);
	mr->endpoint = endpoint;
	endpoint->bound_mr_count++;
	bolt_domain_unlock(mr->domain);
	return 0;
}

/* fi_mr_raw_attr: the key's 8 bytes, and the address that names the region's first byte. */
static int bolt_mr_raw_attr(struct bolt_mr *mr, struct fi_mr_raw_attr *attr)
{
	uint64_t key = mr->mr_fid.key;
	size_t room;

	if (!attr || !attr->key_size || (*attr->key_size && !attr->raw_key))
		return -FI_EINVAL;
	if (!mr->enabled)
		return -FI_EOPBADSTATE;
	room = *attr->key_size;
	*attr->key_size = sizeof(key);
	if (room < sizeof(key))
		return -FI_ETOOSMALL;
	memcpy(attr->raw_key, &key, sizeof(key));
	if (attr->base_addr)
		*attr->base_addr = bolt_mr_base(mr);
	return 0;
}

static int bolt_mr_control(struct fid *fid, int command, void *argument)
{
	struct bolt_mr *mr = bolt_container_of(fid, struct bolt_mr, mr_fid.fid);
	int ret;

	if (command != FI_ENABLE && command != FI_GET_RAW_MR)
		return -FI_ENOSYS;
	bolt_domain_lock(mr->domain);
	ret = command == FI_ENABLE ? bolt_mr_enable(mr, mr->requested_key) :
	      bolt_mr_raw_attr(mr, argument);
	bolt_domain_unlock(mr->domain);
	return ret;
}

int bolt_mr_map_raw(const struct fi_mr_map_raw *map)
{
	uint64_t key;

	if (!map || !map->raw_key || !map->key || map->key_size != sizeof(key))
		return -FI_EINVAL;
	memcpy(&key, map->raw_key, sizeof(key));
	*map->key = key;
	return 0;
}

static struct fi_ops bolt_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_mr_close,
	.bind = bolt_mr_bind,
	.control = bolt_mr_control,
	.ops_open = bolt_no_ops_open,
};

static int bolt_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			   struct fid_mr **mr_fid)
{
	struct bolt_domain *domain = bolt_container_of(fid, struct bolt_domain, domain_fid.fid);
	struct bolt_mr *mr;
	int ret;

	if (!attr || !mr_fid || attr->iov_count != 1 || !attr->mr_iov)
		return -FI_EINVAL;
	/*
	 * What bolt cannot honour: counting remote accesses, persistence. iface
	 * and device are not looked at: fi_mr(3) ignores them without FI_HMEM,
	 * which bolt never offers.
	 */
	if (flags & (FI_RMA_EVENT | FI_RMA_PMEM)) {
		FI_WARN(&bolt_prov, FI_LOG_MR, "no FI_RMA_EVENT or FI_RMA_PMEM registrations\n");
		return -FI_EBADFLAGS;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->access = attr->access;
	mr->address = attr->mr_iov[0].iov_base;
	mr->length = attr->mr_iov[0].iov_len;
	mr->requested_key = attr->requested_key;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &bolt_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = FI_KEY_NOTAVAIL;
	if (!bolt_mr_endpoint_mode(domain)) {
		bolt_domain_lock(domain);
		ret = bolt_mr_enable(mr, attr->requested_key);
		bolt_domain_unlock(domain);
		if (ret) {
			free(mr);
			return ret;
		}
	}
	atomic_fetch_add(&domain->child_count, 1);
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int bolt_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
			uint64_t offset, uint64_t requested_key, uint64_t flags,
			struct fid_mr **mr_fid, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
		.requested_key = requested_key, .context = context, .iface = FI_HMEM_SYSTEM,
	};

	return bolt_mr_regattr(fid, &attr, flags, mr_fid);
}

static int bolt_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		       uint64_t offset, uint64_t requested_key, uint64_t flags,
		       struct fid_mr **mr_fid, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return bolt_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr_fid, context);
}

struct fi_ops_mr bolt_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = bolt_mr_reg,
	.regv = bolt_mr_regv,
	.regattr = bolt_mr_regattr,
};

struct bolt_mr *bolt_mr_find(struct bolt_endpoint *endpoint, uint64_t key)
{
	struct bolt_domain *domain = endpoint->domain;
	struct bolt_mr *table = bolt_mr_endpoint_mode(domain) ? endpoint->mrs : domain->mrs;
	struct bolt_mr *mr;

	HASH_FIND(hh, table, &key, sizeof(key), mr);
	return mr;
}

uint64_t bolt_mr_base(const struct bolt_mr *mr)
{
	return mr->domain->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t) (uintptr_t) mr->address : 0;
}

int bolt_mr_translate(struct bolt_endpoint *endpoint, uint64_t key, uint64_t address,
		      size_t length, uint64_t access, char **local)
{
	struct bolt_mr *mr = bolt_mr_find(endpoint, key);
	uint64_t base, start;

	if (!mr || !(mr->access & access))
		return FI_EACCES;
	base = bolt_mr_base(mr);
	start = address - base;
	if (address < base || start > mr->length || length > mr->length - start)
		return FI_EINVAL;
	*local = mr->address + start;
	return 0;
}
