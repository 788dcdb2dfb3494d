# SPDX-License-Identifier: GPL-2.0
#
# A device that keeps work requests, in one guest: rxe is starved of CPU
# until rpage has given up on its work requests, flushed them, waited its
# grace period for the flush and found them still not given back
# (-EDEADLK inside the transfer). rpage must then leave the pages those
# requests point at to the device, fail the caller cleanly, and take the
# completions that arrive later without touching anything but what it
# kept for them. Sourced by hostile.sh, whose guest runs with slab
# debugging: a late completion that wrote into freed memory shows there.
#
# How rxe is starved: on kernels where it runs its work on its own
# unbound workqueue (rxe_wq, 6.12), unbound work is confined to CPU 1 and
# a SCHED_FIFO spinner takes CPU 1 whole for a few seconds (real-time
# throttling and the fair server off). This shell and what it starts run
# on CPU 0 meanwhile. On 6.1 rxe runs its work in tasklets and inline, and
# nothing short of stopping the CPU starves it: the tests skip.
. "$RPAGE_REPO/selftests/guest/lib.sh"

KEPT_SELF=$RPAGE_IP
KEPT_FAULT=$SELFTESTS/rpage_fault
# A stall must outlast io_timeout_ms and then the flush's grace period,
# which is io_timeout_ms again (at least 1 s, at most 30 s); but not
# rxe's own patience: destroying a queue pair waits 50 s for rxe's work
# to let go of it, then warns (rxe_pool.c). So at most 15 s on the debug
# tier.
KEPT_IO_TIMEOUT_MS=$((3000 * (RPAGE_SLOW < 5 ? RPAGE_SLOW : 5)))
# The flush's grace period at its longest (RPAGE_FLUSH_GRACE_MAX_MS), s.
KEPT_GRACE_MAX=30
# An io_timeout_ms past the hung task reports' 120 s.
KEPT_LONG_IO_MS=150000
KEPT_IO_PARAM=/sys/module/rpage/parameters/io_timeout_ms
KEPT_FAIR=/sys/kernel/debug/sched/fair_server/cpu1/runtime
KEPT_WQ_MASK=/sys/devices/virtual/workqueue/cpumask
KEPT_HOG=""

# ms_arg MS: MS milliseconds as seconds, for sleep(1) and timeout(1).
ms_arg() {
	printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
}

kept_errors() {
	"$RPAGECTL" -j stat peer self | jq '.peers[0].errors'
}

kept_leaks_logged() {
	dmesg | grep -c "peer self: [0-9]* work requests never completed; their pages are left to the device"
}

kept_leaks_logged_past() {
	[ "$(kept_leaks_logged)" -gt "$1" ]
}

# rxe_stall: rxe gets no CPU until rxe_unstall (or a minute at most).
rxe_stall() {
	sysctl -q kernel.sched_rt_runtime_us=-1 || return
	if [ -e "$KEPT_FAIR" ]; then
		echo 0 > "$KEPT_FAIR" || return
	fi
	taskset -pc 0 $$ > /dev/null || return
	echo 2 > "$KEPT_WQ_MASK" || return
	rm -f /tmp/kept-hog-ran
	touch /tmp/kept-hog
	# The spinner says when it runs on CPU 1: from then on, rxe is stuck.
	timeout $((60 * RPAGE_SLOW)) chrt -f 99 taskset -c 1 sh -c \
		'touch /tmp/kept-hog-ran; while [ -e /tmp/kept-hog ]; do :; done' &
	KEPT_HOG=$!
	until [ -e /tmp/kept-hog-ran ]; do
		sleep 0.05
	done
}

# rxe_unstall: ends the stall and undoes it.
rxe_unstall() {
	rm -f /tmp/kept-hog
	[ -n "$KEPT_HOG" ] && wait "$KEPT_HOG"
	KEPT_HOG=""
	echo "$KEPT_WQ_MASK_WAS" > "$KEPT_WQ_MASK"
	[ -e "$KEPT_FAIR" ] && echo "$KEPT_FAIR_WAS" > "$KEPT_FAIR"
	sysctl -q kernel.sched_rt_runtime_us="$KEPT_RT_WAS"
	taskset -pc 0-1 $$ > /dev/null
}

