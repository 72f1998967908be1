/*
 * bolt_fi_compat.h: the libfabric values that libfabric 2.x deprecates (each
 * use warns, so -Werror builds fail) but that bolt still honours, because
 * applications asking for older API versions pass them. Their values are
 * fixed by libfabric's ABI; under libfabric 1.x the names are libfabric's own.
 * BOLT_DEPRECATED_CALLS_BEGIN/END enclose the calls of functions 2.x
 * deprecates (poll sets, fi_av_bind) that bolt implements and tests.
 */
#ifndef BOLT_FI_COMPAT_H
#define BOLT_FI_COMPAT_H

#include <rdma/fabric.h>

#if FI_MAJOR_VERSION >= 2
#define BOLT_MR_UNSPEC 0
#define BOLT_MR_BASIC (1 << 0)
#define BOLT_MR_SCALABLE (1 << 1)
#define BOLT_ORDER_NONE 0ULL
#define BOLT_ORDER_STRICT 0x1FFULL
#define BOLT_DEPRECATED_CALLS_BEGIN \
	_Pragma("GCC diagnostic push") \
	_Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define BOLT_DEPRECATED_CALLS_END _Pragma("GCC diagnostic pop")
#else
#define BOLT_MR_UNSPEC FI_MR_UNSPEC
#define BOLT_MR_BASIC FI_MR_BASIC
#define BOLT_MR_SCALABLE FI_MR_SCALABLE
#define BOLT_ORDER_NONE FI_ORDER_NONE
#define BOLT_ORDER_STRICT FI_ORDER_STRICT
#define BOLT_DEPRECATED_CALLS_BEGIN
#define BOLT_DEPRECATED_CALLS_END
#endif

#endif /* BOLT_FI_COMPAT_H */
