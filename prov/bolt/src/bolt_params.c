/*
 * bolt_params.c: the provider's tunables, declared once in a table, defined
 * with libfabric (so fi_info -e lists them as FI_BOLT_*) and read and checked.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bolt.h"

enum bolt_param_kind { BOLT_PARAM_STRING, BOLT_PARAM_INT, BOLT_PARAM_BOOL };

struct bolt_param {
	const char *name;
	enum bolt_param_kind kind;
	size_t offset;          /* of the value in struct bolt_params */
	size_t size;            /* of a string value's buffer */
	int minimum, maximum;   /* accepted range of an integer value */
	const char *help;
};

#define BOLT_STRING_PARAM(name, field, help) \
	{ name, BOLT_PARAM_STRING, offsetof(struct bolt_params, field), \
	  sizeof(((struct bolt_params *) 0)->field), 0, 0, help }
#define BOLT_INT_PARAM(name, field, minimum, maximum, help) \
	{ name, BOLT_PARAM_INT, offsetof(struct bolt_params, field), 0, \
	  minimum, maximum, help }
#define BOLT_BOOL_PARAM(name, field, help) \
	{ name, BOLT_PARAM_BOOL, offsetof(struct bolt_params, field), 0, 0, 1, help }

static const struct bolt_param bolt_param_table[] = {
	BOLT_STRING_PARAM("soft", soft_profile,
		"Use the software RDMA device with this profile: thunderbolt or rocev2 "
		"(default: unset, real devices only)"),
	BOLT_INT_PARAM("gid_index", gid_index, -1, 65535,
		"Use this GID index on every port instead of choosing one (default: -1, choose)"),
	BOLT_STRING_PARAM("verbs_library", verbs_library,
		"Verbs library opened at run time (default: libibverbs.so.1, librdma.dylib on macOS)"),
	BOLT_STRING_PARAM("soft_topology", soft_topology,
		"Software device topology: single (one host, one device) or mesh:H[xC] "
		"(H hosts, each cabled to every other with C cables) (default: single)"),
	BOLT_INT_PARAM("soft_host", soft_host, 0, 63,
		"Which emulated host of the software topology this process is (default: 0)"),
	BOLT_STRING_PARAM("soft_namespace", soft_namespace,
		"Name that separates independent jobs on the software device (default: default)"),
	BOLT_INT_PARAM("soft_max_mr", soft_max_mr, 0, 1 << 20,
		"Memory regions per software device (default: 0, the profile's limit)"),
	BOLT_INT_PARAM("soft_max_qp", soft_max_qp, 0, 4096,
		"Queue pairs per software device (default: 0, the profile's limit)"),
	BOLT_INT_PARAM("soft_max_wr", soft_max_wr, 0, 1 << 16,
		"Outstanding work requests a software queue accepts (default: 0, the profile's limit)"),
	BOLT_BOOL_PARAM("soft_send_only", soft_send_only,
		"Software device offers SEND/RECV only, no RDMA write or read (default: no)"),
	BOLT_INT_PARAM("soft_drop_every", soft_drop_every, 0, 1 << 30,
		"Software device drops every Nth UC packet (default: 0, none)"),
	BOLT_INT_PARAM("soft_drop_ppm", soft_drop_ppm, 0, 1000000,
		"Software device drops UC packets at this rate, per million (default: 0)"),
	BOLT_INT_PARAM("soft_seed", soft_seed, 0, 1 << 30,
		"Seed of the software device's packet-drop generator (default: 1)"),
	BOLT_STRING_PARAM("soft_fault_plan", soft_fault_plan,
		"Faults the software device injects in a running job, at times from the job's "
		"start on the device (its first process): events separated by ';', each "
		"\"at <n>ms|<n>s cut|restore cable [host.]index\" (both ends of the cable of that "
		"device; an index alone is host 0's) or \"at <n>ms|<n>s port [host.]index down|up\", "
		"e.g. \"at 200ms cut cable 1; at 900ms restore cable 1\" (default: unset, none)"),
	BOLT_STRING_PARAM("soft_copy", soft_copy,
		"How the software device moves data between processes: cma (cross-memory "
		"attach, one copy), shm (through shared memory, two copies) or auto (cma where "
		"the system permits it, else shm) (default: auto)"),
	BOLT_STRING_PARAM("job_key", job_key,
		"Key shared by every process of a job, best random (32 bytes in hex): both ends of "
		"every side channel prove they hold it, without sending it, and peers that cannot "
		"are refused (default: unset, uid:<user id>, which keeps users apart but is not "
		"authentication: the side channel is then unauthenticated)"),
	BOLT_STRING_PARAM("job_key_file", job_key_file,
		"File holding the job key instead of FI_BOLT_JOB_KEY, for keys that must not sit "
		"in the environment; this user's own, mode 0600 or 0400; trailing white space is "
		"ignored (default: unset)"),
	BOLT_STRING_PARAM("side_channel_address", side_channel_address,
		"IP address endpoints' side channels listen on (default: 127.0.0.1 on the "
		"software device, else the address this host's name resolves to, or, where "
		"that is loopback only, an interface's); an IPv6 link-local address names its "
		"interface, as fe80::1%thunderbolt0"),
	BOLT_INT_PARAM("liveness_timeout", liveness_timeout, 2000, 3600000,
		"Milliseconds a peer's host may stay silent before its connections fail and their "
		"operations end with errors: a host that lost power or its cable, or was stopped. "
		"The kernel keeps each side channel alive by itself, whether or not the application "
		"calls progress, so a peer process that is only paused (a debugger, a starved CPU) "
		"is never declared dead, nor a host stopped for less than this minus one second; "
		"one gone is found within this plus one second. A peer process that exits or is "
		"killed is found at once (default: 10000)"),
	BOLT_BOOL_PARAM("uc_data_writes", uc_data_writes,
		"On UC links (Thunderbolt), large messages, writes and reads move the application's "
		"data by RDMA write, the fast path, in segments that bolt writes again when UC loses "
		"them. No: they go as messages (segments, or written whole into bounce buffers), "
		"which bolt sends again when lost (default: yes)"),
	BOLT_INT_PARAM("uc_write_segment", uc_write_segment, 4096, 16777216,
		"The largest RDMA write of the application's data on UC links. A write is lost if "
		"any of its packets is (1 KiB on Thunderbolt), and only lost segments are written "
		"again: the segment size, from 4 KiB up to this, is the one that moves the most "
		"data for the loss the link shows (FI_BOLT_UC_SEGMENT_COST) (default: 4194304)"),
	BOLT_INT_PARAM("uc_segment_cost", uc_segment_cost, 0, 16777216,
		"What one more UC write segment costs, as the bytes the link would write in that "
		"time: larger segments save it, smaller ones lose less with each lost packet. bolt "
		"takes the segment size that moves the most for the loss it measures (default: "
		"16384, measured on the software device)"),
	BOLT_INT_PARAM("side_channel_pending", side_channel_pending, 1, 1 << 16,
		"Side channels an endpoint keeps accepted before their peer is confirmed (waiting "
		"for its hello, or for the answer of the listener it claims to be), at most; "
		"beyond, the kernel's backlog holds the rest (default: 256)"),
	BOLT_INT_PARAM("side_channel_pending_per_source", side_channel_pending_per_source, 1, 1 << 16,
		"Of those, at most this many from one IP address, so that one host that floods "
		"cannot keep the others out; more from it are closed at once (default: 32)"),
	BOLT_INT_PARAM("data_rails", data_rails, -1, BOLT_MAX_DATA_RAILS,
		"Queue pairs to each peer that carry large RDMA writes, striped across them, "
		"apart from the control rail's headers; made on the first large transfer while the "
		"device has queue pairs to spare (default: -1, one on devices with 64 queue pairs "
		"or more, none on devices with few, such as Thunderbolt's 10, which connections to "
		"peers need; 0: the control rail carries them)"),
	BOLT_INT_PARAM("stripe_ports", stripe_ports, -1, BOLT_MAX_STRIPE_PORTS,
		"Other ports of this host (cables, NICs) a domain may stripe large transfers over, "
		"each with a data rail to every peer it is found to reach (default: -1, every "
		"one up to 4; 0: none)"),
	BOLT_INT_PARAM("stripe_threshold", stripe_threshold, 4096, 1 << 30,
		"Where a peer is reached over more than one cable: writes into a region the target "
		"granted of at least this many bytes go by request and answer, striped over the data "
		"rails (smaller ones stay one direct write), and reads of that size are written back "
		"in stripes (default: 1048576)"),
	BOLT_INT_PARAM("rail_probe_timeout", rail_probe_timeout, 1, 60000,
		"Milliseconds a peer's port waits for a stripe rail's or a new link's probe, from "
		"the asker's word that it is sent, before the asker tries the next port (default: 200)"),
	BOLT_INT_PARAM("rendezvous_threshold", rendezvous_threshold, 4096, 1 << 30,
		"Messages and writes of at least this many bytes are written by RDMA into the "
		"receiver's buffer after a request and its answer; smaller ones go in 4 KiB "
		"segments, copied at both ends (default: 16384)"),
	BOLT_INT_PARAM("bounce_size", bounce_size, 0, 16 << 20,
		"On UC links (Thunderbolt), messages from FI_BOLT_BOUNCE_THRESHOLD bytes (and longer "
		"than one 4 KiB segment) to at most this many bytes are written whole, header and "
		"data in one RDMA write, into buffers the receiver set aside for its peer, and "
		"copied out there: no request and answer before the data. Each link sets aside 32 "
		"buffers of this size for its peer "
		"(default: 32768; 0, or one segment or less: none, such messages go by rendezvous "
		"or in segments)"),
	BOLT_INT_PARAM("bounce_threshold", bounce_threshold, 0, 16 << 20,
		"On UC links, messages shorter than this many bytes go in 4 KiB segments even where "
		"they would fit a bounce buffer (default: 16384; 0: every message longer than one "
		"segment that fits is written whole)"),
	BOLT_INT_PARAM("unexpected_limit", unexpected_limit, 0, 1 << 30,
		"Bytes of one peer's messages that arrived before their receive an endpoint keeps "
		"(their data and bookkeeping); beyond it the endpoint takes no more such data from "
		"that peer, which waits until the application's receives take some, instead of "
		"growing without bound (default: 8388608; 0: no more than the peer has already sent)"),
	BOLT_INT_PARAM("unexpected_endpoint_limit", unexpected_endpoint_limit, 0, 1 << 30,
		"Bytes of every peer's messages that arrived before their receive an endpoint keeps "
		"in all; beyond it, every peer whose next message has no receive waits, as with "
		"FI_BOLT_UNEXPECTED_LIMIT (default: 67108864)"),
	BOLT_INT_PARAM("receive_grants", receive_grants, 0, BOLT_RECEIVE_GRANTS_MAX,
		"Untagged receives of at least FI_BOLT_RENDEZVOUS_THRESHOLD bytes (on UC, longer "
		"than FI_BOLT_BOUNCE_SIZE) an endpoint "
		"grants ahead to the peer whose messages will take them, at most, so that the peer "
		"writes those messages straight into them, without a request and its answer; "
		"they go out in batches once the peer holds half of them or fewer "
		"(default: 32; 0: none, every large message asks)"),
	BOLT_INT_PARAM("collective_ring_threshold", collective_ring_threshold, -1, 1 << 30,
		"Overrides the table of collective algorithms: all-reduce, all-gather and "
		"reduce-scatter of at least this many bytes in all run as a pipelined ring, and "
		"broadcasts as a pipelined chain, smaller ones fully connected, in one round, or by "
		"recursive doubling (default: -1, as the table says)"),
	BOLT_INT_PARAM("collective_doubling_members", collective_doubling_members, -1, 1 << 15,
		"Overrides the table of collective algorithms: groups of at least this many "
		"members run the all-reduces and barriers that do not take the ring by recursive "
		"doubling, log2(n) rounds of one message each, and so the all-gathers and "
		"reduce-scatters (by halving) of 2^k members; smaller groups fully connected, one "
		"round of n-1 messages (default: -1, as the table says)"),
	BOLT_INT_PARAM("collective_segment_size", collective_segment_size, -1, 1 << 30,
		"Overrides the table of collective algorithms: bytes of the segments the ring and "
		"the chain pipeline (default: -1, as the table says)"),
	BOLT_INT_PARAM("collective_lanes", collective_lanes, -1, 256,
		"Overrides the table of collective algorithms: segments each ring member keeps in "
		"flight at once (default: -1, as the table says)"),
	BOLT_INT_PARAM("collective_rendezvous_threshold", collective_rendezvous_threshold, 4096,
		1 << 30,
		"FI_BOLT_RENDEZVOUS_THRESHOLD for the messages of collectives, which wait on each "
		"message: those of at least this many bytes are written by RDMA after a request "
		"and its answer, smaller ones go in segments (default: 32768)"),
	BOLT_INT_PARAM("collective_pull", collective_pull, -1, 2,
		"Overrides the table of collective algorithms: 1, on RC (RoCE v2) the receiver of "
		"a collective's rendezvous message reads it from the sender's buffer by RDMA, so "
		"that the members of a broadcast copy at once; 2, one receiver does, the sender's "
		"previous member in rank order, while the sender writes to the others; 0, the "
		"sender writes each after the receiver's answer (default: -1, as the table says)"),
	BOLT_BOOL_PARAM("collective_grants", collective_grants,
		"The receiver of a collective's rendezvous message that is written (not pulled) "
		"grants its receive to the sender as it posts it, so that the sender writes "
		"without a request and its answer; must be alike at every member (default: yes)"),
	BOLT_STRING_PARAM("collective_yield", collective_yield,
		"Whether a collective's progress that found nothing to do gives the CPU away "
		"(sched_yield), as Open MPI does when ranks outnumber cores: yes, no, or auto, "
		"when the group's members on this host outnumber the CPUs this process may run "
		"on (default: auto)"),
	BOLT_BOOL_PARAM("share_queue_pairs", share_queue_pairs,
		"Connections of a domain's endpoints to endpoints of one peer domain share one "
		"control queue pair, up to 32 connections on a link (default: yes; no: a queue "
		"pair per connection, which Thunderbolt's 10 per device soon exhaust)"),
};

