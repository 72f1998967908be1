/*
 * bench_buffer.h: the collective benchmarks' data buffers (bolt's and Open
 * MPI's alike, so both copy the same kind of memory). From 2 MiB on they
 * sit on transparent huge pages where the kernel offers them (madvise): the
 * software device, like Open MPI's shared-memory transport, copies between
 * processes with process_vm_writev, which walks the target's pages one by
 * one; on 4 KiB pages that ran at about half of memcpy's speed here (64 MiB
 * in 4 MiB pieces: 1.97 against 3.63 GB/s), on 2 MiB pages at 89 to 96 %.
 * A real device's DMA does not care, and a collective's figures should not
 * be the emulator's page walks. BENCH_SMALL_PAGES=1 keeps 4 KiB pages.
 */
#ifndef BENCH_BUFFER_H
#define BENCH_BUFFER_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "platform/bolt_platform.h"

static inline bool bench_buffer_small_pages(void)
{
	const char *small = getenv("BENCH_SMALL_PAGES");

	return small && *small && strcmp(small, "0");
}

/* For the benchmarks' headers. */
static inline const char *bench_buffer_pages(void)
{
	return bench_buffer_small_pages() ? "4 KiB pages" :
	       "transparent huge pages from 2 MiB (madvise)";
}

/* bytes zeroed, from 2 MiB on huge pages (bolt_platform_huge_allocate, compiled in); free() frees it. */
static inline void *bench_buffer_allocate(size_t bytes)
{
	if (bytes < BOLT_PLATFORM_HUGE_PAGE || bench_buffer_small_pages())
		return calloc(1, bytes ? bytes : 1);
	return bolt_platform_huge_allocate(bytes);
}

#endif /* BENCH_BUFFER_H */
