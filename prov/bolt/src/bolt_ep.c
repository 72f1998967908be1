/*
 * bolt_ep.c: the RDM endpoint object: opening it (with its side channel
 * listening, so fi_getname works at once), binding CQs, counters, the AV and
 * an EQ, enabling, names, options, cancel, closing, and reporting the
 * completions the protocols produce. A layer on top of it (attached by the
 * domain's endpoint open) is called only through bolt_endpoint_upper_ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "bolt_getinfo.h"
#include "bolt_random.h"
#include "bolt_unsupported.h"

extern struct fi_ops_msg bolt_msg_ops;
extern struct fi_ops_tagged bolt_tagged_ops;
extern struct fi_ops_rma bolt_rma_ops;

static struct bolt_cntr *bolt_endpoint_counter(const struct bolt_endpoint *endpoint,
					       enum bolt_counter_kind kind)
{
	return endpoint->counters[kind];
}

static void bolt_endpoint_count(struct bolt_endpoint *endpoint, enum bolt_counter_kind kind,
				int status)
{
	struct bolt_cntr *counter = bolt_endpoint_counter(endpoint, kind);

	if (!counter)
		return;
	if (status)
		bolt_cntr_increment_error(counter);
	else
		bolt_cntr_increment(counter);
}

static void bolt_endpoint_report(struct bolt_cq *cq, bool wanted, void *context, uint64_t flags,
				 size_t length, void *buffer, uint64_t data, uint64_t tag,
				 fi_addr_t source, size_t overflow_length, int status)
{
	struct fi_cq_tagged_entry completion = {
		.op_context = context, .flags = flags, .len = length, .buf = buffer, .data = data,
		.tag = tag,
	};

	if (!cq)
		return;
	if (status)
		bolt_cq_report_error(cq, &completion, overflow_length, status, 0);
	else if (wanted)
		bolt_cq_report(cq, &completion, source);
}

void bolt_endpoint_complete_transmit(struct bolt_endpoint *endpoint, struct bolt_transmit *transmit)
{
	uint64_t flags;
	enum bolt_counter_kind kind;
	bool wanted;

	if (transmit->complete) {
		transmit->complete(transmit);
		bolt_transmit_free(transmit);
		return;
	}
	switch (transmit->op) {
	case BOLT_WIRE_WRITE:
		flags = FI_RMA | FI_WRITE;
		kind = BOLT_COUNTER_WRITE;
		break;
	case BOLT_WIRE_READ_REQUEST:
		flags = FI_RMA | FI_READ;
		kind = BOLT_COUNTER_READ;
		break;
	default:
		flags = FI_SEND | (transmit->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
		kind = BOLT_COUNTER_SEND;
		break;
	}
	wanted = !transmit->silent &&
		 (!endpoint->transmit_selective || (transmit->flags & FI_COMPLETION));
	bolt_endpoint_report(endpoint->transmit_cq, wanted, transmit->context, flags, 0, NULL, 0, 0,
			     FI_ADDR_NOTAVAIL, 0, transmit->status);
	bolt_endpoint_count(endpoint, kind, transmit->status);
	endpoint->transmits_outstanding--;
	bolt_transmit_free(transmit);
}

void bolt_endpoint_complete_receive(struct bolt_endpoint *endpoint, struct bolt_receive *receive,
				    struct bolt_connection *connection, size_t length,
				    size_t message_length, uint8_t wire_flags, uint64_t tag,
				    uint32_t cq_data, int status)
{
	uint64_t flags = FI_RECV | (receive->tagged ? FI_TAGGED : FI_MSG);
	bool wanted = !endpoint->receive_selective || (receive->flags & FI_COMPLETION);
	fi_addr_t source;

	if (receive->complete) {
		receive->complete(receive, message_length, status);
		free(receive);
		return;
	}
	source = connection ? bolt_peer_fi_addr(connection) : FI_ADDR_NOTAVAIL;

	if (wire_flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	bolt_endpoint_report(endpoint->receive_cq, wanted, receive->context, flags, length,
			     receive->iov_count ? receive->iov[0].iov_base : NULL, cq_data,
			     receive->tagged ? tag : 0, source,
			     message_length > length ? message_length - length : 0, status);
	/* Counters count messages received: a peek receives none, nor a claim that found none. */
	if (!(receive->flags & FI_PEEK) && status != FI_ENOMSG)
		bolt_endpoint_count(endpoint, BOLT_COUNTER_RECV, status);
	free(receive);
}

