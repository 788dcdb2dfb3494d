# SPDX-License-Identifier: GPL-2.0
#
# Host-side helpers of the VM harness, sourced by selftests/run.sh and
# selftests/vm/demo.sh: which kernels, which accelerator, building the
# module and initramfs per kernel, booting guests, and judging a guest's
# kernel log.
#
# Environment:
#   RPAGE_KERNELS   kernel versions to run (default: the newest installed
#                   6.1 and 6.12 Debian kernels)
#   RPAGE_VM_ACCEL  kvm, tcg or auto (default): auto uses KVM when a
#                   guest really boots with it, TCG otherwise
#   RPAGE_VM_TIMEOUT  seconds a guest may run before the watchdog kills it
#   RPAGE_VM_APPEND   extra guest kernel arguments (e.g. slub_debug=FZPU
#                   to catch heap corruption where it happens, and
#                   page_poison=1 to catch a write into a free page)
#   RPAGE_VM_CPU     the TCG guests' -cpu (default: qemu64,-cx16 but on 6.1;
#                    empty: QEMU's own model)
#   RPAGE_VM_KERNEL_ROOT  where kernels built here live, laid out like /
#                   (default build/debug-kernel, see
#                   scripts/build-debug-kernel.sh): a KVER that has
#                   ROOT/boot/vmlinuz-KVER boots from there, with
#                   ROOT/lib/modules/KVER as its modules and build tree

RPAGE_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RPAGE_BUILD=$RPAGE_REPO/build
VM_DIR=$RPAGE_BUILD/vm
RPAGE_VM_KERNEL_ROOT=${RPAGE_VM_KERNEL_ROOT:-$RPAGE_BUILD/debug-kernel}

# vm_kernel_root KVER: the directory of a kernel built here (such as the
# debug tier's), or nothing for one installed on the host: then KVER's
# image is ROOT/boot/vmlinuz-KVER and its modules ROOT/lib/modules/KVER.
vm_kernel_root() {
	if [ -s "$RPAGE_VM_KERNEL_ROOT/boot/vmlinuz-$1" ]; then
		echo "$RPAGE_VM_KERNEL_ROOT"
	fi
}

vm_kernel_image() {
	echo "$(vm_kernel_root "$1")/boot/vmlinuz-$1"
}

# The tree to build modules for KVER against: Debian's headers, or the
# build tree of a kernel built here.
vm_kernel_build_dir() {
	local root
	root=$(vm_kernel_root "$1")
	if [ -n "$root" ]; then
		echo "$root/lib/modules/$1/build"
	else
		echo "/usr/src/linux-headers-$1"
	fi
}

# The newest installed kernel of each supported series that has both its
# image and its headers.
vm_default_kernels() {
	local series kver
	for series in 6.1 6.12; do
		kver=$(ls /boot 2>/dev/null | sed -n "s/^vmlinuz-\(${series//./\\.}\.[0-9].*-amd64\)$/\1/p" |
		       sort -V | while read -r k; do
				[ -d "/usr/src/linux-headers-$k" ] && echo "$k"
			done | tail -n 1)
		[ -n "$kver" ] && echo "$kver"
	done
}

vm_kernels() {
	if [ -n "${RPAGE_KERNELS:-}" ]; then
		echo "$RPAGE_KERNELS" | tr ' ,' '\n\n' | sed '/^$/d'
	else
		vm_default_kernels
	fi
}

# vm_module_sources DIR: a copy of rpage.ko's sources in DIR, to build
# apart (or to change first: selftests/mutate.sh).
vm_module_sources() {
	mkdir -p "$1"
	cp -r "$RPAGE_REPO/Kbuild" "$RPAGE_REPO/VERSION" "$RPAGE_REPO/kmod" \
	      "$RPAGE_REPO/include" "$1/"
}

