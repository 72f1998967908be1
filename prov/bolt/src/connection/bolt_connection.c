/*
 * bolt_connection.c: connections between endpoints. On first use, the
 * initiator says hello over the peer's side channel, with its domain's id.
 * The peer joins the connection to the link (bolt_link.c) it has to that
 * domain, if any, and replies with the link's queue pairs and the
 * connection's slot: the initiator checks it has that link too and says it
 * is ready. Otherwise the peer makes a new link and replies with its queue
 * pair; the initiator makes one, connects it and says ready with it; the peer
 * connects its own and says so, after which both may send (a queue pair that
 * is not yet ready to receive drops what reaches it). When both ends connect
 * at once, the side channel started by the smaller address wins. The side
 * channel stays open: when it closes, the peer is gone, and every operation
 * on the connection ends with an error instead of hanging (UC reports
 * nothing when a peer dies).
 */
#include <assert.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utlist.h>

#include "bolt_random.h"
#include "connection/bolt_connection.h"
#include "connection/bolt_link_move.h"
#include "connection/bolt_handshake.h"
#include "platform/bolt_platform.h"

/* A peer that took our side channel and closed it says hello within this, or is gone. */
#define BOLT_CONNECTION_CROSSING_NS (1000ULL * 1000000ULL)
/* A side channel accepted says hello within this, or is dropped. */
#define BOLT_CONNECTION_HELLO_NS (2000ULL * 1000000ULL)
/*
 * Side channels cost system calls; once every connection is up they are only
 * watched for liveness, which needs far less than every progress call. A
 * watch polls them all at once (bolt_connection_side_channels_quiet). The
 * interval is judged by the coarse clock, so on Linux it is one timer tick
 * (1 to 4 ms), still far below any liveness deadline.
 */
#define BOLT_CONNECTION_WATCH_INTERVAL_NS 1000000ULL
/* An accept that fails (EMFILE, ENOMEM) is tried again after this, doubling up to the most. */
#define BOLT_CONNECTION_ACCEPT_BACKOFF_NS (10ULL * 1000000ULL)
#define BOLT_CONNECTION_ACCEPT_BACKOFF_MAX_NS (1000ULL * 1000000ULL)
/* And said at most this often. */
#define BOLT_CONNECTION_ACCEPT_WARN_NS (10ULL * 1000000000ULL)
/* Side channels refused are said at most this often: a flood must not flood the log too. */
#define BOLT_CONNECTION_REFUSAL_WARN_NS (1000ULL * 1000000ULL)

uint64_t bolt_connection_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000000ULL + (uint64_t) now.tv_nsec;
}

static bool bolt_connection_same_address(const struct bolt_address *a, const struct bolt_address *b)
{
	return !memcmp(a, b, sizeof(*a));
}

void bolt_connection_handshake_fill(const struct bolt_connection *connection,
				    struct bolt_handshake *handshake)
{
	const struct bolt_domain *domain = connection->manager->domain;

	memset(handshake, 0, sizeof(*handshake));
	handshake->sender = connection->manager->address;
	handshake->receiver = connection->peer;
	handshake->byte_order = BOLT_HANDSHAKE_BYTE_ORDER;
	handshake->qp_type = domain->primary.qp_type;
	handshake->domain_id = domain->domain_id;
	handshake->port_count = (uint8_t) bolt_link_port_count(domain);
	handshake->peer_port = (uint8_t) (connection->peer_port_count ?
					  connection->attempt % connection->peer_port_count : 0);
	memcpy(handshake->gid, domain->primary.gid.raw, sizeof(handshake->gid));
	if (!connection->link)
		return;
	bolt_link_describe(connection->link, handshake);
	handshake->slot = connection->slot;
	handshake->slot_nonce = connection->slot_nonce;
}

/* The bounce buffers of the link a handshake describes. */
static struct bolt_peer_bounce bolt_connection_peer_bounce(const struct bolt_handshake *handshake)
{
	return (struct bolt_peer_bounce) {
		.address = handshake->bounce_address,
		.rkey = handshake->bounce_rkey,
		.size = handshake->bounce_size,
	};
}

/* Why a handshake from the peer cannot be used, or NULL; with_qp: it must name a queue pair. */
const char *bolt_connection_handshake_check(const struct bolt_connection_manager *manager,
					    const struct bolt_handshake *handshake, uint32_t length,
					    bool with_qp)
{
	struct bolt_peer_bounce peer_bounce;

	if (length != sizeof(*handshake))
		return "handshake of the wrong size";
	if (handshake->byte_order != BOLT_HANDSHAKE_BYTE_ORDER)
		return "peer of another byte order";
	if (!bolt_address_is_valid(&handshake->sender, sizeof(handshake->sender)))
		return "malformed sender address";
	if (!bolt_connection_same_address(&handshake->receiver, &manager->address))
		return "handshake meant for another endpoint";
	if (handshake->qp_type != manager->domain->primary.qp_type)
		return "peer uses another queue pair type";
	if (!handshake->domain_id)
		return "peer without a domain id";
	if (handshake->slot >= BOLT_LINK_SLOTS)
		return "slot out of range";
	if (!handshake->port_count || handshake->port_count > 1 + BOLT_MAX_STRIPE_PORTS ||
	    handshake->port >= handshake->port_count || handshake->peer_port > BOLT_MAX_STRIPE_PORTS)
		return "port out of range";
	if (!with_qp)
		return NULL;
	if (handshake->qpn == 0 || handshake->qpn > 0xffffff || handshake->psn > 0xffffff ||
	    handshake->peer_qpn > 0xffffff)
		return "queue pair number or PSN out of range";
	if (handshake->receive_depth < 2 || handshake->receive_depth > 1024)
		return "receive depth out of range";
	peer_bounce = bolt_connection_peer_bounce(handshake);
	return bolt_bounce_check_peer(&peer_bounce);
}

/* Connects the connection's new link to the queue pair the handshake describes. */
static int bolt_connection_connect_link(struct bolt_connection *connection,
					const struct bolt_handshake *handshake)
{
	struct bolt_peer_bounce peer_bounce = bolt_connection_peer_bounce(handshake);
	int ret = bolt_link_connect(connection->link, handshake->qpn, handshake->psn, handshake->gid,
				    handshake->receive_depth, &peer_bounce);

	connection->link->peer_port = handshake->port;
	return ret;
}

/* A new link to peer_domain_id on our port number port, with the connection in its first slot. */
static int bolt_connection_new_link(struct bolt_connection *connection, int port,
				    uint64_t peer_domain_id, uint8_t slot_nonce)
{
	struct bolt_link *link;
	int ret;

	ret = bolt_link_create(connection->manager->domain, port, peer_domain_id, &link);
	if (ret)
		return ret;
	return bolt_link_join(link, connection, 0, slot_nonce);
}

