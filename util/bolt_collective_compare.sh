#!/bin/sh
# bolt_collective_compare.sh: bolt's collectives against Open MPI's, in one run,
# for each profile of the software device and each rank count:
#   bolt          util/bolt_collective_bench -n N (bolt's native collectives)
#   ompi_shm      util/mpi_collective_bench under mpirun, Open MPI over shared memory
#                 (--mca btl self,vader)
#   ompi_bolt     the same over bolt's point-to-point: Open MPI's ofi MTL
#                 (--mca pml cm --mca mtl ofi, provider bolt), as test/consumers/mpi.sh runs it
# for all-reduce, all-gather, reduce-scatter and broadcast (float, sum) from 8 B
# to 64 MiB, with bolt's 8 B fi_send latency (util/bolt_bench), the memory
# ceiling (util/softrdma_bench --memcpy-processes N) and the device's (the
# same with --write-processes N, what it moves between processes). Then one
# line per target:
#   every size, collective, rank count: bolt's time <= Open MPI shm's; sizes
#   where Open MPI shm takes less than the device alone needs for what the
#   collective must move (softrdma_bench --floor: with 2 ranks one message of
#   a broadcast, the exchange of an all-reduce's whole or of half an
#   all-gather's or reduce-scatter's; with more, a broadcast's message to
#   each rank but the root at the device's message rate, over the cores) are
#   named apart, as out of its reach;
#   2 ranks, 8 B all-reduce: bolt's time <= bolt's 8 B fi_send latency + 1 us;
#   64 MiB all-reduce, 2 and 4 ranks: busbw >= 85 % of the memory ceiling.
# Everything runs --rounds N times in turn (default 5), and each target is
# judged on the median over the rounds of a comparison made within one round
# (bolt against Open MPI, or against the latency or ceiling measured seconds
# before), as util/bolt_bench_compare.sh does: on a shared machine single
# runs differ by 10 to 30 %, and the memory bus's speed drifts over minutes.
# Point-to-point regressions are util/bolt_bench_compare.sh's to judge.
# Optionally one PNG per profile: time per operation against size (log-log,
# so that 8 B and 64 MiB both show), bolt, Open MPI shm and Open MPI over bolt
# side by side, a panel per collective and rank count.
# Run it from the build directory, or name that with --build.
set -u
here=$(cd "$(dirname "$0")" && pwd)

usage() {
	echo "usage: $0 [--profiles thunderbolt,rocev2] [--ranks 2,3,4] [--rounds N]"
	echo "       [--collectives allreduce,allgather,reduce_scatter,broadcast]"
	echo "       [--max-size 64M] [--build DIR] [--plot PREFIX] [--no-mpi]"
	echo "       [--save-rows FILE | --from-rows FILE]"
	echo "--plot PREFIX draws PREFIX-PROFILE.png; --no-mpi leaves Open MPI out;"
	echo "--save-rows keeps every figure measured, --from-rows judges such a file again."
}

profiles=thunderbolt,rocev2
rank_list=2,3,4
rounds=5
collectives=allreduce,allgather,reduce_scatter,broadcast
max_size=64M
build=$(pwd)
plot=
use_mpi=1
save_rows=
from_rows=
while [ $# -gt 0 ]; do
	case "$1" in
	--profiles|--profile) profiles=${2:?}; shift 2 ;;
	--ranks) rank_list=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--collectives) collectives=${2:?}; shift 2 ;;
	--max-size) max_size=${2:?}; shift 2 ;;
	--build) build=${2:?}; shift 2 ;;
	--plot) plot=${2:?}; shift 2 ;;
	--no-mpi) use_mpi=0; shift ;;
	--save-rows) save_rows=${2:?}; shift 2 ;;
	--from-rows) from_rows=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case "$rounds" in
''|*[!0-9]*|0) echo "$0: --rounds takes a count of 1 or more" >&2; exit 2 ;;
esac
build=$(cd "$build" && pwd) || exit 2
for program in softrdma_bench bolt_bench bolt_collective_bench; do
	[ -x "$build/util/$program" ] || { echo "$0: $build/util/$program is not built" >&2; exit 2; }
