/*
 * test_cq.c: completion queues on the fixture domain: each format's layout,
 * source addresses, the error path with fi_cq(3)'s err_data rules, a full
 * ring, blocking reads (timeout, a completion from another thread or from
 * progress, fi_cq_signal) and closing while bound.
 */
#include <pthread.h>
#include <string.h>
#include <criterion/criterion.h>

#include "objects_fixture.h"

TestSuite(cq, .init = objects_setup, .fini = objects_teardown);

static struct fid_cq *open_cq(enum fi_cq_format format, enum fi_wait_obj wait_object,
			      size_t size)
{
	struct fi_cq_attr attr = { .format = format, .wait_obj = wait_object, .size = size };
	struct fid_cq *cq = NULL;

	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), 0);
	return cq;
}

static struct bolt_cq *bolt_cq_of(struct fid_cq *cq_fid)
{
	return bolt_container_of(cq_fid, struct bolt_cq, cq_fid);
}

/* Reports as progress would: under the domain lock. */
static int report(struct fid_cq *cq_fid, uintptr_t context, fi_addr_t source)
{
	int ret;

	bolt_domain_lock(&objects.domain);
	ret = bolt_cq_report(bolt_cq_of(cq_fid),
			     &(struct fi_cq_tagged_entry) { .op_context = (void *) context,
							    .flags = FI_RECV | FI_TAGGED,
							    .len = 100 + context, .buf = (void *) 0xb0f,
							    .data = 0xda7a + context,
							    .tag = 0x7a9 + context },
			     source);
	bolt_domain_unlock(&objects.domain);
	return ret;
}

static int report_error_code(struct fid_cq *cq_fid, uintptr_t context, int error, int provider_error)
{
	int ret;

	bolt_domain_lock(&objects.domain);
	ret = bolt_cq_report_error(bolt_cq_of(cq_fid),
				   &(struct fi_cq_tagged_entry) { .op_context = (void *) context,
								  .flags = FI_SEND | FI_MSG, .len = 64,
								  .buf = (void *) 0xb0f, .data = 0xda7a,
								  .tag = 0x7a9 },
				   12, error, provider_error);
	bolt_domain_unlock(&objects.domain);
	return ret;
}

static int report_error(struct fid_cq *cq_fid, uintptr_t context, int provider_error)
{
	return report_error_code(cq_fid, context, FI_EIO, provider_error);
}

Test(cq, opens_with_defaults_and_counts_on_the_domain)
{
	struct fid_cq *cq = NULL;

	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, NULL, &cq, (void *) 0xc0de), 0);
	cr_assert_eq(cq->fid.fclass, FI_CLASS_CQ);
	cr_assert_eq(cq->fid.context, (void *) 0xc0de);
	cr_assert_eq(bolt_cq_of(cq)->format, FI_CQ_FORMAT_CONTEXT);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);
}

Test(cq, refuses_what_it_cannot_honour)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_MSG };
	struct fid_cq *cq = NULL;

	attr.flags = FI_AFFINITY;
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), -FI_ENOSYS);
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_POLLFD;
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_SET;
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_NONE;
	attr.format = (enum fi_cq_format) 99;
	cr_assert_eq(bolt_cq_open(&objects.domain.domain_fid, &attr, &cq, NULL), -FI_EINVAL);
	cr_assert_null(cq);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 0);
}