void bolt_endpoint_count_remote(struct bolt_endpoint *endpoint, enum bolt_counter_kind kind,
				bool remote_cq_data, uint32_t cq_data, size_t length)
{
	struct fi_cq_tagged_entry completion = {
		.flags = FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE, .len = length, .data = cq_data,
	};

	bolt_endpoint_count(endpoint, kind, 0);
	/* fi_writedata: a completion at the target that consumes no posted receive. */
	if (remote_cq_data && endpoint->receive_cq)
		bolt_cq_report(endpoint->receive_cq, &completion, FI_ADDR_NOTAVAIL);
}

void bolt_endpoint_progress(struct bolt_endpoint *endpoint)
{
	bolt_connection_progress_all(&endpoint->connection_manager);
	if (endpoint->upper)
		endpoint->upper->progress(endpoint);
}

/* ---- Binding ---- */

static int bolt_endpoint_bind_cq(struct bolt_endpoint *endpoint, struct bolt_cq *cq, uint64_t flags)
{
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if ((flags & FI_TRANSMIT && endpoint->transmit_cq) || (flags & FI_RECV && endpoint->receive_cq))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		endpoint->transmit_cq = cq;
		endpoint->transmit_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->bind_count, 1);
	}
	if (flags & FI_RECV) {
		endpoint->receive_cq = cq;
		endpoint->receive_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->bind_count, 1);
	}
	return 0;
}

static int bolt_endpoint_bind_counter(struct bolt_endpoint *endpoint, struct bolt_cntr *counter,
				      uint64_t flags)
{
	static const struct {
		uint64_t flag;
		enum bolt_counter_kind kind;
	} kinds[] = {
		{ FI_SEND, BOLT_COUNTER_SEND }, { FI_RECV, BOLT_COUNTER_RECV },
		{ FI_READ, BOLT_COUNTER_READ }, { FI_WRITE, BOLT_COUNTER_WRITE },
		{ FI_REMOTE_READ, BOLT_COUNTER_REMOTE_READ },
		{ FI_REMOTE_WRITE, BOLT_COUNTER_REMOTE_WRITE },
	};
	bool asked = false;

	/* All or nothing: a kind that has its counter already fails the whole bind. */
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(kinds); i++) {
		if (!(flags & kinds[i].flag))
			continue;
		if (endpoint->counters[kinds[i].kind])
			return -FI_EINVAL;
		asked = true;
	}
	if (!asked)
		return -FI_EINVAL;
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(kinds); i++) {
		if (!(flags & kinds[i].flag))
			continue;
		endpoint->counters[kinds[i].kind] = counter;
		atomic_fetch_add(&counter->bind_count, 1);
	}
	return 0;
}

/*
 * Whether bound_fid is of the endpoint's domain (its fabric, for an EQ). An
 * object of another domain is reported under that domain's lock, not this
 * one's, so it is refused rather than raced on.
 */
static bool bolt_endpoint_may_bind(const struct bolt_endpoint *endpoint, struct fid *bound_fid)
{
	const struct bolt_domain *domain = endpoint->domain;

	switch (bound_fid->fclass) {
	case FI_CLASS_CQ:
		return bolt_container_of(bound_fid, struct bolt_cq, cq_fid.fid)->domain == domain;
	case FI_CLASS_CNTR:
		return bolt_container_of(bound_fid, struct bolt_cntr, cntr_fid.fid)->domain == domain;
	case FI_CLASS_AV:
		return bolt_container_of(bound_fid, struct bolt_av, av_fid.fid)->domain == domain;
	case FI_CLASS_EQ:
		return bolt_container_of(bound_fid, struct bolt_eq, eq_fid.fid)->fabric ==
		       domain->fabric;
	default:
		return false;
	}
}

