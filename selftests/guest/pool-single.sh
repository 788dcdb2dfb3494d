# SPDX-License-Identifier: GPL-2.0
#
# Pools and remote reads and writes in one guest: the host reads its own
# pools through the peer "self" over rxe loopback.
. "$RPAGE_REPO/selftests/guest/lib.sh"

PATTERN=$SELFTESTS/rpage_pattern
SELF=$RPAGE_IP

local_pool_listed() {
	"$RPAGECTL" -j pool show | jq -e --argjson id "$1" 'any(.[]; .id == $id)'
}

test_setup() {
	modprobe ib_core && modprobe rdma_cm || return
	# Reads in flight on a destroyed pool drain within io_timeout_ms
	# (test_destroy_while_reading).
	insmod "$RPAGE_KO" qps_per_peer=2 io_timeout_ms=$((5000 * RPAGE_SLOW)) ||
		fail "insmod" || return
	"$RPAGECTL" endpoint add "$SELF" || return
	"$RPAGECTL" peer add self addr "$SELF" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	"$RPAGECTL" pool create 1 size 64M || fail "pool create 1" || return
	"$RPAGECTL" pool create 2 size 8M writable || fail "pool create 2" || return
	wait_until 30 remote_pool_listed self 1 || fail "pool 1 not announced" || return
	wait_until 30 remote_pool_listed self 2 || fail "pool 2 not announced" || return
	"$RPAGECTL" pool show
	"$RPAGECTL" pool show remote
}

test_kernel_pool_reads_zeros() {
	"$RPAGECTL" read self 1 0 64M file /tmp/p1 || fail "rpagectl read" || return
	head -c 64M /dev/zero | cmp - /tmp/p1 || fail "pool 1 is not all zeros"
	rm -f /tmp/p1
}

test_rpagectl_write_read_back() {
	head -c 8M /dev/urandom > /tmp/in || return
	"$RPAGECTL" write self 2 0 8M file /tmp/in || fail "rpagectl write" || return
	"$RPAGECTL" read self 2 0 8M file /tmp/out || fail "rpagectl read" || return
	cmp /tmp/in /tmp/out || fail "read back differs from what was written"
	rm -f /tmp/in /tmp/out
}

test_librpage_vectors_pattern() {
	"$PATTERN" write self 2 0 8M --seed 7 || return
	"$PATTERN" read self 2 0 8M --seed 7 || return
	# Many small vectors, and one range at an odd page offset.
	"$PATTERN" read self 2 4K 4M --seed 7 --batch 1
}

test_stats_count_reads() {
	local before after
	before=$("$RPAGECTL" -j stat peer self | jq '.peers[0].reads')
	"$PATTERN" read self 2 0 1M --seed 7 || return
	"$RPAGECTL" stat
	after=$("$RPAGECTL" -j stat peer self | jq '.peers[0].reads')
	expect_eq "$((after - before))" 256 "pages counted for a 1 MiB read" || return
	"$RPAGECTL" -j stat peer self |
		jq -e '.peers[0].latency.p50_ns > 0 and .peers[0].latency.p99_ns >= .peers[0].latency.p50_ns and (.peers[0].latency.histogram | length) > 0' ||
		fail "no latency histogram" || return
	"$RPAGECTL" -j stat device rxe0 | jq -e '.devices[0].reads >= 256 and .devices[0].connects >= 2' ||
		fail "device counters"
}

test_user_pool_export() {
	rm -f /tmp/ready3 /tmp/until3 /tmp/export3.out
	"$PATTERN" export 3 16M --writable --ready /tmp/ready3 --until /tmp/until3 \
		--expect 9 4M 1M > /tmp/export3.out 2>&1 &
	local pid=$!
	wait_until 30 test -e /tmp/ready3 || fail "exporter not ready" || return
	wait_until 30 remote_pool_listed self 3 || fail "pool 3 not announced" || return
	"$PATTERN" read self 3 0 16M || fail "reading the exported pool" || return
	"$PATTERN" write self 3 4M 1M --seed 9 || fail "writing the exported pool" || return
	touch /tmp/until3
	wait "$pid" || { cat /tmp/export3.out; fail "exporter failed"; return; }
	cat /tmp/export3.out
	grep -q verified /tmp/export3.out || fail "the exporting process did not see the write" || return
	# Its pool went with its file.
	wait_until 10 sh -c "! '$RPAGECTL' -j pool show | jq -e 'any(.[]; .id == 3)'" ||
		fail "pool 3 still listed after its process exited" || return
	wait_until 30 sh -c "! '$RPAGECTL' -j pool show remote | jq -e 'any(.[]; .id == 3)'" ||
		fail "pool 3 still announced after its process exited"
}

test_exporter_killed() {
	rm -f /tmp/ready4 /tmp/until4
	"$PATTERN" export 4 4M --ready /tmp/ready4 --until /tmp/until4 > /dev/null 2>&1 &
	local pid=$!
	wait_until 30 test -e /tmp/ready4 || fail "exporter not ready" || return
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	wait_until 10 sh -c "! '$RPAGECTL' -j pool show | jq -e 'any(.[]; .id == 4)'" ||
		fail "pool 4 outlived its killed process"
}

test_destroy_while_reading() {
	local pid rc connects
	connects=$(peer_field self connects)
	( for _ in 1 2 3 4 5 6 7 8; do "$PATTERN" read self 1 0 64M > /dev/null 2>&1; done ) &
	pid=$!
	sleep 1
	"$RPAGECTL" pool destroy 1 || fail "pool destroy" || return
	wait "$pid"
	rc=$?
	echo "readers ended ($rc)"
	! local_pool_listed 1 || fail "pool 1 still listed" || return
	wait_until 30 sh -c "! '$RPAGECTL' -j pool show remote | jq -e 'any(.[]; .id == 1)'" ||
		fail "pool 1 still announced" || return
	# Reads in flight drained before the keys went: no transport error,
	# so no reconnect, and the reader acknowledged in time.
	peer_is self connected || fail "self not connected" || return
	expect_eq "$(peer_field self connects)" "$connects" "connects (a read failed on the transport)" || return
	! dmesg | grep -q "not every reader acknowledged" || fail "withdrawal not acknowledged"
}

test_peer_del_during_reads() {
	local pid rc start
	# The loop ends (status 0) at the first read that fails.
	( for _ in $(seq 40); do
		"$PATTERN" read self 2 0 8M --seed 7 > /dev/null 2>&1 || exit 0
	  done; exit 1 ) &
	pid=$!
	sleep 1
	start=$(date +%s)
	"$RPAGECTL" peer del self || fail "peer del with reads in flight" || return
	wait "$pid"
	rc=$?
	echo "peer deleted in $(( $(date +%s) - start ))s; readers ended ($rc)"
	expect_eq "$rc" 0 "a read failed once the peer was gone" || return
	"$RPAGECTL" peer add self addr "$SELF" || return
	wait_until 60 peer_is self connected || fail "self not back" || return
	wait_until 30 remote_pool_listed self 2 || fail "pool 2 not announced again" || return
	"$PATTERN" read self 2 0 8M --seed 7
}

