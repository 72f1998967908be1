/*
 * bolt_eq.c: event queues, opened from the fabric. An EQ belongs to no
 * domain, so it has its own lock, and a reader blocks on its condition
 * variable: most events reach an EQ from API calls (fi_av_insert with
 * FI_EVENT, fi_eq_write). A join completes in its domain's progress, which
 * bolt_eq_watch asks readers to drive while the join runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_provider.h"
#include "bolt_unsupported.h"
#include "bolt_wait.h"

/* Events are rare (address insertions, joins), so this fills only if nobody reads. */
#define BOLT_EQ_DEFAULT_SIZE 1024
/* Domains a reader drives at once; more wait for the next read. */
#define BOLT_EQ_WATCH_BATCH 16
/* While domains are watched, a blocking read drives them this often. */
#define BOLT_EQ_WATCH_INTERVAL_MS 1

struct bolt_eq_watch {
	struct bolt_domain *domain;
	int count;
	struct bolt_eq_watch *prev, *next;
};

struct bolt_eq_event {
	struct bolt_eq_event *prev, *next;
	uint32_t event;
	size_t length;
	unsigned char data[];   /* as written; a struct fi_eq_err_entry on the error list */
};

/* Queues a copy of data on list (events or errors) and wakes readers. */
static int bolt_eq_enqueue(struct bolt_eq *eq, struct bolt_eq_event **list, uint32_t event,
			   const void *data, size_t length)
{
	struct bolt_eq_event *entry = malloc(sizeof(*entry) + length);

	if (!entry)
		return -FI_ENOMEM;
	entry->event = event;
	entry->length = length;
	if (length)
		memcpy(entry->data, data, length);

	pthread_mutex_lock(&eq->lock);
	if (eq->count == eq->capacity) {
		pthread_mutex_unlock(&eq->lock);
		free(entry);
		FI_WARN(&bolt_prov, FI_LOG_EQ, "event queue full (%zu events): event %u refused\n",
			eq->capacity, event);
		return -FI_EAGAIN;
	}
	DL_APPEND(*list, entry);
	eq->count++;
	bolt_wait_fd_set(&eq->wait_fd, true);
	pthread_cond_broadcast(&eq->changed);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

/* flags are reserved: fi_eq(3) defines none for writing. */
int bolt_eq_report(struct bolt_eq *eq, uint32_t event, const void *data, size_t length,
		   uint64_t flags)
{
	if (length && !data)
		return -FI_EINVAL;
	return bolt_eq_enqueue(eq, &eq->events, event, data, length);
}

int bolt_eq_report_error(struct bolt_eq *eq, fid_t fid, void *context, uint64_t data,
			 int error, int provider_error)
{
	struct fi_eq_err_entry entry = {
		.fid = fid,
		.context = context,
		.data = data,
		.err = error,
		.prov_errno = provider_error,
	};

	return bolt_eq_enqueue(eq, &eq->errors, 0, &entry, sizeof(entry));
}

static void bolt_eq_remove(struct bolt_eq *eq, struct bolt_eq_event **list,
			   struct bolt_eq_event *entry)
{
	DL_DELETE(*list, entry);
	eq->count--;
	bolt_wait_fd_set(&eq->wait_fd, eq->count);
	free(entry);
}

int bolt_eq_watch(struct bolt_eq *eq, struct bolt_domain *domain)
{
	struct bolt_eq_watch *watch;

	pthread_mutex_lock(&eq->lock);
	DL_SEARCH_SCALAR(eq->watched, watch, domain, domain);
	if (!watch) {
		watch = calloc(1, sizeof(*watch));
		if (watch) {
			watch->domain = domain;
			DL_APPEND(eq->watched, watch);
		}
	}
	if (watch)
		watch->count++;
	/* A reader asleep with nothing to drive must start driving this domain. */
	pthread_cond_broadcast(&eq->changed);
	pthread_mutex_unlock(&eq->lock);
	return watch ? 0 : -FI_ENOMEM;
}

void bolt_eq_unwatch(struct bolt_eq *eq, struct bolt_domain *domain)
{
	struct bolt_eq_watch *watch;

	pthread_mutex_lock(&eq->lock);
	DL_SEARCH_SCALAR(eq->watched, watch, domain, domain);
	if (watch && --watch->count == 0) {
		DL_DELETE(eq->watched, watch);
		free(watch);
	}
	pthread_mutex_unlock(&eq->lock);
}

/*
 * Drives the watched domains, without the EQ lock (their progress reports
 * to it). A watched domain cannot close: its join holds its endpoint open.
 * Once the join ends it can, while this reader still drives it: the pin,
 * taken while the domain was watched, makes its close wait for the reader.
 */
static void bolt_eq_progress_watched(struct bolt_eq *eq)
{
	struct bolt_domain *domains[BOLT_EQ_WATCH_BATCH];
	struct bolt_eq_watch *watch;
	int count = 0;

	pthread_mutex_lock(&eq->lock);
	DL_FOREACH(eq->watched, watch) {
		if (count == BOLT_EQ_WATCH_BATCH)
			break;
		atomic_fetch_add(&watch->domain->progress_pins, 1);
		domains[count++] = watch->domain;
	}
	pthread_mutex_unlock(&eq->lock);
	for (int i = 0; i < count; i++) {
		bolt_domain_lock(domains[i]);
		bolt_domain_progress(domains[i]);
		bolt_domain_unlock(domains[i]);
		atomic_fetch_sub(&domains[i]->progress_pins, 1);
	}
}

/*
 * Copies the first event to buf, as much of it as len holds (fi_eq(3): the
 * data returned is limited by the buffer), and dequeues it unless FI_PEEK.
 * Errors go first: -FI_EAVAIL while one is pending. Lock held.
 */
static ssize_t bolt_eq_take(struct bolt_eq *eq, uint32_t *event, void *buf, size_t len,
			    uint64_t flags)
{
	struct bolt_eq_event *first = eq->events;
	size_t copied;

	if (eq->errors)
		return -FI_EAVAIL;
	if (!first)
		return -FI_EAGAIN;
	copied = len < first->length ? len : first->length;
	if (copied)
		memcpy(buf, first->data, copied);
	if (event)
		*event = first->event;
	if (!(flags & FI_PEEK))
		bolt_eq_remove(eq, &eq->events, first);
	return (ssize_t) copied;
}

static ssize_t bolt_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
			    uint64_t flags)
{
	struct bolt_eq *eq = bolt_container_of(eq_fid, struct bolt_eq, eq_fid);
	ssize_t ret;

	if (len && !buf)
		return -FI_EINVAL;
	bolt_eq_progress_watched(eq);
	pthread_mutex_lock(&eq->lock);
	ret = bolt_eq_take(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/* Waits one watch interval, or until the deadline if that comes first; ETIMEDOUT after it. */
static int bolt_eq_wait_briefly(struct bolt_eq *eq, int timeout, const struct timespec *deadline)
{
	struct timespec brief;

	bolt_wait_deadline(BOLT_EQ_WATCH_INTERVAL_MS, &brief);
	if (timeout >= 0 && (brief.tv_sec > deadline->tv_sec ||
			     (brief.tv_sec == deadline->tv_sec && brief.tv_nsec >= deadline->tv_nsec)))
		return pthread_cond_timedwait(&eq->changed, &eq->lock, deadline);
	pthread_cond_timedwait(&eq->changed, &eq->lock, &brief);
	return 0;
}

static ssize_t bolt_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
			     int timeout, uint64_t flags)
{
	struct bolt_eq *eq = bolt_container_of(eq_fid, struct bolt_eq, eq_fid);
	struct timespec deadline;
	int wait_result = 0;
	ssize_t ret;

	if (len && !buf)
		return -FI_EINVAL;
	bolt_wait_deadline(timeout, &deadline);
	bolt_eq_progress_watched(eq);
	pthread_mutex_lock(&eq->lock);
	while (!eq->events && !eq->errors && wait_result != ETIMEDOUT) {
		if (eq->watched) {
			/* Progress makes the event: drive it, and wait only briefly. */
			pthread_mutex_unlock(&eq->lock);
			bolt_eq_progress_watched(eq);
			pthread_mutex_lock(&eq->lock);
			wait_result = bolt_eq_wait_briefly(eq, timeout, &deadline);
		} else if (timeout < 0) {
			wait_result = pthread_cond_wait(&eq->changed, &eq->lock);
		} else {
			wait_result = pthread_cond_timedwait(&eq->changed, &eq->lock, &deadline);
		}
	}
	ret = bolt_eq_take(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/*
 * bolt's EQ errors carry no provider data, so err_data comes back empty
 * under each of fi_eq(3)'s rules: the caller's buffer with nothing copied, or
 * no provider buffer. Before API 1.5 the entry ended at err_data. Returns the
 * bytes written to buf.
 */
static size_t bolt_eq_copy_error(const struct bolt_eq *eq, const struct bolt_eq_event *error,
				 struct fi_eq_err_entry *buf)
{
	struct fi_eq_err_entry entry;

	memcpy(&entry, error->data, sizeof(entry));
	if (!FI_VERSION_GE(eq->fabric->fabric_fid.api_version, FI_VERSION(1, 5))) {
		memcpy(buf, &entry, offsetof(struct fi_eq_err_entry, err_data_size));
		return offsetof(struct fi_eq_err_entry, err_data_size);
	}
	entry.err_data = buf->err_data_size ? buf->err_data : NULL;
	*buf = entry;
	return sizeof(*buf);
}

static ssize_t bolt_eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			       uint64_t flags)
{
	struct bolt_eq *eq = bolt_container_of(eq_fid, struct bolt_eq, eq_fid);
	struct bolt_eq_event *first;
	ssize_t ret;

	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	first = eq->errors;
	if (!first) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	ret = (ssize_t) bolt_eq_copy_error(eq, first, buf);
	if (!(flags & FI_PEEK))
		bolt_eq_remove(eq, &eq->errors, first);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t bolt_eq_write(struct fid_eq *eq_fid, uint32_t event, const void *buf, size_t len,
			     uint64_t flags)
{
	struct bolt_eq *eq = bolt_container_of(eq_fid, struct bolt_eq, eq_fid);
	int ret = bolt_eq_report(eq, event, buf, len, flags);

	return ret ? ret : (ssize_t) len;
}

/* EQ provider errors are libfabric error codes (a failed address insertion, say). */
static const char *bolt_eq_strerror(struct fid_eq *eq_fid, int prov_errno, const void *err_data,
				    char *buf, size_t len)
{
	const char *text = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (!buf || !len)
		return text;
	snprintf(buf, len, "%s", text);
	return buf;
}

static struct fi_ops_eq bolt_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = bolt_eq_read,
	.readerr = bolt_eq_readerr,
	.write = bolt_eq_write,
	.sread = bolt_eq_sread,
	.strerror = bolt_eq_strerror,
};

static void bolt_eq_free_list(struct bolt_eq_event **list)
{
	struct bolt_eq_event *entry, *next;

	DL_FOREACH_SAFE(*list, entry, next) {
		DL_DELETE(*list, entry);
		free(entry);
	}
}

static int bolt_eq_close(struct fid *fid)
{
	struct bolt_eq *eq = bolt_container_of(fid, struct bolt_eq, eq_fid.fid);

	if (atomic_load(&eq->bind_count)) {
		FI_WARN(&bolt_prov, FI_LOG_EQ, "event queue still bound to %d objects\n",
			atomic_load(&eq->bind_count));
		return -FI_EBUSY;
	}
	bolt_eq_free_list(&eq->events);
	bolt_eq_free_list(&eq->errors);
	bolt_wait_fd_close(&eq->wait_fd);
	pthread_cond_destroy(&eq->changed);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->child_count, 1);
	free(eq);
	return 0;
}

/* FI_GETWAIT and FI_GETWAITOBJ, for FI_WAIT_FD. */
static int bolt_eq_control(struct fid *fid, int command, void *argument)
{
	struct bolt_eq *eq = bolt_container_of(fid, struct bolt_eq, eq_fid.fid);

	return bolt_wait_fd_control(&eq->wait_fd, command, argument);
}

static struct fi_ops bolt_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = bolt_eq_close,
	.bind = bolt_no_bind,
	.control = bolt_eq_control,
	.ops_open = bolt_no_ops_open,
};

