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
#include <sys/mman.h>

#define BENCH_HUGE_PAGE ((size_t) 2 << 20)

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

/* bytes zeroed, advised before the first touch, so the kernel backs them with huge pages; free() frees it. */
static inline void *bench_buffer_allocate(size_t bytes)
{
	size_t rounded = (bytes + BENCH_HUGE_PAGE - 1) / BENCH_HUGE_PAGE * BENCH_HUGE_PAGE;
	void *buffer;

	if (bytes < BENCH_HUGE_PAGE || bench_buffer_small_pages())
		return calloc(1, bytes ? bytes : 1);
	buffer = aligned_alloc(BENCH_HUGE_PAGE, rounded);
	if (!buffer)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void) madvise(buffer, rounded, MADV_HUGEPAGE); /* a hint: without it, small pages */
#endif
	return memset(buffer, 0, bytes);
}

#endif /* BENCH_BUFFER_H */
