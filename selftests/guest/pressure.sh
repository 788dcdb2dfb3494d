# SPDX-License-Identifier: GPL-2.0
#
# rpage under memory pressure, sourced by selftests/guest/pair.sh: host A
# exports a 256 MiB pool (7: its first PRESSURE_CHECKED bytes hold the
# pattern, the rest zeroes); host B (1.5 GiB of RAM) prefetches all of it
# in the background beside a bystander that leaves B three quarters of
# the pool available, then a hog takes all but PRESSURE_HOG_LEAVES of
# what B has left and the mapping is read again; and a process in a
# memory cgroup limited to 8 MiB reads 32 MiB of it twice.

PRESSURE="pressure-pool pressure-done"

POOL7_SIZE=256M
# What the tests read back and check, byte for byte (the pattern A writes).
PRESSURE_CHECKED=64M
# What the hog leaves of B's available memory.
PRESSURE_HOG_LEAVES=64M
if [ "$RPAGE_SLOW" -gt 1 ]; then
	PRESSURE_CHECKED=16M
fi

# On A: pool 7, POOL7_SIZE, its first PRESSURE_CHECKED bytes the pattern
# (written through A's loopback peer, hence writable), while B needs it.
# A has 1.5 GiB: how much it has left, at the lowest, while B reads the
# pool is said, and what the kernel did about it (its OOM killer, failed
# allocations), so that a host A that runs short shows it.
test_pressure_pool_a() {
	local sampler mark
	mark=$(dmesg_mark)
	"$RPAGECTL" pool create 7 size "$POOL7_SIZE" writable || fail "pool create 7 size $POOL7_SIZE" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	wait_until 30 remote_pool_listed self 7 || fail "pool 7 not announced to self" || return
	"$PATTERN" fill self 7 "$PRESSURE_CHECKED" || fail "filling pool 7" || return
	echo "MemAvailable with pool 7: $(mem_available_kib) kB"
	mem_low_sampler /tmp/pressure-a.low &
	sampler=$!
	barrier pressure-pool || { kill "$sampler"; return 1; }
	barrier pressure-done
	kill "$sampler"
	wait "$sampler" 2> /dev/null
	echo "lowest MemAvailable while B read pool 7: $(cat /tmp/pressure-a.low) kB"
	dmesg_since "$mark" | grep -E "oom|Killed process|allocation failure" | head -n 5
	"$RPAGECTL" pool destroy 7
}

# mem_available_kib: MemAvailable of /proc/meminfo.
mem_available_kib() {
	awk '/^MemAvailable:/ { print $2 }' /proc/meminfo
}

# mem_low_sampler FILE: samples MemAvailable now and then each second
# until killed, keeping the lowest seen (kB) in FILE. Run in the
# background.
mem_low_sampler() {
	local low avail
	low=$(mem_available_kib)
	echo "$low" > "$1"
	while :; do
		sleep 1
		avail=$(mem_available_kib)
		[ "$avail" -lt "$low" ] && { low=$avail; echo "$low" > "$1"; }
	done
}

# file_kib: the host's file pages (Cached of /proc/meminfo), kB.
file_kib() {
	awk '/^Cached:/ { print $2 }' /proc/meminfo
}