test_reads_fail_cleanly_when_peer_deleted() {
	"$RPAGECTL" read self 2 0 4K file /dev/null || fail "read before delete" || return
	"$RPAGECTL" peer del self || fail "peer del" || return
	local out
	out=$("$RPAGECTL" read self 2 0 4K file /dev/null 2>&1)
	[ $? -eq 1 ] || fail "read of a deleted peer: want exit 1 ($out)" || return
	echo "$out"
	"$RPAGECTL" peer add self addr "$SELF" || return
	wait_until 60 peer_is self connected || fail "self not back"
}

FAULT=$SELFTESTS/rpage_fault
# The successful READs of PAGES pages each in the trace.
reads_of() {
	grep -c " rpage_io_done: .* READ pages=$1 status=0 " "$TRACEFS/trace"
}

# perf and bpftrace see the fault path through these tracepoints.
test_tracepoints_see_faults() {
	"$PATTERN" write self 2 0 256K --seed 7 || return
	traced all "$FAULT" touch self 2 256K --threads 1 --order seq --seed 7 \
		--expect-faults 64
	expect_eq "$?" 0 "touch" || return
	grep -m 4 rpage_ "$TRACEFS/trace"
	# A READ slower than the fault's 1 ms of polling drops mmap_lock: that
	# fault ends "retry" and its retry finds the page ("minor").
	local fetched retried minor
	fetched=$(grep -c " rpage_fault_end: .* fetched " "$TRACEFS/trace")
	retried=$(grep -c " rpage_fault_end: .* retry " "$TRACEFS/trace")
	minor=$(grep -c " rpage_fault_end: .* minor " "$TRACEFS/trace")
	echo "fault_end: $fetched fetched, $retried retry, $minor minor"
	expect_eq "$(( fetched + retried ))" 64 "faults that read their page" || return
	expect_eq "$minor" "$retried" "retried faults that found their page" || return
	expect_eq "$(trace_count rpage_fault_begin)" "$(trace_count rpage_fault_end)" \
		"fault_begin events, one per fault_end" || return
	expect_eq "$(trace_count rpage_fault_begin)" "$(( 64 + retried ))" "fault_begin events" || return
	[ "$(trace_count rpage_io_post)" -ge 64 ] || fail "io_post events" || return
	[ "$(trace_count rpage_io_done)" -ge 64 ] || fail "io_done events"
}

# The numbers of rpage_fault_end's result, which bpftrace and perf
# scripts see, are those the UAPI header gives (RPAGE_FAULT_END_*): the
# tracepoint's format names each number, and each name's number there
# is the header's.
test_tracepoint_results_are_the_uapi_numbers() {
	local fmt want got
	trace_setup || return
	fmt=$(grep '^print fmt' "$TRACEFS/events/rpage/rpage_fault_end/format") ||
		fail "no format for rpage_fault_end" || return
	want=$(sed -n 's/^\s*RPAGE_FAULT_END_\([A-Z]*\)\s*= \([0-9]*\),.*/\2 \L\1/p' \
		"$RPAGE_REPO/include/uapi/linux/rpage.h" | sort)
	got=$(grep -o '{ [0-9]*, "[a-z]*" }' <<< "$fmt" | sed 's/{ \([0-9]*\), "\([a-z]*\)" }/\1 \2/' | sort)
	echo "$got" | tr '\n' ' '; echo
	[ "$(wc -l <<< "$want")" -eq 5 ] || fail "the header's RPAGE_FAULT_END_*: $want" || return
	expect_eq "$got" "$want" "rpage_fault_end's results against the UAPI header"
}

# A run of adjacent pages goes as one READ per RPAGE_IO_MAX_SGE (16)
# pages, and a READ never spans two of the pool's 2 MiB regions: one
# range of 256 KiB across the first boundary is 2 + 2 READs of 16 pages,
# and carries the pattern (pool 2 holds seed 7 there by now).
test_adjacent_pages_share_a_read() {
	"$PATTERN" write self 2 1920K 256K --seed 7 || return
	traced rpage_io_done "$RPAGECTL" read self 2 1920K 256K file /tmp/adjacent
	expect_eq "$?" 0 "rpagectl read across a region boundary" || return
	"$PATTERN" check-file 2 /tmp/adjacent --seed 7 --offset 1920K || return
	grep -m 2 rpage_io_done "$TRACEFS/trace"
	expect_eq "$(reads_of 16)" 4 "READs of 16 pages" || return
	expect_eq "$(trace_count rpage_io_done)" 4 "io_done events"
}

# The ranges of one call to one peer are in flight together: 64 ranges
# of one page each, no two adjacent (every other page of 512 KiB), go
# out as 64 READs with one doorbell, as far as the send queue (64) has
# room, not one range after another.
test_ranges_of_a_call_in_flight_together() {
	"$PATTERN" write self 2 0 512K --seed 7 || return
	traced rpage_io_post,rpage_io_done \
		"$PATTERN" read self 2 0 256K --seed 7 --batch 64 --stride 2
	expect_eq "$?" 0 "read of 64 scattered one-page ranges" || return
	grep -m 2 rpage_io_post "$TRACEFS/trace"
	expect_eq "$(reads_of 1)" 64 "READs of one page" || return
	[ "$(trace_count rpage_io_post)" -le 2 ] ||
		fail "$(trace_count rpage_io_post) posts for 64 ranges: want 1 or 2"
}

# Adjacent pages share a READ across the ranges of a call as well: 64
# ranges of one page each, one after the other in the pool, are four
# READs of 16 pages.
test_adjacent_ranges_share_a_read() {
	"$PATTERN" write self 2 0 256K --seed 7 || return
	traced rpage_io_done "$PATTERN" read self 2 0 256K --seed 7 --batch 64
	expect_eq "$?" 0 "read of 64 adjacent one-page ranges" || return
	grep -m 2 rpage_io_done "$TRACEFS/trace"
	expect_eq "$(reads_of 16)" 4 "READs of 16 pages" || return
	expect_eq "$(trace_count rpage_io_done)" 4 "io_done events"
}

# The bpftrace scripts rpage-utils ships (ulib/bpftrace/) see what they
# say. The latency one, around 64 faults of one mapping: every fault of
# it counted by how it ended (those that read their page, fetched or
# retried after dropping mmap_lock, are 64), and the histogram of the
# fetched ones holds each of them.
BT_DIR=$RPAGE_REPO/ulib/bpftrace

test_bpftrace_fault_latency() {
	local out=/tmp/bt-latency.out fetched retry hist
	bt_need || return
	"$PATTERN" write self 2 0 256K --seed 7 || return
	bpftrace -c "$FAULT touch self 2 256K --threads 1 --order seq --seed 7 --expect-faults 64" \
		"$BT_DIR/rpage-fault-latency.bt" > "$out" 2>&1
	expect_eq "$?" 0 "bpftrace and the touch under it" || { cat "$out"; return 1; }
	cat "$out"
	[ "$(grep -c '^@ended\[' "$out")" -ge 1 ] || fail "no @ended counts" || return
	# One mapping: one id in every key.
	expect_eq "$(grep -o '^@[a-z_]*\[[0-9]*' "$out" | sed 's/.*\[//' | sort -u | wc -l)" 1 \
		"mapping ids seen" || return
	fetched=$(sed -n 's/^@ended\[[0-9]*, fetched\]: //p' "$out")
	retry=$(sed -n 's/^@ended\[[0-9]*, retry\]: //p' "$out")
	expect_eq "$(( ${fetched:-0} + ${retry:-0} ))" 64 "faults that read their page" || return
	hist=$(awk '/^@fetched_ns\[/ { on = 1; next } on && /^\[/ { n += $3 } on && !/^\[/ { on = 0 } END { print n + 0 }' "$out")
	expect_eq "$hist" "${fetched:-0}" "faults in the histogram of fetched ones"
}