static const struct bolt_params bolt_param_defaults = {
	.soft_profile = "",
	.gid_index = -1,
	.verbs_library = "",
	.soft_topology = "single",
	.soft_host = 0,
	.soft_namespace = "default",
	.soft_seed = 1,
	.soft_copy = "auto",
	.liveness_timeout = 10000,
	.uc_data_writes = true,
	.uc_write_segment = 4194304,
	.uc_segment_cost = 16384,
	.data_rails = -1,
	.stripe_ports = -1,
	.rail_probe_timeout = 200,
	.stripe_threshold = 1 << 20,
	.rendezvous_threshold = BOLT_RENDEZVOUS_THRESHOLD,
	.bounce_size = BOLT_BOUNCE_SIZE,
	.bounce_threshold = BOLT_BOUNCE_THRESHOLD,
	.unexpected_limit = BOLT_UNEXPECTED_LIMIT,
	.unexpected_endpoint_limit = BOLT_UNEXPECTED_ENDPOINT_LIMIT,
	.side_channel_pending = BOLT_SIDE_CHANNEL_PENDING,
	.side_channel_pending_per_source = BOLT_SIDE_CHANNEL_PENDING_PER_SOURCE,
	.receive_grants = BOLT_RECEIVE_GRANTS,
	.collective_ring_threshold = -1,
	.collective_doubling_members = -1,
	.collective_segment_size = -1,
	.collective_lanes = -1,
	.collective_rendezvous_threshold = BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD,
	.collective_pull = -1,
	.collective_grants = true,
	.collective_yield = "auto",
	.share_queue_pairs = true,
};

