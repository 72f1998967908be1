/*
 * bolt_rewrite.c: RDMA writes of application data that UC lost, written
 * again. Owns, per connection, the writes in progress to the peer (cut into
 * segments, a bounded record of each segment not yet acknowledged) and what
 * arrived of the peer's segments.
 *
 * Selective repeat, not go-back-N as for messages (bolt_retransmit.c): a
 * write lands in place and the application's buffer stays valid until bolt
 * completes the operation, so writing a segment again is harmless to the
 * data and costs no copy, and keeps nothing at the target; sending again
 * everything after a loss would cost a whole window for each of 1 % of
 * segments. The software device, as a real UC link, loses a write if any of
 * its packets is lost (1 KiB frames on Thunderbolt): a 1 MiB stripe would
 * almost never arrive at 1 % packet loss, so writes go in segments whose
 * size follows the link (bolt_rewrite_best_size): small while it loses,
 * up to FI_BOLT_UC_WRITE_SEGMENT while it does not, where every work
 * request and acknowledgement costs.
 *
 * Each segment is an RDMA write with immediate data: BOLT_IMMEDIATE_SEGMENT,
 * the connection's slot, and the segment's number (24 bits, per connection
 * and direction), with BOLT_REWRITE_ACKNOWLEDGE_NOW on a write's last. The
 * target keeps the number below which everything arrived and a bitmap of
 * the 64 after it, and says both in every CREDIT it sends: after 8
 * segments, at once on a write's last segment, on a new gap or the segment
 * that fills one, on a duplicate (its acknowledgement was lost), or after a
 * short delay. A queue pair delivers in order, so the initiator knows a
 * segment lost as soon as one sent after it on the same queue pair is
 * acknowledged, and writes it again then; a lost tail (nothing after it) is
 * written again after the retransmission timeout measured from the
 * segments' round trips (bolt_round_trip.c), which progress watches with
 * the precise clock while segments are out.
 * Once a write's segments all arrived, the protocol's immediate data goes
 * in a WRITE_LANDED message (sequenced, so taken exactly once) and the
 * write completes at the initiator: completion means delivery. A duplicate
 * segment only sets a bit already set: nothing is taken twice.
 *
 * Keys are per port. A write whose data rail fails or goes (its port down,
 * the control rail moved) has its segments go on the control rail; one
 * there whose keys are another port's (it came from a data rail, or the
 * control rail moved since it started) first takes the protocol's keys for
 * the control rail's port (events->write_keys, which may ask the target).
 *
 * A connection fails only when the peer acknowledges nothing for
 * FI_BOLT_LIVENESS_TIMEOUT while segments wait. RC writes reliably by
 * itself: nothing here applies.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "connection/bolt_connection.h"

#define BOLT_REWRITE_NUMBER_MASK 0x00ffffffu
#define BOLT_REWRITE_ACKNOWLEDGE_NOW 0x01000000u
/* A target acknowledges after this many segments, or this long. */
#define BOLT_REWRITE_ACKNOWLEDGE_EVERY 8
#define BOLT_REWRITE_ACKNOWLEDGE_DELAY_NS (50ULL * 1000ULL)
/*
 * The timeout of a lost tail follows the segments' own round trip; its
 * floor only keeps a peer descheduled for a moment from costing a window
 * written again each time (a segment written again is harmless: it lands
 * on the same bytes).
 */
#define BOLT_REWRITE_INITIAL_TIMEOUT_NS (2ULL * 1000000ULL)
#define BOLT_REWRITE_MIN_TIMEOUT_NS (100ULL * 1000ULL)
#define BOLT_REWRITE_MAX_TIMEOUT_NS (20ULL * 1000000ULL)
/* The smallest segment: four Thunderbolt frames. */
#define BOLT_REWRITE_MIN_SEGMENT 4096
/*
 * A connection's first segments, until the loss is first judged: no larger,
 * so that a lossy link does not lose larger ones whole, again and again, for
 * the first BOLT_REWRITE_CHOOSE_EVERY segments; a clean one grows to
 * FI_BOLT_UC_WRITE_SEGMENT then.
 */