# The SIGBUS one, while a process touches a mapping whose pool was
# destroyed after it had read its first 64 pages: a line for each page
# that raised SIGBUS, with the process, the mapping, an offset past what
# it had read, and ENOENT (2: the pool is gone), and the count at the
# end is the process's own.
test_bpftrace_sigbus() {
	local out=/tmp/bt-sigbus.out pid bt rc sigbus lines
	bt_need || return
	"$RPAGECTL" pool create 19 size 1M writable || return
	wait_until 30 remote_pool_listed self 19 || fail "pool 19 not announced" || return
	"$PATTERN" fill self 19 1M || fail "filling pool 19" || return
	# Unbuffered: its lines reach the file as it prints them.
	bpftrace -B none "$BT_DIR/rpage-sigbus.bt" > "$out" 2>&1 &
	bt=$!
	# bpftrace compiles its program first: a minute and more under TCG.
	wait_until $((180 * RPAGE_SLOW)) grep -q "^TIME" "$out" || { kill -INT "$bt"; cat "$out"; fail "bpftrace did not start"; return; }
	rm -f /tmp/bt-fetched /tmp/bt-go
	"$FAULT" survive self 19 1M --fetched 256K --ready /tmp/bt-fetched --go /tmp/bt-go \
		> /tmp/bt-survive.out 2>&1 &
	pid=$!
	wait_until 60 test -e /tmp/bt-fetched || { kill "$pid"; kill -INT "$bt"; fail "no fetch"; return; }
	"$RPAGECTL" pool destroy 19 || return
	touch /tmp/bt-go
	wait "$pid"
	rc=$?
	sigbus=$(sed -n 's/^sigbus=\([0-9]*\) .*/\1/p' /tmp/bt-survive.out)
	# bpftrace prints its lines as it reads them from the kernel's
	# buffer, a moment after the faults; interrupted, it drops what it
	# has not read yet.
	wait_until 60 eval '[ "$(grep -cE "^[0-9:]{8} +'"$pid"' " "$out")" -ge "${sigbus:-1}" ]'
	kill -INT "$bt"
	wait "$bt"
	cat /tmp/bt-survive.out "$out"
	expect_eq "$rc" 0 "the survivor's exit status" || return
	lines=$(grep -cE '^[0-9:]{8} +'"$pid"' +rpage_fault +[0-9]+ +[0-9]+ 2$' "$out")
	expect_eq "$lines" "${sigbus:-none}" "SIGBUS lines of the survivor (pid $pid, errno 2)" || return
	awk -v pid="$pid" '$2 == pid && $5 < 256 * 1024 { bad = 1 } END { exit bad }' "$out" ||
		fail "a SIGBUS line for a page read before the pool went" || return
	expect_eq "$(sed -n 's/^@sigbus\[[0-9]*, rpage_fault\]: //p' "$out")" "$sigbus" "@sigbus count"
}

# The loop transport: this host as its own peer "lo", no wire. Its pools
# come through the same pool table, and what one transport wrote the
# other reads, byte for byte.
test_loop_peer_add() {
	"$RPAGECTL" peer add lo transport loop || fail "peer add lo transport loop" || return
	wait_until 30 peer_is lo connected || fail "lo not connected" || return
	"$RPAGECTL" peer show lo
	"$RPAGECTL" -j peer show lo |
		jq -e '.[0].transport == "loop" and .[0].addr == null and .[0].port == null and .[0].last_error == null and .[0].qps == 0 and .[0].qps_inbound == 1 and .[0].cause == "this host'"'"'s pool table listed"' > /dev/null ||
		fail "peer show lo: not a connected loop peer" || return
	"$RPAGECTL" -j peer show self | jq -e '.[0].transport == "rdma"' > /dev/null ||
		fail "peer show self: not over rdma" || return
	wait_until 30 remote_pool_listed lo 1 || fail "pool 1 not listed through lo" || return
	wait_until 30 remote_pool_listed lo 2 || fail "pool 2 not listed through lo" || return
	if "$RPAGECTL" peer add lo2 transport loop 2> /tmp/err; then
		fail "a second loop peer was added"
		return
	fi
	cat /tmp/err
	grep -q "a loop peer, already exists" /tmp/err || fail "no reason given for the second loop peer" || return
	if "$RPAGECTL" peer add lo2 transport loop addr "$SELF" 2> /tmp/err; then
		fail "a loop peer with an address was added"
		return
	fi
	cat /tmp/err
	grep -q "takes no 'addr'" /tmp/err || fail "no reason given for the address"
}

test_loop_and_rdma_read_each_others_writes() {
	"$PATTERN" write self 2 0 8M --seed 11 || return
	"$PATTERN" read lo 2 0 8M --seed 11 || fail "lo read what self wrote wrong" || return
	"$PATTERN" write lo 2 0 8M --seed 12 --batch 1 || return
	"$PATTERN" read self 2 0 8M --seed 12 || fail "self read what lo wrote wrong" || return
	"$PATTERN" read lo 2 4K 4M --seed 12 --batch 1 || return
	"$RPAGECTL" read lo 1 0 64M file /tmp/p1 || fail "rpagectl read over lo" || return
	head -c 64M /dev/zero | cmp - /tmp/p1 || fail "pool 1 over lo is not all zeros" || return
	rm -f /tmp/p1
	# Pool 2 as the tests after these want it, written over the loop.
	"$PATTERN" write lo 2 0 8M --seed 7 || return
	"$PATTERN" read self 2 0 8M --seed 7
}

# A pool's destroy returns only once every access that found the pool
# has ended (then it frees the pages): rpage_hold_test holds rpagectl's
# copy over lo inside its access section, between the lookup and the
# page, on CPU 1; the destroy, on CPU 0, begins during the hold and must
# not return before it ends. The read gets the pool's bytes.
test_loop_destroy_waits_for_a_copy() {
	local p=/sys/module/rpage_hold_test/parameters pid rc holding held
	insmod "$RPAGE_HOLD_KO" || fail "insmod rpage_hold_test" || return
	"$RPAGECTL" pool create 95 size 1M writable || { rmmod rpage_hold_test; fail "pool create 95"; return; }
	wait_until 30 remote_pool_listed lo 95 &&
		head -c 4K /dev/zero | tr '\0' '\137' > /tmp/hold.want &&
		"$RPAGECTL" write lo 95 8K 4K file /tmp/hold.want ||
		{ rmmod rpage_hold_test; fail "pool 95 not listed or not written"; return; }
	echo rpagectl > "$p/comm" && echo 2000 > "$p/hold_ms" || return
	taskset -c 1 "$RPAGECTL" read lo 95 8K 4K file /tmp/hold.got &
	pid=$!
	wait_until 10 grep -qx 1 "$p/holding" ||
		{ wait "$pid"; rmmod rpage_hold_test; fail "the read was never held"; return; }
	taskset -c 0 "$RPAGECTL" pool destroy 95
	rc=$?
	holding=$(cat "$p/holding")
	wait "$pid" || fail "the held read failed"
	held=$(cat "$p/holds")
	rmmod rpage_hold_test
	echo "destroy: $rc; a read still held when it returned: $holding; held: $held"
	expect_eq "$rc" 0 "pool destroy's exit status" || return
	expect_eq "$holding" 0 "reads still in their access section when the destroy returned" || return
	expect_eq "$held" 1 "reads held" || return
	cmp /tmp/hold.want /tmp/hold.got || fail "the held read got the wrong bytes"
}

