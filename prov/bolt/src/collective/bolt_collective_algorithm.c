/*
 * bolt_collective_algorithm.c: which algorithm runs an operation, and with
 * which ring segments and lanes, read from one table in the spirit of Open
 * MPI's tuned decision rules. Few rounds matter for small messages: the
 * fully connected algorithm (direct) sends everything in one round, which
 * for two members is one exchange. With many members the number of
 * messages matters too: recursive doubling sends n log2(n) instead of
 * n(n-1), in log2(n) rounds (with four ranks on two cores one round still
 * wins). Bandwidth matters for large messages: the pipelined ring moves the
 * least data, the pipelined chain has a broadcast's root send its data
 * once; smaller segments start a pipeline sooner, larger ones cost fewer
 * messages.
 *
 * The FI_BOLT_COLLECTIVE_* parameters, where set, override the table
 * (bolt_collective_algorithm_override): the ring threshold picks among the
 * pipelines' rows (ring and chain) or among the others, the doubling members
 * between doubling and direct, and the segment size and lanes replace the
 * row's.
 */
#include <stdint.h>

#include "collective/bolt_collective.h"

#define KIB ((size_t) 1 << 10)
#define MIB ((size_t) 1 << 20)
#define ANY_SIZE SIZE_MAX
#define ANY_MEMBERS 0

/* The pull column. */
#define WRITE BOLT_COLLECTIVE_WRITE
#define PULL BOLT_COLLECTIVE_PULL
#define PULL_ONE BOLT_COLLECTIVE_PULL_ONE

#define KIND(kind) (1u << (kind))
#define BARRIER KIND(FI_BARRIER)
#define BROADCAST KIND(FI_BROADCAST)
#define ALLTOALL KIND(FI_ALLTOALL)
#define ALLREDUCE KIND(FI_ALLREDUCE)
#define ALLGATHER KIND(FI_ALLGATHER)
#define REDUCE_SCATTER KIND(FI_REDUCE_SCATTER)
#define EVERY_KIND (~0u)
/* What each algorithm can run. */
#define RING_KINDS (ALLREDUCE | ALLGATHER | REDUCE_SCATTER)

/* The device a row is for: UC links (Thunderbolt) or RC ones (RoCE v2). */
enum bolt_collective_device {
	ANY_DEVICE,
	UC_DEVICE,
	RC_DEVICE,
};

/*
 * One rule: for an operation of one of kinds, among at least min_members
 * and at most max_members (ANY_MEMBERS: no bound), moving fewer than
 * below_bytes in all (the result of an all-reduce, the whole result of an
 * all-gather, the whole input of a reduce-scatter), on device.
 */
struct bolt_collective_rule {
	unsigned int kinds;
	int min_members, max_members;
	size_t below_bytes;
	enum bolt_collective_device device;
	const struct bolt_collective_algorithm *algorithm;
	size_t segment_size;    /* ring and chain */
	int lanes;              /* ring only */
	enum bolt_collective_pull pull; /* RC: who copies the rendezvous messages */
};