static enum fi_param_type bolt_param_fi_type(enum bolt_param_kind kind)
{
	switch (kind) {
	case BOLT_PARAM_STRING: return FI_PARAM_STRING;
	case BOLT_PARAM_INT: return FI_PARAM_INT;
	default: return FI_PARAM_BOOL;
	}
}

static pthread_once_t bolt_params_once = PTHREAD_ONCE_INIT;

static void bolt_params_define_once(void)
{
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(bolt_param_table); i++) {
		const struct bolt_param *param = &bolt_param_table[i];

		fi_param_define(&bolt_prov, param->name,
				bolt_param_fi_type(param->kind), "%s", param->help);
	}
}

void bolt_params_define(void)
{
	pthread_once(&bolt_params_once, bolt_params_define_once);
}

/*
 * libfabric converts integers with strtol and ignores trailing junk; read the
 * raw value too, so that FI_BOLT_GID_INDEX=one is an error and not index 0.
 */
static bool bolt_param_integer_is_wellformed(const struct bolt_param *param)
{
	char variable[64] = "FI_BOLT_";
	size_t length = strlen(variable);
	const char *raw;
	char *end;
	long value;

	for (const char *c = param->name; *c && length + 1 < sizeof(variable); c++)
		variable[length++] = (char) toupper((unsigned char) *c);
	variable[length] = '\0';
	raw = getenv(variable);
	if (!raw)
		return true;
	errno = 0;
	value = strtol(raw, &end, 0);
	/* libfabric keeps an int: a value past it would wrap into the range unseen. */
	return !errno && end != raw && *end == '\0' && value >= param->minimum &&
	       value <= param->maximum;
}

