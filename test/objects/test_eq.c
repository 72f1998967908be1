/*
 * test_eq.c: event queues on the fixture fabric: written events read back
 * whole, truncated or peeked, errors first through fi_eq_readerr with
 * fi_eq(3)'s err_data rules, blocking reads (timeout, an event from another
 * thread, a domain watched while the reader waits), a full queue, and
 * closing while bound.
 */
#include <pthread.h>
#include <string.h>
#include <criterion/criterion.h>

#include "objects_fixture.h"

TestSuite(eq, .init = objects_setup, .fini = objects_teardown);

static struct fid_eq *open_eq(enum fi_wait_obj wait_object, size_t size)
{
	struct fi_eq_attr attr = { .wait_obj = wait_object, .size = size, .flags = FI_WRITE };
	struct fid_eq *eq = NULL;

	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), 0);
	return eq;
}

static struct bolt_eq *bolt_eq_of(struct fid_eq *eq_fid)
{
	return bolt_container_of(eq_fid, struct bolt_eq, eq_fid);
}

static int report_error(struct fid_eq *eq, uint64_t data)
{
	return bolt_eq_report_error(bolt_eq_of(eq), &eq->fid, (void *) 0xc0, data, FI_EINVAL, -FI_EADDRNOTAVAIL);
}

Test(eq, opens_with_defaults_and_counts_on_the_fabric)
{
	struct fid_eq *eq = NULL;

	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, NULL, &eq, (void *) 0xc0de), 0);
	cr_assert_eq(eq->fid.fclass, FI_CLASS_EQ);
	cr_assert_eq(eq->fid.context, (void *) 0xc0de);
	cr_assert_eq(atomic_load(&objects.fabric.child_count), 1);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0, "an EQ is not a domain object");
	cr_assert_eq(fi_close(&eq->fid), 0);
	cr_assert_eq(atomic_load(&objects.fabric.child_count), 0);
}

Test(eq, refuses_what_it_cannot_honour)
{
	struct fi_eq_attr attr = { .flags = FI_AFFINITY };
	struct fid_eq *eq = NULL;

	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), -FI_ENOSYS);
	attr.flags = FI_READ;
	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(bolt_eq_open(&objects.fabric.fabric_fid, &attr, &eq, NULL), -FI_ENOSYS);
	cr_assert_null(eq);
	cr_assert_eq(atomic_load(&objects.fabric.child_count), 0);
}