# A background prefetch never invokes the OOM killer: it stops, says
# how many pages it left, and the bystander lives. Nor does it take the
# memory the rest of the host needs: MemAvailable stays above half of
# prefetch_reserve_pct of RAM all along (sampled each second), and the
# host keeps answering its peer (no reconnection; when it did not, rxe
# starved and the peer's heartbeats went unanswered).
#
# Then host pressure: with the mapping still held (its pages in the page
# cache), a second hog takes all but PRESSURE_HOG_LEAVES of what B has
# available.
# The kernel makes room by reclaiming rpage's clean pages (the file
# pages fall by at least half of what the hog took), nobody is
# OOM-killed, and the mapping reads right afterwards: its first
# PRESSURE_CHECKED bytes, every byte checked, pages reclaimed read
# again (refetched).
pressure_prefetch_b() {
	local hog_pid pf_pid mark out=/tmp/pressure.out rc=0
	local pct total reserve low reconnects sampler
	local hog2_pid="" hog2_kib file_before file_after refetched
	local pool_kib=$(( $(numfmt --from=iec "$POOL7_SIZE") / 1024 )) bystander_kib
	local pages=$(( pool_kib / 4 ))
	# The bystander leaves B three quarters of the pool available: the
	# prefetch cannot hold all of it without reclaiming its own pages.
	bystander_kib=$(( $(mem_available_kib) - pool_kib * 3 / 4 ))
	rm -f /tmp/hog.ready
	"$FAULT" hog "${bystander_kib}K" --ready /tmp/hog.ready &
	hog_pid=$!
	wait_until 60 test -e /tmp/hog.ready || { kill "$hog_pid"; fail "hog not ready"; return; }
	grep -E 'MemTotal|MemAvailable' /proc/meminfo
	# A module without the parameter is held to its default.
	pct=$(cat /sys/module/rpage/parameters/prefetch_reserve_pct 2> /dev/null || echo 3)
	total=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	reserve=$(( total / 100 * pct ))
	reconnects=$(peer_field a reconnects)
	mark=$(dmesg_mark)
	rm -f /tmp/pf.ready /tmp/pf.go /tmp/hog2.ready
	"$FAULT" prefetch a 7 "$POOL7_SIZE" --depth 64 --readahead --no-touch --ready /tmp/pf.ready \
		--go /tmp/pf.go --after "$PRESSURE_CHECKED" > "$out" 2>&1 &
	pf_pid=$!
	mem_low_sampler /tmp/pressure-b.low &
	sampler=$!
	wait_until 1200 test -e /tmp/pf.ready -o ! -d "/proc/$pf_pid" || rc=1
	kill "$sampler"
	wait "$sampler" 2> /dev/null
	low=$(cat /tmp/pressure-b.low)
	# The host's pressure, the prefetched mapping held.
	if [ -e /tmp/pf.ready ]; then
		file_before=$(file_kib)
		hog2_kib=$(( $(mem_available_kib) - $(numfmt --from=iec "$PRESSURE_HOG_LEAVES") / 1024 ))
		echo "file pages ${file_before} kB; a hog takes ${hog2_kib} kB of $(mem_available_kib) kB available"
		if [ "$hog2_kib" -gt 0 ]; then
			"$FAULT" hog "${hog2_kib}K" --ready /tmp/hog2.ready &
			hog2_pid=$!
			wait_until 300 test -e /tmp/hog2.ready -o ! -d "/proc/$hog2_pid" || true
			file_after=$(file_kib)
			echo "file pages with the hog: ${file_after} kB"
			[ -e /tmp/hog2.ready ] || { echo "FAIL: the hog did not get its memory"; rc=1; }
			[ $(( file_before - file_after )) -ge $(( hog2_kib / 2 )) ] ||
				{ echo "FAIL: the file pages fell by $(( file_before - file_after )) kB, under half the hog's"; rc=1; }
		else
			echo "FAIL: no memory left for a hog"
			rc=1
		fi
	fi
	touch /tmp/pf.go
	wait "$pf_pid" || { echo "FAIL: the prefetch and the read after it"; rc=1; }
	cat "$out"
	refetched=$(sed -n 's/.* refetched=\([0-9]*\) .* again$/\1/p' "$out")
	echo "refetched after the hog: ${refetched:-none}"
	[ "${refetched:-0}" -gt 0 ] || { echo "FAIL: no page read again after the hog"; rc=1; }
	if [ -n "$hog2_pid" ]; then
		kill -0 "$hog2_pid" 2> /dev/null || { echo "FAIL: the hog died"; rc=1; }
		kill "$hog2_pid"
		wait "$hog2_pid" 2> /dev/null
	fi
	echo "prefetch_reserve_pct $pct: ${reserve} kB; lowest MemAvailable seen ${low} kB"
	"$RPAGECTL" stat peer a | sed -n 2p
	dmesg_since "$mark" | grep -E "prefetch stopped|oom|Out of memory|Killed process|peer a:" | head -n 5
	kill -0 "$hog_pid" 2> /dev/null || { echo "FAIL: the bystander died"; rc=1; }
	kill "$hog_pid"
	wait "$hog_pid" 2> /dev/null
	if dmesg_since "$mark" | grep -qE "invoked oom-killer|Out of memory|Killed process"; then
		echo "FAIL: the OOM killer ran"
		rc=1
	fi
	if [ "$low" -lt $(( reserve / 2 )) ]; then
		echo "FAIL: MemAvailable fell to $low kB, under half the reserve"
		rc=1
	fi
	if [ "$(peer_field a reconnects)" != "$reconnects" ] || ! peer_is a connected; then
		echo "FAIL: the connection to a did not hold"
		"$RPAGECTL" peer show
		rc=1
	fi
	# All of it read, or stopped with the pages it left said.
	if ! dmesg_since "$mark" | grep -qE "prefetch stopped, [a-z_ ]*, with [0-9]* pages left"; then
		grep -q "pages=$pages " "$out" &&
			[ "$("$RPAGECTL" -j stat peer a | jq '.peers[0].fault.prefetched')" -ge "$pages" ] ||
			{ echo "FAIL: neither read all nor stopped"; rc=1; }
	fi
	return "$rc"
}

