/*
 * bolt_cq.c: completion queues. Successful completions wait in a ring sized
 * when the CQ opens, failed operations in a list that fi_cq_readerr drains;
 * both come out in the order they were reported, as from libfabric's own
 * providers: an error once every success reported before it has been read.
 * Every entry point runs under the domain lock, and reads drive the domain's
 * progress first, since bolt's progress is manual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include "bolt_wait.h"

/* Large enough that the ring fills only when the application stops reading. */
#define BOLT_CQ_DEFAULT_SIZE 1024
#define BOLT_CQ_ERROR_TEXT_SIZE 160

/* Each format is a prefix of fi_cq_tagged_entry, so one ring entry serves them all. */
_Static_assert(offsetof(struct fi_cq_msg_entry, len) ==
	       offsetof(struct fi_cq_tagged_entry, len), "msg entry is a prefix of tagged");
_Static_assert(offsetof(struct fi_cq_data_entry, data) ==
	       offsetof(struct fi_cq_tagged_entry, data), "data entry is a prefix of tagged");

struct bolt_cq_error {
	struct fi_cq_err_entry entry;
	uint64_t successes_before;              /* successes reported before it, ever */
	char text[BOLT_CQ_ERROR_TEXT_SIZE];   /* err_data: the failure in words */
	struct bolt_cq_error *prev, *next;
};

/* The size of one entry of format as the application reads it; 0 for no format. */
static size_t bolt_cq_format_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

/*
 * bolt's provider errors are verbs work completion statuses; errors found
 * above the device (a dead peer, say) carry a libfabric error code instead.
 */
static const char *bolt_cq_provider_error_text(const struct bolt_cq *cq, int provider_error)
{
	const struct bolt_verbs *verbs = &cq->domain->fabric->verbs;

	if (provider_error > IBV_WC_SUCCESS && provider_error <= IBV_WC_GENERAL_ERR &&
	    verbs->wc_status_str)
		return verbs->wc_status_str((enum ibv_wc_status) provider_error);
	return fi_strerror(provider_error < 0 ? -provider_error : provider_error);
}

/*
 * The err_data of an error: what failed, in words, for logs and fi_cq_strerror
 * users. Only an error with provider data (a provider error code) carries
 * any, as libfabric's own CQ code copies error data only where there is some:
 * callers that pass an uninitialised entry (fabtests' fi_recv_cancel and
 * fi_rdm_tagged_peek do) get nothing written through their garbage err_data
 * for a cancel, a probe that found nothing or any other error of bolt's own.
 */
static void bolt_cq_describe_error(const struct bolt_cq *cq, struct bolt_cq_error *error)
{
	const struct fi_cq_err_entry *entry = &error->entry;

	if (!entry->prov_errno)
		error->text[0] = '\0';
	else
		snprintf(error->text, sizeof(error->text), "%s (provider error %d: %s)",
			 fi_strerror(entry->err), entry->prov_errno,
			 bolt_cq_provider_error_text(cq, entry->prov_errno));
}

/* The error whose err_data the application was lent is freed by its next read. */
static void bolt_cq_end_loan(struct bolt_cq *cq)
{
	free(cq->lent_error);
	cq->lent_error = NULL;
}

/*
 * A full ring doubles: a completion the provider has produced is never
 * dropped because the application reads slowly (it has no one to give it back
 * to). The entries are moved so that the oldest is first again.
 */
static int bolt_cq_grow(struct bolt_cq *cq)
{
	size_t capacity = cq->capacity * 2;
	struct bolt_cq_entry *ring = calloc(capacity, sizeof(*ring));

	if (!ring) {
		FI_WARN(&bolt_prov, FI_LOG_CQ, "no memory to grow a full completion queue\n");
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->capacity];
	FI_INFO(&bolt_prov, FI_LOG_CQ, "completion queue full at %zu entries: now %zu\n",
		cq->capacity, capacity);
	free(cq->ring);
	cq->ring = ring;
	cq->capacity = capacity;
	cq->head = 0;
	return 0;
}

