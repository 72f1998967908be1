# tally.sh: sourced by check_rxe.sh and test/hosts/check_hosts.sh: checks
# counted as they pass and fail, and the closing line setup.sh counts.
passed=0
failed=0

pass() {
	echo "ok: $*"
	passed=$((passed + 1))
}

fail() {
	echo "FAILED: $*"
	failed=$((failed + 1))
}

# tally_end NAME: "NAME: N passed, N failed"; false after a failure.
tally_end() {
	echo "$1: $passed passed, $failed failed"
	[ $failed -eq 0 ]
}