# The loop needs no RDMA device: with rxe0 gone, faults, prefetch and
# eviction of pool 2 still go through lo, every byte checked.
test_loop_without_an_rdma_device() {
	local fault=$SELFTESTS/rpage_fault
	rdma link delete rxe0 || fail "rdma link delete" || return
	[ -z "$(rpage_devices)" ] || fail "devices listed with rxe0 gone" || return
	"$fault" touch lo 2 8M --seed 7 --expect-faults 2048 ||
		fail "faults over lo with no RDMA device" || return
	"$fault" prefetch lo 2 8M --wait --seed 7 || fail "prefetch over lo" || return
	"$PATTERN" write lo 2 0 1M --seed 0 || return
	"$fault" evict lo 2 0 1M --seed 13 || fail "evict over lo" || return
	"$PATTERN" read lo 2 0 1M --seed 13 || fail "evicted pages over lo" || return
	"$PATTERN" write lo 2 0 1M --seed 7 || return
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add" || return
	wait_until 60 peer_is self connected || fail "self not back" || return
	wait_until 30 remote_pool_listed self 2 || fail "pool 2 not announced again" || return
	"$PATTERN" read self 2 0 8M --seed 7
}

test_loop_write_to_a_read_only_pool() {
	if "$RPAGECTL" write lo 1 0 4K file /dev/zero 2> /tmp/err; then
		fail "wrote a read-only pool over lo"
		return
	fi
	cat /tmp/err
}

# The TCP transport over the guest's own loopback interface: peer "tcp"
# at 127.0.0.1, which has no RDMA device, so that the automatic choice
# is TCP for the peer and the endpoint both, beside "self" over RDMA.
TCP_ADDR=127.0.0.1

test_tcp_peer_add() {
	"$RPAGECTL" endpoint add "$TCP_ADDR" || fail "endpoint add $TCP_ADDR" || return
	"$RPAGECTL" endpoint show
	"$RPAGECTL" -j endpoint show |
		jq -e --arg a "$TCP_ADDR" --arg s "$SELF" \
			'any(.[]; .addr == $a and .transport == "tcp") and any(.[]; .addr == $s and .transport == "rdma,tcp")' > /dev/null ||
		fail "endpoints: $TCP_ADDR not over tcp alone, or $SELF not over both" || return
	"$RPAGECTL" peer add tcp addr "$TCP_ADDR" || fail "peer add tcp addr $TCP_ADDR" || return
	wait_until 30 peer_is tcp connected || { "$RPAGECTL" peer show tcp; fail "tcp not connected"; return; }
	"$RPAGECTL" peer show tcp
	"$RPAGECTL" -j peer show tcp |
		jq -e '.[0].transport == "tcp" and .[0].qps == 2 and .[0].qps_connected == 2 and .[0].qps_inbound == 2 and .[0].cause == "every TCP connection up, pool table received"' > /dev/null ||
		fail "peer show tcp: not a connected TCP peer with 2 connections each way" || return
	wait_until 30 remote_pool_listed tcp 1 || fail "pool 1 not listed through tcp" || return
	wait_until 30 remote_pool_listed tcp 2 || fail "pool 2 not listed through tcp"
}

test_tcp_and_rdma_read_each_others_writes() {
	"$PATTERN" write self 2 0 8M --seed 21 || return
	"$PATTERN" read tcp 2 0 8M --seed 21 || fail "tcp read what self wrote wrong" || return
	"$PATTERN" write tcp 2 0 8M --seed 22 --batch 1 || return
	"$PATTERN" read self 2 0 8M --seed 22 || fail "self read what tcp wrote wrong" || return
	"$PATTERN" read tcp 2 4K 4M --seed 22 --batch 1 || return
	"$RPAGECTL" read tcp 1 0 64M file /tmp/p1 || fail "rpagectl read over tcp" || return
	head -c 64M /dev/zero | cmp - /tmp/p1 || fail "pool 1 over tcp is not all zeros" || return
	rm -f /tmp/p1
	"$PATTERN" write tcp 2 0 8M --seed 7 || return
	"$PATTERN" read self 2 0 8M --seed 7
}

test_tcp_write_to_a_read_only_pool() {
	if "$RPAGECTL" write tcp 1 0 4K file /dev/zero 2> /tmp/err; then
		fail "wrote a read-only pool over tcp"
		return
	fi
	cat /tmp/err
	grep -q "read-only" /tmp/err || fail "not refused as read-only"
}

# A second address of the guest, for an endpoint added with no RDMA
# device.
TCP_LATE_ADDR=192.0.2.13

endpoint_transport_is() {
	"$RPAGECTL" -j endpoint show |
		jq -e --arg a "$1" --arg t "$2" 'any(.[]; .addr == $a and .transport == $t)'
}