Test(eq, written_event_reads_back_whole)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	struct fi_eq_entry written = { .fid = &eq->fid, .context = (void *) 3, .data = 99 };
	struct fi_eq_entry read = { 0 };
	uint32_t event = 0;

	cr_assert_eq(fi_eq_write(eq, FI_AV_COMPLETE, &written, sizeof(written), 0),
		     sizeof(written));
	cr_assert_eq(fi_eq_read(eq, &event, &read, sizeof(read), 0), sizeof(read));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(memcmp(&read, &written, sizeof(read)), 0);
	cr_assert_eq(fi_eq_read(eq, &event, &read, sizeof(read), 0), -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, events_of_any_size_in_order)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	unsigned char large[300], buffer[400];
	uint32_t event = 0;

	for (size_t i = 0; i < sizeof(large); i++)
		large[i] = (unsigned char) i;
	cr_assert_eq(fi_eq_write(eq, 1, "abc", 3, 0), 3);
	cr_assert_eq(fi_eq_write(eq, 2, large, sizeof(large), 0), sizeof(large));
	cr_assert_eq(fi_eq_write(eq, 3, NULL, 0, 0), 0);
	cr_assert_eq(fi_eq_read(eq, &event, buffer, sizeof(buffer), 0), 3);
	cr_assert_eq(event, 1);
	cr_assert_eq(memcmp(buffer, "abc", 3), 0);
	cr_assert_eq(fi_eq_read(eq, &event, buffer, sizeof(buffer), 0), sizeof(large));
	cr_assert_eq(event, 2);
	cr_assert_eq(memcmp(buffer, large, sizeof(large)), 0);
	cr_assert_eq(fi_eq_read(eq, &event, NULL, 0, 0), 0);
	cr_assert_eq(event, 3);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, small_buffer_gets_the_start_of_the_event)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	char buffer[4] = { 0 };
	uint32_t event = 0;

	cr_assert_eq(fi_eq_write(eq, 7, "0123456789", 10, 0), 10);
	cr_assert_eq(fi_eq_read(eq, &event, buffer, sizeof(buffer), 0), sizeof(buffer));
	cr_assert_eq(memcmp(buffer, "0123", 4), 0);
	cr_assert_eq(event, 7);
	cr_assert_eq(fi_eq_read(eq, &event, buffer, sizeof(buffer), 0), -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, peek_leaves_the_event_queued)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	uint64_t value = 0;
	uint32_t event = 0;

	cr_assert_eq(fi_eq_write(eq, 4, &(uint64_t) { 44 }, sizeof(uint64_t), 0), sizeof(uint64_t));
	cr_assert_eq(fi_eq_write(eq, 5, &(uint64_t) { 55 }, sizeof(uint64_t), 0), sizeof(uint64_t));
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), FI_PEEK), sizeof(value));
		cr_assert_eq(event, 4);
		cr_assert_eq(value, 44);
	}
	cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), 0), sizeof(value));
	cr_assert_eq(value, 44);
	cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), 0), sizeof(value));
	cr_assert_eq(value, 55);
	cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), FI_PEEK), -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, errors_are_announced_then_read_with_readerr)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	struct fi_eq_err_entry error = { 0 };
	uint32_t event = 0;
	uint64_t value;

	cr_assert_eq(fi_eq_write(eq, 1, &(uint64_t) { 11 }, sizeof(uint64_t), 0), sizeof(uint64_t));
	cr_assert_eq(report_error(eq, 6), 0);
	cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), 0), -FI_EAVAIL);
	cr_assert_eq(fi_eq_readerr(eq, &error, FI_PEEK), sizeof(error));
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), sizeof(error));
	cr_assert_eq(error.fid, &eq->fid);
	cr_assert_eq(error.context, (void *) 0xc0);
	cr_assert_eq(error.data, 6);
	cr_assert_eq(error.err, FI_EINVAL);
	cr_assert_eq(error.prov_errno, -FI_EADDRNOTAVAIL);
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), -FI_EAGAIN);
	cr_assert_eq(fi_eq_read(eq, &event, &value, sizeof(value), 0), sizeof(value));
	cr_assert_eq(value, 11);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, err_data_is_empty_under_each_rule)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	char buffer[16];
	struct fi_eq_err_entry error = { .err_data = buffer, .err_data_size = sizeof(buffer) };

	cr_assert_eq(report_error(eq, 1), 0);
	cr_assert_eq(report_error(eq, 2), 0);
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), sizeof(error));
	cr_assert_eq(error.err_data, buffer, "the caller's buffer stays");
	cr_assert_eq(error.err_data_size, 0, "with nothing copied into it");

	error = (struct fi_eq_err_entry) { .err_data = (void *) 0xdead, .err_data_size = 0 };
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), sizeof(error));
	cr_assert_null(error.err_data, "a size of 0 asks for the provider's buffer: there is none");
	cr_assert_eq(error.err_data_size, 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, before_api_1_5_err_data_size_is_not_written)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	struct fi_eq_err_entry error = { .err_data_size = 12345 };

	objects.fabric.fabric_fid.api_version = FI_VERSION(1, 4);
	cr_assert_eq(report_error(eq, 1), 0);
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), offsetof(struct fi_eq_err_entry, err_data_size));
	cr_assert_eq(error.err_data_size, 12345);
	cr_assert_eq(error.data, 1);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, strerror_names_libfabric_errors)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	char buffer[64], tiny[4];

	cr_assert_str_eq(fi_eq_strerror(eq, -FI_EADDRNOTAVAIL, NULL, NULL, 0),
			 fi_strerror(FI_EADDRNOTAVAIL));
	cr_assert_eq(fi_eq_strerror(eq, FI_ENOEQ, NULL, buffer, sizeof(buffer)), buffer);
	cr_assert_str_eq(buffer, fi_strerror(FI_ENOEQ));
	cr_assert_eq(fi_eq_strerror(eq, FI_ENOEQ, NULL, tiny, sizeof(tiny)), tiny);
	cr_assert_eq(strlen(tiny), 3);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, sread_times_out_with_eagain)
{
	struct fid_eq *eq = open_eq(FI_WAIT_UNSPEC, 0);
	struct fi_eq_entry entry;
	struct timespec start;
	uint32_t event;
	double elapsed;

	objects_now(&start);
	cr_assert_eq(fi_eq_sread(eq, &event, &entry, sizeof(entry), 50, 0), -FI_EAGAIN);
	elapsed = objects_elapsed_ms(&start);
	cr_assert_geq(elapsed, 50.0);
	cr_assert_lt(elapsed, 500.0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* Threads hand their result back: Criterion asserts belong to the test's own thread. */
struct later {
	struct fid_eq *eq;
	ssize_t result;
};

static void *write_later(void *argument)
{
	struct later *later = argument;

	objects_sleep_ms(30);
	later->result = fi_eq_write(later->eq, FI_JOIN_COMPLETE, "join", 4, 0);
	return NULL;
}

/* A blocking read, with timeout, gets the "join" event that what runs in a thread makes soon. */
static void sread_join_event_from(struct fid_eq *eq, void *(*what)(void *), void *argument,
				  int timeout)
{
	char buffer[8] = { 0 };
	struct timespec start;
	uint32_t event = 0;
	pthread_t thread;

	objects_now(&start);
	cr_assert_eq(pthread_create(&thread, NULL, what, argument), 0);
	cr_assert_eq(fi_eq_sread(eq, &event, buffer, sizeof(buffer), timeout, 0), 4);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0);
	pthread_join(thread, NULL);
	cr_assert_eq(event, FI_JOIN_COMPLETE);
	cr_assert_str_eq(buffer, "join");
}

Test(eq, sread_wakes_for_an_event_from_another_thread)
{
	struct fid_eq *eq = open_eq(FI_WAIT_UNSPEC, 0);
	struct later later = { .eq = eq, .result = -1 };

	sread_join_event_from(eq, write_later, &later, -1);
	cr_assert_eq(later.result, 4);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* A reader already asleep drives a domain watched after it went to sleep (a join begun later). */
struct watched_later {
	struct fid_eq *eq;
	bool written;
	int result;
};

static void write_on_progress(struct bolt_domain *domain, void *argument)
{
	struct watched_later *later = argument;

	(void) domain;
	if (!later->written)
		later->written = fi_eq_write(later->eq, FI_JOIN_COMPLETE, "join", 4, 0) == 4;
}

static void *watch_later(void *argument)
{
	struct watched_later *later = argument;

	objects_sleep_ms(30);
	objects_set_progress_hook(write_on_progress, later);
	later->result = bolt_eq_watch(bolt_eq_of(later->eq), &objects.domain);
	return NULL;
}

Test(eq, sread_drives_a_domain_watched_while_it_waits)
{
	struct fid_eq *eq = open_eq(FI_WAIT_UNSPEC, 0);
	struct watched_later later = { .eq = eq, .result = -1 };

	/* A timeout, so that a reader left asleep fails the test rather than hanging it. */
	sread_join_event_from(eq, watch_later, &later, 10000);
	cr_assert_eq(later.result, 0);
	bolt_eq_unwatch(bolt_eq_of(eq), &objects.domain);
	objects_set_progress_hook(NULL, NULL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, sread_returns_eavail_for_a_pending_error)
{
	struct fid_eq *eq = open_eq(FI_WAIT_UNSPEC, 0);
	uint32_t event;
	char buffer[8];

	cr_assert_eq(report_error(eq, 1), 0);
	cr_assert_eq(fi_eq_sread(eq, &event, buffer, sizeof(buffer), 10000, 0), -FI_EAVAIL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, full_queue_refuses_until_read)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 4);
	struct fi_eq_err_entry error = { 0 };
	uint32_t event;

	for (uint32_t i = 0; i < 3; i++)
		cr_assert_eq(fi_eq_write(eq, i, NULL, 0, 0), 0);
	cr_assert_eq(report_error(eq, 1), 0, "errors share the room");
	cr_assert_eq(fi_eq_write(eq, 9, NULL, 0, 0), -FI_EAGAIN);
	cr_assert_eq(report_error(eq, 2), -FI_EAGAIN);
	cr_assert_eq(fi_eq_readerr(eq, &error, 0), sizeof(error));
	cr_assert_eq(fi_eq_write(eq, 9, NULL, 0, 0), 0);
	cr_assert_eq(fi_eq_read(eq, &event, NULL, 0, 0), 0);
	cr_assert_eq(event, 0);
	cr_assert_eq(fi_close(&eq->fid), 0, "events still queued are freed");
}

Test(eq, close_while_bound_is_busy)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);

	atomic_fetch_add(&bolt_eq_of(eq)->bind_count, 1);
	cr_assert_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_assert_eq(atomic_load(&objects.fabric.child_count), 1);
	atomic_fetch_sub(&bolt_eq_of(eq)->bind_count, 1);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, every_slot_answers)
{
	struct fid_eq *eq = open_eq(FI_WAIT_NONE, 0);
	void *wait = NULL, *ops = NULL;

	cr_assert_eq(eq->ops->size, sizeof(struct fi_ops_eq));
	cr_assert(eq->ops->read && eq->ops->readerr && eq->ops->write && eq->ops->sread &&
		  eq->ops->strerror);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &wait), -FI_ENODATA, "no FI_WAIT_FD");
	cr_assert_eq(eq->fid.ops->bind(&eq->fid, &eq->fid, 0), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&eq->fid, "bolt", 0, &ops, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_eq_write(eq, 1, NULL, 8, 0), -FI_EINVAL);
	cr_assert_eq(fi_eq_read(eq, NULL, NULL, 8, 0), -FI_EINVAL);
	cr_assert_eq(fi_eq_readerr(eq, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}
