#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-host demo: boots host A and host B as QEMU guests of one
# Debian kernel (the first of RPAGE_KERNELS, default the newest 6.1),
# joined by a lossless link, loads rpage.ko on both, and runs JOB on
# both: by default selftests/guest/demo.sh, a VM moved from A to B
# without its memory (make demo); selftests/guest/demo-faults.sh, B
# faulting every page of A's pool in (make demo-faults).
# Installs what it needs (as root) first.
set -u
job=${1:-selftests/guest/demo.sh}

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$RPAGE_REPO" || exit 1

kver=$(vm_prepare_one demo) || exit 1
echo "demo: booting host A and host B ($(vm_accel "$kver"))"

pair=$VM_DIR/demo
vm_boot_pair "$kver" "$pair" "$job"

failed=()
for node in a b; do
	run=$pair/$node
	echo
	echo "=== host ${node^^} ==="
	sed 's/^/  /' "$run/out/job.log" 2>/dev/null
	if ! vm_judge "$run" || [ "$(cat "$run/out/job.rc" 2>/dev/null)" != 0 ]; then
		failed+=("$node")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	vm_show_pair demo "$pair" "${failed[@]}"
	exit 1
fi
echo
echo "demo: both hosts ran cleanly"