static int bolt_connection_send_handshake(struct bolt_connection *connection, uint16_t type)
{
	struct bolt_handshake handshake;

	bolt_connection_handshake_fill(connection, &handshake);
	return bolt_side_channel_send(connection->stream, type, &handshake, sizeof(handshake));
}

/* A connection to peer, with its owner's state; NULL when out of memory. */
static struct bolt_connection *bolt_connection_create(struct bolt_connection_manager *manager,
						      const struct bolt_address *peer)
{
	struct bolt_connection *connection = calloc(1, sizeof(*connection));

	if (!connection)
		return NULL;
	connection->manager = manager;
	connection->peer = *peer;
	connection->started_ns = bolt_connection_now_ns();
	if (manager->events->created(connection)) {
		free(connection);
		return NULL;
	}
	manager->handshakes_pending = true;
	HASH_ADD(hh, manager->connections, peer, sizeof(connection->peer), connection);
	return connection;
}

void bolt_connection_manager_start(struct bolt_connection_manager *manager, struct bolt_domain *domain,
				   const struct bolt_connection_events *events)
{
	manager->domain = domain;
	manager->events = events;
	DL_APPEND(domain->connection_managers, manager);
}

int bolt_connection_port_index(const struct bolt_connection *connection)
{
	return connection->link ? bolt_link_port_index(connection->link) : 0;
}

bool bolt_connection_unreliable(const struct bolt_connection *connection)
{
	return connection->manager->domain->primary.qp_type != IBV_QPT_RC;
}

bool bolt_connection_may_write_immediate(const struct bolt_connection *connection)
{
	return bolt_connection_unreliable(connection) || !connection->slot;
}

/* The endpoint's own address: a queue pair connected to itself. */
static int bolt_connection_start_loopback(struct bolt_connection *connection)
{
	struct bolt_handshake self;
	int ret;

	connection->loopback = true;
	/* The endpoint's own domain: a link no other connection joins. */
	ret = bolt_connection_new_link(connection, 0, connection->manager->domain->domain_id, 0);
	if (ret)
		return ret;
	bolt_connection_handshake_fill(connection, &self);
	ret = bolt_connection_connect_link(connection, &self);
	if (ret)
		return ret;
	connection->state = BOLT_CONNECTION_ESTABLISHED;
	return 0;
}

int bolt_connection_manager_connect(struct bolt_connection_manager *manager,
				    const struct bolt_address *peer,
				    struct bolt_side_channel_stream **stream)
{
	struct sockaddr_storage address;
	socklen_t length;
	int ret;

	ret = bolt_address_to_sockaddr(peer, &address, &length);
	if (ret)
		return ret;
	*stream = malloc(sizeof(**stream));
	if (!*stream)
		return -FI_ENOMEM;
	ret = bolt_side_channel_connect((struct sockaddr *) &address, length,
					bolt_side_channel_listener_scope(&manager->listener),
					&manager->domain->job_key,
					(unsigned int) manager->domain->fabric->params.liveness_timeout,
					*stream);
	if (ret) {
		free(*stream);
		*stream = NULL;
	}
	return ret;
}

static int bolt_connection_start_remote(struct bolt_connection *connection)
{
	int ret;

	ret = bolt_connection_manager_connect(connection->manager, &connection->peer,
					      &connection->stream);
	if (ret)
		return ret;
	connection->state = BOLT_CONNECTION_CONNECTING;
	return bolt_connection_send_handshake(connection, BOLT_HANDSHAKE_HELLO);
}

struct bolt_connection *bolt_connection_get(struct bolt_connection_manager *manager,
					    const struct bolt_address *peer)
{
	struct bolt_connection *connection;
	int ret;

	/* Most sends go where the last one went: no hash of the address then. */
	connection = manager->last_got;
	if (connection && bolt_connection_same_address(&connection->peer, peer))
		return connection;
	HASH_FIND(hh, manager->connections, peer, sizeof(*peer), connection);
	if (connection) {
		manager->last_got = connection;
		return connection;
	}
	connection = bolt_connection_create(manager, peer);
	if (!connection)
		return NULL;
	ret = bolt_connection_same_address(peer, &manager->address) ?
	      bolt_connection_start_loopback(connection) :
	      bolt_connection_start_remote(connection);
	if (ret)
		bolt_connection_fail(connection, -ret, "the connection could not start");
	return connection;
}

/*
 * Closes the side channel and frees it: its buffers are most of what a
 * connection holds, and a failed one is kept (the protocol layer may still
 * name it) with only its small rest.
 */
static void bolt_connection_drop_stream(struct bolt_connection *connection)
{
	if (!connection->stream)
		return;
	bolt_side_channel_stream_close(connection->stream);
	free(connection->stream);
	connection->stream = NULL;
}

/* Tears down the device side of a connection; its buffers wait for the next full poll. */
static void bolt_connection_release_device(struct bolt_connection *connection)
{
	bolt_data_rail_destroy_all(connection);
	bolt_link_leave(connection);
	bolt_connection_drop_stream(connection);
}

void bolt_connection_fail(struct bolt_connection *connection, int error, const char *why)
{
	struct bolt_domain *domain = connection->manager->domain;
	const struct bolt_connection_events *events = connection->manager->events;
	struct bolt_link *link = connection->link;
	char text[INET6_ADDRSTRLEN] = "?";
	bool waiting = events->busy(connection);

	if (connection->state == BOLT_CONNECTION_FAILED)
		return;
	/*
	 * A peer that lives on learns of the failure only over the side channel,
	 * and may write into those receives until then: if other connections keep
	 * the link's queue pair up, the link fails with this one, so that nothing
	 * lands in memory the application has back.
	 */
	if (link && link->users > 1 && !link->failing && events->exposes_memory(connection)) {
		bolt_link_fail(link, error, why);
		if (connection->state == BOLT_CONNECTION_FAILED)
			return;
	}
	inet_ntop(connection->peer.family == BOLT_ADDRESS_FAMILY_IPV4 ? AF_INET : AF_INET6,
		  connection->peer.ip, text, sizeof(text));
	/* A peer that leaves when nothing waits on it is how every job ends. */
	FI_LOG(&bolt_prov, waiting ? FI_LOG_WARN : FI_LOG_INFO, FI_LOG_EP_CTRL,
	       "connection from port %u to %s port %u failed: %s (state %d, slot %u of a link with %d connections, %u credits, %d sends in flight, %s operations waiting, %u free buffers)\n",
	       ntohs(connection->manager->address.port), text, ntohs(connection->peer.port), why,
	       connection->state, connection->slot, link ? link->users : 0,
	       link ? link->send_credits : 0, link ? link->outstanding_sends : 0,
	       waiting ? "some" : "no", domain->control_pool.free_count);
	connection->state = BOLT_CONNECTION_FAILED;
	connection->error = error ? error : FI_EIO;
	bolt_connection_release_device(connection);
	/* The writes' records are posted still: the reclaim returns them. */
	bolt_rewrite_destroy(connection);
	connection->reclaim_pending = true;
	connection->failed_generation = domain->poll_generation;
	events->failed(connection);
}

