/*
 * test_receive_bounds.c: the protocol layer's own bounds on a message header
 * (bolt_receive_check): a segment must lie inside its message, with no
 * arithmetic that wraps.
 */
#include <stdint.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_protocol.h"

static struct bolt_wire_header segment(uint64_t total_length, uint64_t offset,
				       uint16_t payload_length)
{
	return (struct bolt_wire_header) { .op = BOLT_WIRE_MESSAGE, .total_length = total_length,
					   .offset = offset, .payload_length = payload_length };
}

Test(receive_bounds, segments_inside_their_message_pass)
{
	struct bolt_wire_header header = segment(4096, 0, 1024);

	cr_assert_null(bolt_receive_check(&header));
	header = segment(4096, 3072, 1024);
	cr_assert_null(bolt_receive_check(&header), "a segment ending at the message's end");
	header = segment(0, 0, 0);
	cr_assert_null(bolt_receive_check(&header), "an empty message");
}

Test(receive_bounds, segments_past_their_message_fail)
{
	struct bolt_wire_header header = segment(4096, 3073, 1024);

	cr_assert_not_null(bolt_receive_check(&header));
	header = segment(4096, 4097, 0);
	cr_assert_not_null(bolt_receive_check(&header), "an empty segment past the end");
	header = segment((uint64_t) BOLT_MAX_MSG_SIZE + 1, 0, 10);
	cr_assert_not_null(bolt_receive_check(&header), "a message larger than any allowed");
}

/* offset + payload_length wraps to a small number for an offset near 2^64. */
Test(receive_bounds, an_offset_that_wraps_fails)
{
	struct bolt_wire_header header = segment(4096, UINT64_MAX - 9, 1024);

	cr_assert_not_null(bolt_receive_check(&header), "offset + payload_length wrapped to 1014");
	header = segment(4096, UINT64_MAX, 1);
	cr_assert_not_null(bolt_receive_check(&header));
	header.op = BOLT_WIRE_READ_RESPONSE;
	cr_assert_not_null(bolt_receive_check(&header), "every op that carries data");
}