/*
 * The first row that matches decides. Measured on the software device
 * (util/bolt_collective_bench, FI_BOLT_COLLECTIVE_RING_THRESHOLD against
 * the table): with two members one exchange of the whole buffer beats the
 * ring for small messages (at 16 KiB on UC the exchange takes 9.1 us, the
 * ring 12.3), and the ring, whose members each reduce half the data in
 * pipelined halves, large ones. Between, what decides is which messages ask
 * a rendezvous: on UC the ring's halves of a 64 KiB all-reduce go whole
 * into bounce buffers while the exchange asks one (the ring's time over the
 * exchange's, medians of five paired rounds: 0.90); from 128 KiB each half
 * asks too, and the exchange wins again up to 256 KiB on UC (1.19 at
 * 128 KiB, 1.00 at 256 KiB) and 512 KiB on RC (1.14 at 128 KiB, 1.05 at
 * 256 KiB), the ring from there (0.80 to 0.88 at 512 KiB). Three members
 * show bands of the same kind: on UC the exchange up to 32 KiB (the ring
 * 1.29 at 32 KiB), the ring at 64 KiB (0.88), the exchange from 128 KiB to
 * 512 KiB (1.70 at 128 KiB, 1.21 at 256 KiB, 0.92 at 512 KiB); on RC the ring at
 * 8 KiB (0.94) and from 256 KiB (0.97, 0.83 at 512 KiB), the exchange
 * between (1.10 at 16 KiB, 1.77 at 64 KiB). Four members, all on two
 * cores, do best sending everything in one round while messages are small:
 * recursive doubling's time over direct's 1.27 to 2.19 from 8 B to 2 KiB
 * (medians of three paired rounds), the ring's 1.14 to 2.02 from 4 KiB to
 * 32 KiB. From there each member's two messages of the whole, where direct
 * sends three, are what counts: doubling over direct 0.75 to 0.93 on RC from
 * 8 KiB to 256 KiB and 0.76 to 0.87 on UC at 32 and 256 KiB (16 KiB 0.93 and
 * 1.01, 2 and 8 KiB 0.98 to 1.01; three sets of three paired rounds), over
 * the ring 0.74 and 0.89 at 512 KiB on UC (on RC 0.94 and 1.05, the ring
 * kept), the ring from 1 MiB (1.77 to 2.20 at 2 MiB); on UC the ring still
 * wins from 64 KiB to 256 KiB (doubling 1.07 and 1.14). Three members,
 * where doubling folds the third member in and out (four steps), take it on
 * UC at 32 KiB (0.81, 0.83 against the exchange) and on RC at 256 KiB (0.78,
 * 0.91 against the ring; at 128 KiB 0.89 and 1.10, the exchange kept).
 * On RC, where a collective's messages from 32 KiB ask a rendezvous
 * (FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD), recursive doubling of three
 * and four members wins from 8 KiB while its whole messages go in segments
 * (its time over the ring's, medians of six paired rounds: three members
 * 0.85 at 8 KiB, 0.86 at 16 KiB; four 0.86 at 16 KiB; 1.25 to 1.60 at
 * 32 KiB), and the ring from there up to 64 KiB, its blocks (a third, a
 * quarter) going eagerly where doubling's and direct's whole messages ask a
 * rendezvous each (the ring's time over the table's before, medians of
 * five paired rounds: three members 0.78 at 32 KiB, 1.73 at 64 KiB; four
 * 0.84 at 32 KiB, 1.99 at 64 KiB). On UC its blocks of 4 KiB and more went
 * into bounce buffers when this was measured (1.81 to 1.95 at 16 KiB with
 * four; blocks under 16 KiB go in segments since, FI_BOLT_BOUNCE_THRESHOLD),
 * and two members have no such band.
 * A barrier of four likewise: doubling's time over direct's 2.05 [1.85-2.90]
 * on UC, 1.45 [1.32-1.68] on RC (five paired rounds). More members are not
 * measured: recursive doubling's n log2(n) messages against direct's n(n-1)
 * keep their small all-reduces and barriers.
 * An all-gather sent to every member at once beats the ring with two to
 * four members up to 64 MiB (medians of three paired rounds, direct's time
 * over the ring's: 0.54 to 0.60 at 4 MiB with two members, 0.41 to 0.52
 * with three, 0.83 at 4 MiB with four), as each member's block then
 * crosses once, with no step waiting for the one before, and a block is one
 * message where the ring cuts it into segments; a reduce-scatter so with
 * three and four members up to 8 MiB (0.73 to 0.85 at 4 MiB; the ring from
 * 16 MiB, 1.04 to 1.20), with two the ring (1.13 to 1.27 at 4 MiB).
 * Recursive doubling and halving lose to direct for all-gathers and
 * reduce-scatters of four (16 B: 36 against 18 us on UC, 44 against 33 on
 * RC; from 32 KiB to 512 KiB on RC they tie at best, 0.93 to 1.17): with
 * four ranks on two cores a round costs more than the messages it saves,
 * and each member sends as many bytes as direct has it send, where an
 * all-reduce's doubling sends the whole twice against direct's three times.
 * Segments of 256 KiB start the ring's pipeline sooner below 2 MiB; from
 * there each segment's rendezvous costs more than starting sooner saves:
 * 2 MiB segments take 0.56 to 0.64 of 256 KiB ones' time for a 4 MiB
 * all-reduce of two members, 0.64 to 0.70 of three, 0.74 to 0.78 of four,
 * 0.87 to 0.88 for a reduce-scatter of two (medians of three paired rounds
 * on both devices; at 1 MiB 0.86 to 1.06, the 256 KiB kept), and from 8 MiB
 * 4 MiB ones (2 MiB: 1.06 to 1.08 at 16 MiB with two members).
 * A broadcast of three members takes the chain, in 4 MiB segments, from
 * 64 MiB, of four or more from 16 MiB, but for three and four on RC, which
 * pull instead (below). Chain's time over direct's, medians of three
 * and of five paired rounds (0.59 to 1.24 at 64 MiB, six of eight below 1;
 * four members, three sets of four to six rotated rounds, 0.71 to 0.90 on
 * UC and 0.87 to 0.97 on RC at 16 MiB, 0.79 and 0.81 at 32 MiB, 1.12 and
 * 1.17 at 8 MiB; three members 0.89 to 1.16 at 32 MiB, 0.90 and 1.05 at
 * 16 MiB): with more ranks than cores, the hops' copies overlap less than
 * they would on a core each, and the root of four sends three copies where
 * that of three sends two. 1 MiB or 256 KiB segments cost more than they
 * save (1 MiB: 1.03 to 1.55 at 16 MiB; 256 KiB: 1.2 to 2.2 at 64 MiB).
 * On RC a broadcast's members pull (read the root's buffer themselves, at
 * once, where the root would write to one after another): the time with
 * pull over without, medians of four or five rotated rounds, two members
 * 0.79 at 64 KiB, 0.81 to 0.94 from 256 KiB to 4 MiB, 0.70 at 16 MiB;
 * three 0.61 at 2 MiB, 0.39 to 0.65 from 4 to 32 MiB; four 0.75 at 2 MiB,
 * 0.48 to 0.58 at 4 and 8 MiB; and direct with pull beats the chain, which
 * the rows below keep for UC (three at 64 MiB 0.63 [0.38-0.75], four at 16,
 * 32 and 64 MiB 0.68, 0.83 and 0.96, medians of four rotated rounds; the
 * chain's hops pulling their 4 MiB segments 1.06 to 1.91 of the chain's
 * writes). Below 2 MiB three and four mostly lose by it
 * (64 KiB to 1 MiB: 0.83 to 1.35, eight of ten cells above 1, 1.18 to
 * 1.35 at 1 MiB): the benchmark's buffers sit on 4 KiB pages there, and the
 * software device's readers walk the root's pages at once, where they
 * contend (on 4 KiB pages at 4 MiB too: 1.13). One reader does not: from
 * 256 KiB to 2 MiB the member before the root pulls while the root writes
 * to the others (PULL_ONE's time over the writes', medians of five or six
 * rotated rounds: three members 0.89 at 256 KiB, 0.84 at 512 KiB, 0.68 at
 * 1 MiB, 1.03 and 1.04 at 64 and 128 KiB, over PULL at 2 MiB 0.95; four
 * members 0.79 at 256 KiB, 0.73 at 512 KiB, 0.69 at 1 MiB, 0.99 at
 * 128 KiB; every member but the root's next pulling, with four, 1.02 to
 * 1.12). All-gathers lose by it (0.96 to 2.8 from
 * 64 KiB to 16 MiB, three and four members, nine of ten cells above 1):
 * each member sends as much as it receives, so reads only move the copies,
 * onto other processes' pages.
 * Since written messages go into receives granted ahead (no request, no
 * answer: protocol/bolt_tag_grant.c), writes win some of those cells back
 * (granted writes' time over the pull's, two sets of five and six rotated
 * rounds): two members 0.93 and 0.93 at 64 KiB, 0.95 and 0.91 at 256 KiB,
 * 0.91 and 0.97 at 1 MiB, 1.00 at 4 MiB, 1.16 at 16 MiB, so they write
 * below 4 MiB; three members 0.75 and 0.79 at 256 KiB (1.20 to 1.30 from
 * 512 KiB), so they write below 512 KiB; four 0.92 and 1.01 at 256 KiB,
 * 0.96 at 512 KiB, 0.94 at 1 MiB: their split stays.
 */