/* Undoes bolt_connection_create, the device side released first; table: where it is kept. */
static void bolt_connection_destroy(struct bolt_connection **table, struct bolt_connection *connection)
{
	struct bolt_connection_manager *manager = connection->manager;

	bolt_connection_release_device(connection);
	manager->events->destroyed(connection);
	bolt_retransmit_destroy(connection);
	bolt_rewrite_destroy(connection);
	HASH_DEL(*table, connection);
	if (manager->last_got == connection)
		manager->last_got = NULL;
	free(connection);
}

/* A side channel message whose body is one word: a nonce, a status. */
static int bolt_connection_send_word(struct bolt_connection *connection, uint16_t type, uint32_t word)
{
	return bolt_side_channel_send(connection->stream, type, &word, sizeof(word));
}

/* Tells the peer why it gets no connection; best effort, the side channel closes next. */
static void bolt_connection_reject(struct bolt_connection *connection, int error)
{
	if (!bolt_connection_send_word(connection, BOLT_HANDSHAKE_REJECT, (uint32_t) error))
		bolt_side_channel_progress(connection->stream);
}

/*
 * Answers the hello of a peer in peer_domain_id: joins the connection to our
 * link to that domain, or makes a new link on our port number port
 * (new_link: the peer asks for one), and replies. A link still connecting is
 * waited for: endpoints that connect at once then share one. A hello said
 * again (the join we offered did not suit the peer, or the ports did not
 * meet) drops what the last one made first.
 */
static void bolt_connection_answer(struct bolt_connection *connection, uint64_t peer_domain_id,
				   bool new_link, int port)
{
	uint8_t slot_nonce = (uint8_t) (bolt_random_u32() % 255 + 1);
	struct bolt_link *link = NULL;
	int slot = -1, ret;

	bolt_link_leave(connection);
	if (!new_link)
		link = bolt_link_find_joinable(connection->manager->domain, peer_domain_id);
	if (link && !link->established) {
		connection->peer_domain_id = peer_domain_id;
		connection->state = BOLT_CONNECTION_WAITING_LINK;
		return;
	}
	if (link)
		slot = bolt_link_free_slot(link);
	ret = slot > 0 ? bolt_link_join(link, connection, slot, slot_nonce) :
	      bolt_connection_new_link(connection, port, peer_domain_id, slot_nonce);
	/* A port of ours that carries no link: our own instead, the probe tells. */
	if (ret == -FI_EHOSTUNREACH)
		ret = bolt_connection_new_link(connection, 0, peer_domain_id, slot_nonce);
	if (ret) {
		bolt_connection_reject(connection, -ret);
		bolt_connection_fail(connection, -ret, "no queue pair for an incoming connection");
		return;
	}
	ret = bolt_connection_send_handshake(connection, BOLT_HANDSHAKE_REPLY);
	if (ret) {
		bolt_connection_fail(connection, -ret, "answering the peer's hello failed");
		return;
	}
	connection->state = BOLT_CONNECTION_WAITING_READY;
}

/* Says why a side channel was refused, at most once a second, with how many went unsaid. */
__attribute__((format(printf, 2, 3)))
static void bolt_connection_refused(struct bolt_connection_manager *manager, const char *format, ...)
{
	uint64_t now_ns = bolt_connection_now_ns();
	char reason[160];
	va_list arguments;

	manager->refusals++;
	if (manager->refusal_warned_ns &&
	    now_ns < manager->refusal_warned_ns + BOLT_CONNECTION_REFUSAL_WARN_NS) {
		manager->refusals_unsaid++;
		return;
	}
	va_start(arguments, format);
	vsnprintf(reason, sizeof(reason), format, arguments);
	va_end(arguments);
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "refused a side channel: %s (and %" PRIu64
		" more, unsaid, in the second before)\n", reason, manager->refusals_unsaid);
	manager->refusal_warnings++;
	manager->refusal_warned_ns = now_ns;
	manager->refusals_unsaid = 0;
}

/*
 * A failed connection makes way for a new one to the same address. It is not
 * freed yet: the protocols may still name it (messages of it not yet
 * received, memory it may write) and so may holders (collective groups). Its
 * side channel went with its failure; its control buffers return at the next
 * full poll, and the rest once nothing names it (bolt_connection_reap), so
 * that a peer that connects and fails again and again costs nothing lasting.
 */
static void bolt_connection_retire(struct bolt_connection *connection)
{
	struct bolt_connection_manager *manager = connection->manager;

	HASH_DEL(manager->connections, connection);
	if (manager->last_got == connection)
		manager->last_got = NULL;
	HASH_ADD(hh, manager->retired, peer, sizeof(connection->peer), connection);
}

/* Whether both ends connect at once and ours wins: the peer answers us, its hello goes unanswered. */
static bool bolt_connection_hello_loses_crossing(struct bolt_connection_manager *manager,
						 const struct bolt_handshake *hello)
{
	struct bolt_connection *connection;

	HASH_FIND(hh, manager->connections, &hello->sender, sizeof(hello->sender), connection);
	return connection && connection->state == BOLT_CONNECTION_CONNECTING &&
	       memcmp(&hello->sender, &manager->address, sizeof(hello->sender)) > 0;
}

/* The peer said hello on a side channel we accepted: answer it, or drop it. */
static void bolt_connection_answer_hello(struct bolt_connection_manager *manager,
					 struct bolt_accepted *accepted,
					 const struct bolt_handshake *hello)
{
	struct bolt_connection *connection;

	/* Both connect at once, and ours wins (meanwhile, if the hello was being confirmed). */
	if (bolt_connection_hello_loses_crossing(manager, hello))
		return;
	HASH_FIND(hh, manager->connections, &hello->sender, sizeof(hello->sender), connection);
	/* A peer that failed may be a process restarted at the same address: it starts anew. */
	if (connection && connection->state == BOLT_CONNECTION_FAILED) {
		bolt_connection_retire(connection);
		connection = NULL;
	}
	if (connection && connection->state != BOLT_CONNECTION_CONNECTING) {
		bolt_connection_refused(manager, "a second hello for a live connection");
		return;
	}
	if (!connection) {
		connection = bolt_connection_create(manager, &hello->sender);
		if (!connection)
			return;
	} else {
		/* Both connect at once and the peer's side channel wins: take it. */
		bolt_connection_drop_stream(connection);
	}
	connection->stream = malloc(sizeof(*connection->stream));
	if (!connection->stream) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for the peer's side channel");
		return;
	}
	*connection->stream = accepted->stream;
	accepted->stream.fd = -1;
	connection->peer_port_count = hello->port_count;
	bolt_connection_answer(connection, hello->domain_id, hello->new_link, hello->peer_port);
}

