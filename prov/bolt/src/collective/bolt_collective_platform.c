/*
 * bolt_collective_platform.c: what the collectives ask of the system, kept
 * apart for the platforms bolt builds on: how many CPUs this process may run
 * on (on Linux its affinity mask, which taskset and mpirun's binding narrow;
 * elsewhere the CPUs online), and giving the CPU away.
 */
#ifdef __linux__
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <unistd.h>

#include "collective/bolt_collective.h"

int bolt_collective_usable_cpus(void)
{
#ifdef __linux__
	cpu_set_t set;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
#endif
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	return online > 0 ? (int) online : 1;
}

void bolt_collective_yield(void)
{
	sched_yield();
}
