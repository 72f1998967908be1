/*
 * fuzz_side_channel.c: a libFuzzer target for the side channel's input path:
 * frame headers, the handshake's frames and the messages after it, fed in
 * chunks to a stream without a socket (bolt_side_channel_feed). The first
 * byte chooses whether the stream starts proven (to reach the messages) and
 * the chunk size; the rest is the bytes that arrive.
 */
#include <stdint.h>
#include <string.h>

#include "bolt.h"
#include "connection/bolt_side_channel.h"

/* The provider's own is in bolt_init.c, which this target does not link. */
struct fi_provider bolt_prov = { .name = "bolt-fuzz" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct bolt_side_channel_stream stream;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bolt_job_key key;
	static uint8_t body[BOLT_SIDE_CHANNEL_MAX_BODY];
	uint32_t chunk, taken, length;
	uint16_t type;
	int ret = 0;

	if (size < 1)
		return 0;
	if (!key.mac_key[0] && bolt_job_key_load("fuzz", NULL, &key))
		return 0;
	bolt_side_channel_stream_detached(&stream, &key, data[0] & 1);
	chunk = (uint32_t) (data[0] >> 1) + 1;
	data++;
	size--;
	while (size && !ret) {
		ret = bolt_side_channel_feed(&stream, data, (uint32_t) (size < chunk ? size : chunk),
					     &taken);
		data += taken;
		size -= taken;
		/* Take what is whole; a small capacity now and then exercises -FI_ETOOSMALL. */
		while (!ret && !(ret = bolt_side_channel_receive(&stream, &type, body,
								   (taken & 1) ? 8 : sizeof(body),
								   &length)))
			;
		if (ret == -FI_EAGAIN || ret == -FI_ETOOSMALL)
			ret = taken ? 0 : ret;   /* a full buffer with nothing whole would be a bug */
		if (ret == -FI_ETOOSMALL)
			__builtin_trap();
	}
	bolt_side_channel_stream_close(&stream);
	return 0;
}
