/*
 * bolt_verbs.c: chooses where the verbs table comes from. The software device
 * is used only when asked for, never as a fallback for missing hardware.
 */
#include <string.h>

#include "verbs/bolt_verbs.h"

int bolt_verbs_open(const struct bolt_params *params, struct bolt_verbs *verbs)
{
	memset(verbs, 0, sizeof(*verbs));
	if (params->soft_profile[0])
		return bolt_verbs_soft_open(params, verbs);
	return bolt_verbs_system_open(params->verbs_library, verbs);
}

void bolt_verbs_close(struct bolt_verbs *verbs)
{
	if (verbs->software)
		bolt_verbs_soft_close(verbs);
	else
		bolt_verbs_system_close(verbs);
	memset(verbs, 0, sizeof(*verbs));
}
