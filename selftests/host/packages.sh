#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The packages and the install layout, as TAP: make install writes a
# librpage.pc of its own PREFIX, and the headers where pkg-config points;
# make deb builds the four Debian packages, each with what it must hold,
# and lintian finds no error or warning in them.
#
# Sourced by selftests/host/checks.sh, whose tap() numbers the points;
# run alone, it is a TAP stream of its own.
set -u

# pkg_compile ROOT PCDIR: build and run a program that includes
# <librpage.h> and <linux/rpage.h> with the flags of ROOT's librpage.pc
# (in ROOT/PCDIR) and links with its shared library; prints the
# library's version. As a user of the installed files would, but under
# ROOT (pkg-config's sysroot).
pkg_compile() {
	local root=$1 pcdir=$2 flags
	flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/$pcdir \
		PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
		pkg-config --cflags --libs librpage) || return 1
	cat > "$root/t.c" <<-'EOF'
	#include <stdio.h>
	#include <librpage.h>
	#include <linux/rpage.h>

	int main(void)
	{
		printf("%s %d\n", rpage_lib_version(), RPAGE_IOC_API != 0);
		return 0;
	}
	EOF
	# shellcheck disable=SC2086 # the flags are words
	cc -Wall -Werror -o "$root/t" "$root/t.c" $flags || return 1
	LD_LIBRARY_PATH=$root/${pcdir%/pkgconfig} "$root/t"
}

# deb_files DEB: the paths a package installs, without directories, with
# a symlink's target after " -> ".
deb_files() {
	dpkg-deb -c "$1" | awk '$1 !~ /^d/ { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }'
}

# deb_of WORK PACKAGE: the .deb of PACKAGE that make deb left in WORK/deb.
deb_of() {
	ls "$1/deb/$2"_*.deb 2>/dev/null
}

