# SPDX-License-Identifier: GPL-2.0
#
# A VM moved to another host without its memory, sourced by the pair job
# and by the demo. Host A runs stock QEMU with a small guest
# (selftests/rpage_mbguest.c: fills all but its first 4 MiB with a
# pattern and verifies it over and over) whose RAM is a file on tmpfs
# of VM_MIB (64 MiB; the pair job's test gives it 16), share=on; it
# exports that file as pool 9. Host B maps the pool by name and starts
# QEMU on /dev/rpage-map/vm with -incoming defer; B then stops A's VM,
# migrates its device state with x-ignore-shared (only the small private
# blocks travel), and runs it: every first touch of a page by B's vCPU
# is an RDMA READ from A's paused RAM. B pulls the rest; A destroys the
# pool and quits its QEMU; the VM goes on verifying its memory on B.
# B's mapping has 2 MiB pages (pagesize 2M) and both QEMUs align their
# RAM to 2 MiB (align=2M): a first touch reads its 2 MiB region whole,
# the pull reads the rest in regions, and B's QEMU maps its guest RAM
# with PMD entries, as a VM on huge pages runs.
#
# Both QEMUs are Debian's (TCG, inside the TCG guests). B drives both
# through QMP (A's over the link), so the downtime is read off one clock.
# With VM_FORGET_PEER=1 (the demo), B also deletes peer a once A let go,
# and the VM runs on.

VM_POOL=9
# The VM's RAM: the demo's 64 MiB, unless its includer says otherwise.
VM_MIB=${VM_MIB:-64}
VM_RAM=/dev/shm/rpage-vm-ram
VM_NODE=/dev/rpage-map/vm
VM_QMP_PORT=4445
VM_MIGRATE_PORT=4446
VM_SERIAL=$RPAGE_OUT/vm-serial.log
VM_QMP_TOOL="python3 $RPAGE_REPO/selftests/rpage_qmp.py"
MBGUEST=$SELFTESTS/rpage_mbguest
# What the guest must have done, in passes over its memory, before it
# moves, and after A is gone.
VM_PASSES_BEFORE=1
VM_PASSES_AFTER=1
VM_BARRIERS="vm-exported vm-moved vm-pulled vm-a-gone"

# vm_qemu RAM-PATH SERIAL QMP [ARGS...]: starts stock QEMU in the
# background with the demo's guest and RAM-PATH as its RAM; the same
# machine on both hosts, as migration wants.
vm_qemu() {
	local ram=$1 serial=$2 qmp=$3
	shift 3
	echo "\$ qemu-system-x86_64 -accel tcg -m ${VM_MIB}M" \
		"-object memory-backend-file,id=ram,size=${VM_MIB}M,mem-path=$ram,share=on,align=2M" \
		"-machine pc,memory-backend=ram -kernel rpage_mbguest" \
		"-nodefaults -display none -serial file:$serial -qmp $qmp $* &"
	qemu-system-x86_64 -accel tcg -m "${VM_MIB}M" \
		-object memory-backend-file,id=ram,size="${VM_MIB}M",mem-path="$ram",share=on,align=2M \
		-machine pc,memory-backend=ram -kernel "$MBGUEST" \
		-nodefaults -display none -monitor none \
		-serial file:"$serial" -qmp "$qmp",server=on,wait=off "$@" \
		> /tmp/vm-qemu.log 2>&1 &
	VM_QEMU_PID=$!
}

# The move's timeline on B, for the admin guide's drawing
# (selftests/rpage_timeline.py turns it into data for gnuplot): a line
# "S SECONDS MAP-SHOW STAT-MAP" (rpagectl -j, of the mapping) every
# 0.2 s while the VM moves and is pulled, and "E SECONDS NAME" at each
# step, SECONDS since the epoch.
VM_TIMELINE=$RPAGE_OUT/vm-timeline.txt

vm_event() {
	echo "E $EPOCHREALTIME $1" >> "$VM_TIMELINE"
}

vm_timeline_start() {
	: > "$VM_TIMELINE"
	while :; do
		echo "S $EPOCHREALTIME $("$RPAGECTL" -j map show vm) $("$RPAGECTL" -j stat map vm)"
		sleep 0.2
	done >> "$VM_TIMELINE" 2> /dev/null &
	VM_TIMELINE_PID=$!
}

vm_timeline_stop() {
	[ -n "${VM_TIMELINE_PID:-}" ] || return 0
	kill "$VM_TIMELINE_PID" 2> /dev/null
	wait "$VM_TIMELINE_PID" 2> /dev/null
	VM_TIMELINE_PID=
}