static int bolt_endpoint_bind(struct fid *fid, struct fid *bound_fid, uint64_t flags)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);
	int ret = -FI_EINVAL;

	if (endpoint->enabled)
		return -FI_EOPBADSTATE;
	if (!bound_fid || !bolt_endpoint_may_bind(endpoint, bound_fid)) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"an endpoint binds CQs, counters and AVs of its own domain, EQs of its fabric\n");
		return -FI_EINVAL;
	}
	bolt_domain_lock(endpoint->domain);
	switch (bound_fid->fclass) {
	case FI_CLASS_CQ:
		ret = bolt_endpoint_bind_cq(endpoint, bolt_container_of(bound_fid, struct bolt_cq, cq_fid.fid),
					    flags);
		break;
	case FI_CLASS_CNTR:
		ret = bolt_endpoint_bind_counter(endpoint,
						 bolt_container_of(bound_fid, struct bolt_cntr, cntr_fid.fid),
						 flags);
		break;
	case FI_CLASS_AV:
		if (endpoint->av)
			break;
		endpoint->av = bolt_container_of(bound_fid, struct bolt_av, av_fid.fid);
		atomic_fetch_add(&endpoint->av->bind_count, 1);
		ret = 0;
		break;
	case FI_CLASS_EQ:
		if (endpoint->eq)
			break;
		endpoint->eq = bolt_container_of(bound_fid, struct bolt_eq, eq_fid.fid);
		atomic_fetch_add(&endpoint->eq->bind_count, 1);
		ret = 0;
		break;
	}
	bolt_domain_unlock(endpoint->domain);
	return ret;
}

static void bolt_endpoint_unbind_all(struct bolt_endpoint *endpoint)
{
	if (endpoint->transmit_cq)
		atomic_fetch_sub(&endpoint->transmit_cq->bind_count, 1);
	if (endpoint->receive_cq)
		atomic_fetch_sub(&endpoint->receive_cq->bind_count, 1);
	for (int kind = 0; kind < BOLT_COUNTER_KINDS; kind++)
		if (endpoint->counters[kind])
			atomic_fetch_sub(&endpoint->counters[kind]->bind_count, 1);
	if (endpoint->av)
		atomic_fetch_sub(&endpoint->av->bind_count, 1);
	if (endpoint->eq)
		atomic_fetch_sub(&endpoint->eq->bind_count, 1);
}

/* ---- Control, names and options ---- */

/* Whether caps let the endpoint start transfers: send, or initiate RMA (as libfabric's util decides). */
static bool bolt_endpoint_transmits(uint64_t caps)
{
	bool messages = caps & (FI_MSG | FI_TAGGED | FI_COLLECTIVE);
	bool rma = caps & FI_RMA;

	return (messages && (caps & FI_SEND || !(caps & FI_RECV))) ||
	       (rma && (caps & (FI_READ | FI_WRITE) || !(caps & (FI_REMOTE_READ | FI_REMOTE_WRITE))));
}

/* Whether caps let it receive messages. */
static bool bolt_endpoint_receives(uint64_t caps)
{
	return caps & (FI_MSG | FI_TAGGED | FI_COLLECTIVE) && (caps & FI_RECV || !(caps & FI_SEND));
}

static int bolt_endpoint_enable(struct bolt_endpoint *endpoint)
{
	if (!endpoint->av) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "an RDM endpoint needs an address vector\n");
		return -FI_ENOAV;
	}
	/* fi_endpoint(3): errors, at least, must have a CQ to go to. */
	if ((bolt_endpoint_transmits(endpoint->caps) && !endpoint->transmit_cq) ||
	    (bolt_endpoint_receives(endpoint->caps) && !endpoint->receive_cq)) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"bind a completion queue for transmits and one for receives before enabling\n");
		return -FI_ENOCQ;
	}
	bolt_domain_lock(endpoint->domain);
	/* Checked under the lock: two threads enabling at once append it once (FI_THREAD_SAFE). */
	if (!endpoint->enabled) {
		endpoint->enabled = true;
		DL_APPEND(endpoint->domain->endpoints, endpoint);
	}
	bolt_domain_unlock(endpoint->domain);
	return 0;
}