done
if [ "$use_mpi" -eq 1 ] && { [ ! -x "$build/util/mpi_collective_bench" ] ||
				! command -v mpirun >/dev/null 2>&1; }; then
	echo "# Open MPI: not built (install libopenmpi-dev and openmpi-bin, then reconfigure)"
	use_mpi=0
fi

outputs=$(mktemp -d) || exit 2
namespace="bolt-collective-$$"
cleanup() {
	rm -rf "$outputs"
	rm -f /dev/shm/bolt-softrdma-*-"$namespace"-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FI_PROVIDER_PATH="$build/.libs"
export FI_PROVIDER_PATH
root_options=""
[ "$(id -u)" -eq 0 ] && root_options="--allow-run-as-root"
failures=0
load() { cut -d' ' -f1-3 /proc/loadavg; }
ranks_words=$(echo "$rank_list" | tr ',' ' ')
profile_words=$(echo "$profiles" | tr ',' ' ')

# tag ROUND IMPLEMENTATION PROFILE RANKS < benchmark rows: "round impl profile
# ranks collective size time busbw wrong", for the summary.
tag() {
	awk -v round="$1" -v impl="$2" -v profile="$3" -v ranks="$4" \
		'/^#/ || NF < 9 { next } { print round, impl, profile, ranks, $1, $2, $6, $8, $9 }'
}

# bench ROUND IMPLEMENTATION PROFILE RANKS COMMAND...: runs the benchmark for
# 8 B and from 16 B to max_size by 4 (64 MiB is 16 x 4^11), shows its output,
# and keeps its rows.
bench() {
	round=$1 impl=$2 profile=$3 ranks=$4
	shift 4
	output="$outputs/$impl.$profile.$ranks.$round"
	{ "$@" -b 8 -e 8 -c "$collectives" && "$@" -b 16 -e "$max_size" -f 4 -c "$collectives"; } \
		>"$output" 2>&1 || { failures=$((failures + 1)); echo "# FAILED: $impl $profile $ranks ranks"; }
	cat "$output"
	tag "$round" "$impl" "$profile" "$ranks" <"$output" >>"$outputs/rows"
}

# mpi_bench ROUND IMPLEMENTATION PROFILE RANKS: Open MPI, over shared memory or bolt.
mpi_bench() {
	case "$2" in
	ompi_shm) set -- "$@" --mca pml ob1 --mca btl self,vader ;;
	*)
		set -- "$@" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include bolt \
			-x FI_PROVIDER_PATH -x FI_PROVIDER=bolt -x FI_BOLT_SOFT="$3" \
			-x FI_BOLT_SOFT_NAMESPACE="$namespace-mpi-$1-$3-$4"
		# One emulated Thunderbolt device for every rank: the queue pairs four hosts
		# would have (test/consumers/mpi.sh).
		[ "$3" = thunderbolt ] && [ "$4" -ge 4 ] && set -- "$@" -x FI_BOLT_SOFT_MAX_QP=$(($4 * $4))
		;;
	esac
	round=$1 impl=$2 profile=$3 ranks=$4
	shift 4
	bench "$round" "$impl" "$profile" "$ranks" timeout 1800 mpirun $root_options --oversubscribe \
		-n "$ranks" "$@" "$build/util/mpi_collective_bench"
}

echo "# bolt_collective_compare: profiles $profiles, ranks $rank_list, $rounds rounds," \
	"collectives $collectives, $(nproc) cores"
[ -z "$from_rows" ] && echo "# load average before: $(load) (figures are disturbed by other jobs)"
if [ -n "$from_rows" ]; then
	cp "$from_rows" "$outputs/rows" || exit 2
	rounds=$(awk 'BEGIN { most = 1 } $1 > most { most = $1 } END { print most }' "$outputs/rows")
	profile_words=$(awk '$2 == "bolt" { print $3 }' "$outputs/rows" | sort -u | tr '\n' ' ')
	ranks_words=$(awk '$2 == "bolt" { print $4 }' "$outputs/rows" | sort -n -u | tr '\n' ' ')
	collectives=$(awk '$2 == "bolt" { print $5 }' "$outputs/rows" | sort -u | paste -s -d, -)
	echo "# judging $from_rows again: $rounds rounds"
