# SPDX-License-Identifier: GPL-2.0
#
# The ioctl fuzzer, in one guest: selftests/rpage_ioctl_fuzz throws
# 60,000 seeded calls at /dev/rpage from 4 threads (random command
# numbers, valid commands with random or mangled arguments, bad
# pointers) while their pools, exports and mappings of the peer "self"
# (this host, over rxe loopback), named mappings included, race to be
# created and destroyed.
# Afterwards the host must still serve its own pools, nothing the
# fuzzer made may be left, rpage.ko must unload and rxe0 must hold what
# it held before rpage.ko came. The kernel log is the harness's to
# judge (the guest runs with slub_debug), but for freed memory printed
# as a string, which SLUB does not report. Sourced by hostile.sh;
# RPAGE_FUZZ_SEED, RPAGE_FUZZ_CALLS and RPAGE_FUZZ_MAX_S change the run.
. "$RPAGE_REPO/selftests/guest/lib.sh"

FUZZ_TOOL=$SELFTESTS/rpage_ioctl_fuzz
FUZZ_PATTERN=$SELFTESTS/rpage_pattern
# A seed of each kernel's own (13 plus a hash of its release): a run of
# the suite fuzzes each kernel with other calls than the others, rather
# than the same calls on each, in the same time. The log says the seed,
# which RPAGE_FUZZ_SEED sets again.
FUZZ_SEED=${RPAGE_FUZZ_SEED:-$(( 13 + $(uname -r | cksum | cut -d' ' -f1) % 10000 ))}
FUZZ_CALLS=${RPAGE_FUZZ_CALLS:-60000}
FUZZ_LOOP_CALLS=${RPAGE_FUZZ_LOOP_CALLS:-30000}
# 100,000 calls take about 110 s on Debian's kernels here; KASAN and
# lockdep slow each one down: the debug tier's kernel made 92,000 in
# 480 s.
FUZZ_MAX_S=${RPAGE_FUZZ_MAX_S:-$((RPAGE_SLOW > 1 ? 960 : 480))}
FUZZ_LOG=$RPAGE_OUT/fuzz.log
# The kernel's log while the fuzzer runs: more than its ring buffer holds.
FUZZ_KMSG=$RPAGE_OUT/fuzz-kmsg.log

# pd, cq, qp, cm_id and mr counts of rxe0.
fuzz_rdma_resources() {
	rdma resource show rxe0 | sed 's/^[0-9]*: rxe0: //'
}

fuzz_remote_pools() {
	"$RPAGECTL" -j pool show remote | jq -c '[.[] | select(.peer == "self") | .id] | sort'
}

fuzz_remote_pools_are() {
	[ "$(fuzz_remote_pools)" = "$1" ]
}

fuzz_dmesg_tail() {
	echo "--- dmesg | tail -n 40"
	dmesg | tail -n 40
}

# Loss and I/O timeouts short enough that nothing the fuzzer does waits
# long; pools small, whatever the fuzzer asks for.
test_fuzz_setup() {
	modprobe ib_core && modprobe rdma_cm || return
	insmod "$RPAGE_KO" io_timeout_ms=3000 loss_timeout_ms=2000 \
		connect_timeout_ms=2000 max_pool_mb=16 || fail "insmod" || return
	"$RPAGECTL" endpoint add "$RPAGE_IP" || return
	"$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	# The test's own pools, which the fuzzer leaves alone: zeros, and
	# a pattern.
	"$RPAGECTL" pool create 1 size 1M || return
	"$RPAGECTL" pool create 2 size 1M writable || return
	wait_until 30 fuzz_remote_pools_are "[1,2]" ||
		fail "pools not announced: $(fuzz_remote_pools)" || return
	"$FUZZ_PATTERN" write self 2 0 1M --seed "$FUZZ_SEED"
}

# fuzz_run PEER SEED CALLS: the fuzzer against PEER's pools.
fuzz_run() {
	local rc calls start kmsg
	dmesg -w >> "$FUZZ_KMSG" 2>&1 &
	kmsg=$!
	start=$(date +%s)
	"$FUZZ_TOOL" -P "$1" -s "$2" -n "$3" -j 4 -T "$FUZZ_MAX_S" \
		> "$FUZZ_LOG" 2>&1
	rc=$?
	echo "fuzzer (peer $1, seed $2, $3 calls) exited $rc after $(( $(date +%s) - start )) s"
	sleep 1
	kill "$kmsg"
	wait "$kmsg" 2>/dev/null
	tail -n 60 "$FUZZ_LOG"
	if [ "$rc" -ne 0 ]; then
		fuzz_dmesg_tail
		fail "the fuzzer exited $rc (peer $1, seed $2)"
		return
	fi
	calls=$(sed -n 's/^summary: .* calls \([0-9]*\) .*/\1/p' "$FUZZ_LOG")
	[ "${calls:-0}" -ge "$3" ] ||
		fail "${calls:-no} calls in ${FUZZ_MAX_S} s, want $3"
}

