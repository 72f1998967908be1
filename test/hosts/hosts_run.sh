# hosts_run.sh: sourced by check_hosts.sh: virtual machines of test/rxe's
# image joined by virtual wires, and commands run in them. Guest N's network
# card eth0 (MAC 52:54:00:b0:17:0N, so IPv6 link-local address
# fe80::5054:ff:feb0:170N) is one end of a qemu socket netdev on the host's
# loopback: guest 0 listens on 127.0.0.1:PORT, guest 1 connects, and no packet
# leaves qemu; three or more guests share each wire as members of a
# link-local multicast group (224.0.0.0/24, never forwarded) on the host's
# loopback (mcast=GROUP:PORT,localaddr=127.0.0.1). A second such wire (eth1, 169.254.100.N+1/24, no rxe) carries
# what programs exchange out of band in IPv4 only (fi_pingpong, perftest,
# Open MPI), so that the first can be IPv6-only. Each guest makes rxe0 on eth0
# (test/rxe/guest_init.sh) and runs
# the jobs the host leaves in its control directory; each has a monitor (a
# pair of pipes) for set_link, stop and cont. The work directory is shared
# into every guest at its host path, so a guest can leave a job for another
# (test/hosts/hosts_rsh.sh, Open MPI's launcher). With hosts_wires=2 at the
# boot (two guests only), each guest also has a second wire of its own, eth2
# (MAC ...:19:0N), with rxe1 on it: two cables between the hosts.
#
# hosts_boot COUNT SHARES            boots guests 0 to COUNT - 1 (after a hosts_halt too)
# hosts_start GUEST NAME COMMAND     runs sh -c COMMAND in GUEST, in the background
# hosts_wait GUEST NAME SECONDS      its exit status (124: still running after SECONDS)
# hosts_run GUEST NAME SECONDS COMMAND   both
# hosts_output GUEST NAME            the file holding its output
# hosts_monitor GUEST COMMAND        a qemu monitor command
# hosts_kill GUEST                   SIGKILL to the guest's qemu
# hosts_reboot_peer                  guest 1 booted again after hosts_kill 1
# hosts_halt                         stops every guest (also at exit)
hosts_here=${hosts_here:-$(cd "$(dirname "$0")" && pwd)}
guest_qemu_script=$hosts_here/../rxe/guest_qemu.sh
. "$guest_qemu_script"
hosts_work=$(mktemp -d "${TMPDIR:-/tmp}/bolt-hosts.XXXXXX")
# For hosts_rsh.sh in the guests, through the jobs' environment.
BOLT_HOSTS_WORK=$hosts_work
export BOLT_HOSTS_WORK
hosts_count=0
hosts_wires=1
hosts_memory=${BOLT_HOSTS_MEMORY:-1024}
# The link-local multicast groups (224.0.0.N) of three or more guests' wires:
# unassigned in IANA's block, and only ever on the host's loopback.
hosts_group_wire=200
hosts_group_control=201

# hosts_mac GUEST BYTE
hosts_mac() {
	printf '52:54:00:b0:%s:%02x' "$2" "$1"
}

hosts_link_local() {
	printf 'fe80::5054:ff:feb0:17%02x' "$1"
}

hosts_control_address() {
	echo "169.254.100.$(($1 + 1))"
}

# hosts_free_port FROM: a TCP port from FROM on that no socket of this host uses.
hosts_free_port() {
	port=$1
	while grep -qi ":$(printf '%04X' "$port") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
		port=$((port + 1))
	done
	echo "$port"
}

hosts_listening() {
	grep -qi "^ *[0-9]*: 0100007F:$(printf '%04X' "$1") 00000000:0000 0A" /proc/net/tcp
}

