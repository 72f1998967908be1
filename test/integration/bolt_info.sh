#!/bin/sh
# bolt_info.sh: bolt_info reports the software device as the real devices
# would be reported: the GID it chooses and why on each profile, the limits,
# QP types and data path, data rails, the FI_BOLT_GID_INDEX override, the
# libfabric version it runs against and the one bolt was built with (the same
# here: the tests run with the libfabric bolt is built against), JSON output;
# and where nothing is usable, why and what to try.
set -u
tool="$(pwd)/util/bolt_info"
namespace="bolt-info-$$"
failures=0

# expect DESCRIPTION PATTERN [ENVIRONMENT...]: bolt_info's output matches PATTERN
expect() {
	description=$1
	pattern=$2
	shift 2
	if env FI_BOLT_SOFT_NAMESPACE="$namespace" "$@" "$tool" ${json:-} >"output.$$" 2>&1 &&
	   grep -Eq -- "$pattern" "output.$$"; then
		echo "ok: $description"
	else
		echo "FAILED: $description (no match for: $pattern)"
		cat "output.$$"
		failures=$((failures + 1))
	fi
}

# expect_not DESCRIPTION PATTERN [ENVIRONMENT...]: bolt_info runs and its output does not match
expect_not() {
	description=$1
	pattern=$2
	shift 2
	if env FI_BOLT_SOFT_NAMESPACE="$namespace" "$@" "$tool" >"output.$$" 2>&1 &&
	   ! grep -Eq -- "$pattern" "output.$$"; then
		echo "ok: $description"
	else
		echo "FAILED: $description (matched: $pattern)"
		cat "output.$$"
		failures=$((failures + 1))
	fi
}

# The API version of the libfabric fi_info (and so bolt_info) runs with.
running=$(fi_info --version | sed -n 's/^libfabric api: *//p')

json=
expect "libfabric versions: running and built against" \
	"^bolt_info: libfabric $running at run time, bolt built against $running\$" FI_BOLT_SOFT=thunderbolt
expect "thunderbolt transport" 'transport +Thunderbolt \(100\)' FI_BOLT_SOFT=thunderbolt
expect "thunderbolt limits" 'max_mr 100, max_qp 10' FI_BOLT_SOFT=thunderbolt
expect "thunderbolt refuses RC" 'UC only \(RC refused\)' FI_BOLT_SOFT=thunderbolt
expect "thunderbolt chooses link-local GID 1" 'GID\[ 1\] fe80:.*link-local.*<- chosen' FI_BOLT_SOFT=thunderbolt
expect "the reason is given" 'bolt uses GID\[1\] as sgid_index: no IPv4-mapped GID' FI_BOLT_SOFT=thunderbolt
expect "thunderbolt queue depth" '32 work requests in flight per queue' FI_BOLT_SOFT=thunderbolt
expect "rocev2 chooses IPv4-mapped RoCE v2" 'GID\[ 1\] ::ffff:.*IPv4-mapped.*RoCE v2.*<- chosen' FI_BOLT_SOFT=rocev2
expect "rocev2 has RC" 'QP types +RC and UC' FI_BOLT_SOFT=rocev2
expect "FI_BOLT_GID_INDEX overrides" 'bolt uses GID\[0\] as sgid_index: FI_BOLT_GID_INDEX' \
	FI_BOLT_SOFT=rocev2 FI_BOLT_GID_INDEX=0
expect "a zero GID cannot be forced" 'FI_BOLT_GID_INDEX=3 names no usable GID' \
	FI_BOLT_SOFT=thunderbolt FI_BOLT_GID_INDEX=3
expect "RDMA write found by probing" 'data path +RDMA write' FI_BOLT_SOFT=thunderbolt
expect "send-only found by probing" 'data path +send-only' FI_BOLT_SOFT=thunderbolt FI_BOLT_SOFT_SEND_ONLY=1
expect "no verbs library: says so" 'no verbs library: /nonexistent.so could not be opened' \
	FI_BOLT_VERBS_LIBRARY=/nonexistent.so
expect "no verbs library: suggests the software device" 'try bolt on its software device: FI_BOLT_SOFT=thunderbolt' \
	FI_BOLT_VERBS_LIBRARY=/nonexistent.so
expect "no usable GID: says which port and why" 'rdma_en0 port 1: FI_BOLT_GID_INDEX=3 names no usable GID' \
	FI_BOLT_SOFT=thunderbolt FI_BOLT_GID_INDEX=3
expect "no usable GID: says what to try" 'needs an IP address.*FI_BOLT_GID_INDEX names an entry' \
	FI_BOLT_SOFT=thunderbolt FI_BOLT_GID_INDEX=3
expect_not "a usable port: no advice" 'bolt can use nothing here' FI_BOLT_SOFT=thunderbolt
# The system's own library with no device: only where the kernel has none.
if [ ! -d /sys/class/infiniband ] || [ -z "$(ls /sys/class/infiniband)" ]; then
	expect "no device: says so" 'no RDMA device: libibverbs.so.1 lists none'
	expect "no device: rdma link" '`rdma link` lists the kernel.s RDMA links'
	expect "no device: the driver, or Soft-RoCE" 'modprobe rdma_rxe'
	expect "no device: suggests the software device" 'FI_BOLT_SOFT=thunderbolt'
fi
expect "thunderbolt: no data rails by default" '0 data rails per connection.*connections need them' \
	FI_BOLT_SOFT=thunderbolt
expect "rocev2: one data rail by default" '1 data rails per connection.*queue pairs to spare' \
	FI_BOLT_SOFT=rocev2
expect "FI_BOLT_DATA_RAILS asks for more" '3 data rails per connection.*FI_BOLT_DATA_RAILS' \
	FI_BOLT_SOFT=thunderbolt FI_BOLT_DATA_RAILS=3
json=--json
expect "json: chosen index" '"chosen_gid_index": 1' FI_BOLT_SOFT=thunderbolt
expect "json: gid kinds" '"kind": "link-local"' FI_BOLT_SOFT=thunderbolt
expect "json: ends as an object" '^}$' FI_BOLT_SOFT=rocev2
expect "json: data rails" '"data_rails": 1' FI_BOLT_SOFT=rocev2
expect "json: libfabric versions, no warning" \
	"\"libfabric\": \"$running\", \"built_against\": \"$running\"" FI_BOLT_SOFT=rocev2
expect "json: no version warning" '"version_warning": ""' FI_BOLT_SOFT=rocev2
rm -f "output.$$" /dev/shm/bolt-softrdma-*-"$namespace"
[ $failures -eq 0 ]
