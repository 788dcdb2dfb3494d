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
# 6.1's, whatever else is installed: the debug tier installs 6.12's
# source too, and 6.12's harness trips gcc 12's -Wclobbered, which the
# selftests build with -Werror.
tarball=/usr/src/linux-source-6.1.tar.xz
if [ ! -f "$tarball" ]; then
	echo "extract-kernel-files: no $tarball" \
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
