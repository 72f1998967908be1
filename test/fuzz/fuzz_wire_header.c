/*
 * fuzz_wire_header.c: a libFuzzer target for the check every message on a
 * queue pair passes before anything reads it (bolt_wire_check in
 * connection/bolt_wire.h). The first 10 bytes are the link's state (credits
 * held, the peer's receive depth, the count of credits seen), the rest the
 * received message. A message
 * the check passes must be whole: its payload inside the bytes received.
 */
#include <stdint.h>
#include <string.h>

#include "connection/bolt_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bolt_wire_header header = { 0 };
	uint32_t peer_receive_depth, length;
	uint16_t credits_seen;
	int32_t send_credits;

	if (size < 10 || size - 10 > BOLT_SEGMENT_PAYLOAD + sizeof(header))
		return 0;
	memcpy(&send_credits, data, 4);
	memcpy(&peer_receive_depth, data + 4, 4);
	memcpy(&credits_seen, data + 8, 2);
	data += 10;
	length = (uint32_t) (size - 10);
	memcpy(&header, data, length < sizeof(header) ? length : sizeof(header));
	if (bolt_wire_check(&header, length, send_credits, credits_seen, peer_receive_depth))
		return 0;
	if (length < sizeof(header) || sizeof(header) + header.payload_length != length ||
	    header.op < BOLT_WIRE_MESSAGE || header.op > BOLT_WIRE_OP_LAST ||
	    (int64_t) send_credits + bolt_wire_credits_brought(&header, credits_seen) >
	    (int64_t) peer_receive_depth)
		__builtin_trap();
	return 0;
}
