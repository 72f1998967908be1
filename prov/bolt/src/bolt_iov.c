/*
 * bolt_iov.c: copying between iovec arrays and flat buffers at an offset,
 * which segmenting and reassembling messages need on both sides.
 */
#include <string.h>

#include "bolt_endpoint.h"

size_t bolt_iov_length(const struct iovec *iov, size_t count)
{
	size_t length = 0;

	for (size_t i = 0; i < count; i++)
		length += iov[i].iov_len;
	return length;
}

/* Calls copy for each piece of the iov range [offset, offset + length). */
static size_t bolt_iov_walk(const struct iovec *iov, size_t count, size_t offset,
			    char *flat, size_t length, bool into_iov)
{
	size_t done = 0;

	for (size_t i = 0; i < count && done < length; i++) {
		size_t piece;

		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		piece = iov[i].iov_len - offset;
		if (piece > length - done)
			piece = length - done;
		if (into_iov)
			memcpy((char *) iov[i].iov_base + offset, flat + done, piece);
		else
			memcpy(flat + done, (char *) iov[i].iov_base + offset, piece);
		done += piece;
		offset = 0;
	}
	return done;
}

size_t bolt_iov_copy_in(const struct iovec *iov, size_t count, size_t offset,
			const void *source, size_t length)
{
	return bolt_iov_walk(iov, count, offset, (char *) source, length, true);
}

size_t bolt_iov_copy_out(const struct iovec *iov, size_t count, size_t offset,
			 void *destination, size_t length)
{
	return bolt_iov_walk(iov, count, offset, destination, length, false);
}