/* Reads one completion of format into a buffer of poison and checks what landed where. */
static void check_format(enum fi_cq_format format, size_t entry_size)
{
	struct fid_cq *cq = open_cq(format, FI_WAIT_NONE, 0);
	unsigned char buffer[2 * sizeof(struct fi_cq_tagged_entry)];
	struct fi_cq_tagged_entry entry;

	memset(buffer, 0xa5, sizeof(buffer));
	cr_assert_eq(report(cq, 7, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(fi_cq_read(cq, buffer, 1), 1);
	memcpy(&entry, buffer, sizeof(entry));
	cr_assert_eq(entry.op_context, (void *) 7);
	if (entry_size >= sizeof(struct fi_cq_msg_entry)) {
		cr_assert_eq(entry.flags, FI_RECV | FI_TAGGED);
		cr_assert_eq(entry.len, 107);
	}
	if (entry_size >= sizeof(struct fi_cq_data_entry)) {
		cr_assert_eq(entry.buf, (void *) 0xb0f);
		cr_assert_eq(entry.data, 0xda7a + 7);
	}
	if (entry_size >= sizeof(struct fi_cq_tagged_entry))
		cr_assert_eq(entry.tag, 0x7a9 + 7);
	for (size_t i = entry_size; i < sizeof(buffer); i++)
		cr_assert_eq(buffer[i], 0xa5, "format %d wrote byte %zu past its entry", format, i);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, context_format_is_op_context_only)
{
	check_format(FI_CQ_FORMAT_CONTEXT, sizeof(struct fi_cq_entry));
}

Test(cq, unspecified_format_is_context)
{
	check_format(FI_CQ_FORMAT_UNSPEC, sizeof(struct fi_cq_entry));
}

Test(cq, msg_format_adds_flags_and_length)
{
	check_format(FI_CQ_FORMAT_MSG, sizeof(struct fi_cq_msg_entry));
}

Test(cq, data_format_adds_buffer_and_data)
{
	check_format(FI_CQ_FORMAT_DATA, sizeof(struct fi_cq_data_entry));
}

Test(cq, tagged_format_adds_the_tag)
{
	check_format(FI_CQ_FORMAT_TAGGED, sizeof(struct fi_cq_tagged_entry));
}

Test(cq, reads_in_order_across_the_end_of_the_ring)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	size_t capacity = bolt_cq_of(cq)->capacity;
	struct fi_cq_entry entries[8];
	uintptr_t expected = 0;

	for (uintptr_t i = 0; i < capacity - 3; i++)
		cr_assert_eq(report(cq, i, FI_ADDR_NOTAVAIL), 0);
	/* Room for eight more only at the start of the ring: the next ones wrap. */
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(fi_cq_read(cq, entries, 1), 1);
		cr_assert_eq(entries[0].op_context, (void *) expected++);
	}
	for (uintptr_t i = capacity - 3; i < capacity + 5; i++)
		cr_assert_eq(report(cq, i, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(bolt_cq_of(cq)->capacity, capacity, "wrapped, not grown");
	for (;;) {
		ssize_t count = fi_cq_read(cq, entries, 8);

		if (count == -FI_EAGAIN)
			break;
		cr_assert_gt(count, 0);
		for (ssize_t i = 0; i < count; i++)
			cr_assert_eq(entries[i].op_context, (void *) expected++);
	}
	cr_assert_eq(expected, capacity + 5);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, read_drives_progress_first)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_entry entry;

	cr_assert_eq(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
	cr_assert_eq(atomic_load(&objects.progress_calls), 1);
	cr_assert_eq(fi_cq_read(cq, NULL, 0), -FI_EAGAIN, "a count of 0 only drives progress");
	cr_assert_eq(atomic_load(&objects.progress_calls), 2);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

static void complete_from_progress(struct bolt_domain *domain, void *argument)
{
	bolt_cq_report(argument, &(struct fi_cq_tagged_entry) { .op_context = (void *) 42, .flags = FI_SEND },
		       FI_ADDR_NOTAVAIL);
	objects.progress_hook = NULL;
}

Test(cq, completion_made_by_progress_is_read_at_once)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_entry entry;

	objects_set_progress_hook(complete_from_progress, bolt_cq_of(cq));
	cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
	cr_assert_eq(entry.op_context, (void *) 42);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, readfrom_gives_each_source)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	struct fi_cq_msg_entry entries[3];
	fi_addr_t sources[3] = { 99, 99, 99 };

	cr_assert_eq(report(cq, 1, 5), 0);
	cr_assert_eq(report(cq, 2, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(fi_cq_readfrom(cq, entries, 3, sources), 2);
	cr_assert_eq(sources[0], 5);
	cr_assert_eq(sources[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(sources[2], 99, "only as many sources as completions are written");
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, error_is_announced_then_read_with_readerr)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0);
	struct fi_cq_data_entry entry;
	struct fi_cq_err_entry error = { 0 };

	cr_assert_eq(report_error(cq, 2, IBV_WC_RETRY_EXC_ERR), 0);
	cr_assert_eq(fi_cq_read(cq, &entry, 1), -FI_EAVAIL, "the error is the topmost completion");
	cr_assert_eq(report(cq, 1, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(fi_cq_read(cq, &entry, 1), -FI_EAVAIL, "a later success waits behind it");
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.op_context, (void *) 2);
	cr_assert_eq(error.flags, FI_SEND | FI_MSG);
	cr_assert_eq(error.len, 64);
	cr_assert_eq(error.buf, (void *) 0xb0f);
	cr_assert_eq(error.data, 0xda7a);
	cr_assert_eq(error.tag, 0x7a9);
	cr_assert_eq(error.olen, 12);
	cr_assert_eq(error.err, FI_EIO);
	cr_assert_eq(error.prov_errno, IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
	cr_assert_eq(entry.op_context, (void *) 1);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/*
 * Successes and errors come out in the order they were reported (fi_cq(3):
 * -FI_EAVAIL when the topmost completion is an error), as from libfabric's
 * own providers: receives posted in order complete in order, failed or not.
 */
Test(cq, successes_and_errors_in_the_order_reported)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_entry entries[4];
	struct fi_cq_err_entry error = { 0 };

	cr_assert_eq(report(cq, 1, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(report(cq, 2, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(report_error(cq, 3, 0), 0);
	cr_assert_eq(report(cq, 4, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(report_error(cq, 5, 0), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), -FI_EAGAIN, "successes come before the error");
	cr_assert_eq(fi_cq_read(cq, entries, 4), 2, "the successes before the first error");
	cr_assert_eq(entries[0].op_context, (void *) 1);
	cr_assert_eq(entries[1].op_context, (void *) 2);
	cr_assert_eq(fi_cq_read(cq, entries, 4), -FI_EAVAIL);
	memset(&error, 0, sizeof(error));       /* err_data from the last read is no buffer of ours */
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.op_context, (void *) 3);
	cr_assert_eq(fi_cq_read(cq, entries, 4), 1);
	cr_assert_eq(entries[0].op_context, (void *) 4);
	cr_assert_eq(fi_cq_read(cq, entries, 4), -FI_EAVAIL);
	memset(&error, 0, sizeof(error));
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.op_context, (void *) 5);
	cr_assert_eq(fi_cq_read(cq, entries, 4), -FI_EAGAIN);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, err_data_without_a_buffer_is_the_providers_text)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_err_entry error = { .err_data = (void *) 0xdead, .err_data_size = 0 };

	cr_assert_eq(report_error(cq, 2, IBV_WC_RETRY_EXC_ERR), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_neq(error.err_data, (void *) 0xdead, "a size of 0 ignores the caller's pointer");
	cr_assert_eq(error.err_data_size, strlen(error.err_data) + 1);
	cr_assert(strstr(error.err_data, fi_strerror(FI_EIO)), "%s", (char *) error.err_data);
	cr_assert(strstr(error.err_data, OBJECTS_RETRY_TEXT), "%s", (char *) error.err_data);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, err_data_goes_into_the_callers_buffer_truncated)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	char small[8], large[256];
	struct fi_cq_err_entry error = { .err_data = small, .err_data_size = sizeof(small) };

	cr_assert_eq(report_error(cq, 1, IBV_WC_RETRY_EXC_ERR), 0);
	cr_assert_eq(report_error(cq, 2, 0), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.err_data, small);
	cr_assert_eq(error.err_data_size, sizeof(small));
	cr_assert_eq(memcmp(small, fi_strerror(FI_EIO), sizeof(small)), 0);

	strcpy(large, "untouched");
	error = (struct fi_cq_err_entry) { .err_data = large, .err_data_size = sizeof(large) };
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.err_data, large);
	cr_assert_str_eq(large, "untouched", "no provider error, no provider data to copy");
	cr_assert_eq(error.err_data_size, 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/*
 * fabtests' fi_recv_cancel reads a cancelled receive's error into an
 * uninitialised entry: err_data and err_data_size are garbage. Without
 * provider data nothing may be written through err_data (libfabric's own CQ
 * code copies only provider data); here the "garbage" points at a canary.
 */
Test(cq, cancelled_operation_writes_nothing_through_a_garbage_err_data)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	char canary[64];
	struct fi_cq_err_entry error;

	memset(canary, 0x5a, sizeof(canary));
	memset(&error, 0xa5, sizeof(error));
	error.err_data = canary;
	error.err_data_size = 0xa5a5a5a5;
	cr_assert_eq(report_error_code(cq, 4, FI_ECANCELED, 0), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.err, FI_ECANCELED);
	cr_assert_eq(error.op_context, (void *) 4);
	cr_assert_eq(error.err_data_size, 0, "no provider data");
	for (size_t i = 0; i < sizeof(canary); i++)
		cr_assert_eq(canary[i], 0x5a, "byte %zu of the caller's err_data was written", i);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* A probe that found nothing has no text: the caller's buffer comes back as it was, and its own. */
Test(cq, err_data_with_nothing_to_copy_keeps_the_callers_buffer)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	char buffer[16] = "untouched";
	struct fi_cq_err_entry error = { .err_data = buffer, .err_data_size = sizeof(buffer) };

	cr_assert_eq(report_error_code(cq, 3, FI_ENOMSG, 0), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.err, FI_ENOMSG);
	cr_assert_eq(error.op_context, (void *) 3);
	cr_assert_eq(error.err_data, buffer, "the caller's pointer, not NULL");
	cr_assert_eq(error.err_data_size, 0);
	cr_assert_str_eq(buffer, "untouched");
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, before_api_1_5_err_data_size_is_not_written)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_err_entry error = { .err_data_size = 12345 };

	objects.fabric.fabric_fid.api_version = FI_VERSION(1, 4);
	cr_assert_eq(report_error(cq, 1, IBV_WC_RETRY_EXC_ERR), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.err_data_size, 12345, "a 1.4 entry ends at err_data");
	cr_assert(strstr(error.err_data, OBJECTS_RETRY_TEXT));
	cr_assert_eq(error.op_context, (void *) 1);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, strerror_names_verbs_statuses_and_libfabric_errors)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	char buffer[64], tiny[6];

	cr_assert_str_eq(fi_cq_strerror(cq, IBV_WC_RETRY_EXC_ERR, NULL, NULL, 0), OBJECTS_RETRY_TEXT);
	cr_assert_eq(fi_cq_strerror(cq, IBV_WC_RETRY_EXC_ERR, NULL, buffer, sizeof(buffer)), buffer);
	cr_assert_str_eq(buffer, OBJECTS_RETRY_TEXT);
	cr_assert_eq(fi_cq_strerror(cq, IBV_WC_RETRY_EXC_ERR, NULL, tiny, sizeof(tiny)), tiny);
	cr_assert_str_eq(tiny, "fake:", "truncated, and terminated");
	cr_assert_str_eq(fi_cq_strerror(cq, -FI_ETIMEDOUT, NULL, NULL, 0), fi_strerror(FI_ETIMEDOUT));
	cr_assert_str_eq(fi_cq_strerror(cq, FI_ENOEQ, NULL, NULL, 0), fi_strerror(FI_ENOEQ));
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, full_ring_grows_and_keeps_order)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	size_t capacity = bolt_cq_of(cq)->capacity;
	struct fi_cq_entry entry;
	uintptr_t expected = 0;

	cr_assert_geq(capacity, 1024, "a small or default size still gets a roomy ring");
	for (size_t i = 0; i < capacity; i++)
		cr_assert_eq(report(cq, i, FI_ADDR_NOTAVAIL), 0, "completion %zu", i);
	/* Read a few so that the ring has wrapped when it must grow. */
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fi_cq_read(cq, &entry, 1), 1);
		cr_assert_eq(entry.op_context, (void *) expected++);
	}
	for (size_t i = capacity; i < 2 * capacity + 10; i++)
		cr_assert_eq(report(cq, i, FI_ADDR_NOTAVAIL), 0, "completion %zu is not dropped", i);
	cr_assert_gt(bolt_cq_of(cq)->capacity, capacity);
	while (fi_cq_read(cq, &entry, 1) == 1)
		cr_assert_eq(entry.op_context, (void *) expected++, "order after growing");
	cr_assert_eq(expected, 2 * capacity + 10);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, requested_size_above_the_default_is_honoured)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 5000);

	cr_assert_geq(bolt_cq_of(cq)->capacity, 5000);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, sread_times_out_with_eagain)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct fi_cq_entry entry;
	struct timespec start;
	double elapsed;

	objects_now(&start);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, 50), -FI_EAGAIN);
	elapsed = objects_elapsed_ms(&start);
	cr_assert_geq(elapsed, 50.0);
	cr_assert_lt(elapsed, 500.0);
	cr_assert_gt(atomic_load(&objects.progress_calls), 1, "the wait drives progress");
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* Threads hand their result back: Criterion asserts belong to the test's own thread. */
struct later {
	struct fid_cq *cq;
	int result;
};