#define BOLT_REWRITE_FIRST_SEGMENT (1u << 20)
/* The loss estimate follows about this many segments, and the size is chosen again after these. */
#define BOLT_REWRITE_LOSS_MEMORY 64.0
#define BOLT_REWRITE_CHOOSE_EVERY 8
/* Control rail segments in flight: the receives the peer keeps for the link. */
#define BOLT_REWRITE_CONTROL_IN_FLIGHT (BOLT_LINK_RECEIVE_DEPTH / 2)

bool bolt_rewrite_applies(const struct bolt_connection *connection)
{
	return bolt_connection_unreliable(connection);
}

static bool bolt_rewrite_is_segment(uint32_t immediate)
{
	return (immediate & BOLT_IMMEDIATE_SEGMENT) == BOLT_IMMEDIATE_SEGMENT;
}

int bolt_rewrite_start(struct bolt_connection *connection, int rail, struct bolt_control_buffer *record,
		       const struct ibv_sge *sge, uint64_t remote_address, uint32_t rkey,
		       const uint32_t *immediate)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	struct bolt_rewrite_write *write;

	if (!rewrite->segments) {
		rewrite->segments = calloc(BOLT_REWRITE_WINDOW, sizeof(*rewrite->segments));
		if (!rewrite->segments)
			return -FI_ENOMEM;
		bolt_round_trip_init(&rewrite->round_trip, BOLT_REWRITE_INITIAL_TIMEOUT_NS,
				     BOLT_REWRITE_MIN_TIMEOUT_NS, BOLT_REWRITE_MAX_TIMEOUT_NS);
		rewrite->timeout_ns = rewrite->round_trip.timeout_ns;
		rewrite->segment_size = (uint32_t) connection->manager->domain->fabric->params.uc_write_segment;
		if (rewrite->segment_size > BOLT_REWRITE_FIRST_SEGMENT)
			rewrite->segment_size = BOLT_REWRITE_FIRST_SEGMENT;
	}
	write = calloc(1, sizeof(*write));
	if (!write)
		return -FI_ENOMEM;
	*write = (struct bolt_rewrite_write) {
		.record = record,
		.rail = rail,
		.local_address = sge->addr,
		.lkey = sge->lkey,
		.remote_address = remote_address,
		.rkey = rkey,
		.port = rail < 0 ? connection->link->port : connection->data_rails[rail].port,
		.length = sge->length,
		.immediate = immediate ? *immediate : 0,
		.with_immediate = immediate != NULL,
	};
	/*
	 * Its record waits here, marked posted: a failed connection's reclaim
	 * returns it. It names no link: the control rail may move, and the old
	 * link retire, before the write completes.
	 */
	record->connection = connection;
	record->link = NULL;
	record->data_rail = rail;
	record->send_slots = 0;
	record->posted = true;
	if (rail >= 0)
		connection->data_rails[rail].outstanding_sends++;
	if (!rewrite->writes && rewrite->oldest == rewrite->next_sequence)
		rewrite->progress_ns = bolt_connection_now_ns();
	DL_APPEND(rewrite->writes, write);
	bolt_rewrite_post(connection);
	return 0;
}

/*
 * The queue pair a segment of write goes on now (0: the control rail, 1 +
 * a data rail's index); -1: none now. A write stays on the data rail it was
 * given while that is usable and on the port of its keys; else the control
 * rail takes it (bolt_rewrite_keys_follow).
 */
static int bolt_rewrite_choose_queue_pair(const struct bolt_connection *connection,
					  const struct bolt_rewrite_write *write)
{
	if (connection->state != BOLT_CONNECTION_ESTABLISHED || !connection->link)
		return -1;
	if (write->rail >= 0 && bolt_data_rail_index_usable(connection, write->rail) &&
	    connection->data_rails[write->rail].port == write->port)
		return 1 + write->rail;
	return 0;
}