# TCP needs no RDMA device: with rxe0 gone, faults, prefetch and
# eviction of pool 2 go through tcp, every byte checked. An automatic
# endpoint added meanwhile listens over TCP, and takes up RDMA too when
# rxe0 comes back.
test_tcp_without_an_rdma_device() {
	local fault=$SELFTESTS/rpage_fault
	rdma link delete rxe0 || fail "rdma link delete" || return
	ip addr add "$TCP_LATE_ADDR/24" dev eth0 || return
	"$RPAGECTL" endpoint add "$TCP_LATE_ADDR" || fail "endpoint add $TCP_LATE_ADDR" || return
	endpoint_transport_is "$TCP_LATE_ADDR" tcp > /dev/null ||
		fail "endpoint $TCP_LATE_ADDR not over tcp alone with no RDMA device" || return
	"$fault" touch tcp 2 8M --seed 7 --expect-faults 2048 ||
		fail "faults over tcp with no RDMA device" || return
	"$fault" touch tcp 2 8M --threads 4 --order random --seed 7 ||
		fail "faults from 4 threads over tcp" || return
	"$fault" prefetch tcp 2 8M --wait --seed 7 || fail "prefetch over tcp" || return
	"$PATTERN" write tcp 2 0 1M --seed 0 || return
	"$fault" evict tcp 2 0 1M --seed 13 || fail "evict over tcp" || return
	"$PATTERN" read tcp 2 0 1M --seed 13 || fail "evicted pages over tcp" || return
	"$PATTERN" write tcp 2 0 1M --seed 7 || return
	"$RPAGECTL" peer show tcp
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add" || return
	wait_until 30 endpoint_transport_is "$TCP_LATE_ADDR" rdma,tcp || {
		"$RPAGECTL" endpoint show
		fail "endpoint $TCP_LATE_ADDR did not take up RDMA when rxe0 came"
		return
	}
	# The endpoints take up the device in the order they were added, as
	# when they were added: $SELF's listens over RDMA again, and the
	# loopback one (which binds to a device's port too, the same port)
	# stays on TCP, as it began; not whichever worker ran first (on the
	# debug kernel the loopback one once won, and $SELF's and
	# $TCP_LATE_ADDR's stayed without RDMA).
	wait_until 30 endpoint_transport_is "$SELF" rdma,tcp || {
		"$RPAGECTL" endpoint show
		fail "endpoint $SELF, added first, did not listen over RDMA again"
		return
	}
	endpoint_transport_is "$TCP_ADDR" tcp > /dev/null || {
		"$RPAGECTL" endpoint show
		fail "endpoint $TCP_ADDR, added after $SELF, took rxe0's port from it"
		return
	}
	"$RPAGECTL" endpoint show
	"$RPAGECTL" endpoint del "$TCP_LATE_ADDR" || fail "endpoint del $TCP_LATE_ADDR" || return
	ip addr del "$TCP_LATE_ADDR/24" dev eth0
	wait_until 60 peer_is self connected || fail "self not back" || return
	wait_until 30 remote_pool_listed self 2 || fail "pool 2 not announced again" || return
	"$PATTERN" read self 2 0 8M --seed 7
}

# A hostile reader over TCP (selftests/rpage_rogue_tcp), from 127.0.0.2:
# the peer "rogue" here. With no keys on TCP, the exporter's checks are
# all that keeps a reader inside its pools: every request out of bounds
# or out of rule is refused and counted, no byte outside a pool comes
# back, a refused write lands nowhere, a frame that cannot be followed
# ends the connection, bad hellos are refused with their reason, and the
# good peer "tcp" is served all along.
test_tcp_rogue_reader() {
	local out=/tmp/rogue-tcp.out rc want
	"$RPAGECTL" peer add rogue addr 127.0.0.2 transport tcp || return
	"$SELFTESTS/rpage_rogue_tcp" --from 127.0.0.2 --to "$TCP_ADDR" --pool 1 > "$out" 2>&1
	rc=$?
	cat "$out"
	"$RPAGECTL" peer show rogue
	"$RPAGECTL" endpoint show
	expect_eq "$rc" 0 "the rogue's cases went as they should" || return
	want=$(sed -n 's/^refused //p' "$out")
	expect_eq "$(peer_field rogue refused_msgs)" "$want" "requests counted as refused" || return
	"$RPAGECTL" peer del rogue || return
	"$PATTERN" read tcp 2 0 8M --seed 7 || fail "tcp read wrong after the rogue"
}

# TCP over IPv6: an endpoint on ::1 and the peer "tcp6" at ::1, both
# chosen TCP automatically (lo has no RDMA device), reading and writing
# pool 2 beside "self", every byte checked.
test_tcp_over_ipv6() {
	ip -6 addr show dev lo | grep -q "inet6 ::1/" ||
		skip "no IPv6 address on lo" || return
	"$RPAGECTL" endpoint add ::1 || fail "endpoint add ::1" || return
	"$RPAGECTL" endpoint show
	"$RPAGECTL" -j endpoint show |
		jq -e 'any(.[]; .addr == "::1" and .transport == "tcp")' > /dev/null ||
		fail "endpoint ::1 not listening over tcp alone" || return
	"$RPAGECTL" peer add tcp6 addr ::1 || fail "peer add tcp6 addr ::1" || return
	wait_until 30 peer_is tcp6 connected || { "$RPAGECTL" peer show tcp6; fail "tcp6 not connected"; return; }
	"$RPAGECTL" peer show tcp6
	"$RPAGECTL" -j peer show tcp6 |
		jq -e '.[0].transport == "tcp" and .[0].addr == "::1"' > /dev/null ||
		fail "peer show tcp6: not a TCP peer at ::1" || return
	wait_until 30 remote_pool_listed tcp6 2 || fail "pool 2 not listed through tcp6" || return
	"$PATTERN" read tcp6 2 0 8M --seed 7 || fail "tcp6 read pool 2 wrong" || return
	"$PATTERN" write tcp6 2 0 1M --seed 23 || return
	"$PATTERN" read self 2 0 1M --seed 23 || fail "self read what tcp6 wrote wrong" || return
	"$PATTERN" write self 2 0 1M --seed 7 || return
	"$RPAGECTL" peer del tcp6 || fail "peer del tcp6" || return
	"$RPAGECTL" endpoint del ::1 || fail "endpoint del ::1"
}

# tcp_small_buffers: TCP send buffers of 64 KiB at most, and the peer
# "tcp" connected again so that its sockets have them (the caller puts
# net.ipv4.tcp_wmem back).
tcp_small_buffers() {
	sysctl -q -w net.ipv4.tcp_wmem="4096 16384 65536" || return
	"$RPAGECTL" peer del tcp && "$RPAGECTL" peer add tcp addr "$TCP_ADDR" &&
		wait_until 30 peer_is tcp connected &&
		wait_until 30 remote_pool_listed tcp 2
}

# A thread whose write-back waits for room on a slow TCP link (small
# send buffers, lo limited to 20 Mbit/s) gets a signal every 200 us, as
# a VMM's threads get them: each is handled, the sends go on, and the
# connection stays up (no reconnect), every page written back.
test_tcp_signals_during_blocked_sends() {
	local wmem out rc before
	modprobe sch_netem || skip "no sch_netem" || return
	wmem=$(sysctl -n net.ipv4.tcp_wmem) || return
	"$PATTERN" write self 2 0 4M --seed 0 || return
	tcp_small_buffers &&
		before=$(peer_field tcp reconnects) &&
		tc qdisc add dev lo root netem rate 20mbit
	rc=$?
	if [ "$rc" -eq 0 ]; then
		"$SELFTESTS/rpage_fault" evict tcp 2 0 4M --seed 31 --signal-us 200 > /tmp/sig.out 2>&1
		rc=$?
	fi
	tc qdisc del dev lo root 2> /dev/null
	sysctl -q -w net.ipv4.tcp_wmem="$wmem"
	cat /tmp/sig.out
	"$RPAGECTL" peer show tcp
	expect_eq "$rc" 0 "evict over a slow link with signals coming" || return
	grep -q "first_error=none tries=1 signals=[1-9]" /tmp/sig.out ||
		fail "not one evict that took signals" || return
	expect_eq "$(peer_field tcp reconnects)" "$before" "reconnects of tcp" || return
	"$PATTERN" read self 2 0 4M --seed 31 || fail "pool 2 after the evict" || return
	"$PATTERN" write self 2 0 8M --seed 7
}

