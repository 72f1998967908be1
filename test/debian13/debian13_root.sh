#!/bin/sh
# debian13_root.sh: builds, once, a Debian 13 (trixie) root file system in
# which bolt is built and tested against Debian 13's libfabric 2.x (see
# check_debian13.sh). Like the Soft-RoCE image of test/rxe/rxe_image.sh, it
# comes from Debian's own packages through debootstrap, from the mirror the
# host's apt already uses; nothing is installed on the host.
#
# Usage: debian13_root.sh     prints the root's directory, building it if needed
# The cache lives in $BOLT_DEBIAN13_CACHE (default $XDG_CACHE_HOME/bolt-debian13
# or ~/.cache/bolt-debian13); a root is named after a digest of this script, so
# changing the package list builds a new one. Needs root (debootstrap).
set -eu
cache=${BOLT_DEBIAN13_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bolt-debian13}
suite=trixie
# What bolt needs to build and run its suite (as debian-packages.txt on the
# host, less the Soft-RoCE machine, valgrind and the plot), and what building
# and installing its Debian package needs (debhelper, man-db).
packages=build-essential,autoconf,automake,libtool,pkgconf,libfabric-dev,libfabric-bin,libibverbs-dev,uthash-dev,libcriterion-dev,libsodium-dev,openmpi-bin,libopenmpi-dev,debhelper,man-db
digest=$(sha256sum <"$0" | cut -c1-12)
root="$cache/root-$digest"

log() {
	echo "debian13_root.sh: $*" >&2
}

require_commands() {
	if ! command -v debootstrap >/dev/null 2>&1; then
		log "debootstrap is missing: install the packages of debian-packages.txt (./setup.sh test)"
		exit 1
	fi
	if [ "$(id -u)" -ne 0 ]; then
		log "building the root needs root (debootstrap)"
		exit 1
	fi
}

# The host's own Debian mirror (the one its main archive comes from), as apt
# knows it: the same archive carries every suite.
host_mirror() {
	apt-get indextargets --format '$(REPO_URI) $(LABEL) $(COMPONENT)' 'Identifier: Packages' |
		awk '$2 == "Debian" && $3 == "main" { print $1; exit }'
}

build_root() {
	require_commands
	mirror=$(host_mirror)
	[ -n "$mirror" ] || { apt-get update -qq >&2 && mirror=$(host_mirror); }
	if [ -z "$mirror" ]; then
		log "apt knows no Debian mirror"
		exit 1
	fi
	start=$(date +%s)
	work="$cache/building-$$"
	rm -rf "$work"
	trap 'rm -rf "$work"' EXIT
	log "debootstrap $suite from the host's mirror"
	mkdir -p "$work"
	debootstrap --variant=minbase --include="$packages" "$suite" "$work/root" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
	rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
	mv "$work/root" "$root"
	rm -rf "$work"
	trap - EXIT
	# Older recipes' roots are of no further use.
	for old in "$cache"/root-*; do
		[ "$old" = "$root" ] || rm -rf "$old"
	done
	log "root built in $(($(date +%s) - start)) s: $root"
}

mkdir -p "$cache"
# One builder at a time; the others wait and then find the root.
exec 9>"$cache/lock"
flock 9
[ -x "$root/usr/bin/fi_info" ] || build_root
echo "$root"