# vm_part_only PART REGEX OUT: a copy of guest part PART (of
# selftests/guest/) keeping, of its test points and kselftest streams,
# those REGEX matches and its setup and teardown; the parts it sources
# and its end are left out, so that only PART runs (selftests/mutate.sh,
# make check-debug-quick).
vm_part_only() {
	awk -v keep="$2" '
	/^run_test / {
		if ($2 ~ keep || $2 ~ /setup|teardown/ || $3 ~ /setup|teardown/) print
		next
	}
	/^\. .*selftests\/guest\/[a-z-]+\.sh"$/ && !/\/lib\.sh"$/ { next }
	/^exit 0$/ { next }
	/run_kselftest / {
		for (i = 1; i < NF; i++)
			if ($i == "run_kselftest") name = $(i + 1)
		if (name ~ keep) print
		next
	}
	{ print }' "$RPAGE_REPO/selftests/guest/$1" > "$3"
}

# vm_part_streams FILE...: the TAP streams the given part files write
# (tap_begin NAME, run_kselftest NAME), one a line.
vm_part_streams() {
	awk '
	/^tap_begin / { print $2 }
	/run_kselftest / {
		for (i = 1; i < NF; i++)
			if ($i == "run_kselftest") print $(i + 1)
	}' "$@"
}

# vm_kbuild DIR KVER LOG [MAKE ARGS...]: the modules of the tree in DIR,
# built against KVER, make's output added to LOG.
vm_kbuild() {
	local dir=$1 kver=$2 log=$3
	shift 3
	make -C "$(vm_kernel_build_dir "$kver")" M="$dir" "$@" modules >> "$log" 2>&1
}

