#!/bin/sh
# check_rxe.sh BUILD_DIRECTORY: bolt on a real kernel verbs device. Runs inside
# the virtual machine of rxe_run.sh, where rxe0 is Linux's Soft-RoCE on veth0
# (guest_init.sh), against a plain build of the host's tree:
#   - bolt_info chooses rxe0's IPv4-mapped RoCE v2 GID and says why;
#   - Debian's fi_pingpong between two processes over bolt on rxe0;
#   - what the software device's rocev2 profile copies of rxe, on rxe itself
#     (test_rxe_semantics, BOLT_TEST_DEVICE=system);
#   - bolt's endpoint tests (messages, RMA with FI_MR_ENDPOINT, the API,
#     liveness) on the system device (BOLT_TEST_DEVICE=system);
#   - perftest's ib_write_bw and bolt_bench's fi_write bandwidth at the same
#     message size, in the same boot, printed side by side.
# Ends with "rxe: N passed, N failed" and exits non-zero on a failure.
# BOLT_RXE_QUICK=1 runs a reduced set (CI): fewer fi_pingpong sizes and a
# shorter benchmark.
set -u
build=$(cd "${1:?usage: check_rxe.sh BUILD_DIRECTORY}" && pwd)
quick=${BOLT_RXE_QUICK:-0}
export FI_PROVIDER_PATH="$build/.libs"
unset FI_BOLT_SOFT
. "$(dirname "$0")/tally.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The index of rxe0's IPv4-mapped GID, read from the kernel's own table.
ipv4_mapped_index() {
	for gid in /sys/class/infiniband/rxe0/ports/1/gids/*; do
		grep -q '^0000:0000:0000:0000:0000:ffff:' "$gid" 2>/dev/null && basename "$gid" && return
	done
}

check_bolt_info() {
	index=$(ipv4_mapped_index)
	"$build/util/bolt_info" >"$scratch/bolt_info" 2>&1
	status=$?
	chosen=$(sed -n 's/.*bolt uses GID\[\([0-9]*\)\] as sgid_index: \(.*\)/\1 \2/p' "$scratch/bolt_info")
	if [ $status -eq 0 ] && [ -n "$index" ] &&
	   [ "$chosen" = "$index IPv4-mapped RoCE v2 GID, routable between hosts" ] &&
	   grep -q "GID\[ *$index\] ::ffff:.*IPv4-mapped *RoCE v2 *<- chosen" "$scratch/bolt_info"; then
		pass "bolt_info chooses rxe0's IPv4-mapped GID $index: ${chosen#* }"
	else
		fail "bolt_info on rxe0 (status $status, IPv4-mapped GID index '$index', chose '$chosen')"
		cat "$scratch/bolt_info"
	fi
}

# pingpong SIZE ITERATIONS: fi_pingpong server and client over bolt on rxe0.
pingpong() {
	port=$((30000 + $1 % 20000))
	timeout 300 fi_pingpong -p bolt -e rdm -I "$2" -S "$1" -B "$port" >"$scratch/server" 2>&1 &
	server=$!
	sleep 1
	timeout 300 fi_pingpong -p bolt -e rdm -I "$2" -S "$1" -P "$port" 127.0.0.1 \
		>"$scratch/client" 2>&1
	client_status=$?
	wait $server
	server_status=$?
	row=$(awk -v size="$1" '$1 ~ /^[0-9]/ && $2 == '"$2"' { print }' "$scratch/client" | tail -n 1)
	if [ $client_status -eq 0 ] && [ $server_status -eq 0 ] && [ -n "$row" ]; then
		pass "fi_pingpong -p bolt on rxe0, $1 bytes: $(echo "$row" | awk '{ print $7 " us/xfer, " $6 " MB/s" }')"
	else
		fail "fi_pingpong -p bolt on rxe0, $1 bytes: client $client_status, server $server_status"
		cat "$scratch/client" "$scratch/server"
	fi
}

# criterion TEST: one of bolt's Criterion programs on the system device.
# criterion PROGRAM [criterion options]: a test program of the build on rxe0.
criterion() {
	name=$(basename "$1")
	program=$1
	shift
	BOLT_TEST_DEVICE=system timeout 600 "$build/$program" --jobs 1 "$@" >"$scratch/$name" 2>&1
	status=$?
	synthesis=$(grep -a 'Synthesis:' "$scratch/$name" | tail -n 1)
	# A program whose every test skipped tested nothing on rxe0: that is a failure here.
	if [ $status -eq 0 ] && echo "$synthesis" | grep -q 'Tested: [1-9][0-9]* |.*Failing: 0 | Crashing: 0'; then
		pass "$program $* on rxe0: ${synthesis#*Synthesis: }"
	else
		fail "$program $* on rxe0 (status $status)"
		cat "$scratch/$name"
	fi
}

# write_bandwidth SIZE: ib_write_bw, then bolt_bench's fi_write, at SIZE bytes.
write_bandwidth() {
	iterations=$([ "$quick" = 1 ] && echo 200 || echo 1000)
	index=$(ipv4_mapped_index)
	timeout 300 ib_write_bw -d rxe0 -x "$index" -s "$1" -n "$iterations" -F >"$scratch/perftest_server" 2>&1 &
	server=$!
	sleep 1
	timeout 300 ib_write_bw -d rxe0 -x "$index" -s "$1" -n "$iterations" -F 127.0.0.1 \
		>"$scratch/perftest_client" 2>&1
	client_status=$?
	wait $server
	server_status=$?
	# The result row: bytes, iterations, peak, average (MB/s), message rate.
	perftest=$(awk -v size="$1" '$1 == size && NF >= 5 { print $4 }' "$scratch/perftest_client" | tail -n 1)
	if [ $client_status -eq 0 ] && [ $server_status -eq 0 ] && [ -n "$perftest" ]; then
		pass "ib_write_bw on rxe0, $1 bytes: $perftest MiB/s average (perftest's MB/sec)"
	else
		fail "ib_write_bw on rxe0, $1 bytes: client $client_status, server $server_status"
		cat "$scratch/perftest_client" "$scratch/perftest_server"
	fi

	timeout 600 "$build/util/bolt_bench" -p bolt -b "$1" -e "$1" -l 1 --csv >"$scratch/bolt_bench" 2>&1
	status=$?
	# provider,profile,fabric,domain,test,size,iters,send_GB/s,write_GB/s,...; GB/s = 1e9 B/s
	bolt=$(awk -F, -v size="$1" '$1 == "bolt" && $5 == "bandwidth" && $6 == size && $11 == 0 {
		printf "%.1f", $9 * 1e9 / 1048576 }' "$scratch/bolt_bench")
	bolt_send=$(awk -F, -v size="$1" '$1 == "bolt" && $5 == "bandwidth" && $6 == size && $11 == 0 {
		printf "%.1f", $8 * 1e9 / 1048576 }' "$scratch/bolt_bench")
	if [ $status -eq 0 ] && [ -n "$bolt" ]; then
		pass "bolt_bench on rxe0, $1 bytes: fi_write $bolt MiB/s (fi_send $bolt_send MiB/s)"
	else
		fail "bolt_bench fi_write on rxe0, $1 bytes (status $status)"
		cat "$scratch/bolt_bench"
	fi
	echo "rxe write bandwidth, $1 bytes, same boot (MiB/s): ib_write_bw ${perftest:-?}, bolt fi_write ${bolt:-?}"
}

echo "== bolt on Soft-RoCE (rdma_rxe, kernel $(uname -r)) =="
check_bolt_info
if [ "$quick" = 1 ]; then
	pingpong 64 100
	pingpong 1048576 10
else
	pingpong 64 200
	pingpong 65536 50
	pingpong 1048576 20
fi
criterion test/rxe/test_rxe_semantics
criterion test/endpoint/test_msg
criterion test/endpoint/test_rma
criterion test/endpoint/test_direct_write
criterion test/endpoint/test_api
criterion test/endpoint/test_liveness
criterion test/endpoint/test_link --filter 'links/*rocev2'
criterion test/collective/test_collective --filter 'collective_focused/*'
# Broadcasts whose members read the root's buffer by RDMA (RC), and the same written
# (into receives granted ahead), and a granted receive a request takes all the same.
criterion test/collective/test_collective --filter 'collective/rc_[mb]*'
criterion test/collective/test_collective --filter 'collective/rc_granted_receive*'
criterion test/collective/test_collective_failure
write_bandwidth 1048576
tally_end rxe
