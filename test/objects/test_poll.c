/*
 * test_poll.c: poll sets on the fixture domain, as fabtests' fi_poll uses
 * them: fi_poll drives progress and names the completion queues holding a
 * completion or an error and the counters that changed since it last looked;
 * members must be CQs or counters of the set's domain; a member stays open
 * while in a set, and a set with members does not close.
 */
#include <criterion/criterion.h>

#include "bolt_fi_compat.h"
#include "objects_fixture.h"

/* libfabric 2.x deprecates poll sets; bolt offers them to applications of API 1.x. */
BOLT_DEPRECATED_CALLS_BEGIN

TestSuite(poll, .init = objects_setup, .fini = objects_teardown);

static struct fid_poll *open_poll(void)
{
	struct fi_poll_attr attr = { 0 };
	struct fid_poll *poll = NULL;

	cr_assert_eq(bolt_poll_open(&objects.domain.domain_fid, &attr, &poll), 0);
	cr_assert_eq(poll->fid.fclass, FI_CLASS_POLL);
	return poll;
}

static struct fid_cq *open_cq(void *context)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 8 };
	struct fid_cq *cq = NULL;

	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, context), 0);
	return cq;
}

static struct fid_cntr *open_cntr(void *context)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, context), 0);
	return cntr;
}

struct completions {
	struct bolt_cq *cq;
	struct bolt_cntr *cntr;
};

/* Progress completes one operation into the CQ and counts one on the counter. */
static void complete_one(struct bolt_domain *domain, void *argument)
{
	struct completions *completions = argument;

	if (completions->cq)
		bolt_cq_report(completions->cq,
			       &(struct fi_cq_tagged_entry) { .op_context = (void *) 0x1,
							      .flags = FI_SEND | FI_MSG },
			       FI_ADDR_NOTAVAIL);
	if (completions->cntr)
		bolt_cntr_increment(completions->cntr);
	completions->cq = NULL;
	completions->cntr = NULL;
}

Test(poll, names_what_progress_completed)
{
	struct fid_poll *poll = open_poll();
	struct fid_cq *cq = open_cq((void *) 0xc0);
	struct fid_cntr *cntr = open_cntr((void *) 0xc1);
	struct completions completions = {
		.cq = bolt_container_of(cq, struct bolt_cq, cq_fid),
		.cntr = bolt_container_of(cntr, struct bolt_cntr, cntr_fid),
	};
	struct fi_cq_entry entry;
	void *contexts[4] = { 0 };
	int calls = atomic_load(&objects.progress_calls);

	cr_assert_eq(fi_poll_add(poll, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(poll, &cntr->fid, 0), 0);
	cr_assert_eq(fi_poll(poll, contexts, 4), 0, "nothing happened yet");
	cr_assert_gt(atomic_load(&objects.progress_calls), calls, "fi_poll drives progress");

	objects_set_progress_hook(complete_one, &completions);
	cr_assert_eq(fi_poll(poll, contexts, 4), 2);
	cr_assert_eq(contexts[0], (void *) 0xc0);
	cr_assert_eq(contexts[1], (void *) 0xc1);
	/* The CQ stays ready until read; the counter's change is news only once. */
	cr_assert_eq(fi_poll(poll, contexts, 4), 1);
	cr_assert_eq(contexts[0], (void *) 0xc0);
	cr_assert_eq(fi_poll(poll, contexts, 0), 0, "no room, nothing named");
	cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
	cr_assert_eq(fi_poll(poll, contexts, 4), 0);
	cr_assert_eq(fi_cntr_add(cntr, 2), 0);
	cr_assert_eq(fi_poll(poll, contexts, 1), 1);
	cr_assert_eq(contexts[0], (void *) 0xc1);

	cr_assert_eq(fi_poll_del(poll, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_del(poll, &cntr->fid, 0), 0);
	cr_assert_eq(fi_close(&poll->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(poll, names_a_queue_holding_an_error)
{
	struct fid_poll *poll = open_poll();
	struct fid_cq *cq = open_cq((void *) 0xe0);
	void *context = NULL;

	cr_assert_eq(fi_poll_add(poll, &cq->fid, 0), 0);
	cr_assert_eq(bolt_cq_report_error(bolt_container_of(cq, struct bolt_cq, cq_fid),
					  &(struct fi_cq_tagged_entry) { .flags = FI_RECV }, 0, FI_EIO,
					  0), 0);
	cr_assert_eq(fi_poll(poll, &context, 1), 1);
	cr_assert_eq(context, (void *) 0xe0);
	cr_assert_eq(fi_poll_del(poll, &cq->fid, 0), 0);
	cr_assert_eq(fi_close(&poll->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(poll, members_and_their_lifetimes)
{
	struct fid_poll *poll = open_poll();
	struct fid_cq *cq = open_cq(NULL);
	struct fid_cntr *cntr = open_cntr(NULL);
	struct fi_poll_attr flagged = { .flags = 1 };
	struct fid_poll *refused = NULL;

	cr_assert_eq(bolt_poll_open(&objects.domain.domain_fid, &flagged, &refused), -FI_EINVAL);
	cr_assert_null(refused);
	cr_assert_eq(fi_poll_add(poll, &poll->fid, 0), -FI_EINVAL, "only CQs and counters");
	cr_assert_eq(fi_poll_del(poll, &cq->fid, 0), -FI_EINVAL, "not a member");
	cr_assert_eq(fi_poll_add(poll, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(poll, &cq->fid, 0), -FI_EALREADY);
	cr_assert_eq(fi_poll_add(poll, &cntr->fid, 0), 0);
	cr_assert_eq(fi_close(&cq->fid), -FI_EBUSY, "a member stays open");
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY, "a member stays open");
	cr_assert_eq(fi_close(&poll->fid), -FI_EBUSY, "a set with members stays open");
	cr_assert_eq(fi_poll_del(poll, &cq->fid, 0), 0);
	cr_assert_eq(fi_poll_del(poll, &cntr->fid, 0), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&poll->fid), 0);
}

BOLT_DEPRECATED_CALLS_END
