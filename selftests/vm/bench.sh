#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: boots host A and host B as QEMU guests of one Debian
# kernel (the first of RPAGE_KERNELS, default the newest 6.1) and runs
# every benchmark and baseline in one run (selftests/guest/bench.sh),
# then one guest with two vCPUs for the scale rows (selftests/guest/
# scale.sh),
# then prints the table of rpage's figures against the baselines and
# leaves results.json, results.csv and latency.png in build/bench/KVER/.
# Installs what it needs (as root) first.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$RPAGE_REPO" || exit 1

kver=$(vm_prepare_one bench) || exit 1
accel=$(vm_accel "$kver")
echo "bench: booting host A and host B ($accel)"

start=$(date +%s)
pair=$VM_DIR/bench
vm_boot_pair "$kver" "$pair" selftests/guest/bench.sh
echo "bench: guests ran $(( $(date +%s) - start ))s"

failed=()
for node in a b; do
	if ! vm_judge "$pair/$node" || [ "$(cat "$pair/$node/out/job.rc" 2>/dev/null)" != 0 ] ||
	   grep -q "^not ok" "$pair/$node"/out/tap/*.tap 2>/dev/null; then
		echo "bench: host ${node^^}'s job, last 40 lines:" >&2
		tail -n 40 "$pair/$node/out/job.log" 2>/dev/null | sed 's/^/  /' >&2
		failed+=("$node")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	vm_show_pair bench "$pair" "${failed[@]}"
	exit 1
fi

# The scale rows: one guest with two vCPUs (selftests/guest/scale.sh).
start=$(date +%s)
scale=$VM_DIR/bench-scale
vm_boot "$kver" "$scale" selftests/guest/scale.sh --smp 2 --mem 2048
echo "bench: the scale guest ran $(( $(date +%s) - start ))s"
vm_job_ok "bench (scale)" "$scale" || exit 1

results=$RPAGE_BUILD/bench/$kver
rm -rf "$results"
mkdir -p "$results"
cp -r "$pair/b/out/bench/." "$results/"
# Its records beside B's, round by round (names scale_*).
cp -r "$scale/out/scale/." "$results/"
echo
echo "bench: $kver, $accel guests, $(date -u +%Y-%m-%d)"
python3 selftests/bench-report.py "$results" --kernel "$kver" --accel "$accel"