# Builds rpage.ko for KVER in its own tree, so kernels never share
# objects, and the selftests' own modules apart (nothing installs
# them). Prints the build log on failure.
vm_build_module() {
	local kver=$1 dir=$RPAGE_BUILD/kmod/$1
	vm_module_sources "$dir"
	mkdir -p "$dir/test"
	cp "$RPAGE_REPO"/selftests/kmod/Kbuild "$RPAGE_REPO"/selftests/kmod/*.c "$dir/test/"
	: > "$dir/build.log"
	vm_kbuild "$dir" "$kver" "$dir/build.log" W=1 RPAGE_WERROR=y &&
		vm_kbuild "$dir/test" "$kver" "$dir/build.log" W=1 RPAGE_WERROR=y ||
		{ cat "$dir/build.log"; return 1; }
}

vm_module_path() {
	echo "$RPAGE_BUILD/kmod/$1/kmod/rpage.ko"
}

vm_initramfs() {
	local kver=$1 img=$VM_DIR/initramfs-$1.gz root
	root=$(vm_kernel_root "$kver")
	if [ ! -s "$img" ] || [ "$RPAGE_REPO/selftests/vm/init" -nt "$img" ] ||
	   [ "$RPAGE_REPO/selftests/vm/mkinitramfs.sh" -nt "$img" ] ||
	   { [ -n "$root" ] && [ "$root/lib/modules/$kver/modules.dep" -nt "$img" ]; }; then
		mkdir -p "$VM_DIR"
		"$RPAGE_REPO/selftests/vm/mkinitramfs.sh" "$kver" "$img" ${root:+"$root"} >&2 ||
			return 1
	fi
	echo "$img"
}

# Prints kvm or tcg. With RPAGE_VM_ACCEL=auto, KVM only when a guest
# boots with it within a short deadline: on some hosts KVM guests hang
# in early setup, so /dev/kvm alone proves nothing.
vm_accel() {
	local kver=$1 accel=${RPAGE_VM_ACCEL:-auto} probe=$VM_DIR/accel-probe
	case "$accel" in
	kvm|tcg) echo "$accel"; return ;;
	auto) ;;
	*) echo "RPAGE_VM_ACCEL=$accel: want kvm, tcg or auto" >&2; return 1 ;;
	esac
	if [ -s "$probe" ]; then
		cat "$probe"
		return
	fi
	mkdir -p "$VM_DIR"
	accel=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		local img log=$VM_DIR/accel-probe.log
		img=$(vm_initramfs "$kver") || return 1
		timeout -k 5 30 qemu-system-x86_64 -accel kvm -cpu host -m 512M \
			-kernel "$(vm_kernel_image "$kver")" -initrd "$img" \
			-append "console=ttyS0 panic=-1 rpage_probe=1" \
			-display none -monitor none -serial "file:$log" \
			-no-reboot -nodefaults > /dev/null 2>&1
		grep -q RPAGE-PROBE-BOOTED "$log" 2>/dev/null && accel=kvm
	fi
	echo "$accel" > "$probe"
	echo "$accel"
}

# vm_boot KVER RUNDIR JOB [options]
#   --smp N --mem MiB --ip ADDR --node NAME --peer-ip ADDR --peer-node NAME
#   --udp LOCALPORT:REMOTEPORT | --listen SOCKET | --connect SOCKET
#   --mac MAC --sync DIR --timeout SECONDS --icount
# --icount: QEMU counts instructions (TCG only): the guest's clock
# advances 1 ns per instruction, never while idle (make bench-count).
# Boots one guest that runs JOB (a path relative to the repo), waits for
# it, and leaves console.log and out/ in RUNDIR. Returns non-zero when
# the guest did not finish its job (watchdog, crash).
vm_boot_once() {
	local kver=$1 run=$2 job=$3
	shift 3
	local smp=2 mem=2048 ip=192.0.2.1 node=single peer_ip="" peer_node=""
	local udp="" stream="" mac=52:54:00:12:34:01 sync=""
	local timeout=${RPAGE_VM_TIMEOUT:-900} netdev icount=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--icount) icount=1; shift; continue ;;
		--smp) smp=$2 ;;
		--mem) mem=$2 ;;
		--ip) ip=$2 ;;
		--node) node=$2 ;;
		--peer-ip) peer_ip=$2 ;;
		--peer-node) peer_node=$2 ;;
		--udp) udp=$2 ;;
		--listen) stream="server=on,addr.type=unix,addr.path=$2" ;;
		--connect) stream="server=off,addr.type=unix,addr.path=$2" ;;
		--mac) mac=$2 ;;
		--sync) sync=$2 ;;
		--timeout) timeout=$2 ;;
		*) echo "vm_boot: unknown option $1" >&2; return 2 ;;
		esac
		shift 2
	done

	local accel img root modules=""
	accel=$(vm_accel "$kver") || return 1
	if [ "$icount" = 1 ] && [ "$accel" != tcg ]; then
		echo "vm_boot: --icount needs TCG, not $accel (RPAGE_VM_ACCEL=tcg)" >&2
		return 2
	fi
	img=$(vm_initramfs "$kver") || return 1
	# A kernel built here has no modules in the host's /lib/modules:
	# the guest's init lays its own over it.
	root=$(vm_kernel_root "$kver")
	[ -n "$root" ] && modules="rpage_modules=$root/lib/modules/$kver"
	rm -rf "$run"
	mkdir -p "$run/out"
	cat > "$run/env" <<-ENV
	RPAGE_REPO='$RPAGE_REPO'
	RPAGE_BUILD='$RPAGE_BUILD'
	RPAGE_KVER='$kver'
	RPAGE_NODE='$node'
	RPAGE_IP='$ip'
	RPAGE_PEER_IP='$peer_ip'
	RPAGE_PEER_NODE='$peer_node'
	RPAGE_JOB='$RPAGE_REPO/$job'
	RPAGE_JOB_TIMEOUT='$((timeout - 60))'
	ENV

	# Every guest has a NIC for rxe, whose backend never leaves the
	# machine: a Unix stream socket to the other guest, or UDP to an
	# unused port of 127.0.0.1 for a lone guest.
	if [ -n "$stream" ]; then
		netdev="stream,id=n0,$stream"
	else
		[ -n "$udp" ] || udp="$((20000 + RANDOM % 20000)):$((40000 + RANDOM % 20000))"
		netdev="socket,id=n0,udp=127.0.0.1:${udp#*:},localaddr=127.0.0.1:${udp%%:*}"
	fi
	local args=(
		-accel "$accel" -m "$mem" -smp "$smp"
		-kernel "$(vm_kernel_image "$kver")" -initrd "$img"
		-append "console=ttyS0 quiet panic=-1 ${RPAGE_VM_APPEND:-} $modules rpage_repo=$RPAGE_REPO rpage_init=$RPAGE_REPO/selftests/vm/guest-init"
		-display none -monitor none -serial "file:$run/console.log"
		-no-reboot -nodefaults
		-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
		-device "virtio-9p-pci,fsdev=root,mount_tag=hostroot"
		-fsdev "local,id=work,path=$run,security_model=none"
		-device "virtio-9p-pci,fsdev=work,mount_tag=work"
		-netdev "$netdev"
		-device "virtio-net-pci,netdev=n0,mac=$mac"
	)
	[ "$accel" = kvm ] && args+=(-cpu host)
	[ "$icount" = 1 ] && args+=(-icount shift=0,sleep=off)
	# Under TCG, 6.12 guests crashed under heavy rxe traffic with the
	# interrupted frame's flags holding a slab pointer (EFLAGS =
	# low half of the kmem_cache | 0x202; issue 13): QEMU 7.2's
	# emulated cmpxchg16b, which 6.12's SLUB fast path uses, is the
	# suspect. Without cx16 SLUB takes its locked path. Not for 6.1,
	# which never showed it. RPAGE_VM_CPU overrides (empty: QEMU's own).
	if [ "$accel" != kvm ]; then
		local cpu
		case $kver in
		6.1.*) cpu=${RPAGE_VM_CPU-} ;;
		*) cpu=${RPAGE_VM_CPU-qemu64,-cx16} ;;
		esac
		[ -n "$cpu" ] && args+=(-cpu "$cpu")
	fi
	if [ -n "$sync" ]; then
		args+=(-fsdev "local,id=sync,path=$sync,security_model=none"
		       -device "virtio-9p-pci,fsdev=sync,mount_tag=sync")
	fi

	echo "$accel" > "$run/accel"
	timeout -k 10 "$timeout" qemu-system-x86_64 "${args[@]}" \
		> "$run/qemu.log" 2>&1
	local rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "watchdog: guest $node on $kver killed after ${timeout}s" >> "$run/problems"
		vm_hang_summary "$run/console.log" >> "$run/problems"
		return 1
	fi
	if [ ! -s "$run/out/job.rc" ]; then
		echo "guest $node on $kver ended without finishing its job (qemu exit $rc)" >> "$run/problems"
		return 1
	fi
	return 0
}

# The kernel-log lines that fail a run, wherever they come from.
# "BUG kmalloc-64 (Tainted: ...): Poison overwritten" is how SLUB's own
# checks (slub_debug) report a corrupted object.
VM_LOG_BAD='BUG:|BUG [A-Za-z0-9_:.()-]+ \(|WARNING:|Oops|general protection|blocked for more than|refcount_t|list_(add|del) corruption|list corruption|Kernel panic|UBSAN|KASAN|kernel BUG'
# And the reports of the debug kernel's checkers (make check-debug):
# kmemleak, lockdep and RCU lockdep, debug objects. Most come with a
# WARNING: line already; these match whatever their header looks like.
VM_LOG_BAD+='|unreferenced object|suspected memory leak|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|ODEBUG:'
# And page poisoning's (page_poison=1): a free page written to.
VM_LOG_BAD+='|pagealloc: memory corruption|pagealloc: single bit error'
# A user-space program's fault, which the kernel only reports (its exit
# status is the test's business): "traps: PROG[PID] general protection
# fault ip:... sp:... error:... in LIB".
VM_LOG_USER_FAULT='traps: .+\[[0-9]+\] general protection fault ip:[0-9a-f]+ sp:[0-9a-f]+ error:[0-9a-f]+ in '
# Taint flags a run may leave: O (out-of-tree module), E (unsigned).
VM_TAINT_ALLOWED=$(( (1 << 12) | (1 << 13) ))

# vm_log_bad LOG [-n]: prints the kernel's complaints in LOG (with -n,
# each after its line number and a colon); fails if none.
vm_log_bad() {
	grep -a ${2:-} -E "$VM_LOG_BAD" "$1" | grep -avE "$VM_LOG_USER_FAULT"
}

# vm_log_report LOG: the kernel's first complaint in LOG in three lines
# or so: its first line, where it happened (RIP), the calls that led
# there (up to ten frames, the unreliable "? " ones left out; where an
# exception interrupted the kernel, its RIP is one of them) and, if the
# kernel then died, its last words. A CI summary that keeps only the end
# of the output then still says where a guest's kernel went wrong.
vm_log_report() {
	local first
	first=$(vm_log_bad "$1" -n | head -n 1)
	[ -n "$first" ] || return 1
	# By its line number: awk -v would take backslashes in the line's
	# text for escapes, and then find no line to report.
	awk -v first="${first%%:*}" '
	function strip(l) { sub(/^\[ *[0-9.]+\] /, "", l); sub(/\r$/, "", l); return l }
	NR < first { next }
	NR == first { print "kernel log: " strip($0); next }
	/Kernel panic - not syncing/ { panic = strip($0) }
	done { next }
	/RIP: / && !rip { rip = strip($0); next }
	/---\[ end trace/ { done = 1; next }
	/ \? / { next }
	match($0, /[A-Za-z0-9_.]+\+0x[0-9a-f]+\/0x[0-9a-f]+( \[[a-z0-9_]+\])?/) {
		if (n < 10) frames = frames (n++ ? " < " : "") substr($0, RSTART, RLENGTH)
	}
	END {
		if (rip) print "  at " rip
		if (frames) print "  from " frames
		if (panic) print "  then " panic
	}' "$1"
}

# vm_hang_summary LOG: what a guest that never finished was doing: the
# last test it started or ended, and the tasks sysrq found blocked.
vm_hang_summary() {
	local last
	last=$(grep -aE '^(#  RUN |ok |not ok |# [a-z0-9-]+ on )' "$1" 2>/dev/null |
		tail -n 1 | tr -d '\r')
	echo "last test line: ${last:-none}"
	grep -aoE 'task:[^ ]+ +state:[A-Z]' "$1" 2>/dev/null |
		grep -v 'state:[SI]' | sort | uniq -c | head -n 8 |
		sed 's/^ */awake or blocked: /'
}

