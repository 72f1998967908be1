/*
 * bolt_info: reports every RDMA device and port bolt sees (state, transport,
 * GID table and the GID bolt chooses and why, limits and what bolt does about
 * them), for people by default and as JSON with --json.
 */
#include <stdio.h>
#include <string.h>

#include "bolt.h"
#include "device/bolt_device.h"
#include "device/bolt_device_advice.h"
#include "device/bolt_device_probe.h"
#include "verbs/bolt_verbs.h"

static const char *bolt_info_mtu_text(enum ibv_mtu mtu)
{
	static const char *const names[] = { "?", "256", "512", "1024", "2048", "4096" };

	return (unsigned) mtu < BOLT_ARRAY_LENGTH(names) ? names[mtu] : "?";
}

static const char *bolt_info_qp_types_text(const struct bolt_device_report *device)
{
	if (!device->qp_types_probed)
		return "unknown (probe failed)";
	if (device->rc_supported && device->uc_supported)
		return "RC and UC";
	if (device->uc_supported)
		return "UC only (RC refused): bolt detects loss and dead peers itself";
	if (device->rc_supported)
		return "RC only (UC refused)";
	return "neither RC nor UC: bolt cannot use this device";
}

static const char *bolt_info_data_path_text(const struct bolt_device_report *device)
{
	if (!device->rdma_write_probed)
		return "unknown: RDMA write could not be probed";
	if (device->rdma_write_supported)
		return "RDMA write for bulk data";
	return "send-only: pipelined SEND/RECV through slab buffers";
}

/* The probes need an open device and a usable port; a device without one is left unprobed. */
static void bolt_info_probe(struct bolt_verbs *verbs, struct bolt_device_report *device)
{
	struct bolt_device_handle handle;
	const struct bolt_port_report *port = NULL;

	for (int i = 0; i < device->port_count && !port; i++)
		if (device->ports[i].usable)
			port = &device->ports[i];
	if (bolt_device_handle_open(verbs, device->name, 4, &handle))
		return;
	bolt_device_probe_qp_types(&handle, device);
	if (port && (device->rc_supported || device->uc_supported))
		bolt_device_probe_rdma_write(&handle, device, port,
					     device->rc_supported ? IBV_QPT_RC : IBV_QPT_UC);
	bolt_device_handle_close(&handle);
}

/* Real tables are mostly empty (rxe: 1024 entries, 2 in use): trailing zeros take one line. */
static void bolt_info_print_gid_table(const struct bolt_port_report *port)
{
	char text[BOLT_GID_TEXT_SIZE];
	int shown = port->gid_count;

	while (shown > 0 && bolt_gid_kind(&port->gids[shown - 1].gid) == BOLT_GID_KIND_ZERO)
		shown--;
	for (int index = 0; index < shown; index++) {
		const struct bolt_gid_entry *entry = &port->gids[index];
		enum bolt_gid_kind kind = bolt_gid_kind(&entry->gid);
		bool chosen = !port->gid_status && port->gid_choice.index == index;

		bolt_gid_format(&entry->gid, text, sizeof(text));
		printf("      GID[%2d] %-40s %-12s %-8s%s\n", index, text, bolt_gid_kind_name(kind),
		       kind == BOLT_GID_KIND_ZERO ? "" : bolt_gid_type_name(entry->type),
		       chosen ? "  <- chosen" : "");
	}
	if (shown < port->gid_count)
		printf("      GID[%d..%d] empty\n", shown, port->gid_count - 1);
	if (port->gid_count < port->attr.gid_tbl_len)
		printf("      (the table has %d entries; bolt reads the first %d)\n",
		       port->attr.gid_tbl_len, port->gid_count);
}

static void bolt_info_print_port(const struct bolt_port_report *port)
{
	printf("    port %u: %s, link layer %s, MTU %s active / %s max\n", port->port_num,
	       bolt_device_port_state_name(port->attr.state),
	       bolt_device_link_layer_name(port->attr.link_layer),
	       bolt_info_mtu_text(port->attr.active_mtu), bolt_info_mtu_text(port->attr.max_mtu));
	bolt_info_print_gid_table(port);
	if (!port->gid_status)
		printf("      bolt uses GID[%d] as sgid_index: %s\n", port->gid_choice.index,
		       bolt_gid_reason_text(port->gid_choice.reason));
	printf("      %s\n", port->usable ? "usable: one libfabric domain" : port->unusable_reason);
}

