#!/bin/busybox sh
# initramfs_init.sh: the virtual machine's first process (busybox). It loads
# the modules that reach the root disk and the 9p shares, mounts the root,
# the control share (at /bolt-rxe) and each share listed in its "shares" file
# at the same path as on the host, and hands over to the control share's
# guest_init.sh.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# crc32c-intel needs SSE 4.2, which an emulated CPU may lack: failures are expected.
for module in $(cat /modules/order); do
	insmod "/modules/$module" 2>/dev/null
done
nine_p="trans=virtio,version=9p2000.L,msize=512000"
if ! mount -t ext4 /dev/vda /new-root || ! mount -t 9p -o "$nine_p" bolt-control /new-root/bolt-rxe; then
	echo "initramfs: cannot mount the root disk or the control share" >/dev/console
	poweroff -f
fi
# /tmp first: a share under it (a tree checked out in /tmp) must not be hidden later.
mount -t tmpfs tmpfs /new-root/tmp
while read -r tag path; do
	mkdir -p "/new-root$path" && mount -t 9p -o "$nine_p" "$tag" "/new-root$path" ||
		echo "initramfs: cannot mount share $tag at $path" >/dev/console
done </new-root/bolt-rxe/shares
mount --move /dev /new-root/dev
umount /proc /sys
exec switch_root /new-root /bin/sh /bolt-rxe/guest_init.sh