/* FI_WRITE is honoured (fi_eq_write always works); signaling_vector is ignored. */
static int bolt_eq_check_attr(const struct fi_eq_attr *attr)
{
	if (attr->flags & FI_AFFINITY) {
		FI_WARN(&bolt_prov, FI_LOG_EQ, "event queue flag FI_AFFINITY not supported\n");
		return -FI_ENOSYS;
	}
	if (attr->flags & ~FI_WRITE) {
		FI_WARN(&bolt_prov, FI_LOG_EQ, "unknown event queue flags %#llx\n",
			(unsigned long long) (attr->flags & ~FI_WRITE));
		return -FI_EBADFLAGS;
	}
	return bolt_wait_object_check(attr->wait_obj, FI_LOG_EQ);
}

/*
 * The lock, a condition variable on the monotonic clock, which
 * bolt_wait_deadline uses, and the fd of FI_WAIT_FD.
 */
static int bolt_eq_init_wait(struct bolt_eq *eq, enum fi_wait_obj wait_object)
{
	pthread_condattr_t condition_attr;
	int ret;

	ret = pthread_condattr_init(&condition_attr);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&condition_attr, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(&eq->changed, &condition_attr);
	pthread_condattr_destroy(&condition_attr);
	if (ret)
		return -ret;
	ret = pthread_mutex_init(&eq->lock, NULL);
	if (ret) {
		pthread_cond_destroy(&eq->changed);
		return -ret;
	}
	ret = bolt_wait_fd_open(&eq->wait_fd, wait_object);
	if (ret) {
		pthread_mutex_destroy(&eq->lock);
		pthread_cond_destroy(&eq->changed);
	}
	return ret;
}

int bolt_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct bolt_fabric *fabric = bolt_container_of(fabric_fid, struct bolt_fabric, fabric_fid);
	struct fi_eq_attr defaults = { .wait_obj = FI_WAIT_NONE };
	struct bolt_eq *eq;
	int ret;

	if (!eq_fid)
		return -FI_EINVAL;
	if (!attr)
		attr = &defaults;
	ret = bolt_eq_check_attr(attr);
	if (ret)
		return ret;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = bolt_eq_init_wait(eq, attr->wait_obj);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->fabric = fabric;
	eq->capacity = attr->size ? attr->size : BOLT_EQ_DEFAULT_SIZE;
	atomic_init(&eq->bind_count, 0);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &bolt_eq_fi_ops;
	eq->eq_fid.ops = &bolt_eq_ops;
	atomic_fetch_add(&fabric->child_count, 1);
	*eq_fid = &eq->eq_fid;
	return 0;
}
