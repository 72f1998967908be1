#!/bin/sh
# guest_init.sh: the first process of the virtual machine's Debian root, handed
# over from the initramfs. Alone (rxe_run.sh), it makes a Soft-RoCE device
# (rxe0 on one end of a veth pair with an IPv4 link-local address, so its GID
# table holds a link-local and an IPv4-mapped RoCE v2 GID), runs the host's
# command from the control share (/bolt-rxe), leaves its output and exit
# status there and powers off. As one of several hosts (test/hosts, where the
# control share holds a file "wire"), it makes rxe0 on the network card of the
# wire to the other guests, with only its IPv6 link-local address (the host's
# commands add others), brings up a second wire for programs' own exchanges
# (no rxe there) and, if asked (a file "second_wire"), a second wire between
# the hosts with rxe1 on it, and runs the commands the host leaves in the
# control share's "jobs" directory until the host asks it to halt.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
control=/bolt-rxe

mount_filesystems() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	# The initramfs mounted /tmp before the shares, which may lie under it.
	grep -q ' /tmp ' /proc/mounts || mount -t tmpfs tmpfs /tmp
	mount -t tmpfs tmpfs /run
	mkdir -p /dev/shm /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t devpts devpts /dev/pts
	hostname "$(cat "$control/hostname" 2>/dev/null || echo rxe-guest)"
}

# wait_for DESCRIPTION COMMAND...: up to 10 s for COMMAND to succeed.
wait_for() {
	description=$1
	shift
	for attempt in $(seq 100); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "guest_init: timed out waiting for $description"
	return 1
}

# port_active [DEVICE]: rxe0's port, or DEVICE's.
port_active() {
	grep -q ACTIVE "/sys/class/infiniband/${1:-rxe0}/ports/1/state"
}

ipv4_mapped_gid() {
	grep -q '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/rxe0/ports/1/gids/1
}

# Only link-local addresses (169.254.0.0/16): the guest's wires reach nothing else.
make_rxe_device() {
	ip link set lo up &&
	modprobe crc32_generic && modprobe rdma_rxe && modprobe ib_uverbs &&
	ip link add veth0 type veth peer name veth1 &&
	ip address add 169.254.0.1/16 dev veth0 &&
	ip address add 169.254.0.2/16 dev veth1 &&
	ip link set veth0 up && ip link set veth1 up &&
	rdma link add rxe0 type rxe netdev veth0 &&
	wait_for "rxe0 port 1 to become ACTIVE" port_active &&
	wait_for "rxe0's IPv4-mapped GID" ipv4_mapped_gid
}

# The wire's card (eth0, or CARD) up with the IPv6 link-local address the kernel gives it.
link_local_ready() {
	ip -6 address show dev "${1:-eth0}" scope link | grep -q inet6 &&
	! ip -6 address show dev "${1:-eth0}" tentative | grep -q inet6
}

make_wire_device() {
	ip link set lo up &&
	modprobe crc32_generic && modprobe rdma_rxe && modprobe ib_uverbs && modprobe virtio_net &&
	wait_for "the wire's network card" ip link show eth0 &&
	ip link set eth0 up &&
	wait_for "eth0's IPv6 link-local address" link_local_ready &&
	rdma link add rxe0 type rxe netdev eth0 &&
	wait_for "rxe0 port 1 to become ACTIVE" port_active &&
	make_control_wire &&
	make_second_wire
}

# A second wire between the hosts (eth2, when the host made one): a second
# cable, rxe1 on it, the same as the first.
make_second_wire() {
	[ -e "$control/second_wire" ] || return 0
	wait_for "the second wire's network card" ip link show eth2 &&
	ip link set eth2 up &&
	wait_for "eth2's IPv6 link-local address" link_local_ready eth2 &&
	rdma link add rxe1 type rxe netdev eth2 &&
	wait_for "rxe1 port 1 to become ACTIVE" port_active rxe1
}

# The second wire's card (eth1), without rxe: for the programs' own
# out-of-band exchanges (fi_pingpong's, perftest's, Open MPI's), which know
# only IPv4, with the address the host gives, in another part of 169.254/16.
make_control_wire() {
	[ -s "$control/control_address" ] || return 0
	wait_for "the control wire's network card" ip link show eth1 &&
	ip address add "$(cat "$control/control_address")" dev eth1 &&
	ip link set eth1 up
}

# The host's commands: jobs/NAME.command runs in the shared directory, its
# output in NAME.output and, at its end, its exit status in NAME.status.
serve_jobs() {
	jobs=$control/jobs
	directory=$(cat "$control/directory")
	echo ready >"$control/ready"
	while [ ! -e "$control/halt" ]; do
		for job in "$jobs"/*.command; do
			[ -e "$job" ] || continue
			name=${job%.command}
			mv "$job" "$name.running"
			(cd "$directory" && sh "$name.running" >"$name.output" 2>&1 </dev/null
			 echo $? >"$name.exit" && mv "$name.exit" "$name.status") &
		done
		sleep 0.1
	done
}

power_off() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}

mount_filesystems
if [ -e "$control/wire" ]; then
	make_device=make_wire_device
else
	make_device=make_rxe_device
fi
if ! $make_device >"$control/setup.log" 2>&1; then
	echo "guest_init: could not make the rxe device:" >"$control/output"
	cat "$control/setup.log" >>"$control/output"
	echo 125 >"$control/status"
	power_off
fi
if [ -e "$control/wire" ]; then
	serve_jobs
	echo 0 >"$control/status"
	power_off
fi
(cd "$(cat "$control/directory")" && exec sh "$control/command") >"$control/output" 2>&1 </dev/null
echo $? >"$control/status"
power_off
