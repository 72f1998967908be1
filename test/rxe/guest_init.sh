#!/bin/sh
# guest_init.sh: the first process of the virtual machine's Debian root, handed
# over from the initramfs. It makes a Soft-RoCE device (rxe0 on one end of a
# veth pair with an IPv4 address, so its GID table holds a link-local and an
# IPv4-mapped RoCE v2 GID), runs the host's command from the control share
# (/bolt-rxe), leaves its output and exit status there and powers off.
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
	hostname rxe-guest
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

port_active() {
	grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state
}

ipv4_mapped_gid() {
	grep -q '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/rxe0/ports/1/gids/1
}

# 198.18.0.0/15 is the benchmarking range (RFC 2544); the VM has no network card.
make_rxe_device() {
	ip link set lo up &&
	modprobe crc32_generic && modprobe rdma_rxe && modprobe ib_uverbs &&
	ip link add veth0 type veth peer name veth1 &&
	ip address add 198.18.0.1/24 dev veth0 &&
	ip address add 198.18.0.2/24 dev veth1 &&
	ip link set veth0 up && ip link set veth1 up &&
	rdma link add rxe0 type rxe netdev veth0 &&
	wait_for "rxe0 port 1 to become ACTIVE" port_active &&
	wait_for "rxe0's IPv4-mapped GID" ipv4_mapped_gid
}

power_off() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}

mount_filesystems
if ! make_rxe_device >"$control/setup.log" 2>&1; then
	echo "guest_init: could not make the rxe device:" >"$control/output"
	cat "$control/setup.log" >>"$control/output"
	echo 125 >"$control/status"
	power_off
fi
(cd "$(cat "$control/directory")" && exec sh "$control/command") >"$control/output" 2>&1 </dev/null
echo $? >"$control/status"
power_off