static const struct bolt_collective_rule bolt_collective_rules[] = {
	/* kinds                  members  below      device      algorithm             segment  lanes  pull */
	{ EVERY_KIND,              1, 1,    ANY_SIZE,  ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ ALLTOALL,                2, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_direct, 0, 0, WRITE },
	{ BROADCAST,               2, 2,    4 * MIB,   ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ BROADCAST,               2, 2,    ANY_SIZE,  RC_DEVICE,  &bolt_collective_direct,   0,       0, PULL },
	{ BROADCAST,               2, 2,    ANY_SIZE,  ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ BROADCAST,               3, 4,    256 * KIB, ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ BROADCAST,               3, 3,    512 * KIB, ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ BROADCAST,               3, 4,    2 * MIB,   RC_DEVICE,  &bolt_collective_direct,   0,       0, PULL_ONE },
	{ BROADCAST,               3, ANY_MEMBERS, 2 * MIB, ANY_DEVICE, &bolt_collective_direct, 0, 0, WRITE },
	{ BROADCAST,               3, 4,    ANY_SIZE,  RC_DEVICE,  &bolt_collective_direct,   0,       0, PULL },
	{ BROADCAST,               3, 3,    64 * MIB,  ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ BROADCAST,               4, ANY_MEMBERS, 16 * MIB, RC_DEVICE, &bolt_collective_direct, 0, 0, PULL },
	{ BROADCAST,               4, ANY_MEMBERS, 16 * MIB, ANY_DEVICE, &bolt_collective_direct, 0, 0, WRITE },
	{ BROADCAST,               3, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_chain, 4 * MIB, 0, WRITE },
	{ BARRIER,                 2, 4,    ANY_SIZE,  ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               2, 2,    64 * KIB,  UC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               2, 2,    128 * KIB, UC_DEVICE,  &bolt_collective_ring,     256 * KIB, 4, WRITE },
	{ ALLREDUCE,               2, 2,    256 * KIB, UC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               2, 2,    512 * KIB, RC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    32 * KIB,  UC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    64 * KIB,  UC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    128 * KIB, UC_DEVICE,  &bolt_collective_ring,     256 * KIB, 4, WRITE },
	{ ALLREDUCE,               3, 3,    512 * KIB, UC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    8 * KIB,   RC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    32 * KIB,  RC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    64 * KIB,  RC_DEVICE,  &bolt_collective_ring,     256 * KIB, 4, WRITE },
	{ ALLREDUCE,               3, 3,    256 * KIB, RC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               3, 3,    512 * KIB, RC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    16 * KIB,  UC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    64 * KIB,  UC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    256 * KIB, UC_DEVICE,  &bolt_collective_ring,     256 * KIB, 4, WRITE },
	{ ALLREDUCE,               4, 4,    1 * MIB,   UC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    8 * KIB,   RC_DEVICE,  &bolt_collective_direct,   0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    32 * KIB,  RC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE,               4, 4,    64 * KIB,  RC_DEVICE,  &bolt_collective_ring,     256 * KIB, 4, WRITE },
	{ ALLREDUCE,               4, 4,    512 * KIB, RC_DEVICE,  &bolt_collective_doubling, 0,       0, WRITE },
	{ ALLREDUCE | BARRIER,     5, ANY_MEMBERS, 4 * KIB, ANY_DEVICE, &bolt_collective_doubling, 0, 0, WRITE },
	{ ALLGATHER,               2, 4,    64 * MIB,  ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ REDUCE_SCATTER,          3, 4,    8 * MIB,   ANY_DEVICE, &bolt_collective_direct,   0,       0, WRITE },
	{ ALLGATHER | REDUCE_SCATTER, 2, ANY_MEMBERS, 8 * KIB, ANY_DEVICE, &bolt_collective_direct, 0, 0, WRITE },
	{ RING_KINDS,              2, ANY_MEMBERS, 2 * MIB, ANY_DEVICE, &bolt_collective_ring, 256 * KIB, 4, WRITE },
	{ RING_KINDS,              2, ANY_MEMBERS, 8 * MIB, ANY_DEVICE, &bolt_collective_ring, 2 * MIB, 4, WRITE },
	{ RING_KINDS,              2, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_ring, 4 * MIB, 4, WRITE },
	/* What FI_BOLT_COLLECTIVE_RING_THRESHOLD leaves where it asks for a pipeline. */
	{ BROADCAST,               2, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_chain, 4 * MIB, 0, WRITE },
	/* What FI_BOLT_COLLECTIVE_RING_THRESHOLD leaves where it keeps the ring out. */
	{ ALLREDUCE | BARRIER,     4, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_doubling, 0, 0, WRITE },
	{ EVERY_KIND,              1, ANY_MEMBERS, ANY_SIZE, ANY_DEVICE, &bolt_collective_direct, 0, 0, WRITE },
};

