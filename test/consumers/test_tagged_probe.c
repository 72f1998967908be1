/*
 * test_tagged_probe.c: FI_PEEK, FI_CLAIM and FI_DISCARD on tagged receives,
 * as MPI's probes use them, on an endpoint talking to its own address: a
 * probe that finds nothing fails with FI_ENOMSG through the CQ error path;
 * one that finds a message reports it and leaves it; a claimed message goes
 * only to the receive with the claim's context; a discarded one to nobody.
 * Small messages (segments) and large ones (rendezvous) alike. A receive
 * counter counts the messages received, not the peeks.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "rdm_fixture.h"

#define SMALL_BYTES 100
#define LARGE_BYTES (1 << 20)

static struct bolt_fixture_endpoint endpoint;
static struct fid_cntr *receives;       /* bound with FI_RECV: counts messages received */
static struct rdm_options options = {
	.profile = "thunderbolt",
	.caps = FI_TAGGED | FI_DIRECTED_RECV,
	.av_type = FI_AV_MAP,
};

static void open_self(void)
{
	struct fi_info *hints = rdm_hints(&options);
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	char name[64];
	size_t length = sizeof(name);

	rdm_environment(&options, "probe");
	cr_assert_not_null(hints);
	cr_assert_eq(rdm_open_domain(&endpoint, hints, &options), 0);
	fi_freeinfo(hints);
	cr_assert_eq(rdm_open_endpoint(&endpoint, &endpoint, &options), 0);
	cr_assert_eq(fi_cntr_open(endpoint.domain, &cntr_attr, &receives, NULL), 0);
	cr_assert_eq(fi_ep_bind(endpoint.ep, &receives->fid, FI_RECV), 0);
	cr_assert_eq(fi_enable(endpoint.ep), 0);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
	cr_assert_eq(fi_av_insert(endpoint.av, name, 1, &endpoint.peer, 0, NULL), 1);
}

static void close_self(void)
{
	cr_assert_eq(fi_close(&endpoint.ep->fid), 0);
	endpoint.ep = NULL;
	cr_assert_eq(fi_close(&receives->fid), 0);
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

TestSuite(probe, .init = open_self, .fini = close_self, .timeout = 60);

static void expect_error(void *context, int expected)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;

	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL);
	cr_assert_eq(error.err, expected, "error %d, expected %d", error.err, expected);
	cr_assert_eq(error.op_context, context);
}

/* Waits for one completion per context given, in any order; entries[i] is contexts[i]'s. */
static void expect_completions(int count, void *const *contexts, struct fi_cq_tagged_entry *entries)
{
	bool seen[4] = { false };

	cr_assert_leq(count, 4);
	for (int received = 0; received < count; received++) {
		struct fi_cq_tagged_entry entry;
		struct fi_cq_err_entry error;
		int ret = rdm_wait(&endpoint, &entry, &error);
		int i;

		cr_assert_eq(ret, 0, "completion %d, error %d", ret, error.err);
		for (i = 0; i < count && (seen[i] || contexts[i] != entry.op_context); i++)
			;
		cr_assert_lt(i, count, "a completion for an unexpected context");
		seen[i] = true;
		entries[i] = entry;
	}
}

/* Starts sending length bytes of seed's pattern with tag; the caller collects its completion. */
static char *send_tagged(size_t length, uint64_t tag, uint32_t seed)
{
	char *buffer = malloc(length);

	cr_assert_not_null(buffer);
	rdm_fill(buffer, length, seed);
	cr_assert_eq(fi_tsend(endpoint.ep, buffer, length, NULL, endpoint.peer, tag, buffer), 0);
	return buffer;
}

static ssize_t receive_with(void *buffer, size_t length, uint64_t tag, void *context,
			    uint64_t flags)
{
	struct iovec iov = { .iov_base = buffer, .iov_len = length };
	/* Without a buffer, no array either: Open MPI's probes pass NULL and 0. */
	struct fi_msg_tagged message = {
		.msg_iov = buffer ? &iov : NULL, .iov_count = buffer ? 1 : 0, .addr = FI_ADDR_UNSPEC,
		.tag = tag, .context = context,
	};

	return fi_trecvmsg(endpoint.ep, &message, flags | FI_COMPLETION);
}

