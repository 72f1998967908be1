#!/bin/sh
# check_hosts.sh BUILD_DIRECTORY: bolt between two hosts, two virtual machines
# of test/rxe's image joined by a virtual wire (hosts_run.sh), each with
# Linux's Soft-RoCE (rxe0) on its end, run against a plain build of this tree.
# Only link-local addresses are on the wire. In one boot:
#   Thunderbolt-like: IPv6 link-local only, so rxe0's GID table holds fe80::
#   GIDs only, and the side channels listen on the link-local address:
#   bolt_info, fi_pingpong, bolt_bench and bolt's endpoint tests with their
#   peer on the other host (util/bolt_peer_host.h);
#   RoCE v2: an IPv4 link-local address (169.254.24.N/16) on each card, so the
#   table gains the IPv4-mapped GID: the same, Open MPI's consumer and bolt's
#   collective benchmark with one rank per host (mpirun starting the other's
#   through hosts_rsh.sh), perftest's ib_write_bw and ib_send_lat next to
#   bolt_bench's fi_write bandwidth and fi_send latency, in turn for
#   BOLT_HOSTS_ROUNDS rounds (3 in the reduced set, 5 in the full one) and
#   judged on medians, then faults with
#   FI_BOLT_LIVENESS_TIMEOUT=5000: the wire down for 1 s and a host stopped
#   for 2 s (no error), the peer process killed (errors within 2 s), a host
#   stopped for longer than the liveness time, mid-transfer and in the middle
#   of a collective, and a host killed (errors on the survivor within the
#   liveness time and 3 s, no hang); in the full set, host 1 is first killed
#   in the middle of a collective and booted again, then both are booted with
#   a second wire between them (rxe1 at each end: two cables) and host1's card
#   of it goes down for 1 s by ip link mid-transfer (no error, and the wire
#   carries the transfer again once back), then its card of the first wire
#   (the control rail moves), and the set ends with
#   three hosts on one wire (a multicast group on the loopback) for the
#   collectives, a rank on each.
# Ends with "hosts: N passed, N failed" and exits non-zero on a failure.
# BOLT_HOSTS_QUICK=1 runs the reduced set that setup.sh test runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: check_hosts.sh BUILD_DIRECTORY}" && pwd)
quick=${BOLT_HOSTS_QUICK:-0}
liveness=5000
. "$here/hosts_run.sh"
. "$here/../rxe/tally.sh"
trap 'hosts_cleanup' EXIT
trap 'exit 130' INT TERM
export FI_PROVIDER_PATH="$build/.libs" FI_LOG_LEVEL=warn
unset FI_BOLT_SOFT BOLT_TEST_PEER_ROLE BOLT_TEST_PEER_HOST FI_BOLT_SIDE_CHANNEL_ADDRESS

# show GUEST JOB: a job's output, indented, after a failure, without the
# warnings every process of a test program logs (other providers declining,
# no job key), which would push bolt's own out of the last 60 lines.
show() {
	echo "  -- host$1 $2:"
	grep -a -v -e 'fi_getinfo: provider .* returned -61' -e OFI_MRAIL_ADDR_STRC \
		-e 'bolt_job_key_default' "$(hosts_output "$1" "$2")" | sed 's/^/  | /' | tail -n 60
}

# The address each case gives guest N, and the side channel's setting there.
address() {
	if [ "$case" = ipv6 ]; then
		echo "$(hosts_link_local "$1")%eth0"
	else
		echo "169.254.24.$(($1 + 1))"
	fi
}

# Named: by default bolt would take the first IPv4 address, which may be the control wire's.
side_channel() {
	echo "export FI_BOLT_SIDE_CHANNEL_ADDRESS=$(address "$1");"
}

# roce_v2 GUEST: the RoCE v2 case in GUEST: its IPv4 link-local address, until
# rxe0's IPv4-mapped GID shows; the hosts' names and the side channel's
# address for Open MPI's ranks (hosts_rank.sh).
roce_v2() {
	hosts_run "$1" roce_v2 60 "ip address add $(address "$1")/24 dev eth0 &&
		echo '$(address "$1")' >/bolt-rxe/side_channel_address &&
		$(for guest in $(seq 0 $((hosts_count - 1))); do
			echo "echo '$(hosts_control_address "$guest") host$guest' >>/etc/hosts &&"
		done)
		for attempt in \$(seq 100); do
			grep -q '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/rxe0/ports/1/gids/* && exit 0
			sleep 0.1
		done; exit 1" || fail "host$1: no IPv4-mapped GID after the address was added"
}

