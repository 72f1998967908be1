#!/bin/sh
# setup.sh: the commands of the README.
#   ./setup.sh demo     installs the Debian packages, builds bolt, runs the demo
#   ./setup.sh test     installs what is missing, builds, runs the whole test
#                       suite (plain build, make distcheck, the suite against
#                       Debian 13's libfabric 2.x in a Debian 13 root, which
#                       BOLT_DEBIAN13=0 skips, the AddressSanitizer/UBSan
#                       build, then the reduced Soft-RoCE set in a virtual
#                       machine, which BOLT_RXE=0 skips, and the reduced
#                       two-host set in two, which BOLT_HOSTS=0 skips)
#   ./setup.sh package  installs what is missing, builds the Debian package
#                       build-package/libbolt-fi_*.deb with dpkg-buildpackage
set -eu
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

install_packages() {
	missing=""
	for package in $(grep -v '^#' debian-packages.txt); do
		dpkg -s "$package" >/dev/null 2>&1 || missing="$missing $package"
	done
	[ -z "$missing" ] && return 0
	echo "setup.sh: installing Debian packages:$missing"
	sudo_command=""
	[ "$(id -u)" -eq 0 ] || sudo_command=sudo
	$sudo_command apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo_command apt-get install -y -qq $missing
}

# build DIRECTORY [configure options...]: an out-of-tree build
build() {
	directory=$1
	shift
	[ -x configure ] || ./autogen.sh
	mkdir -p "$directory"
	(cd "$directory" && { [ -f Makefile ] || "$top/configure" --enable-werror "$@"; } &&
	 make -j"$jobs")
}

# synthesis_count FIELD LINE: a number from Criterion's closing line
synthesis_count() {
	echo "$2" | sed -n "s/.*$1: \([0-9]*\).*/\1/p"
}