static void bolt_connection_established(struct bolt_connection *connection)
{
	const struct bolt_connection_events *events = connection->manager->events;

	/* The first connection of a link is established once both ends are connected. */
	connection->link->established = true;
	connection->link->probing = false;
	connection->state = BOLT_CONNECTION_ESTABLISHED;
	/* Operations started before the link was known counted on the domain's own port. */
	if (!bolt_link_on_own_ports(connection->link)) {
		events->link_moved(connection);
		bolt_data_rail_link_moved(connection);
	}
	events->can_send(connection);
}

/* Whether a new link between these two ends needs a probe: one end has several ports. */
static bool bolt_connection_probes(const struct bolt_connection *connection)
{
	return bolt_link_port_count(connection->manager->domain) > 1 ||
	       connection->peer_port_count > 1;
}

/* Initiator: says hello again on the same side channel, asking for a new link. */
static void bolt_connection_ask_new_link(struct bolt_connection *connection)
{
	struct bolt_handshake hello;
	int ret;

	bolt_connection_handshake_fill(connection, &hello);
	hello.new_link = 1;
	ret = bolt_side_channel_send(connection->stream, BOLT_HANDSHAKE_HELLO, &hello, sizeof(hello));
	if (ret) {
		bolt_connection_fail(connection, -ret, "asking for a new link failed");
		return;
	}
	connection->state = BOLT_CONNECTION_CONNECTING;
}

/* Initiator: asks for a new link again, on the next pair of ports, while there is one. */
static void bolt_connection_try_next_ports(struct bolt_connection *connection, int ports)
{
	bolt_link_leave(connection);
	connection->attempt += ports;
	if (connection->attempt >= bolt_link_port_count(connection->manager->domain) *
				   connection->peer_port_count) {
		bolt_connection_fail(connection, FI_EHOSTUNREACH, "no port of ours reaches one of the peer's");
		return;
	}
	bolt_connection_ask_new_link(connection);
}

/* Initiator: a new link on our port for this attempt, connected to the peer's queue pair. */
static void bolt_connection_handle_new_link(struct bolt_connection *connection,
					    const struct bolt_handshake *reply)
{
	int ret;

	connection->peer_port_count = reply->port_count;
	ret = bolt_connection_new_link(connection, connection->attempt / reply->port_count,
				       reply->domain_id, reply->slot_nonce);
	if (ret == -FI_EHOSTUNREACH) {
		/* That port of ours carries no link: the next one. */
		bolt_connection_try_next_ports(connection, reply->port_count - connection->attempt % reply->port_count);
		return;
	}
	if (!ret)
		ret = bolt_connection_connect_link(connection, reply);
	if (!ret)
		ret = bolt_connection_send_handshake(connection, BOLT_HANDSHAKE_READY);
	if (ret) {
		bolt_connection_fail(connection, -ret, "connecting to the peer's queue pair failed");
		return;
	}
	connection->state = BOLT_CONNECTION_WAITING_CONNECTED;
}

/*
 * Initiator: the peer joined us to a link, which we must have too, or made a
 * new one, to which we connect one of ours.
 */
static void bolt_connection_handle_reply(struct bolt_connection *connection,
					 const struct bolt_handshake *reply)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_link *link;
	int ret;

	if (!reply->peer_qpn) {
		bolt_connection_handle_new_link(connection, reply);
		return;
	}
	link = bolt_link_find(domain, reply->domain_id, reply->peer_qpn, reply->qpn);
	if (link && !bolt_link_join(link, connection, reply->slot, reply->slot_nonce)) {
		ret = bolt_side_channel_send(connection->stream, BOLT_HANDSHAKE_READY, NULL, 0);
		if (ret)
			bolt_connection_fail(connection, -ret, "saying ready failed");
		else
			bolt_connection_established(connection);
		return;
	}
	/* Our end of that link is gone, or the slot still busy: ask for a new link. */
	connection->peer_port_count = reply->port_count;
	bolt_connection_ask_new_link(connection);
}

/* Initiator: the peer connected the new link; probe it where the ports may not meet. */
static void bolt_connection_handle_connected(struct bolt_connection *connection)
{
	int ret;

	if (!bolt_connection_probes(connection)) {
		bolt_connection_established(connection);
		return;
	}
	connection->probe_nonce = bolt_random_u32() | 1u;
	connection->link->probing = true;
	ret = bolt_link_send_probe(connection, connection->probe_nonce);
	if (!ret)
		ret = bolt_connection_send_word(connection, BOLT_HANDSHAKE_PROBE_SENT, connection->probe_nonce);
	if (ret) {
		bolt_connection_fail(connection, -ret, "probing the new link failed");
		return;
	}
	connection->state = BOLT_CONNECTION_WAITING_PROBED;
}

/* Answerer: the initiator took the join, or connected a new link to ours (body: its queue pair). */
static const char *bolt_connection_handle_ready(struct bolt_connection *connection,
						const struct bolt_handshake *ready, uint32_t length)
{
	const char *problem;
	int ret;

	if (connection->link->peer_qpn) {
		if (length)
			return "ready with a body after a join";
		bolt_connection_established(connection);
		return NULL;
	}
	problem = bolt_connection_handshake_check(connection->manager, ready, length, true);
	if (problem)
		return problem;
	connection->link->probing = bolt_connection_probes(connection);
	ret = bolt_connection_connect_link(connection, ready);
	if (!ret)
		ret = bolt_side_channel_send(connection->stream, BOLT_HANDSHAKE_CONNECTED, NULL, 0);
	if (ret)
		bolt_connection_fail(connection, -ret, "connecting to the peer's queue pair failed");
	else if (connection->link->probing)
		connection->state = BOLT_CONNECTION_WAITING_PROBE;
	else
		bolt_connection_established(connection);
	return NULL;
}

/*
 * Answerer, told the probe is sent: whether it came, judged only after the
 * CQs were polled, so that a pause at either end is no missing cable. Late
 * from FI_BOLT_RAIL_PROBE_TIMEOUT after the word; then the initiator tries
 * its next pair of ports, and says hello again.
 */