# vm_pmd_kb PID PATH: kB of PATH that process PID maps with PMD entries.
vm_pmd_kb() {
	awk -v path="$2" '/^[0-9a-f]+-[0-9a-f]+ / { mine = ($NF == path) }
		mine && $1 == "FilePmdMapped:" { kb += $2 }
		END { print kb + 0 }' "/proc/$1/smaps"
}

# vm_passes: how many passes over its memory the guest has verified.
vm_passes() {
	grep -c ' ok, checksum ' "$VM_SERIAL" 2> /dev/null
}

# vm_checksum: the checksum the guest prints, as it filled or verified.
vm_checksum() {
	grep -o 'checksum 0x[0-9a-f]*' "$VM_SERIAL" | head -n 1
}

# vm_bad: the guest found a word of its memory wrong.
vm_bad() {
	grep -q ' BAD at ' "$VM_SERIAL" 2> /dev/null
}

# vm_wait_passes N SECONDS: the guest verified N more passes.
vm_wait_passes() {
	local want=$(( $(vm_passes) + $1 ))
	wait_until "$2" eval '[ "$(vm_passes)" -ge '"$want"' ] || vm_bad'
	! vm_bad && [ "$(vm_passes)" -ge "$want" ]
}

# On A: the VM, its RAM exported as pool 9, until B has moved it and
# pulled every page; then the pool goes and so does A's QEMU.
test_vm_move_a() {
	local state
	rm -f "$VM_RAM" "$RPAGE_SYNC/vm-checksum"
	vm_qemu "$VM_RAM" "$VM_SERIAL" "tcp:$RPAGE_IP:$VM_QMP_PORT"
	vm_wait_passes "$VM_PASSES_BEFORE" 600 ||
		{ cat "$VM_SERIAL" /tmp/vm-qemu.log; fail "the VM did not verify its memory on A"; return; }
	cat "$VM_SERIAL"
	vm_checksum > "$RPAGE_SYNC/vm-checksum"
	# Exporting only holds the file's pages: done before the VM stops,
	# it costs no downtime.
	step "$RPAGECTL" pool create "$VM_POOL" file "$VM_RAM" || fail "pool create" || return
	step "$RPAGECTL" pool show
	barrier vm-exported || return
	barrier vm-moved || return
	barrier vm-pulled || return
	state=$($VM_QMP_TOOL "$RPAGE_IP:$VM_QMP_PORT" query-status | jq -r .status)
	echo "A's QEMU: $state (it must never run this VM again)"
	step "$RPAGECTL" pool destroy "$VM_POOL" || fail "pool destroy" || return
	$VM_QMP_TOOL "$RPAGE_IP:$VM_QMP_PORT" quit > /dev/null
	echo "A's QEMU quit, pool $VM_POOL destroyed"
	wait "$VM_QEMU_PID"
	rm -f "$VM_RAM"
	barrier vm-a-gone || return
	expect_eq "$state" postmigrate "A's VM after the move"
}

