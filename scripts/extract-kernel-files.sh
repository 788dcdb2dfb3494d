#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# extract-kernel-files.sh DEST FILE...
#
# Copies FILEs (paths inside a kernel tree) from Debian's linux-source
# tarball into DEST, flattened. The project commits no kernel source:
# the kselftest harness and checkpatch come from here at build time.
set -eu

dest=$1
shift
tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
if [ -z "$tarball" ]; then
	echo "extract-kernel-files: no /usr/src/linux-source-*.tar.xz" \
	     "(run scripts/install-deps.sh)" >&2
	exit 1
fi
top=$(basename "$tarball" .tar.xz)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
members=""
for f in "$@"; do
	members="$members $top/$f"
done
# shellcheck disable=SC2086
tar -C "$tmp" -xJf "$tarball" $members
mkdir -p "$dest"
for f in "$@"; do
	cp "$tmp/$top/$f" "$dest/"
done