# summarize DIRECTORY...: one closing line over the Criterion tests and scripts
summarize() {
	passed=0
	failed=0
	for directory in "$@"; do
		[ -d "$directory/test" ] || continue
		for log in $(find "$directory/test" -name '*.log'); do
			synthesis=$(grep -a 'Synthesis: Tested:' "$log" | tail -n 1 || true)
			# Scripts that are no Criterion program close with "NAME: N passed, N failed".
			rxe=$(grep -a -E '^(rxe|fuzz|hosts): [0-9]* passed, [0-9]* failed$' "$log" | tail -n 1 || true)
			if [ -n "$rxe" ]; then
				passed=$((passed + $(echo "$rxe" | sed 's/^[a-z]*: \([0-9]*\) passed.*/\1/')))
				failed=$((failed + $(echo "$rxe" | sed 's/.* \([0-9]*\) failed$/\1/')))
			elif [ -n "$synthesis" ]; then
				passed=$((passed + $(synthesis_count Passing "$synthesis")))
				failed=$((failed + $(synthesis_count Failing "$synthesis")))
				failed=$((failed + $(synthesis_count Crashing "$synthesis")))
			elif grep -q ':test-result: PASS' "${log%.log}.trs" 2>/dev/null; then
				passed=$((passed + 1))
			elif grep -q ':test-result: SKIP' "${log%.log}.trs" 2>/dev/null; then
				:
			else
				failed=$((failed + 1))
			fi
		done
	done
	# Criterion passes a test whose process LeakSanitizer or UBSan complained about.
	sanitizer_reports=$(grep -l -a -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
		$(find "$@" -path '*/test/*' -name '*.log') 2>/dev/null || true)
	for log in $sanitizer_reports; do
		echo "setup.sh: sanitizer report in $log"
		failed=$((failed + 1))
	done
	echo "tests: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# run_machines NAME: make check-NAME's reduced set (BOLT_<NAME>_QUICK=1), bolt
# in virtual machines, its log kept in build/test/NAME; BOLT_<NAME>=0 skips it.
run_machines() {
	upper=$(echo "$1" | tr '[:lower:]' '[:upper:]')
	log=build/test/$1/check_$1.log
	rm -f "$log"
	[ "$(eval echo "\${BOLT_$upper:-1}")" = 0 ] && return 0
	mkdir -p "build/test/$1"
	(cd build && env "BOLT_${upper}_QUICK=1" make "check-$1") >"$log" 2>&1
	machines_status=$?
	grep -a -E "^(== |ok: |FAILED: |$1[: ])" "$log" || true
	[ $machines_status -eq 0 ] || tail -n 60 "$log"
	return $machines_status
}

# show_failed_logs DIRECTORY: the end of each failed automake test's log, so
# that a failure in CI says why without the build tree at hand.
show_failed_logs() {
	for result in $(grep -l -E ':test-result: (FAIL|ERROR)' $(find "$1/test" -name '*.trs') 2>/dev/null); do
		echo "setup.sh: the end of ${result%.trs}.log:"
		grep -a -v -E '^\[(----|PASS)\]' "${result%.trs}.log" | tail -n 60
	done
}

# stage NAME COMMAND...: runs COMMAND, then says how long it took.
stage() {
	stage_name=$1
	shift
	stage_start=$(date +%s)
	stage_status=0
	"$@" || stage_status=1
	echo "setup.sh: $stage_name took $(($(date +%s) - stage_start)) s"
	return $stage_status
}

# The tests distcheck's make check runs: the tarball's whole suite runs in the
# Debian 13 stage; these check that the tarball's build loads and documents bolt.
distcheck_tests="test/unit/test_params test/integration/provider_load.sh \
	test/integration/man_pages.sh test/consumers/api_version.sh"

# run_distcheck: make distcheck from build/ (the tarball builds, installs where
# an unprivileged user can, uninstalls and cleans); leaves build/bolt-*.tar.gz.
run_distcheck() {
	(cd build && make -j"$jobs" distcheck TESTS="$distcheck_tests") >build/distcheck.log 2>&1 ||
		{ tail -n 40 build/distcheck.log; return 1; }
	grep -a -E '^(PASS|FAIL|ERROR):' build/distcheck.log
	echo "distcheck: passed"
}

# run_debian13: the tarball's suite against Debian 13's libfabric 2.x in a
# Debian 13 root (test/debian13), and build/ there, built against this host's.
run_debian13() {
	rm -rf build-debian13/build
	[ "${BOLT_DEBIAN13:-1}" = 0 ] && return 0
	test/debian13/check_debian13.sh "$(ls build/bolt-*.tar.gz | tail -n 1)" build-debian13 build
}

# run_fuzz: make check-fuzz, its log kept; the tail shown when it fails.
run_fuzz() {
	mkdir -p build/test/fuzz
	(cd build && make check-fuzz >test/fuzz/check_fuzz.log 2>&1) ||
		{ tail -n 40 build/test/fuzz/check_fuzz.log; return 1; }
}

run_tests() {
	status=0
	build build
	stage "make check" sh -c "cd build && make -j$jobs check" || { status=1; show_failed_logs build; }
	# Each fuzz target for 30 s (about 80 s in all); skipped where clang is missing.
	stage "fuzzing" run_fuzz || status=1
	stage "make distcheck" run_distcheck || status=1
	stage "Debian 13 (libfabric 2.x)" run_debian13 || status=1
	build build-asan --enable-sanitizers
	(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		make -j"$jobs" check) || { status=1; show_failed_logs build-asan; }
	# bolt on Soft-RoCE in one virtual machine, then between two.
	stage "Soft-RoCE" run_machines rxe || status=1
	stage "two hosts" run_machines hosts || status=1
	summarize build build-asan build-debian13/build || status=1
	return $status
}

# run_package: the Debian package, built by dpkg-buildpackage from a copy of
# the source tree (which it writes its packages next to) in build-package/.
run_package() {
	rm -rf build-package
	mkdir -p build-package/source
	tar -C "$top" --exclude=./.git --exclude='./build*' --exclude=./debian/build -cf - . |
		tar -C build-package/source -xf -
	(cd build-package/source && dpkg-buildpackage -us -uc -b -j"$jobs") >build-package/build.log 2>&1 ||
		{ tail -n 40 build-package/build.log; return 1; }
	for package in build-package/libbolt-fi_*.deb; do
		echo "setup.sh: built $package; install it with: sudo apt-get install ./$package"
	done
}

# demo_pingpong PROFILE: libfabric's fi_pingpong, server and client, over bolt
demo_pingpong() {
	port=$((40000 + $$ % 10000))
	export FI_PROVIDER_PATH="$top/build/.libs" FI_BOLT_SOFT="$1" FI_BOLT_SOFT_NAMESPACE="demo-$$"
	fi_pingpong -p bolt -e rdm -I 200 -B "$port" >/dev/null 2>&1 &
	server=$!
	sleep 1
	fi_pingpong -p bolt -e rdm -I 200 -P "$port" 127.0.0.1
	wait $server
	unset FI_PROVIDER_PATH FI_BOLT_SOFT FI_BOLT_SOFT_NAMESPACE
}

run_demo() {
	build build
	echo
	echo "== bolt_info on the software device, Thunderbolt profile =="
	FI_BOLT_SOFT=thunderbolt FI_BOLT_SOFT_NAMESPACE="demo-$$" build/util/bolt_info
	echo
	echo "== fi_info -p bolt, software device, RoCE v2 profile =="
	FI_PROVIDER_PATH="$top/build/.libs" FI_BOLT_SOFT=rocev2 FI_BOLT_SOFT_NAMESPACE="demo-$$" \
		fi_info -p bolt
	echo
	echo "== fi_pingpong between two processes over bolt, Thunderbolt profile =="
	demo_pingpong thunderbolt
	echo
	echo "== collectives: 4 ranks over bolt, Thunderbolt profile (plot: build/collective-busbw.png) =="
	FI_PROVIDER_PATH="$top/build/.libs" FI_BOLT_SOFT=thunderbolt FI_BOLT_SOFT_NAMESPACE="demo-$$" \
		build/util/bolt_collective_bench -n 4 -c allreduce,allgather -b 16 -e 64M -f 4 \
		--plot build/collective-busbw.png
}

case "${1:-}" in
demo) install_packages; run_demo ;;
test) install_packages; run_tests ;;
package) install_packages; run_package ;;
*) echo "usage: $0 demo|test|package" >&2; exit 2 ;;
esac