# On B: the move, the pull, and the VM's life after A let go.
test_vm_move_b() {
	local move fault0 checksum faults pmd huge bytes
	barrier vm-exported || return
	wait_until 60 remote_pool_listed a "$VM_POOL" || fail "pool $VM_POOL not announced" || return
	step "$RPAGECTL" map add vm peer a pool "$VM_POOL" pagesize 2M || fail "map add" || return
	vm_timeline_start
	vm_event mapped
	fault0=$("$RPAGECTL" -j stat peer a | jq -c '.peers[0].fault')
	rm -f /tmp/vm-b.qmp
	vm_qemu "$VM_NODE" "$VM_SERIAL" unix:/tmp/vm-b.qmp -incoming defer
	wait_until 60 test -S /tmp/vm-b.qmp || { cat /tmp/vm-qemu.log; fail "B's QEMU did not start"; return; }
	echo "\$ rpage_qmp.py move $RPAGE_PEER_IP:$VM_QMP_PORT /tmp/vm-b.qmp tcp:$RPAGE_IP:$VM_MIGRATE_PORT"
	move=$($VM_QMP_TOOL move "$RPAGE_PEER_IP:$VM_QMP_PORT" /tmp/vm-b.qmp \
		"tcp:$RPAGE_IP:$VM_MIGRATE_PORT" "$VM_TIMELINE") ||
		{ vm_timeline_stop; cat /tmp/vm-qemu.log; fail "the move failed"; return; }
	echo "$move"
	barrier vm-moved || { vm_timeline_stop; return 1; }
	# Demand faults first: the vCPU's touches jump the pull's queue.
	vm_event pull
	step "$RPAGECTL" map pull vm || { vm_timeline_stop; fail "map pull"; return; }
	vm_wait_passes 1 600 || { vm_timeline_stop; cat "$VM_SERIAL"; fail "no good pass on B"; return; }
	wait_until 600 eval '[ "$("$RPAGECTL" -j map show vm | jq -r ".[0].depends")" = false ]' ||
		{ vm_timeline_stop; "$RPAGECTL" map show vm; fail "the pull did not finish"; return; }
	step "$RPAGECTL" map show vm
	step "$RPAGECTL" stat peer a
	barrier vm-pulled || { vm_timeline_stop; return 1; }
	barrier vm-a-gone || { vm_timeline_stop; return 1; }
	vm_event a-gone
	vm_timeline_stop
	# What the VM's move cost in faults, whatever earlier tests counted.
	faults=$("$RPAGECTL" -j stat peer a | jq -c --argjson a "$fault0" '.peers[0].fault |
		with_entries(select(.key | IN("faults", "minor_faults", "prefetched",
					     "prefetch_hits", "sigbus")) |
			     .value -= $a[.key])')
	expect_eq "$(echo "$faults" | jq .sigbus)" 0 "SIGBUS" || return
	if [ "${VM_FORGET_PEER:-0}" = 1 ]; then
		# Nothing of the VM's needs A any more: B forgets it.
		step "$RPAGECTL" peer del a || fail "peer del" || return
	fi
	vm_wait_passes "$VM_PASSES_AFTER" 600 || { cat "$VM_SERIAL"; fail "the VM stopped verifying on B"; return; }
	kill -0 "$VM_QEMU_PID" || fail "B's QEMU is gone" || return
	echo "B's VM, with A's pool and QEMU gone:"
	cat "$VM_SERIAL"
	step "$RPAGECTL" map show vm
	step "$RPAGECTL" stat map vm
	pmd=$(vm_pmd_kb "$VM_QEMU_PID" "$VM_NODE")
	huge=$("$RPAGECTL" -j stat map vm | jq -c '.maps[0].fault | {huge_faults, huge_prefetched, huge_fallbacks}')
	echo "B's QEMU maps ${pmd} kB of its guest RAM with PMD entries; $huge"
	$VM_QMP_TOOL /tmp/vm-b.qmp quit > /dev/null
	wait "$VM_QEMU_PID"
	step "$RPAGECTL" map del vm || fail "map del" || return
	checksum=$(cat "$RPAGE_SYNC/vm-checksum")
	expect_eq "$(vm_checksum)" "$checksum" "checksum on B (A's: $checksum)" || return
	echo "$move" | grep -q 'source_state=postmigrate destination_state=running' ||
		fail "states after the move" || return
	# The RAM stayed where it was: QEMU sent only its small private
	# blocks (ROMs, about 200 KB), not the RAM it would copy without
	# x-ignore-shared.
	bytes=$(echo "$move" | sed -n 's/.* migrated_bytes=\([0-9]*\) .*/\1/p')
	[ -n "$bytes" ] && [ "$bytes" -lt $((1 << 20)) ] ||
		fail "QEMU migrated ${bytes:-no} bytes of RAM: the guest's RAM was copied, not left in the pool" || return
	# Every region read whole, by a fault or the pull: none fell back.
	expect_eq "$(echo "$huge" | jq '.huge_faults + .huge_prefetched')" $((VM_MIB / 2)) \
		"2 MiB regions read whole, of $((VM_MIB / 2))" || return
	expect_eq "$(echo "$huge" | jq .huge_fallbacks)" 0 "4 KiB fallbacks" || return
	# The guest's memory (what it checks over and over, and its own
	# code) by PMD: 31 regions of 32 on 6.12 (63488 kB) with 64 MiB; all
	# but two at least.
	[ "$pmd" -ge $(( (VM_MIB / 2 - 2) * 2048 )) ] ||
		fail "B's QEMU maps $pmd kB of its guest RAM by PMD, want $((VM_MIB / 2 - 2)) regions at least" || return
	echo "The VM verified its memory on B, $checksum as on A, with A's pool gone;" \
		"$(echo "$move" | grep -o 'downtime_ms=[0-9]*'), faults $faults," \
		"$pmd kB mapped by PMD"
}