int bolt_cq_report(struct bolt_cq *cq, const struct fi_cq_tagged_entry *completion, fi_addr_t source)
{
	struct bolt_cq_entry *slot;
	int ret;

	if (cq->count == cq->capacity) {
		ret = bolt_cq_grow(cq);
		if (ret)
			return ret;
	}
	slot = &cq->ring[(cq->head + cq->count) % cq->capacity];
	slot->entry = *completion;
	slot->source = source;
	cq->count++;
	bolt_wait_fd_set(&cq->wait_fd, true);
	return 0;
}

int bolt_cq_report_error(struct bolt_cq *cq, const struct fi_cq_tagged_entry *completion,
			 size_t overflow_length, int error, int provider_error)
{
	struct bolt_cq_error *cq_error = calloc(1, sizeof(*cq_error));

	if (!cq_error) {
		FI_WARN(&bolt_prov, FI_LOG_CQ, "no memory to report error %d\n", error);
		return -FI_ENOMEM;
	}
	cq_error->entry = (struct fi_cq_err_entry) {
		.op_context = completion->op_context,
		.flags = completion->flags,
		.len = completion->len,
		.buf = completion->buf,
		.data = completion->data,
		.tag = completion->tag,
		.olen = overflow_length,
		.err = error,
		.prov_errno = provider_error,
	};
	cq_error->successes_before = cq->successes_taken + cq->count;
	bolt_cq_describe_error(cq, cq_error);
	DL_APPEND(cq->errors, cq_error);
	bolt_wait_fd_set(&cq->wait_fd, true);
	return 0;
}

/* The successes that may be read now: those reported before the oldest error, if any. */
static size_t bolt_cq_readable(const struct bolt_cq *cq)
{
	return cq->errors ? (size_t) (cq->errors->successes_before - cq->successes_taken) : cq->count;
}

/* Whether the oldest error is the topmost completion: no success reported before it is left. */
static bool bolt_cq_error_on_top(const struct bolt_cq *cq)
{
	return cq->errors && !bolt_cq_readable(cq);
}

/*
 * Moves up to count completions to buffer, and their sources to sources when
 * given: the successes reported before the oldest error. With that error on
 * top, -FI_EAVAIL: the application calls fi_cq_readerr (fi_cq(3)). Lock held.
 */
static ssize_t bolt_cq_take(struct bolt_cq *cq, void *buffer, size_t count, fi_addr_t *sources)
{
	char *destination = buffer;
	size_t available = bolt_cq_readable(cq), taken;

	if (!available)
		return cq->errors ? -FI_EAVAIL : -FI_EAGAIN;
	for (taken = 0; taken < count && taken < available; taken++) {
		const struct bolt_cq_entry *slot = &cq->ring[cq->head];

		memcpy(destination + taken * cq->entry_size, &slot->entry, cq->entry_size);
		if (sources)
			sources[taken] = slot->source;
		cq->head = (cq->head + 1) % cq->capacity;
		cq->count--;
	}
	cq->successes_taken += taken;
	bolt_wait_fd_set(&cq->wait_fd, cq->count || cq->errors);
	return (ssize_t) taken;
}

static ssize_t bolt_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct bolt_cq *cq = bolt_container_of(cq_fid, struct bolt_cq, cq_fid);
	ssize_t ret;

	if (count && !buf)
		return -FI_EINVAL;
	bolt_domain_lock(cq->domain);
	bolt_cq_end_loan(cq);
	bolt_domain_progress(cq->domain);
	ret = bolt_cq_take(cq, buf, count, src_addr);
	bolt_domain_unlock(cq->domain);
	return ret;
}

static ssize_t bolt_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return bolt_cq_readfrom(cq_fid, buf, count, NULL);
}

/* Whether a blocked reader has something to return: a completion, an error, a signal. */
static bool bolt_cq_ready(void *argument)
{
	const struct bolt_cq *cq = argument;

	return cq->count || cq->errors || atomic_load(&cq->signaled);
}

