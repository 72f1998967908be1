/*
 * bolt_av.c: address vectors. FI_AV_TABLE and FI_AV_MAP both hand out the
 * index of an address as its fi_addr_t, in insertion order, and neither
 * hands out a removed index again, so a stale fi_addr can never reach a new
 * peer. A hash from address bytes to index tells progress which peer a
 * message came from (bolt_av_reverse_lookup).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * An allocation failure inside uthash must not end the process: it leaves
 * the entry out and says so through copies = 0. First, before any header
 * that might include uthash.h without these.
 */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(entry) ((entry)->copies = 0)
#include <uthash.h>

#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include "collective/bolt_collective.h"

#define BOLT_AV_DEFAULT_COUNT 64
/* attr->count is only a hint: a huge one must not cost its memory before it is used. */
#define BOLT_AV_LARGEST_FIRST_COUNT 65536

struct bolt_av_entry {
	struct bolt_address address;    /* the key: all 24 bytes, which have no padding */
	fi_addr_t fi_addr;              /* the lowest live index holding the address */
	size_t copies;                  /* live indexes holding it: fi_av(3) allows duplicates */
	UT_hash_handle hh;
};

static bool bolt_av_is_live(const struct bolt_av *av, fi_addr_t fi_addr)
{
	return fi_addr < av->count && av->valid[fi_addr];
}

int bolt_av_lookup_address(const struct bolt_av *av, fi_addr_t fi_addr,
			   struct bolt_address *address)
{
	if (!bolt_av_is_live(av, fi_addr))
		return -FI_EINVAL;
	*address = av->addresses[fi_addr];
	return 0;
}

fi_addr_t bolt_av_reverse_lookup(const struct bolt_av *av, const struct bolt_address *address)
{
	struct bolt_av_entry *entry;

	HASH_FIND(hh, av->by_address, address, sizeof(*address), entry);
	return entry ? entry->fi_addr : FI_ADDR_NOTAVAIL;
}

/* Makes room for more addresses, doubling, so that many insertions cost few copies. */
static int bolt_av_reserve(struct bolt_av *av, size_t more)
{
	size_t capacity = av->capacity;
	struct bolt_address *addresses;
	bool *valid;

	if (more > SIZE_MAX / sizeof(*addresses) - av->count)
		return -FI_ENOMEM;
	if (av->count + more <= capacity)
		return 0;
	while (capacity < av->count + more)
		capacity *= 2;
	if (capacity > SIZE_MAX / sizeof(*addresses))
		capacity = av->count + more;
	addresses = realloc(av->addresses, capacity * sizeof(*addresses));
	if (!addresses)
		return -FI_ENOMEM;
	av->addresses = addresses;
	valid = realloc(av->valid, capacity * sizeof(*valid));
	if (!valid)
		return -FI_ENOMEM;
	av->valid = valid;
	av->capacity = capacity;
	return 0;
}

/* Records that fi_addr holds address; an earlier copy keeps answering reverse lookups. */
static int bolt_av_remember(struct bolt_av *av, const struct bolt_address *address,
			    fi_addr_t fi_addr)
{
	struct bolt_av_entry *entry;

	HASH_FIND(hh, av->by_address, address, sizeof(*address), entry);
	if (entry) {
		entry->copies++;
		return 0;
	}
	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -FI_ENOMEM;
	entry->address = *address;
	entry->fi_addr = fi_addr;
	entry->copies = 1;
	HASH_ADD(hh, av->by_address, address, sizeof(entry->address), entry);
	if (!entry->copies) {
		free(entry);
		return -FI_ENOMEM;
	}
	return 0;
}

/* The next live index after fi_addr holding the same address, when duplicates were inserted. */
static fi_addr_t bolt_av_next_copy(const struct bolt_av *av, fi_addr_t fi_addr)
{
	for (fi_addr_t index = fi_addr + 1; index < av->count; index++)
		if (av->valid[index] &&
		    !memcmp(&av->addresses[index], &av->addresses[fi_addr], sizeof(struct bolt_address)))
			return index;
	return FI_ADDR_NOTAVAIL;
}