# A fault whose request waits behind a write-back stuck in a full socket
# (small send buffers, lo dropping everything) holds up nothing else of
# its process, as over RDMA: mmap, munmap, an anonymous fault and
# /proc/PID/cmdline stay prompt (under 100 ms) and kill -9 ends it
# within a second. Then the link is back, the write-back goes through.
# The local RDMA peer's traffic goes over lo too: "self" reconnects.
test_tcp_fault_behind_a_full_socket() {
	local fault=$SELFTESTS/rpage_fault wmem spid epid rc=0 erc
	modprobe sch_netem || skip "no sch_netem" || return
	"$PATTERN" write self 2 0 8M --seed 0 || return
	wmem=$(sysctl -n net.ipv4.tcp_wmem) || return
	tcp_small_buffers || { sysctl -q -w net.ipv4.tcp_wmem="$wmem"; return 1; }
	rm -f /tmp/fs.*
	"$fault" stall tcp 2 4M --fetched-ready /tmp/fs.fetched --go /tmp/fs.go \
		--ready /tmp/fs.ready > /tmp/fs.stall 2>&1 &
	spid=$!
	"$fault" evict tcp 2 4M 4M --seed 35 --ready /tmp/fs.eready --go /tmp/fs.ego \
		--timeout-ms 120000 > /tmp/fs.evict 2>&1 &
	epid=$!
	wait_until 60 test -e /tmp/fs.fetched && wait_until 60 test -e /tmp/fs.eready || rc=1
	if [ "$rc" -eq 0 ]; then
		tc qdisc add dev lo root netem loss 100% || rc=1
		# The write-back fills the socket, then waits for room.
		touch /tmp/fs.ego
		sleep 1
		touch /tmp/fs.go
		wait_until 60 test -e /tmp/fs.ready || { echo "FAIL: the stall tool never measured"; rc=1; }
	fi
	grep '^stall ' /tmp/fs.stall
	stall_held_up_nothing /tmp/fs.stall "$spid" || rc=1
	tc qdisc del dev lo root 2> /dev/null
	wait "$epid"
	erc=$?
	sysctl -q -w net.ipv4.tcp_wmem="$wmem"
	cat /tmp/fs.stall /tmp/fs.evict
	[ "$rc" -eq 0 ] || return 1
	expect_eq "$erc" 0 "the write-back once the link is back" || return
	wait_until 60 peer_is self connected || fail "self not back" || return
	wait_until 60 peer_is tcp connected || fail "tcp not back" || return
	"$PATTERN" read self 2 4M 4M --seed 35 || fail "pool 2 after the evict" || return
	"$PATTERN" write self 2 0 8M --seed 7
}

# A task killed with part of its frame in the socket leaves the rest of
# that frame missing from the stream: the connection must end
# (-ECONNABORTED, logged as "sending a request (-103)") rather than go on
# with the exporter taking the next frame's bytes for this one's pages.
# Small send buffers and lo at 20 Mbit/s keep the write-back's frames
# half in the socket; the evict is killed 300 ms into it (up to 5 tries
# until a kill lands halfway). Then the peer is back, the pool's other
# half is intact, and what goes over the new connection is every byte
# right.
test_tcp_killed_halfway_through_a_frame() {
	local fault=$SELFTESTS/rpage_fault wmem pid mark before try hit=0 rc=0
	modprobe sch_netem || skip "no sch_netem" || return
	"$PATTERN" write self 2 0 8M --seed 0 || return
	wmem=$(sysctl -n net.ipv4.tcp_wmem) || return
	tcp_small_buffers || { sysctl -q -w net.ipv4.tcp_wmem="$wmem"; return 1; }
	before=$(peer_field tcp reconnects)
	mark=$(dmesg_mark)
	for try in 1 2 3 4 5; do
		wait_until 60 peer_is tcp connected || { rc=1; break; }
		rm -f /tmp/kh.ready /tmp/kh.go
		"$fault" evict tcp 2 0 4M --seed 41 --ready /tmp/kh.ready \
			--go /tmp/kh.go > /tmp/kh.out 2>&1 &
		pid=$!
		if ! wait_until 60 test -e /tmp/kh.ready ||
		   ! tc qdisc add dev lo root netem rate 20mbit; then
			kill -9 "$pid"
			wait "$pid"
			rc=1
			break
		fi
		touch /tmp/kh.go
		sleep 0.3
		kill -9 "$pid"
		wait "$pid" 2> /dev/null
		tc qdisc del dev lo root
		if dmesg_since "$mark" | grep -q "TCP connection [0-9]*: sending a request (-103)"; then
			hit=1
			break
		fi
	done
	sysctl -q -w net.ipv4.tcp_wmem="$wmem"
	echo "killed halfway through a frame on try $try"
	dmesg_since "$mark" | grep "peer tcp:" | head -n 5
	[ "$rc" -eq 0 ] || fail "the evict to kill did not start" || return
	[ "$hit" -eq 1 ] || fail "no kill landed halfway through a frame in 5 tries" || return
	wait_until 60 peer_is tcp connected || fail "tcp not back" || return
	[ "$(peer_field tcp reconnects)" -gt "$before" ] || fail "tcp never reconnected" || return
	"$PATTERN" read tcp 2 4M 4M --seed 0 || fail "the half of pool 2 no frame went to" || return
	"$PATTERN" write tcp 2 0 8M --seed 43 || fail "writing pool 2 over the new connection" || return
	"$PATTERN" read self 2 0 8M --seed 43 || fail "pool 2 as written over the new connection" || return
	"$PATTERN" write self 2 0 8M --seed 7
}

# disagg_run CG MAX OUT ARGS...: runs rpage_fault ARGS in a new memory
# cgroup CG limited to MAX MiB, its output in OUT (and shown), then sets
# rc (its exit status), peak (memory.peak) and events (memory.events on
# one line), shows them and the cgroup's file pages, and removes CG.
# False only if the cgroup could not be made.
disagg_run() {
	local cg=$1 max=$2 out=$3
	shift 3
	mkdir -p "$cg" && echo "${max}M" > "$cg/memory.max" || return
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" "$FAULT" "$@" \
		> "$out" 2>&1
	rc=$?
	cat "$out"
	peak=$(cat "$cg/memory.peak")
	events=$(tr '\n' ' ' < "$cg/memory.events")
	echo "exit $rc, memory.peak $peak, memory.events: $events"
	grep -E "^(file|file_dirty|file_writeback) " "$cg/memory.stat" | tr '\n' ' '
	echo
	rmdir "$cg"
}

# disagg_bounded OUT PEAK EVENTS SIZE MAX: a cgroup limited to MAX MiB
# that swept SIZE MiB of a mapping more than once (rpage_fault's result
# line in OUT) stayed within its limit (memory.peak PEAK), never
# OOM-killed (memory.events EVENTS), and the passes after the first found
# at most the last MAX MiB still here: the rest was read again.
disagg_bounded() {
	local out=$1 peak=$2 events=$3 size=$4 max=$5 pages refetched
	[ "$peak" -le $(( max << 20 )) ] || fail "memory.peak $peak above ${max} MiB" || return
	echo "$events" | grep -qE "oom_kill 0( |$)" || fail "the cgroup's OOM killer ran" || return
	pages=$(( size << 8 ))
	refetched=$(sed -n 's/.* refetched=\([0-9]*\) .*/\1/p' "$out")
	[ "${refetched:-0}" -ge $(( pages - (max << 8) )) ] ||
		fail "${refetched:-no} pages refetched, want at least $(( pages - (max << 8) ))"
}

