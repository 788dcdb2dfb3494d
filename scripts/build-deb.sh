#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb: the Debian packages of debian/ (rpage-dkms, librpage1,
# librpage-dev, rpage-utils), built with dpkg-buildpackage in a copy of
# the tree, so that debhelper's files stay out of the tree and the
# packages out of its parent directory.
#
#   scripts/build-deb.sh [OUT]
#
# OUT (default build/deb) then holds the .deb files, the .changes and
# .buildinfo files, and the copy the packages were built in.
set -eu

cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/deb}")
version=$(cat VERSION)

# The packages' version is debian/changelog's: a VERSION changed without
# a changelog entry would build packages of the new code under the old
# version.
deb_version=$(dpkg-parsechangelog -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
	echo "build-deb: debian/changelog says $deb_version, VERSION $version:" \
		"add an entry (dch -v $version-1)" >&2
	exit 1
fi

src=$out/rpage-$version
rm -rf "$src"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
# The tree as it is, tracked files and new ones, but nothing git ignores
# (no build/, no objects of an in-tree module build); without git,
# everything but build/.
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			# A file deleted but not yet committed is still listed.
			if [ -e "$f" ]; then printf '%s\0' "$f"; fi
		done | tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "$src"
fi

cd "$src"
dpkg-buildpackage --build=binary --no-sign --jobs="$(nproc)"
ls "$out"/*.deb