test_kept_setup() {
	grep -qw rxe_wq /proc/kallsyms ||
		skip "rxe runs its work in tasklets on $RPAGE_KVER: nothing can starve it" ||
		return
	[ "$(nproc)" -ge 2 ] || skip "needs two CPUs" || return
	KEPT_WQ_MASK_WAS=$(cat "$KEPT_WQ_MASK") || return
	KEPT_RT_WAS=$(sysctl -n kernel.sched_rt_runtime_us) || return
	KEPT_FAIR_WAS=""
	[ -e "$KEPT_FAIR" ] && KEPT_FAIR_WAS=$(cat "$KEPT_FAIR")
	modprobe ib_core && modprobe rdma_cm || return
	# One READ queue pair, so that two readers share it; no retries.
	insmod "$RPAGE_KO" qps_per_peer=2 io_timeout_ms=$KEPT_IO_TIMEOUT_MS \
		loss_timeout_ms=0 || fail "insmod" || return
	"$RPAGECTL" endpoint add "$KEPT_SELF" || return
	"$RPAGECTL" peer add self addr "$KEPT_SELF" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	"$RPAGECTL" pool create 1 size 8M writable || return
	wait_until 30 remote_pool_listed self 1 || fail "pool 1 not announced" || return
	"$SELFTESTS/rpage_pattern" write self 1 0 8M --seed 0
}

# Reader A's READ is kept by the device; reader B, on the same queue
# pair a while later, is still polling it when the device lets go, and
# reaps A's late completion as well as its own. Both fail; A's failed
# page is counted (only its late completion does that); afterwards the
# peer is back and every byte reads right. B flushes and starts its
# grace period as soon as A's timeout closes the queue pair: B, started
# with an io_timeout_ms three times A's, has the longer grace, and is
# still polling when A has given up.
test_kept_read_late_completion() {
	local io=$KEPT_IO_TIMEOUT_MS errors leaks a b rc_a rc_b
	errors=$(kept_errors) || return
	leaks=$(kept_leaks_logged)
	rxe_stall || return
	"$RPAGECTL" read self 1 0 4K file /tmp/kept-a > /tmp/kept-a.out 2>&1 &
	a=$!
	# B posts before A times out.
	sleep "$(ms_arg $((io / 2)))"
	echo $((io * 3 < KEPT_GRACE_MAX * 1000 ? io * 3 : KEPT_GRACE_MAX * 1000)) > "$KEPT_IO_PARAM" || return
	"$RPAGECTL" read self 1 64K 4K file /tmp/kept-b > /tmp/kept-b.out 2>&1 &
	b=$!
	wait "$a"
	rc_a=$?
	echo "$io" > "$KEPT_IO_PARAM"
	# A gave up on what the device kept: now the device lets go.
	rxe_unstall
	wait "$b"
	rc_b=$?
	cat /tmp/kept-a.out /tmp/kept-b.out
	[ "$rc_a" -ne 0 ] || fail "reader A succeeded with its READ never carried out" || return
	[ "$rc_b" -ne 0 ] || fail "reader B succeeded with its READ never carried out" || return
	grep -q "did not answer in time" /tmp/kept-a.out || fail "reader A: not the timeout" || return
	expect_eq "$(kept_leaks_logged)" "$((leaks + 1))" "transfers whose requests the device kept" || return
	# Counted by their completions: A's came after A had returned.
	expect_eq "$(kept_errors)" "$((errors + 2))" "failed pages counted" || return
	wait_until 60 peer_is self connected || fail "self not back" || return
	"$SELFTESTS/rpage_pattern" read self 1 0 8M --seed 0 || fail "pool 1 after the stall"
	rm -f /tmp/kept-a /tmp/kept-b /tmp/kept-a.out /tmp/kept-b.out
}