/*
 * cond (an FI_CQ_COND_THRESHOLD count) is a hint fi_cq(3) lets a provider
 * ignore: the first completion ends the wait, so latency does not depend on
 * the application guessing a batch size.
 */
static ssize_t bolt_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct bolt_cq *cq = bolt_container_of(cq_fid, struct bolt_cq, cq_fid);
	ssize_t ret;

	if (count && !buf)
		return -FI_EINVAL;
	bolt_domain_lock(cq->domain);
	bolt_cq_end_loan(cq);
	/* A timeout needs no separate answer: an empty ring below gives -FI_EAGAIN. */
	bolt_wait_progress(cq->domain, bolt_cq_ready, cq, timeout);
	atomic_store(&cq->signaled, false);
	ret = bolt_cq_take(cq, buf, count, src_addr);
	bolt_domain_unlock(cq->domain);
	return ret;
}

static ssize_t bolt_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count, const void *cond,
			     int timeout)
{
	return bolt_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

/*
 * fi_cq(3)'s rules for err_data: from API 1.5 on, a caller that gives a
 * buffer (err_data_size > 0) gets a copy in it; otherwise err_data points at
 * the provider's text, valid until the next read of the CQ. Before 1.5 the
 * entry ended at err_data, so err_data_size is not the caller's memory.
 */
static void bolt_cq_copy_error(const struct bolt_cq *cq, struct bolt_cq_error *error,
			       struct fi_cq_err_entry *buf)
{
	uint32_t api_version = cq->domain->fabric->fabric_fid.api_version;
	size_t text_size = error->text[0] ? strlen(error->text) + 1 : 0;
	void *caller_data = buf->err_data;
	size_t caller_size = buf->err_data_size;

	error->entry.err_data = text_size ? error->text : NULL;
	if (!FI_VERSION_GE(api_version, FI_VERSION(1, 5))) {
		memcpy(buf, &error->entry, offsetof(struct fi_cq_err_entry, err_data_size));
		return;
	}
	*buf = error->entry;
	buf->err_data_size = text_size;
	/* The caller's buffer stays its own, even with nothing to copy into it. */
	if (caller_data && caller_size) {
		buf->err_data = caller_data;
		buf->err_data_size = caller_size < text_size ? caller_size : text_size;
		if (buf->err_data_size)
			memcpy(caller_data, error->text, buf->err_data_size);
	}
}

static ssize_t bolt_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			       uint64_t flags)
{
	struct bolt_cq *cq = bolt_container_of(cq_fid, struct bolt_cq, cq_fid);
	struct bolt_cq_error *error;

	if (!buf)
		return -FI_EINVAL;
	bolt_domain_lock(cq->domain);
	bolt_cq_end_loan(cq);
	/* Successes reported before the error are read first, as fi_cq_read gives them. */
	if (!bolt_cq_error_on_top(cq)) {
		bolt_domain_unlock(cq->domain);
		return -FI_EAGAIN;
	}
	error = cq->errors;
	DL_DELETE(cq->errors, error);
	bolt_cq_copy_error(cq, error, buf);
	cq->lent_error = error;
	bolt_wait_fd_set(&cq->wait_fd, cq->errors || cq->count);
	bolt_domain_unlock(cq->domain);
	return 1;
}

/* Wakes a thread in fi_cq_sread; it returns -FI_EAGAIN if nothing arrived meanwhile. */
static int bolt_cq_signal(struct fid_cq *cq_fid)
{
	struct bolt_cq *cq = bolt_container_of(cq_fid, struct bolt_cq, cq_fid);

	atomic_store(&cq->signaled, true);
	return 0;
}

static const char *bolt_cq_strerror(struct fid_cq *cq_fid, int prov_errno, const void *err_data,
				    char *buf, size_t len)
{
	struct bolt_cq *cq = bolt_container_of(cq_fid, struct bolt_cq, cq_fid);
	const char *text = bolt_cq_provider_error_text(cq, prov_errno);

	if (!buf || !len)
		return text;
	snprintf(buf, len, "%s", text);
	return buf;
}

