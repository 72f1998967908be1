#!/bin/sh
# rxe_image.sh: builds, once, the virtual machine that test/rxe/rxe_run.sh
# boots: Debian 12's own kernel (which has the Soft-RoCE driver rdma_rxe), a
# busybox initramfs that mounts the root and the 9p shares, and a root file
# system from Debian packages (debootstrap) with rdma-core's verbs providers,
# perftest, iproute2 and libfabric. Everything comes through apt: the mirror is
# the host's own (apt-get indextargets), the kernel package is fetched with
# apt-get download and unpacked into the cache, never installed on the host.
#
# Usage: rxe_image.sh            prints the image directory, building it if needed
# The cache lives in $BOLT_RXE_CACHE (default $XDG_CACHE_HOME/bolt-rxe or
# ~/.cache/bolt-rxe); an image is named after a digest of this script and the
# two init scripts, so changing any of them builds a new one. Needs root
# (debootstrap and chroot).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${BOLT_RXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bolt-rxe}
suite=bookworm
# The guest's packages: verbs library and providers (rxe), verbs and perftest
# tools, ip and rdma (iproute2), modprobe (kmod), what bolt's programs link,
# and Open MPI for the MPI consumer between guests (test/hosts).
# busybox-static is for the initramfs, taken from the guest's root, so that the
# host needs no busybox package (busybox-static replaces a host's busybox).
guest_packages=iproute2,kmod,procps,ibverbs-providers,ibverbs-utils,perftest,libfabric1,libfabric-bin,libcriterion3,libsodium23,openmpi-bin,busybox-static
# Modules the initramfs loads to reach the root disk and the shares.
boot_modules="virtio_pci virtio_blk ext4 9pnet_virtio 9p"
# Modules the guest loads: Soft-RoCE, its user verbs, a veth pair, and the
# virtio network card of test/hosts' wires between guests.
guest_modules="rdma_rxe ib_uverbs crc32_generic veth virtio_net"

digest=$(cat "$0" "$here/initramfs_init.sh" | sha256sum | cut -c1-12)
image="$cache/image-$digest"

log() {
	echo "rxe_image.sh: $*" >&2
}

require_commands() {
	for command in debootstrap apt-get dpkg-deb mke2fs xz chroot; do
		command -v "$command" >/dev/null 2>&1 && continue
		log "$command is missing: install the packages of debian-packages.txt (./setup.sh test)"
		exit 1
	done
	if [ "$(id -u)" -ne 0 ]; then
		log "building the image needs root (debootstrap, chroot)"
		exit 1
	fi
}

# The host's own Debian mirror for the suite, as apt knows it.
host_mirror() {
	apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' |
		awk -v suite="$suite" '$2 == suite { print $1; exit }'
}

# kernel_package: the versioned package linux-image-amd64 depends on.
kernel_package() {
	apt-cache depends linux-image-amd64 |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1
}

# from_apt QUERY WHAT: QUERY's answer; a machine whose package lists were
# cleaned knows nothing yet, so it asks again after apt-get update.
from_apt() {
	answer=$($1)
	[ -n "$answer" ] || { apt-get update -qq >&2 && answer=$($1); }
	if [ -z "$answer" ]; then
		log "apt knows no $2"
		exit 1
	fi
	echo "$answer"
}

build_root() {
	mirror=$(from_apt host_mirror "$suite source") || exit 1
	log "debootstrap $suite from the host's mirror"
	debootstrap --variant=minbase --include="$guest_packages" "$suite" "$work/root" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
	printf '127.0.0.1\tlocalhost\n127.0.1.1\trxe-guest\n::1\tlocalhost ip6-localhost\n' \
		>"$work/root/etc/hosts"
	echo rxe-guest >"$work/root/etc/hostname"
	mkdir -p "$work/root/bolt-rxe"
	# What the guest never needs: package caches and documentation.
	rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* \
		"$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/locale"
}