static int bolt_endpoint_control(struct fid *fid, int command, void *argument)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);
	uint64_t *flags = argument;

	switch (command) {
	case FI_ENABLE:
		return bolt_endpoint_enable(endpoint);
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		*flags = *flags & FI_RECV ? endpoint->receive_op_flags : endpoint->transmit_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_RECV)
			endpoint->receive_op_flags = *flags & ~(uint64_t) FI_RECV;
		else
			endpoint->transmit_op_flags = *flags & ~(uint64_t) FI_TRANSMIT;
		return 0;
	}
	return -FI_ENOSYS;
}

/* Where the side channel listens when the application says nothing. */
static int bolt_endpoint_default_sockaddr(const struct bolt_endpoint *endpoint,
					  struct sockaddr_storage *address, socklen_t *length)
{
	const struct bolt_fabric *fabric = endpoint->domain->fabric;
	struct bolt_address source;
	int ret;

	ret = bolt_getinfo_default_source(&fabric->params, fabric->verbs.software, &source);
	return ret ? ret : bolt_address_to_sockaddr(&source, address, length);
}

/* Random, so that an address kept from an earlier job never names an endpoint of this one. */
static uint32_t bolt_endpoint_new_id(void)
{
	return bolt_random_u32();
}

/* Listens at address (port 0: any) and takes the name that results. */
static int bolt_endpoint_listen(struct bolt_endpoint *endpoint, const struct sockaddr *address,
				socklen_t length, uint32_t endpoint_id)
{
	struct bolt_side_channel_listener listener;
	int ret;

	ret = bolt_side_channel_listen(address, length, &endpoint->domain->job_key,
				       (unsigned int) endpoint->domain->fabric->params.liveness_timeout,
				       &listener);
	if (ret)
		return ret;
	if (endpoint->connection_manager.listener.fd >= 0)
		bolt_side_channel_listener_close(&endpoint->connection_manager.listener);
	endpoint->connection_manager.listener = listener;
	return bolt_address_from_sockaddr((struct sockaddr *) &listener.address, endpoint_id,
					  &endpoint->connection_manager.address);
}

/*
 * Listening on the wildcard address (a passive FI_SOURCE address, as fabtests'
 * servers give) reaches every interface, but peers need one real address.
 */
static int bolt_endpoint_name_reachable(struct bolt_endpoint *endpoint)
{
	struct sockaddr_storage address;
	struct bolt_address reachable;
	socklen_t length;
	int ret;

	if (!bolt_address_bytes_are_zero(endpoint->connection_manager.address.ip, sizeof(endpoint->connection_manager.address.ip)))
		return 0;
	ret = bolt_endpoint_default_sockaddr(endpoint, &address, &length);
	if (!ret)
		ret = bolt_address_from_sockaddr((struct sockaddr *) &address, 0, &reachable);
	if (ret)
		return ret;
	endpoint->connection_manager.address.family = reachable.family;
	memcpy(endpoint->connection_manager.address.ip, reachable.ip, sizeof(reachable.ip));
	return 0;
}

static int bolt_endpoint_listen_initial(struct bolt_endpoint *endpoint, const struct fi_info *info)
{
	struct sockaddr_storage address;
	socklen_t length;
	uint32_t endpoint_id = bolt_endpoint_new_id();
	int ret;

	if (info->src_addr && bolt_address_is_valid(info->src_addr, info->src_addrlen)) {
		const struct bolt_address *source = info->src_addr;

		/* A fixed port has one listener, and peers that know only host and
		 * port (fi_getinfo's node and service, as fabtests' clients do) name
		 * endpoint 0 behind it: keep the id the source gives, 0 included. */
		if (source->endpoint_id || source->port)
			endpoint_id = ntohl(source->endpoint_id);
		ret = bolt_address_to_sockaddr(source, &address, &length);
	} else {
		ret = bolt_endpoint_default_sockaddr(endpoint, &address, &length);
	}
	if (ret)
		return ret;
	ret = bolt_endpoint_listen(endpoint, (struct sockaddr *) &address, length, endpoint_id);
	if (ret)
		return ret;
	return bolt_endpoint_name_reachable(endpoint);
}

