#!/bin/sh
# bolt_bench_compare.sh: the software RDMA device's raw figures
# (util/softrdma_bench) and what applications get through libfabric
# (util/bolt_bench: bolt, shm, tcp) for one profile in one run, then one
# summary line per performance target with the measured numbers:
#   bandwidth: bolt fi_write, and fi_send, >= 90 % of raw RDMA write, at every size from 64 KiB;
#   latency:   bolt 8 B fi_send <= raw 8 B SEND/RECV + 2 us.
# Run it from the build directory, or name that with --build.
set -u

usage() {
	echo "usage: $0 [--profile thunderbolt|rocev2] [--build DIR] [--providers bolt,shm,tcp]"
	echo "       [--bolt-bench PATH] [-- more bolt_bench options]"
}

profile=thunderbolt
build=$(pwd)
providers=bolt,shm,tcp
bolt_bench=
while [ $# -gt 0 ]; do
	case "$1" in
	--profile) profile=${2:?}; shift 2 ;;
	--build) build=${2:?}; shift 2 ;;
	--providers) providers=${2:?}; shift 2 ;;
	--bolt-bench) bolt_bench=${2:?}; shift 2 ;;
	--) shift; break ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case "$profile" in
thunderbolt|rocev2) ;;
*) echo "$0: unknown profile $profile" >&2; exit 2 ;;
esac
build=$(cd "$build" && pwd) || exit 2
bolt_bench=${bolt_bench:-$build/util/bolt_bench}
softrdma_bench=$build/util/softrdma_bench
for program in "$softrdma_bench" "$bolt_bench"; do
	[ -x "$program" ] || { echo "$0: $program is not built" >&2; exit 2; }
done
[ -f "$build/.libs/libbolt-fi.so" ] || { echo "$0: no $build/.libs/libbolt-fi.so" >&2; exit 2; }

namespace="bolt-bench-$$"
raw_output=$(mktemp) && bolt_output=$(mktemp) && status_file=$(mktemp) || exit 2
cleanup() {
	rm -f "$raw_output" "$bolt_output" "$status_file" /dev/shm/bolt-softrdma-*-"$namespace"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# libfabric must see every provider asked for, and bolt only on the software device.
unset FI_PROVIDER
FI_PROVIDER_PATH="$build/.libs"
FI_BOLT_SOFT=$profile
FI_BOLT_SOFT_NAMESPACE=$namespace
export FI_PROVIDER_PATH FI_BOLT_SOFT FI_BOLT_SOFT_NAMESPACE

load() { cut -d' ' -f1-3 /proc/loadavg; }

# run OUTPUT COMMAND...: shows the command's output as it comes, keeps it in
# OUTPUT, and returns the command's status (sh has no pipefail).
run() {
	output=$1
	shift
	{ "$@"; echo $? >"$status_file"; } | tee "$output"
	return "$(cat "$status_file")"
}

echo "# bolt_bench_compare: profile $profile, build $build, namespace $namespace"
echo "# $(nproc) cores, load average before: $(load) (figures are disturbed if other jobs ran)"
echo "## raw software device: $softrdma_bench $profile"
run "$raw_output" "$softrdma_bench" "$profile"
raw_status=$?
echo "## through libfabric: $bolt_bench -p $providers $*"
run "$bolt_output" "$bolt_bench" -p "$providers" "$@"
bolt_status=$?
echo "# load average after: $(load)"

# Both outputs, tagged, into one awk program that prints the summary lines.
{
	awk '/write GB\/s/ { table = "bw"; next }
	     /latency us/ { table = "lat"; next }
	     /^#/ || NF < 3 { next }
	     { print "raw", table, $1, $3 }' "$raw_output"
	awk '/^# bolt_bench: provider/ { provider = $4; next }
	     /send_GB\/s/ { table = "bw"; next }
	     /latency_us/ { table = "lat"; next }
	     /^#/ || provider != "bolt" { next }
	     table == "bw" && NF == 5 { print "bolt", "bw", $1, $4, $3, $5 }
	     table == "lat" && NF == 4 { print "bolt", "lat", $1, $3, $4 }' "$bolt_output"
} | awk -v profile="$profile" '
function human(size) {
	if (size >= 1048576) return size / 1048576 "M"
	if (size >= 1024) return size / 1024 "K"
	return size
}
$1 == "raw" && $2 == "bw" { raw_bw[$3] = $4; next }
$1 == "raw" && $2 == "lat" { raw_lat[$3] = $4; next }
$1 == "bolt" && $2 == "bw" { write_bw[$3] = $4; send_bw[$3] = $5; wrong += $6; checked += 2; next }
$1 == "bolt" && $2 == "lat" { lat[$3] = $4; wrong += $5; checked += 2; next }
END {
	print "# targets (profile " profile ")"
	list = ""; send_list = ""; lowest = -1; send_lowest = -1; compared = 0
	for (size = 65536; size <= 67108864; size *= 4) {
		if (!(size in raw_bw) || !(size in write_bw) || raw_bw[size] <= 0)
			continue
		ratio = write_bw[size] / raw_bw[size]
		send_ratio = send_bw[size] / raw_bw[size]
		list = list sprintf("%s%s %.2f/%.2f (%.0f%%)", compared ? ", " : "", human(size),
				    write_bw[size], raw_bw[size], 100 * ratio)
		send_list = send_list sprintf("%s%s %.0f%%", compared ? ", " : "", human(size),
					      100 * send_ratio)
		if (lowest < 0 || ratio < lowest) { lowest = ratio; lowest_size = size }
		if (send_lowest < 0 || send_ratio < send_lowest) {
			send_lowest = send_ratio; send_lowest_size = size
		}
		compared++
	}
	if (compared) {
		printf("bandwidth target (bolt fi_write >= 90%% of raw RDMA write, 64 KiB and up): " \
		       "bolt/raw GB/s %s; lowest %.0f%% at %s: %s\n",
		       list, 100 * lowest, human(lowest_size), lowest >= 0.9 ? "MET" : "NOT MET")
		printf("bandwidth target (bolt fi_send >= 90%% of raw RDMA write, 64 KiB and up): " \
		       "%s; lowest %.0f%% at %s: %s\n", send_list, 100 * send_lowest,
		       human(send_lowest_size), send_lowest >= 0.9 ? "MET" : "NOT MET")
	} else
		print "bandwidth target: NOT MEASURED (no bolt or raw bandwidth rows from 64 KiB)"
	if ((8 in lat) && (8 in raw_lat))
		printf("latency target (bolt 8 B <= raw 8 B + 2 us): bolt fi_send %.2f us, raw " \
		       "SEND/RECV %.2f us, limit %.2f us: %s\n", lat[8], raw_lat[8], raw_lat[8] + 2,
		       lat[8] <= raw_lat[8] + 2 ? "MET" : "NOT MET")
	else
		print "latency target: NOT MEASURED (no 8 B latency row from bolt or raw)"
	printf("data check: %d wrong of %d checked bolt transfers\n", wrong, checked)
}'

[ "$raw_status" -eq 0 ] && [ "$bolt_status" -eq 0 ]
