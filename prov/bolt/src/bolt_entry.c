/*
 * bolt_entry.c: the only symbol libbolt-fi.so exports. Kept apart from the
 * provider object so that tools and tests can link the provider's code
 * without exporting an entry point of their own.
 */
#include "bolt.h"

FI_EXT_INI
{
	bolt_params_define();
	return &bolt_prov;
}
