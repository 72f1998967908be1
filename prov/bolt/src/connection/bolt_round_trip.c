/*
 * bolt_round_trip.c: the smoothed round trip and the retransmission
 * timeout from it (RFC 6298, section 2, with no clock granularity term: the
 * clock is read in nanoseconds).
 */
#include "connection/bolt_round_trip.h"

void bolt_round_trip_init(struct bolt_round_trip *round_trip, uint64_t initial_ns, uint64_t min_ns,
			  uint64_t max_ns)
{
	*round_trip = (struct bolt_round_trip) {
		.min_ns = min_ns, .max_ns = max_ns, .timeout_ns = initial_ns,
	};
}

void bolt_round_trip_sample(struct bolt_round_trip *round_trip, uint64_t sample_ns)
{
	uint64_t timeout;

	if (!round_trip->srtt_ns) {
		round_trip->srtt_ns = sample_ns ? sample_ns : 1;
		round_trip->rttvar_ns = sample_ns / 2;
	} else {
		uint64_t deviation = sample_ns > round_trip->srtt_ns ? sample_ns - round_trip->srtt_ns :
								       round_trip->srtt_ns - sample_ns;

		round_trip->rttvar_ns = (3 * round_trip->rttvar_ns + deviation) / 4;
		round_trip->srtt_ns = (7 * round_trip->srtt_ns + sample_ns) / 8;
	}
	timeout = round_trip->srtt_ns + 4 * round_trip->rttvar_ns;
	if (timeout < round_trip->min_ns)
		timeout = round_trip->min_ns;
	if (timeout > round_trip->max_ns)
		timeout = round_trip->max_ns;
	round_trip->timeout_ns = timeout;
}
