/*
 * softrdma_processes.c: the segment's table of attached processes: who is
 * attached, known by pid and start time so that a reused pid is not taken
 * for the process that had it, which of them are dead, and giving back what
 * the dead held through the function the opener handed over
 * (softrdma_reap.c). With softrdma_segment.c it is the floor of the device:
 * it calls nothing above it.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

/* Cheap enough for every message: a process that exited and was reaped is gone. */
bool softrdma_process_exists(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* Also false for a zombie (exited, not yet reaped by its parent), whose memory is gone. */
bool softrdma_process_alive(pid_t pid)
{
	uint64_t start_time;

	return softrdma_process_exists(pid) &&
	       softrdma_linux_process_start(pid, &start_time) != -ESRCH;
}

/* A process that cannot be told dead counts as alive: removing a live job's state is worse. */
bool softrdma_process_running_since(pid_t pid, uint64_t start_time)
{
	uint64_t running_since;
	int ret = softrdma_linux_process_start(pid, &running_since);

	if (ret == -ESRCH)
		return false;
	return ret || !start_time || running_since == start_time;
}

static bool softrdma_attached_alive(const struct softrdma_attached_process *attached)
{
	uint64_t pid_namespace = softrdma_linux_pid_namespace();

	if (attached->pid_namespace && pid_namespace && attached->pid_namespace != pid_namespace)
		return true;
	return softrdma_process_running_since(attached->pid, attached->start_time);
}

/* Where pid is in the table of attached processes; -1 if it is not attached. */
int softrdma_process_slot_locked(const struct softrdma_segment *segment, pid_t pid)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (pid && segment->processes[index].pid == pid)
			return index;
	}
	return -1;
}

/* pid leaves the table of attached processes (it died or detached). */
void softrdma_process_forget_locked(struct softrdma_segment *segment, pid_t pid)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (segment->processes[index].pid == pid)
			memset(&segment->processes[index], 0, sizeof(segment->processes[index]));
	}
}

/*
 * What the dead held goes back through the function the opener handed over;
 * without one (not open yet) they stay in the table, to be reaped later.
 */
void softrdma_reap_dead_locked(struct softrdma_segment *segment)
{
	softrdma_owner_release release = softrdma_process.release_owner_locked;

	for (int index = 0; release && index < SOFTRDMA_MAX_PROCESSES; index++) {
		const struct softrdma_attached_process *attached = &segment->processes[index];
		pid_t pid = attached->pid;

		if (pid && !softrdma_attached_alive(attached)) {
			FI_INFO(&bolt_prov, FI_LOG_CORE,
				"software device: reclaiming the state of dead process %d\n", pid);
			release(segment, pid);
		}
	}
}

bool softrdma_device_full_locked(struct softrdma_segment *segment, const int32_t *count, int limit)
{
	if (*count < limit)
		return false;
	softrdma_reap_dead_locked(segment);
	return *count >= limit;
}

bool softrdma_processes_all_gone_locked(const struct softrdma_segment *segment)
{
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		const struct softrdma_attached_process *attached = &segment->processes[index];

		if (attached->pid && softrdma_attached_alive(attached))
			return false;
	}
	return true;
}

/* This process's slot in the table, its bell silent; -EUSERS when full. */
int softrdma_process_register_locked(struct softrdma_segment *segment)
{
	struct softrdma_attached_process self = {
		.pid = getpid(),
		.pid_namespace = softrdma_linux_pid_namespace(),
	};

	/* Without /proc, the pid alone says who it is. */
	if (softrdma_linux_process_start(self.pid, &self.start_time))
		self.start_time = 0;
	for (int index = 0; index < SOFTRDMA_MAX_PROCESSES; index++) {
		if (!segment->processes[index].pid) {
			segment->processes[index] = self;
			memset(&segment->bells[index], 0, sizeof(segment->bells[index]));
			return index;
		}
	}
	FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: more than %d processes attached\n",
		SOFTRDMA_MAX_PROCESSES);
	return -EUSERS;
}