static void bolt_av_forget(struct bolt_av *av, fi_addr_t fi_addr)
{
	struct bolt_av_entry *entry;

	HASH_FIND(hh, av->by_address, &av->addresses[fi_addr], sizeof(struct bolt_address), entry);
	if (!entry)
		return;
	if (--entry->copies == 0) {
		HASH_DEL(av->by_address, entry);
		free(entry);
	} else if (entry->fi_addr == fi_addr) {
		entry->fi_addr = bolt_av_next_copy(av, fi_addr);
	}
}

/* Appends the address in bytes at the next index; the caller reserved room. Lock held. */
static int bolt_av_insert_one(struct bolt_av *av, const void *bytes, fi_addr_t *fi_addr)
{
	struct bolt_address address;
	int ret;

	if (!bolt_address_is_valid(bytes, sizeof(address)))
		return -FI_EINVAL;
	memcpy(&address, bytes, sizeof(address));
	ret = bolt_av_remember(av, &address, av->count);
	if (ret)
		return ret;
	av->addresses[av->count] = address;
	av->valid[av->count] = true;
	*fi_addr = av->count++;
	return 0;
}

static int bolt_av_check_insert(const struct bolt_av *av, const void *addr, size_t count,
				uint64_t flags, void *context)
{
	if (flags & ~(FI_MORE | FI_SYNC_ERR)) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "insertion flags %#llx not supported\n",
			(unsigned long long) (flags & ~(FI_MORE | FI_SYNC_ERR)));
		return -FI_EBADFLAGS;
	}
	if (count && !addr)
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && (!context || (av->flags & FI_EVENT))) {
		FI_WARN(&bolt_prov, FI_LOG_AV,
			"FI_SYNC_ERR needs an error array as context and a synchronous AV\n");
		return -FI_EINVAL;
	}
	if ((av->flags & FI_EVENT) && !av->eq) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "FI_EVENT address vector has no event queue bound\n");
		return -FI_ENOEQ;
	}
	return 0;
}

/* fi_av(3): one FI_AV_COMPLETE event per insertion call, its data the number inserted. */
static int bolt_av_report_completion(struct bolt_av *av, void *context, size_t inserted)
{
	struct fi_eq_entry entry = { .fid = &av->av_fid.fid, .context = context, .data = inserted };
	int ret = bolt_eq_report(av->eq, FI_AV_COMPLETE, &entry, sizeof(entry), 0);

	if (ret)
		FI_WARN(&bolt_prov, FI_LOG_AV, "insertion completion not reported: %s\n",
			fi_strerror(-ret));
	return ret;
}

/*
 * Each address's outcome goes where the application asked: fi_addr[i]
 * (FI_ADDR_NOTAVAIL on failure), the FI_SYNC_ERR array in context (positive
 * error codes), or with FI_EVENT an error event carrying i before the
 * completion event. A failed address takes no index.
 */
static int bolt_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
			  fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct bolt_av *av = bolt_container_of(av_fid, struct bolt_av, av_fid);
	int *sync_errors = (flags & FI_SYNC_ERR) ? context : NULL;
	const char *bytes = addr;
	size_t inserted = 0;
	int reserved, ret;

	ret = bolt_av_check_insert(av, addr, count, flags, context);
	if (ret)
		return ret;
	bolt_domain_lock(av->domain);
	reserved = bolt_av_reserve(av, count);
	for (size_t i = 0; i < count; i++) {
		fi_addr_t index = FI_ADDR_NOTAVAIL;
		int status = reserved ? reserved :
			     bolt_av_insert_one(av, bytes + i * sizeof(struct bolt_address), &index);

		if (fi_addr)
			fi_addr[i] = index;
		if (sync_errors)
			sync_errors[i] = -status;
		if (!status)
			inserted++;
		else if ((av->flags & FI_EVENT) &&
			 bolt_eq_report_error(av->eq, &av->av_fid.fid, context, i, -status, 0))
			FI_WARN(&bolt_prov, FI_LOG_AV, "failure of address %zu not reported\n", i);
	}
	bolt_domain_unlock(av->domain);
	if (inserted < count)
		FI_WARN(&bolt_prov, FI_LOG_AV, "%zu of %zu addresses not inserted: %s\n",
			count - inserted, count,
			reserved ? fi_strerror(-reserved) : "not valid bolt addresses");
	if (av->flags & FI_EVENT)
		return bolt_av_report_completion(av, context, inserted);
	return (int) inserted;
}

