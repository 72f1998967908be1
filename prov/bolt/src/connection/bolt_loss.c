/*
 * bolt_loss.c: RDMA writes lost on an unreliable (UC) queue pair. UC drops
 * a packet without a trace at either end. Messages are sent again
 * (bolt_retransmit.c); writes of the application's data (stripes, direct
 * writes) are not yet, but each carries immediate data, so the target
 * counts them. When a connection waits for its peer and nothing has arrived
 * for a while, it asks the peer over the side channel what it has written
 * and received. Writes posted before the answer must arrive within a grace
 * period; what the peer received must include everything written before
 * the previous question. Otherwise a write was lost, and the connection
 * fails, so every operation on it ends with an error instead of waiting
 * forever (or completing with data that never came). A peer that does not
 * answer (it is not progressing) is not judged: liveness is the side
 * channel's own job.
 */
#include <string.h>

#include "connection/bolt_connection.h"
#include "connection/bolt_handshake.h"

/* Quiet this long while waiting before asking; at most this often. */
#define BOLT_LOSS_QUIET_NS (300ULL * 1000000ULL)
/* What was sent before an answer has arrived after this long, or is lost (loaded hosts too). */
#define BOLT_LOSS_GRACE_NS (300ULL * 1000000ULL)

/* a comes before b, in sequence arithmetic. */
static bool bolt_loss_before(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) < 0;
}

static bool bolt_loss_waiting(const struct bolt_connection *connection)
{
	const struct bolt_loss_watch *watch = &connection->loss;

	return connection->manager->events->busy(connection) ||
	       connection->stripes_sent != watch->confirmed_stripes;
}

void bolt_loss_fail(struct bolt_connection *connection, const char *why)
{
	connection->manager->events->lost(connection);
	if (connection->link)
		connection->link->retiring = true;
	bolt_connection_fail(connection, FI_EIO, why);
}

/* Judges the peer's counts; false when the connection failed. */
static bool bolt_loss_judge(struct bolt_connection *connection)
{
	struct bolt_loss_watch *watch = &connection->loss;

	if (bolt_loss_before(connection->stripes_received, watch->peer_stripes_sent)) {
		bolt_loss_fail(connection,
			       "writes from the peer were lost on the way (UC drops them without a trace)");
		return false;
	}
	if (bolt_loss_before(watch->peer_stripes_received, watch->stripes_sent_at_previous_ask)) {
		bolt_loss_fail(connection,
			       "writes to the peer were lost on the way (UC drops them without a trace)");
		return false;
	}
	if (!bolt_loss_before(watch->peer_stripes_received, watch->stripes_sent_at_ask))
		watch->confirmed_stripes = watch->stripes_sent_at_ask;
	return true;
}

static void bolt_loss_ask(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_loss_watch *watch = &connection->loss;

	watch->stripes_sent_at_previous_ask = watch->stripes_sent_at_ask;
	watch->stripes_sent_at_ask = connection->stripes_sent;
	watch->asked_ns = now_ns;
	watch->asking = true;
	if (bolt_side_channel_send(connection->stream, BOLT_HANDSHAKE_COUNT_ASK, NULL, 0))
		bolt_connection_fail(connection, FI_EIO, "the side channel refused a question");
}

void bolt_loss_check(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_loss_watch *watch = &connection->loss;

	/* RC retransmits, and reports what it cannot deliver. */
	if (connection->state != BOLT_CONNECTION_ESTABLISHED || connection->loopback ||
	    !connection->stream || connection->manager->domain->primary.qp_type != IBV_QPT_UC)
		return;
	if (connection->receive_sequence != watch->seen_received ||
	    connection->stripes_received != watch->seen_stripes || !watch->quiet_since_ns) {
		watch->seen_received = connection->receive_sequence;
		watch->seen_stripes = connection->stripes_received;
		watch->quiet_since_ns = now_ns;
	}
	if (watch->answered && now_ns >= watch->answered_ns + BOLT_LOSS_GRACE_NS) {
		watch->answered = false;
		if (!bolt_loss_judge(connection))
			return;
	}
	if (!watch->asking && !watch->answered && bolt_loss_waiting(connection) &&
	    now_ns >= watch->quiet_since_ns + BOLT_LOSS_QUIET_NS &&
	    now_ns >= watch->asked_ns + BOLT_LOSS_QUIET_NS)
		bolt_loss_ask(connection, now_ns);
}

static void bolt_loss_answer(struct bolt_connection *connection)
{
	struct bolt_handshake_count count = {
		.sent = connection->send_sequence,
		.received = connection->receive_sequence,
		.stripes_sent = connection->stripes_sent,
		.stripes_received = connection->stripes_received,
	};

	if (bolt_side_channel_send(connection->stream, BOLT_HANDSHAKE_COUNT, &count, sizeof(count)))
		bolt_connection_fail(connection, FI_EIO, "the side channel refused an answer");
}

bool bolt_loss_handle(struct bolt_connection *connection, uint16_t type, const void *body,
		      uint32_t length, uint64_t now_ns)
{
	struct bolt_loss_watch *watch = &connection->loss;
	struct bolt_handshake_count count;

	if (type == BOLT_HANDSHAKE_COUNT_ASK && length == 0) {
		bolt_loss_answer(connection);
		return true;
	}
	if (type != BOLT_HANDSHAKE_COUNT || length != sizeof(count) || !watch->asking)
		return false;
	memcpy(&count, body, sizeof(count));
	watch->asking = false;
	watch->answered = true;
	watch->answered_ns = now_ns;
	watch->peer_stripes_sent = count.stripes_sent;
	watch->peer_stripes_received = count.stripes_received;
	return true;
}