static struct fi_ops_cq bolt_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = bolt_cq_read,
	.readfrom = bolt_cq_readfrom,
	.readerr = bolt_cq_readerr,
	.sread = bolt_cq_sread,
	.sreadfrom = bolt_cq_sreadfrom,
	.signal = bolt_cq_signal,
	.strerror = bolt_cq_strerror,
};

static int bolt_cq_close(struct fid *fid)
{
	struct bolt_cq *cq = bolt_container_of(fid, struct bolt_cq, cq_fid.fid);
	struct bolt_cq_error *error, *next;

	if (atomic_load(&cq->bind_count)) {
		FI_WARN(&bolt_prov, FI_LOG_CQ, "completion queue still bound to %d objects\n",
			atomic_load(&cq->bind_count));
		return -FI_EBUSY;
	}
	DL_FOREACH_SAFE(cq->errors, error, next) {
		DL_DELETE(cq->errors, error);
		free(error);
	}
	bolt_cq_end_loan(cq);
	bolt_wait_fd_close(&cq->wait_fd);
	free(cq->ring);
	atomic_fetch_sub(&cq->domain->child_count, 1);
	free(cq);
	return 0;
}

/* FI_GETWAIT and FI_GETWAITOBJ, for FI_WAIT_FD. */
static int bolt_cq_control(struct fid *fid, int command, void *argument)
{
	struct bolt_cq *cq = bolt_container_of(fid, struct bolt_cq, cq_fid.fid);

	return bolt_wait_fd_control(&cq->wait_fd, command, argument);
}

static struct fi_ops bolt_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_cq_close,
	.bind = bolt_no_bind,
	.control = bolt_cq_control,
	.ops_open = bolt_no_ops_open,
};

/* The attributes bolt can honour; signaling_vector and wait_cond are hints it ignores. */
static int bolt_cq_check_attr(const struct fi_cq_attr *attr)
{
	if (attr->flags) {
		FI_WARN(&bolt_prov, FI_LOG_CQ,
			"completion queue flags %#llx: bolt takes none, FI_AFFINITY included\n",
			(unsigned long long) attr->flags);
		return -FI_ENOSYS;
	}
	if (attr->format != FI_CQ_FORMAT_UNSPEC && !bolt_cq_format_size(attr->format)) {
		FI_WARN(&bolt_prov, FI_LOG_CQ, "unknown completion format %d\n", attr->format);
		return -FI_EINVAL;
	}
	return bolt_wait_object_check(attr->wait_obj, FI_LOG_CQ);
}

int bolt_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context)
{
	struct bolt_domain *domain = bolt_container_of(domain_fid, struct bolt_domain, domain_fid);
	struct fi_cq_attr defaults = { .format = FI_CQ_FORMAT_UNSPEC, .wait_obj = FI_WAIT_NONE };
	struct bolt_cq *cq;
	int ret;

	if (!cq_fid)
		return -FI_EINVAL;
	if (!attr)
		attr = &defaults;
	ret = bolt_cq_check_attr(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->capacity = attr->size > BOLT_CQ_DEFAULT_SIZE ? attr->size : BOLT_CQ_DEFAULT_SIZE;
	cq->ring = calloc(cq->capacity, sizeof(*cq->ring));
	ret = cq->ring ? bolt_wait_fd_open(&cq->wait_fd, attr->wait_obj) : -FI_ENOMEM;
	if (ret) {
		free(cq->ring);
		free(cq);
		return ret;
	}
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->entry_size = bolt_cq_format_size(cq->format);
	cq->wait_object = attr->wait_obj;
	atomic_init(&cq->bind_count, 0);
	atomic_init(&cq->signaled, false);
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &bolt_cq_fi_ops;
	cq->cq_fid.ops = &bolt_cq_ops;
	atomic_fetch_add(&domain->child_count, 1);
	FI_INFO(&bolt_prov, FI_LOG_CQ, "completion queue of %zu entries, format %d, wait %d\n",
		cq->capacity, cq->format, cq->wait_object);
	*cq_fid = &cq->cq_fid;
	return 0;
}