# hosts_boot_one GUEST WIRE CONTROL_WIRE SHARE_OPTIONS [SECOND_WIRE]: WIRE,
# CONTROL_WIRE and SECOND_WIRE are listen=... or connect=... of a socket netdev.
# The NICs run without event_idx. In one full check-hosts run the qemu at
# one end of the wire stopped taking packets for its guest mid-figures (its
# guest saw nothing wrong), so it stopped reading its socket, the other
# guest's TX queue timed out for good, and every check after it failed: the
# RX stall the 2024 qemu patch "virtio-net: Fix network stall at the host side
# waiting for kick" describes, a kick the event index never asks for.
hosts_boot_one() {
	control=$hosts_work/guest$1
	mkdir -p "$control/jobs"
	mkfifo "$control/monitor.in" "$control/monitor.out"
	echo "host$1" >"$control/hostname"
	echo "$(hosts_control_address "$1")/24" >"$control/control_address"
	: >"$control/wire"
	second_wire=
	if [ -n "${5:-}" ]; then
		: >"$control/second_wire"
		second_wire="-netdev socket,id=wire2,$5 -device virtio-net-pci,netdev=wire2,mac=$(hosts_mac "$1" 19),event_idx=off"
	fi
	cp "$control/../directory" "$control/directory"
	cp "$control/../shares" "$control/shares"
	cp "$hosts_here/../rxe/guest_init.sh" "$control/"
	guest_start "$hosts_image" "$control" 1 "$hosts_memory" \
		-chardev "pipe,id=monitor,path=$control/monitor" -mon chardev=monitor,mode=readline \
		-netdev "socket,id=wire,$2" \
		-device "virtio-net-pci,netdev=wire,mac=$(hosts_mac "$1" 17),event_idx=off" \
		-netdev "socket,id=control,$3" \
		-device "virtio-net-pci,netdev=control,mac=$(hosts_mac "$1" 18),event_idx=off" \
		$4 $second_wire
	echo "$guest_pid" >"$control/pid"
	# The monitor's answers, read so that it never blocks on a full pipe.
	cat "$control/monitor.out" >"$control/monitor.log" &
	echo $! >"$control/monitor.pid"
}