/*
 * Whether write's keys are for the control rail's port, taking the
 * protocol's keys there if not (the operation's, from the write or the one
 * it is a part of); false while they are asked for, or if the connection
 * failed.
 */
static bool bolt_rewrite_keys_follow(struct bolt_connection *connection, struct bolt_rewrite_write *write)
{
	const struct bolt_rewrite_write *whole = write;
	int ret;

	if (write->port == connection->link->port)
		return true;
	while (whole->parent)
		whole = whole->parent;
	ret = connection->manager->events->write_keys(connection, whole->record, &write->lkey, &write->rkey);
	if (ret < 0)
		bolt_connection_fail(connection, FI_EIO, "a write's keys cannot follow it to another port");
	if (ret)
		return false;
	write->port = connection->link->port;
	return true;
}

/* Room for one more segment on queue pair: the peer's receives, our send queue. */
static bool bolt_rewrite_has_room(const struct bolt_connection *connection, int queue_pair)
{
	const struct bolt_rewrite *rewrite = &connection->rewrite;
	const struct bolt_data_rail *rail;

	if (!queue_pair)
		return rewrite->in_flight[0] < BOLT_REWRITE_CONTROL_IN_FLIGHT &&
		       bolt_link_can_write(connection);
	rail = &connection->data_rails[queue_pair - 1];
	return rewrite->in_flight[queue_pair] < BOLT_REWRITE_RAIL_RECEIVES &&
	       rail->outstanding_sends < (int) rail->port->budget.queue_depth;
}

/* Posts segment number sequence as it is now on queue_pair; false if it could not go. */
static bool bolt_rewrite_post_segment(struct bolt_connection *connection, uint32_t sequence,
				      struct bolt_rewrite_segment *segment, int queue_pair)
{
	struct bolt_domain *domain = connection->manager->domain;
	const struct bolt_rewrite_write *write = segment->write;
	bool last = segment->offset + segment->length == write->length;
	struct ibv_sge sge = {
		.addr = write->local_address + segment->offset,
		.length = segment->length,
		.lkey = write->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = BOLT_IMMEDIATE_SEGMENT |
			    (uint32_t) connection->slot << BOLT_IMMEDIATE_SLOT_SHIFT |
			    (sequence & BOLT_REWRITE_NUMBER_MASK) |
			    (last ? BOLT_REWRITE_ACKNOWLEDGE_NOW : 0),
		.wr.rdma = { .remote_addr = write->remote_address + segment->offset, .rkey = write->rkey },
	};
	struct bolt_control_buffer *record = bolt_control_buffer_get(domain);
	int ret;

	if (!record)
		return false;
	record->send_slots = 1;
	if (!queue_pair) {
		if (!bolt_link_post(connection, record, &wr, NULL, bolt_link_bare_send_completed))
			return false;
	} else {
		record->work.handle = bolt_link_bare_send_completed;
		ret = bolt_data_rail_post(connection, queue_pair - 1, record, &wr);
		if (ret) {
			bolt_control_buffer_put(domain, record);
			bolt_connection_fail(connection, FI_EIO, strerror(ret));
			return false;
		}
	}
	segment->queue_pair = queue_pair;
	segment->order = connection->rewrite.order++;
	segment->sent_ns = bolt_connection_now_ns();
	connection->rewrite.in_flight[queue_pair]++;
	segment->in_flight = true;
	return true;
}

/* The segment arrived or was lost: it takes no receive on its queue pair any more. */
static void bolt_rewrite_leave_queue_pair(struct bolt_rewrite *rewrite, struct bolt_rewrite_segment *segment)
{
	if (!segment->in_flight)
		return;
	rewrite->in_flight[segment->queue_pair]--;
	segment->in_flight = false;
}

/* A segment sent before one that arrived on the same queue pair, or timed out (sent_ns 0). */
static bool bolt_rewrite_lost(const struct bolt_rewrite *rewrite, const struct bolt_rewrite_segment *segment)
{
	return segment->write && (!segment->sent_ns ||
				  segment->order < rewrite->acknowledged_order[segment->queue_pair]);
}

