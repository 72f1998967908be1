/*
 * test_cntr.c: counters on the fixture domain: the application's add, set
 * and read of both values, increments made by progress, fi_cntr_wait
 * reaching its threshold from another thread or from progress, ended by an
 * error or by its timeout, and closing while bound.
 */
#include <pthread.h>
#include <criterion/criterion.h>

#include "objects_fixture.h"

TestSuite(cntr, .init = objects_setup, .fini = objects_teardown);

static struct fid_cntr *open_cntr(enum fi_wait_obj wait_object)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_object };
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), 0);
	return cntr;
}

static struct bolt_cntr *bolt_cntr_of(struct fid_cntr *cntr_fid)
{
	return bolt_container_of(cntr_fid, struct bolt_cntr, cntr_fid);
}

Test(cntr, opens_with_defaults_and_counts_on_the_domain)
{
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, NULL, &cntr, (void *) 0xc0de), 0);
	cr_assert_eq(cntr->fid.fclass, FI_CLASS_CNTR);
	cr_assert_eq(cntr->fid.context, (void *) 0xc0de);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	cr_assert_eq(fi_cntr_read(cntr), 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);
}

Test(cntr, refuses_what_it_cannot_honour)
{
	struct fi_cntr_attr attr = { .events = (enum fi_cntr_events) 5 };
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), -FI_ENOSYS);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.flags = 1;
	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), -FI_EINVAL);
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), -FI_ENOSYS);
	attr.wait_obj = (enum fi_wait_obj) 42;
	cr_assert_eq(bolt_cntr_open(&objects.domain.domain_fid, &attr, &cntr, NULL), -FI_EINVAL);
	cr_assert_null(cntr);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);
}

Test(cntr, add_set_and_their_error_twins)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_NONE);

	cr_assert_eq(fi_cntr_add(cntr, 5), 0);
	cr_assert_eq(fi_cntr_add(cntr, 7), 0);
	cr_assert_eq(fi_cntr_read(cntr), 12);
	cr_assert_eq(fi_cntr_set(cntr, 100), 0);
	cr_assert_eq(fi_cntr_read(cntr), 100);
	cr_assert_eq(fi_cntr_readerr(cntr), 0, "the error value is separate");
	cr_assert_eq(fi_cntr_adderr(cntr, 2), 0);
	cr_assert_eq(fi_cntr_adderr(cntr, 1), 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 3);
	cr_assert_eq(fi_cntr_seterr(cntr, 0), 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 0);
	cr_assert_eq(fi_cntr_read(cntr), 100);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

static void count_from_progress(struct bolt_domain *domain, void *argument)
{
	bolt_cntr_increment(argument);
	if (atomic_load(&objects.progress_calls) % 2 == 0)
		bolt_cntr_increment_error(argument);
}

Test(cntr, reads_drive_progress_first)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_NONE);

	objects_set_progress_hook(count_from_progress, bolt_cntr_of(cntr));
	cr_assert_eq(fi_cntr_read(cntr), 1);
	cr_assert_eq(fi_cntr_readerr(cntr), 1);
	cr_assert_eq(fi_cntr_read(cntr), 3);
	cr_assert_eq(atomic_load(&objects.progress_calls), 3);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, wait_returns_at_once_when_the_threshold_is_met)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_UNSPEC);

	cr_assert_eq(fi_cntr_set(cntr, 10), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 10, 0), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 3, -1), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

/* Threads hand their result back: Criterion asserts belong to the test's own thread. */
struct later {
	struct fid_cntr *cntr;
	int result;
};

static void *add_later(void *argument)
{
	struct later *later = argument;

	for (int i = 0; i < 4; i++) {
		objects_sleep_ms(10);
		later->result = fi_cntr_add(later->cntr, 1);
	}
	return NULL;
}

Test(cntr, wait_sees_the_threshold_reached_by_another_thread)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_UNSPEC);
	struct later later = { .cntr = cntr, .result = -1 };
	struct timespec start;
	pthread_t thread;

	objects_now(&start);
	cr_assert_eq(pthread_create(&thread, NULL, add_later, &later), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 4, 10000), 0);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0);
	cr_assert_geq(fi_cntr_read(cntr), 4);
	pthread_join(thread, NULL);
	cr_assert_eq(later.result, 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

static void count_successes_from_progress(struct bolt_domain *domain, void *argument)
{
	bolt_cntr_increment(argument);
}

Test(cntr, wait_forever_sees_the_threshold_reached_by_progress)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_UNSPEC);

	objects_set_progress_hook(count_successes_from_progress, bolt_cntr_of(cntr));
	cr_assert_eq(fi_cntr_wait(cntr, 50, -1), 0);
	cr_assert_eq(atomic_load(&objects.progress_calls), 50);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, wait_times_out)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_UNSPEC);
	struct timespec start;
	double elapsed;

	objects_now(&start);
	cr_assert_eq(fi_cntr_wait(cntr, 1, 50), -FI_ETIMEDOUT);
	elapsed = objects_elapsed_ms(&start);
	cr_assert_geq(elapsed, 50.0);
	cr_assert_lt(elapsed, 500.0);
	cr_assert_gt(atomic_load(&objects.progress_calls), 1, "the wait drives progress");
	cr_assert_eq(fi_cntr_readerr(cntr), 0, "a timeout changes no error value");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

static void *fail_later(void *argument)
{
	struct later *later = argument;

	objects_sleep_ms(30);
	later->result = fi_cntr_adderr(later->cntr, 1);
	return NULL;
}

Test(cntr, wait_ends_when_an_operation_fails)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_UNSPEC);
	struct later later = { .cntr = cntr, .result = -1 };
	struct timespec start;
	pthread_t thread;

	cr_assert_eq(fi_cntr_seterr(cntr, 7), 0);
	objects_now(&start);
	cr_assert_eq(pthread_create(&thread, NULL, fail_later, &later), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 1, 10000), -FI_EAVAIL);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0);
	pthread_join(thread, NULL);
	cr_assert_eq(later.result, 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 8);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, close_while_bound_is_busy)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_NONE);

	atomic_fetch_add(&bolt_cntr_of(cntr)->bind_count, 1);
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	atomic_fetch_sub(&bolt_cntr_of(cntr)->bind_count, 1);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, every_slot_answers)
{
	struct fid_cntr *cntr = open_cntr(FI_WAIT_NONE);
	uint64_t flags = 0;
	void *wait = NULL, *ops = NULL;

	cr_assert_eq(cntr->ops->size, sizeof(struct fi_ops_cntr));
	cr_assert(cntr->ops->read && cntr->ops->readerr && cntr->ops->add && cntr->ops->set &&
		  cntr->ops->wait && cntr->ops->adderr && cntr->ops->seterr);
	cr_assert_eq(fi_control(&cntr->fid, FI_GETWAIT, &wait), -FI_ENODATA, "no FI_WAIT_FD");
	cr_assert_eq(fi_control(&cntr->fid, FI_GETOPSFLAG, &flags), -FI_ENOSYS);
	cr_assert_eq(cntr->fid.ops->bind(&cntr->fid, &cntr->fid, 0), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&cntr->fid, "bolt", 0, &ops, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}