# vm_kmemleak_summary FILE: how many objects a saved
# /sys/kernel/debug/kmemleak lists, and how many of them name rpage in
# their backtrace (or, if it lists none, what guest-init wrote there).
vm_kmemleak_summary() {
	awk 'NR == 1 { first = $0 }
	     /^unreferenced object/ { n++; blk = n }
	     /rpage/ && blk && !seen[blk]++ { r++ }
	     END { if (n) printf "%d unreferenced objects, %d of them with rpage in their backtrace\n", n, r
		   else print first }' "$1"
}

# vm_judge RUNDIR: appends to RUNDIR/problems every reason the guest's
# run is not clean; returns non-zero if there is any.
vm_judge() {
	local run=$1 taint
	if [ -f "$run/console.log" ] &&
	   vm_log_bad "$run/console.log" > "$run/bad-lines"; then
		vm_log_report "$run/console.log" >> "$run/problems"
	elif [ -f "$run/out/dmesg.log" ] &&
	     vm_log_bad "$run/out/dmesg.log" > "$run/bad-lines"; then
		vm_log_report "$run/out/dmesg.log" >> "$run/problems"
	fi
	local rc
	rc=$(cat "$run/out/job.rc" 2>/dev/null)
	case "$rc" in
	0|"") ;;
	124|137) echo "job timed out: task states are in the console log" >> "$run/problems"
		 vm_hang_summary "$run/console.log" >> "$run/problems" ;;
	*) echo "job exited $rc" >> "$run/problems"
	   # A shell killed by a signal: the kernel may have said why, at
	   # a level the quiet console leaves out (a user fault, the OOM
	   # killer); its log was saved when the job was over.
	   if [ "$rc" -gt 128 ] 2>/dev/null; then
		echo "job killed by signal $((rc - 128)) ($(kill -l "$((rc - 128))" 2>/dev/null))" \
			>> "$run/problems"
		grep -aE 'segfault at|traps:|Killed process|invoked oom-killer|Oops|BUG' \
			"$run/out/dmesg.log" 2>/dev/null | head -n 5 |
			sed 's/^/kernel said: /' >> "$run/problems"
	   fi ;;
	esac
	# What kmemleak found once the job was over (selftests/vm/guest-init).
	if [ -s "$run/out/kmemleak" ]; then
		echo "kmemleak: $(vm_kmemleak_summary "$run/out/kmemleak"):" \
			"$run/out/kmemleak" >> "$run/problems"
	fi
	if [ -s "$run/out/tainted" ]; then
		taint=$(cat "$run/out/tainted")
		if [ $(( taint & ~VM_TAINT_ALLOWED )) -ne 0 ]; then
			echo "kernel tainted: $taint (only O and E are expected)" >> "$run/problems"
		fi
	elif [ ! -s "$run/problems" ]; then
		echo "no taint record: the guest did not finish" >> "$run/problems"
	fi
	[ ! -s "$run/problems" ]
}

