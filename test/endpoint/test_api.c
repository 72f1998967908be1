/*
 * test_api.c: an endpoint's API in one process, the endpoint talking to its
 * own address: names of at most 56 bytes, options as NCCL plugins set them,
 * both AV types, every CQ format, two-entry iovecs with FI_MORE, inject,
 * remote CQ data, tag and ignore matching of unexpected messages, and cancel;
 * and what enabling needs bound first, and binds that fail leaving nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "bolt_fabric.h"
#include "bolt_fi_compat.h"
#include "rdm_fixture.h"

static struct bolt_fixture_endpoint endpoint;
static struct rdm_options options = { .profile = "thunderbolt" };

static void open_self(enum fi_av_type av_type, enum fi_cq_format format)
{
	options.av_type = av_type;
	options.cq_format = format;
	options.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV;
	rdm_environment(&options, "api");
	cr_assert_eq(rdm_open_self(&endpoint, &options), 0);
}

static void close_self(void)
{
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

/* Reads one completion of any format into a tagged entry's prefix. */
static void read_one(void *entry)
{
	struct fi_cq_err_entry error;

	cr_assert_eq(rdm_wait(&endpoint, entry, &error), 0, "error %d", error.err);
}

Test(api, names_fit_nccl_plugins)
{
	char name[64];
	size_t length = 4;

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), -FI_ETOOSMALL);
	cr_assert_leq(length, 56, "a name of %zu bytes", length);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
	close_self();
}

Test(api, options_as_nccl_plugins_set_them)
{
	bool value = false;
	size_t length = sizeof(value);
	size_t minimum = 0;

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	cr_assert_eq(fi_setopt(&endpoint.ep->fid, FI_OPT_ENDPOINT, BOLT_OPT_CUDA_API_PERMITTED, &value,
			       sizeof(value)), 0);
	cr_assert_eq(fi_setopt(&endpoint.ep->fid, FI_OPT_ENDPOINT, BOLT_OPT_SHARED_MEMORY_PERMITTED,
			       &value, sizeof(value)), 0);
	value = true;
	cr_assert_eq(fi_getopt(&endpoint.ep->fid, FI_OPT_ENDPOINT, BOLT_OPT_SHARED_MEMORY_PERMITTED,
			       &value, &length), 0);
	cr_assert_eq(value, false);
	cr_assert_eq(fi_setopt(&endpoint.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minimum,
			       sizeof(minimum)), -FI_ENOPROTOOPT);
	cr_assert_eq(fi_setopt(&endpoint.ep->fid, FI_OPT_ENDPOINT, 12345, &minimum, sizeof(minimum)),
		     -FI_ENOPROTOOPT);
	close_self();
}

static void two_iovecs_with_remote_data(enum fi_av_type av_type)
{
	char first[3000], second[3000], in_first[2500], in_second[3500];
	struct iovec out[2] = { { first, sizeof(first) }, { second, sizeof(second) } };
	struct iovec in[2] = { { in_first, sizeof(in_first) }, { in_second, sizeof(in_second) } };
	struct fi_msg send_message = {
		.msg_iov = out, .iov_count = 2, .context = out, .data = 0x1234abcd,
	};
	struct fi_msg receive_message = { .msg_iov = in, .iov_count = 2, .context = in };
	struct fi_cq_data_entry entries[2];

	open_self(av_type, FI_CQ_FORMAT_DATA);
	send_message.addr = endpoint.peer;
	receive_message.addr = FI_ADDR_UNSPEC;
	rdm_fill(first, sizeof(first), 1);
	rdm_fill(second, sizeof(second), 2);
	cr_assert_eq(fi_recvmsg(endpoint.ep, &receive_message, FI_MORE | FI_COMPLETION), 0);
	cr_assert_eq(fi_sendmsg(endpoint.ep, &send_message, FI_REMOTE_CQ_DATA | FI_COMPLETION), 0);
	read_one(&entries[0]);
	read_one(&entries[1]);
	for (int i = 0; i < 2; i++) {
		if (entries[i].op_context != in)
			continue;
		cr_assert_eq(entries[i].len, 6000);
		cr_assert(entries[i].flags & FI_REMOTE_CQ_DATA);
		cr_assert_eq(entries[i].data, 0x1234abcd);
	}
	cr_assert(rdm_check(in_first, sizeof(in_first), 1));
	cr_assert_eq(memcmp(in_second, first + 2500, 500), 0);
	cr_assert_eq(memcmp(in_second + 500, second, 3000), 0);
	close_self();
}

Test(api, two_iovecs_and_remote_data_av_table)
{
	two_iovecs_with_remote_data(FI_AV_TABLE);
}

