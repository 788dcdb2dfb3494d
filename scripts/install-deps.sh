#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian 12 package that building rpage, its tests, the
# demo, the benchmarks and its Debian packages (make deb) need; libvirt
# and apparmor (apparmor_parser) for the check of the admin guide's
# libvirt domain (its daemons are not started by the checks, nor AppArmor
# on this host); bpftrace for the tests of the bpftrace scripts.
# Idempotent; run as root.
set -eu

PACKAGES="
build-essential bc bison flex libelf-dev libssl-dev pkg-config
linux-image-amd64 linux-headers-amd64
linux-image-6.12-amd64 linux-headers-6.12-amd64
linux-source-6.1 linux-source-6.12 xz-utils
qemu-system-x86 busybox-static cpio kmod iproute2
rdma-core ibverbs-utils rdmacm-utils perftest
libibverbs-dev librdmacm-dev
sparse gnuplot-nox jq gojq bpftrace
dpkg-dev debhelper dh-dkms lintian systemd man-db bash-completion
libvirt-clients libvirt-daemon-driver-qemu libvirt-daemon-system apparmor
python3-prometheus-client python3-sphinx graphviz
"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null |
	   grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing (run as root)" >&2
	exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