check_packages() {
	local work version multiarch t0 took got want out deb debs=() pkg
	work=$(mktemp -d)
	version=$(cat VERSION)
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

	# make install after a plain make (PREFIX /usr/local): what it
	# installs says the PREFIX of the install, and the UAPI header is
	# out of /usr/include/linux.
	out=$( { make -s user && make -s install PREFIX=/usr DESTDIR="$work/inst"; } 2>&1)
	want=$'prefix=/usr\nlibdir=/usr/lib\nincludedir=/usr/include\nuapi_includedir=/usr/include/rpage'
	got=$(grep -E '^[a-z_]+=' "$work/inst/usr/lib/pkgconfig/librpage.pc" 2>&1)
	if [ "$got" = "$want" ]; then
		tap ok "make install PREFIX=/usr after make: librpage.pc says /usr"
	else
		tap "not ok" "make install PREFIX=/usr after make: librpage.pc says /usr"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
		[ -n "$out" ] && echo "$out" | tail -n 5 | sed 's/^/#   make: /'
	fi
	got=$(cd "$work/inst" && find usr/include -type f | sort)
	want=$'usr/include/librpage.h\nusr/include/rpage/linux/rpage.h'
	out=$(pkg_compile "$work/inst" usr/lib/pkgconfig 2>&1)
	if [ "$got" = "$want" ] && [ "$out" = "$version 1" ]; then
		tap ok "make install: the headers under include and include/rpage, and a program builds with pkg-config librpage"
	else
		tap "not ok" "make install: the headers under include and include/rpage, and a program builds with pkg-config librpage"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   headers: /'
		echo "$out" | tail -n 5 | sed 's/^/#   program: /'
	fi

	t0=$(date +%s)
	if ! ./scripts/build-deb.sh "$work/deb" > "$work/deb.log" 2>&1; then
		tap "not ok" "make deb: the packages build"
		tail -n 20 "$work/deb.log" | sed 's/^/#   /'
		rm -rf "$work"
		return
	fi
	took=$(($(date +%s) - t0))
	tap ok "make deb: the packages build"
	echo "# make deb: the packages built in ${took}s"

	mapfile -t debs < <(ls "$work"/deb/*.deb)
	got=$(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Package; done | sort)
	want=$(printf '%s\n' librpage-dev librpage1 librpage1-dbgsym rpage-dkms \
		rpage-utils rpage-utils-dbgsym | sort)
	if [ "$got" = "$want" ]; then
		tap ok "make deb: rpage-dkms, librpage1, librpage-dev, rpage-utils and the debug symbols"
	else
		tap "not ok" "make deb: rpage-dkms, librpage1, librpage-dev, rpage-utils and the debug symbols"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
	fi

	# rpage-dkms: the module's sources as the tree has them, and nothing
	# else (no build/, no objects, no VM images); its dkms.conf keeps
	# DKMS to the 6.1 and 6.12 kernels.
	pkg=rpage-dkms
	want=$(cd "$work/deb/rpage-$version" &&
		ls dkms.conf Kbuild VERSION include/uapi/linux/rpage.h kmod/Kbuild \
		   kmod/*.c kmod/*.h | sed "s|^|./usr/src/rpage-$version/|"
		printf '%s\n' ./usr/share/doc/$pkg/changelog.Debian.gz \
			./usr/share/doc/$pkg/copyright ./usr/share/lintian/overrides/$pkg)
	got=$(deb_files "$(deb_of "$work" $pkg)")
	out=""
	dpkg-deb -x "$(deb_of "$work" $pkg)" "$work/$pkg"
	local conf=$work/$pkg/usr/src/rpage-$version/dkms.conf kver
	for kver in 6.1.0-56-amd64 6.12.117+deb12-amd64 6.1.0-99-rt-amd64; do
		bash -c '. "$1" && [[ $2 =~ $BUILD_EXCLUSIVE_KERNEL ]]' _ "$conf" "$kver" ||
			out+="DKMS would not build for $kver; "
	done
	for kver in 6.10.0-1-amd64 6.18.0 5.10.0-30-amd64 6.120.1; do
		bash -c '. "$1" && [[ $2 =~ $BUILD_EXCLUSIVE_KERNEL ]]' _ "$conf" "$kver" &&
			out+="DKMS would build for $kver; "
	done
	if [ "$(echo "$got" | sort)" = "$(echo "$want" | sort)" ] && [ -z "$out" ]; then
		tap ok "$pkg: the module's sources alone; DKMS kept to 6.1 and 6.12"
	else
		tap "not ok" "$pkg: the module's sources alone; DKMS kept to 6.1 and 6.12"
		diff <(echo "$want" | sort) <(echo "$got" | sort) | sed 's/^/#   /'
		[ -n "$out" ] && echo "#   $out"
	fi

	# librpage1: the library and its SONAME link, and a symbols file of
	# exactly the versioned symbols of librpage.map.
	pkg=librpage1
	local so
	so=$(deb_files "$(deb_of "$work" $pkg)" | sed -n "s|^\./usr/lib/$multiarch/\(librpage\.so\.1\.[0-9.]*\)$|\1|p")
	want=$(printf '%s\n' "./usr/lib/$multiarch/$so" \
		"./usr/lib/$multiarch/librpage.so.1 -> $so" \
		./usr/share/doc/$pkg/changelog.Debian.gz ./usr/share/doc/$pkg/copyright \
		./usr/share/lintian/overrides/$pkg | sort)
	got=$(deb_files "$(deb_of "$work" $pkg)" | sort)
	local syms map
	syms=$(dpkg-deb -I "$(deb_of "$work" $pkg)" symbols | sed -n 's/^ \(rpage_[a-z_]*@RPAGE_[0-9.]*\) .*/\1/p' | sort)
	map=$(awk '/^RPAGE_[0-9.]+ \{/ { v = $1 } /^\t\trpage_[a-z_]*;$/ { sub(/;/, ""); print $1 "@" v }' \
		ulib/librpage.map | sort)
	if [ -n "$so" ] && [ "$got" = "$want" ] && [ -n "$map" ] && [ "$syms" = "$map" ]; then
		tap ok "$pkg: librpage.so.1 alone, and a symbols file of librpage.map's symbols"
	else
		tap "not ok" "$pkg: librpage.so.1 alone, and a symbols file of librpage.map's symbols"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   files: /'
		diff <(echo "$map") <(echo "$syms") | sed 's/^/#   symbols: /'
	fi

	# librpage-dev: the headers (none in /usr/include/linux), the
	# static and the linker's library, librpage.pc, every man 3 page.
	pkg=librpage-dev
	got=$(deb_files "$(deb_of "$work" $pkg)")
	out=""
	for want in ./usr/include/librpage.h ./usr/include/rpage/linux/rpage.h \
		"./usr/lib/$multiarch/librpage.a" "./usr/lib/$multiarch/librpage.so -> librpage.so.1" \
		"./usr/lib/$multiarch/pkgconfig/librpage.pc"; do
		echo "$got" | grep -qxF -- "$want" || out+="no $want; "
	done
	echo "$got" | grep -q '^\./usr/include/linux/' && out+="a header in /usr/include/linux; "
	for want in ulib/man/*.3; do
		want=./usr/share/man/man3/$(basename "$want").gz
		echo "$got" | sed 's/ -> .*//' | grep -qxF -- "$want" || out+="no $want; "
	done
	if [ -z "$out" ]; then
		tap ok "$pkg: headers, libraries, librpage.pc and the man 3 pages"
	else
		tap "not ok" "$pkg: headers, libraries, librpage.pc and the man 3 pages"
		echo "#   $out"
	fi

	# rpage-utils: rpagectl, rpage-setup, their man pages, the unit
	# (enabled by the package's scripts), the udev rule, bash completion.
	pkg=rpage-utils
	got=$(deb_files "$(deb_of "$work" $pkg)")
	out=""
	for want in ./usr/sbin/rpagectl ./usr/share/man/man8/rpagectl.8.gz \
		./usr/sbin/rpage-setup ./usr/share/man/man8/rpage-setup.8.gz \
		./lib/systemd/system/rpage.service ./lib/udev/rules.d/90-rpage.rules \
		./usr/share/bash-completion/completions/rpagectl; do
		echo "$got" | grep -qxF -- "$want" || out+="no $want; "
	done
	dpkg-deb -e "$(deb_of "$work" $pkg)" "$work/$pkg.control"
	grep -qs "deb-systemd-helper .*enable.*rpage.service" "$work/$pkg.control/postinst" ||
		out+="postinst does not enable rpage.service; "
	if [ -z "$out" ]; then
		tap ok "$pkg: rpagectl, rpage-setup, their man pages, rpage.service (enabled) and the udev rule"
	else
		tap "not ok" "$pkg: rpagectl, rpage-setup, their man pages, rpage.service (enabled) and the udev rule"
		echo "#   $out"
	fi

	# The unit as systemd would load it, from the package's files in a
	# root that has this host's systemd units (the ones it orders itself
	# after and is wanted by); any complaint fails it. Its man pages are
	# checked by rendering them.
	local root=$work/unit-root
	mkdir -p "$root/usr/lib" "$root/etc"
	ln -s usr/lib "$root/lib"
	ln -s usr/bin "$root/bin"
	ln -s usr/sbin "$root/sbin"
	cp -a /usr/lib/systemd "$root/usr/lib/"
	dpkg-deb -x "$(deb_of "$work" $pkg)" "$root"
	if ! command -v systemd-analyze > /dev/null; then
		out="systemd-analyze: not found"
	else
		out=$(systemd-analyze verify --man=no --root="$root" \
			/lib/systemd/system/rpage.service 2>&1) || out+=" (exit status $?)"
	fi
	for want in rpagectl rpage-setup; do
		man -l "$root/usr/share/man/man8/$want.8.gz" 2>&1 > /dev/null |
			sed "s/^/$want.8: /"
	done > "$work/man.err"
	out+=$(cat "$work/man.err")
	if [ -z "$out" ]; then
		tap ok "$pkg: systemd-analyze verify finds nothing wrong with rpage.service; the man pages render"
	else
		tap "not ok" "$pkg: systemd-analyze verify finds nothing wrong with rpage.service; the man pages render"
		echo "$out" | sed 's/^/#   /'
	fi

	# What a VMM author does with librpage-dev and librpage1 installed.
	dpkg-deb -x "$(deb_of "$work" librpage1)" "$work/root"
	dpkg-deb -x "$(deb_of "$work" librpage-dev)" "$work/root"
	out=$(pkg_compile "$work/root" "usr/lib/$multiarch/pkgconfig" 2>&1)
	if [ "$out" = "$version 1" ]; then
		tap ok "librpage-dev: a program builds with pkg-config librpage and runs on librpage1"
	else
		tap "not ok" "librpage-dev: a program builds with pkg-config librpage and runs on librpage1"
		echo "$out" | tail -n 5 | sed 's/^/#   /'
	fi

	if out=$(lintian --fail-on error,warning "$work"/deb/rpage_*.changes 2>&1); then
		tap ok "lintian: no error or warning in the packages"
	else
		tap "not ok" "lintian: no error or warning in the packages"
		echo "$out" | grep -v "^running with root" | head -n 20 | sed 's/^/#   /'
	fi
	rm -rf "$work"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	cd "$(dirname "$0")/../.." || exit 1
	n=0
	tap() {
		n=$((n + 1))
		echo "$1 $n - $2"
	}
	check_packages
	echo "1..$n"
fi