/* Peeks (flags add FI_CLAIM or FI_DISCARD) until the message has arrived, as MPI_Probe does. */
static void peek_until_found(void *buffer, size_t length, uint64_t tag, void *context,
			     uint64_t flags, struct fi_cq_tagged_entry *entry)
{
	struct fi_cq_err_entry error;
	int ret;

	for (int attempt = 0; attempt < 100000; attempt++) {
		cr_assert_eq(receive_with(buffer, length, tag, context, FI_PEEK | flags), 0);
		ret = rdm_wait(&endpoint, entry, &error);
		if (ret == 0) {
			cr_assert_eq(entry->op_context, context);
			return;
		}
		cr_assert_eq(ret, -FI_EAVAIL);
		cr_assert_eq(error.err, FI_ENOMSG, "error %d", error.err);
		cr_assert_eq(error.op_context, context);
	}
	cr_assert_fail("the message never arrived");
}

Test(probe, nothing_to_find_is_fi_enomsg)
{
	void *contexts[2];
	struct fi_cq_tagged_entry entries[2];
	struct fi_context context;
	char in[SMALL_BYTES];
	char *sent;

	cr_assert_eq(receive_with(NULL, 0, 7, &context, FI_PEEK), 0);
	expect_error(&context, FI_ENOMSG);
	/*
	 * A miss is an answer, and writes nothing through err_data, which
	 * callers such as fabtests' fi_rdm_tagged_peek leave uninitialised.
	 */
	{
		struct fi_cq_err_entry error;
		char untouched[16];
		ssize_t ret;

		memset(untouched, 0x5a, sizeof(untouched));
		/* As fi_fabric sets it: err_data_size is the caller's from 1.5 on. */
		endpoint.fabric->api_version = FI_VERSION(1, 17);
		cr_assert_eq(receive_with(NULL, 0, 7, &context, FI_PEEK), 0);
		while ((ret = fi_cq_read(endpoint.cq, &entries[0], 1)) == -FI_EAGAIN)
			sched_yield();
		cr_assert_eq(ret, -FI_EAVAIL);
		error.err_data = untouched;
		error.err_data_size = sizeof(untouched);
		cr_assert_eq(fi_cq_readerr(endpoint.cq, &error, 0), 1);
		cr_assert_eq(error.err, FI_ENOMSG);
		cr_assert_eq(error.err_data_size, 0);
		for (size_t i = 0; i < sizeof(untouched); i++)
			cr_assert_eq(untouched[i], 0x5a, "err_data written at %zu", i);
	}
	/* The peek left nothing posted: the message waits for a receive. */
	sent = send_tagged(SMALL_BYTES, 7, 1);
	contexts[0] = sent;
	expect_completions(1, contexts, entries);
	cr_assert_eq(fi_trecv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, in), 0);
	contexts[0] = in;
	expect_completions(1, contexts, entries);
	cr_assert(rdm_check(in, SMALL_BYTES, 1));
	free(sent);
}

Test(probe, peek_reports_and_leaves_the_message)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context context;
	char peeked[SMALL_BYTES], in[SMALL_BYTES];
	char *sent = send_tagged(SMALL_BYTES, 0x55, 2);
	void *contexts[1] = { sent };

	expect_completions(1, contexts, &entry);
	/* A tag that does not match, then the one that does, data copied. */
	cr_assert_eq(receive_with(NULL, 0, 0x56, &context, FI_PEEK), 0);
	expect_error(&context, FI_ENOMSG);
	peek_until_found(peeked, sizeof(peeked), 0x55, &context, 0, &entry);
	cr_assert_eq(entry.len, SMALL_BYTES);
	cr_assert_eq(entry.tag, 0x55);
	cr_assert(entry.flags & FI_TAGGED && entry.flags & FI_RECV);
	cr_assert_eq(entry.buf, peeked);
	cr_assert(rdm_check(peeked, SMALL_BYTES, 2));
	/* Still there for a receive. */
	cr_assert_eq(fi_trecv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 0x55, 0, in), 0);
	contexts[0] = in;
	expect_completions(1, contexts, &entry);
	cr_assert_eq(entry.len, SMALL_BYTES);
	cr_assert(rdm_check(in, SMALL_BYTES, 2));
	free(sent);
}

/*
 * A claimed message goes to the FI_CLAIM receive, not to a plain one posted
 * first. A large message's send completes only once a receive took it.
 */
