/*
 * bolt_device_advice.c: why bolt has nothing to offer, and what to try. The
 * advice follows the order in which people meet the causes: no verbs
 * library, a library with no device (no driver loaded, or no RDMA hardware at
 * all), then ports that are down or have no GID bolt can use.
 */
#include <stdarg.h>
#include <stdio.h>

#include "device/bolt_device_advice.h"

struct bolt_advice_text {
	char *text;
	size_t size;
	size_t length;
};

/* Appends to the advice; what does not fit is cut, never overrun. */
__attribute__((format(printf, 2, 3)))
static void bolt_advice_add(struct bolt_advice_text *advice, const char *format, ...)
{
	va_list arguments;
	int written;

	if (advice->length + 1 >= advice->size)
		return;
	va_start(arguments, format);
	written = vsnprintf(advice->text + advice->length, advice->size - advice->length, format,
			    arguments);
	va_end(arguments);
	if (written < 0)
		return;
	advice->length += (size_t) written;
	if (advice->length >= advice->size)
		advice->length = advice->size - 1;
}

static void bolt_advice_try_software(struct bolt_advice_text *advice)
{
	bolt_advice_add(advice,
			"  without RDMA hardware, try bolt on its software device: "
			"FI_BOLT_SOFT=thunderbolt (or rocev2)\n");
}

static void bolt_advice_no_device(struct bolt_advice_text *advice, const char *verbs_name)
{
	bolt_advice_add(advice, "no RDMA device: %s lists none\n", verbs_name);
	bolt_advice_add(advice,
			"  `rdma link` lists the kernel's RDMA links; if it shows none, load the "
			"NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...)\n"
			"  or, on plain Ethernet, Soft-RoCE as root: "
			"`modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <interface>`\n");
	bolt_advice_try_software(advice);
}

static void bolt_advice_port(struct bolt_advice_text *advice,
			     const struct bolt_device_report *device,
			     const struct bolt_port_report *port)
{
	bolt_advice_add(advice, "%s port %u: %s\n", device->name, port->port_num,
			port->unusable_reason);
	if (port->gid_status)
		bolt_advice_add(advice,
				"  its GID table (bolt_info shows it) has no entry bolt can use: RoCE "
				"needs an IP address on the port's interface (`ip addr`), "
				"Thunderbolt a link-local one; FI_BOLT_GID_INDEX names an entry by hand\n");
	else
		bolt_advice_add(advice,
				"  bring the link up: the cable, `ip link set <interface> up`; "
				"`rdma link` shows the port's state\n");
}

bool bolt_device_advice(const struct bolt_verbs *verbs, int verbs_status,
			const struct bolt_device_report *devices, int count,
			char *text, size_t size)
{
	struct bolt_advice_text advice = { .text = text, .size = size, .length = 0 };

	if (size)
		text[0] = '\0';
	for (int i = 0; i < count; i++)
		for (int j = 0; j < devices[i].port_count; j++)
			if (devices[i].ports[j].usable)
				return false;
	if (verbs_status) {
		bolt_advice_add(&advice,
				"no verbs library: %s could not be opened (Debian: package libibverbs1; "
				"FI_BOLT_VERBS_LIBRARY names another)\n", verbs->name);
		bolt_advice_try_software(&advice);
	} else if (count == 0) {
		bolt_advice_no_device(&advice, verbs->name);
	} else {
		for (int i = 0; i < count; i++)
			for (int j = 0; j < devices[i].port_count; j++)
				bolt_advice_port(&advice, &devices[i], &devices[i].ports[j]);
		if (!verbs->software)
			bolt_advice_try_software(&advice);
	}
	return true;
}