/*
 * The segment size that moves the most, from the segments lost lately: a
 * segment of n KiB arrives with probability keep^n (keep per KiB, from the
 * fraction lost of segments of their mean size) and takes the time of n KiB
 * and the cost, so the best is near sqrt(cost / loss): 32 to 64 KiB at 1 %
 * on the software device, 128 to 256 KiB at 0.1 %, the largest on a clean
 * link.
 */
static uint32_t bolt_rewrite_best_size(const struct bolt_rewrite *rewrite, uint32_t largest, uint32_t cost)
{
	double lost = rewrite->observed_losses / rewrite->observed_segments;
	double log_keep = log1p(-(lost < 0.999 ? lost : 0.999)) /
			  (rewrite->observed_kibibytes / rewrite->observed_segments);
	double best_value = -1.0;
	uint32_t best = BOLT_REWRITE_MIN_SEGMENT;

	for (uint64_t size = BOLT_REWRITE_MIN_SEGMENT;; size *= 2) {
		uint32_t candidate = size < largest ? (uint32_t) size : largest;
		double value = exp(log_keep * candidate / 1024.0) * candidate / ((double) candidate + cost);

		if (value > best_value) {
			best_value = value;
			best = candidate;
		}
		if (candidate == largest)
			return best;
	}
}

/*
 * A segment acknowledged or found lost: the counts the loss is judged from
 * move (they forget at the pace of BOLT_REWRITE_LOSS_MEMORY segments), and
 * now and then the size follows.
 */
static void bolt_rewrite_observe(struct bolt_connection *connection, uint32_t length, bool lost)
{
	const struct bolt_params *params = &connection->manager->domain->fabric->params;
	struct bolt_rewrite *rewrite = &connection->rewrite;
	double keep = 1.0 - 1.0 / BOLT_REWRITE_LOSS_MEMORY;

	rewrite->observed_segments = rewrite->observed_segments * keep + 1.0;
	rewrite->observed_kibibytes = rewrite->observed_kibibytes * keep + (length > 1024 ? length / 1024.0 : 1.0);
	rewrite->observed_losses = rewrite->observed_losses * keep + (lost ? 1.0 : 0.0);
	if (++rewrite->observed_since_choice < BOLT_REWRITE_CHOOSE_EVERY)
		return;
	rewrite->observed_since_choice = 0;
	rewrite->segment_size = bolt_rewrite_best_size(rewrite, (uint32_t) params->uc_write_segment,
						       (uint32_t) params->uc_segment_cost);
}

/*
 * A lost segment larger than the segment size now would hardly ever arrive
 * on the link that lost it: its bytes become a part of its write, cut again
 * at the size now with numbers of their own as the window allows (just
 * after its write, so they go before later writes), and its number goes
 * again with no bytes, one packet, which lets the window move on. Without
 * memory for a part it goes again whole.
 */
static void bolt_rewrite_hand_back(struct bolt_rewrite *rewrite, struct bolt_rewrite_segment *lost)
{
	struct bolt_rewrite_write *write = lost->write, *part;

	if (lost->length <= rewrite->segment_size || !(part = calloc(1, sizeof(*part))))
		return;
	*part = (struct bolt_rewrite_write) {
		.rail = write->rail,
		.local_address = write->local_address + lost->offset,
		.lkey = write->lkey,
		.remote_address = write->remote_address + lost->offset,
		.rkey = write->rkey,
		.port = write->port,
		.length = lost->length,
		.parent = write,
	};
	DL_APPEND_ELEM(rewrite->writes, write, part);
	write->unacknowledged++;
	lost->length = 0;
}

/* A part whose segments all arrived leaves, and counts as arrived in its write. */
static void bolt_rewrite_part_arrived(struct bolt_rewrite *rewrite, struct bolt_rewrite_write *write)
{
	while (write->parent && write->cut && !write->unacknowledged) {
		struct bolt_rewrite_write *parent = write->parent;

		DL_DELETE(rewrite->writes, write);
		free(write);
		parent->unacknowledged--;
		write = parent;
	}
}