static void claim_then_receive(size_t length, uint32_t seed)
{
	bool large = length >= LARGE_BYTES;
	struct fi_cq_tagged_entry entry, entries[2];
	struct fi_context claim;
	char *first = send_tagged(length, 9, seed);
	char *claimed_in = malloc(length), *plain_in = malloc(length);
	void *contexts[2] = { first };
	char *second;

	cr_assert(claimed_in && plain_in);
	if (!large)
		expect_completions(1, contexts, entries);
	peek_until_found(NULL, 0, 9, &claim, FI_CLAIM, &entry);
	cr_assert_eq(entry.len, length);
	cr_assert_null(entry.buf, "no buffer given: no data");
	cr_assert_eq(fi_trecv(endpoint.ep, plain_in, length, NULL, FI_ADDR_UNSPEC, 9, 0, plain_in), 0);
	rdm_progress_for(&endpoint, 20);
	cr_assert_eq(receive_with(claimed_in, length, 9, &claim, FI_CLAIM), 0);
	contexts[0] = &claim;
	contexts[1] = first;
	expect_completions(large ? 2 : 1, contexts, entries);
	cr_assert_eq(entries[0].len, length);
	cr_assert(rdm_check(claimed_in, length, seed), "the claimed message");
	/* The plain receive takes the next message. */
	second = send_tagged(length, 9, seed + 1);
	contexts[0] = plain_in;
	contexts[1] = second;
	expect_completions(2, contexts, entries);
	cr_assert(rdm_check(plain_in, length, seed + 1), "the next message");
	free(first);
	free(second);
	free(claimed_in);
	free(plain_in);
}

Test(probe, claimed_small_message)
{
	claim_then_receive(SMALL_BYTES, 3);
}

Test(probe, claimed_large_message)
{
	claim_then_receive(LARGE_BYTES, 5);
}

Test(probe, discard_by_peek_and_by_claim)
{
	struct fi_cq_tagged_entry entry, entries[3];
	struct fi_context context, claim;
	char in[SMALL_BYTES];
	char *first = send_tagged(SMALL_BYTES, 11, 7);
	char *second = send_tagged(SMALL_BYTES, 11, 8);
	char *third = send_tagged(SMALL_BYTES, 11, 9);
	void *contexts[3] = { first, second, third };

	expect_completions(3, contexts, entries);
	peek_until_found(in, sizeof(in), 11, &context, FI_DISCARD, &entry);
	peek_until_found(NULL, 0, 11, &claim, FI_CLAIM, &entry);
	cr_assert_eq(receive_with(in, sizeof(in), 11, &claim, FI_CLAIM | FI_DISCARD), 0);
	contexts[0] = &claim;
	expect_completions(1, contexts, entries);
	/* The first two are gone: the next receive gets the third. */
	memset(in, 0, sizeof(in));
	cr_assert_eq(fi_trecv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 11, 0, in), 0);
	contexts[0] = in;
	expect_completions(1, contexts, entries);
	cr_assert(rdm_check(in, SMALL_BYTES, 9));
	free(first);
	free(second);
	free(third);
}

/*
 * A receive counter counts messages received (fi_endpoint(3)): a peek
 * receives none, whether it finds one or not; the claim that takes the
 * message counts it, once.
 */
Test(probe, counters_count_messages_received_not_peeks)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context peek, claim;
	char in[SMALL_BYTES];
	char *sent;
	void *contexts[1];

	cr_assert_eq(receive_with(NULL, 0, 0x77, &peek, FI_PEEK), 0);
	expect_error(&peek, FI_ENOMSG);
	sent = send_tagged(SMALL_BYTES, 0x77, 4);
	contexts[0] = sent;
	expect_completions(1, contexts, &entry);
	peek_until_found(NULL, 0, 0x77, &claim, FI_CLAIM, &entry);
	cr_assert_eq(fi_cntr_read(receives), 0, "a peek counted as a message received");
	cr_assert_eq(fi_cntr_readerr(receives), 0, "a peek that found nothing counted as an error");
	cr_assert_eq(receive_with(in, sizeof(in), 0x77, &claim, FI_CLAIM), 0);
	contexts[0] = &claim;
	expect_completions(1, contexts, &entry);
	cr_assert(rdm_check(in, SMALL_BYTES, 4));
	cr_assert_eq(fi_cntr_read(receives), 1);
	cr_assert_eq(fi_cntr_readerr(receives), 0);
	free(sent);
}

Test(probe, misuse_is_refused)
{
	struct fi_context context;
	struct fi_cq_tagged_entry entry;

	cr_assert_eq(receive_with(NULL, 0, 1, &context, FI_DISCARD), -FI_EINVAL);
	cr_assert_eq(receive_with(NULL, 0, 1, NULL, FI_PEEK | FI_CLAIM), -FI_EINVAL);
	/* A claim that no peek made finds nothing. */
	cr_assert_eq(receive_with(NULL, 0, 1, &context, FI_CLAIM), 0);
	expect_error(&context, FI_ENOMSG);
	cr_assert_eq(fi_cq_read(endpoint.cq, &entry, 1), -FI_EAGAIN);
}