# gid_table GUEST: rxe0's GIDs that are set, "INDEX GID" a line. One grep
# reads the table's 1024 entries (unset ones fail or read as zeros): a
# process per entry took 30 s in a guest emulated on a loaded machine.
gid_table() {
	hosts_run "$1" gids 30 "grep -H . /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null |
		sed -n 's|^.*/gids/\([0-9]*\):\(.*\)\$|\1 \2|p' |
		grep -v ' 0000:0000:0000:0000:0000:0000:0000:0000\$'"
	cat "$(hosts_output "$1" gids)"
}

# check_gids GUEST: the kernel's table for the case, and bolt_info's choice from it.
check_gids() {
	table=$(gid_table "$1")
	mapped=$(echo "$table" | grep -c ' 0000:0000:0000:0000:0000:ffff:')
	link_local=$(echo "$table" | grep -c ' fe80:')
	others=$(echo "$table" | grep -v -c -e ' fe80:' -e ' 0000:0000:0000:0000:0000:ffff:')
	if [ "$case" = ipv6 ]; then
		expected=0 kind="link-local"
	else
		expected=1 kind="IPv4-mapped"
	fi
	if [ "$mapped" -ge "$expected" ] && { [ "$expected" = 1 ] || [ "$mapped" = 0 ]; } &&
	   [ "$link_local" -ge 1 ] && [ "$others" = 0 ]; then
		pass "host$1 $case: rxe0's GID table: $(echo "$table" | awk '{ printf "%s[%s] %s", sep, $1, $2; sep = ", " }')"
	else
		fail "host$1 $case: rxe0's GID table is not the case's: $table"
	fi
	hosts_run "$1" bolt_info 120 "\"$build/util/bolt_info\""
	status=$?
	chosen=$(sed -n 's/.*bolt uses GID\[\([0-9]*\)\] as sgid_index: \(.*\)/\1 \2/p' "$(hosts_output "$1" bolt_info)")
	if [ $status -eq 0 ] && grep -q "GID\[ *${chosen%% *}\] .*$kind.*<- chosen" "$(hosts_output "$1" bolt_info)"; then
		pass "host$1 $case: bolt_info chooses GID ${chosen%% *}: ${chosen#* }"
	else
		fail "host$1 $case: bolt_info (status $status, chose '$chosen', expected a $kind GID)"
		show "$1" bolt_info
	fi
}

# pingpong SIZE ITERATIONS: Debian's fi_pingpong over bolt, server on host 1.
# Its own name for the port: hosts_run.sh's $port is the wire a rebooted guest joins.
pingpong() {
	pingpong_port=$((30000 + $1 % 20000))
	hosts_start 1 pingpong_server "$(side_channel 1) exec timeout 300 fi_pingpong -p bolt -e rdm -I $2 -S $1 -B $pingpong_port"
	sleep 1
	hosts_run 0 pingpong_client 300 "$(side_channel 0) exec timeout 300 fi_pingpong -p bolt -e rdm -I $2 -S $1 -P $pingpong_port $(hosts_control_address 1)"
	client=$?
	hosts_wait 1 pingpong_server 60
	server=$?
	row=$(awk '$1 ~ /^[0-9]/ && $2 == '"$2"' { print }' "$(hosts_output 0 pingpong_client)" | tail -n 1)
	if [ $client -eq 0 ] && [ $server -eq 0 ] && [ -n "$row" ]; then
		pass "$case: fi_pingpong -p bolt host0 -> host1, $1 bytes: $(echo "$row" | awk '{ print $7 " us/xfer, " $6 " MB/s" }')"
	else
		fail "$case: fi_pingpong -p bolt between the hosts, $1 bytes: client $client, server $server"
		show 0 pingpong_client
		show 1 pingpong_server
	fi
}

# peer_environment GUEST ROLE: a two-host program's side on GUEST (util/bolt_peer_host.h).
peer_environment() {
	echo "$(side_channel "$1") export BOLT_TEST_PEER_ROLE=$2 BOLT_TEST_PEER_HOST='$(address 0)';"
}

# two_hosts NAME SECONDS COMMAND: COMMAND's test side on host 0, its peer's side on host 1.
two_hosts() {
	hosts_start 1 "$1" "$(peer_environment 1 peer) exec timeout $2 $3"
	hosts_run 0 "$1" "$2" "$(peer_environment 0 test) exec timeout $2 $3"
	test_side=$?
	hosts_wait 1 "$1" 60
	peer_side=$?
}