# vm_boot_marked NODE SYNC VM_BOOT_ARGS...: vm_boot, then SYNC/NODE.gone
# (holding vm_boot's status) as soon as the guest's QEMU has exited,
# whatever ended it: the other guest of the pair then stops waiting for
# this one at a barrier, even if it crashed before its job could say it
# was over (NODE.exited, selftests/vm/guest-init).
# vm_boot_crashed RUNDIR: the guest's kernel crashed while it booted,
# before its job began: before rpage.ko or anything of the job ran. (Seen
# here: 6.12 under TCG with 2 vCPUs, once in a few dozen boots, an int3
# Oops in the idle loop while the kernel patches its own text.)
vm_boot_crashed() {
	local run=$1
	[ -f "$run/console.log" ] || return 1
	grep -aq 'guest-init: .* running ' "$run/console.log" && return 1
	vm_log_bad "$run/console.log" > /dev/null
}

# vm_boot_note_retry RUNDIR SAVED: keeps the first console of a guest
# booted again, and says so for the report.
vm_boot_note_retry() {
	mv "$2" "$1/console.boot-crash.log"
	echo "its kernel crashed while booting, before its job began;" \
		"booted again (first console: $1/console.boot-crash.log)" \
		> "$1/boot-retried"
}

# vm_boot KVER RUNDIR JOB [options]: vm_boot_once, and once more if the
# guest's kernel crashed before its job began (RPAGE_VM_NO_RETRY=1: not;
# a pair retries as a whole). A crash once the job runs is never retried.
vm_boot() {
	local run=$2 rc saved
	vm_boot_once "$@"
	rc=$?
	if [ "$rc" -ne 0 ] && [ "${RPAGE_VM_NO_RETRY:-0}" != 1 ] &&
	   vm_boot_crashed "$run"; then
		saved=$(mktemp)
		cp "$run/console.log" "$saved"
		vm_boot_once "$@"
		rc=$?
		vm_boot_note_retry "$run" "$saved"
	fi
	return "$rc"
}