static void bolt_connection_check_probe(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_link *link = connection->link;
	bool arrived = link->probe_arrived && link->probe_nonce == connection->probe_nonce;
	int ret;

	if (!connection->probe_deadline_ns || (!arrived && now_ns < connection->probe_deadline_ns))
		return;
	ret = bolt_connection_send_word(connection, BOLT_HANDSHAKE_PROBED, arrived ? 0 : FI_EHOSTUNREACH);
	if (ret) {
		bolt_connection_fail(connection, -ret, "answering the probe failed");
		return;
	}
	connection->probe_deadline_ns = 0;
	if (arrived) {
		bolt_connection_established(connection);
		return;
	}
	bolt_link_leave(connection);
	connection->state = BOLT_CONNECTION_WAITING_READY;
}

static void bolt_connection_handle_probe_sent(struct bolt_connection *connection, uint32_t nonce)
{
	uint64_t now = bolt_connection_now_ns();

	connection->probe_nonce = nonce;
	connection->probe_deadline_ns = now + (uint64_t) connection->manager->domain->fabric->params.rail_probe_timeout * 1000000ULL;
	bolt_domain_poll_device(connection->manager->domain);
	/* The poll may have failed the connection, and taken its link (a bad completion). */
	if (connection->state == BOLT_CONNECTION_FAILED)
		return;
	bolt_connection_check_probe(connection, now);
}

static void bolt_connection_handle_probed(struct bolt_connection *connection, uint32_t status)
{
	if (!status) {
		bolt_connection_established(connection);
		return;
	}
	FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "our port %d does not reach the peer's port %d: the next pair\n",
		bolt_link_port_index(connection->link), connection->link->peer_port);
	bolt_connection_try_next_ports(connection, 1);
}

/* One handshake message on an established side channel. */
static void bolt_connection_handle(struct bolt_connection *connection, uint16_t type,
				   const struct bolt_handshake *handshake, uint32_t length)
{
	const char *problem = NULL;
	uint32_t word = 0;

	if (connection->state == BOLT_CONNECTION_ESTABLISHED &&
	    bolt_link_move_handle(connection, type, handshake, length))
		return;
	if (length == sizeof(word))
		memcpy(&word, handshake, sizeof(word));
	if (type == BOLT_HANDSHAKE_REPLY && connection->state == BOLT_CONNECTION_CONNECTING) {
		problem = bolt_connection_handshake_check(connection->manager, handshake, length, true);
		if (!problem && !bolt_connection_same_address(&handshake->sender, &connection->peer))
			problem = "reply from another endpoint";
		if (!problem && !handshake->peer_qpn && handshake->slot)
			problem = "a new link's first connection not in slot 0";
		if (!problem) {
			bolt_connection_handle_reply(connection, handshake);
			return;
		}
	} else if (type == BOLT_HANDSHAKE_REJECT && connection->state == BOLT_CONNECTION_CONNECTING &&
		   length == sizeof(uint32_t)) {
		/* Only the refusals a peer can have; anything else is an I/O error. */
		bolt_connection_fail(connection, word == FI_ENOSPC || word == FI_ENOMEM ? (int) word : FI_EIO,
				     "the peer refused: it has no queue pair or memory left");
		return;
	} else if (type == BOLT_HANDSHAKE_READY && connection->state == BOLT_CONNECTION_WAITING_READY &&
		   connection->link) {
		problem = bolt_connection_handle_ready(connection, handshake, length);
		if (!problem)
			return;
	} else if (type == BOLT_HANDSHAKE_HELLO && connection->state == BOLT_CONNECTION_WAITING_READY) {
		problem = bolt_connection_handshake_check(connection->manager, handshake, length, false);
		if (!problem && (!handshake->new_link ||
				 !bolt_connection_same_address(&handshake->sender, &connection->peer)))
			problem = "a second hello that asks for no new link";
		if (!problem) {
			bolt_connection_answer(connection, handshake->domain_id, true, handshake->peer_port);
			return;
		}
	} else if (type == BOLT_HANDSHAKE_CONNECTED && connection->state == BOLT_CONNECTION_WAITING_CONNECTED &&
		   length == 0) {
		bolt_connection_handle_connected(connection);
		return;
	} else if (type == BOLT_HANDSHAKE_PROBE_SENT && connection->state == BOLT_CONNECTION_WAITING_PROBE &&
		   length == sizeof(word)) {
		bolt_connection_handle_probe_sent(connection, word);
		return;
	} else if (type == BOLT_HANDSHAKE_PROBED && connection->state == BOLT_CONNECTION_WAITING_PROBED &&
		   length == sizeof(word) && (!word || word == FI_EHOSTUNREACH)) {
		bolt_connection_handle_probed(connection, word);
		return;
	}
	bolt_connection_fail(connection, FI_EPROTO, problem ? problem : "unexpected side channel message");
}

/*
 * Both ends connected at once and the peer keeps its own side channel (the
 * higher address gives way, see bolt_connection_answer_hello): the peer
 * took ours, then closes it, maybe before its hello reaches us. A peer whose
 * listener never took it is gone; one that died after shows as no hello
 * within BOLT_CONNECTION_CROSSING_NS (a hello that came and is being
 * confirmed is not late: the confirmation has its own deadline).
 */
static bool bolt_connection_lost_crossing(const struct bolt_connection *connection)
{
	return connection->state == BOLT_CONNECTION_CONNECTING && connection->stream->reached &&
	       memcmp(&connection->manager->address, &connection->peer, sizeof(connection->peer)) > 0;
}

/* Whether a hello from peer came and is being confirmed: the crossing's hello is late no more. */
static bool bolt_connection_confirming_hello_from(const struct bolt_connection_manager *manager,
						  const struct bolt_address *peer)
{
	const struct bolt_accepted *accepted;

	DL_FOREACH(manager->accepted, accepted)
		if (accepted->confirm && bolt_connection_same_address(&accepted->hello.sender, peer))
			return true;
	return false;
}