fetch_kernel() {
	package=$(from_apt kernel_package linux-image-amd64) || exit 1
	log "kernel package $package (downloaded and unpacked, not installed)"
	mkdir -p "$work/download" "$work/root/kernel-unpacked"
	(cd "$work/download" && apt-get download -q "$package" >/dev/null 2>&1) ||
		{ log "apt-get download $package failed"; exit 1; }
	dpkg-deb -x "$work/download/"*.deb "$work/root/kernel-unpacked"
	version=$(ls "$work/root/kernel-unpacked/lib/modules")
}

# module_files BASE MODULE...: the .ko files under the guest's directory BASE
# that the modules need, in load order, as paths below BASE.
module_files() {
	base=$1
	shift
	for module in "$@"; do
		chroot "$work/root" modprobe -d "$base" -S "$version" --show-depends "$module"
	done | awk -v base="${base%/}" '$1 == "insmod" && !seen[$2]++ { print substr($2, length(base) + 1) }'
}

# The guest gets only the modules it uses, with their dependency index.
install_modules() {
	chroot "$work/root" depmod -b /kernel-unpacked "$version"
	unpacked="$work/root/kernel-unpacked"
	modules="$work/root/lib/modules/$version"
	mkdir -p "$modules"
	cp "$unpacked/lib/modules/$version/modules.builtin"* "$unpacked/lib/modules/$version/modules.order" \
		"$modules/"
	for file in $(module_files /kernel-unpacked $boot_modules $guest_modules); do
		mkdir -p "$work/root$(dirname "$file")"
		cp "$unpacked$file" "$work/root$file"
	done
	chroot "$work/root" depmod "$version"
	# The uncompressed kernel boots faster under emulation than the XZ bzImage.
	vmlinuz="$unpacked/boot/vmlinuz-$version"
	offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1)
	tail -c +"$((offset + 1))" "$vmlinuz" | xz -dc >"$work/vmlinux" 2>/dev/null || true
	if ! head -c 4 "$work/vmlinux" | grep -q ELF; then
		log "could not unpack the kernel from $vmlinuz"
		exit 1
	fi
}

build_initramfs() {
	initramfs="$work/initramfs"
	mkdir -p "$initramfs/bin" "$initramfs/modules" "$initramfs/proc" "$initramfs/sys" \
		"$initramfs/dev" "$initramfs/new-root"
	cp "$work/root/bin/busybox" "$initramfs/bin/busybox"
	cp "$here/initramfs_init.sh" "$initramfs/init"
	chmod 755 "$initramfs/init"
	for file in $(module_files / $boot_modules); do
		cp "$work/root$file" "$initramfs/modules/"
		basename "$file" >>"$initramfs/modules/order"
	done
	(cd "$initramfs" && find . | "$work/root/bin/busybox" cpio -o -H newc 2>/dev/null) \
		>"$work/initramfs.cpio"
}

build_disk() {
	rm -rf "$work/root/kernel-unpacked"
	size_mb=$(($(du -sm "$work/root" | cut -f1) + 256))
	mke2fs -q -t ext4 -L bolt-rxe -d "$work/root" "$work/root.img" "${size_mb}M" >/dev/null
}

build_image() {
	require_commands
	start=$(date +%s)
	work="$cache/building-$$"
	rm -rf "$work"
	mkdir -p "$work"
	trap 'rm -rf "$work"' EXIT
	build_root
	fetch_kernel
	install_modules
	build_initramfs
	build_disk
	echo "$version" >"$work/kernel-version"
	mkdir -p "$image"
	mv "$work/vmlinux" "$work/initramfs.cpio" "$work/root.img" "$work/kernel-version" "$image/"
	rm -rf "$work"
	trap - EXIT
	# Older recipes' images are of no further use.
	for old in "$cache"/image-*; do
		[ "$old" = "$image" ] || rm -rf "$old"
	done
	log "image built in $(($(date +%s) - start)) s: $image"
}

mkdir -p "$cache"
# One builder at a time; the others wait and then find the image.
exec 9>"$cache/lock"
flock 9
[ -f "$image/root.img" ] || build_image
echo "$image"