/* Writes again what was lost; false when the queue pairs are full. */
static bool bolt_rewrite_post_lost(struct bolt_connection *connection)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;

	for (uint32_t sequence = rewrite->oldest; sequence != rewrite->next_sequence; sequence++) {
		struct bolt_rewrite_segment *segment = &rewrite->segments[sequence % BOLT_REWRITE_WINDOW];
		int queue_pair;

		if (!bolt_rewrite_lost(rewrite, segment))
			continue;
		queue_pair = bolt_rewrite_choose_queue_pair(connection, segment->write);
		if (queue_pair < 0)
			continue;
		/*
		 * Once per loss, though it may wait for room: it takes no receive
		 * there any more (one that timed out and still arrives costs the peer
		 * a receive: that segment is lost and written again, a window that
		 * waited for it would wait forever), and counts once in the loss the
		 * segment size follows.
		 */
		if (segment->in_flight) {
			bolt_rewrite_leave_queue_pair(rewrite, segment);
			bolt_rewrite_observe(connection, segment->length, true);
			bolt_rewrite_hand_back(rewrite, segment);
			segment->written_again = true;
		}
		/* Its keys asked for: the others lost may go meanwhile. */
		if (!queue_pair && !bolt_rewrite_keys_follow(connection, segment->write)) {
			if (connection->state != BOLT_CONNECTION_ESTABLISHED)
				return false;
			continue;
		}
		if (!bolt_rewrite_has_room(connection, queue_pair) ||
		    !bolt_rewrite_post_segment(connection, sequence, segment, queue_pair))
			return false;
		rewrite->rewrites++;
	}
	return true;
}

/* Cuts write's next segment and posts it; false when it cannot go now. */
static bool bolt_rewrite_post_next(struct bolt_connection *connection, struct bolt_rewrite_write *write)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	uint32_t segment_size = rewrite->segment_size;
	struct bolt_rewrite_segment *segment;
	int queue_pair = bolt_rewrite_choose_queue_pair(connection, write);

	if (rewrite->next_sequence - rewrite->oldest >= BOLT_REWRITE_WINDOW || queue_pair < 0 ||
	    (!queue_pair && !bolt_rewrite_keys_follow(connection, write)) ||
	    !bolt_rewrite_has_room(connection, queue_pair))
		return false;
	segment = &rewrite->segments[rewrite->next_sequence % BOLT_REWRITE_WINDOW];
	*segment = (struct bolt_rewrite_segment) {
		.write = write,
		.offset = write->posted,
		.length = write->length - write->posted < segment_size ? write->length - write->posted :
									  segment_size,
	};
	if (!bolt_rewrite_post_segment(connection, rewrite->next_sequence, segment, queue_pair)) {
		segment->write = NULL;
		return false;
	}
	rewrite->next_sequence++;
	write->posted += segment->length;
	write->cut = write->posted == write->length;
	write->unacknowledged++;
	return true;
}

static bool bolt_rewrite_uncut(const struct bolt_rewrite_write *write)
{
	return !write->cut;
}

bool bolt_rewrite_pending(const struct bolt_connection *connection)
{
	return connection->rewrite.writes != NULL;
}

void bolt_rewrite_post(struct bolt_connection *connection)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	struct bolt_rewrite_write *write;

	if (!rewrite->writes || connection->state != BOLT_CONNECTION_ESTABLISHED ||
	    !bolt_rewrite_post_lost(connection))
		return;
	DL_FOREACH(rewrite->writes, write)
		while (bolt_rewrite_uncut(write))
			if (!bolt_rewrite_post_next(connection, write) ||
			    connection->state != BOLT_CONNECTION_ESTABLISHED)
				return;
}

