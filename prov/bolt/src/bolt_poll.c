/*
 * bolt_poll.c: poll sets (fi_poll_open): completion queues and counters of
 * one domain, checked together. fi_poll drives the domain's progress once
 * and names each queue that holds a completion or an error, and each counter
 * whose values changed since the set last looked at it.
 */
#include <stdlib.h>

#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include <utlist.h>

struct bolt_poll_member {
	struct fid *fid;                /* a bolt_cq's or a bolt_cntr's */
	uint64_t seen_value;            /* counters: the values fi_poll last saw */
	uint64_t seen_error_value;
	struct bolt_poll_member *next;
};

struct bolt_poll {
	struct fid_poll poll_fid;
	struct bolt_domain *domain;
	struct bolt_poll_member *members;   /* utlist, in the order added */
};

/* The bind count of a CQ or counter, which keeps it open while in a set; NULL for others. */
static atomic_int *bolt_poll_bind_count(struct fid *fid, struct bolt_domain **domain)
{
	if (fid->fclass == FI_CLASS_CQ) {
		struct bolt_cq *cq = bolt_container_of(fid, struct bolt_cq, cq_fid.fid);

		*domain = cq->domain;
		return &cq->bind_count;
	}
	if (fid->fclass == FI_CLASS_CNTR) {
		struct bolt_cntr *cntr = bolt_container_of(fid, struct bolt_cntr, cntr_fid.fid);

		*domain = cntr->domain;
		return &cntr->bind_count;
	}
	return NULL;
}

static struct bolt_poll_member *bolt_poll_find(struct bolt_poll *poll, const struct fid *fid)
{
	struct bolt_poll_member *member;

	LL_FOREACH(poll->members, member) {
		if (member->fid == fid)
			return member;
	}
	return NULL;
}

/* Whether a member has something new; a counter's news is seen only once. Lock held. */
static bool bolt_poll_member_ready(struct bolt_poll_member *member)
{
	const struct bolt_cntr *cntr;

	if (member->fid->fclass == FI_CLASS_CQ) {
		const struct bolt_cq *cq = bolt_container_of(member->fid, struct bolt_cq, cq_fid.fid);

		return cq->count || cq->errors;
	}
	cntr = bolt_container_of(member->fid, struct bolt_cntr, cntr_fid.fid);
	if (cntr->value == member->seen_value && cntr->error_value == member->seen_error_value)
		return false;
	member->seen_value = cntr->value;
	member->seen_error_value = cntr->error_value;
	return true;
}

static int bolt_poll_poll(struct fid_poll *poll_fid, void **context, int count)
{
	struct bolt_poll *poll = bolt_container_of(poll_fid, struct bolt_poll, poll_fid);
	struct bolt_poll_member *member;
	int ready = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	bolt_domain_lock(poll->domain);
	bolt_domain_progress(poll->domain);
	LL_FOREACH(poll->members, member) {
		if (ready == count)
			break;
		if (bolt_poll_member_ready(member))
			context[ready++] = member->fid->context;
	}
	bolt_domain_unlock(poll->domain);
	return ready;
}

static int bolt_poll_add(struct fid_poll *poll_fid, struct fid *event_fid, uint64_t flags)
{
	struct bolt_poll *poll = bolt_container_of(poll_fid, struct bolt_poll, poll_fid);
	struct bolt_poll_member *member;
	struct bolt_domain *domain;
	atomic_int *bind_count;

	if (!event_fid)
		return -FI_EINVAL;
	bind_count = bolt_poll_bind_count(event_fid, &domain);
	if (!bind_count || domain != poll->domain) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN,
			"a poll set takes completion queues and counters of its own domain\n");
		return -FI_EINVAL;
	}
	member = calloc(1, sizeof(*member));
	if (!member)
		return -FI_ENOMEM;
	member->fid = event_fid;
	bolt_domain_lock(poll->domain);
	if (bolt_poll_find(poll, event_fid)) {
		bolt_domain_unlock(poll->domain);
		free(member);
		return -FI_EALREADY;
	}
	LL_APPEND(poll->members, member);
	atomic_fetch_add(bind_count, 1);
	bolt_domain_unlock(poll->domain);
	return 0;
}

static int bolt_poll_del(struct fid_poll *poll_fid, struct fid *event_fid, uint64_t flags)
{
	struct bolt_poll *poll = bolt_container_of(poll_fid, struct bolt_poll, poll_fid);
	struct bolt_poll_member *member;
	struct bolt_domain *domain;

	bolt_domain_lock(poll->domain);
	member = event_fid ? bolt_poll_find(poll, event_fid) : NULL;
	if (member)
		LL_DELETE(poll->members, member);
	bolt_domain_unlock(poll->domain);
	if (!member)
		return -FI_EINVAL;
	atomic_fetch_sub(bolt_poll_bind_count(event_fid, &domain), 1);
	free(member);
	return 0;
}

static int bolt_poll_close(struct fid *fid)
{
	struct bolt_poll *poll = bolt_container_of(fid, struct bolt_poll, poll_fid.fid);

	if (poll->members) {
		FI_WARN(&bolt_prov, FI_LOG_DOMAIN, "poll set closed with members still in it\n");
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&poll->domain->child_count, 1);
	free(poll);
	return 0;
}

static struct fi_ops bolt_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_poll_close,
	.bind = bolt_no_bind,
	.control = bolt_no_control,
	.ops_open = bolt_no_ops_open,
};

static struct fi_ops_poll bolt_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = bolt_poll_poll,
	.poll_add = bolt_poll_add,
	.poll_del = bolt_poll_del,
};

int bolt_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **poll_fid)
{
	struct bolt_domain *domain = bolt_container_of(domain_fid, struct bolt_domain, domain_fid);
	struct bolt_poll *poll;

	if (!poll_fid || (attr && attr->flags))
		return -FI_EINVAL;
	poll = calloc(1, sizeof(*poll));
	if (!poll)
		return -FI_ENOMEM;
	poll->domain = domain;
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	poll->poll_fid.fid.ops = &bolt_poll_fi_ops;
	poll->poll_fid.ops = &bolt_poll_ops;
	atomic_fetch_add(&domain->child_count, 1);
	*poll_fid = &poll->poll_fid;
	return 0;
}