static int bolt_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
			  uint64_t flags)
{
	struct bolt_av *av = bolt_container_of(av_fid, struct bolt_av, av_fid);
	int ret = 0;

	if (flags || (count && !fi_addr))
		return -FI_EINVAL;
	bolt_domain_lock(av->domain);
	for (size_t i = 0; i < count; i++) {
		if (!bolt_av_is_live(av, fi_addr[i])) {
			ret = -FI_EINVAL;
			continue;
		}
		bolt_av_forget(av, fi_addr[i]);
		av->valid[fi_addr[i]] = false;
	}
	bolt_domain_unlock(av->domain);
	if (ret)
		FI_WARN(&bolt_prov, FI_LOG_AV, "removal of addresses that were not inserted\n");
	return ret;
}

static int bolt_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	struct bolt_av *av = bolt_container_of(av_fid, struct bolt_av, av_fid);
	struct bolt_address address;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	bolt_domain_lock(av->domain);
	ret = bolt_av_lookup_address(av, fi_addr, &address);
	bolt_domain_unlock(av->domain);
	if (ret)
		return ret;
	if (addr)
		memcpy(addr, &address, *addrlen < sizeof(address) ? *addrlen : sizeof(address));
	*addrlen = sizeof(address);
	return 0;
}

/* "bolt://10.1.2.3:5000/7" or "bolt://[fe80::1]:5000/7" into text; snprintf's return. */
static int bolt_av_format_address(const void *bytes, char *text, size_t size)
{
	struct bolt_address address;

	if (!bolt_address_is_valid(bytes, sizeof(address)))
		return snprintf(text, size, "bolt://(invalid address)");
	memcpy(&address, bytes, sizeof(address));
	return bolt_address_format(&address, text, size);
}

/* fi_av(3): truncates to *len, sets *len to the size the whole text needs, returns buf. */
static const char *bolt_av_straddr(struct fid_av *av_fid, const void *addr, char *buf,
				   size_t *len)
{
	int length;

	if (!len)
		return NULL;
	length = bolt_av_format_address(addr, buf, buf ? *len : 0);
	*len = (size_t) length + 1;
	return buf;
}

static struct fi_ops_av bolt_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = bolt_av_insert,
	.insertsvc = bolt_no_av_insertsvc,
	.insertsym = bolt_no_av_insertsym,
	.remove = bolt_av_remove,
	.lookup = bolt_av_lookup,
	.straddr = bolt_av_straddr,
	.av_set = bolt_av_set_open,
};

/* An event queue for FI_EVENT insertions; one per AV. */
static int bolt_av_bind(struct fid *fid, struct fid *bound_fid, uint64_t flags)
{
	struct bolt_av *av = bolt_container_of(fid, struct bolt_av, av_fid.fid);

	if (flags || !bound_fid || bound_fid->fclass != FI_CLASS_EQ ||
	    bolt_container_of(bound_fid, struct bolt_eq, eq_fid.fid)->fabric != av->domain->fabric) {
		FI_WARN(&bolt_prov, FI_LOG_AV,
			"an address vector binds only an event queue of its fabric\n");
		return -FI_EINVAL;
	}
	bolt_domain_lock(av->domain);
	if (av->eq) {
		bolt_domain_unlock(av->domain);
		FI_WARN(&bolt_prov, FI_LOG_AV, "address vector already has an event queue\n");
		return -FI_EINVAL;
	}
	av->eq = bolt_container_of(bound_fid, struct bolt_eq, eq_fid.fid);
	atomic_fetch_add(&av->eq->bind_count, 1);
	bolt_domain_unlock(av->domain);
	return 0;
}