# disagg_loop_read CG OUT SEED TOUCH-ARGS...: pool 3 of the loop peer,
# SIZE MiB (writable) with SEED's pattern, read twice by rpage_fault
# touch with TOUCH-ARGS in a new memory cgroup CG limited to MAX MiB
# (SIZE and MAX the caller's); disagg_run's results in OUT, rc, peak and
# events, and judged by disagg_bounded (with REFETCHED=0 in the caller,
# without its count of pages read again). The pool goes after.
disagg_loop_read() {
	local cg=$1 out=$2 seed=$3
	shift 3
	memcg_up || fail "no memory cgroup" || return
	"$RPAGECTL" pool create 3 size "${size}M" writable || fail "pool create 3" || return
	wait_until 30 remote_pool_listed lo 3 || fail "pool 3 not listed through lo" || return
	"$PATTERN" write lo 3 0 "${size}M" --seed "$seed" || fail "fill pool 3" || return
	disagg_run "$cg" "$max" "$out" touch lo 3 "${size}M" --threads 1 --passes 2 \
		--seed "$seed" "$@" || return
	"$RPAGECTL" pool destroy 3 || fail "pool destroy 3" || return
	expect_eq "$rc" 0 "the touch, twice, in ${max} MiB" || return
	if [ "${REFETCHED:-1}" = 0 ]; then
		[ "$peak" -le $(( max << 20 )) ] || fail "memory.peak $peak above ${max} MiB" || return
		echo "$events" | grep -qE "oom_kill 0( |$)" || fail "the cgroup's OOM killer ran"
		return
	fi
	disagg_bounded "$out" "$peak" "$events" "$size" "$max"
}

# Remote memory larger than the memory a process may have: a process in a
# memory cgroup limited to 32 MiB reads all of a 256 MiB mapping of the
# loop peer twice, in random order, every byte checked. Reclaim drops the
# clean pages it read before (they are the cgroup's page cache) and the
# second pass reads them again: the cgroup stays within its limit, its
# OOM killer never runs, and the refetches are counted. Half of each on
# the debug kernel, whose faults take about 30 times as long.
test_loop_mapping_bounded_by_its_memory_cgroup() {
	local size=256 max=32 peak events rc
	if [ "$RPAGE_SLOW" -gt 1 ]; then
		size=128
		max=16
	fi
	disagg_loop_read /sys/fs/cgroup/rpage-disagg /tmp/disagg.out 21 --order random
}

# The same with 2 MiB pages (pagesize 2M), read in order, a region at a
# time: each first touch of a region reads it whole into one 2 MiB folio
# charged to the cgroup, and reclaim drops such folios whole; the cgroup
# stays within its limit, no OOM, every byte checked, every fault read a
# whole region, never 4 KiB, however full the cgroup, and the second pass
# read again every region that could not stay (at least SIZE - MAX MiB).
# (Its pages are not counted as refetched: the page cache's shadow of a
# 2 MiB folio reclaim dropped was not found by the faults; to be looked
# into.)
test_loop_huge_mapping_bounded_by_its_memory_cgroup() {
	local size=256 max=32 out=/tmp/disagg-h.out peak events rc faults huge REFETCHED=0
	if [ "$RPAGE_SLOW" -gt 1 ]; then
		size=128
		max=16
	fi
	disagg_loop_read /sys/fs/cgroup/rpage-disagg-h "$out" 22 --order seq --huge || return
	faults=$(sed -n 's/.* faults=\([0-9]*\) .*/\1/p' "$out")
	huge=$(sed -n 's/.* huge_faults=\([0-9]*\) huge_fallbacks=0.*/\1/p' "$out")
	[ -n "$huge" ] && [ "$huge" = "$faults" ] &&
		[ "$huge" -ge $(( size / 2 + (size - max) / 2 )) ] ||
		fail "faults $faults, 2 MiB ones ${huge:-? (or fallbacks)}: want every one 2 MiB, at least $(( size / 2 + (size - max) / 2 ))"
}

# The writes half: a process in the same 32 MiB cgroup writes every page
# of a 256 MiB mapping of another process's memory (a process pool,
# writable) once, in random order, then reads it all back twice over.
# Its dirty pages cannot stay: the flusher writes them back to the pool
# (cgroup writeback holds the cgroup's dirty pages to its share) and
# reclaim drops them, so the second pass reads most of them again from
# the pool, where every write must be. Then another process reads the
# pool through the loop peer, and the exporting process checks its own
# memory: every byte written, nothing else changed.
test_loop_writes_survive_reclaim_in_a_memory_cgroup() {
	local cg=/sys/fs/cgroup/rpage-disagg-w size=256 max=32 out=/tmp/disagg-w.out
	local exp=/tmp/disagg-w.export pid peak events rc
	if [ "$RPAGE_SLOW" -gt 1 ]; then
		size=128
		max=16
	fi
	memcg_up || fail "no memory cgroup" || return
	rm -f /tmp/disagg-w.ready /tmp/disagg-w.until
	"$PATTERN" export 13 "${size}M" --writable --ready /tmp/disagg-w.ready \
		--until /tmp/disagg-w.until --expect 23 0 "${size}M" > "$exp" 2>&1 &
	pid=$!
	wait_until 60 test -e /tmp/disagg-w.ready || { kill "$pid"; fail "exporter not ready"; return; }
	wait_until 30 remote_pool_listed lo 13 || { kill "$pid"; fail "pool 13 not listed through lo"; return; }
	disagg_run "$cg" "$max" "$out" touch lo 13 "${size}M" --threads 1 --order random \
		--passes 3 --write-seed 23 || { kill "$pid"; return 1; }
	"$PATTERN" read lo 13 0 "${size}M" --seed 23
	local read_rc=$?
	touch /tmp/disagg-w.until
	wait "$pid"
	local exp_rc=$?
	cat "$exp"
	expect_eq "$rc" 0 "the writes and two reads back, in ${max} MiB" || return
	expect_eq "$read_rc" 0 "another process reads the writes from the pool" || return
	expect_eq "$exp_rc" 0 "the exporting process finds them in its memory" || return
	disagg_bounded "$out" "$peak" "$events" "$size" "$max"
}

test_tcp_peer_del() {
	"$RPAGECTL" peer del tcp || fail "peer del tcp" || return
	"$RPAGECTL" -j peer show | jq -e 'all(.[]; .name != "tcp")' > /dev/null ||
		fail "tcp still listed"
}

test_loop_peer_del() {
	"$RPAGECTL" peer del lo || fail "peer del lo" || return
	"$RPAGECTL" -j peer show | jq -e 'all(.[]; .name != "lo")' > /dev/null ||
		fail "lo still listed"
}