static void bolt_connection_progress_stream(struct bolt_connection *connection)
{
	struct bolt_handshake handshake;
	uint32_t length;
	uint16_t type;
	int ret;

	bolt_side_channel_progress(connection->stream);
	while (connection->stream &&
	       !(ret = bolt_side_channel_receive(connection->stream, &type, &handshake,
						 sizeof(handshake), &length)))
		bolt_connection_handle(connection, type, &handshake, length);
	if (!connection->stream || ret == -FI_EAGAIN)
		return;
	if (ret == -FI_ECONNRESET && bolt_connection_lost_crossing(connection)) {
		/* The peer dropped our side channel to keep its own: its hello follows. */
		bolt_connection_drop_stream(connection);
		connection->crossing_deadline_ns = bolt_connection_now_ns() + BOLT_CONNECTION_CROSSING_NS;
		return;
	}
	if (ret == -FI_ECONNRESET) {
		/* What the peer sent before it closed is in the device CQ by now, maybe
		 * still unread: deliver it before the connection fails. */
		bolt_domain_poll_device(connection->manager->domain);
		bolt_connection_fail(connection, FI_EIO, "the peer closed its side channel: it is gone");
	} else
		bolt_connection_fail(connection, FI_EPROTO, "malformed side channel message");
}

/* The IP of a socket address, as bolt_address keeps it (IPv4-mapped IPv6 as IPv4); false if neither. */
static bool bolt_connection_socket_ip(const struct sockaddr *address, socklen_t length,
				      int *family, uint8_t ip[16])
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) address;

	memset(ip, 0, 16);
	if (address->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
		*family = BOLT_ADDRESS_FAMILY_IPV4;
		memcpy(ip, &((const struct sockaddr_in *) address)->sin_addr, 4);
		return true;
	}
	if (address->sa_family != AF_INET6 || length < sizeof(struct sockaddr_in6))
		return false;
	if (!memcmp(in6->sin6_addr.s6_addr, v4_mapped, sizeof(v4_mapped))) {
		*family = BOLT_ADDRESS_FAMILY_IPV4;
		memcpy(ip, in6->sin6_addr.s6_addr + 12, 4);
	} else {
		*family = BOLT_ADDRESS_FAMILY_IPV6;
		memcpy(ip, in6->sin6_addr.s6_addr, 16);
	}
	return true;
}

static bool bolt_connection_ip_is_loopback(int family, const uint8_t ip[16])
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };

	return family == BOLT_ADDRESS_FAMILY_IPV4 ? ip[0] == 127 : !memcmp(ip, v6_loopback, 16);
}

/* Whether address names this host: a loopback address or one of its interfaces'. */
static bool bolt_connection_address_is_local(const struct bolt_address *address)
{
	struct ifaddrs *interfaces, *interface;
	bool local = false;
	uint8_t ip[16];
	int family;

	if (bolt_connection_ip_is_loopback(address->family, address->ip))
		return true;
	if (getifaddrs(&interfaces))
		return false;
	for (interface = interfaces; interface && !local; interface = interface->ifa_next)
		local = interface->ifa_addr &&
			bolt_connection_socket_ip(interface->ifa_addr, sizeof(struct sockaddr_storage),
						  &family, ip) &&
			family == address->family && !memcmp(ip, address->ip, 16);
	freeifaddrs(interfaces);
	return local;
}

bool bolt_connection_sender_matches_peer(const struct bolt_address *sender,
					 const struct sockaddr *peer, socklen_t peer_length)
{
	uint8_t ip[16];
	int family;

	if (!bolt_connection_socket_ip(peer, peer_length, &family, ip))
		return false;
	/* The peer's port is the one it connected from, not its listener's: only IPs compare. */
	if (family == sender->family && !memcmp(ip, sender->ip, 16))
		return true;
	/* A process of this host may connect over loopback and name its listener's own address. */
	return bolt_connection_ip_is_loopback(family, ip) && bolt_connection_address_is_local(sender);
}

/* Side channels accepted from the same IP as stream's, still waiting for their hello. */
static size_t bolt_connection_pending_from(const struct bolt_connection_manager *manager,
					   const struct bolt_side_channel_stream *stream)
{
	const struct bolt_accepted *accepted;
	uint8_t ip[16], other_ip[16];
	int family, other_family;
	size_t count = 0;

	if (!bolt_connection_socket_ip((const struct sockaddr *) &stream->peer, stream->peer_length,
				       &family, ip))
		return 0;
	DL_FOREACH(manager->accepted, accepted)
		count += bolt_connection_socket_ip((const struct sockaddr *) &accepted->stream.peer,
						   accepted->stream.peer_length, &other_family,
						   other_ip) &&
			 other_family == family && !memcmp(other_ip, ip, 16);
	return count;
}

/* An accept that failed (out of descriptors, say): wait longer each time, and say so now and then. */
static void bolt_connection_accept_back_off(struct bolt_connection_manager *manager, uint64_t now_ns,
					    int error)
{
	uint64_t backoff = manager->accept_backoff_ns ? manager->accept_backoff_ns * 2 :
			   BOLT_CONNECTION_ACCEPT_BACKOFF_NS;

	manager->accept_backoff_ns = backoff < BOLT_CONNECTION_ACCEPT_BACKOFF_MAX_NS ?
				     backoff : BOLT_CONNECTION_ACCEPT_BACKOFF_MAX_NS;
	manager->accept_paused_until_ns = now_ns + manager->accept_backoff_ns;
	manager->accept_failures++;
	if (now_ns < manager->accept_warned_ns + BOLT_CONNECTION_ACCEPT_WARN_NS)
		return;
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
		"accepting side channels fails (%s, %" PRIu64 " times so far): trying again in %" PRIu64 " ms\n",
		fi_strerror(error < 0 ? -error : error), manager->accept_failures,
		manager->accept_backoff_ns / 1000000);
	manager->accept_warned_ns = now_ns;
}

/*
 * Runs every watch interval, and mostly finds no one: not zeroed, since an
 * accept initialises the whole stream and its buffers are filled before use.
 * At most FI_BOLT_SIDE_CHANNEL_PENDING wait for their hello or its
 * confirmation (the rest stay in the kernel's backlog),
 * FI_BOLT_SIDE_CHANNEL_PENDING_PER_SOURCE of one IP.
 */
static void bolt_connection_accept_all(struct bolt_connection_manager *manager, uint64_t now_ns)
{
	const struct bolt_params *params = &manager->domain->fabric->params;
	size_t most = (size_t) params->side_channel_pending;
	size_t per_source = (size_t) params->side_channel_pending_per_source;
	struct bolt_accepted *accepted;
	size_t pending = 0;
	int ret;

	if (now_ns < manager->accept_paused_until_ns)
		return;
	DL_COUNT(manager->accepted, accepted, pending);
	accepted = malloc(sizeof(*accepted));
	while (accepted && pending < most &&
	       !(ret = bolt_side_channel_accept(&manager->listener, &accepted->stream))) {
		manager->accept_backoff_ns = 0;
		if (bolt_connection_pending_from(manager, &accepted->stream) >= per_source) {
			bolt_connection_refused(manager, "%zu from its address already wait to be believed",
						per_source);
			bolt_side_channel_stream_close(&accepted->stream);
			continue;
		}
		accepted->deadline_ns = now_ns + BOLT_CONNECTION_HELLO_NS;
		accepted->confirm = NULL;
		DL_APPEND(manager->accepted, accepted);
		pending++;
		accepted = malloc(sizeof(*accepted));
	}
	if (accepted && pending < most && ret != -FI_EAGAIN)
		bolt_connection_accept_back_off(manager, now_ns, ret);
	free(accepted);
}