Test(api, two_iovecs_and_remote_data_av_map)
{
	two_iovecs_with_remote_data(FI_AV_MAP);
}

Test(api, inject_completes_nothing_but_arrives)
{
	char out[64] = "injected", in[64];
	struct fi_cq_msg_entry entry;

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_MSG);
	cr_assert_eq(fi_recv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in), 0);
	cr_assert_eq(fi_inject(endpoint.ep, out, sizeof(out), endpoint.peer), 0);
	memset(out, 0, sizeof(out));    /* the data is the provider's once inject returns */
	read_one(&entry);
	cr_assert_eq(entry.op_context, in, "the only completion is the receive's");
	cr_assert(entry.flags & FI_RECV);
	cr_assert_str_eq(in, "injected");
	cr_assert_eq(fi_inject(endpoint.ep, out, BOLT_INJECT_SIZE + 1, endpoint.peer), -FI_EMSGSIZE);
	close_self();
}

Test(api, tags_match_unexpected_messages_in_order)
{
	uint64_t payload[3] = { 10, 20, 30 }, in = 0;
	struct fi_cq_tagged_entry entry;

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fi_tsend(endpoint.ep, &payload[i], sizeof(payload[i]), NULL, endpoint.peer,
				      0x100 + (uint64_t) i, NULL), 0);
		read_one(&entry);       /* the send completes; the message waits unexpected */
	}
	/* 0x102 first, then whichever of 0x100/0x101 came first under the mask. */
	cr_assert_eq(fi_trecv(endpoint.ep, &in, sizeof(in), NULL, endpoint.peer, 0x102, 0, &in), 0);
	read_one(&entry);
	cr_assert_eq(entry.tag, 0x102);
	cr_assert_eq(in, 30);
	cr_assert_eq(fi_trecv(endpoint.ep, &in, sizeof(in), NULL, endpoint.peer, 0x100, 0x3, &in), 0);
	read_one(&entry);
	cr_assert_eq(entry.tag, 0x100);
	cr_assert_eq(in, 10);
	close_self();
}

Test(api, truncation_and_cancel_are_errors)
{
	char out[100] = { 0 }, in[10];
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	cr_assert_eq(fi_recv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in), 0);
	cr_assert_eq(fi_send(endpoint.ep, out, sizeof(out), NULL, endpoint.peer, out), 0);
	for (int completions = 0; completions < 2; completions++) {
		int ret = rdm_wait(&endpoint, &entry, &error);

		if (ret == 0) {
			cr_assert_eq(entry.op_context, out);
			continue;
		}
		cr_assert_eq(ret, -FI_EAVAIL);
		cr_assert_eq(error.err, FI_ETRUNC);
		cr_assert_eq(error.olen, 90);
	}
	cr_assert_eq(fi_trecv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, &error), 0);
	cr_assert_eq(fi_cancel(&endpoint.ep->fid, &error), 0);
	cr_assert_eq(rdm_wait(&endpoint, &entry, &error), -FI_EAVAIL);
	cr_assert_eq(error.err, FI_ECANCELED);
	close_self();
}

/* Large messages go by rendezvous where the device writes: the same results as segments. */
Test(api, large_messages_unexpected_truncated_and_scattered)
{
	const size_t size = 1 << 20;
	char *out = malloc(size), *in = malloc(size);
	struct iovec halves[2] = { { in, size / 2 }, { in + size / 2, size / 2 } };
	struct fi_msg scattered = { .msg_iov = halves, .iov_count = 2, .context = halves };
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret;

	cr_assert(out && in);
	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	scattered.addr = FI_ADDR_UNSPEC;
	rdm_fill(out, size, 3);

	/* Sent before its receive exists: it waits at the sender until one does. */
	cr_assert_eq(fi_send(endpoint.ep, out, size, NULL, endpoint.peer, out), 0);
	rdm_progress_for(&endpoint, 20);
	memset(in, 0, size);
	cr_assert_eq(fi_recv(endpoint.ep, in, size, NULL, FI_ADDR_UNSPEC, in), 0);
	for (int i = 0; i < 2; i++)
		read_one(&entry);
	cr_assert(rdm_check(in, size, 3), "an unexpected large message");

	/* Into a receive of two entries: bolt falls back to segments. */
	memset(in, 0, size);
	cr_assert_eq(fi_recvmsg(endpoint.ep, &scattered, 0), 0);
	cr_assert_eq(fi_send(endpoint.ep, out, size, NULL, endpoint.peer, out), 0);
	for (int i = 0; i < 2; i++)
		read_one(&entry);
	cr_assert(rdm_check(in, size, 3), "a large message into two iovecs");

	/* Into a smaller receive: what fits, and FI_ETRUNC for the rest. */
	memset(in, 0, size);
	cr_assert_eq(fi_recv(endpoint.ep, in, size / 4, NULL, FI_ADDR_UNSPEC, in), 0);
	cr_assert_eq(fi_send(endpoint.ep, out, size, NULL, endpoint.peer, out), 0);
	for (int i = 0; i < 2; i++) {
		ret = rdm_wait(&endpoint, &entry, &error);
		if (ret == -FI_EAVAIL) {
			cr_assert_eq(error.err, FI_ETRUNC);
			cr_assert_eq(error.olen, size - size / 4);
		} else {
			cr_assert_eq(ret, 0);
			cr_assert_eq(entry.op_context, out);
		}
	}
	cr_assert_eq(memcmp(in, out, size / 4), 0, "the part that fits");
	cr_assert_eq(in[size / 4], 0, "nothing past the receive");
	close_self();
	free(out);
	free(in);
}

