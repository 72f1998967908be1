/*
 * bolt_allocate.c: the allocation behind bolt_allocate_zeroed (bolt.h). It
 * is out of line on purpose: a compiler that sees malloc followed by a
 * zeroing memset turns the pair back into calloc, which glibc serves
 * without the thread's cache of freed blocks.
 */
#include "bolt.h"

void *bolt_allocate(size_t size)
{
	return malloc(size);
}
