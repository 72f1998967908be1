# guest_qemu.sh: sourced by rxe_run.sh and test/hosts/hosts_run.sh: how a
# virtual machine of rxe_image.sh's image is started. Its control directory
# (the 9p share bolt-control, /bolt-rxe in the guest) holds guest_init.sh, the
# list of shares the initramfs mounts and the directory commands start in.

# guest_quote WORD: WORD in single quotes for sh.
guest_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# guest_exports: the caller's FI_* and BOLT_* variables as sh export lines.
guest_exports() {
	env | grep -E '^(FI|BOLT)_[A-Za-z0-9_]*=' | while IFS= read -r assignment; do
		printf 'export %s=%s\n' "${assignment%%=*}" "$(guest_quote "${assignment#*=}")"
	done
}

# guest_accelerator IMAGE: qemu's options for the fastest accelerator that
# boots IMAGE's kernel here: KVM when /dev/kvm opens and the kernel boots on it
# (to its panic for want of a root, within seconds: nested KVM may only hang),
# else TCG. BOLT_RXE_ACCELERATOR holds the answer for a caller's later guests;
# BOLT_RXE_KVM=0 asks for TCG.
guest_accelerator() {
	guest_tcg="-accel tcg,thread=multi -cpu max"
	if [ -n "${BOLT_RXE_ACCELERATOR:-}" ]; then
		echo "$BOLT_RXE_ACCELERATOR"
	elif [ "${BOLT_RXE_KVM:-1}" = 0 ] || [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo "$guest_tcg"
	else
		guest_probe=$(mktemp)
		timeout 15 qemu-system-x86_64 -accel kvm -cpu host -smp 1 -m 256 -display none \
			-no-reboot -nic none -monitor none -serial "file:$guest_probe" \
			-kernel "$1/vmlinux" -append "console=ttyS0 panic=-1" </dev/null >/dev/null 2>&1
		if grep -q 'Kernel panic' "$guest_probe"; then
			echo "-accel kvm -cpu host"
		else
			echo "$guest_tcg"
		fi
		rm -f "$guest_probe"
	fi
}

# guest_prepare CONTROL SHARES: CONTROL ready for a guest that mounts each of
# SHARES (one directory a line) at the same path; prints qemu's -virtfs options.
# Nested shares mount after their parents; commands start in the current
# directory when it is shared, else in /.
guest_prepare() {
	guest_control=$1
	cp "$(dirname "$guest_qemu_script")/guest_init.sh" "$guest_control/"
	guest_directory=/
	guest_index=0
	: >"$guest_control/shares"
	for guest_share in $(printf '%s\n' "$2" | sort -u); do
		echo "share$guest_index $guest_share" >>"$guest_control/shares"
		printf ' -virtfs local,path=%s,mount_tag=share%s,security_model=none,multidevs=remap' \
			"$guest_share" "$guest_index"
		case "$PWD/" in "$guest_share"/*)
			[ ${#guest_share} -lt ${#guest_directory} ] && [ "$guest_directory" != / ] ||
				guest_directory=$PWD ;;
		esac
		guest_index=$((guest_index + 1))
	done
	echo "$guest_directory" >"$guest_control/directory"
}

# guest_start IMAGE CONTROL CPUS MEMORY_MB [QEMU OPTION...]: the machine in the
# background, its pid in $guest_pid; its console in CONTROL/console.log.
# -kernel takes the uncompressed ELF kernel through PVH boot.
guest_start() {
	guest_image=$1
	guest_control=$2
	guest_cpus=$3
	guest_memory=$4
	shift 4
	qemu-system-x86_64 $(guest_accelerator "$guest_image") -smp "$guest_cpus" -m "$guest_memory" \
		-display none -no-reboot -nic none \
		-serial "file:$guest_control/console.log" \
		-kernel "$guest_image/vmlinux" -initrd "$guest_image/initramfs.cpio" \
		-append "console=ttyS0 quiet loglevel=3 panic=-1 rw" \
		-drive "file=$guest_image/root.img,format=raw,if=virtio,snapshot=on" \
		-virtfs "local,path=$guest_control,mount_tag=bolt-control,security_model=none,multidevs=remap" \
		"$@" </dev/null &
	guest_pid=$!
}
