/*
 * bolt_platform_cpu.c (Linux): the CPUs this process may run on, from its
 * affinity mask (sched_getaffinity), else the CPUs online.
 */
#define _GNU_SOURCE     /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <unistd.h>

#include "platform/bolt_platform.h"

int bolt_platform_usable_cpus(void)
{
	cpu_set_t set;
	long online;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	online = sysconf(_SC_NPROCESSORS_ONLN);
	return online > 0 ? (int) online : 1;
}
