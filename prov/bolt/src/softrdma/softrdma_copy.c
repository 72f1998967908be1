/*
 * softrdma_copy.c: moving bytes between this process and another, in one
 * copy, by cross-memory attach (process_vm_writev / process_vm_readv), or by
 * memcpy when the other process is this one; and the check at attach time
 * that the system permits cross-memory attach at all.
 */
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

int softrdma_copy_probe(void)
{
	char source = 1, destination = 0;
	struct iovec local = { .iov_base = &source, .iov_len = 1 };
	struct iovec remote = { .iov_base = &destination, .iov_len = 1 };
	int ret;

	errno = 0;
	if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == 1 && destination == 1)
		return 0;
	ret = errno ? -errno : -EIO;
	FI_WARN(&bolt_prov, FI_LOG_CORE,
		"software device: cross-memory attach (process_vm_writev) is not permitted here: %s. "
		"It moves data between processes; a seccomp filter or container policy blocks it "
		"(allow process_vm_readv and process_vm_writev, e.g. docker run --cap-add SYS_PTRACE)\n",
		strerror(-ret));
	return ret;
}

/* Moves past `bytes` of an iovec array, in place. */
static void softrdma_iov_advance(struct iovec **iov, int *count, size_t bytes)
{
	while (bytes && *count) {
		size_t step = bytes < (*iov)->iov_len ? bytes : (*iov)->iov_len;

		(*iov)->iov_base = (char *) (*iov)->iov_base + step;
		(*iov)->iov_len -= step;
		bytes -= step;
		if (!(*iov)->iov_len) {
			(*iov)++;
			(*count)--;
		}
	}
}

static size_t softrdma_iov_total(const struct iovec *iov, int count)
{
	size_t total = 0;

	for (int index = 0; index < count; index++)
		total += iov[index].iov_len;
	return total;
}

/* Copies up to the shorter of the two: the bytes moved. */
static size_t softrdma_copy_step(pid_t pid, bool to_remote, struct iovec *local, int local_count,
				 struct iovec *remote, int remote_count, int *error)
{
	ssize_t moved;

	if (pid == softrdma_process.pid) {
		size_t step = local->iov_len < remote->iov_len ? local->iov_len : remote->iov_len;

		if (to_remote)
			memcpy(remote->iov_base, local->iov_base, step);
		else
			memcpy(local->iov_base, remote->iov_base, step);
		return step;
	}
	moved = to_remote ? process_vm_writev(pid, local, (unsigned long) local_count, remote,
					      (unsigned long) remote_count, 0) :
			    process_vm_readv(pid, local, (unsigned long) local_count, remote,
					     (unsigned long) remote_count, 0);
	if (moved < 0)
		*error = errno == EINTR ? 0 : -errno;
	else if (!moved)
		*error = -EFAULT; /* a partial transfer stops at an unmapped page */
	return moved > 0 ? (size_t) moved : 0;
}

int softrdma_copy(pid_t pid, bool to_remote, const struct iovec *local, int local_count,
		  const struct iovec *remote, int remote_count)
{
	struct iovec local_left[SOFTRDMA_MAX_SGE], remote_left[SOFTRDMA_MAX_SGE];
	struct iovec *local_next = local_left, *remote_next = remote_left;
	size_t left = softrdma_iov_total(local, local_count);

	memcpy(local_left, local, (size_t) local_count * sizeof(*local));
	memcpy(remote_left, remote, (size_t) remote_count * sizeof(*remote));
	while (left && local_count && remote_count) {
		int error = 0;
		size_t moved = softrdma_copy_step(pid, to_remote, local_next, local_count,
						  remote_next, remote_count, &error);

		if (error)
			return error;
		softrdma_iov_advance(&local_next, &local_count, moved);
		softrdma_iov_advance(&remote_next, &remote_count, moved);
		left -= moved;
	}
	return 0;
}
