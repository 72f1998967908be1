/*
 * softrdma_sweep.c: what jobs of this user left in /dev/shm when their
 * processes died without leaving (killed by a signal, or _exit): their
 * segments, whose processes are all gone, and segments a creator that died
 * was still building under its creation name. Every process that attaches
 * sweeps before it opens its own segment, so nothing of a finished job stays
 * past the next job's start. A segment with any live process stays, and so
 * does a segment in creation whose creator runs.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

/* Only this user's own file: another user's under this user's prefix is no creation of ours. */
static void softrdma_sweep_creation(const char *name)
{
	struct stat status;
	int fd;

	fd = softrdma_linux_shm_open(name, O_RDONLY);
	if (fd < 0)
		return;
	if (!fstat(fd, &status) && status.st_uid == geteuid()) {
		FI_INFO(&bolt_prov, FI_LOG_CORE,
			"software device: removing %s: its creator is gone\n", name);
		softrdma_linux_shm_unlink(name, &status);
	}
	close(fd);
}

static void softrdma_sweep_one(const char *name, void *argument)
{
	uint64_t start_time;
	pid_t creator;

	(void) argument;
	if (!softrdma_segment_creation_parse(name, &creator, &start_time))
		softrdma_segment_remove_if_abandoned(name);
	else if (!softrdma_process_running_since(creator, start_time))
		softrdma_sweep_creation(name);
}

void softrdma_sweep(void)
{
	char prefix[64];

	if (!softrdma_segment_prefix(prefix, sizeof(prefix)))
		softrdma_linux_shm_list(prefix, softrdma_sweep_one, NULL);
}