fi
round=1
[ -n "$from_rows" ] && round=$((rounds + 1))
while [ "$round" -le "$rounds" ]; do
	for profile in $profile_words; do
		echo "# round $round of $rounds, profile $profile"
		FI_BOLT_SOFT=$profile
		FI_BOLT_SOFT_NAMESPACE="$namespace-$profile"
		export FI_BOLT_SOFT FI_BOLT_SOFT_NAMESPACE
		echo "## bolt 8 B fi_send latency: bolt_bench -p bolt"
		"$build/util/bolt_bench" -p bolt -b 8 -e 8 -l 8 >"$outputs/p2p" 2>&1
		cat "$outputs/p2p"
		awk -v round="$round" -v profile="$profile" '/latency_us/ { table = 1; next }
			table && $1 == 8 && NF == 4 { print round, "p2p", profile, 2, "send", 8, $3, 0, $4 }' \
			"$outputs/p2p" >>"$outputs/rows"
		echo "## the device's floor: softrdma_bench $profile --floor"
		"$build/util/softrdma_bench" "$profile" --floor >"$outputs/floor" 2>&1 ||
			{ failures=$((failures + 1)); echo "# FAILED: softrdma_bench --floor"; }
		cat "$outputs/floor"
		awk -v round="$round" -v profile="$profile" -v cores="$(nproc)" '
			NR == 1 { print round, "floor", profile, 0, "cores", 0, cores, 0, 0 }
			$1 == "floor" && NF == 5 {
				print round, "floor", profile, 2, "one_way", $2, $3, 0, 0
				print round, "floor", profile, 2, "exchange", $2, $4, 0, 0
				print round, "floor", profile, 2, "rate", $2, $5, 0, 0 }' \
			"$outputs/floor" >>"$outputs/rows"
		for ranks in $ranks_words; do
			# The ceiling just before bolt's run, whose all-reduce comes first:
			# the share pairs figures seconds apart, not one of another profile's.
			# And what the device moves for as many processes writing at once.
			{ "$build/util/softrdma_bench" --memcpy-processes "$ranks" &&
			  "$build/util/softrdma_bench" "$profile" --write-processes "$ranks"; } \
				>"$outputs/memory" 2>&1
			awk -v round="$round" -v profile="$profile" '
				$1 == "memcpy_processes" { print round, "memory", profile, $2, "copy", 0, 0, $4, 0 }
				$1 == "write_processes" { print round, "device", profile, $2, "write", 0, 0, $4, 0 }' \
				"$outputs/memory" >>"$outputs/rows"
			echo "## bolt: bolt_collective_bench -n $ranks ($profile)"
			bench "$round" bolt "$profile" "$ranks" "$build/util/bolt_collective_bench" -n "$ranks"
			[ "$use_mpi" -eq 1 ] || continue
			echo "## Open MPI over shared memory: mpirun -n $ranks --mca btl self,vader"
			mpi_bench "$round" ompi_shm "$profile" "$ranks"
			echo "## Open MPI over bolt: mpirun -n $ranks --mca pml cm --mca mtl ofi ($profile)"
			mpi_bench "$round" ompi_bolt "$profile" "$ranks"
		done
	done
	round=$((round + 1))
done
[ -z "$from_rows" ] && echo "# load average after: $(load)"

touch "$outputs/rows"
if [ -n "$save_rows" ]; then
	cp "$outputs/rows" "$save_rows" && echo "# every figure: $save_rows (--from-rows judges it again)"
fi
awk -v rounds="$rounds" -v plot="$plot" -v table="$outputs/table" -v machine_cores="$(nproc)" \
	"$(cat "$here/bolt_rounds.awk")"'