static void bolt_connection_free_accepted(struct bolt_connection_manager *manager, struct bolt_accepted *accepted)
{
	DL_DELETE(manager->accepted, accepted);
	bolt_confirm_end(accepted);
	bolt_side_channel_stream_close(&accepted->stream);
	free(accepted);
}

/* Why what an accepted side channel said is no hello we answer, or NULL. */
static const char *bolt_connection_hello_problem(const struct bolt_connection_manager *manager,
						 const struct bolt_accepted *accepted, int ret,
						 uint16_t type, const struct bolt_handshake *hello,
						 uint32_t length)
{
	const char *problem;

	if (ret == -FI_EAGAIN)
		return "no hello within the deadline";
	if (ret)
		return "the side channel failed before its hello";
	if (type != BOLT_HANDSHAKE_HELLO)
		return "its first message is no hello";
	problem = bolt_connection_handshake_check(manager, hello, length, false);
	if (problem)
		return problem;
	/* Anyone may claim any sender: it must at least be where the connection comes from. */
	if (!bolt_connection_sender_matches_peer(&hello->sender,
						 (const struct sockaddr *) &accepted->stream.peer,
						 accepted->stream.peer_length))
		return "the hello's sender is not the address it comes from";
	return NULL;
}

/*
 * What an accepted side channel said first: a question about a hello of
 * ours, answered at once; or a hello, whose sender is asked to confirm it.
 * False when the side channel is done with.
 */
static bool bolt_connection_heard_first(struct bolt_connection_manager *manager,
					struct bolt_accepted *accepted, int ret, uint16_t type,
					const struct bolt_handshake *hello, uint32_t length)
{
	const char *problem;

	if (!ret && type == BOLT_HANDSHAKE_CHECK) {
		bolt_confirm_answer(manager, &accepted->stream, hello, length);
		return false;
	}
	problem = bolt_connection_hello_problem(manager, accepted, ret, type, hello, length);
	if (!problem && bolt_connection_hello_loses_crossing(manager, hello))
		return false;
	if (!problem && bolt_confirm_start(manager, accepted, hello))
		problem = "its sender cannot be asked to confirm it";
	if (problem) {
		bolt_connection_refused(manager, "%s", problem);
		return false;
	}
	/* The answer depends on the sender, which may be starved: it has the liveness time. */
	accepted->deadline_ns = bolt_connection_now_ns() + bolt_domain_liveness_ns(manager->domain);
	return true;
}

/* A hello whose sender was asked: answered once it says yes, dropped if not. False when done with. */
static bool bolt_connection_progress_confirm(struct bolt_connection_manager *manager,
					     struct bolt_accepted *accepted, uint64_t now_ns)
{
	int ret = bolt_confirm_progress(accepted);

	if (ret == -FI_EAGAIN && now_ns < accepted->deadline_ns)
		return true;
	if (!ret)
		bolt_connection_answer_hello(manager, accepted, &accepted->hello);
	else
		bolt_connection_refused(manager, "%s", ret == -FI_ENOENT ?
					"the sender its hello claims did not say it" :
					"the sender its hello claims did not confirm it");
	return false;
}

/* Side channels accepted but not yet attached to a connection: their hello, then its confirmation. */
static void bolt_connection_progress_accepted(struct bolt_connection_manager *manager, uint64_t now_ns)
{
	struct bolt_accepted *accepted, *next;
	struct bolt_handshake hello;
	uint32_t length;
	uint16_t type;
	bool keep;
	int ret;

	DL_FOREACH_SAFE(manager->accepted, accepted, next) {
		if (accepted->confirm) {
			keep = bolt_connection_progress_confirm(manager, accepted, now_ns);
		} else {
			bolt_side_channel_progress(&accepted->stream);
			ret = bolt_side_channel_receive(&accepted->stream, &type, &hello, sizeof(hello),
							&length);
			/* A client that says nothing is no peer: it would hold a socket and memory for good. */
			keep = (ret == -FI_EAGAIN && now_ns < accepted->deadline_ns) ||
			       (ret != -FI_EAGAIN &&
				bolt_connection_heard_first(manager, accepted, ret, type, &hello, length));
		}
		if (!keep)
			bolt_connection_free_accepted(manager, accepted);
	}
}

/* Room for count entries in the endpoint's poll set; false if there is none. */
static bool bolt_connection_reserve_polls(struct bolt_connection_manager *manager, size_t count)
{
	struct pollfd *polls;

	if (count <= manager->side_channel_poll_capacity)
		return true;
	polls = realloc(manager->side_channel_polls, count * sizeof(*polls));
	if (!polls)
		return false;
	manager->side_channel_polls = polls;
	manager->side_channel_poll_capacity = count;
	return true;
}

/* False if the stream has an error to report already: only progress tells it. */
static bool bolt_connection_add_poll(struct pollfd *entry, const struct bolt_side_channel_stream *stream)
{
	entry->fd = bolt_side_channel_fd(stream);
	entry->events = bolt_side_channel_poll_events(stream);
	entry->revents = 0;
	return !stream->error;
}

/*
 * Whether no side channel of the endpoint has anything to do: nothing to
 * accept, read or write, no connect to finish. One poll answers for all of
 * them, where accepting and reading would cost a system call per socket at
 * every watch: about 1 % of a busy sender's time with a single peer, more
 * with a collective's many. When unsure (no memory, poll failed), false.
 */
static bool bolt_connection_side_channels_quiet(struct bolt_connection_manager *manager)
{
	struct bolt_connection *connection, *next;
	struct bolt_accepted *accepted;
	struct pollfd *polls;
	size_t count = 1;
	bool quiet = true;

	DL_FOREACH(manager->accepted, accepted)
		count += accepted->confirm ? 2 : 1;
	count += HASH_COUNT(manager->connections);
	if (!bolt_connection_reserve_polls(manager, count))
		return false;
	polls = manager->side_channel_polls;
	polls[0] = (struct pollfd) { .fd = manager->listener.fd, .events = POLLIN };
	count = 1;
	DL_FOREACH(manager->accepted, accepted) {
		quiet &= bolt_connection_add_poll(&polls[count++], &accepted->stream);
		if (accepted->confirm)
			quiet &= bolt_connection_add_poll(&polls[count++], accepted->confirm);
	}
	HASH_ITER(hh, manager->connections, connection, next)
		if (connection->stream)
			quiet &= bolt_connection_add_poll(&polls[count++], connection->stream);
	return quiet && poll(polls, (nfds_t) count, 0) == 0;
}

