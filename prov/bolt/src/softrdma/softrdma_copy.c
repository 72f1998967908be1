/*
 * softrdma_copy.c: how data moves between processes. The copy modes (auto,
 * cma, shm), the check at attach time that the system permits cross-memory
 * attach, and the mode a process ends up with. And the cma copy itself:
 * bytes between this process and another in one copy (process_vm_writev /
 * process_vm_readv), or by memcpy when the other process is this one. The
 * shm mode's staged copy is in softrdma_stage.c and softrdma_service.c.
 */
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

static const char *const softrdma_copy_mode_names[] = {
	[SOFTRDMA_COPY_AUTO] = "auto",
	[SOFTRDMA_COPY_CMA] = "cma",
	[SOFTRDMA_COPY_SHM] = "shm",
};

int softrdma_copy_mode_parse(const char *name, enum softrdma_copy_mode *mode)
{
	if (!name)
		return -EINVAL;
	for (size_t index = 0; index < BOLT_ARRAY_LENGTH(softrdma_copy_mode_names); index++) {
		if (!strcmp(name, softrdma_copy_mode_names[index])) {
			*mode = (enum softrdma_copy_mode) index;
			return 0;
		}
	}
	return -EINVAL;
}

const char *softrdma_copy_mode_name(enum softrdma_copy_mode mode)
{
	return (unsigned int) mode < BOLT_ARRAY_LENGTH(softrdma_copy_mode_names) ?
	       softrdma_copy_mode_names[mode] : "unknown";
}

enum softrdma_copy_mode softrdma_copy_mode_current(void)
{
	const struct softrdma_process *process = &softrdma_process;

	return process->attach_count && process->pid == getpid() ? process->copy_mode :
								    SOFTRDMA_COPY_AUTO;
}

int softrdma_copy_probe(void)
{
	char source = 1, destination = 0;
	struct iovec local = { .iov_base = &source, .iov_len = 1 };
	struct iovec remote = { .iov_base = &destination, .iov_len = 1 };

	errno = 0;
	if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == 1 && destination == 1)
		return 0;
	return errno ? -errno : -EIO;
}

static void softrdma_copy_refuse(int probe, const char *why)
{
	FI_WARN(&bolt_prov, FI_LOG_CORE,
		"software device: cross-memory attach (process_vm_writev) is not permitted here: "
		"%s. "
		"%s; a seccomp filter or container policy blocks it (allow process_vm_readv and "
		"process_vm_writev, e.g. docker run --cap-add SYS_PTRACE), or use copy mode shm "
		"(FI_BOLT_SOFT_COPY=shm) in every process\n", strerror(-probe), why);
}

int softrdma_copy_choose(enum softrdma_copy_mode requested, int probe,
			 enum softrdma_copy_mode *mode)
{
	switch (requested) {
	case SOFTRDMA_COPY_CMA:
		if (probe) {
			softrdma_copy_refuse(probe, "Copy mode cma needs it");
			return probe;
		}
		*mode = SOFTRDMA_COPY_CMA;
		return 0;
	case SOFTRDMA_COPY_SHM:
		*mode = SOFTRDMA_COPY_SHM;
		return 0;
	default:
		*mode = probe ? SOFTRDMA_COPY_SHM : SOFTRDMA_COPY_CMA;
		if (probe)
			FI_INFO(&bolt_prov, FI_LOG_CORE,
				"software device: cross-memory attach is not permitted here (%s): "
				"data moves through shared memory, two copies\n", strerror(-probe));
		return 0;
	}
}

/* The first config wins: a joiner follows the segment's mode if it can. */
int softrdma_copy_adopt(enum softrdma_copy_mode segment_mode, int probe)
{
	if (segment_mode != SOFTRDMA_COPY_CMA || !probe)
		return 0;
	softrdma_copy_refuse(probe, "The processes already attached move data with it");
	return probe;
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