/* Bytes the operation moves in all: what the choice is made on. */
static size_t bolt_collective_algorithm_bytes(const struct bolt_collective_operation *operation)
{
	return operation->count * operation->element_size *
	       bolt_collective_shares(operation->kind, (size_t) operation->group->size);
}

static enum bolt_collective_device
bolt_collective_algorithm_device(const struct bolt_collective_operation *operation)
{
	return operation->group->endpoint->domain->primary.qp_type == IBV_QPT_UC ? UC_DEVICE : RC_DEVICE;
}

/* Whether algorithm can run operation at all. */
static bool bolt_collective_algorithm_can(const struct bolt_collective_algorithm *algorithm,
					  const struct bolt_collective_operation *operation)
{
	if (algorithm == &bolt_collective_ring)
		return (KIND(operation->kind) & RING_KINDS) &&
		       /* The ring keeps reduce-scatter's input until the end. */
		       !(operation->kind == FI_REDUCE_SCATTER && operation->input == operation->result);
	if (algorithm == &bolt_collective_doubling)
		return bolt_collective_doubling_can(operation);
	if (algorithm == &bolt_collective_chain)
		return operation->kind == FI_BROADCAST;
	return true;
}

bool bolt_collective_algorithm_pipelines(const struct bolt_collective_algorithm *algorithm)
{
	return algorithm == &bolt_collective_ring || algorithm == &bolt_collective_chain;
}

