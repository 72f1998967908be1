#!/bin/sh
# bolt_bench_loss.sh: fi_send and fi_write bandwidth of bolt on the software
# device's Thunderbolt profile while it drops UC packets
# (FI_BOLT_SOFT_DROP_PPM), at a few sizes, against the loss-free figure: the
# issue 28 targets, 80 % of it at 0.1 % loss and 50 % at 1 %. Rounds
# alternate the drop rates, so that the shared machine's drift falls on all
# alike; the table shows medians, the load average with each round, and the
# data bolt_bench found wrong. Each figure moves 1 GiB: shorter runs measure
# mostly the first segments, before the segment size follows the loss, and
# the scheduler's gaps. Each share of the loss-free figure is the median of
# the rounds' own shares (paired, as bolt_bench_compare.sh judges). Run it
# from the build directory, or name that with --build.
set -u

usage() {
	echo "usage: $0 [--build DIR] [--rounds N] [--rates 0,1000,10000] [--sizes 65536,1048576,67108864]"
}

build=$(pwd)
rounds=3
rates=0,1000,10000
sizes=65536,1048576,67108864
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--rates) rates=${2:?}; shift 2 ;;
	--sizes) sizes=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
build=$(cd "$build" && pwd) || exit 2
bolt_bench=$build/util/bolt_bench
[ -x "$bolt_bench" ] || { echo "$0: $bolt_bench is not built" >&2; exit 2; }
rows=$(mktemp) || exit 2
trap 'rm -f "$rows"' EXIT
trap 'exit 130' INT TERM

FI_PROVIDER=bolt
FI_PROVIDER_PATH="$build/.libs"
FI_BOLT_SOFT=thunderbolt
FI_BOLT_SOFT_NAMESPACE="bolt-bench-loss-$$"
export FI_PROVIDER FI_PROVIDER_PATH FI_BOLT_SOFT FI_BOLT_SOFT_NAMESPACE

# About 1 GiB per figure, at least 8 operations.
iterations() {
	count=$((1073741824 / $1))
	[ "$count" -lt 8 ] && count=8
	echo "$count"
}

round=1
while [ "$round" -le "$rounds" ]; do
	echo "# round $round of $rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	for rate in $(echo "$rates" | tr ',' ' '); do
		for size in $(echo "$sizes" | tr ',' ' '); do
			FI_BOLT_SOFT_DROP_PPM=$rate FI_BOLT_SOFT_SEED=$round \
				timeout 300 "$bolt_bench" -p bolt -b "$size" -e "$size" -l 8 -c \
				-i "$(iterations "$size")" 2>/dev/null |
				awk -F, -v round="$round" -v rate="$rate" \
					'$5 == "bandwidth" { print round, rate, $6, $8, $9, $11 }' >>"$rows" ||
				echo "# rate $rate size $size: bolt_bench failed"
		done
	done
	round=$((round + 1))
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
sed 's/^/# row (round, drop ppm, size, send GB\/s, write GB\/s, wrong): /' "$rows"

# median RATE SIZE COLUMN [BASE_RATE]: of the rounds' figures (column 4 send, 5 write),
# or of their shares of the same round's figure at BASE_RATE; the mean of the middle two
# for an even count.
median() {
	awk -v rate="$1" -v size="$2" -v column="$3" -v base="${4:-}" '
		$3 == size && $2 == rate { value[$1] = $column }
		$3 == size && base != "" && $2 == base { reference[$1] = $column }
		END { for (round in value) if (base == "") print value[round]
		      else if (reference[round] > 0) print value[round] / reference[round] }' "$rows" | sort -g |
		awk '{ value[NR] = $1 } END { if (NR) print NR % 2 ? value[(NR + 1) / 2] : (value[NR / 2] + value[NR / 2 + 1]) / 2; else print 0 }'
}

printf '%-8s %-10s %10s %13s %11s %13s %6s\n' "drop" "size" "send GB/s" "of loss-free" "write GB/s" \
	"of loss-free" "wrong"
loss_free=$(echo "$rates" | cut -d, -f1)
for size in $(echo "$sizes" | tr ',' ' '); do
	for rate in $(echo "$rates" | tr ',' ' '); do
		wrong=$(awk -v rate="$rate" -v size="$size" '$2 == rate && $3 == size { sum += $6 } END { print sum + 0 }' "$rows")
		printf '%-8s %-10s %10.3f %12.0f%% %11.3f %12.0f%% %6d\n' "$(awk -v rate="$rate" 'BEGIN { print rate / 10000 "%" }')" \
			"$size" "$(median "$rate" "$size" 4)" "$(awk -v share="$(median "$rate" "$size" 4 "$loss_free")" 'BEGIN { print 100 * share }')" \
			"$(median "$rate" "$size" 5)" "$(awk -v share="$(median "$rate" "$size" 5 "$loss_free")" 'BEGIN { print 100 * share }')" \
			"$wrong"
	done
done