static int bolt_av_close(struct fid *fid)
{
	struct bolt_av *av = bolt_container_of(fid, struct bolt_av, av_fid.fid);
	struct bolt_av_entry *entry, *next;

	if (atomic_load(&av->bind_count)) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "address vector still bound to %d endpoints\n",
			atomic_load(&av->bind_count));
		return -FI_EBUSY;
	}
	if (av->eq)
		atomic_fetch_sub(&av->eq->bind_count, 1);
	HASH_ITER(hh, av->by_address, entry, next) {
		HASH_DEL(av->by_address, entry);
		free(entry);
	}
	free(av->addresses);
	free(av->valid);
	atomic_fetch_sub(&av->domain->child_count, 1);
	free(av);
	return 0;
}

static struct fi_ops bolt_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_av_close,
	.bind = bolt_av_bind,
	.control = bolt_no_control,
	.ops_open = bolt_no_ops_open,
};

/*
 * FI_SYMMETRIC is accepted: bolt's indexes are sequential whatever the
 * layout. Shared AVs (a name, or FI_READ, which needs one) and receive
 * context bits (scalable endpoints) are not offered.
 */
static int bolt_av_check_attr(const struct fi_av_attr *attr)
{
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE && attr->type != FI_AV_MAP) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "unknown address vector type %d\n", attr->type);
		return -FI_EINVAL;
	}
	if (attr->rx_ctx_bits) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "rx_ctx_bits needs scalable endpoints\n");
		return -FI_ENOSYS;
	}
	if (attr->name || (attr->flags & FI_READ)) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "shared (named) address vectors not supported\n");
		return -FI_ENOSYS;
	}
	if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC)) {
		FI_WARN(&bolt_prov, FI_LOG_AV, "address vector flags %#llx not supported\n",
			(unsigned long long) (attr->flags & ~(FI_EVENT | FI_SYMMETRIC)));
		return -FI_EBADFLAGS;
	}
	return 0;
}

int bolt_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct bolt_domain *domain = bolt_container_of(domain_fid, struct bolt_domain, domain_fid);
	struct bolt_av *av;
	int ret;

	if (!attr || !av_fid)
		return -FI_EINVAL;
	ret = bolt_av_check_attr(attr);
	if (ret)
		return ret;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->capacity = attr->count ? attr->count : BOLT_AV_DEFAULT_COUNT;
	if (av->capacity > BOLT_AV_LARGEST_FIRST_COUNT)
		av->capacity = BOLT_AV_LARGEST_FIRST_COUNT;
	av->addresses = calloc(av->capacity, sizeof(*av->addresses));
	av->valid = calloc(av->capacity, sizeof(*av->valid));
	if (!av->addresses || !av->valid) {
		free(av->addresses);
		free(av->valid);
		free(av);
		return -FI_ENOMEM;
	}
	/* fi_av(3): the type the provider chose for FI_AV_UNSPEC is returned in attr. */
	if (attr->type == FI_AV_UNSPEC)
		attr->type = FI_AV_TABLE;
	av->type = attr->type;
	av->flags = attr->flags;
	av->domain = domain;
	atomic_init(&av->bind_count, 0);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &bolt_av_fi_ops;
	av->av_fid.ops = &bolt_av_ops;
	atomic_fetch_add(&domain->child_count, 1);
	FI_INFO(&bolt_prov, FI_LOG_AV, "address vector %s for %zu addresses%s\n",
		av->type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE", av->capacity,
		(av->flags & FI_EVENT) ? ", insertions complete on an event queue" : "");
	*av_fid = &av->av_fid;
	return 0;
}