static void *report_later(void *argument)
{
	struct later *later = argument;

	objects_sleep_ms(30);
	later->result = report(later->cq, 77, 3);
	return NULL;
}

Test(cq, sreadfrom_wakes_for_a_completion_from_another_thread)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct later later = { .cq = cq, .result = -1 };
	struct fi_cq_entry entry;
	fi_addr_t source = 0;
	struct timespec start;
	pthread_t thread;

	objects_now(&start);
	cr_assert_eq(pthread_create(&thread, NULL, report_later, &later), 0);
	cr_assert_eq(fi_cq_sreadfrom(cq, &entry, 1, &source, NULL, 10000), 1);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0);
	pthread_join(thread, NULL);
	cr_assert_eq(later.result, 0);
	cr_assert_eq(entry.op_context, (void *) 77);
	cr_assert_eq(source, 3);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* Completes on the fifth progress call, as a device completion arriving late would. */
static void complete_on_fifth_progress(struct bolt_domain *domain, void *argument)
{
	if (atomic_load(&objects.progress_calls) == 5)
		bolt_cq_report(argument,
			       &(struct fi_cq_tagged_entry) { .op_context = (void *) 5, .flags = FI_SEND },
			       FI_ADDR_NOTAVAIL);
}

Test(cq, sread_forever_returns_what_progress_completes)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct fi_cq_entry entry;

	objects_set_progress_hook(complete_on_fifth_progress, bolt_cq_of(cq));
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, -1), 1);
	cr_assert_eq(entry.op_context, (void *) 5);
	cr_assert_eq(atomic_load(&objects.progress_calls), 5);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

