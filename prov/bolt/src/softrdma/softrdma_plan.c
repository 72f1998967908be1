/*
 * softrdma_plan.c: the fault plan, faults at given times in a running job
 * (FI_BOLT_SOFT_FAULT_PLAN), so that benchmarks and collectives can be run
 * through a failure without a test of their own. The plan is parsed once,
 * kept in the shared segment with its start (the segment's set-up), and
 * each event is applied once, by whichever attached process's verbs call
 * finds it due first: every process sees the same faults at the same time.
 *
 *   plan   := event { ';' event }
 *   event  := 'at' time action
 *   time   := number ('ms' | 's')
 *   action := ('cut' | 'restore') 'cable' device | 'port' device ('down' | 'up')
 *           | 'acks' device ('lost' | 'kept')
 *   device := index | host '.' index        (an index alone: host 0's)
 *
 * A cable whose acknowledgements are lost carries every RC message to its
 * target, but no answer back: the sender retries, then fails its sends
 * (retry exceeded) though their targets took them.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

/* Skips blanks, then takes word if the text starts with it (and a word boundary). */
static bool softrdma_plan_word(const char **text, const char *word)
{
	size_t length = strlen(word);

	while (isspace((unsigned char) **text))
		(*text)++;
	if (strncmp(*text, word, length) || isalnum((unsigned char) (*text)[length]))
		return false;
	*text += length;
	return true;
}

static bool softrdma_plan_number(const char **text, long maximum, long *value)
{
	char *end;

	while (isspace((unsigned char) **text))
		(*text)++;
	if (!isdigit((unsigned char) **text))
		return false;
	*value = strtol(*text, &end, 10);
	if (*value < 0 || *value > maximum)
		return false;
	*text = end;
	return true;
}

static bool softrdma_plan_time(const char **text, uint64_t *at_ns)
{
	long value;

	if (!softrdma_plan_number(text, 24L * 3600 * 1000, &value))
		return false;
	if (!strncmp(*text, "ms", 2) && !isalnum((unsigned char) (*text)[2])) {
		*text += 2;
		*at_ns = (uint64_t) value * 1000000ull;
		return true;
	}
	if (**text == 's' && !isalnum((unsigned char) (*text)[1])) {
		*text += 1;
		*at_ns = (uint64_t) value * 1000000000ull;
		return true;
	}
	return false;
}

/* A device of the topology: "index" (host 0's) or "host.index". */
static bool softrdma_plan_device(const char **text, int hosts, int cables,
				 struct softrdma_fault_event *event)
{
	int per_host = hosts == 1 ? 1 : (hosts - 1) * cables;
	long first, second = -1;

	if (!softrdma_plan_number(text, SOFTRDMA_MAX_DEVICES, &first))
		return false;
	if (**text == '.') {
		(*text)++;
		if (!isdigit((unsigned char) **text) ||
		    !softrdma_plan_number(text, SOFTRDMA_MAX_DEVICES, &second))
			return false;
	}
	event->host = second < 0 ? 0 : (int32_t) first;
	event->index = second < 0 ? (int32_t) first : (int32_t) second;
	return event->host < hosts && event->index < per_host;
}

/* A device, then the word for the fault (faulty) or for its end (healed): a fault of kind. */
static bool softrdma_plan_device_state(const char **text, int hosts, int cables,
				       struct softrdma_fault_event *event, enum softrdma_fault_kind kind,
				       const char *faulty, const char *healed)
{
	event->kind = (uint8_t) kind;
	if (!softrdma_plan_device(text, hosts, cables, event))
		return false;
	event->fault = softrdma_plan_word(text, faulty);
	return event->fault || softrdma_plan_word(text, healed);
}

static bool softrdma_plan_action(const char **text, int hosts, int cables,
				 struct softrdma_fault_event *event)
{
	bool cut = softrdma_plan_word(text, "cut");