# criterion PROGRAM [criterion options]: one of bolt's endpoint test programs on
# the system device, its tests' peers on the other host.
criterion() {
	program=$1
	name=$(basename "$1")
	shift
	two_hosts "$name" 900 "env BOLT_TEST_DEVICE=system \"$build/$program\" --jobs 1 $*"
	synthesis=$(grep -a 'Synthesis:' "$(hosts_output 0 "$name")" | tail -n 1)
	peer_synthesis=$(grep -a 'Synthesis:' "$(hosts_output 1 "$name")" | tail -n 1)
	if [ $test_side -eq 0 ] && [ $peer_side -eq 0 ] &&
	   echo "$synthesis" | grep -q 'Tested: [1-9][0-9]* |.*Failing: 0 | Crashing: 0' &&
	   echo "$peer_synthesis" | grep -q 'Failing: 0 | Crashing: 0'; then
		pass "$case: $program $* across the hosts: ${synthesis#*Synthesis: }"
	else
		fail "$case: $program $* across the hosts (test side $test_side, peer side $peer_side)"
		show 0 "$name"
		show 1 "$name"
	fi
}

# bench SIZE ITERATIONS LATENCY: bolt_bench across, host 0 the initiator: fi_send and
# fi_write bandwidth at SIZE, and fi_send latency at SIZE if LATENCY is yes.
bench() {
	two_hosts bolt_bench 600 "\"$build/util/bolt_bench\" -p bolt -b $1 -e $1 \
		-l $([ "$3" = yes ] && echo "$1" || echo 1) -i $2 --csv"
	bench_status=$test_side
	[ $peer_side -eq 0 ] || bench_status=$peer_side
}

# bench_field SIZE FIELD: bolt_bench's last run's GB/s (8: send, 9: write) as MiB/s, or latency (10).
bench_field() {
	awk -F, -v size="$1" -v field="$2" '$1 == "bolt" && $6 == size && $field != "" && $11 == 0 {
		if (field == 10) printf "%.2f", $field; else printf "%.1f", $field * 1e9 / 1048576 }' \
		"$(hosts_output 0 bolt_bench)" | tail -n 1
}

check_bench() {
	bench "$1" 64 yes
	write=$(bench_field "$1" 9)
	latency=$(bench_field "$1" 10)
	if [ $bench_status -eq 0 ] && [ -n "$write" ] && [ -n "$latency" ]; then
		pass "$case: bolt_bench across the hosts, $1 bytes: fi_write $write MiB/s, fi_send latency $latency us"
	else
		fail "$case: bolt_bench across the hosts, $1 bytes (status $test_side, target $peer_side)"
		show 0 bolt_bench
		show 1 bolt_bench
	fi
}

# perftest NAME SIZE ITERATIONS: perftest's NAME (ib_write_bw, ib_send_lat), server on host 1.
perftest() {
	index=$(gid_table 0 | awk '/ 0000:0000:0000:0000:0000:ffff:/ { print $1; exit }')
	peer_index=$(gid_table 1 | awk '/ 0000:0000:0000:0000:0000:ffff:/ { print $1; exit }')
	hosts_start 1 perftest "exec timeout 300 $1 -d rxe0 -x $peer_index -s $2 -n $3 -F"
	# The server may take seconds to listen on a loaded machine: the client tries again.
	hosts_run 0 perftest 300 "for attempt in 1 2 3 4 5 6 7 8 9 10; do
			sleep 1
			timeout 300 $1 -d rxe0 -x $index -s $2 -n $3 -F $(hosts_control_address 1) >/tmp/perftest.out 2>&1
			status=\$?
			grep -q \"Couldn't connect\" /tmp/perftest.out || break
		done
		cat /tmp/perftest.out; exit \$status"
	perftest_status=$?
	hosts_wait 1 perftest 60
	[ $? -eq 0 ] || perftest_status=1
	# The row: bytes, iterations, then bandwidth peak and average (MB/s), or latency columns.
	if [ "$1" = ib_write_bw ]; then
		perftest_result=$(awk -v size="$2" '$1 == size && NF >= 5 { print $4 }' "$(hosts_output 0 perftest)" | tail -n 1)
	else
		# t_min, t_max, t_typical, t_avg...: t_avg, as bolt_bench's (a run's time / iterations).
		perftest_result=$(awk -v size="$2" '$1 == size && NF >= 6 { print $6 }' "$(hosts_output 0 perftest)" | tail -n 1)
	fi
	[ -n "$perftest_result" ] || perftest_status=1
	[ $perftest_status -eq 0 ] || { show 0 perftest; show 1 perftest; }
}

