/*
 * objects_fixture.h: a fabric and a domain holding only what the completion
 * queue, counter, event queue and address vector use, so that those objects
 * are tested without a device. The fixture also stands in for the provider
 * object and for the domain's progress, which counts its calls and can run a
 * test's hook, under the domain lock, to complete operations "from progress".
 * The fixture's fabric and domain have no ops tables, so tests open objects
 * with bolt_cq_open, bolt_eq_open and the like, not fi_cq_open.
 */
#ifndef OBJECTS_FIXTURE_H
#define OBJECTS_FIXTURE_H

#include <stdatomic.h>
#include <time.h>

#include "bolt_provider.h"

/* What the fake verbs table's wc_status_str says about IBV_WC_RETRY_EXC_ERR. */
#define OBJECTS_RETRY_TEXT "fake: transport retry counter exceeded"

typedef void (*objects_progress_hook)(struct bolt_domain *domain, void *argument);

struct objects_fixture {
	struct bolt_fabric fabric;
	struct bolt_domain domain;
	atomic_int progress_calls;
	objects_progress_hook progress_hook;
	void *progress_argument;
};

extern struct objects_fixture objects;

/* Criterion .init and .fini: a fresh fabric and domain; fini checks nothing was left open. */
void objects_setup(void);
void objects_teardown(void);

/* Runs hook(domain, argument) inside every later bolt_domain_progress call. */
void objects_set_progress_hook(objects_progress_hook hook, void *argument);

/* Milliseconds since start, on the monotonic clock. */
double objects_elapsed_ms(const struct timespec *start);
void objects_now(struct timespec *now);
void objects_sleep_ms(int milliseconds);

/* A valid bolt address: IPv4 10.0.high.low, port 5000 + n % 1000, endpoint n. */
struct bolt_address objects_ipv4_address(uint32_t n);
struct bolt_address objects_ipv6_address(uint32_t n);

#endif /* OBJECTS_FIXTURE_H */
