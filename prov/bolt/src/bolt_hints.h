/*
 * bolt_hints.h: matching fi_getinfo hints against what bolt offers, and
 * narrowing what it offers to what the hints ask. An out-of-tree provider has
 * no access to libfabric's ofi_check_info, so bolt has its own.
 */
#ifndef BOLT_HINTS_H
#define BOLT_HINTS_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

/*
 * 0 when provider_info satisfies hints (NULL hints match anything), else
 * -FI_ENODATA, logging with FI_INFO the first reason: the field and both values.
 */
int bolt_hints_check(const struct fi_info *provider_info, const struct fi_info *hints,
		     uint32_t version);

/*
 * Narrows info, a copy of a provider fi_info that bolt_hints_check accepted,
 * to what hints ask: primary caps as requested plus what they imply, mode,
 * mr_mode as fi_mr(3) negotiates it for version, threading, progress, AV type
 * and queue sizes. Addresses are left to the caller.
 */
void bolt_hints_narrow(struct fi_info *info, const struct fi_info *hints, uint32_t version);

/*
 * The caps to return when offered caps meet requested ones: the requested
 * primary caps and modifiers, the modifiers a primary cap implies when none
 * was given, and every offered secondary cap. requested 0 asks for all.
 */
uint64_t bolt_hints_caps(uint64_t offered, uint64_t requested);

/*
 * The mode bits a negotiated mr_mode puts in force: FI_MR_BASIC stands for
 * FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY (fi_mr(3)),
 * FI_MR_SCALABLE for none of them.
 */
int bolt_hints_mr_mode_bits(int mr_mode);

/* Whether hints ask for bolt by name (fi_info -p bolt), alone or in a layering. */
bool bolt_hints_name_bolt(const struct fi_info *hints);

#endif /* BOLT_HINTS_H */
