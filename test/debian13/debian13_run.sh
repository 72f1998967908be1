#!/bin/sh
# debian13_run.sh: runs a command in the Debian 13 root of debian13_root.sh
# (built and cached on first use), as root, and exits with its status. The
# command sees the host's /proc, /sys, /dev (so /dev/shm, where the software
# device lives) and /etc/hosts, a /tmp of its own, and each --share directory
# at the same path as on the host; it starts in the current directory when
# that is shared, else in /. The mounts live in a mount namespace of the
# command's own, so nothing stays mounted when it ends, however it ends.
#
# Usage: debian13_run.sh [--share DIR]... [--] COMMAND [ARG...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
shares=""

usage() {
	echo "usage: $0 [--share DIR]... [--] COMMAND [ARG...]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--share) [ $# -ge 2 ] || usage; shares="$shares $(cd "$2" && pwd)"; shift 2 ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || usage
root=$("$here/debian13_root.sh")

directory=/
for share in $shares; do
	case "$PWD/" in "$share"/*) directory=$PWD ;; esac
done

# In the new namespace: the mounts, then the command under chroot with a
# plain environment (the host's PATH and library variables mean nothing there).
# shellcheck disable=SC2016
exec unshare --mount --propagation private sh -eu -c '
	root=$1 directory=$2 shares=$3
	shift 3
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs tmpfs "$root/tmp"
	# The host name resolves as on the host (bolt chooses its side channel address by it).
	touch "$root/etc/hosts"
	mount --bind /etc/hosts "$root/etc/hosts"
	for share in $shares; do
		mkdir -p "$root$share"
		mount --bind "$share" "$root$share"
	done
	exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
		${CI:+CI=$CI} sh -c "cd \"\$0\" && exec \"\$@\"" "$directory" "$@"
' debian13_run "$root" "$directory" "$shares" "$@"
