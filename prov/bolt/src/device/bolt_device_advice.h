/*
 * bolt_device_advice.h: when bolt finds nothing it can use (no verbs
 * library, no device, no port that is up with a usable GID), why, and what
 * to try next. bolt_info prints it; fi_getinfo logs it when it offers nothing.
 */
#ifndef BOLT_DEVICE_ADVICE_H
#define BOLT_DEVICE_ADVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "device/bolt_device.h"

/* Room for the advice on a few devices' ports; longer advice is cut. */
#define BOLT_DEVICE_ADVICE_SIZE 2048

/*
 * Writes into text, as lines ending in '\n', why none of the count devices
 * has a usable port and what to try. verbs_status is what bolt_verbs_open
 * returned into verbs (-FI_ENODATA: no library; verbs->name is the one
 * tried). Returns false, with text empty, when a port is usable.
 */
bool bolt_device_advice(const struct bolt_verbs *verbs, int verbs_status,
			const struct bolt_device_report *devices, int count,
			char *text, size_t size);

#endif /* BOLT_DEVICE_ADVICE_H */
