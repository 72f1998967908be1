#!/bin/sh
# mpi.sh: test/consumers/mpi_consumer under Debian's Open MPI, through its ofi
# MTL, over bolt on the software device: 2 and 4 ranks, both profiles. Debian
# turns the ofi MTL off in /etc/openmpi/openmpi-mca-params.conf; the --mca
# options on the command line turn it back on. mtl_ofi_verbose makes the MTL
# name the provider it chose, which must be bolt.
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH
. "$(dirname "$0")/../integration/sanitizer_preload.sh"
program="$(pwd)/test/consumers/mpi_consumer"
failures=0

if ! command -v mpirun >/dev/null 2>&1; then
	echo "FAILED: no mpirun: install openmpi-bin (debian-packages.txt)"
	exit 1
fi
root_options=""
[ "$(id -u)" -eq 0 ] && root_options="--allow-run-as-root"

# run PROFILE RANKS [VARIABLE=value]: one mpirun; every rank must pass every check.
run() {
	profile=$1
	ranks=$2
	extra=${3:-}
	namespace="mpi-$$-$profile-$ranks"
	log="mpi.$$.log"
	set -- --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include bolt \
		--mca mtl_ofi_verbose 1 \
		-x FI_PROVIDER_PATH -x FI_BOLT_SOFT="$profile" -x FI_BOLT_SOFT_NAMESPACE="$namespace"
	[ -n "$extra" ] && set -- "$@" -x "$extra"
	[ -n "${LD_PRELOAD:-}" ] && set -- "$@" -x LD_PRELOAD -x ASAN_OPTIONS
	timeout 300 mpirun $root_options --oversubscribe -np "$ranks" "$@" "$program" >"$log" 2>&1
	status=$?
	chosen=$(grep -c "mtl:ofi:prov: bolt" "$log")
	if [ $status -eq 0 ] && [ "$chosen" -eq "$ranks" ] &&
	   grep -q "^mpi_consumer: $ranks ranks: every check passed" "$log"; then
		echo "ok: Open MPI over bolt, $profile, $ranks ranks ${extra:+($extra)}"
	else
		echo "FAILED: Open MPI over bolt, $profile, $ranks ranks ${extra:+($extra)}:" \
			"mpirun $status, bolt chosen by $chosen of $ranks ranks"
		cat "$log"
		failures=$((failures + 1))
	fi
	rm -f "$log" /dev/shm/bolt-softrdma-*-"$namespace"
}

run thunderbolt 2
# The software device puts every rank on one device; real Thunderbolt hosts
# each have their own. Each rank needs a queue pair per peer and one to
# itself: 4 on each of four real devices, but 16 on the emulated one, above
# the profile's 10. FI_BOLT_SOFT_MAX_QP lifts the shared device to that.
run thunderbolt 4 FI_BOLT_SOFT_MAX_QP=16
run rocev2 2
run rocev2 4
[ $failures -eq 0 ]