# The cgroup v2 of the test, with the memory controller, at $CG, limited
# to CG_MAX_MIB; the process touches CG_TOUCH of pool 7, twice. Half of
# each on the debug tier's kernel, whose faults take about 30 times as
# long. (The single guest's loop test reads 512 MiB in 64 MiB; over this
# link's RDMA under TCG a fault takes about 2 ms, so this one is smaller.)
CG=/sys/fs/cgroup/rpage-test
CG_MAX_MIB=8
CG_TOUCH=32M
if [ "$RPAGE_SLOW" -gt 1 ]; then
	CG_MAX_MIB=4
	CG_TOUCH=16M
fi
cgroup_up() {
	memcg_up || return 1
	mkdir -p "$CG" && echo "${CG_MAX_MIB}M" > "$CG/memory.max"
}

# A process in a memory cgroup reads, over RDMA, four times the memory
# the cgroup may have, twice: the pages it faults in are charged to its
# cgroup, reclaim drops the clean ones it read before, and the second
# pass reads them again (refetched). The cgroup stays within its limit
# and its OOM killer never runs.
pressure_memcg_b() {
	local rc peak events refetched
	cgroup_up || fail "no memory cgroup" || return
	bash -c "echo \$\$ > $CG/cgroup.procs && exec $FAULT touch a 7 $CG_TOUCH --threads 1 --order random --passes 2" \
		> /tmp/memcg.out 2>&1
	rc=$?
	cat /tmp/memcg.out
	peak=$(cat "$CG/memory.peak" 2> /dev/null || echo 0)
	events=$(tr '\n' ' ' < "$CG/memory.events")
	echo "exit $rc, memory.peak $peak, memory.events: $events"
	[ "$peak" -le $(( CG_MAX_MIB << 20 )) ] ||
		fail "memory.peak $peak above the $CG_MAX_MIB MiB limit" || return
	expect_eq "$rc" 0 "exit status of the touch, twice" || return
	echo "$events" | grep -qE "oom_kill 0( |$)" || fail "the cgroup's OOM killer ran" || return
	refetched=$(sed -n 's/.* refetched=\([0-9]*\) .*/\1/p' /tmp/memcg.out)
	[ "${refetched:-0}" -gt 0 ] || fail "no page refetched"
}

test_pressure_prefetch_b() {
	barrier pressure-pool || return
	if [ "$RPAGE_SLOW" -gt 1 ]; then
		# 256 MiB of READs takes hours there; the other kernels run it.
		skip "on $RPAGE_KVER: $POOL7_SIZE at its READ rate takes hours"
		return
	fi
	wait_until 60 remote_pool_listed a 7 || fail "pool 7 not announced" || return
	pressure_prefetch_b
}

test_pressure_memcg_b() {
	pressure_memcg_b
	local rc=$?
	rmdir "$CG" 2> /dev/null
	barrier pressure-done
	return "$rc"
}
