#!/bin/sh
# pingpong.sh: Debian's fi_pingpong (libfabric-bin) between two processes over
# bolt on the software device, loaded by libfabric from FI_PROVIDER_PATH, on
# both profiles and with RDMA write turned off. fi_pingpong checks its data.
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH
. "$(dirname "$0")/sanitizer_preload.sh"
failures=0

# run PROFILE SEND_ONLY PORT: one server and one client, their statuses in
# client_status and server_status.
run() {
	env FI_BOLT_SOFT="$1" FI_BOLT_SOFT_SEND_ONLY="$2" FI_BOLT_SOFT_NAMESPACE="$namespace" \
		timeout 120 fi_pingpong -p bolt -e rdm -I 20 -S all -B "$3" >"server.$$" 2>&1 &
	server=$!
	sleep 1
	env FI_BOLT_SOFT="$1" FI_BOLT_SOFT_SEND_ONLY="$2" FI_BOLT_SOFT_NAMESPACE="$namespace" \
		timeout 120 fi_pingpong -p bolt -e rdm -I 20 -S all -P "$3" 127.0.0.1 >"client.$$" 2>&1
	client_status=$?
	wait $server
	server_status=$?
}

# pingpong PROFILE SEND_ONLY: both must succeed. fi_pingpong's own port is
# taken below the kernel's ephemeral ports, which other tests' side channels
# use; one that another job holds is tried again elsewhere.
pingpong() {
	namespace="pingpong-$$-$1-$2"
	for attempt in 0 1 2 3 4; do
		run "$1" "$2" $((20000 + ($$ + attempt * 2503) % 12000))
		grep -q "Address already in use" "server.$$" || break
	done
	if [ $client_status -eq 0 ] && [ $server_status -eq 0 ] && grep -q "^1m " "client.$$"; then
		echo "ok: fi_pingpong on $1 (send-only $2)"
		grep -E "^(64|1m) " "client.$$"
	else
		echo "FAILED: fi_pingpong on $1 (send-only $2): client $client_status, server $server_status"
		cat "client.$$" "server.$$"
		failures=$((failures + 1))
	fi
	rm -f "client.$$" "server.$$" /dev/shm/bolt-softrdma-*-"$namespace"
}

pingpong thunderbolt 0
pingpong thunderbolt 1
pingpong rocev2 0
[ $failures -eq 0 ]