# The key of what the device alone takes for what a collective must move,
# "" where it is not measured. With 2 ranks: a broadcast, one message of the
# whole; an all-reduce, the exchange of the whole; an all-gather or a
# reduce-scatter, the exchange of half. With more, a broadcast: its ranks - 1
# messages of the whole, one to each rank but the root, each costing its
# sender and receiver together at least one of many queued (the rate, where
# the two run on a core each), shared by at most as many cores as ranks
# (broadcast_floors fills these keys from the rate rows).
function floor_key(profile, ranks, collective, size) {
	if (collective == "broadcast" && ranks > 2)
		return "floor " profile " " ranks " broadcast " size " time"
	if (ranks != 2)
		return ""
	if (collective == "broadcast")
		return "floor " profile " 2 one_way " size " time"
	if (collective == "allreduce")
		return "floor " profile " 2 exchange " size " time"
	return "floor " profile " 2 exchange " size / 2 " time"
}
# For each broadcast case of more than 2 ranks, each size and round: ranks - 1
# times the rate of that round, over the cores the ranks had.
function broadcast_floors(    c, part, count, list, i, key, rate_key, round, cores) {
	for (c = 1; c <= case_count; c++) {
		split(cases[c], part, " ")
		if (part[3] != "broadcast" || part[2] <= 2)
			continue
		count = split(sizes[cases[c]], list, " ")
		for (i = 1; i <= count; i++) {
			key = floor_key(part[1], part[2], "broadcast", list[i])
			rate_key = "floor " part[1] " 2 rate " list[i] " time"
			for (round = 1; round <= rounds; round++) {
				if (!((rate_key, round) in by_round))
					continue
				cores = by_round["floor " part[1] " 0 cores 0 time", round]
				# Rows saved before they kept the cores: the cores of this machine.
				cores = cores >= 1 ? cores : machine_cores
				cores = cores > part[2] ? part[2] : cores
				by_round[key, round] = (part[2] - 1) * by_round[rate_key, round] / cores
				times[key] = times[key] " " by_round[key, round]
			}
		}
	}
}
# The busbw ceiling of an all-reduce of ranks ranks when the 2 (ranks - 1)
# copies that cross between ranks go at rate cross (GB/s, all processes) and
# the reductions, 1.5 (ranks - 1) copies, at rate copy (target 3 says why).
function busbw_ceiling(ranks, cross, copy) {
	return (2 / ranks) / (2 / cross + 1.5 / copy)
}
function human(size) {
	if (size >= 1048576) return size / 1048576 "M"
	if (size >= 1024) return size / 1024 "K"
	return size
}
{
	# round impl profile ranks collective size time busbw wrong
	time_key = $2 " " $3 " " $4 " " $5 " " $6 " time"
	busbw_key = $2 " " $3 " " $4 " " $5 " " $6 " busbw"
	by_round[time_key, $1] = $7; times[time_key] = times[time_key] " " $7
	by_round[busbw_key, $1] = $8; busbws[busbw_key] = busbws[busbw_key] " " $8
	wrong += $9
	if ($2 == "bolt" || $2 ~ /^ompi/) {
		if (!(($3 " " $4 " " $5) in seen_case)) {
			seen_case[$3 " " $4 " " $5] = 1
			cases[++case_count] = $3 " " $4 " " $5
		}
		if (!(($3 " " $4 " " $5 " " $6) in seen_size)) {
			seen_size[$3 " " $4 " " $5 " " $6] = 1
			sizes[$3 " " $4 " " $5] = sizes[$3 " " $4 " " $5] " " $6
		}
	}
	if ($2 == "p2p") profiles_seen[$3] = 1
}
END {
	print "# targets (" rounds " rounds: figures are medians [range]; each verdict is on the " \
	      "median over the rounds of a comparison within one round)"
	broadcast_floors()
	# Target 1: bolt no slower than Open MPI over shared memory, at every size.
	for (c = 1; c <= case_count; c++) {
		split(cases[c], part, " ")
		profile = part[1]; ranks = part[2]; collective = part[3]
		count = split(sizes[cases[c]], list, " ")
		met = 0; compared = 0; missed = ""; unreachable = ""; over_bolt = 0; over_bolt_compared = 0
		for (i = 1; i <= count; i++) {
			size = list[i]
			bolt_key = "bolt " cases[c] " " size " time"
			ratios = paired(bolt_key, "ompi_bolt " cases[c] " " size " time", 1)
			if (ratios != "") {
				over_bolt_compared++
				over_bolt += median_of(ratios, "ratio") <= 1
			}
			shm_key = "ompi_shm " cases[c] " " size " time"
			ratios = paired(bolt_key, shm_key, 1)
			if (ratios == "")
				continue
			ratio = median_of(ratios, "ratio")
			bolt = median_of(times[bolt_key], bolt_key)
			shm = median_of(times[shm_key], shm_key)
			compared++
			if (ratio <= 1) {
				met++
				continue
			}
			# Out of reach where Open MPI shm takes less than the device alone.
			floor = floor_key(profile, ranks, collective, size)
			below = floor != "" ? paired(shm_key, floor, 1) : ""
			if (below != "" && median_of(below, "below") < 1)
				unreachable = unreachable sprintf(" %s: %.2f vs %.2f%s us, device %.2f%s;",
								  human(size), bolt, shm, range(shm_key),
								  median_of(times[floor], floor), range(floor))
			else
				missed = missed sprintf(" %s: %.2f%s vs %.2f%s us (x%.2f);", human(size), bolt,
							range(bolt_key), shm, range(shm_key), ratio)
		}
		if (!compared) {
			printf("%s, %d ranks, %s: bolt <= Open MPI shm: NOT MEASURED\n", profile, ranks,
			       collective)
			continue
		}
		verdict = met == compared ? "MET" : missed != "" ? "NOT MET; slower at" missed : \
			  "NOT MET, only where the device cannot;"
		if (unreachable != "")
			verdict = verdict " Open MPI shm faster than the device alone (its one message " \
				  "or exchange; for a broadcast of more ranks, a message to each rank but the " \
				  "root at the device rate over the cores; softrdma_bench --floor) at" unreachable
		printf("%s, %d ranks, %s: bolt <= Open MPI shm at %d of %d sizes: %s" \
		       " (bolt <= Open MPI over bolt at %d of %d)\n", profile, ranks, collective, met,
		       compared, verdict, over_bolt, over_bolt_compared)
	}
	# Target 2: the 2-rank 8 B all-reduce within 1 us of one 8 B fi_send.
	for (profile in profiles_seen) {
		bolt_key = "bolt " profile " 2 allreduce 8 time"
		send_key = "p2p " profile " 2 send 8 time"
		differences = paired(bolt_key, send_key, 0)
		if (differences == "") {
			printf("%s, 2 ranks, 8 B all-reduce <= 8 B fi_send + 1 us: NOT MEASURED\n", profile)
			continue
		}
		difference = median_of(differences, "difference")
		# Beside it, what the device alone adds to its one message for the exchange.
		device = paired(floor_key(profile, 2, "allreduce", 8), floor_key(profile, 2, "broadcast", 8), 0)
		device = device == "" ? "" : sprintf(" (the device alone: its exchange %.2f%s us over " \
						      "its one message)", median_of(device, "device"),
						      range("device"))
		printf("%s, 2 ranks, 8 B all-reduce <= 8 B fi_send + 1 us: all-reduce %.2f%s us, " \
		       "fi_send %.2f%s us, difference %.2f%s us: %s%s\n", profile,
		       median_of(times[bolt_key], bolt_key), range(bolt_key),
		       median_of(times[send_key], send_key), range(send_key), difference,
		       range("difference"), difference <= 1 ? "MET" : "NOT MET", device)
	}
	# Target 3: 64 MiB all-reduce busbw against the memory ceiling: a
	# bandwidth-optimal all-reduce has each of n ranks copy 2(n-1)/n of the
	# data and reduce (n-1)/n of it (two reads and a write: 1.5 copies), so all
	# ranks together copy 3.5 (n-1) times the data; at the rate n processes
	# copy at once, busbw can be no more than 4 x that rate / (7 n). Beside it
	# the ceiling of the device itself: the 2 (n-1) copies that cross between
	# ranks go at the rate n processes write through the device at once (W),
	# only the reductions 1.5 (n-1) at the memcpy rate (M):
	# busbw <= (2/n) / (2/W + 1.5/M).
	for (profile in profiles_seen) {
		for (ranks = 2; ranks <= 4; ranks += 2) {
			bolt_key = "bolt " profile " " ranks " allreduce 67108864 busbw"
			memory_key = "memory " profile " " ranks " copy 0 busbw"
			device_key = "device " profile " " ranks " write 0 busbw"
			# Rows saved before the ceiling was measured per profile name none.
			if (!((memory_key, 1) in by_round))
				memory_key = "memory - " ranks " copy 0 busbw"
			shares = ""
			device_shares = ""
			device_ceilings = ""
			for (round = 1; round <= rounds; round++) {
				if (!((bolt_key, round) in by_round) || !((memory_key, round) in by_round) ||
				    by_round[memory_key, round] <= 0)
					continue
				copy = by_round[memory_key, round]
				ceiling = busbw_ceiling(ranks, copy, copy)
				shares = shares " " by_round[bolt_key, round] / ceiling
				if (!((device_key, round) in by_round) || by_round[device_key, round] <= 0)
					continue
				ceiling = busbw_ceiling(ranks, by_round[device_key, round], copy)
				device_ceilings = device_ceilings " " ceiling
				device_shares = device_shares " " by_round[bolt_key, round] / ceiling
			}
			if (shares == "") {
				if ((memory_key, 1) in by_round || (bolt_key, 1) in by_round)
					printf("%s, %d ranks, 64 MiB all-reduce busbw >= 85%% of the memory " \
					       "ceiling: NOT MEASURED\n", profile, ranks)
				continue
			}
			share = median_of(shares, "share")
			memory = median_of(busbws[memory_key], memory_key)
			printf("%s, %d ranks, 64 MiB all-reduce busbw >= 85%% of the memory ceiling: " \
			       "busbw %.2f%s GB/s, ceiling %.2f GB/s (%d processes copy %.2f%s GB/s " \
			       "in all), %.0f%% [%.0f-%.0f%%]: %s\n", profile, ranks,
			       median_of(busbws[bolt_key], bolt_key), range(bolt_key),
			       busbw_ceiling(ranks, memory, memory), ranks, memory, range(memory_key), 100 * share,
			       100 * low["share"], 100 * high["share"], share >= 0.85 ? "MET" : "NOT MET")
			if (device_shares == "")
				continue
			share = median_of(device_shares, "device_share")
			printf("  the ceiling of the device itself there: %.2f%s GB/s (%d processes write %.2f%s GB/s " \
			       "in all through it), busbw %.0f%% [%.0f-%.0f%%] of it\n",
			       median_of(device_ceilings, "device_ceiling"), range("device_ceiling"), ranks,
			       median_of(busbws[device_key], device_key), range(device_key), 100 * share,
			       100 * low["device_share"], 100 * high["device_share"])
		}
	}
	printf("data check: %d wrong elements in all\n", wrong)
	# For the plot: median time per implementation, case and size.
	for (key in times) {
		split(key, part, " ")
		if (part[1] == "bolt" || part[1] ~ /^ompi/)
			print part[1], part[2], part[3], part[4], part[5], median_of(times[key], key) > table
	}
}' "$outputs/rows"