/* Every segment of write arrived: the target takes its immediate data, the initiator completes it. */
static void bolt_rewrite_complete(struct bolt_connection *connection, struct bolt_rewrite_write *write)
{
	struct bolt_control_buffer *record = write->record;
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RDMA_WRITE };
	struct bolt_wire_header landed = {
		.op = BOLT_WIRE_WRITE_LANDED,
		.cq_data = write->immediate,
		.tag = write->length,
	};

	if (write->with_immediate)
		connection->manager->events->send(connection, &landed, NULL, 0);
	free(write);
	if (connection->state == BOLT_CONNECTION_FAILED || !record->posted)
		return;
	record->work.handle(&record->work, &wc);
}

/* Segment number sequence arrived, as the peer said at now_ns. */
static void bolt_rewrite_segment_acknowledged(struct bolt_connection *connection, uint32_t sequence,
					      uint64_t now_ns)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	struct bolt_rewrite_segment *segment = &rewrite->segments[sequence % BOLT_REWRITE_WINDOW];
	struct bolt_rewrite_write *write = segment->write;

	if (!write)
		return;
	if (!segment->written_again && segment->sent_ns && now_ns > segment->sent_ns)
		bolt_round_trip_sample(&rewrite->round_trip, now_ns - segment->sent_ns);
	if (rewrite->acknowledged_order[segment->queue_pair] < segment->order + 1)
		rewrite->acknowledged_order[segment->queue_pair] = segment->order + 1;
	bolt_rewrite_leave_queue_pair(rewrite, segment);
	bolt_rewrite_observe(connection, segment->length, false);
	segment->write = NULL;
	write->unacknowledged--;
	bolt_rewrite_part_arrived(rewrite, write);
}

/*
 * Completes the writes whose segments all arrived, in the order they
 * started: the target takes them in that order (messages written into
 * receives granted ahead are numbered).
 */
static void bolt_rewrite_complete_arrived(struct bolt_connection *connection)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	struct bolt_rewrite_write *write;

	while ((write = rewrite->writes) && !bolt_rewrite_uncut(write) && !write->unacknowledged &&
	       connection->state == BOLT_CONNECTION_ESTABLISHED) {
		DL_DELETE(rewrite->writes, write);
		bolt_rewrite_complete(connection, write);
	}
}

void bolt_rewrite_acknowledged(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	uint32_t outstanding = rewrite->next_sequence - rewrite->oldest, received;
	uint64_t now_ns;

	if (!bolt_rewrite_applies(connection) || !rewrite->segments || !outstanding ||
	    connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	/* The wire's 24 bits, among the numbers outstanding; an older word says nothing new. */
	received = (uint32_t) ((header->request_id - rewrite->oldest) & BOLT_REWRITE_NUMBER_MASK);
	if (received > outstanding)
		return;
	now_ns = bolt_connection_now_ns();
	for (uint32_t k = 0; k < received; k++)
		bolt_rewrite_segment_acknowledged(connection, rewrite->oldest + k, now_ns);
	for (uint32_t k = 0; k < 64 && received + 1 + k < outstanding; k++)
		if (header->tag & (1ULL << k))
			bolt_rewrite_segment_acknowledged(connection, rewrite->oldest + received + 1 + k,
							  now_ns);
	if (received) {
		rewrite->progress_ns = now_ns;
		rewrite->timeout_ns = rewrite->round_trip.timeout_ns;
	}
	while (rewrite->oldest != rewrite->next_sequence &&
	       !rewrite->segments[rewrite->oldest % BOLT_REWRITE_WINDOW].write)
		rewrite->oldest++;
	bolt_rewrite_complete_arrived(connection);
	bolt_rewrite_post(connection);
}

void bolt_rewrite_acknowledging(struct bolt_connection *connection, struct bolt_wire_header *header)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;

	if (!bolt_rewrite_applies(connection))
		return;
	header->request_id = rewrite->received;
	header->tag = rewrite->received_after;
	rewrite->acknowledgement_owed = false;
	rewrite->unacknowledged_arrivals = 0;
	rewrite->acknowledgement_due_ns = 0;
}