static int bolt_endpoint_getname(fid_t fid, void *address, size_t *length)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);
	size_t available = *length;

	*length = sizeof(endpoint->connection_manager.address);
	if (available < sizeof(endpoint->connection_manager.address))
		return -FI_ETOOSMALL;
	memcpy(address, &endpoint->connection_manager.address, sizeof(endpoint->connection_manager.address));
	return 0;
}

static int bolt_endpoint_setname(fid_t fid, void *address, size_t length)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);
	struct bolt_address name;
	struct sockaddr_storage sockaddr;
	socklen_t sockaddr_length;
	int ret;

	if (endpoint->enabled)
		return -FI_EOPBADSTATE;
	if (!bolt_address_is_valid(address, length))
		return -FI_EINVAL;
	memcpy(&name, address, sizeof(name));
	ret = bolt_address_to_sockaddr(&name, &sockaddr, &sockaddr_length);
	if (!ret)
		ret = bolt_endpoint_listen(endpoint, (struct sockaddr *) &sockaddr, sockaddr_length,
					   ntohl(name.endpoint_id));
	return ret;
}

static int bolt_endpoint_getopt(fid_t fid, int level, int name, void *value, size_t *length)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (name != BOLT_OPT_CUDA_API_PERMITTED && name != BOLT_OPT_SHARED_MEMORY_PERMITTED)
		return -FI_ENOPROTOOPT;
	if (!value || !length || *length < sizeof(bool))
		return -FI_EINVAL;
	*(bool *) value = name == BOLT_OPT_CUDA_API_PERMITTED ? endpoint->cuda_api_permitted :
			  endpoint->shared_memory_permitted;
	*length = sizeof(bool);
	return 0;
}

/*
 * bolt never calls CUDA and moves no data through shared memory of its own
 * (the software device aside, which stands for the wire): both options are
 * honoured by doing nothing.
 */
static int bolt_endpoint_setopt(fid_t fid, int level, int name, const void *value, size_t length)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (name != BOLT_OPT_CUDA_API_PERMITTED && name != BOLT_OPT_SHARED_MEMORY_PERMITTED)
		return -FI_ENOPROTOOPT;
	if (!value || length != sizeof(bool))
		return -FI_EINVAL;
	if (name == BOLT_OPT_CUDA_API_PERMITTED)
		endpoint->cuda_api_permitted = *(const bool *) value;
	else
		endpoint->shared_memory_permitted = *(const bool *) value;
	return 0;
}

static ssize_t bolt_endpoint_cancel(fid_t fid, void *context)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);

	bolt_domain_lock(endpoint->domain);
	/* Nothing to cancel is not an error: the operation may have completed. */
	bolt_match_cancel(endpoint, context);
	bolt_domain_unlock(endpoint->domain);
	return 0;
}

static int bolt_endpoint_close(struct fid *fid)
{
	struct bolt_endpoint *endpoint = bolt_container_of(fid, struct bolt_endpoint, ep_fid.fid);
	struct bolt_domain *domain = endpoint->domain;

	if (endpoint->bound_mr_count) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"endpoint closed with %d memory regions bound to it: close them first\n",
			endpoint->bound_mr_count);
		return -FI_EBUSY;
	}
	bolt_domain_lock(domain);
	if (endpoint->upper && endpoint->upper->busy(endpoint)) {
		bolt_domain_unlock(domain);
		return -FI_EBUSY;
	}
	if (endpoint->enabled)
		DL_DELETE(domain->endpoints, endpoint);
	bolt_connection_destroy_all(&endpoint->connection_manager);
	bolt_match_free_all(endpoint);
	if (endpoint->upper)
		endpoint->upper->destroy(endpoint);
	bolt_side_channel_listener_close(&endpoint->connection_manager.listener);
	bolt_endpoint_unbind_all(endpoint);
	bolt_domain_unlock(domain);
	atomic_fetch_sub(&domain->child_count, 1);
	fi_freeinfo(endpoint->info);
	free(endpoint);
	return 0;
}

