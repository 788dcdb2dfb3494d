#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-host demo: boots host A and host B as QEMU guests of one
# Debian kernel (the first of RPAGE_KERNELS, default the newest 6.1),
# joined by a link on 127.0.0.1, loads rpage.ko on both and shows what
# each host's rpage sees. Installs what it needs (as root) first.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$RPAGE_REPO" || exit 1

if [ "${RPAGE_SKIP_DEPS:-0}" != 1 ]; then
	"$RPAGE_REPO/scripts/install-deps.sh" || exit 1
fi
kver=$(vm_kernels | head -n 1)
[ -n "$kver" ] || { echo "demo: no supported kernel installed" >&2; exit 1; }

echo "demo: building for $kver"
make -s user selftests || exit 1
vm_build_module "$kver" || exit 1
echo "demo: booting host A and host B ($(vm_accel "$kver"))"

pair=$VM_DIR/demo
rm -rf "$pair"
mkdir -p "$pair/sync"
port=$((31000 + $$ % 1000 * 2))
vm_boot "$kver" "$pair/a" selftests/guest/demo.sh --smp 1 --mem 1536 \
	--node a --ip 192.0.2.1 --peer-node b --peer-ip 192.0.2.2 \
	--mac 52:54:00:12:34:0a --sync "$pair/sync" \
	--udp "$port:$((port + 1))" &
pid_a=$!
vm_boot "$kver" "$pair/b" selftests/guest/demo.sh --smp 1 --mem 1536 \
	--node b --ip 192.0.2.2 --peer-node a --peer-ip 192.0.2.1 \
	--mac 52:54:00:12:34:0b --sync "$pair/sync" \
	--udp "$((port + 1)):$port" &
pid_b=$!
wait "$pid_a"
wait "$pid_b"

status=0
for node in a b; do
	run=$pair/$node
	echo
	echo "=== host ${node^^} ==="
	sed 's/^/  /' "$run/out/job.log" 2>/dev/null
	if ! vm_judge "$run" || [ "$(cat "$run/out/job.rc" 2>/dev/null)" != 0 ]; then
		echo "demo: host ${node^^} failed:" >&2
		sed 's/^/  /' "$run/problems" >&2 2>/dev/null
		echo "  console: $run/console.log" >&2
		status=1
	fi
done
[ "$status" -eq 0 ] && echo && echo "demo: both hosts ran cleanly"
exit "$status"
