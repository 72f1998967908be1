#!/bin/sh
# provider_load.sh: libfabric loads libbolt-fi.so from FI_PROVIDER_PATH; fi_info
# lists bolt's domains on the software device, lists the FI_BOLT_ parameters,
# and a machine without devices loads the provider cleanly with none listed,
# warning why only when bolt was asked for.
# The library has no link-time dependency on libibverbs.
set -u
library_dir="$(pwd)/.libs"
library="$library_dir/libbolt-fi.so"
namespace="provider-load-$$"
failures=0

. "$(dirname "$0")/sanitizer_preload.sh"

check() {
	description=$1
	shift
	if "$@"; then
		echo "ok: $description"
	else
		echo "FAILED: $description"
		failures=$((failures + 1))
	fi
}

lists_domain() {
	profile=$1
	domain=$2
	FI_PROVIDER_PATH="$library_dir" FI_BOLT_SOFT=$profile FI_BOLT_SOFT_NAMESPACE=$namespace \
		fi_info -p bolt >"output.$$" 2>&1
	grep -aq "provider: bolt" "output.$$" && grep -aq "domain: $domain" "output.$$"
}

lists_parameters() {
	FI_PROVIDER_PATH="$library_dir" fi_info -e >"output.$$" 2>&1
	for parameter in FI_BOLT_SOFT FI_BOLT_GID_INDEX FI_BOLT_VERBS_LIBRARY FI_BOLT_SOFT_TOPOLOGY; do
		grep -aq "^# $parameter:" "output.$$" || { echo "missing $parameter"; return 1; }
	done
}

no_devices_without_verbs() {
	FI_PROVIDER_PATH="$library_dir" FI_BOLT_VERBS_LIBRARY=/nonexistent/libibverbs.so.1 \
		FI_LOG_LEVEL=warn fi_info -p bolt >"output.$$" 2>&1
	status=$?
	# fi_info exits non-zero with "No data available"; a crash would be >= 128.
	# bolt's only warnings are the ones that say why and what to try.
	[ $status -ne 0 ] && [ $status -lt 128 ] && grep -aq "No data available" "output.$$" &&
		grep -aq "bolt:.*warn.*no verbs library: /nonexistent/libibverbs.so.1" "output.$$" &&
		grep -aq "bolt:.*warn.*FI_BOLT_SOFT=thunderbolt" "output.$$" &&
		! grep -a "bolt:.*warn" "output.$$" | grep -avq "bolt_getinfo_explain_none"
}

# libfabric asking every provider in turn (no -p bolt) hears no warning from bolt.
quiet_when_not_asked() {
	FI_PROVIDER_PATH="$library_dir" FI_BOLT_VERBS_LIBRARY=/nonexistent/libibverbs.so.1 \
		FI_LOG_LEVEL=warn fi_info -p shm >"output.$$" 2>&1
	! grep -aq "bolt:.*warn" "output.$$"
}

# readelf, not ldd: Debian's libfabric.so.1 itself needs libibverbs, and ldd
# lists the dependencies of dependencies.
no_libibverbs_link() {
	readelf -d "$library" | grep -aq 'NEEDED.*libfabric' &&
		! readelf -d "$library" | grep -aq 'NEEDED.*libibverbs'
}

exports_only_entry_point() {
	[ "$(nm -D --defined-only "$library" | awk '$2 == "T" { print $3 }')" = "fi_prov_ini" ]
}

check "fi_info lists the thunderbolt software device" lists_domain thunderbolt rdma_en0
check "fi_info lists the rocev2 software device" lists_domain rocev2 softroce0
check "fi_info -e lists the FI_BOLT_ parameters" lists_parameters
check "no verbs library: loads cleanly, no devices, says what to try" no_devices_without_verbs
check "no verbs library: no warning when bolt was not asked for" quiet_when_not_asked
check "libbolt-fi.so does not link libibverbs" no_libibverbs_link
check "libbolt-fi.so exports only fi_prov_ini" exports_only_entry_point
rm -f "output.$$" /dev/shm/bolt-softrdma-*-"$namespace"
[ $failures -eq 0 ]