test_unload_with_pools() {
	# A loop peer and a TCP peer too, connected, with the pools in
	# their tables.
	loop_peer_add lo 2 || return
	"$RPAGECTL" peer add tcp addr "$TCP_ADDR" transport tcp || return
	wait_until 30 remote_pool_listed tcp 2 || fail "pool 2 not listed through tcp" || return
	rpage_unload || fail "rmmod with pools, a connected peer, a loop peer and a TCP peer" || return
	expect_eq "$(rdma resource show rxe0 | sed 's/^[0-9]*: rxe0: //')" "$RXE_BARE" "rxe0 resources after unload"
}

rxe_up
RXE_BARE=$(rdma resource show rxe0 | sed 's/^[0-9]*: rxe0: //')

tap_begin pool-single
# A pool scoped to no peer is announced to none ("self" is told of pool
# 8, created after it, and not of it), nor registered for any; let in,
# "self" is told of it and reads and writes it over RDMA, in its own
# protection domain; taken out, it is withdrawn before `pool set`
# returns (the reader acknowledged it: well within io_timeout_ms) and
# reads of it fail; let in again, its bytes are as they were written.
test_pool_scoped_over_rdma() {
	local t0 took
	"$RPAGECTL" pool create 7 size 4M writable peers none || fail "create 7" || return
	"$RPAGECTL" pool create 8 size 1M || fail "create 8" || return
	wait_until 30 remote_pool_listed self 8 || fail "pool 8 not listed" || return
	"$RPAGECTL" pool show
	"$RPAGECTL" -j pool show | jq -e '.[] | select(.id == 7) |
		.peers == [] and (.flags | index("scoped"))' > /dev/null ||
		fail "pool show: 7 not shown scoped to none"
	! remote_pool_listed self 7 || fail "scoped to none, yet announced" || return
	"$RPAGECTL" pool set 7 peers self || fail "pool set 7 peers self" || return
	wait_until 30 remote_pool_listed self 7 || fail "let in, not listed" || return
	"$RPAGECTL" -j pool show | jq -e '.[] | select(.id == 7) | .peers == ["self"]' \
		> /dev/null || fail "pool show: 7 not scoped to self"
	"$PATTERN" write self 7 0 4M --seed 3 || fail "write 7" || return
	"$PATTERN" read self 7 0 4M --seed 3 || fail "read 7" || return
	t0=${EPOCHREALTIME/./}
	"$RPAGECTL" pool set 7 peers none || fail "pool set 7 peers none" || return
	took=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
	echo "taken out in $took ms"
	[ "$took" -lt $((2500 * RPAGE_SLOW)) ] ||
		fail "the withdrawal was not acknowledged: $took ms" || return
	! remote_pool_listed self 7 || fail "taken out, still listed" || return
	"$RPAGECTL" read self 7 0 4K file /tmp/scoped 2> /dev/null &&
		fail "read of a pool taken out succeeded"
	"$RPAGECTL" pool set 7 peers all || fail "pool set 7 peers all" || return
	wait_until 30 remote_pool_listed self 7 || fail "let in again, not listed" || return
	"$PATTERN" read self 7 0 4M --seed 3 || fail "bytes of 7 changed"
	"$RPAGECTL" pool destroy 7 && "$RPAGECTL" pool destroy 8
}

run_test pools_created_and_announced test_setup
run_test kernel_pool_reads_as_zeros test_kernel_pool_reads_zeros
run_test rpagectl_write_then_read_back test_rpagectl_write_read_back
run_test librpage_vectors_carry_the_pattern test_librpage_vectors_pattern
run_test stats_count_reads_with_a_latency_histogram test_stats_count_reads
run_test process_export_read_and_written test_user_pool_export
run_test killed_exporter_takes_its_pool_along test_exporter_killed
run_test pool_scoped_over_rdma test_pool_scoped_over_rdma
run_test file_pool_follows_its_file_over_rdma file_pool_follows_its_file self
tap_end

RPAGE_TEST_PEER=self run_kselftest pool "$SELFTESTS/rpage_pool_test"
RPAGE_TEST_PEER=self run_kselftest map "$SELFTESTS/rpage_map_test"

tap_begin loop-single
run_test loop_peer_added_listed_as_such test_loop_peer_add
run_test loop_and_rdma_read_each_others_writes test_loop_and_rdma_read_each_others_writes
run_test loop_write_to_a_read_only_pool_refused test_loop_write_to_a_read_only_pool
run_test loop_destroy_waits_for_a_copy_in_its_access_section test_loop_destroy_waits_for_a_copy
run_test loop_faults_prefetch_evict_without_an_rdma_device test_loop_without_an_rdma_device
run_test loop_mapping_bounded_by_its_memory_cgroup test_loop_mapping_bounded_by_its_memory_cgroup
run_test loop_writes_survive_reclaim_in_a_memory_cgroup test_loop_writes_survive_reclaim_in_a_memory_cgroup
run_test loop_huge_mapping_bounded_by_its_memory_cgroup test_loop_huge_mapping_bounded_by_its_memory_cgroup
tap_end

RPAGE_TEST_PEER=lo run_kselftest map-loop "$SELFTESTS/rpage_map_test"

tap_begin loop-single-end
run_test loop_peer_deleted test_loop_peer_del
tap_end

tap_begin tcp-single
run_test tcp_peer_and_endpoint_chosen_automatically test_tcp_peer_add
run_test tcp_and_rdma_read_each_others_writes test_tcp_and_rdma_read_each_others_writes
run_test tcp_write_to_a_read_only_pool_refused test_tcp_write_to_a_read_only_pool
run_test tcp_faults_prefetch_evict_without_an_rdma_device test_tcp_without_an_rdma_device
run_test tcp_rogue_reader_refused_and_counted test_tcp_rogue_reader
run_test tcp_over_ipv6 test_tcp_over_ipv6
run_test tcp_signals_during_blocked_sends test_tcp_signals_during_blocked_sends
run_test tcp_fault_behind_a_full_socket_holds_up_nothing test_tcp_fault_behind_a_full_socket
run_test tcp_killed_halfway_through_a_frame test_tcp_killed_halfway_through_a_frame
tap_end

RPAGE_TEST_PEER=tcp run_kselftest map-tcp "$SELFTESTS/rpage_map_test"

tap_begin tcp-single-end
run_test tcp_peer_deleted test_tcp_peer_del
tap_end

tap_begin fault-single
run_test tracepoints_see_the_fault_path test_tracepoints_see_faults
run_test tracepoint_results_are_the_uapi_numbers test_tracepoint_results_are_the_uapi_numbers
run_test adjacent_pages_share_one_read test_adjacent_pages_share_a_read
run_test ranges_of_a_call_in_flight_together test_ranges_of_a_call_in_flight_together
run_test adjacent_ranges_share_a_read test_adjacent_ranges_share_a_read
run_test bpftrace_fault_latency_per_mapping test_bpftrace_fault_latency
run_test bpftrace_sigbus_lines test_bpftrace_sigbus
tap_end

tap_begin pool-teardown
run_test pool_destroyed_while_being_read test_destroy_while_reading
run_test peer_deleted_while_reads_in_flight test_peer_del_during_reads
run_test reads_fail_cleanly_once_peer_deleted test_reads_fail_cleanly_when_peer_deleted
run_test unload_with_pools_and_peer test_unload_with_pools
tap_end