/* Says what arrived: now, or (no credit now) soon. */
static void bolt_rewrite_acknowledge(struct bolt_connection *connection, bool now)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;

	rewrite->acknowledgement_owed = true;
	if ((now || rewrite->unacknowledged_arrivals >= BOLT_REWRITE_ACKNOWLEDGE_EVERY) &&
	    bolt_link_send_acknowledgement(connection, false, false))
		return;
	if (!rewrite->acknowledgement_due_ns)
		rewrite->acknowledgement_due_ns = bolt_connection_now_ns() + BOLT_REWRITE_ACKNOWLEDGE_DELAY_NS;
}

/* Segment number arrived: the count and the bitmap move; true if it showed a new gap. */
static bool bolt_rewrite_count(struct bolt_rewrite *rewrite, uint32_t number)
{
	uint32_t distance = (number - rewrite->received) & BOLT_REWRITE_NUMBER_MASK;
	bool next;

	if (distance == 0) {
		rewrite->received = (rewrite->received + 1) & BOLT_REWRITE_NUMBER_MASK;
		do {
			next = rewrite->received_after & 1;
			rewrite->received_after >>= 1;
			if (next)
				rewrite->received = (rewrite->received + 1) & BOLT_REWRITE_NUMBER_MASK;
		} while (next);
		return false;
	}
	/* Further than the window (never sent so), or again: only acknowledged. */
	if (distance > 64)
		return false;
	rewrite->received_after |= 1ULL << (distance - 1);
	if (rewrite->gap_reported == rewrite->received)
		return false;
	rewrite->gap_reported = rewrite->received;
	return true;
}

bool bolt_rewrite_arrived(struct bolt_connection *connection, const struct ibv_wc *wc)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	uint32_t number;
	bool before, filled, gap;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || !bolt_rewrite_applies(connection) ||
	    !bolt_rewrite_is_segment(wc->imm_data))
		return false;
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return true;
	number = wc->imm_data & BOLT_REWRITE_NUMBER_MASK;
	before = ((rewrite->received - number) & BOLT_REWRITE_NUMBER_MASK) - 1 <
		 BOLT_REWRITE_NUMBER_MASK / 2;
	/* The one a gap waited for: its initiator's window may be held by it. */
	filled = number == rewrite->received && rewrite->received_after;
	gap = !before && bolt_rewrite_count(rewrite, number);
	rewrite->unacknowledged_arrivals++;
	/* Again (our word was lost), a new gap or one filled, a write's last: the initiator hears at once. */
	bolt_rewrite_acknowledge(connection, before || gap || filled ||
					     (wc->imm_data & BOLT_REWRITE_ACKNOWLEDGE_NOW));
	return true;
}

void bolt_rewrite_landed(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct ibv_wc wc = {
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
		.wc_flags = IBV_WC_WITH_IMM,
		.imm_data = (uint32_t) header->cq_data,
		.byte_len = (uint32_t) header->tag,
	};

	connection->manager->events->write_landed(connection, &wc);
}

/* A segment's receive on a data rail completed. */
static void bolt_rewrite_rail_arrived(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *record = bolt_control_buffer_of_work(work);
	struct bolt_connection *connection = record->connection;
	int rail = record->data_rail;

	if (!record->posted)
		return;
	bolt_control_buffer_put(connection->manager->domain, record);
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	connection->rewrite.rail_receives[rail]--;
	/* A rail given up (its probe failed) flushes what it had posted. */
	if (connection->data_rails[rail].state != BOLT_DATA_RAIL_READY)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		bolt_connection_fail(connection, FI_EIO,
				     connection->manager->domain->fabric->verbs.wc_status_str(wc->status));
		return;
	}
	/* Posted again before the acknowledgement goes: the initiator counts on it then. */
	bolt_rewrite_rail_receives(connection, rail);
	if (!bolt_rewrite_arrived(connection, wc))
		bolt_connection_fail(connection, FI_EIO, "a data rail write that is no segment");
}