	if (cut || softrdma_plan_word(text, "restore")) {
		event->kind = SOFTRDMA_FAULT_CABLE;
		event->fault = cut;
		return softrdma_plan_word(text, "cable") &&
		       softrdma_plan_device(text, hosts, cables, event);
	}
	if (softrdma_plan_word(text, "acks"))
		return softrdma_plan_device_state(text, hosts, cables, event, SOFTRDMA_FAULT_ACKS, "lost",
						  "kept");
	return softrdma_plan_word(text, "port") &&
	       softrdma_plan_device_state(text, hosts, cables, event, SOFTRDMA_FAULT_PORT, "down", "up");
}

/* What an event does, as the plan says it. */
static const char *softrdma_plan_describe(const struct softrdma_fault_event *event)
{
	switch (event->kind) {
	case SOFTRDMA_FAULT_CABLE:
		return event->fault ? "cut cable" : "restore cable";
	case SOFTRDMA_FAULT_ACKS:
		return event->fault ? "acks lost on" : "acks kept on";
	default:
		return event->fault ? "port down" : "port up";
	}
}

static int softrdma_plan_compare(const void *a, const void *b)
{
	const struct softrdma_fault_event *first = a, *second = b;

	return first->at_ns < second->at_ns ? -1 : first->at_ns > second->at_ns;
}

int softrdma_fault_plan_parse(const char *text, int hosts, int cables,
			      struct softrdma_fault_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->next_at_ns = UINT64_MAX;
	while (isspace((unsigned char) *text))
		text++;
	while (*text) {
		struct softrdma_fault_event *event = &plan->events[plan->count];

		if (plan->count == SOFTRDMA_FAULT_PLAN_EVENTS || !softrdma_plan_word(&text, "at") ||
		    !softrdma_plan_time(&text, &event->at_ns) ||
		    !softrdma_plan_action(&text, hosts, cables, event))
			return -EINVAL;
		plan->count++;
		while (isspace((unsigned char) *text))
			text++;
		if (*text == ';')
			text++;
		else if (*text)
			return -EINVAL;
		while (isspace((unsigned char) *text))
			text++;
	}
	/* Stable enough: events at one time keep no promised order among themselves. */
	qsort(plan->events, plan->count, sizeof(plan->events[0]), softrdma_plan_compare);
	if (plan->count)
		plan->next_at_ns = plan->events[0].at_ns;
	return 0;
}

void softrdma_fault_plan_start_locked(struct softrdma_segment *segment, int hosts, int cables)
{
	struct softrdma_fault_plan *plan = &segment->plan;

	/* The config was checked at attach: a plan that does not parse is none. */
	if (softrdma_fault_plan_parse(segment->config.fault_plan, hosts, cables, plan))
		memset(plan, 0, sizeof(*plan));
	plan->start_ns = softrdma_now_ns();
	plan->next_at_ns = plan->count ? plan->start_ns + plan->events[0].at_ns : UINT64_MAX;
}

static void softrdma_fault_plan_apply_locked(struct softrdma_segment *segment,
					     const struct softrdma_fault_event *event)
{
	int device_id = softrdma_device_id(segment, event->host, event->index);

	if (device_id < 0)
		return;
	FI_INFO(&bolt_prov, FI_LOG_CORE, "software device fault plan: %s %d.%d\n",
		softrdma_plan_describe(event), event->host, event->index);
	softrdma_fault_set_locked(segment, device_id, (enum softrdma_fault_kind) event->kind,
				  event->fault);
}

void softrdma_fault_plan_tick(void)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_fault_plan *plan;
	uint64_t now;

	if (!segment)
		return;
	plan = &segment->plan;
	/* Most calls: nothing due, and no lock taken. */
	if (__atomic_load_n(&plan->next_at_ns, __ATOMIC_ACQUIRE) == UINT64_MAX)
		return;
	now = softrdma_now_ns();
	if (now < __atomic_load_n(&plan->next_at_ns, __ATOMIC_ACQUIRE))
		return;
	softrdma_lock(segment);
	while (plan->next < plan->count && now >= plan->start_ns + plan->events[plan->next].at_ns)
		softrdma_fault_plan_apply_locked(segment, &plan->events[plan->next++]);
	__atomic_store_n(&plan->next_at_ns,
			 plan->next < plan->count ? plan->start_ns + plan->events[plan->next].at_ns :
						    UINT64_MAX,
			 __ATOMIC_RELEASE);
	softrdma_unlock(segment);
}