/* fi_join is the attached layer's: without one, no groups are offered. */
static int bolt_endpoint_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
			      struct fid_mc **mc_fid, void *context)
{
	struct bolt_endpoint *endpoint = bolt_container_of(ep_fid, struct bolt_endpoint, ep_fid);

	if (!endpoint->upper)
		return bolt_no_join(ep_fid, addr, flags, mc_fid, context);
	return endpoint->upper->join(endpoint, addr, flags, mc_fid, context);
}

static struct fi_ops bolt_endpoint_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_endpoint_close,
	.bind = bolt_endpoint_bind,
	.control = bolt_endpoint_control,
	.ops_open = bolt_no_ops_open,
};

static struct fi_ops_ep bolt_endpoint_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = bolt_endpoint_cancel,
	.getopt = bolt_endpoint_getopt,
	.setopt = bolt_endpoint_setopt,
	.tx_ctx = bolt_no_tx_context,
	.rx_ctx = bolt_no_rx_context,
	.rx_size_left = bolt_no_size_left,
	.tx_size_left = bolt_no_size_left,
};

static struct fi_ops_cm bolt_endpoint_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = bolt_endpoint_setname,
	.getname = bolt_endpoint_getname,
	.getpeer = bolt_no_getpeer,
	.connect = bolt_no_connect,
	.listen = bolt_no_listen,
	.accept = bolt_no_accept,
	.reject = bolt_no_reject,
	.shutdown = bolt_no_shutdown,
	.join = bolt_endpoint_join,
};

int bolt_endpoint_open(struct fid_domain *domain_fid, struct fi_info *info,
		       struct fid_ep **ep_fid, void *context)
{
	struct bolt_domain *domain = bolt_container_of(domain_fid, struct bolt_domain, domain_fid);
	struct bolt_endpoint *endpoint;
	int ret;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
		      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	/* An endpoint does what its info says: atomics, say, would find no ops table. */
	ret = bolt_getinfo_check_offered(&domain->primary.device, &domain->primary.port, info);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"fi_endpoint: the fi_info is not one bolt offers (FI_LOG_LEVEL=info says why)\n");
		return ret;
	}
	endpoint = calloc(1, sizeof(*endpoint));
	if (!endpoint)
		return -FI_ENOMEM;
	endpoint->domain = domain;
	endpoint->connection_manager.listener.fd = -1;
	endpoint->info = fi_dupinfo(info);
	if (!endpoint->info) {
		free(endpoint);
		return -FI_ENOMEM;
	}
	endpoint->caps = info->caps ? info->caps : BOLT_CAPS_IMPLEMENTED;
	endpoint->transmit_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	endpoint->transmit_queue_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size :
					BOLT_QUEUE_SIZE;
	endpoint->receive_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ret = bolt_endpoint_listen_initial(endpoint, info);
	if (ret) {
		/* It may have listened before finding no address peers can reach. */
		if (endpoint->connection_manager.listener.fd >= 0)
			bolt_side_channel_listener_close(&endpoint->connection_manager.listener);
		fi_freeinfo(endpoint->info);
		free(endpoint);
		return ret;
	}
	bolt_domain_lock(domain);
	bolt_connection_manager_start(&endpoint->connection_manager, domain, &bolt_peer_events);
	bolt_domain_unlock(domain);
	endpoint->ep_fid.fid.fclass = FI_CLASS_EP;
	endpoint->ep_fid.fid.context = context;
	endpoint->ep_fid.fid.ops = &bolt_endpoint_fi_ops;
	endpoint->ep_fid.ops = &bolt_endpoint_ops;
	endpoint->ep_fid.cm = &bolt_endpoint_cm_ops;
	endpoint->ep_fid.msg = &bolt_msg_ops;
	endpoint->ep_fid.tagged = &bolt_tagged_ops;
	endpoint->ep_fid.rma = &bolt_rma_ops;
	/* FI_ATOMIC is not advertised: no ops table for it. */
	atomic_fetch_add(&domain->child_count, 1);
	*ep_fid = &endpoint->ep_fid;
	return 0;
}