hosts_boot() {
	hosts_image=$("$hosts_here/../rxe/rxe_image.sh") || return 125
	BOLT_RXE_ACCELERATOR=$(guest_accelerator "$hosts_image")
	export BOLT_RXE_ACCELERATOR
	# An earlier boot's halted guests' directories go: their names are the new ones'.
	rm -rf "$hosts_work"/guest[0-9]* "$hosts_work/halt"
	hosts_count=$1
	share_options=$(guest_prepare "$hosts_work" "$2
$hosts_work")
	port=$(hosts_free_port $((20000 + $$ % 20000)))
	control_port=$(hosts_free_port $((port + 1)))
	second_port=$(hosts_free_port $((control_port + 1)))
	if [ "$hosts_count" -gt 2 ]; then
		hosts_boot_group
	else
		hosts_boot_one 0 "listen=127.0.0.1:$port" "listen=127.0.0.1:$control_port" "$share_options" \
			"$(hosts_second_wire listen)"
		for attempt in $(seq 100); do
			hosts_listening "$port" && hosts_listening "$control_port" &&
				{ [ "$hosts_wires" != 2 ] || hosts_listening "$second_port"; } && break
			sleep 0.1
		done
		hosts_boot_one 1 "connect=127.0.0.1:$port" "connect=127.0.0.1:$control_port" "$share_options" \
			"$(hosts_second_wire connect)"
	fi
	for guest in $(seq 0 $((hosts_count - 1))); do
		hosts_wait_ready "$guest" || return 125
	done
	wires="127.0.0.1:$port and :$control_port"
	[ "$hosts_count" -le 2 ] ||
		wires="224.0.0.$hosts_group_wire:$port and 224.0.0.$hosts_group_control:$control_port on 127.0.0.1"
	echo "hosts: $hosts_count guests booted ($BOLT_RXE_ACCELERATOR), wires $wires"
}

# hosts_second_wire listen|connect: the second wire's netdev end, if hosts_wires=2.
hosts_second_wire() {
	[ "$hosts_wires" = 2 ] && echo "$1=127.0.0.1:$second_port"
}

# hosts_boot_group: every guest on both wires through multicast groups, a
# group of its own for each wire, so that each wire sees only its own frames.
hosts_boot_group() {
	for guest in $(seq 0 $((hosts_count - 1))); do
		hosts_boot_one "$guest" "mcast=224.0.0.$hosts_group_wire:$port,localaddr=127.0.0.1" \
			"mcast=224.0.0.$hosts_group_control:$control_port,localaddr=127.0.0.1" "$share_options"
	done
}

# hosts_reboot_peer: guest 1 booted again after hosts_kill 1: guest 0's end of
# each wire listens again once the other end is gone.
hosts_reboot_peer() {
	mv "$hosts_work/guest1" "$hosts_work/guest1.killed"
	hosts_boot_one 1 "connect=127.0.0.1:$port" "connect=127.0.0.1:$control_port" "$share_options" \
		"$(hosts_second_wire connect)"
	hosts_wait_ready 1
}

# hosts_wait_ready GUEST: until the guest serves jobs (up to 5 minutes).
hosts_wait_ready() {
	control=$hosts_work/guest$1
	for attempt in $(seq 1200); do
		[ -e "$control/ready" ] || [ -e "$control/status" ] ||
			! kill -0 "$(cat "$control/pid")" 2>/dev/null || { sleep 0.25; continue; }
		break
	done
	[ -e "$control/ready" ] && return 0
	echo "hosts_run.sh: guest $1 did not start; its console and setup:" >&2
	tail -n 20 "$control/console.log" "$control/setup.log" "$control/output" 2>/dev/null >&2
	return 125
}

# Each job runs under a name of its own (NAME-N, N in NAME.last): a file the
# host removed may live on in a guest that still has it open (9p).
hosts_job() {
	echo "$2-$(cat "$hosts_work/guest$1/jobs/$2.last" 2>/dev/null || echo 0)"
}

hosts_output() {
	echo "$hosts_work/guest$1/jobs/$(hosts_job "$1" "$2").output"
}

hosts_start() {
	jobs=$hosts_work/guest$1/jobs
	echo $(($(cat "$jobs/$2.last" 2>/dev/null || echo 0) + 1)) >"$jobs/$2.last"
	job=$(hosts_job "$1" "$2")
	{
		guest_exports
		printf '%s\n' "$3"
	} >"$jobs/$job.tmp"
	mv "$jobs/$job.tmp" "$jobs/$job.command"
}

hosts_wait() {
	status_file=$hosts_work/guest$1/jobs/$(hosts_job "$1" "$2").status
	deadline=$(($(date +%s) + $3))
	while [ ! -s "$status_file" ]; do
		[ "$(date +%s)" -lt "$deadline" ] || return 124
		kill -0 "$(cat "$hosts_work/guest$1/pid")" 2>/dev/null || return 125
		sleep 0.1
	done
	return "$(cat "$status_file")"
}

hosts_run() {
	hosts_start "$1" "$2" "$4"
	hosts_wait "$1" "$2" "$3"
}

hosts_monitor() {
	echo "$2" >"$hosts_work/guest$1/monitor.in"
}

hosts_kill() {
	kill -KILL "$(cat "$hosts_work/guest$1/pid")" 2>/dev/null
}

hosts_halt() {
	: >"$hosts_work/halt"
	for guest in $(seq 0 $((hosts_count - 1))); do
		control=$hosts_work/guest$guest
		[ -e "$control/pid" ] || continue
		: >"$control/halt"
		pid=$(cat "$control/pid")
		for attempt in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		kill "$(cat "$control/monitor.pid")" 2>/dev/null
	done
	hosts_count=0
}

hosts_cleanup() {
	hosts_halt
	rm -rf "$hosts_work"
}