static void bolt_info_print_device(const struct bolt_device_report *device, int data_rails)
{
	struct bolt_device_budget budget;

	bolt_device_budget(device, &budget);
	printf("device %s\n", device->name);
	printf("  transport  %s (%d)\n", bolt_device_transport_name(device->transport_type),
	       device->transport_type);
	printf("  limits     max_mr %d, max_qp %d, max_qp_wr %d, max_sge %d\n",
	       device->attr.max_mr, device->attr.max_qp, device->attr.max_qp_wr,
	       device->attr.max_sge);
	printf("  QP types   %s\n", bolt_info_qp_types_text(device));
	printf("  data path  %s (%s)\n", bolt_info_data_path_text(device),
	       device->rdma_write_reason[0] ? device->rdma_write_reason : "not probed");
	printf("  bolt       %d MRs for its slab pools, %d for user registrations (a cache beyond that)\n",
	       budget.slab_mr_count, budget.user_mr_budget);
	printf("             at most %d QPs: one per connection to a peer, and data rails\n",
	       budget.qp_budget);
	printf("             %d data rails per connection for large writes%s\n",
	       bolt_device_data_rails(&budget, data_rails),
	       data_rails >= 0 ? " (FI_BOLT_DATA_RAILS)" :
	       budget.qp_budget >= BOLT_DEVICE_DATA_RAIL_MIN_QPS ? " (queue pairs to spare)" :
	       " (few queue pairs: connections need them)");
	printf("             %d work requests in flight per queue (the device reports %d)\n",
	       budget.queue_depth, device->attr.max_qp_wr);
	for (int i = 0; i < device->port_count; i++)
		bolt_info_print_port(&device->ports[i]);
}

static void bolt_info_json_port(const struct bolt_port_report *port, bool last)
{
	char text[BOLT_GID_TEXT_SIZE];

	printf("      {\"port\": %u, \"state\": \"%s\", \"link_layer\": \"%s\", "
	       "\"active_mtu\": %s, \"max_mtu\": %s, \"usable\": %s,\n",
	       port->port_num, bolt_device_port_state_name(port->attr.state),
	       bolt_device_link_layer_name(port->attr.link_layer),
	       bolt_info_mtu_text(port->attr.active_mtu), bolt_info_mtu_text(port->attr.max_mtu),
	       port->usable ? "true" : "false");
	printf("       \"unusable_reason\": \"%s\",\n", port->usable ? "" : port->unusable_reason);
	if (port->gid_status)
		printf("       \"chosen_gid_index\": null, \"chosen_gid_reason\": null,\n");
	else
		printf("       \"chosen_gid_index\": %d, \"chosen_gid_reason\": \"%s\",\n",
		       port->gid_choice.index, bolt_gid_reason_text(port->gid_choice.reason));
	printf("       \"gids\": [");
	for (int index = 0; index < port->gid_count; index++) {
		bolt_gid_format(&port->gids[index].gid, text, sizeof(text));
		printf("%s\n         {\"index\": %d, \"gid\": \"%s\", \"kind\": \"%s\", \"type\": \"%s\"}",
		       index ? "," : "", index, text,
		       bolt_gid_kind_name(bolt_gid_kind(&port->gids[index].gid)),
		       bolt_gid_type_name(port->gids[index].type));
	}
	printf("]}%s\n", last ? "" : ",");
}

static void bolt_info_json_device(const struct bolt_device_report *device, int data_rails, bool last)
{
	struct bolt_device_budget budget;

	bolt_device_budget(device, &budget);
	printf("    {\"name\": \"%s\", \"transport\": \"%s\", \"transport_type\": %d,\n",
	       device->name, bolt_device_transport_name(device->transport_type),
	       device->transport_type);
	printf("     \"max_mr\": %d, \"max_qp\": %d, \"max_qp_wr\": %d, \"max_sge\": %d,\n",
	       device->attr.max_mr, device->attr.max_qp, device->attr.max_qp_wr,
	       device->attr.max_sge);
	printf("     \"qp_types_probed\": %s, \"rc\": %s, \"uc\": %s,\n",
	       device->qp_types_probed ? "true" : "false",
	       device->rc_supported ? "true" : "false", device->uc_supported ? "true" : "false");
	printf("     \"rdma_write_probed\": %s, \"rdma_write\": %s, \"rdma_write_reason\": \"%s\",\n",
	       device->rdma_write_probed ? "true" : "false",
	       device->rdma_write_supported ? "true" : "false", device->rdma_write_reason);
	printf("     \"bolt\": {\"slab_mrs\": %d, \"user_mr_budget\": %d, \"qp_budget\": %d, "
	       "\"queue_depth\": %d, \"data_rails\": %d},\n", budget.slab_mr_count,
	       budget.user_mr_budget, budget.qp_budget, budget.queue_depth,
	       bolt_device_data_rails(&budget, data_rails));
	printf("     \"ports\": [\n");
	for (int i = 0; i < device->port_count; i++)
		bolt_info_json_port(&device->ports[i], i + 1 == device->port_count);
	printf("     ]}%s\n", last ? "" : ",");
}

/*
 * libfabric offers a provider only to applications that ask for an API version
 * no newer than the one the provider was built against, and a provider built
 * against a newer libfabric may not load at all: bolt must be built against
 * the libfabric it runs with. Empty when the two agree.
 */