/* Whether the ring or the chain can run operation. */
static bool bolt_collective_algorithm_can_pipeline(const struct bolt_collective_operation *operation)
{
	return bolt_collective_algorithm_can(&bolt_collective_ring, operation) ||
	       bolt_collective_algorithm_can(&bolt_collective_chain, operation);
}

static bool bolt_collective_rule_matches(const struct bolt_collective_rule *rule,
					 const struct bolt_collective_operation *operation,
					 size_t bytes, enum bolt_collective_device device)
{
	int members = operation->group->size;

	return (rule->kinds & KIND(operation->kind)) && members >= rule->min_members &&
	       (rule->max_members == ANY_MEMBERS || members <= rule->max_members) &&
	       bytes < rule->below_bytes && (rule->device == ANY_DEVICE || rule->device == device) &&
	       bolt_collective_algorithm_can(rule->algorithm, operation);
}

/* Which rows a lookup considers: FI_BOLT_COLLECTIVE_RING_THRESHOLD asks for a pipeline or not. */
enum bolt_collective_lookup { ANY_ROW, PIPELINE_ROWS, OTHER_ROWS };

/* The first row that matches; the last (direct, for everything) if none does. */
static const struct bolt_collective_rule *
bolt_collective_rule_find(const struct bolt_collective_operation *operation, size_t bytes,
			  enum bolt_collective_lookup lookup)
{
	size_t count = sizeof(bolt_collective_rules) / sizeof(bolt_collective_rules[0]);
	enum bolt_collective_device device = bolt_collective_algorithm_device(operation);

	for (size_t i = 0; i < count; i++) {
		const struct bolt_collective_rule *rule = &bolt_collective_rules[i];
		bool pipeline = bolt_collective_algorithm_pipelines(rule->algorithm);

		if ((lookup == PIPELINE_ROWS && !pipeline) || (lookup == OTHER_ROWS && pipeline))
			continue;
		if (bolt_collective_rule_matches(rule, operation, bytes, device))
			return rule;
	}
	return &bolt_collective_rules[count - 1];
}

/*
 * FI_BOLT_COLLECTIVE_RING_THRESHOLD, where set, decides between the pipelines
 * (ring, chain) and the rest; FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS between
 * doubling and direct.
 */
static const struct bolt_collective_algorithm *
bolt_collective_algorithm_override(const struct bolt_collective_operation *operation,
				   const struct bolt_params *params, size_t bytes,
				   const struct bolt_collective_rule **rule)
{
	const struct bolt_collective_algorithm *algorithm;

	if (params->collective_ring_threshold >= 0 && operation->group->size > 1 &&
	    bolt_collective_algorithm_can_pipeline(operation))
		*rule = bolt_collective_rule_find(operation, bytes,
						  bytes >= (size_t) params->collective_ring_threshold ?
						  PIPELINE_ROWS : OTHER_ROWS);
	algorithm = (*rule)->algorithm;
	if (params->collective_doubling_members >= 0 && !bolt_collective_algorithm_pipelines(algorithm) &&
	    operation->group->size > 1 && bolt_collective_algorithm_can(&bolt_collective_doubling, operation))
		algorithm = operation->group->size >= params->collective_doubling_members ?
			    &bolt_collective_doubling : &bolt_collective_direct;
	return algorithm;
}

void bolt_collective_algorithm_choose(struct bolt_collective_operation *operation)
{
	const struct bolt_params *params = &operation->group->endpoint->domain->fabric->params;
	size_t bytes = bolt_collective_algorithm_bytes(operation);
	const struct bolt_collective_rule *rule = bolt_collective_rule_find(operation, bytes, ANY_ROW);

	operation->algorithm = bolt_collective_algorithm_override(operation, params, bytes, &rule);
	operation->segment_size = params->collective_segment_size > 0 ?
				  (size_t) params->collective_segment_size : rule->segment_size;
	operation->lane_limit = params->collective_lanes > 0 ? params->collective_lanes : rule->lanes;
	operation->pull = params->collective_pull >= 0 ? (enum bolt_collective_pull) params->collective_pull :
			  rule->pull;
	/* UC has no RDMA read. */
	if (bolt_collective_algorithm_device(operation) != RC_DEVICE)
		operation->pull = BOLT_COLLECTIVE_WRITE;
}