vm_boot_marked() {
	local node=$1 sync=$2 rc
	shift 2
	RPAGE_VM_NO_RETRY=1 vm_boot "$@"
	rc=$?
	echo "$rc" > "$sync/$node.gone"
	return "$rc"
}

# vm_boot_pair KVER DIR JOB [VM_BOOT_OPTIONS...]: boots host A
# (DIR/a, 192.0.2.1) and host B (DIR/b, 192.0.2.2), joined by a link
# that A's QEMU listens for on a Unix socket, both running JOB, with
# barriers in DIR/sync; returns when both have powered off.
#
# The link is a stream, so it never drops a frame: RoCE expects a
# lossless fabric, and a UDP link dropped bursts of RDMA READ responses
# whenever a TCG guest fell behind (the host's socket buffer overflowed),
# leaving rxe to recover by its retransmission timer. A Unix socket,
# because QEMU's TCP stream delays small frames (Nagle) by up to 40 ms.
vm_boot_pair() {
	local dir=$2 node saved saved_a saved_b
	vm_boot_pair_once "$@"
	if vm_boot_crashed "$dir/a" || vm_boot_crashed "$dir/b"; then
		saved_a=$(mktemp)
		saved_b=$(mktemp)
		cp "$dir/a/console.log" "$saved_a" 2>/dev/null
		cp "$dir/b/console.log" "$saved_b" 2>/dev/null
		vm_boot_pair_once "$@"
		for node in a b; do
			[ "$node" = a ] && saved=$saved_a || saved=$saved_b
			vm_boot_note_retry "$dir/$node" "$saved"
		done
	fi
}

