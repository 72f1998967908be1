#!/bin/sh
# control_rail_cut.sh: bolt_bench's fi_send and fi_write between two processes
# over two cables (mesh:2x2) of the software device, while the fault plan
# cuts the first cable, which carries the control rail, and restores it. At
# 64 KiB and 256 KiB the messages are written into receives the target
# granted ahead and the writes go directly into its granted region: writes in
# flight when the control rail moves to the second cable take the target's
# keys there, those not yet posted ask instead.
#   - Thunderbolt (UC): what the old link lost is written again.
#   - RoCE v2 (RC): sends that came back flushed from the old link are sent
#     again, writes with the target's keys on the new port, unless they had
#     arrived. RC finds a cut cable only when a send's retries run out, which
#     takes the liveness time: the cut lasts longer. A cable that loses RC
#     acknowledgements (but carries data) makes sends that arrived come back
#     with an error: the last case checks that such a send happened, that the
#     move counted which of the flushed sends had arrived (how many depends on
#     timing, none under AddressSanitizer on a loaded machine), and that
#     nothing arrived twice or not at all.
# No error, every byte checked by bolt_bench, and the move must have happened.
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH FI_PROVIDER=bolt FI_LOG_LEVEL=warn
. "$(dirname "$0")/sanitizer_preload.sh"
failures=0

# cut PROFILE SIZE ITERATIONS [PLAN [PROOF...]]: one bolt_bench run through the
# fault (PLAN, by default the cut), whose log must also show each PROOF given.
cut() {
	output="control_rail_cut.$$"
	profile=$1
	size=$2
	plan=${4:-"at 200ms cut cable 0; at 1200ms restore cable 0"}
	level=warn
	[ -z "${5:-}" ] || level=info
	# A cable that only loses acknowledgements is found by RC's retries, which
	# last the liveness time: the shortest there is.
	env FI_BOLT_SOFT="$1" FI_BOLT_SOFT_TOPOLOGY=mesh:2x2 \
		FI_BOLT_SOFT_NAMESPACE="control-rail-cut-$$-$1-$2" FI_BOLT_SOFT_FAULT_PLAN="$plan" \
		FI_BOLT_LIVENESS_TIMEOUT=2000 FI_LOG_LEVEL=$level FI_LOG_PROV=bolt \
		timeout 300 ./util/bolt_bench -p bolt -b "$2" -e "$2" -l 1 -i "$3" --csv >"$output" 2>&1
	status=$?
	row=$(awk -F, '$1 == "bolt" && $5 == "bandwidth" && $11 == 0 { print $8 " GB/s send, " $9 " GB/s write" }' "$output")
	proof=yes
	shift 3
	[ $# -eq 0 ] || shift
	for pattern in "$@"; do
		grep -q -e "$pattern" "$output" || proof=no
	done
	if [ $status -eq 0 ] && [ -n "$row" ] && grep -q "control rail on .* moving to" "$output" &&
	   [ $proof = yes ]; then
		echo "ok: $profile, $size, $plan: the control rail moved mid-transfer, no error, every byte right ($row)"
	else
		echo "FAILED: $profile, $size, $plan: bolt_bench $status, row '$row'," \
			"a move logged: $(grep -c 'moving to' "$output"), '$*' logged: $proof"
		grep -v -e 'returned -61' -e OFI_MRAIL -e job_key -e fi_param_get "$output" | tail -n 30
		failures=$((failures + 1))
	fi
	rm -f "$output"
}

cut thunderbolt 64K 40000
cut thunderbolt 256K 10000
cut rocev2 64K 40000 "at 200ms cut cable 0; at 4000ms restore cable 0"
cut rocev2 256K 10000 "at 200ms cut cable 0; at 4000ms restore cable 0"
cut rocev2 256K 40000 "at 100ms acks 0 lost; at 4000ms acks 0 kept" \
	"its acknowledgement is lost" "flushed, [0-9]* had arrived"
exit $failures