# A task killed while the device keeps its READ is gone at once, and
# leaves the queue pair that everyone else shares up: no reconnect, no
# flush. Its READ completes once the device lets go, reaped by the next
# reader of the queue pair, whose own reads are right.
test_kept_killed_reader_leaves_the_queue_pair() {
	local reconnects pid t0 took mark
	mark=$(dmesg_mark)
	reconnects=$(peer_field self reconnects)
	rxe_stall || return
	"$RPAGECTL" read self 1 0 64K file /tmp/kept-k > /dev/null 2>&1 &
	pid=$!
	# Its READ posted and kept.
	sleep 1
	t0=${EPOCHREALTIME/./}
	kill -9 "$pid"
	wait "$pid" 2> /dev/null
	took=$(ms_since "$t0")
	echo "kill -9 of a reader whose READ the device keeps: gone after $took ms"
	# Well past the killed task's grace before the device lets go.
	sleep 1
	rxe_unstall
	"$SELFTESTS/rpage_pattern" read self 1 0 8M --seed 0 || fail "pool 1 after the kill" || return
	"$RPAGECTL" peer show self
	dmesg_since "$mark" | grep "peer self"
	[ "$took" -lt 1000 ] || fail "kill -9 took $took ms" || return
	expect_eq "$(peer_field self reconnects)" "$reconnects" "reconnects of self" || return
	! dmesg_since "$mark" | grep -q "for a killed task" ||
		fail "the queue pair was flushed for the killed task"
	rm -f /tmp/kept-k
}

# An evict whose write-back the device keeps fails and drops nothing:
# tried again once the peer is back, it finds every page there and still
# dirty, writes them all, and the pool then holds them. The flusher must
# not write them back first: the evict would then have nothing to write,
# and the READ of the touch after it would meet the stall instead (with
# loss timeout 0, a SIGBUS). It did on the debug kernel: its periodic
# wakeup found the mappings' backing device over its background
# threshold, which is its share of the global one by how much it wrote
# lately - next to nothing. For the test, that device gets a fifth of the
# threshold for its own (min_ratio), and the flusher's age limit for a
# dirty page is an hour. (Not dirty_writeback_centisecs 0: the first
# page dirtied then wakes the flusher at once.)
test_kept_evict_all_or_nothing() {
	local rc expire bdi ratio
	bdi=$(echo /sys/class/bdi/rpage-map-*)
	[ -d "$bdi" ] || fail "no backing device of rpage's writable mappings: $bdi" || return
	ratio=$(cat "$bdi/min_ratio") || return
	expire=$(sysctl -n vm.dirty_expire_centisecs) || return
	echo 20 > "$bdi/min_ratio" || return
	sysctl -q vm.dirty_expire_centisecs=360000 || return
	kept_evict_all_or_nothing
	rc=$?
	echo "$ratio" > "$bdi/min_ratio"
	sysctl -q vm.dirty_expire_centisecs="$expire"
	return "$rc"
}

kept_evict_all_or_nothing() {
	local io=$KEPT_IO_TIMEOUT_MS leaks out pid rc
	leaks=$(kept_leaks_logged)
	rm -f /tmp/kept-ready /tmp/kept-go
	"$KEPT_FAULT" evict self 1 1M 256K --seed 21 --ready /tmp/kept-ready \
		--go /tmp/kept-go --timeout-ms $((60000 * RPAGE_SLOW)) > /tmp/kept-evict.out 2>&1 &
	pid=$!
	wait_until 30 test -e /tmp/kept-ready || fail "the evicting process is not ready" || return
	rxe_stall || return
	touch /tmp/kept-go
	# The write-back gives up on what the device kept: it may let go.
	wait_until $((3 * io / 1000)) kept_leaks_logged_past "$leaks"
	rxe_unstall
	wait "$pid"
	rc=$?
	out=$(cat /tmp/kept-evict.out)
	echo "$out"
	[ "$rc" -eq 0 ] || fail "evict with its write-back kept, then again" || return
	echo "$out" | grep -q "first_error=ETIMEDOUT" || fail "the first evict did not time out" || return
	echo "$out" | grep -q " evicted=64 written=64 " || fail "a later evict did not find all 64 pages dirty" || return
	expect_eq "$(kept_leaks_logged)" "$((leaks + 1))" "transfers whose requests the device kept" || return
	"$SELFTESTS/rpage_pattern" read self 1 1M 256K --seed 21 || fail "pool 1 after the evict" || return
	"$SELFTESTS/rpage_pattern" write self 1 1M 256K --seed 0
	rm -f /tmp/kept-ready /tmp/kept-go /tmp/kept-evict.out
}

