/*
 * bolt_round_trip.h: a measured round trip and the retransmission timeout
 * that follows from it (RFC 6298's smoothing, clock granularity 0), for the
 * messages (bolt_retransmit.c) and the write segments (bolt_rewrite.c) UC
 * may lose. Each measures its own: a segment's acknowledgement waits for a
 * batch, a message's rides on the next header.
 */
#ifndef BOLT_ROUND_TRIP_H
#define BOLT_ROUND_TRIP_H

#include <stdint.h>

struct bolt_round_trip {
	uint64_t srtt_ns, rttvar_ns;    /* smoothed, and its variation; 0: no sample yet */
	uint64_t min_ns, max_ns;        /* the bounds of the timeout */
	uint64_t timeout_ns;            /* srtt + 4 rttvar, within the bounds */
};

/* No sample yet: the timeout is initial_ns until the first. */
void bolt_round_trip_init(struct bolt_round_trip *round_trip, uint64_t initial_ns, uint64_t min_ns,
			  uint64_t max_ns);
/* One round trip measured (Karn: never one of a transmission sent again). */
void bolt_round_trip_sample(struct bolt_round_trip *round_trip, uint64_t sample_ns);

#endif /* BOLT_ROUND_TRIP_H */
