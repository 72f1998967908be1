#!/bin/sh
# check_debian13.sh: bolt against Debian 13's libfabric 2.x, in the Debian 13
# root of debian13_root.sh (Debian's own packages, nothing installed on the
# host). From a release tarball (make dist): configure --enable-werror, build
# and run make check (the suite, Open MPI 5 over bolt and an application
# asking for FI_VERSION(2,0) among it) in DIRECTORY/build. With HOST_BUILD, a
# build directory of bolt against the host's older libfabric, it also checks
# what happens when bolt is not built against the libfabric it runs with:
# bolt_info warns, and fi_info, asking for 2.x, does not see that bolt.
# Ends with "debian13: N passed, N failed" over those checks and make check's.
#
# Usage: check_debian13.sh TARBALL DIRECTORY [HOST_BUILD]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 TARBALL DIRECTORY [HOST_BUILD]" >&2; exit 2; }
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"
directory=$(cd "$2" && pwd)
host_build=${3:+$(cd "$3" && pwd)}
jobs=$(nproc 2>/dev/null || echo 2)
passed=0
failed=0

count() {
	if [ "$1" -eq 0 ]; then
		echo "ok: $2"
		passed=$((passed + 1))
	else
		echo "FAILED: $2"
		failed=$((failed + 1))
	fi
}

rm -rf "$directory/src" "$directory/build"
mkdir -p "$directory/src" "$directory/build"
tar -xzf "$tarball" -C "$directory/src"
source_dir=$(echo "$directory"/src/*)

start=$(date +%s)
set +e
"$here/debian13_run.sh" --share "$directory" -- sh -c "cd '$directory/build' &&
	'$source_dir/configure' --enable-werror >configure.log 2>&1 &&
	make -j$jobs >make.log 2>&1"
built=$?
[ $built -eq 0 ] || tail -n 30 "$directory/build/configure.log" "$directory/build/make.log"
count $built "Debian 13: bolt builds with -Werror against libfabric $(sed -n \
	's/^configure: building against libfabric \([^ ]*\).*/\1/p' "$directory/build/configure.log")"
if [ $built -eq 0 ]; then
	"$here/debian13_run.sh" --share "$directory" -- sh -c "cd '$directory/build' &&
		make -j$jobs check >check.log 2>&1"
	checked=$?
	grep -a -E '^(PASS|FAIL|XFAIL|XPASS|ERROR|SKIP):|^# [A-Z]+: ' "$directory/build/check.log"
	count $checked "Debian 13: make check"
fi

if [ -n "$host_build" ]; then
	"$here/debian13_run.sh" --share "$host_build" -- sh -c "cd '$host_build' &&
		FI_BOLT_SOFT=rocev2 FI_BOLT_SOFT_NAMESPACE=debian13-$$ util/bolt_info" \
		>"$directory/mismatch.log" 2>&1
	grep -q "^bolt_info: warning: applications that ask for FI_VERSION(2,[0-9]*) do not see bolt" \
		"$directory/mismatch.log"
	count $? "a bolt built against an older libfabric: bolt_info warns"
	"$here/debian13_run.sh" --share "$host_build" -- sh -c "cd '$host_build' &&
		FI_PROVIDER_PATH='$host_build/.libs' FI_BOLT_SOFT=rocev2 \
		FI_BOLT_SOFT_NAMESPACE=debian13-$$ FI_LOG_LEVEL=info fi_info -p bolt" \
		>"$directory/mismatch-fi_info.log" 2>&1
	! grep -q '^provider: bolt' "$directory/mismatch-fi_info.log" &&
		grep -q 'fi_version 1\.[0-9]* < requested' "$directory/mismatch-fi_info.log"
	count $? "a bolt built against an older libfabric: fi_info of 2.x does not list it"
	rm -f /dev/shm/bolt-softrdma-*-debian13-$$
fi
set -e
echo "debian13: stage took $(($(date +%s) - start)) s"
echo "debian13: $passed passed, $failed failed"
[ $failed -eq 0 ]