static int bolt_param_read(const struct bolt_param *param, struct bolt_params *params)
{
	void *destination = (char *) params + param->offset;
	char *string_value;
	int int_value;
	int ret;

	switch (param->kind) {
	case BOLT_PARAM_STRING:
		ret = fi_param_get_str(&bolt_prov, param->name, &string_value);
		if (ret)
			return 0;
		if (strlen(string_value) >= param->size) {
			FI_WARN(&bolt_prov, FI_LOG_CORE,
				"FI_BOLT_%s is longer than %zu characters\n",
				param->name, param->size - 1);
			return -FI_EINVAL;
		}
		strcpy(destination, string_value);
		return 0;
	case BOLT_PARAM_INT:
	case BOLT_PARAM_BOOL:
		ret = param->kind == BOLT_PARAM_INT ?
		      fi_param_get_int(&bolt_prov, param->name, &int_value) :
		      fi_param_get_bool(&bolt_prov, param->name, &int_value);
		if (ret == -FI_ENODATA || ret == -FI_ENOENT)
			return 0;
		if (ret || int_value < param->minimum || int_value > param->maximum ||
		    (param->kind == BOLT_PARAM_INT && !bolt_param_integer_is_wellformed(param))) {
			FI_WARN(&bolt_prov, FI_LOG_CORE,
				"FI_BOLT_%s must be %s between %d and %d\n",
				param->name,
				param->kind == BOLT_PARAM_BOOL ? "a boolean" : "an integer",
				param->minimum, param->maximum);
			return -FI_EINVAL;
		}
		if (param->kind == BOLT_PARAM_BOOL)
			*(bool *) destination = int_value != 0;
		else
			*(int *) destination = int_value;
		return 0;
	}
	return -FI_EINVAL;
}