# One PNG per profile: a panel per collective (rows) and rank count (columns).
# Time rather than busbw: the benchmarks print busbw to 1 MB/s, which is 0 for the smallest.
if [ -n "$plot" ] && [ -s "$outputs/table" ]; then
	if ! command -v gnuplot >/dev/null 2>&1; then
		echo "# plot: no gnuplot"
	else
		for profile in $profile_words; do
			rows=$(echo "$collectives" | tr ',' ' ' | wc -w)
			columns=$(echo "$ranks_words" | wc -w)
			{
				echo "set terminal png noenhanced size $((columns * 450 + 150)),$((rows * 320))"
				echo "set output '$plot-$profile.png'"
				echo "set multiplot layout $rows,$columns title '$profile: us per operation" \
					"against bytes'"
				echo "set logscale xy 2; set format x '%.0b%B'; set grid; set key left top"
				for collective in $(echo "$collectives" | tr ',' ' '); do
					for ranks in $ranks_words; do
						echo "set title '$collective, $ranks ranks'"
						echo "plot '-' using 1:2 with linespoints title 'bolt'," \
							"'-' using 1:2 with linespoints title 'Open MPI shm'," \
							"'-' using 1:2 with linespoints title 'Open MPI over bolt'"
						for impl in bolt ompi_shm ompi_bolt; do
							awk -v impl="$impl" -v profile="$profile" -v ranks="$ranks" \
								-v collective="$collective" '$1 == impl && $2 == profile &&
								$3 == ranks && $4 == collective && $6 > 0 { print $5, $6 }' \
								"$outputs/table" | sort -n
							echo e
						done
					done
				done
				echo "unset multiplot"
			} | gnuplot && echo "# plot: $plot-$profile.png"
		done
	fi
fi
[ "$failures" -eq 0 ]
