/*
 * bolt_platform_memory.c (Linux): buffers on transparent huge pages.
 * Where the kernel offers them only on request (madvise mode, Debian's
 * default), the request must come before the first touch.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "platform/bolt_platform.h"

void *bolt_platform_huge_allocate(size_t bytes)
{
	size_t pages = bytes ? (bytes + BOLT_PLATFORM_HUGE_PAGE - 1) / BOLT_PLATFORM_HUGE_PAGE : 1;
	size_t rounded = pages * BOLT_PLATFORM_HUGE_PAGE;
	void *buffer = aligned_alloc(BOLT_PLATFORM_HUGE_PAGE, rounded);

	if (!buffer)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void) madvise(buffer, rounded, MADV_HUGEPAGE); /* a hint: without it, small pages */
#endif
	return memset(buffer, 0, bytes);
}
