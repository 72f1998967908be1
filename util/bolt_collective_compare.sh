#!/bin/sh
# bolt_collective_compare.sh: in one run, the software device's raw RDMA write
# bandwidth (util/softrdma_bench), bolt's collectives (util/bolt_collective_bench,
# N local ranks) and Open MPI's shared-memory MPI_Allreduce
# (util/mpi_collective_bench under mpirun), then one line per target of issue 5:
#   all-reduce 64 MiB float32, 4 ranks: busbw >= 90 % of raw RDMA write
#   bandwidth at 64 MiB, and >= Open MPI's busbw; the 8 B all-reduce latency;
# and the busbw against what the machine's memory allows N ranks at all.
# Optionally a PNG of busbw against size. Run it from the build directory,
# or name that with --build.
set -u

usage() {
	echo "usage: $0 [--profile thunderbolt|rocev2] [--ranks N] [--build DIR] [--plot FILE.png]"
}

profile=thunderbolt
ranks=4
build=$(pwd)
plot=
while [ $# -gt 0 ]; do
	case "$1" in
	--profile) profile=${2:?}; shift 2 ;;
	--ranks) ranks=${2:?}; shift 2 ;;
	--build) build=${2:?}; shift 2 ;;
	--plot) plot=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
build=$(cd "$build" && pwd) || exit 2
for program in softrdma_bench bolt_collective_bench; do
	[ -x "$build/util/$program" ] || { echo "$0: $build/util/$program is not built" >&2; exit 2; }
done

namespace="bolt-collective-$$"
raw_output=$(mktemp) && bolt_output=$(mktemp) && mpi_output=$(mktemp) || exit 2
cleanup() {
	rm -f "$raw_output" "$bolt_output" "$mpi_output" /dev/shm/bolt-softrdma-*-"$namespace"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FI_PROVIDER_PATH="$build/.libs"
FI_PROVIDER=bolt
FI_BOLT_SOFT=$profile
FI_BOLT_SOFT_NAMESPACE=$namespace
export FI_PROVIDER_PATH FI_PROVIDER FI_BOLT_SOFT FI_BOLT_SOFT_NAMESPACE

echo "# bolt_collective_compare: profile $profile, $ranks ranks, $(nproc) cores," \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg) (figures are disturbed by other jobs)"
echo "## raw software device: softrdma_bench $profile"
"$build/util/softrdma_bench" "$profile" | tee "$raw_output"
"$build/util/softrdma_bench" --memcpy-processes "$ranks" | tee -a "$raw_output"
echo "## bolt: bolt_collective_bench -n $ranks"
# 8 B for the latency, then a sweep by 4 from 16 B to 64 MiB.
{
	"$build/util/bolt_collective_bench" -n "$ranks" -b 8 -e 8 &&
	"$build/util/bolt_collective_bench" -n "$ranks" -b 16 -e 64M -f 4 ${plot:+--plot "$plot"}
} | tee "$bolt_output"
if [ -x "$build/util/mpi_collective_bench" ] && command -v mpirun >/dev/null; then
	echo "## Open MPI: mpirun -n $ranks --mca btl self,vader mpi_collective_bench"
	mpirun --allow-run-as-root --oversubscribe -n "$ranks" --mca btl self,vader \
		"$build/util/mpi_collective_bench" -b 8 -e 64M -f 2 | tee "$mpi_output"
else
	echo "## Open MPI: not built (install libopenmpi-dev and openmpi-bin, then reconfigure)"
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

raw=$(awk '/write GB\/s/ { table = 1; next } /latency/ { table = 0 } table && $1 == 67108864 { print $3 }' "$raw_output")
bolt=$(awk '$1 == "allreduce" && $2 == 67108864 { print $8 }' "$bolt_output")
small=$(awk '$1 == "allreduce" && $2 == 8 { print $6 }' "$bolt_output")
memory=$(awk '$1 == "memcpy_processes" { print $4 }' "$raw_output")
mpi=$(awk '$1 == "mpi_allreduce" && $2 == 67108864 { print $8 }' "$mpi_output")
mpi_small=$(awk '$1 == "mpi_allreduce" && $2 == 8 { print $6 }' "$mpi_output")
echo "# targets (profile $profile, $ranks ranks, 64 MiB float32 all-reduce)"
# The memory ceiling: every byte the software device moves is a copy. A
# bandwidth-optimal all-reduce has each of n ranks copy 2(n-1)/n of the data
# and reduce (n-1)/n of it (two reads and a write: 1.5 times a copy), so all
# ranks together copy 3.5 (n-1) times the data; at the copy rate n processes
# get at once (memcpy, which the device's copies do not reach), busbw can be
# no more than 4 * that rate / (7 n), whatever the algorithm.
awk -v raw="${raw:-0}" -v bolt="${bolt:-0}" -v mpi="${mpi:-0}" -v small="${small:-?}" \
	-v mpi_small="${mpi_small:-?}" -v memory="${memory:-0}" -v ranks="$ranks" 'BEGIN {
	if (raw > 0)
		printf("busbw vs raw RDMA write: %.3f / %.3f GB/s = %.0f%% (target 90%%): %s\n",
		       bolt, raw, 100 * bolt / raw, bolt >= 0.9 * raw ? "MET" : "NOT MET")
	if (memory > 0 && ranks > 1)
		printf("busbw vs the memory ceiling (%d processes copy %.2f GB/s in all; " \
		       "ceiling 4 x that / (7 x %d)): %.3f / %.3f GB/s = %.0f%%\n", ranks, memory,
		       ranks, bolt, 4 * memory / (7 * ranks), 100 * bolt / (4 * memory / (7 * ranks)))
	if (mpi > 0)
		printf("busbw vs Open MPI MPI_Allreduce: %.3f / %.3f GB/s: %s\n", bolt, mpi,
		       bolt >= mpi ? "MET" : "NOT MET")
	printf("8 B all-reduce latency: bolt %s us, Open MPI %s us\n", small, mpi_small)
}'
