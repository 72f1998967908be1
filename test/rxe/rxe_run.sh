#!/bin/sh
# rxe_run.sh: runs a command inside a virtual machine that has a real kernel
# verbs device, Linux's Soft-RoCE (rdma_rxe), and prints its output; exits
# with the command's exit status (124 when it timed out, 125 when the machine
# could not run it). The machine is qemu, with KVM where /dev/kvm can be
# opened and TCG emulation elsewhere (BOLT_RXE_KVM=0 asks for TCG), booting the image of rxe_image.sh (built and cached on first use). The
# source tree, and each --share directory, appear in the guest at the same
# path over 9p, so binaries built on the host run there as they are; the
# command starts in the current directory when it is shared, else in /.
# FI_* and BOLT_* variables of the caller are passed on.
#
# Usage: rxe_run.sh [--share DIR]... [--timeout SECONDS] [--memory MB] [--] COMMAND [ARG...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
source_tree=$(cd "$here/../.." && pwd)
timeout=${BOLT_RXE_TIMEOUT:-1800}
memory=2048
shares=$source_tree

usage() {
	echo "usage: $0 [--share DIR]... [--timeout SECONDS] [--memory MB] [--] COMMAND [ARG...]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--share) [ $# -ge 2 ] || usage; shares="$shares
$(cd "$2" && pwd)"; shift 2 ;;
	--timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
	--memory) [ $# -ge 2 ] || usage; memory=$2; shift 2 ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || usage
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "rxe_run.sh: qemu-system-x86_64 is missing (Debian package qemu-system-x86)" >&2; exit 125; }

image=$("$here/rxe_image.sh") || exit 125
control=$(mktemp -d "${TMPDIR:-/tmp}/bolt-rxe.XXXXXX")
qemu=""
tail_pid=""
cleanup() {
	[ -z "$qemu" ] || kill "$qemu" 2>/dev/null || true
	[ -z "$tail_pid" ] || kill "$tail_pid" 2>/dev/null || true
	rm -rf "$control"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

guest_qemu_script=$here/guest_qemu.sh
. "$guest_qemu_script"
{
	guest_exports
	printf 'exec'
	for word in "$@"; do
		printf ' %s' "$(guest_quote "$word")"
	done
	printf '\n'
} >"$control/command"
share_options=$(guest_prepare "$control" "$shares")
: >"$control/output"

guest_start "$image" "$control" 2 "$memory" -monitor none $share_options
qemu=$guest_pid
tail -n +1 -f --pid="$qemu" "$control/output" &
tail_pid=$!

elapsed=0
while kill -0 "$qemu" 2>/dev/null && [ "$elapsed" -lt "$timeout" ]; do
	sleep 1
	elapsed=$((elapsed + 1))
done
if kill -0 "$qemu" 2>/dev/null; then
	kill "$qemu"
	wait "$qemu" 2>/dev/null || true
	qemu=""
	wait "$tail_pid" 2>/dev/null || true
	tail_pid=""
	echo "rxe_run.sh: timed out after $timeout s" >&2
	exit 124
fi
wait "$qemu" 2>/dev/null || true
qemu=""
wait "$tail_pid" 2>/dev/null || true
tail_pid=""
if [ ! -s "$control/status" ]; then
	echo "rxe_run.sh: the virtual machine stopped without running the command; its console:" >&2
	tail -n 40 "$control/console.log" >&2
	exit 125
fi
exit "$(cat "$control/status")"
