/*
 * test_wait.c: FI_WAIT_FD on the fixture domain, as fabtests' "-c fd" uses
 * it: FI_GETWAIT hands out an fd that is readable exactly while the CQ holds
 * a completion or an error, while a counter has a change not yet read, or
 * while the EQ holds an event; fi_trywait says -FI_EAGAIN then, and also while
 * the domain has endpoints, whose completions only progress can bring, or
 * the EQ waits for a join that only progress can end.
 */
#include <poll.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "bolt_wait.h"
#include "objects_fixture.h"

TestSuite(wait, .init = objects_setup, .fini = objects_teardown);

/* The fd of fid's FI_WAIT_FD, from FI_GETWAIT, after FI_GETWAITOBJ names it. */
static int wait_fd_of(struct fid *fid)
{
	enum fi_wait_obj wait_object = FI_WAIT_NONE;
	int fd = -1;

	cr_assert_eq(fi_control(fid, FI_GETWAITOBJ, &wait_object), 0);
	cr_assert_eq(wait_object, FI_WAIT_FD);
	cr_assert_eq(fi_control(fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	return fd;
}

static bool readable(int fd)
{
	struct pollfd poll_fd = { .fd = fd, .events = POLLIN };

	return poll(&poll_fd, 1, 0) == 1 && (poll_fd.revents & POLLIN);
}

static int try_wait(struct fid *fid)
{
	return bolt_wait_try(&objects.fabric.fabric_fid, &fid, 1);
}

Test(wait, cq_fd_readable_while_entries_wait)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD };
	struct fid_cq *cq = NULL;
	struct bolt_cq *bolt_cq;
	struct fi_cq_err_entry error = { 0 };
	struct fi_cq_entry entry;
	int fd;

	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), 0);
	bolt_cq = bolt_container_of(cq, struct bolt_cq, cq_fid);
	fd = wait_fd_of(&cq->fid);
	cr_assert_not(readable(fd));
	cr_assert_eq(try_wait(&cq->fid), 0, "nothing queued, no endpoint: safe to block");

	cr_assert_eq(bolt_cq_report(bolt_cq, &(struct fi_cq_tagged_entry) { .op_context = (void *) 1,
									    .flags = FI_SEND },
				    FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(bolt_cq_report(bolt_cq, &(struct fi_cq_tagged_entry) { .op_context = (void *) 2,
									    .flags = FI_SEND },
				    FI_ADDR_NOTAVAIL), 0);
	cr_assert(readable(fd));
	cr_assert_eq(try_wait(&cq->fid), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
	cr_assert(readable(fd), "one completion is left");
	cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
	cr_assert_not(readable(fd));

	cr_assert_eq(bolt_cq_report_error(bolt_cq, &(struct fi_cq_tagged_entry) { .flags = FI_RECV }, 0,
					  FI_EIO, 0), 0);
	cr_assert(readable(fd));
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_not(readable(fd));
	cr_assert_eq(try_wait(&cq->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(wait, counter_fd_readable_after_a_change)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD };
	struct fid_cntr *cntr = NULL;
	int fd;

	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), 0);
	fd = wait_fd_of(&cntr->fid);
	cr_assert_not(readable(fd));
	bolt_cntr_increment(bolt_container_of(cntr, struct bolt_cntr, cntr_fid));
	cr_assert(readable(fd));
	cr_assert_eq(try_wait(&cntr->fid), -FI_EAGAIN);
	cr_assert_eq(fi_cntr_read(cntr), 1);
	cr_assert_not(readable(fd), "the change was read");
	cr_assert_eq(try_wait(&cntr->fid), 0);
	bolt_cntr_increment_error(bolt_container_of(cntr, struct bolt_cntr, cntr_fid));
	cr_assert(readable(fd));
	cr_assert_eq(fi_cntr_readerr(cntr), 1);
	cr_assert_not(readable(fd));
	cr_assert_eq(fi_cntr_add(cntr, 2), 0);
	cr_assert(readable(fd));
	cr_assert_eq(fi_cntr_wait(cntr, 3, 100), 0);
	cr_assert_not(readable(fd));
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(wait, eq_fd_readable_while_events_wait)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fid_eq *eq = NULL;
	uint32_t event;
	uint64_t data = 7;
	int fd;

	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), 0);
	fd = wait_fd_of(&eq->fid);
	cr_assert_not(readable(fd));
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &data, sizeof(data), 0), (ssize_t) sizeof(data));
	cr_assert(readable(fd));
	cr_assert_eq(try_wait(&eq->fid), -FI_EAGAIN);
	cr_assert_eq(fi_eq_read(eq, &event, &data, sizeof(data), FI_PEEK), (ssize_t) sizeof(data));
	cr_assert(readable(fd), "a peek leaves the event");
	cr_assert_eq(fi_eq_read(eq, &event, &data, sizeof(data), 0), (ssize_t) sizeof(data));
	cr_assert_not(readable(fd));
	cr_assert_eq(try_wait(&eq->fid), 0);
	/* A join under way: its event comes only from the progress a reader drives. */
	cr_assert_eq(bolt_eq_watch(bolt_container_of(eq, struct bolt_eq, eq_fid), &objects.domain), 0);
	cr_assert_eq(try_wait(&eq->fid), -FI_EAGAIN, "blocking on the fd would wait for good");
	bolt_eq_unwatch(bolt_container_of(eq, struct bolt_eq, eq_fid), &objects.domain);
	cr_assert_eq(try_wait(&eq->fid), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(wait, trywait_while_endpoints_need_progress)
{
	struct fi_cq_attr fd_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr none_attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq = NULL, *plain = NULL;
	struct bolt_endpoint endpoint = { 0 };
	struct fid *both[2];
	int calls;

	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &fd_attr, &cq, NULL), 0);
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &none_attr, &plain, NULL), 0);
	calls = atomic_load(&objects.progress_calls);
	objects.domain.endpoints = &endpoint;
	cr_expect_eq(try_wait(&cq->fid), -FI_EAGAIN, "an endpoint's completions need progress");
	objects.domain.endpoints = NULL;
	cr_expect_gt(atomic_load(&objects.progress_calls), calls, "fi_trywait drives progress");
	both[0] = &cq->fid;
	both[1] = &plain->fid;
	cr_expect_eq(bolt_wait_try(&objects.fabric.fabric_fid, both, 2), -FI_EINVAL,
		     "a CQ without FI_WAIT_FD has no fd to block on");
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&plain->fid), 0);
}