/* Every state but these two is a step of the handshake. */
static bool bolt_connection_handshaking(const struct bolt_connection *connection)
{
	return connection->state != BOLT_CONNECTION_ESTABLISHED &&
	       connection->state != BOLT_CONNECTION_FAILED;
}

/* A failed connection's queue pair is gone and the CQ has been polled empty since: no
 * completion can still name its buffers, which return to the pool. */
static void bolt_connection_reclaim_when_polled(struct bolt_connection *connection)
{
	struct bolt_domain *domain = connection->manager->domain;

	if (connection->reclaim_pending && domain->poll_generation > connection->failed_generation) {
		bolt_control_buffer_reclaim(domain, connection);
		connection->reclaim_pending = false;
	}
}

void bolt_connection_hold(struct bolt_connection *connection)
{
	connection->holds++;
}

void bolt_connection_release(struct bolt_connection *connection)
{
	assert(connection->holds);
	connection->holds--;
}

/* A retired connection, freed once its buffers are back and nothing names it. */
static void bolt_connection_reap(struct bolt_connection *connection)
{
	struct bolt_connection_manager *manager = connection->manager;

	bolt_connection_reclaim_when_polled(connection);
	if (!connection->reclaim_pending && !connection->holds &&
	    !manager->events->in_use(connection))
		bolt_connection_destroy(&manager->retired, connection);
}

void bolt_connection_progress_all(struct bolt_connection_manager *manager)
{
	struct bolt_domain *domain = manager->domain;
	struct bolt_connection *connection, *next;
	uint64_t coarse_now = bolt_platform_coarse_now_ns(), now = 0;
	bool watch, streams_quiet = false;

	if (domain->release_held)
		bolt_link_receive_release_held(domain);
	/*
	 * Every poll asks whether the side channels are due; only a due watch or
	 * a handshake, which judge deadlines, read the precise clock (78 ns in a
	 * virtual machine: 6 % of an 8 B message's path).
	 */
	watch = manager->handshakes_pending ||
		coarse_now >= manager->side_channels_watched_ns + BOLT_CONNECTION_WATCH_INTERVAL_NS;
	if (watch) {
		now = bolt_connection_now_ns();
		manager->side_channels_watched_ns = coarse_now;
		streams_quiet = bolt_connection_side_channels_quiet(manager);
	}
	if (watch && !streams_quiet)
		bolt_connection_accept_all(manager, now);
	/* A quiet one may be late with its hello: it goes then. */
	if (watch && (!streams_quiet || manager->accepted)) {
		bolt_connection_progress_accepted(manager, now);
		/* After accepting: connections created just now must not look older. */
		now = bolt_connection_now_ns();
	}
	manager->handshakes_pending = manager->accepted != NULL;
	HASH_ITER(hh, manager->connections, connection, next) {
		/* One that started a handshake since the last poll: its deadlines need the time. */
		if (!now && bolt_connection_handshaking(connection))
			now = bolt_connection_now_ns();
		if (connection->stream && watch) {
			if (!streams_quiet)
				bolt_connection_progress_stream(connection);
			bolt_data_rail_check_probes(connection, now);
		}
		if (connection->state == BOLT_CONNECTION_WAITING_LINK)
			bolt_connection_answer(connection, connection->peer_domain_id, false, 0);
		if (connection->state == BOLT_CONNECTION_WAITING_PROBE)
			bolt_connection_check_probe(connection, now);
		if (bolt_connection_handshaking(connection))
			manager->handshakes_pending = true;
		/* A peer silent for the liveness time is gone, in a handshake too. */
		if (bolt_connection_handshaking(connection) &&
		    now > connection->started_ns + bolt_domain_liveness_ns(domain))
			bolt_connection_fail(connection, FI_ETIMEDOUT,
					     "no answer from the peer within the liveness time");
		if (connection->state == BOLT_CONNECTION_CONNECTING && !connection->stream &&
		    connection->crossing_deadline_ns && now > connection->crossing_deadline_ns &&
		    !bolt_connection_confirming_hello_from(manager, &connection->peer))
			bolt_connection_fail(connection, FI_EIO,
					     "the peer closed our side channel and never said hello: it is gone");
		bolt_connection_reclaim_when_polled(connection);
		/* A lost segment's timeout is a round trip, far below the watch's tick. */
		if (!now && bolt_rewrite_timing(connection))
			now = bolt_connection_now_ns();
		bolt_retransmit_progress(connection, now);
		bolt_rewrite_progress(connection, now);
		if (connection->state == BOLT_CONNECTION_ESTABLISHED)
			manager->events->can_send(connection);
	}
	HASH_ITER(hh, manager->retired, connection, next)
		bolt_connection_reap(connection);
}

/* Every connection of table, their device side released and the CQ polled empty since. */
static void bolt_connection_destroy_table(struct bolt_domain *domain, struct bolt_connection **table)
{
	struct bolt_connection *connection, *next;

	HASH_ITER(hh, *table, connection, next) {
		bolt_control_buffer_reclaim(domain, connection);
		bolt_connection_destroy(table, connection);
	}
}

/* Closing the endpoint: the CQ is polled empty after the QPs are gone, then buffers return. */
void bolt_connection_destroy_all(struct bolt_connection_manager *manager)
{
	struct bolt_domain *domain = manager->domain;
	struct bolt_connection *connection, *next;
	struct bolt_accepted *accepted, *next_accepted;

	/*
	 * Completions still in the CQ (a real device keeps those that arrived
	 * before the QP went) find their connection gone: as after a failure,
	 * their buffers return and nothing is posted again.
	 */
	HASH_ITER(hh, manager->connections, connection, next) {
		connection->state = BOLT_CONNECTION_FAILED;
		bolt_connection_release_device(connection);
	}
	bolt_domain_poll_device(domain);
	bolt_connection_destroy_table(domain, &manager->connections);
	bolt_connection_destroy_table(domain, &manager->retired);
	DL_FOREACH_SAFE(manager->accepted, accepted, next_accepted)
		bolt_connection_free_accepted(manager, accepted);
	free(manager->side_channel_polls);
	manager->side_channel_polls = NULL;
	manager->side_channel_poll_capacity = 0;
	if (manager->domain)
		DL_DELETE(manager->domain->connection_managers, manager);
	manager->domain = NULL;
}