vm_boot_pair_once() {
	local kver=$1 dir=$2 job=$3 pid_a pid_b link
	shift 3
	rm -rf "$dir"
	mkdir -p "$dir/sync"
	# In /tmp: a socket's path must fit in 108 bytes, wherever the
	# checkout is.
	link=$(mktemp -u /tmp/rpage-link.XXXXXXXX) || return 1
	vm_boot_marked a "$dir/sync" "$kver" "$dir/a" "$job" --smp 1 --mem 1536 \
		--node a --ip 192.0.2.1 --peer-node b --peer-ip 192.0.2.2 \
		--mac 52:54:00:12:34:0a --sync "$dir/sync" \
		--listen "$link" "$@" &
	pid_a=$!
	# B's QEMU connects at start: A's must listen by then.
	for _ in $(seq 100); do
		[ -S "$link" ] && break
		sleep 0.1
	done
	vm_boot_marked b "$dir/sync" "$kver" "$dir/b" "$job" --smp 1 --mem 1536 \
		--node b --ip 192.0.2.2 --peer-node a --peer-ip 192.0.2.1 \
		--mac 52:54:00:12:34:0b --sync "$dir/sync" \
		--connect "$link" "$@" &
	pid_b=$!
	wait "$pid_a"
	wait "$pid_b"
	rm -f "$link"
}

# How much of a guest's console a failure shows.
VM_CONSOLE_TAIL=40

# vm_console_tail RUNDIR PREFIX: the end of the guest's console, each
# line after PREFIX.
vm_console_tail() {
	tail -n "$VM_CONSOLE_TAIL" "$1/console.log" 2>/dev/null | tr -d '\r' |
		awk -v prefix="$2" '{ print prefix $0 }'
}

# vm_job_ok WHO RUN: whether the lone guest in RUN finished its job
# with a clean kernel log, exit status 0 and no failed test; if not,
# says so for WHO with the job's last 40 lines and the log's problems.
vm_job_ok() {
	local who=$1 run=$2
	if vm_judge "$run" && [ "$(cat "$run/out/job.rc" 2>/dev/null)" = 0 ] &&
	   ! grep -q "^not ok" "$run"/out/tap/*.tap 2>/dev/null; then
		return 0
	fi
	echo "$who: the guest's job, last 40 lines:" >&2
	tail -n 40 "$run/out/job.log" 2>/dev/null | sed 's/^/  /' >&2
	cat "$run/problems" 2>/dev/null >&2
	return 1
}

# vm_show_pair NAME DIR FAILED_NODE...: after a run of the pair in DIR
# failed, on standard error, for both hosts: the problems of each failed
# one and the end of each console. One host's failure often starts on
# the other (a peer fell silent, its guest crashed, a barrier it never
# reached), so the host that did not fail is shown too.
vm_show_pair() {
	local name=$1 dir=$2 node run
	shift 2
	for node in a b; do
		run=$dir/$node
		echo
		if [[ " $* " == *" $node "* ]]; then
			echo "$name: host ${node^^} failed:"
			sed 's/^/  /' "$run/problems" 2>/dev/null
		else
			echo "$name: host ${node^^} did not fail; its peer did"
		fi
		echo "  last $VM_CONSOLE_TAIL lines of $run/console.log:"
		vm_console_tail "$run" "  | "
	done >&2
}

# vm_prepare_one NAME: for the commands that use one kernel (demo,
# bench): installs the packages (unless RPAGE_SKIP_DEPS=1), builds the
# userspace and rpage.ko for the first of RPAGE_KERNELS, and prints that
# kernel's version; NAME prefixes its messages.
vm_prepare_one() {
	local name=$1 kver
	if [ "${RPAGE_SKIP_DEPS:-0}" != 1 ]; then
		"$RPAGE_REPO/scripts/install-deps.sh" >&2 || return 1
	fi
	kver=$(vm_kernels | head -n 1)
	[ -n "$kver" ] || { echo "$name: no supported kernel installed" >&2; return 1; }
	echo "$name: building for $kver" >&2
	make -s -C "$RPAGE_REPO" user selftests >&2 || return 1
	vm_build_module "$kver" >&2 || return 1
	echo "$kver"
}