/*
 * Messages that arrived but were never read: their completions are still in
 * the device's CQ when the endpoint closes and its queue pairs go (a real
 * device keeps them). Closing gives their buffers back and posts nothing on
 * the queue pair that is gone; then the domain closes cleanly too.
 */
Test(api, close_with_arrivals_unread)
{
	char message[64] = "unread";

	open_self(FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fi_send(endpoint.ep, message, sizeof(message), NULL, endpoint.peer, NULL), 0);
	cr_assert_eq(fi_close(&endpoint.ep->fid), 0);
	endpoint.ep = NULL;
	cr_assert_eq(fi_close(&endpoint.av->fid), 0);
	endpoint.av = NULL;
	cr_assert_eq(fi_close(&endpoint.cq->fid), 0);
	endpoint.cq = NULL;
	cr_assert_eq(fi_close(&endpoint.domain->fid), 0, "buffers or queue pairs left behind");
	endpoint.domain = NULL;
	close_self();
}

/* The fabric and domain of a message and RMA endpoint, and nothing opened on them yet. */
static void open_domain_only(const char *tag)
{
	struct fi_info *hints;

	options.caps = FI_MSG | FI_RMA;
	rdm_environment(&options, tag);
	hints = rdm_hints(&options);
	cr_assert_not_null(hints);
	cr_assert_eq(rdm_open_domain(&endpoint, hints, &options), 0);
	fi_freeinfo(hints);
}

/*
 * fi_enable needs an AV, and a CQ for transmits and one for receives, that
 * errors have somewhere to go (fi_endpoint(3): -FI_ENOAV, -FI_ENOCQ). A
 * counter bind that fails for one kind binds none of the others.
 */
Test(api, enable_needs_its_bindings_and_a_failed_bind_binds_nothing)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *writes, *refused, *sends;

	open_domain_only("api-bind");
	cr_assert_eq(fi_endpoint(endpoint.domain, endpoint.info, &endpoint.ep, NULL), 0);
	cr_assert_eq(fi_cq_open(endpoint.domain, &cq_attr, &endpoint.cq, NULL), 0);
	cr_assert_eq(fi_av_open(endpoint.domain, &av_attr, &endpoint.av, NULL), 0);
	cr_expect_eq(fi_enable(endpoint.ep), -FI_ENOAV);
	cr_assert_eq(fi_ep_bind(endpoint.ep, &endpoint.av->fid, 0), 0);
	cr_expect_eq(fi_enable(endpoint.ep), -FI_ENOCQ);
	cr_assert_eq(fi_ep_bind(endpoint.ep, &endpoint.cq->fid, FI_TRANSMIT), 0);
	cr_expect_eq(fi_enable(endpoint.ep), -FI_ENOCQ, "receives have no CQ");

	cr_assert_eq(fi_cntr_open(endpoint.domain, &cntr_attr, &writes, NULL), 0);
	cr_assert_eq(fi_cntr_open(endpoint.domain, &cntr_attr, &refused, NULL), 0);
	cr_assert_eq(fi_cntr_open(endpoint.domain, &cntr_attr, &sends, NULL), 0);
	cr_assert_eq(fi_ep_bind(endpoint.ep, &writes->fid, FI_WRITE), 0);
	cr_expect_eq(fi_ep_bind(endpoint.ep, &refused->fid, FI_SEND | FI_RECV | FI_WRITE), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(endpoint.ep, &sends->fid, FI_SEND | FI_RECV), 0,
		     "the failed bind took sends and receives");
	cr_expect_eq(fi_close(&refused->fid), 0, "the failed bind left the counter bound");

	cr_assert_eq(fi_ep_bind(endpoint.ep, &endpoint.cq->fid, FI_RECV), 0);
	cr_assert_eq(fi_enable(endpoint.ep), 0);
	cr_assert_eq(fi_close(&endpoint.ep->fid), 0);
	endpoint.ep = NULL;
	cr_assert_eq(fi_close(&sends->fid), 0);
	cr_assert_eq(fi_close(&writes->fid), 0);
	close_self();
}

