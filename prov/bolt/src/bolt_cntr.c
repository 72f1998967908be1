/*
 * bolt_cntr.c: completion counters: a count of successful operations and a
 * count of failed ones, raised by progress (bolt_cntr_increment) and changed
 * by the application, under the domain lock. Reads drive progress first,
 * since bolt's progress is manual.
 */
#include <stdlib.h>

#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include "bolt_wait.h"

void bolt_cntr_increment(struct bolt_cntr *cntr)
{
	cntr->value++;
	bolt_wait_fd_set(&cntr->wait_fd, true);
}

void bolt_cntr_increment_error(struct bolt_cntr *cntr)
{
	cntr->error_value++;
	bolt_wait_fd_set(&cntr->wait_fd, true);
}

static uint64_t bolt_cntr_read(struct fid_cntr *cntr_fid)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);
	uint64_t value;

	bolt_domain_lock(cntr->domain);
	bolt_domain_progress(cntr->domain);
	value = cntr->value;
	bolt_wait_fd_set(&cntr->wait_fd, false);
	bolt_domain_unlock(cntr->domain);
	return value;
}

static uint64_t bolt_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);
	uint64_t error_value;

	bolt_domain_lock(cntr->domain);
	bolt_domain_progress(cntr->domain);
	error_value = cntr->error_value;
	bolt_wait_fd_set(&cntr->wait_fd, false);
	bolt_domain_unlock(cntr->domain);
	return error_value;
}

static int bolt_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);

	bolt_domain_lock(cntr->domain);
	cntr->value += value;
	bolt_wait_fd_set(&cntr->wait_fd, true);
	bolt_domain_unlock(cntr->domain);
	return 0;
}

static int bolt_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);

	bolt_domain_lock(cntr->domain);
	cntr->error_value += value;
	bolt_wait_fd_set(&cntr->wait_fd, true);
	bolt_domain_unlock(cntr->domain);
	return 0;
}

static int bolt_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);

	bolt_domain_lock(cntr->domain);
	cntr->value = value;
	bolt_wait_fd_set(&cntr->wait_fd, true);
	bolt_domain_unlock(cntr->domain);
	return 0;
}

static int bolt_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);

	bolt_domain_lock(cntr->domain);
	cntr->error_value = value;
	bolt_wait_fd_set(&cntr->wait_fd, true);
	bolt_domain_unlock(cntr->domain);
	return 0;
}

/* What fi_cntr_wait waits for: the threshold, or any change of the error value. */
struct bolt_cntr_wait {
	const struct bolt_cntr *cntr;
	uint64_t threshold;
	uint64_t error_value;   /* when the wait began */
};

static bool bolt_cntr_wait_over(void *argument)
{
	const struct bolt_cntr_wait *wait = argument;

	return wait->cntr->value >= wait->threshold ||
	       wait->cntr->error_value != wait->error_value;
}

/*
 * 0 once the value reaches threshold; -FI_EAVAIL when an operation fails
 * first (fi_cntr(3): any change of the error value ends the wait);
 * -FI_ETIMEDOUT after timeout milliseconds.
 */
static int bolt_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold, int timeout)
{
	struct bolt_cntr *cntr = bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);
	struct bolt_cntr_wait wait = { .cntr = cntr, .threshold = threshold };
	int ret;

	bolt_domain_lock(cntr->domain);
	wait.error_value = cntr->error_value;
	ret = bolt_wait_progress(cntr->domain, bolt_cntr_wait_over, &wait, timeout);
	if (cntr->value >= threshold)
		ret = 0;
	else if (!ret)
		ret = -FI_EAVAIL;
	bolt_wait_fd_set(&cntr->wait_fd, false);
	bolt_domain_unlock(cntr->domain);
	return ret;
}

static struct fi_ops_cntr bolt_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = bolt_cntr_read,
	.readerr = bolt_cntr_readerr,
	.add = bolt_cntr_add,
	.set = bolt_cntr_set,
	.wait = bolt_cntr_wait,
	.adderr = bolt_cntr_adderr,
	.seterr = bolt_cntr_seterr,
};

static int bolt_cntr_close(struct fid *fid)
{
	struct bolt_cntr *cntr = bolt_container_of(fid, struct bolt_cntr, cntr_fid.fid);

	if (atomic_load(&cntr->bind_count)) {
		FI_WARN(&bolt_prov, FI_LOG_CNTR, "counter still bound to %d objects\n",
			atomic_load(&cntr->bind_count));
		return -FI_EBUSY;
	}
	bolt_wait_fd_close(&cntr->wait_fd);
	atomic_fetch_sub(&cntr->domain->child_count, 1);
	free(cntr);
	return 0;
}

/* FI_GETWAIT and FI_GETWAITOBJ, for FI_WAIT_FD. */
static int bolt_cntr_control(struct fid *fid, int command, void *argument)
{
	struct bolt_cntr *cntr = bolt_container_of(fid, struct bolt_cntr, cntr_fid.fid);

	return bolt_wait_fd_control(&cntr->wait_fd, command, argument);
}

static struct fi_ops bolt_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_cntr_close,
	.bind = bolt_no_bind,
	.control = bolt_cntr_control,
	.ops_open = bolt_no_ops_open,
};

static int bolt_cntr_check_attr(const struct fi_cntr_attr *attr)
{
	if (attr->events != FI_CNTR_EVENTS_COMP) {
		FI_WARN(&bolt_prov, FI_LOG_CNTR, "counter events %d not supported\n",
			attr->events);
		return -FI_ENOSYS;
	}
	if (attr->flags) {
		FI_WARN(&bolt_prov, FI_LOG_CNTR, "counter flags %#llx are reserved and must be 0\n",
			(unsigned long long) attr->flags);
		return -FI_EINVAL;
	}
	return bolt_wait_object_check(attr->wait_obj, FI_LOG_CNTR);
}

int bolt_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	struct bolt_domain *domain = bolt_container_of(domain_fid, struct bolt_domain, domain_fid);
	struct fi_cntr_attr defaults = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct bolt_cntr *cntr;
	int ret;

	if (!cntr_fid)
		return -FI_EINVAL;
	if (!attr)
		attr = &defaults;
	ret = bolt_cntr_check_attr(attr);
	if (ret)
		return ret;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = bolt_wait_fd_open(&cntr->wait_fd, attr->wait_obj);
	if (ret) {
		free(cntr);
		return ret;
	}
	cntr->domain = domain;
	cntr->wait_object = attr->wait_obj;
	atomic_init(&cntr->bind_count, 0);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &bolt_cntr_fi_ops;
	cntr->cntr_fid.ops = &bolt_cntr_ops;
	atomic_fetch_add(&domain->child_count, 1);
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
