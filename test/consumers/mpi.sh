#!/bin/sh
# mpi.sh: test/consumers/mpi_consumer under Debian's Open MPI, through its ofi
# MTL, over bolt on the software device: 2 and 4 ranks, both profiles, and
# MPI_THREAD_MULTIPLE. Debian turns the ofi MTL off in
# /etc/openmpi/openmpi-mca-params.conf; the --mca options on the command line
# turn it back on. mtl_ofi_verbose makes the MTL name the provider it chose,
# which must be bolt. Debian 12 has Open MPI 4.1, Debian 13 Open MPI 5.
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH
. "$(dirname "$0")/../integration/sanitizer_preload.sh"
program="$(pwd)/test/consumers/mpi_consumer"
log="mpi.$$.log"
failures=0

if ! command -v mpirun >/dev/null 2>&1; then
	echo "FAILED: no mpirun: install openmpi-bin (debian-packages.txt)"
	exit 1
fi
root_options=""
[ "$(id -u)" -eq 0 ] && root_options="--allow-run-as-root"

# mpi PROFILE RANKS ENVIRONMENT ARGUMENT: one mpirun into $log, its status in $status.
# ENVIRONMENT is one more VARIABLE=value for the ranks, or "-"; ARGUMENT the program's, or "".
mpi() {
	namespace="mpi-$$-$1-$2"
	set -- "$1" "$2" "$3" "$4" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include bolt \
		--mca mtl_ofi_verbose 1 -x FI_PROVIDER_PATH -x FI_BOLT_SOFT="$1" \
		-x FI_BOLT_SOFT_NAMESPACE="$namespace" -x FI_LOG_LEVEL=warn
	[ "$3" != "-" ] && set -- "$@" -x "$3"
	[ -n "${LD_PRELOAD:-}" ] && set -- "$@" -x LD_PRELOAD -x ASAN_OPTIONS
	ranks=$2
	argument=$4
	shift 4
	timeout 300 mpirun $root_options --oversubscribe -np "$ranks" "$@" "$program" $argument \
		>"$log" 2>&1
	status=$?
	rm -f /dev/shm/bolt-softrdma-*-"$namespace"
}

# run PROFILE RANKS ENVIRONMENT ARGUMENT: every rank chose bolt and passed every check.
run() {
	what="Open MPI over bolt, $1, $2 ranks${4:+, $4}$( [ "$3" != "-" ] && echo " ($3)")"
	mpi "$@"
	# Open MPI 4 says "mtl:ofi:prov: bolt", Open MPI 5 "mtl:ofi:provider: bolt".
	chosen=$(grep -c -E "mtl:ofi:prov(ider)?: bolt" "$log")
	if [ $status -eq 0 ] && [ "$chosen" -eq "$2" ] &&
	   grep -q "^mpi_consumer: $2 ranks: every check passed" "$log"; then
		echo "ok: $what"
	else
		echo "FAILED: $what: mpirun $status, bolt chosen by $chosen of $2 ranks"
		cat "$log"
		failures=$((failures + 1))
	fi
	rm -f "$log"
}

run thunderbolt 2 - ""
run thunderbolt 2 - thread-multiple
# Segments only, as on a Thunderbolt device whose RDMA write does not work.
run thunderbolt 2 FI_BOLT_SOFT_SEND_ONLY=1 ""
run rocev2 2 - ""
run rocev2 4 - ""

# The software device puts every rank on one device; real Thunderbolt hosts
# each have their own. Each rank needs a queue pair per peer and one to
# itself: 4 on each of four real devices, but 16 on the emulated one, above
# the profile's 10. Without more, the job fails (it does not hang), and bolt
# names the limit; FI_BOLT_SOFT_MAX_QP=16 gives the shared device what four
# hosts would have.
mpi thunderbolt 4 - ""
if [ $status -ne 0 ] && [ $status -ne 124 ] && grep -q "its limit is 10 queue pairs" "$log"; then
	echo "ok: Open MPI over bolt, thunderbolt, 4 ranks on one emulated device: fails, naming the limit"
else
	echo "FAILED: 4 ranks on one emulated Thunderbolt device: mpirun $status, expected an" \
		"error naming the limit of 10 queue pairs"
	cat "$log"
	failures=$((failures + 1))
fi
rm -f "$log"
run thunderbolt 4 FI_BOLT_SOFT_MAX_QP=16 ""
[ $failures -eq 0 ]
