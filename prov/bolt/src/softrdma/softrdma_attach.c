/*
 * softrdma_attach.c: this process's attachment to the device: the config
 * check, the copy mode, reference-counted attach and detach (the first
 * config wins), the service thread of copy mode shm, the anchor thread that
 * tells others this process runs, starting over in a child of fork,
 * sweeping what dead jobs left before attaching, and leaving at exit a
 * segment the process did not detach from.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

struct softrdma_process softrdma_process = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * A child of fork inherits its parent's attachment but is not attached: it
 * drops the inherited mapping (objects of the parent are unusable in it).
 */
static void softrdma_forget_parent(void)
{
	struct softrdma_process *process = &softrdma_process;

	pthread_mutex_init(&process->lock, NULL);
	if (process->segment)
		munmap(process->segment, process->segment_size);
	softrdma_service_forget();
	softrdma_anchor_forget();
	free(process->devices);
	process->devices = NULL;
	process->device_count = 0;
	process->segment = NULL;
	process->qps = NULL;
	memset(process->qps_by_slot, 0, sizeof(process->qps_by_slot));
	process->waiting_qps = 0;
	process->attach_count = 0;
}

static int softrdma_config_check(const struct softrdma_config *config, int *hosts, int *cables)
{
	struct softrdma_fault_plan plan;

	if (!config || (unsigned int) config->profile > SOFTRDMA_PROFILE_ROCEV2 ||
	    config->host < 0 || softrdma_topology_parse(config->topology, hosts, cables) ||
	    config->max_mr < 0 || config->max_qp < 0 || config->max_wr < 0 ||
	    config->drop_every < 0 || config->drop_ppm < 0 || config->drop_ppm > 1000000 ||
	    (unsigned int) config->copy_mode > SOFTRDMA_COPY_SHM) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: invalid configuration%s%s\n",
			config ? ", topology " : "", config ? config->topology : "");
		return -EINVAL;
	}
	if (softrdma_fault_plan_parse(config->fault_plan, *hosts, *cables, &plan)) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: invalid fault plan \"%s\" for topology %s "
			"(events are \"at <n>ms|s cut|restore cable [host.]index\" or "
			"\"at <n>ms|s port [host.]index down|up\", separated by ';')\n",
			config->fault_plan, config->topology);
		return -EINVAL;
	}
	return 0;
}

/* This process's host exists in the segment's topology (the first config's). */
static int softrdma_host_check(const struct softrdma_config *config)
{
	const struct softrdma_segment *segment = softrdma_process.segment;

	if (config->host < segment->hosts)
		return 0;
	FI_WARN(&bolt_prov, FI_LOG_CORE,
		"software device: host %d does not exist in topology %s of namespace %s\n",
		config->host, segment->config.topology, config->namespace_name);
	return -EINVAL;
}

/* The segment's copy mode, if this process can follow it; shm starts the service thread. */
static int softrdma_attach_copy_mode(int probe)
{
	struct softrdma_process *process = &softrdma_process;
	int ret;

	process->copy_mode = process->segment->config.copy_mode;
	ret = softrdma_copy_adopt(process->copy_mode, probe);
	if (!ret && process->copy_mode == SOFTRDMA_COPY_SHM)
		ret = softrdma_service_start();
	return ret;
}

/* A segment this process creates records the copy mode resolved, not auto. */
static int softrdma_attach_first(const struct softrdma_config *config)
{
	struct softrdma_process *process = &softrdma_process;
	struct softrdma_config resolved;
	int hosts, cables, probe, ret;

	ret = softrdma_config_check(config, &hosts, &cables);
	if (ret)
		return ret;
	resolved = *config;
	probe = softrdma_copy_probe();
	ret = softrdma_copy_choose(config->copy_mode, probe, &resolved.copy_mode);
	if (ret)
		return ret;
	ret = softrdma_segment_name(config, process->segment_name,
				    sizeof(process->segment_name));
	if (ret)
		return ret;
	softrdma_sweep();
	ret = softrdma_segment_open(&resolved, hosts, cables, softrdma_release_owner_locked);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "software device: cannot attach to %s: %s\n",
			process->segment_name, strerror(-ret));
		return ret;
	}
	process->pid = getpid();
	process->host = config->host;
	softrdma_anchor_start();
	ret = softrdma_host_check(config);
	if (!ret)
		ret = softrdma_devices_create();
	if (!ret)
		ret = softrdma_attach_copy_mode(probe);
	if (ret) {
		softrdma_devices_destroy();
		softrdma_anchor_stop();
		softrdma_segment_close();
		return ret;
	}
	process->attach_count = 1;
	return 0;
}

int softrdma_attach(const struct softrdma_config *config)
{
	struct softrdma_process *process = &softrdma_process;
	int ret = 0;

	if (process->attach_count && process->pid != getpid())
		softrdma_forget_parent();
	pthread_mutex_lock(&process->lock);
	if (process->attach_count)
		process->attach_count++;
	else
		ret = softrdma_attach_first(config);
	pthread_mutex_unlock(&process->lock);
	return ret;
}

void softrdma_detach(void)
{
	struct softrdma_process *process = &softrdma_process;

	if (process->pid != getpid())
		return;
	pthread_mutex_lock(&process->lock);
	if (process->attach_count && !--process->attach_count) {
		softrdma_service_stop();
		softrdma_devices_destroy();
		softrdma_anchor_stop();
		softrdma_segment_close();
		process->qps = NULL;
		process->waiting_qps = 0;
	}
	pthread_mutex_unlock(&process->lock);
}

/*
 * Many applications, and MPI jobs that abort, exit without closing their
 * libfabric objects: the process leaves the segment as a detach would, and
 * the last one out removes it. The mapping stays, so that a thread still
 * running until the process ends finds memory there; what is in it is no
 * longer this process's. A thread of the process that holds the process
 * lock (mid-attach) is not waited for: the next attacher's sweep removes
 * what is left. Processes that die by a signal or _exit leave it to the
 * sweep too.
 */
__attribute__((destructor)) static void softrdma_leave_at_exit(void)
{
	struct softrdma_process *process = &softrdma_process;

	if (process->pid != getpid() || pthread_mutex_trylock(&process->lock))
		return;
	if (process->attach_count) {
		softrdma_service_stop();
		softrdma_anchor_stop();
		softrdma_segment_leave();
		process->attach_count = 0;
	}
	pthread_mutex_unlock(&process->lock);
}