void bolt_rewrite_rail_receives(struct bolt_connection *connection, int rail)
{
	struct bolt_domain *domain = connection->manager->domain;
	uint32_t *posted = &connection->rewrite.rail_receives[rail];

	while (*posted < BOLT_REWRITE_RAIL_RECEIVES) {
		struct bolt_control_buffer *record = bolt_control_buffer_get(domain);

		/* Fewer receives only lose more segments, which are written again. */
		if (!record)
			return;
		record->work.handle = bolt_rewrite_rail_arrived;
		if (bolt_data_rail_post_receive(connection, rail, record)) {
			bolt_control_buffer_put(domain, record);
			return;
		}
		(*posted)++;
	}
}

bool bolt_rewrite_timing(const struct bolt_connection *connection)
{
	const struct bolt_rewrite *rewrite = &connection->rewrite;

	return rewrite->acknowledgement_due_ns || rewrite->oldest != rewrite->next_sequence;
}

/* The peer acknowledged none of our segments for the liveness time: it is gone. */
static bool bolt_rewrite_peer_silent(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;

	if (rewrite->oldest == rewrite->next_sequence ||
	    now_ns < rewrite->progress_ns + bolt_domain_liveness_ns(connection->manager->domain))
		return false;
	FI_WARN(&bolt_prov, FI_LOG_EP_DATA,
		"peer acknowledged no write for %d ms: %llu segments written again, %llu timeouts\n",
		connection->manager->domain->fabric->params.liveness_timeout,
		(unsigned long long) rewrite->rewrites, (unsigned long long) rewrite->timeouts);
	bolt_connection_fail(connection, FI_EIO, "the peer acknowledged no write for the liveness time");
	return true;
}

/* Segments unacknowledged for the timeout are lost too: the tail nothing came after. */
static void bolt_rewrite_time_out(struct bolt_rewrite *rewrite, uint64_t now_ns)
{
	bool expired = false;

	for (uint32_t sequence = rewrite->oldest; sequence != rewrite->next_sequence; sequence++) {
		struct bolt_rewrite_segment *segment = &rewrite->segments[sequence % BOLT_REWRITE_WINDOW];

		if (segment->write && segment->sent_ns && now_ns >= segment->sent_ns + rewrite->timeout_ns) {
			segment->sent_ns = 0;
			expired = true;
		}
	}
	if (!expired)
		return;
	rewrite->timeouts++;
	rewrite->timeout_ns = rewrite->timeout_ns * 2 > BOLT_REWRITE_MAX_TIMEOUT_NS ?
			      BOLT_REWRITE_MAX_TIMEOUT_NS : rewrite->timeout_ns * 2;
}

void bolt_rewrite_progress(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;

	if (connection->state == BOLT_CONNECTION_FAILED) {
		bolt_rewrite_destroy(connection);
		return;
	}
	if (connection->state != BOLT_CONNECTION_ESTABLISHED || !bolt_rewrite_applies(connection))
		return;
	if (now_ns && rewrite->acknowledgement_due_ns && now_ns >= rewrite->acknowledgement_due_ns)
		bolt_rewrite_acknowledge(connection, true);
	if (now_ns && rewrite->segments) {
		if (bolt_rewrite_peer_silent(connection, now_ns))
			return;
		bolt_rewrite_time_out(rewrite, now_ns);
	}
	bolt_rewrite_post(connection);
}

void bolt_rewrite_destroy(struct bolt_connection *connection)
{
	struct bolt_rewrite *rewrite = &connection->rewrite;
	struct bolt_rewrite_write *write, *next;

	if (rewrite->segments)
		FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
			"write segments: %u sent, %llu written again, %llu timeouts\n", rewrite->next_sequence,
			(unsigned long long) rewrite->rewrites, (unsigned long long) rewrite->timeouts);
	DL_FOREACH_SAFE(rewrite->writes, write, next) {
		DL_DELETE(rewrite->writes, write);
		free(write);
	}
	free(rewrite->segments);
	rewrite->segments = NULL;
	rewrite->oldest = rewrite->next_sequence;
}
