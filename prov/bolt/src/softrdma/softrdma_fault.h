/*
 * softrdma_fault.h: the faults the software device injects for tests and
 * tools: cables cut and ports down (softrdma_fault.c), a plan of them at
 * given times of a running job (softrdma_plan.c, FI_BOLT_SOFT_FAULT_PLAN),
 * and lost UC packets (softrdma_drop.c).
 */
#ifndef SOFTRDMA_FAULT_H
#define SOFTRDMA_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "softrdma/softrdma_layout.h"

/* ---- softrdma_fault.c ---- */
/* Cuts or restores a device's cable (both ends), or takes its port down or up. */
void softrdma_fault_set_locked(struct softrdma_segment *segment, int device_id,
			       enum softrdma_fault_kind kind, bool fault);

/* ---- softrdma_plan.c ---- */
/* Parses a fault plan for a topology of hosts and cables: 0 or -EINVAL. */
int softrdma_fault_plan_parse(const char *text, int hosts, int cables,
			      struct softrdma_fault_plan *plan);
/* Sets up the segment's plan from its config, starting now. */
void softrdma_fault_plan_start_locked(struct softrdma_segment *segment, int hosts, int cables);
/* Applies the plan's events that are due; cheap when none is. */
void softrdma_fault_plan_tick(void);

/* ---- softrdma_drop.c ---- */
void softrdma_drop_reset_locked(struct softrdma_segment *segment, int every, int ppm,
				unsigned int seed);
bool softrdma_drop_message_locked(struct softrdma_segment *segment, uint64_t packets);

#endif /* SOFTRDMA_FAULT_H */