/*
 * fi_domain and fi_endpoint take the fi_info fi_getinfo gave, not another
 * provider's for a device of the same name, nor one asking for more than
 * bolt offers.
 */
Test(api, domain_takes_an_info_bolt_offers)
{
	struct fi_info *info;
	struct fid_domain *domain;

	open_domain_only("api-domain-info");

	info = fi_dupinfo(endpoint.info);
	cr_assert_not_null(info);
	cr_expect_eq(fi_domain(endpoint.fabric, info, &domain, NULL), 0, "the info as given");
	cr_expect_eq(fi_close(&domain->fid), 0);
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = strdup("verbs");
	cr_expect_eq(fi_domain(endpoint.fabric, info, &domain, NULL), -FI_ENODATA,
		     "another provider's info");
	fi_freeinfo(info);

	info = fi_dupinfo(endpoint.info);
	cr_assert_not_null(info);
	info->caps |= FI_ATOMIC;
	cr_expect_eq(fi_domain(endpoint.fabric, info, &domain, NULL), -FI_ENODATA,
		     "atomics, which bolt does not offer");
	cr_expect_eq(fi_endpoint(endpoint.domain, info, &endpoint.ep, NULL), -FI_ENODATA,
		     "an endpoint for atomics");
	info->caps &= ~(uint64_t) FI_ATOMIC;
	info->domain_attr->mr_cnt = SIZE_MAX;
	cr_expect_eq(fi_domain(endpoint.fabric, info, &domain, NULL), -FI_ENODATA,
		     "more registrations than the device holds");
	fi_freeinfo(info);
	close_self();
}

/* Objects of another domain or fabric are refused, and stay free to close. */
Test(api, bind_takes_objects_of_its_own_domain_and_fabric)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_fabric *other_fabric;
	struct fid_domain *other_domain;
	struct fid_cq *other_cq;
	struct fid_av *other_av;
	struct fid_cntr *other_cntr;
	struct fid_eq *other_eq, *eq;

	open_domain_only("api-bind-domain");
	cr_assert_eq(fi_endpoint(endpoint.domain, endpoint.info, &endpoint.ep, NULL), 0);
	cr_assert_eq(fi_domain(endpoint.fabric, endpoint.info, &other_domain, NULL), 0);
	cr_assert_eq(fi_cq_open(other_domain, &cq_attr, &other_cq, NULL), 0);
	cr_assert_eq(fi_av_open(other_domain, &av_attr, &other_av, NULL), 0);
	cr_assert_eq(fi_cntr_open(other_domain, &cntr_attr, &other_cntr, NULL), 0);
	cr_assert_eq(bolt_fabric_open(endpoint.info->fabric_attr, &other_fabric, NULL), 0);
	cr_assert_eq(fi_eq_open(other_fabric, &eq_attr, &other_eq, NULL), 0);
	cr_assert_eq(fi_eq_open(endpoint.fabric, &eq_attr, &eq, NULL), 0);

	cr_expect_eq(fi_ep_bind(endpoint.ep, &other_cq->fid, FI_TRANSMIT | FI_RECV), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(endpoint.ep, &other_av->fid, 0), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(endpoint.ep, &other_cntr->fid, FI_SEND), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(endpoint.ep, &other_eq->fid, 0), -FI_EINVAL);
	BOLT_DEPRECATED_CALLS_BEGIN
	cr_expect_eq(fi_av_bind(other_av, &other_eq->fid, 0), -FI_EINVAL, "an EQ of another fabric");
	BOLT_DEPRECATED_CALLS_END
	cr_expect_eq(fi_ep_bind(endpoint.ep, &eq->fid, 0), 0, "an EQ of the domain's fabric");

	cr_expect_eq(fi_close(&other_cntr->fid), 0);
	cr_expect_eq(fi_close(&other_av->fid), 0);
	cr_expect_eq(fi_close(&other_cq->fid), 0);
	cr_expect_eq(fi_close(&other_domain->fid), 0);
	cr_expect_eq(fi_close(&other_eq->fid), 0);
	cr_expect_eq(fi_close(&other_fabric->fid), 0);
	cr_assert_eq(fi_close(&endpoint.ep->fid), 0);
	endpoint.ep = NULL;
	cr_expect_eq(fi_close(&eq->fid), 0);
	close_self();
}
