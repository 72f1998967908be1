/*
 * bolt_data_rail_failover.h: failover of data rails (bolt_data_rail_failover.c),
 * part of the connection layer: which of a connection's rails are usable now,
 * failed by port events, error completions or the peer's RAIL_STATE, and
 * used again when their port comes back.
 */
#ifndef BOLT_DATA_RAIL_FAILOVER_H
#define BOLT_DATA_RAIL_FAILOVER_H

#include <stdbool.h>
#include <stdint.h>

struct bolt_connection;
struct bolt_domain;
struct bolt_wire_header;

/*
 * The connection's usable rails now (a mask): ready, on a port that is up,
 * and none of whose writes failed; with_room: with room for one more stripe
 * each. Every new stripe goes on one of these, or on the control rail.
 */
uint32_t bolt_data_rail_usable(const struct bolt_connection *connection, bool with_room);
/* Whether rail index of connection is one of those, room aside. */
bool bolt_data_rail_index_usable(const struct bolt_connection *connection, int index);
/* Rail index lost its port or a write (why): no stripes on it until revived; the peer is told. */
void bolt_data_rail_fail(struct bolt_connection *connection, int index, const char *why);
/*
 * Reads the asynchronous events of domain's ports: the rails of its
 * connections on a port that went down fail, on one that came back are used
 * again. Every few progress calls, and before stripes go on UC, where a
 * stripe on a cut cable is lost without a word.
 */
void bolt_data_rail_watch_ports(struct bolt_domain *domain);
/* The same, unless it was done moments ago (a look costs a system call on a real device). */
void bolt_data_rail_watch_ports_soon(struct bolt_domain *domain);
/* Marks rail index failed (why) without telling the peer; false if it already was, or is not ready. */
bool bolt_data_rail_mark_failed(struct bolt_connection *connection, int index, const char *why);
/*
 * A send posted on rail index came back: once none is out, a failed rail is
 * made again if that waited for it.
 */
void bolt_data_rail_send_returned(struct bolt_connection *connection, int index);
/*
 * Whether the failed rail index must wait for its sends before its queue
 * pair goes; if so, the peer's request (header, payload) waits with it.
 */
bool bolt_data_rail_request_waits(struct bolt_connection *connection, int index,
				  const struct bolt_wire_header *header, const char *payload);
/* RAIL_STATE from the peer: the rail failed at its end, or is usable again. */
void bolt_data_rail_peer_state(struct bolt_connection *connection, const struct bolt_wire_header *header);

#endif /* BOLT_DATA_RAIL_FAILOVER_H */
