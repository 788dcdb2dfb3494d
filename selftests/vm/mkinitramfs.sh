#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mkinitramfs.sh KVER OUT [ROOT]
#
# Builds the guests' initramfs for Debian kernel KVER: busybox, the
# modules that mount the host root over virtio-9p and bring up
# virtio-net (decompressed, in dependency order), and selftests/vm/init.
# For a kernel built here, ROOT is where it lives (ROOT/lib/modules/KVER,
# selftests/vm/lib.sh); those built in need no module.
set -eu

kver=$1
out=$2
root=${3:-}
here=$(cd "$(dirname "$0")" && pwd)

[ -d "$root/lib/modules/$kver" ] || {
	echo "mkinitramfs: no $root/lib/modules/$kver (install linux-image-$kver)" >&2
	exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/lib/modules" "$tmp/proc" "$tmp/sys" "$tmp/dev" \
	 "$tmp/newroot"
cp /bin/busybox "$tmp/bin/busybox"
for applet in sh mount umount mkdir insmod switch_root cat echo sleep grep; do
	ln -s busybox "$tmp/bin/$applet"
done

# Busybox insmod takes plain ELF objects: decompress what Debian ships.
modprobe -d "${root:-/}" -S "$kver" -a --show-depends 9p 9pnet_virtio virtio_pci virtio_net |
	awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$tmp/order.src"
: > "$tmp/lib/modules/order"
while read -r src; do
	name=$(basename "$src")
	case "$name" in
	*.ko.xz)  name=${name%.xz};  xz -dc "$src" > "$tmp/lib/modules/$name" ;;
	*.ko.zst) name=${name%.zst}; zstd -qdc "$src" > "$tmp/lib/modules/$name" ;;
	*.ko.gz)  name=${name%.gz};  gzip -dc "$src" > "$tmp/lib/modules/$name" ;;
	*)        cp "$src" "$tmp/lib/modules/$name" ;;
	esac
	echo "$name" >> "$tmp/lib/modules/order"
done < "$tmp/order.src"
rm "$tmp/order.src"

install -m 0755 "$here/init" "$tmp/init"
(cd "$tmp" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
