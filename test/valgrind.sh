#!/bin/sh
# valgrind.sh: the LOG_COMPILER of `make check-valgrind`. Runs one test
# program under valgrind's memcheck, with every process it starts, each
# process writing its report to PROGRAM.valgrind/PID.log. The test fails if
# it fails, or if any of its processes made a memory error or definitely lost
# memory: Criterion counts a test as passed whatever valgrind found in it,
# and a forked peer's findings never reach the test's exit status.
#
# The programs named in $VALGRIND_WITHOUT_LEAK_CHECK run without the leak
# check. Valgrind scans memory for leaks before a process that sends itself
# SIGKILL dies (13 s for a collective rank), and tests that kill a process
# that way give its peers 2 s to notice.
set -u
program=$1
reports=$program.valgrind
leak_check=full
for name in ${VALGRIND_WITHOUT_LEAK_CHECK:-}; do
	[ "./${name#./}" = "./${program#./}" ] && leak_check=no
done

rm -rf "$reports"
mkdir -p "$reports" || exit 99
valgrind --quiet --trace-children=yes --leak-check="$leak_check" \
	--show-leak-kinds=definite --errors-for-leak-kinds=definite \
	--log-file="$reports/%p.log" "$@"
status=$?

# Quiet, valgrind writes a process's report only for what it found ("==PID=="
# lines); its own notes ("--PID--", an unhandled syscall) are no finding.
found=$(grep -l '^==[0-9]*==' "$reports"/*.log 2>/dev/null)
for report in $found; do
	echo "valgrind.sh: memcheck found errors or leaks, see $report:"
	grep '^==[0-9]*==' "$report" | head -n 20
done
# A pass, or a skip (77), with findings is a failure; a failure stays as it is.
if [ -n "$found" ] && { [ "$status" -eq 0 ] || [ "$status" -eq 77 ]; }; then
	status=1
fi
exit "$status"
