#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench-count`: the work of a fault, in instructions. Boots one
# QEMU guest of the first of RPAGE_KERNELS with -icount shift=0,sleep=off
# (its clock: one nanosecond an instruction) and runs
# selftests/guest/count.sh in it, then prints what a loop fault, the
# kernel's first touch of a page (the floor) and the userfaultfd handler
# each execute, and their ratios, medians of interleaved rounds. Unlike
# `make bench`'s times, these counts hold still from run to run under
# TCG: a change to the fault path shows here first. Results in
# build/bench-count/KVER/. Installs what it needs (as root) first.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$RPAGE_REPO" || exit 1

kver=$(vm_prepare_one bench-count) || exit 1
run=$VM_DIR/$kver/count
start=$(date +%s)
vm_boot "$kver" "$run" selftests/guest/count.sh --smp 1 --mem 1536 --icount \
	--timeout "${RPAGE_VM_TIMEOUT:-1800}"
echo "bench-count: the guest ran $(( $(date +%s) - start ))s"
vm_job_ok "bench-count" "$run" || exit 1
results=$RPAGE_BUILD/bench-count/$kver
rm -rf "$results"
mkdir -p "$results"
cp -r "$run/out/count/." "$results/"
echo
echo "bench-count: $kver, TCG with -icount shift=0,sleep=off, $(date -u +%Y-%m-%d)"
python3 selftests/bench-report.py "$results" --kernel "$kver" --count