static void *error_later(void *argument)
{
	struct later *later = argument;

	objects_sleep_ms(30);
	later->result = report_error(later->cq, 9, IBV_WC_RETRY_EXC_ERR);
	return NULL;
}

Test(cq, sread_wakes_for_an_error_with_eavail)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct later later = { .cq = cq, .result = -1 };
	struct fi_cq_err_entry error = { 0 };
	struct fi_cq_entry entry;
	pthread_t thread;

	cr_assert_eq(pthread_create(&thread, NULL, error_later, &later), 0);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, 10000), -FI_EAVAIL);
	pthread_join(thread, NULL);
	cr_assert_eq(later.result, 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(error.op_context, (void *) 9);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

static void *signal_later(void *argument)
{
	struct later *later = argument;

	objects_sleep_ms(30);
	later->result = fi_cq_signal(later->cq);
	return NULL;
}

Test(cq, signal_wakes_a_blocked_reader_with_eagain)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct later later = { .cq = cq, .result = -1 };
	struct fi_cq_entry entry;
	struct timespec start;
	pthread_t thread;

	objects_now(&start);
	cr_assert_eq(pthread_create(&thread, NULL, signal_later, &later), 0);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, -1), -FI_EAGAIN);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0);
	pthread_join(thread, NULL);
	cr_assert_eq(later.result, 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, signal_is_used_once)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	struct fi_cq_entry entry;
	struct timespec start;

	cr_assert_eq(fi_cq_signal(cq), 0);
	objects_now(&start);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, 10000), -FI_EAGAIN);
	cr_assert_lt(objects_elapsed_ms(&start), 5000.0, "a pending signal ends the wait at once");
	objects_now(&start);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, 20), -FI_EAGAIN);
	cr_assert_geq(objects_elapsed_ms(&start), 20.0, "the signal was consumed");
	cr_assert_eq(report(cq, 1, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(fi_cq_signal(cq), 0);
	cr_assert_eq(fi_cq_sread(cq, &entry, 1, NULL, 0), 1, "data wins over a signal");
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, close_while_bound_is_busy)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);

	atomic_fetch_add(&bolt_cq_of(cq)->bind_count, 1);
	cr_assert_eq(fi_close(&cq->fid), -FI_EBUSY);
	cr_assert_eq(atomic_load(&objects.domain.child_count), 1);
	atomic_fetch_sub(&bolt_cq_of(cq)->bind_count, 1);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