# rounds_awk PROGRAM FILE...: an awk PROGRAM over FILEs with util/bolt_rounds.awk's
# median_of and paired, rounds set to $figure_rounds.
rounds_awk() {
	program=$1
	shift
	awk -v rounds="$figure_rounds" "$(cat "$here/../../util/bolt_rounds.awk")
$program" "$@"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

# figure_round KIND ROUND: one round's perftest and bolt_bench in turn, each
# figure a row "perftest|bolt KIND VALUE ROUND" of $figure_rows: at 1 MiB
# ib_write_bw's and fi_write's MiB/s (KIND bandwidth), or at 8 bytes
# ib_send_lat's and fi_send's microseconds (KIND latency).
figure_round() {
	if [ "$1" = bandwidth ]; then
		perftest ib_write_bw 1048576 "$bandwidth_iterations"
		bench 1048576 "$bandwidth_iterations" no
		bolt_result=$(bench_field 1048576 9)
	else
		perftest ib_send_lat 8 "$latency_iterations"
		bench 8 "$latency_iterations" yes
		bolt_result=$(bench_field 8 10)
	fi
	[ $perftest_status -eq 0 ] && echo "perftest $1 $perftest_result $2" >>"$figure_rows"
	[ $bench_status -eq 0 ] && [ -n "$bolt_result" ] && echo "bolt $1 $bolt_result $2" >>"$figure_rows"
}

# figures ROUNDS: ROUNDS rounds in turn of ib_write_bw then bolt's fi_write at
# 1 MiB, then ROUNDS of ib_send_lat then bolt's fi_send latency at 8 bytes.
# Each target is judged on the median over the rounds of bolt against perftest
# of the same round, seconds apart (util/bolt_rounds.awk): the emulated wire's
# speed follows the load the other jobs put on the machine.
figures() {
	figure_rounds=$1
	figure_rows=$hosts_work/figures
	: >"$figure_rows"
	# Short rounds: over the emulated wire (a few MiB/s) the median of several
	# does more for the verdict than long ones.
	bandwidth_iterations=$([ "$quick" = 1 ] && echo 64 || echo 128)
	latency_iterations=$([ "$quick" = 1 ] && echo 200 || echo 500)
	load_before=$(load)
	for round in $(seq "$figure_rounds"); do
		figure_round bandwidth "$round"
	done
	for round in $(seq "$figure_rounds"); do
		figure_round latency "$round"
	done
	measured=$(rounds_awk '{ list[$1 " " $2] = list[$1 " " $2] " " $3 }
		END { printf "ib_write_bw%s MiB/s; bolt fi_write%s MiB/s; ib_send_lat%s us; bolt fi_send%s us",
			list["perftest bandwidth"], list["bolt bandwidth"], list["perftest latency"], list["bolt latency"] }' "$figure_rows")
	verdicts=$(rounds_awk '
	# The medians of KIND (bandwidth, latency) in perftest, bolt and ratio; 0 without a round of both.
	function medians(kind,    ratios) {
		ratios = paired("bolt " kind, "perftest " kind, 1)
		if (ratios == "") return 0
		perftest = median_of(list["perftest " kind], "perftest " kind)
		bolt = median_of(list["bolt " kind], "bolt " kind)
		ratio = median_of(ratios, kind " ratio")
		return 1
	}
	{ by_round[$1 " " $2, $4] = $3; list[$1 " " $2] = list[$1 " " $2] " " $3 }
	END {
		if (medians("bandwidth")) {
			printf "hosts write bandwidth, 1 MiB (MiB/s), %d rounds in turn, medians [range]: " \
			       "ib_write_bw %.2f%s, bolt fi_write %.2f%s; bolt/ib_write_bw per round %.0f %% [%.0f-%.0f]: %s (target >= 90 %%)\n",
			       rounds, perftest, range("perftest bandwidth"), bolt, range("bolt bandwidth"),
			       100 * ratio, 100 * low["bandwidth ratio"], 100 * high["bandwidth ratio"],
			       (ratio >= 0.9 ? "MET" : "NOT MET")
		}
		if (medians("latency")) {
			printf "hosts latency, 8 bytes (us), %d rounds in turn, medians [range]: " \
			       "ib_send_lat %.2f%s (average), bolt fi_send %.2f%s; bolt against ib_send_lat per round %+.0f %% [%+.0f, %+.0f]: %s (target <= +20 %%)\n",
			       rounds, perftest, range("perftest latency"), bolt, range("bolt latency"),
			       100 * (ratio - 1), 100 * (low["latency ratio"] - 1), 100 * (high["latency ratio"] - 1),
			       (ratio <= 1.2 ? "MET" : "NOT MET")
		}
	}' "$figure_rows")
	if [ "$(echo "$verdicts" | grep -c .)" -eq 2 ]; then
		pass "$case: figures measured in $figure_rounds rounds in turn ($measured)"
		echo "$verdicts"
		echo "hosts figures: load average before $load_before, after $(load) ($(nproc) cores)"
		# Faults need a transfer of about 30 s.
		fault_iterations=$(rounds_awk '$1 == "bolt" && $2 == "bandwidth" { list = list " " $3 }
			END { rate = median_of(list, "rate"); printf "%.0f", rate * 30 < 64 ? 64 : rate * 30 }' "$figure_rows")
	else
		fail "$case: figures: no round of both perftest and bolt for each target ($measured)"
	fi
}

# mpirun ARGUMENTS...: Open MPI from host 0, one rank on each host, the others
# started through hosts_rsh.sh; its ofi MTL on bolt; each rank's side channel
# on its own host's address (hosts_rank.sh reads it from the guest's control
# directory). mpirun_start starts it; mpirun_across waits, its status in
# $mpi_status, output in host 0's job mpi.
mpirun_start() {
	hosts_start 0 mpi "exec timeout 600 mpirun --allow-run-as-root -np $hosts_count \
		-H $(seq 0 $((hosts_count - 1)) | sed 's/.*/host&:1/' | paste -s -d,) \
		--mca plm_rsh_agent '$here/hosts_rsh.sh' --mca oob_tcp_if_include eth1 \
		--mca btl self,vader --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include bolt \
		--mca mtl_ofi_verbose 1 -x FI_PROVIDER_PATH -x FI_LOG_LEVEL \
		${FI_BOLT_LIVENESS_TIMEOUT:+-x FI_BOLT_LIVENESS_TIMEOUT} \
		sh '$here/hosts_rank.sh' $*"
}

mpirun_across() {
	mpirun_start "$@"
	hosts_wait 0 mpi 600
	mpi_status=$?
}

# mpi: the MPI consumer and bolt's collective benchmark, one rank per host.
mpi() {
	if [ ! -x "$build/test/consumers/mpi_consumer" ]; then
		fail "$case: Open MPI across the hosts: this build has no MPI programs (configure found no mpicc)"
		return
	fi
	mpirun_across "\"$build/test/consumers/mpi_consumer\""
	chosen=$(grep -c -E "mtl:ofi:prov(ider)?: bolt" "$(hosts_output 0 mpi)")
	if [ $mpi_status -eq 0 ] && [ "$chosen" -eq 2 ] &&
	   grep -q "^mpi_consumer: 2 ranks: every check passed" "$(hosts_output 0 mpi)"; then
		pass "$case: Open MPI over bolt, one rank on each host (mpirun through hosts_rsh.sh)"
	else
		fail "$case: Open MPI over bolt across the hosts: mpirun $mpi_status, bolt chosen by $chosen of 2 ranks"
		show 0 mpi
	fi
	collectives "$([ "$quick" = 1 ] && echo 64K || echo 1M)"
}

# collectives MAX_SIZE: bolt_collective_bench_mpi -c all up to MAX_SIZE, one rank
# on each host, every element checked.
collectives() {
	# Few iterations: over the emulated wire each collective takes tens of milliseconds.
	mpirun_across "\"$build/util/bolt_collective_bench_mpi\" -c all -b 8 -f 8 -i 5 -e $1"
	# Rows: collective, size, count, type, redop, time, algbw, busbw, #wrong, algorithm
	# (a line another rank's error cut into is no row).
	row_pattern='$1 !~ /^#/ && $2 ~ /^[0-9]+$/ && NF >= 9 && $9 ~ /^[0-9]+$/'
	wrong=$(awk "$row_pattern && \$9 != 0" "$(hosts_output 0 mpi)" | wc -l)
	rows=$(awk "$row_pattern" "$(hosts_output 0 mpi)" | wc -l)
	if [ $mpi_status -eq 0 ] && [ "$rows" -ge 5 ] && [ "$wrong" -eq 0 ]; then
		pass "$case: bolt_collective_bench_mpi -c all, one rank on each of $hosts_count hosts: $rows sizes and collectives, none wrong"
	else
		fail "$case: bolt_collective_bench_mpi across $hosts_count hosts: mpirun $mpi_status, $rows rows, $wrong with wrong elements"
		show 0 mpi
		rxe_counters
	fi
}

# rxe_counters: each guest's rxe0 counters on one line, after a failure: RC's
# retries, sequence errors and RNR waits say what the wire did meanwhile.
rxe_counters() {
	for guest in $(seq 0 $((hosts_count - 1))); do
		hosts_run "$guest" counters 30 "cd /sys/class/infiniband/rxe0/ports/1/hw_counters &&
			grep -H . * | tr '\n' ' '" >/dev/null
		echo "  -- host$guest rxe0: $(cat "$(hosts_output "$guest" counters)" 2>/dev/null)"
	done
}

# three_hosts: three guests booted on one wire (multicast on the loopback), the
# RoCE v2 case on each, and the collectives with one rank on each.
three_hosts() {
	hosts_halt
	if ! hosts_boot 3 "$shares"; then
		fail "three hosts: the guests did not boot"
		return
	fi
	for guest in 0 1 2; do
		roce_v2 "$guest"
	done
	collectives 256K
}

# --- Faults: with a short liveness time, on a long fi_write transfer between the hosts.

# wait_for_line FILE PATTERN ATTEMPTS: until FILE has a line matching PATTERN, a look every 0.5 s.
wait_for_line() {
	for attempt in $(seq "$3"); do
		grep -q -a "$2" "$1" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

# fault_sent [DEVICE]: how many packets host 0's rxe0 (or DEVICE) has sent since its boot.
fault_sent() {
	hosts_run 0 sent 30 "cat /sys/class/infiniband/${1:-rxe0}/ports/1/hw_counters/sent_pkts" >/dev/null
	cat "$(hosts_output 0 sent)" 2>/dev/null || echo 0
}

# fault_start: a long bolt_bench transfer (about a gigabyte at 1 MiB) between
# the hosts; returns once it runs: the two benchmarks have met, then rxe0 on
# host 0 has sent 4096 packets (4 MiB in 1 KiB frames) more. A fault before
# that would hit the benchmarks' start (a freshly booted guest may take 10 s
# to load them), whose own meeting bolt has no part in.
fault_iterations=256
fault_start() {
	export FI_BOLT_LIVENESS_TIMEOUT=$liveness
	# The target's pid is the job shell's, which becomes bolt_bench (no timeout in between).
	hosts_start 1 fault "$(peer_environment 1 peer) echo \$\$ >\"$hosts_work/guest1/jobs/fault.pid\";
		exec \"$build/util/bolt_bench\" -p bolt -b 1M -e 1M -l 1 -i $fault_iterations --csv"
	hosts_start 0 fault "$(peer_environment 0 test) exec timeout 600 \"$build/util/bolt_bench\" -p bolt -b 1M -e 1M -l 1 -i $fault_iterations --csv"
	unset FI_BOLT_LIVENESS_TIMEOUT
	wait_for_line "$(hosts_output 0 fault)" 'bolt_bench initiator: met the other host' 240
	before=$(fault_sent)
	for attempt in $(seq 120); do
		[ $(($(fault_sent) - before)) -ge 4096 ] && return
		sleep 0.5
	done
	echo "  (host0's rxe0 sent no transfer within a minute)"
}

# fault_survived WHAT: both sides of fault_start completed with every byte right.
fault_survived() {
	hosts_wait 0 fault 600
	initiator=$?
	hosts_wait 1 fault 60
	target=$?
	rows=$(awk -F, '$1 == "bolt" && $5 == "bandwidth" && $11 == 0' "$(hosts_output 0 fault)" | wc -l)
	if [ $initiator -eq 0 ] && [ $target -eq 0 ] && [ "$rows" -ge 1 ]; then
		pass "$1: no error, the transfer completed with every byte right"
	else
		fail "$1: initiator $initiator, target $target"
		show 0 fault
		show 1 fault
	fi
}

# fault_failed_within WHAT SECONDS STARTED: host 0's side ended with an error
# within SECONDS of STARTED (date +%s.%N), not hanging; its warnings say why.
fault_failed_within() {
	hosts_wait 0 fault $(($2 + 60))
	initiator=$?
	ended=$(date +%s.%N)
	took=$(awk -v a="$3" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
	why=$(grep -a -m 1 -E 'bolt_bench initiator: .*(failed|error)' "$(hosts_output 0 fault)")
	# An error of the benchmarks' own meeting would say nothing of bolt.
	if [ $initiator -ne 0 ] && [ $initiator -ne 124 ] && [ -n "$why" ] &&
	   ! echo "$why" | grep -q 'meeting the other host' &&
	   awk -v took="$took" -v limit="$2" 'BEGIN { exit !(took <= limit) }'; then
		pass "$1: the survivor's operations ended with an error after $took s (limit $2 s): $why"
	else
		fail "$1: the survivor ended with status $initiator after $took s (limit $2 s)"
		show 0 fault
	fi
}

fault_link_down() {
	fault_start
	hosts_monitor 1 "set_link wire off"
	sleep 1
	hosts_monitor 1 "set_link wire on"
	fault_survived "wire down for 1 s mid-transfer (liveness $liveness ms)"
}

fault_short_stop() {
	fault_start
	hosts_monitor 1 stop
	sleep 2
	hosts_monitor 1 cont
	fault_survived "host1 stopped for 2 s mid-transfer (liveness $liveness ms)"
}

fault_long_stop() {
	fault_start
	hosts_monitor 1 stop
	started=$(date +%s.%N)
	fault_failed_within "host1 stopped for longer than the liveness time mid-transfer" \
		$((liveness / 1000 + 3)) "$started"
	hosts_monitor 1 cont
	hosts_wait 1 fault 60
	echo "  (host1's side, continued afterwards, ended with status $?)"
}

fault_process_killed() {
	fault_start
	hosts_run 1 kill 30 "kill -KILL \$(cat \"$hosts_work/guest1/jobs/fault.pid\")"
	started=$(date +%s.%N)
	fault_failed_within "the peer process on host1 killed mid-transfer" 2 "$started"
	hosts_wait 1 fault 30
}

fault_host_killed() {
	fault_start
	hosts_kill 1
	started=$(date +%s.%N)
	fault_failed_within "host1's virtual machine killed mid-transfer" \
		$((liveness / 1000 + 3)) "$started"
}

# collective_fault WHAT FAULT...: bolt_collective_bench_mpi's all-reduces of
# 1 MiB, one rank on each host, and the command FAULT... on host 1 once they
# run: rank 0 on host 0 (which mpirun's own output shows) must report an error
# within the liveness time and 3 s, and not hang. mpirun itself may wait longer
# for its daemon on host1: it is stopped afterwards (collective_fault_end).
collective_fault() {
	what=$1
	shift
	export FI_BOLT_LIVENESS_TIMEOUT=$liveness
	mpirun_start "\"$build/util/bolt_collective_bench_mpi\" -c allreduce -b 1M -e 1M -i 100000"
	unset FI_BOLT_LIVENESS_TIMEOUT
	# This job's output: named after mpirun_start, which gives the job its number.
	output=$(hosts_output 0 mpi)
	wait_for_line "$output" '^# collective' 600
	sleep 5
	"$@"
	started=$(date +%s.%N)
	limit=$((liveness / 1000 + 3))
	while ! grep -q -a 'bolt_collective_bench: rank 0:' "$output" &&
	      awk -v a="$started" -v b="$(date +%s.%N)" -v limit="$limit" 'BEGIN { exit !(b - a < limit + 30) }'; do
		sleep 0.1
	done
	took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	why=$(grep -a -m 1 'bolt_collective_bench: rank 0:' "$output")
	if [ -n "$why" ] && awk -v took="$took" -v limit="$limit" 'BEGIN { exit !(took <= limit) }'; then
		pass "$what mid-collective: rank 0's all-reduce ended with an error after $took s (limit $limit s): $why"
	else
		fail "$what mid-collective: no error from rank 0 after $took s (limit $limit s)"
		show 0 mpi
	fi
}

collective_fault_end() {
	hosts_run 0 stop_mpi 30 "kill \$(cat /proc/[0-9]*/stat 2>/dev/null | awk '\$2 == \"(mpirun)\" { print \$1 }') 2>/dev/null; true"
	hosts_wait 0 mpi 60
}

# host1 stopped (qemu monitor stop) for longer than the liveness time while the
# all-reduces run, then continued.
fault_collective_long_stop() {
	collective_fault "host1 stopped for longer than the liveness time" hosts_monitor 1 stop
	hosts_monitor 1 cont
	collective_fault_end
}

fault_collective_host_killed() {
	collective_fault "host1's virtual machine killed" hosts_kill 1
	collective_fault_end
}

# --- Two cables: a second wire between the hosts (eth2, rxe1 at each end).

# two_wires_boot: both guests booted again with the second wire, the RoCE v2
# case on both cards (169.254.25.N on eth2), until rxe1's IPv4-mapped GID shows.
two_wires_boot() {
	hosts_halt
	hosts_wires=2
	hosts_boot 2 "$shares"
	booted=$?
	hosts_wires=1
	[ $booted -eq 0 ] || return 1
	for guest in 0 1; do
		roce_v2 "$guest"
		hosts_run "$guest" second_wire 60 "ip address add 169.254.25.$((guest + 1))/24 dev eth2 &&
			for attempt in \$(seq 100); do
				grep -q '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/rxe1/ports/1/gids/* && exit 0
				sleep 0.1
			done; exit 1" || return 1
	done
}

# fault_second_wire_down: host1's card of the second wire down for 1 s by
# ip link mid-transfer, which takes rxe1's port there down (and only there:
# host0 hears of it from host1): no error, every byte right, and the second
# wire carries the transfer again once it is back (host0's rxe1 sends more).
fault_second_wire_down() {
	fault_start
	before=$(fault_sent rxe1)
	hosts_run 1 wire_down 30 "ip link set eth2 down && sleep 1 && ip link set eth2 up"
	hosts_run 1 wire_up 60 "for attempt in \$(seq 100); do
			grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state && exit 0
			sleep 0.1
		done; exit 1" || fail "host1's rxe1 did not become active again"
	back=$(fault_sent rxe1)
	fault_survived "host1's second wire down for 1 s by ip link mid-transfer (liveness $liveness ms)"
	after=$(fault_sent rxe1)
	if [ $((before)) -gt 0 ] && [ $((after - back)) -gt 1024 ]; then
		pass "the second wire carried the transfer before the fault ($before packets from host0's rxe1) and again once back ($((after - back)) more)"
	else
		fail "the second wire carried $before packets before the fault and $((after - back)) after it came back"
	fi
}

# fault_first_wire_down: the same with host1's card of the first wire, which
# carries the control rail and the side channel: the control rail moves to
# the second wire at both ends (host0 hears of it over the side channel, whose
# TCP waits for the card), and the transfer goes on.
fault_first_wire_down() {
	fault_start
	hosts_run 1 wire_down 30 "ip link set eth0 down && sleep 1 && ip link set eth0 up"
	fault_survived "host1's first wire (control rail, side channel) down for 1 s by ip link mid-transfer (liveness $liveness ms)"
}

shares="$build
$(cd "$here/../.." && pwd)"
hosts_boot 2 "$shares" || { echo "hosts: 0 passed, 1 failed"; exit 1; }

echo "== Thunderbolt-like: IPv6 link-local addresses only =="
case=ipv6
check_gids 0
check_gids 1
pingpong 64 100
[ "$quick" = 1 ] || pingpong 1048576 10
check_bench 1048576
criterion test/endpoint/test_msg --filter "'msg/rocev2'"
[ "$quick" = 1 ] || criterion test/endpoint/test_rma --filter "'rma/rocev2'"

echo "== RoCE v2: IPv4 link-local addresses (169.254.24.0/24) =="
case=ipv4
roce_v2 0
roce_v2 1
check_gids 0
check_gids 1
pingpong 64 100
[ "$quick" = 1 ] || pingpong 1048576 10
criterion test/endpoint/test_msg
[ "$quick" = 1 ] || criterion test/endpoint/test_rma
[ "$quick" = 1 ] || criterion test/endpoint/test_direct_write
criterion test/endpoint/test_liveness --filter "'liveness/rocev2_rc'"
mpi
figures "${BOLT_HOSTS_ROUNDS:-$([ "$quick" = 1 ] && echo 3 || echo 5)}"

echo "== Faults between the hosts (FI_BOLT_LIVENESS_TIMEOUT=$liveness) =="
fault_link_down
fault_short_stop
fault_process_killed
fault_long_stop
fault_collective_long_stop
# The full set kills host1 twice: mid-collective, then, booted again, mid-transfer.
if [ "$quick" != 1 ]; then
	fault_collective_host_killed
	hosts_reboot_peer || fail "host1 did not boot again"
	roce_v2 1
fi
fault_host_killed
if [ "$quick" != 1 ]; then
	echo "== Two wires between the hosts: one goes down and comes back (RoCE v2, liveness $liveness ms) =="
	if two_wires_boot; then
		fault_second_wire_down
		fault_first_wire_down
	else
		fail "two wires: the guests did not boot, or rxe1 has no IPv4-mapped GID"
	fi
	echo "== Three hosts on one wire: the collectives, one rank on each (RoCE v2) =="
	three_hosts
fi

hosts_halt
tally_end hosts
