/*
 * softrdma_drop.c: the generator of UC packet drops, deterministic from its
 * settings (every Nth packet, or a rate per million, and a seed), kept in the
 * shared segment. Pure bookkeeping under the segment lock: the segment sets
 * it up, softrdma_fault.c changes its settings, transfers ask it.
 */
#include "softrdma/softrdma_internal.h"

/* splitmix64: spreads any seed, 0 included, into a good non-zero state. */
static uint64_t softrdma_seed_mix(uint64_t seed)
{
	uint64_t mixed = seed + 0x9e3779b97f4a7c15ull;

	mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ull;
	mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebull;
	mixed ^= mixed >> 31;
	return mixed ? mixed : 1;
}

/* xorshift64*: reproducible from the seed, whatever the platform. */
static uint64_t softrdma_random_next(struct softrdma_drop_state *drop)
{
	drop->random_state ^= drop->random_state >> 12;
	drop->random_state ^= drop->random_state << 25;
	drop->random_state ^= drop->random_state >> 27;
	return drop->random_state * 0x2545f4914f6cdd1dull;
}

void softrdma_drop_reset_locked(struct softrdma_segment *segment, int every, int ppm,
				unsigned int seed)
{
	segment->drop.every = every;
	segment->drop.ppm = ppm;
	segment->drop.seed = seed;
	segment->drop.packets = 0;
	segment->drop.random_state = softrdma_seed_mix(seed);
}

/* A message is lost if any of its packets is; every packet advances the generator. */
bool softrdma_drop_message_locked(struct softrdma_segment *segment, uint64_t packets)
{
	struct softrdma_drop_state *drop = &segment->drop;
	bool dropped = false;

	if (!drop->every && !drop->ppm)
		return false;
	for (uint64_t packet = 0; packet < packets; packet++) {
		drop->packets++;
		if (drop->every && drop->packets % (uint64_t) drop->every == 0)
			dropped = true;
		if (drop->ppm && softrdma_random_next(drop) % 1000000 < (uint64_t) drop->ppm)
			dropped = true;
	}
	return dropped;
}
