#!/bin/sh
# control_rail_cut.sh: bolt_bench's fi_send and fi_write between two processes
# over two cables (mesh:2x2) of the software device, Thunderbolt profile (UC),
# while the fault plan cuts the first cable, which carries the control rail,
# and restores it. At 64 KiB and 256 KiB the messages are written into
# receives the target granted ahead and the writes go directly into its
# granted region: writes in flight when the control rail moves to the second
# cable take the target's keys there, those not yet posted ask instead. No
# error, every byte checked by bolt_bench, and the move must have happened.
# Not RoCE v2 (RC): there a write that comes back flushed from the old
# control rail still fails its connection (docs/design.md, failover).
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH FI_PROVIDER=bolt FI_LOG_LEVEL=warn
. "$(dirname "$0")/sanitizer_preload.sh"
failures=0

# cut PROFILE SIZE ITERATIONS: one bolt_bench run through the cut.
cut() {
	output="control_rail_cut.$$"
	env FI_BOLT_SOFT="$1" FI_BOLT_SOFT_TOPOLOGY=mesh:2x2 \
		FI_BOLT_SOFT_NAMESPACE="control-rail-cut-$$-$1-$2" \
		FI_BOLT_SOFT_FAULT_PLAN="at 200ms cut cable 0; at 1200ms restore cable 0" \
		timeout 300 ./util/bolt_bench -p bolt -b "$2" -e "$2" -l 1 -i "$3" --csv >"$output" 2>&1
	status=$?
	row=$(awk -F, '$1 == "bolt" && $5 == "bandwidth" && $11 == 0 { print $8 " GB/s send, " $9 " GB/s write" }' "$output")
	if [ $status -eq 0 ] && [ -n "$row" ] && grep -q "control rail on .* moving to" "$output"; then
		echo "ok: $1, $2: the control rail moved mid-transfer, no error, every byte right ($row)"
	else
		echo "FAILED: $1, $2: bolt_bench $status, row '$row', a move logged: $(grep -c 'moving to' "$output")"
		grep -v -e 'returned -61' -e OFI_MRAIL -e job_key "$output" | tail -n 30
		failures=$((failures + 1))
	fi
	rm -f "$output"
}

cut thunderbolt 64K 40000
cut thunderbolt 256K 10000
exit $failures
