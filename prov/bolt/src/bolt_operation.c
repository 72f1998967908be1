/*
 * bolt_operation.c: starting operations. What fi_send, fi_tsend, fi_write,
 * fi_read and the receives share: argument checks, descriptor checks under
 * FI_MR_ENDPOINT, address resolution, and the transmit or receive record.
 */
#include <stdlib.h>
#include <string.h>

#include "bolt_endpoint.h"
#include "bolt_operation.h"

/*
 * Under FI_MR_ENDPOINT, a descriptor must be an MR enabled in this endpoint's
 * domain. Binding scopes remote access; locally the memory is the domain's,
 * and applications (fabtests' fi_multi_ep) use one region on all endpoints.
 */
static int bolt_operation_check_descriptors(const struct bolt_endpoint *endpoint, void **desc,
					    size_t count)
{
	if (!desc || !(endpoint->domain->mr_mode & FI_MR_ENDPOINT))
		return 0;
	for (size_t i = 0; i < count; i++) {
		const struct bolt_mr *mr = desc[i];

		if (!mr)
			continue;
		if (mr->mr_fid.fid.fclass != FI_CLASS_MR || !mr->enabled ||
		    mr->domain != endpoint->domain) {
			FI_WARN(&bolt_prov, FI_LOG_EP_DATA,
				"descriptor %zu is not a memory region enabled in this domain\n", i);
			return -FI_EINVAL;
		}
	}
	return 0;
}

/*
 * Whether a single buffer lies inside the open, enabled MR its descriptor
 * names: then it stays valid until that MR closes (which drops any device
 * registration cached for it), so a registration may outlive the transfer.
 */
static bool bolt_operation_covered(const struct iovec *iov, void **desc, size_t count)
{
	const struct bolt_mr *mr = desc && count == 1 ? desc[0] : NULL;
	uintptr_t start = count == 1 ? (uintptr_t) iov[0].iov_base : 0;

	return mr && mr->mr_fid.fid.fclass == FI_CLASS_MR && mr->enabled &&
	       start >= (uintptr_t) mr->address && start - (uintptr_t) mr->address <= mr->length &&
	       iov[0].iov_len <= mr->length - (start - (uintptr_t) mr->address);
}

static int bolt_operation_check(const struct bolt_endpoint *endpoint, const struct iovec *iov,
				void **desc, size_t count, size_t *length)
{
	if (!endpoint->enabled)
		return -FI_EOPBADSTATE;
	if (count > BOLT_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	*length = bolt_iov_length(iov, count);
	if (*length > BOLT_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	return bolt_operation_check_descriptors(endpoint, desc, count);
}

/* FI_INJECT: the data is the operation's own from the start. */
static int bolt_operation_inject(struct bolt_transmit *transmit)
{
	if (transmit->length > BOLT_INJECT_SIZE)
		return -FI_EMSGSIZE;
	transmit->inject_copy = malloc(transmit->length ? transmit->length : 1);
	if (!transmit->inject_copy)
		return -FI_ENOMEM;
	bolt_iov_copy_out(transmit->iov, transmit->iov_count, 0, transmit->inject_copy,
			  transmit->length);
	transmit->iov[0].iov_base = transmit->inject_copy;
	transmit->iov[0].iov_len = transmit->length;
	transmit->iov_count = 1;
	return 0;
}

ssize_t bolt_operation_transmit(struct bolt_endpoint *endpoint, const struct bolt_operation *operation)
{
	struct bolt_transmit *transmit;
	struct bolt_address peer;
	size_t length;
	ssize_t ret;

	ret = bolt_operation_check(endpoint, operation->iov, operation->desc, operation->iov_count,
				   &length);
	if (ret)
		return ret;
	bolt_domain_lock(endpoint->domain);
	/* A full transmit queue (fi_endpoint(3): tx_attr->size) asks the caller to progress. */
	ret = -FI_EAGAIN;
	if (endpoint->transmits_outstanding >= endpoint->transmit_queue_size)
		goto unlock;
	ret = bolt_av_lookup_address(endpoint->av, operation->peer, &peer);
	if (ret)
		goto unlock;
	ret = -FI_ENOMEM;
	transmit = bolt_allocate_zeroed(sizeof(*transmit));
	if (!transmit)
		goto unlock;
	transmit->op = operation->op;
	transmit->context = operation->context;
	transmit->flags = operation->flags;
	transmit->silent = operation->flags & FI_INJECT && operation->silent_inject;
	if (operation->iov_count)       /* no entries may come with no array (MPI's probes) */
		memcpy(transmit->iov, operation->iov, operation->iov_count * sizeof(*operation->iov));
	transmit->iov_count = operation->iov_count;
	transmit->length = length;
	transmit->covered = bolt_operation_covered(operation->iov, operation->desc,
						   operation->iov_count);
	transmit->tag = operation->tag;
	transmit->cq_data = (uint32_t) operation->data;
	transmit->remote_address = operation->remote_address;
	transmit->remote_key = operation->remote_key;
	/* FI_INJECT, also as a default op flag, concerns data sent: never a read's buffer. */
	if (operation->flags & FI_INJECT && operation->op != BOLT_WIRE_READ_REQUEST) {
		ret = bolt_operation_inject(transmit);
		if (ret) {
			bolt_transmit_free(transmit);
			goto unlock;
		}
	}
	transmit->connection = bolt_connection_get(&endpoint->connection_manager, &peer);
	if (!transmit->connection) {
		bolt_transmit_free(transmit);
		ret = -FI_ENOMEM;
		goto unlock;
	}
	endpoint->transmits_outstanding++;
	bolt_transmit_start(transmit);
	ret = 0;
unlock:
	bolt_domain_unlock(endpoint->domain);
	return ret;
}

ssize_t bolt_operation_receive(struct bolt_endpoint *endpoint, const struct bolt_operation *operation,
			       bool tagged)
{
	struct bolt_receive *receive;
	size_t length;
	ssize_t ret;

	ret = bolt_operation_check(endpoint, operation->iov, operation->desc, operation->iov_count,
				   &length);
	if (ret)
		return ret;
	receive = bolt_allocate_zeroed(sizeof(*receive));
	if (!receive)
		return -FI_ENOMEM;
	receive->context = operation->context;
	receive->flags = operation->flags;
	receive->tagged = tagged;
	if (operation->iov_count)
		memcpy(receive->iov, operation->iov, operation->iov_count * sizeof(*operation->iov));
	receive->iov_count = operation->iov_count;
	receive->length = length;
	receive->covered = bolt_operation_covered(operation->iov, operation->desc,
						  operation->iov_count);
	receive->source = endpoint->caps & FI_DIRECTED_RECV ? operation->peer : FI_ADDR_UNSPEC;
	receive->tag = operation->tag;
	receive->ignore = operation->ignore;
	bolt_domain_lock(endpoint->domain);
	bolt_match_post(endpoint, receive);
	bolt_domain_unlock(endpoint->domain);
	return 0;
}
