/*
 * objects_fixture.c: the stand-ins that let the object files link and run
 * without the rest of the provider: bolt_prov, bolt_domain_progress, and a
 * fabric and domain with their lock, classes and a fake verbs status table.
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "objects_fixture.h"

struct fi_provider bolt_prov = {
	.name = BOLT_PROVIDER_NAME,
	.version = BOLT_PROVIDER_VERSION,
	.fi_version = BOLT_FI_VERSION,
};

struct objects_fixture objects;

void bolt_domain_progress(struct bolt_domain *domain)
{
	atomic_fetch_add(&objects.progress_calls, 1);
	if (objects.progress_hook)
		objects.progress_hook(domain, objects.progress_argument);
}

static const char *objects_wc_status_str(enum ibv_wc_status status)
{
	return status == IBV_WC_RETRY_EXC_ERR ? OBJECTS_RETRY_TEXT : "fake: other verbs status";
}

void objects_setup(void)
{
	memset(&objects, 0, sizeof(objects));
	objects.fabric.fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	objects.fabric.fabric_fid.api_version = BOLT_FI_VERSION;
	objects.fabric.verbs.wc_status_str = objects_wc_status_str;
	atomic_init(&objects.fabric.child_count, 0);

	objects.domain.domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	objects.domain.fabric = &objects.fabric;
	atomic_init(&objects.domain.child_count, 0);
	pthread_mutex_init(&objects.domain.lock, NULL);
	atomic_init(&objects.progress_calls, 0);
}

void objects_teardown(void)
{
	cr_expect_eq(atomic_load(&objects.domain.child_count), 0, "a domain object was left open");
	cr_expect_eq(atomic_load(&objects.fabric.child_count), 0, "an event queue was left open");
	pthread_mutex_destroy(&objects.domain.lock);
}

void objects_set_progress_hook(objects_progress_hook hook, void *argument)
{
	bolt_domain_lock(&objects.domain);
	objects.progress_hook = hook;
	objects.progress_argument = argument;
	bolt_domain_unlock(&objects.domain);
}

void objects_now(struct timespec *now)
{
	clock_gettime(CLOCK_MONOTONIC, now);
}

double objects_elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	objects_now(&now);
	return (double) (now.tv_sec - start->tv_sec) * 1e3 +
	       (double) (now.tv_nsec - start->tv_nsec) / 1e6;
}

void objects_sleep_ms(int milliseconds)
{
	struct timespec pause = {
		.tv_sec = milliseconds / 1000,
		.tv_nsec = (long) (milliseconds % 1000) * 1000000L,
	};

	nanosleep(&pause, NULL);
}

struct bolt_address objects_ipv4_address(uint32_t n)
{
	struct bolt_address address = {
		.version = BOLT_ADDRESS_VERSION,
		.family = BOLT_ADDRESS_FAMILY_IPV4,
		.port = htons((uint16_t) (5000 + n % 1000)),
		.endpoint_id = htonl(n),
		.ip = { 10, 0, (uint8_t) (n >> 8), (uint8_t) n },
	};

	return address;
}

struct bolt_address objects_ipv6_address(uint32_t n)
{
	struct bolt_address address = {
		.version = BOLT_ADDRESS_VERSION,
		.family = BOLT_ADDRESS_FAMILY_IPV6,
		.port = htons((uint16_t) (6000 + n % 1000)),
		.endpoint_id = htonl(n),
		.ip = { 0xfe, 0x80, [14] = (uint8_t) (n >> 8), [15] = (uint8_t) n },
	};

	return address;
}
