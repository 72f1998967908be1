/*
 * test_params.c: the FI_BOLT_* parameters: defaults, valid values, and a clear
 * -FI_EINVAL for values that are out of range or malformed.
 */
#include <stdlib.h>
#include <criterion/criterion.h>

#include "bolt.h"

static void clear_environment(void)
{
	const char *names[] = {
		"FI_BOLT_SOFT", "FI_BOLT_GID_INDEX", "FI_BOLT_VERBS_LIBRARY",
		"FI_BOLT_SOFT_TOPOLOGY", "FI_BOLT_SOFT_HOST", "FI_BOLT_SOFT_NAMESPACE",
		"FI_BOLT_SOFT_MAX_MR", "FI_BOLT_SOFT_MAX_QP", "FI_BOLT_SOFT_MAX_WR",
		"FI_BOLT_SOFT_SEND_ONLY", "FI_BOLT_SOFT_DROP_EVERY", "FI_BOLT_SOFT_DROP_PPM",
		"FI_BOLT_SOFT_SEED", "FI_BOLT_SOFT_COPY", "FI_BOLT_JOB_KEY", "FI_BOLT_JOB_KEY_FILE",
		"FI_BOLT_SIDE_CHANNEL_ADDRESS",
		"FI_BOLT_RENDEZVOUS_THRESHOLD", "FI_BOLT_STRIPE_PORTS", "FI_BOLT_RAIL_PROBE_TIMEOUT",
		"FI_BOLT_STRIPE_THRESHOLD", "FI_BOLT_BOUNCE_SIZE", "FI_BOLT_BOUNCE_THRESHOLD",
		"FI_BOLT_UNEXPECTED_LIMIT",
		"FI_BOLT_RECEIVE_GRANTS", "FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

TestSuite(params, .init = clear_environment);

Test(params, defaults)
{
	struct bolt_params params;

	cr_assert_eq(bolt_params_read(&params), 0);
	cr_expect_str_eq(params.soft_profile, "");
	cr_expect_eq(params.gid_index, -1);
	cr_expect_str_eq(params.verbs_library, "");
	cr_expect_str_eq(params.soft_topology, "single");
	cr_expect_str_eq(params.soft_namespace, "default");
	cr_expect_eq(params.soft_host, 0);
	cr_expect_eq(params.soft_max_mr, 0);
	cr_expect_eq(params.soft_send_only, false);
	cr_expect_eq(params.soft_seed, 1);
	cr_expect_eq(params.rendezvous_threshold, 16384);
	cr_expect_eq(params.collective_rendezvous_threshold, 32768);
	cr_expect_eq(params.bounce_size, 32768);
	cr_expect_eq(params.bounce_threshold, 16384);
	cr_expect_eq(params.unexpected_limit, 8 << 20);
	cr_expect_eq(params.receive_grants, 32);
	cr_expect_eq(params.stripe_ports, -1);
	cr_expect_eq(params.rail_probe_timeout, 200);
	cr_expect_eq(params.stripe_threshold, 1 << 20);
}

Test(params, values_are_read)
{
	struct bolt_params params;

	setenv("FI_BOLT_SOFT", "thunderbolt", 1);
	setenv("FI_BOLT_GID_INDEX", "1", 1);
	setenv("FI_BOLT_SOFT_TOPOLOGY", "mesh:4", 1);
	setenv("FI_BOLT_SOFT_HOST", "3", 1);
	setenv("FI_BOLT_SOFT_MAX_MR", "0x20", 1);
	setenv("FI_BOLT_SOFT_SEND_ONLY", "yes", 1);
	setenv("FI_BOLT_RENDEZVOUS_THRESHOLD", "65536", 1);
	setenv("FI_BOLT_STRIPE_PORTS", "2", 1);
	setenv("FI_BOLT_RAIL_PROBE_TIMEOUT", "50", 1);
	setenv("FI_BOLT_BOUNCE_SIZE", "0", 1);
	setenv("FI_BOLT_BOUNCE_THRESHOLD", "8192", 1);
	setenv("FI_BOLT_UNEXPECTED_LIMIT", "0", 1);
	setenv("FI_BOLT_RECEIVE_GRANTS", "0", 1);
	setenv("FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD", "4096", 1);
	cr_assert_eq(bolt_params_read(&params), 0);
	cr_expect_str_eq(params.soft_profile, "thunderbolt");
	cr_expect_eq(params.gid_index, 1);
	cr_expect_str_eq(params.soft_topology, "mesh:4");
	cr_expect_eq(params.soft_host, 3);
	cr_expect_eq(params.soft_max_mr, 32);
	cr_expect_eq(params.soft_send_only, true);
	cr_expect_eq(params.rendezvous_threshold, 65536);
	cr_expect_eq(params.stripe_ports, 2);
	cr_expect_eq(params.rail_probe_timeout, 50);
	cr_expect_eq(params.bounce_size, 0);
	cr_expect_eq(params.bounce_threshold, 8192);
	cr_expect_eq(params.unexpected_limit, 0);
	cr_expect_eq(params.receive_grants, 0);
	cr_expect_eq(params.collective_rendezvous_threshold, 4096);
}

Test(params, rocev2_profile_is_accepted)
{
	struct bolt_params params;

	setenv("FI_BOLT_SOFT", "rocev2", 1);
	cr_assert_eq(bolt_params_read(&params), 0);
	cr_expect_str_eq(params.soft_profile, "rocev2");
}

Test(params, invalid_values_are_rejected)
{
	const struct {
		const char *name, *value;
	} cases[] = {
		{ "FI_BOLT_SOFT", "infiniband" },
		{ "FI_BOLT_GID_INDEX", "one" },
		{ "FI_BOLT_GID_INDEX", "1x" },
		{ "FI_BOLT_GID_INDEX", "-2" },
		{ "FI_BOLT_GID_INDEX", "" },
		{ "FI_BOLT_GID_INDEX", "4294967297" },         /* 2^32 + 1: 1 as an int */
		{ "FI_BOLT_STRIPE_PORTS", "4294967295" },      /* -1 as an int */
		{ "FI_BOLT_SOFT_HOST", "64" },
		{ "FI_BOLT_SOFT_DROP_PPM", "1000001" },
		{ "FI_BOLT_SOFT_SEND_ONLY", "perhaps" },
		{ "FI_BOLT_RENDEZVOUS_THRESHOLD", "4095" },     /* less than one segment */
		{ "FI_BOLT_STRIPE_PORTS", "5" },
		{ "FI_BOLT_RAIL_PROBE_TIMEOUT", "0" },
		{ "FI_BOLT_STRIPE_THRESHOLD", "4095" },
		{ "FI_BOLT_BOUNCE_SIZE", "-1" },
		{ "FI_BOLT_BOUNCE_SIZE", "16777217" },         /* more than 16 MiB */
		{ "FI_BOLT_BOUNCE_THRESHOLD", "-1" },
		{ "FI_BOLT_UNEXPECTED_LIMIT", "-1" },
		{ "FI_BOLT_UNEXPECTED_LIMIT", "1073741825" },  /* more than 1 GiB */
		{ "FI_BOLT_RECEIVE_GRANTS", "-1" },
		{ "FI_BOLT_RECEIVE_GRANTS", "33" },            /* more than a peer keeps */
		{ "FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD", "4095" },  /* less than one segment */
		{ "FI_BOLT_SOFT_TOPOLOGY",
		  "a-topology-name-that-is-far-longer-than-the-sixty-three-characters-allowed" },
	};
	struct bolt_params params;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clear_environment();
		setenv(cases[i].name, cases[i].value, 1);
		cr_expect_eq(bolt_params_read(&params), -FI_EINVAL, "%s=%s was accepted",
			     cases[i].name, cases[i].value);
	}
}