test_fuzz_run() {
	fuzz_run self "$FUZZ_SEED" "$FUZZ_CALLS"
}

# Again with the loop peer "lo" as the fuzzer's peer: its copies race the
# fuzzer's pools being created and destroyed, its mappings and evictions.
# Then lo reads pool 2 right and goes.
test_fuzz_loop_run() {
	loop_peer_add lo 2 || return
	FUZZ_LOG=$RPAGE_OUT/fuzz-loop.log fuzz_run lo "$((FUZZ_SEED + 1))" "$FUZZ_LOOP_CALLS" ||
		return
	peer_is lo connected || fail "lo not connected after the fuzzer" || return
	"$FUZZ_PATTERN" read lo 2 0 1M --seed "$FUZZ_SEED" || fail "pool 2 over lo" || return
	"$RPAGECTL" peer del lo || fail "peer del lo"
}

# Slab poisoning (slub_debug=P) fills freed objects with 0x6b, 'k': a
# string rpage reads from freed memory prints as a run of k's. SLUB
# itself only notices writes to freed memory.
test_fuzz_no_freed_memory_printed() {
	local lines
	lines=$(grep -a 'kkkkkkkkkkkkkkkk' "$FUZZ_KMSG" | cut -c1-300 | cat -v)
	[ -z "$lines" ] || fail "the kernel printed freed memory:
$lines"
}

test_fuzz_host_still_serves() {
	peer_is self connected ||
		{ fuzz_dmesg_tail; fail "self not connected after the fuzzer"; return; }
	expect_eq "$(peer_field self loss_timeout_ms)" 2000 "self's loss timeout" ||
		return
	"$RPAGECTL" read self 1 0 1M file /tmp/fuzz-pool1 ||
		{ fuzz_dmesg_tail; fail "read of pool 1"; return; }
	head -c 1M /dev/zero | cmp - /tmp/fuzz-pool1 || fail "pool 1 is not all zeros" ||
		return
	rm -f /tmp/fuzz-pool1
	"$FUZZ_PATTERN" read self 2 0 1M --seed "$FUZZ_SEED" ||
		fail "pool 2 lost its pattern"
}

# Pools (kernel and exported), peers and endpoints as before the fuzzer,
# no named mapping; mappings and exports went with its files: no one
# holds /dev/rpage or a node of /dev/rpage-map open or mapped, so the
# module's count of users is 0.
test_fuzz_left_nothing() {
	local pools peers eps named maps
	pools=$("$RPAGECTL" -j pool show | jq -c '[.[].id] | sort')
	peers=$("$RPAGECTL" -j peer show | jq -c '[.[].name]')
	eps=$("$RPAGECTL" -j endpoint show | jq -c '[.[] | "\(.addr):\(.port)"]')
	named=$("$RPAGECTL" -j map show | jq -c '[.[].name]')
	echo "pools $pools, peers $peers, endpoints $eps, named mappings $named"
	expect_eq "$pools" "[1,2]" "pools" || return
	expect_eq "$peers" '["self"]' "peers" || return
	expect_eq "$eps" "[\"$RPAGE_IP:7471\"]" "endpoints" || return
	expect_eq "$named" "[]" "named mappings" || return
	[ -z "$(ls -A /dev/rpage-map 2>/dev/null)" ] ||
		fail "nodes left: $(ls /dev/rpage-map)" || return
	wait_until 30 fuzz_remote_pools_are "[1,2]" ||
		fail "pools self announces: $(fuzz_remote_pools)" || return
	maps=$(grep -l -e /dev/rpage -e rpage-map /proc/[0-9]*/maps 2>/dev/null)
	[ -z "$maps" ] || fail "/dev/rpage still mapped: $maps" || return
	expect_eq "$(cat /sys/module/rpage/refcnt)" 0 "rpage.ko's users"
}

test_fuzz_unload() {
	rpage_unload || { fuzz_dmesg_tail; fail "rmmod rpage"; return; }
	! rpage_loaded || fail "rpage.ko still loaded"
}

test_fuzz_rxe_clean() {
	expect_eq "$(fuzz_rdma_resources)" "$FUZZ_RXE_BARE" "rxe0 resources after unload"
}

FUZZ_RXE_BARE=$(fuzz_rdma_resources)
echo "# rxe0 without rpage: $FUZZ_RXE_BARE"

tap_begin fuzz
run_test module_loaded_and_self_connected test_fuzz_setup
run_test fuzzer_runs_clean test_fuzz_run
run_test fuzzer_runs_clean_over_the_loop test_fuzz_loop_run
run_test no_freed_memory_in_the_log test_fuzz_no_freed_memory_printed
run_test host_still_serves_its_pools test_fuzz_host_still_serves
run_test nothing_of_the_fuzzer_left test_fuzz_left_nothing
run_test module_unloads test_fuzz_unload
run_test rxe0_resources_as_without_rpage test_fuzz_rxe_clean
tap_end

# Whatever happened, the next part starts without rpage.ko.
rpage_loaded && rmmod rpage