static int bolt_params_check_profile(const struct bolt_params *params)
{
	if (!params->soft_profile[0] || !strcmp(params->soft_profile, "thunderbolt") ||
	    !strcmp(params->soft_profile, "rocev2"))
		return 0;
	FI_WARN(&bolt_prov, FI_LOG_CORE,
		"FI_BOLT_SOFT=%s is not a software device profile: use thunderbolt or rocev2\n",
		params->soft_profile);
	return -FI_EINVAL;
}

/* value, FI_BOLT_<name>, must be one of words (NULL-terminated). */
static int bolt_params_check_word(const char *name, const char *value, const char *const *words)
{
	for (const char *const *word = words; *word; word++)
		if (!strcmp(value, *word))
			return 0;
	FI_WARN(&bolt_prov, FI_LOG_CORE, "FI_BOLT_%s=%s is not one of the values it takes\n",
		name, value);
	return -FI_EINVAL;
}

static int bolt_params_check_words(const struct bolt_params *params)
{
	static const char *const copy_modes[] = { "auto", "cma", "shm", NULL };
	static const char *const yield_modes[] = { "auto", "yes", "no", NULL };

	int ret = bolt_params_check_word("SOFT_COPY", params->soft_copy, copy_modes);

	return ret ? ret : bolt_params_check_word("COLLECTIVE_YIELD", params->collective_yield,
						  yield_modes);
}

int bolt_params_read(struct bolt_params *params)
{
	int ret;

	bolt_params_define();
	*params = bolt_param_defaults;
	for (size_t i = 0; i < BOLT_ARRAY_LENGTH(bolt_param_table); i++) {
		ret = bolt_param_read(&bolt_param_table[i], params);
		if (ret)
			return ret;
	}
	ret = bolt_params_check_profile(params);
	return ret ? ret : bolt_params_check_words(params);
}
