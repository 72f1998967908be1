#!/bin/sh
# bolt_loss_runs.sh: issue 28's many runs at 1 % loss. bolt's loss tests for
# messaging (700 tagged messages; 90 large ones written by RDMA), RMA and the
# collectives (2 and 3 ranks, 100 all-reduces and all-gathers of 64 B to
# 256 KiB), each run --runs N times (default 100), run k
# with drop seed k (BOLT_TEST_LOSS_SEED), on the software device's
# Thunderbolt profile, which drops 1 % of UC packets. Every run checks every
# byte it received; a run passes only with all of it right and every
# operation completed. Prints, per test, the runs that passed of N and the
# seeds that failed, and exits non-zero if any did.
# Run it from the build directory, or name that with --build.
set -u

usage() {
	echo "usage: $0 [--build DIR] [--runs N]"
}

build=$(pwd)
runs=100
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?}; shift 2 ;;
	--runs) runs=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
build=$(cd "$build" && pwd) || exit 2

# PROGRAM FILTER: the test programs and the criterion test each row runs.
tests="test/endpoint/test_loss loss/messages_survive_one_percent_thunderbolt_uc
test/endpoint/test_loss loss/large_messages_survive_one_percent_with_data_writes_thunderbolt_uc
test/endpoint/test_loss loss/rma_survives_one_percent_with_data_writes_thunderbolt_uc
test/collective/test_collective collective_loss/thunderbolt_2_one_percent
test/collective/test_collective collective_loss/thunderbolt_3_one_percent"

for program in $(echo "$tests" | cut -d' ' -f1 | sort -u); do
	[ -x "$build/$program" ] || { echo "$0: $build/$program is not built (make check builds it)" >&2; exit 2; }
done

failed_any=0
while read -r program filter; do
	passed=0
	failed=""
	start=$(date +%s)
	for seed in $(seq "$runs"); do
		if BOLT_TEST_LOSS_SEED=$seed timeout 300 "$build/$program" --filter "$filter" \
			>/dev/null 2>&1; then
			passed=$((passed + 1))
		else
			failed="$failed $seed"
		fi
	done
	echo "$filter: $passed of $runs runs passed in $(($(date +%s) - start)) s${failed:+; failed seeds:$failed}"
	[ -z "$failed" ] || failed_any=1
done <<EOF
$tests
EOF
exit $failed_any