# A teardown that meets a transfer whose READ the device keeps waits for
# it (an uninterruptible down_write) no longer than the flush's grace
# period from then on, however long io_timeout_ms is: the holder sees the
# connection closed and flushes at once. Before, it waited out its
# io_timeout_ms first (150 s here: a hung task report at 120 s, and a
# `peer del` stuck as long), then a grace as long again. Then what the
# device kept stays its, and the module goes.
test_kept_teardown_waits_only_the_grace() {
	local leaks c d t0 took rc_c rc_d
	leaks=$(kept_leaks_logged)
	echo "$KEPT_LONG_IO_MS" > "$KEPT_IO_PARAM" || return
	rxe_stall || return
	"$RPAGECTL" read self 1 0 4K file /tmp/kept-c > /tmp/kept-c.out 2>&1 &
	c=$!
	# Its READ posted and kept, the teardown comes.
	sleep 1
	t0=$(date +%s%N)
	"$RPAGECTL" peer del self > /tmp/kept-del.out 2>&1 &
	d=$!
	wait_until $((KEPT_GRACE_MAX * 2)) kept_leaks_logged_past "$leaks"
	took=$(( ($(date +%s%N) - t0) / 1000000 ))
	rxe_unstall
	wait "$c"
	rc_c=$?
	wait "$d"
	rc_d=$?
	echo "$KEPT_IO_TIMEOUT_MS" > "$KEPT_IO_PARAM"
	cat /tmp/kept-c.out /tmp/kept-del.out
	echo "the holder gave the kept READ up ${took} ms into the teardown (io_timeout_ms $KEPT_LONG_IO_MS)"
	expect_eq "$(kept_leaks_logged)" "$((leaks + 1))" "transfers whose requests the device kept" || return
	[ "$took" -le $(( (KEPT_GRACE_MAX + 15 * RPAGE_SLOW) * 1000 )) ] ||
		fail "the teardown waited ${took} ms for the holder, past the ${KEPT_GRACE_MAX} s grace" || return
	[ "$rc_c" -ne 0 ] || fail "the read succeeded with its READ never carried out" || return
	[ "$rc_d" -eq 0 ] || fail "peer del" || return
	rpage_unload || fail "rmmod rpage with work requests kept by the device"
	rm -f /tmp/kept-c /tmp/kept-c.out /tmp/kept-del.out
}

# kept_test NAME FUNCTION: a test point that needs the setup: skipped,
# and counted as such, where the setup could not run.
kept_test() {
	if grep -q "^ok 1 kept_setup$" "$TAP_DIR/kept.tap"; then
		run_test "$1" "$2"
	else
		run_test "$1" skip "the setup did not run here"
	fi
}

tap_begin kept
run_test kept_setup test_kept_setup
kept_test kept_killed_reader_leaves_the_queue_pair test_kept_killed_reader_leaves_the_queue_pair
kept_test kept_read_reaped_late_by_another_reader test_kept_read_late_completion
kept_test kept_evict_drops_nothing test_kept_evict_all_or_nothing
kept_test kept_teardown_waits_only_the_grace test_kept_teardown_waits_only_the_grace
tap_end
[ -n "$KEPT_HOG" ] && rxe_unstall
rpage_loaded && rpage_unload
