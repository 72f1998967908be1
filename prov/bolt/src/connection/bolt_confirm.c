/*
 * bolt_confirm.c: a hello is believed only once the sender it claims
 * confirms it. The side channel's peer address shows only where a hello comes
 * from, not which process sent it: on one host every process has the same IP,
 * so a stranger there could claim another process's listening address and take
 * or disturb that process's connection. Before a hello changes any state or
 * anything is allocated for its peer, the receiver connects to the listener at
 * the claimed address (which only its owner holds) and asks (CHECK) whether it
 * said hello to the receiver on a side channel whose handshake nonce is the
 * one the hello's side channel had; the sender remembers its hellos still
 * waiting for a reply (its connections in CONNECTING), and only its yes
 * (CHECKED 0) makes the hello believed.
 *
 * Why a connection of its own, and not the crossing rule: when both ends
 * connect at once, each already holds a side channel it made to the other's
 * listener, over which the question could go for free. But that is the rare
 * case (a first contact is mostly one end's), and by the crossing rule the
 * end whose side channel wins closes the other's as soon as its hello comes,
 * so the question would race that close and need states of its own at both
 * ends. One more connect and handshake on a first contact between two
 * endpoints costs little against a link's set-up (docs/design.md gives the
 * figures), and one path for every hello is one path to get right.
 */
#include <stdlib.h>
#include <string.h>

#include "connection/bolt_connection.h"
#include "connection/bolt_handshake.h"

void bolt_confirm_end(struct bolt_accepted *accepted)
{
	if (!accepted->confirm)
		return;
	bolt_side_channel_stream_close(accepted->confirm);
	free(accepted->confirm);
	accepted->confirm = NULL;
}

int bolt_confirm_start(struct bolt_connection_manager *manager, struct bolt_accepted *accepted,
		       const struct bolt_handshake *hello)
{
	struct bolt_handshake_check check = { .asker = manager->address, .sender = hello->sender };
	int ret;

	memcpy(check.nonce, accepted->stream.peer_nonce, sizeof(check.nonce));
	ret = bolt_connection_manager_connect(manager, &hello->sender, &accepted->confirm);
	if (ret)
		return ret;
	ret = bolt_side_channel_send(accepted->confirm, BOLT_HANDSHAKE_CHECK, &check, sizeof(check));
	if (ret) {
		bolt_confirm_end(accepted);
		return ret;
	}
	accepted->hello = *hello;
	return 0;
}

int bolt_confirm_progress(struct bolt_accepted *accepted)
{
	uint32_t word, length;
	uint16_t type;
	int ret;

	bolt_side_channel_progress(accepted->confirm);
	ret = bolt_side_channel_receive(accepted->confirm, &type, &word, sizeof(word), &length);
	if (ret == -FI_ETOOSMALL)
		return -FI_EPROTO;
	if (ret)
		return ret;
	if (type != BOLT_HANDSHAKE_CHECKED || length != sizeof(word))
		return -FI_EPROTO;
	return word ? -FI_ENOENT : 0;
}

/* Whether connection's hello, still waiting for its reply, went on the side channel of nonce. */
static bool bolt_confirm_said_hello(const struct bolt_connection *connection, const uint8_t *nonce)
{
	return connection->state == BOLT_CONNECTION_CONNECTING && connection->stream &&
	       !connection->stream->answerer &&
	       !memcmp(connection->stream->own_nonce, nonce, sizeof(connection->stream->own_nonce));
}

void bolt_confirm_answer(struct bolt_connection_manager *manager, struct bolt_side_channel_stream *stream,
			 const void *body, uint32_t length)
{
	struct bolt_connection *connection = NULL;
	struct bolt_handshake_check check;
	uint32_t word = FI_ENOENT;

	if (length == sizeof(check)) {
		memcpy(&check, body, sizeof(check));
		if (!memcmp(&check.sender, &manager->address, sizeof(check.sender)))
			HASH_FIND(hh, manager->connections, &check.asker, sizeof(check.asker), connection);
		if (connection && bolt_confirm_said_hello(connection, check.nonce))
			word = 0;
	}
	/* The asker closes when it has the answer; what the socket took still reaches it. */
	if (!bolt_side_channel_send(stream, BOLT_HANDSHAKE_CHECKED, &word, sizeof(word)))
		bolt_side_channel_progress(stream);
}