static const char *bolt_info_version_warning(char *text, size_t size)
{
	uint32_t running = fi_version();

	text[0] = '\0';
	if (FI_VERSION_LT(BOLT_FI_VERSION, running))
		snprintf(text, size, "applications that ask for FI_VERSION(%u,%u) do not see bolt: "
			 "build bolt against libfabric %u.%u", FI_MAJOR(running), FI_MINOR(running),
			 FI_MAJOR(running), FI_MINOR(running));
	else if (FI_VERSION_LT(running, BOLT_FI_VERSION))
		snprintf(text, size, "libfabric %u.%u may not load a bolt built against %u.%u: "
			 "build bolt against libfabric %u.%u", FI_MAJOR(running), FI_MINOR(running),
			 FI_MAJOR(BOLT_FI_VERSION), FI_MINOR(BOLT_FI_VERSION), FI_MAJOR(running),
			 FI_MINOR(running));
	return text;
}

static void bolt_info_print_versions(void)
{
	char warning[256];

	printf("bolt_info: libfabric %u.%u at run time, bolt built against %u.%u\n",
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()), FI_MAJOR(BOLT_FI_VERSION),
	       FI_MINOR(BOLT_FI_VERSION));
	if (bolt_info_version_warning(warning, sizeof(warning))[0])
		printf("bolt_info: warning: %s\n", warning);
}

static void bolt_info_json(const struct bolt_verbs *verbs, const struct bolt_device_report *devices,
			   int count, int data_rails)
{
	char warning[256];

	printf("{\n  \"libfabric\": \"%u.%u\", \"built_against\": \"%u.%u\",\n"
	       "  \"version_warning\": \"%s\",\n",
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()), FI_MAJOR(BOLT_FI_VERSION),
	       FI_MINOR(BOLT_FI_VERSION), bolt_info_version_warning(warning, sizeof(warning)));
	printf("  \"verbs\": \"%s\",\n  \"devices\": [\n", verbs ? verbs->name : "");
	for (int i = 0; i < count; i++)
		bolt_info_json_device(&devices[i], data_rails, i + 1 == count);
	printf("  ]\n}\n");
}

/* Where nothing is usable: why, and what to try. verbs_status: bolt_verbs_open's. */
static void bolt_info_print_advice(const struct bolt_verbs *verbs, int verbs_status,
				   const struct bolt_device_report *devices, int count)
{
	char advice[BOLT_DEVICE_ADVICE_SIZE];

	if (bolt_device_advice(verbs, verbs_status, devices, count, advice, sizeof(advice)))
		printf("bolt can use nothing here:\n%s", advice);
}

static void bolt_info_usage(FILE *stream)
{
	fprintf(stream,
		"usage: bolt_info [--json]\n"
		"Reports the RDMA devices bolt sees, the GID it chooses on each port and why,\n"
		"and the limits that shape what it does. FI_BOLT_SOFT=thunderbolt or rocev2\n"
		"shows the software device instead of the system's verbs devices.\n");
}

/* Whether the side channel is authenticated: the job key's source, never the key. */
static void bolt_info_print_side_channel(const struct bolt_params *params)
{
	if (params->job_key_file[0])
		printf("side channel: authenticated, job key from the file %s\n",
		       params->job_key_file);
	else if (params->job_key[0])
		printf("side channel: authenticated, job key from FI_BOLT_JOB_KEY\n");
	else
		printf("side channel: NOT authenticated (no FI_BOLT_JOB_KEY or FI_BOLT_JOB_KEY_FILE: "
		       "only the user id keeps jobs apart, as with libfabric's tcp provider)\n");
}

int main(int argc, char **argv)
{
	struct bolt_device_report *devices = NULL;
	struct bolt_params params;
	struct bolt_verbs verbs;
	bool json = false;
	int count = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			bolt_info_usage(stdout);
			return 0;
		} else {
			bolt_info_usage(stderr);
			return 2;
		}
	}
	if (bolt_params_read(&params)) {
		fprintf(stderr, "bolt_info: a FI_BOLT_ parameter is invalid (FI_LOG_LEVEL=warn says which)\n");
		return 1;
	}
	if (!json)
		bolt_info_print_versions();
	ret = bolt_verbs_open(&params, &verbs);
	if (ret == -FI_ENODATA) {
		if (json)
			bolt_info_json(NULL, NULL, 0, params.data_rails);
		else
			bolt_info_print_advice(&verbs, ret, NULL, 0);
		return 0;
	}
	if (ret) {
		fprintf(stderr, "bolt_info: cannot open verbs: %s\n", fi_strerror(-ret));
		return 1;
	}
	ret = bolt_device_reports_create(&verbs, params.gid_index, &devices, &count);
	if (ret) {
		fprintf(stderr, "bolt_info: cannot read devices: %s\n", fi_strerror(-ret));
		bolt_verbs_close(&verbs);
		return 1;
	}
	for (int i = 0; i < count; i++)
		bolt_info_probe(&verbs, &devices[i]);
	if (json) {
		bolt_info_json(&verbs, devices, count, params.data_rails);
	} else {
		printf("bolt_info: verbs from %s, %d device%s\n", verbs.name, count,
		       count == 1 ? "" : "s");
		bolt_info_print_side_channel(&params);
		for (int i = 0; i < count; i++)
			bolt_info_print_device(&devices[i], params.data_rails);
		bolt_info_print_advice(&verbs, 0, devices, count);
	}
	bolt_device_reports_destroy(devices);
	bolt_verbs_close(&verbs);
	return 0;
}