Test(cq, close_frees_pending_and_lent_errors)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fi_cq_err_entry error = { 0 };

	cr_assert_eq(report_error(cq, 1, 0), 0);
	cr_assert_eq(report_error(cq, 2, 0), 0);
	cr_assert_eq(report(cq, 3, FI_ADDR_NOTAVAIL), 0);
	cr_assert_eq(fi_cq_readerr(cq, &error, 0), 1);
	cr_assert_eq(fi_close(&cq->fid), 0, "the sanitizers check nothing leaks");
}

Test(cq, every_slot_answers)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	void *wait = NULL, *ops = NULL;

	cr_assert_eq(cq->ops->size, sizeof(struct fi_ops_cq));
	cr_assert(cq->ops->read && cq->ops->readfrom && cq->ops->readerr && cq->ops->sread &&
		  cq->ops->sreadfrom && cq->ops->signal && cq->ops->strerror);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAIT, &wait), -FI_ENODATA, "no FI_WAIT_FD");
	cr_assert_eq(fi_control(&cq->fid, FI_GETOPSFLAG, &wait), -FI_ENOSYS);
	cr_assert_eq(cq->fid.ops->bind(&cq->fid, &cq->fid, 0), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&cq->fid, "bolt", 0, &ops, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	cr_assert_eq(fi_cq_readerr(cq, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(&cq->fid), 0);
}
