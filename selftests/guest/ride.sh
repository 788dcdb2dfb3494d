# SPDX-License-Identifier: GPL-2.0
#
# Riding through network failures, sourced by selftests/guest/pair.sh:
# host B faults in host A's pool 1 (64 MiB, the pattern of pool 1) while
# A's side of the link goes down, A forgets and re-adds B, either host's
# RDMA device is removed and added back, or A's link drops packets; a
# fault waits out the trouble and gets the right bytes, and only a peer
# gone for longer than its loss timeout ends in SIGBUS. Also: a fault
# stalled on the network holds up nothing else of its process, a mapping
# never reads a pool created in place of the one it mapped, and a host
# that powers off without a word is noticed by its peer's heartbeat.
#
# Each test is a pair of functions, test_rt_*_a on A and test_rt_*_b on
# B, that meet at barriers named after the test; run through rt_do, so
# that one side failing early never leaves the other waiting.
#
# "A's link down" is a partition: A's interface stays up and passes
# nothing either way (tc), as when a switch between the hosts fails.
# Taking the interface down (or dropping at its egress, on 6.12) is not
# used: rxe then fails the first rdma_cm message it sends (a DREQ of a
# connection torn down meanwhile) and moves its GSI queue pair (QP1) to
# the error state for good, after which that host completes no rdma_cm
# connection until its rxe device is re-created. rping alone, with no
# rpage, shows it on both kernels: `rdma res show qp` lists QP1 in ERR.
# A real NIC has no such failure; rxe's device removal is tested apart.
#
# Nor is a qdisc added or deleted while B reads: that stops the
# interface for a moment, and a packet rxe sends then is refused. When it
# is the first packet of a READ response, rxe (6.1 and 6.12) sends the
# rest of the response without it, and the reader's rxe completes the
# READ as successful with none of its data, warning in rxe_completer
# (seen here as a page of zeros, with tcpdump showing the response begin
# with a MIDDLE packet). So A's link gets its qdiscs once, while B is
# idle (link_setup), and the tests only change their parameters and
# filters, which never stop the interface.

# link_setup: A's egress goes through two netem qdiscs that do nothing
# yet, band 1 (10:) for everything and band 2 (20:) for what a filter
# sends there; its ingress gets a clsact qdisc for filters.
link_setup() {
	modprobe sch_prio && modprobe sch_netem && modprobe cls_u32 &&
	modprobe cls_matchall && modprobe act_gact &&
	tc qdisc add dev eth0 root handle 1: prio bands 2 \
		priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 &&
	tc qdisc add dev eth0 parent 1:1 handle 10: netem loss 0% &&
	tc qdisc add dev eth0 parent 1:2 handle 20: netem loss 0% &&
	tc qdisc add dev eth0 clsact &&
	tc qdisc show dev eth0
}

# link_netem ARGS...: both of A's egress netem qdiscs take ARGS.
link_netem() {
	tc qdisc change dev eth0 parent 1:1 handle 10: netem "$@" &&
	tc qdisc change dev eth0 parent 1:2 handle 20: netem "$@"
}

# link_cut: A's link passes nothing, either way, until link_restore.
link_cut() {
	link_netem loss 100% &&
	tc filter add dev eth0 ingress pref 1 matchall action drop
}

link_restore() {
	tc filter del dev eth0 ingress pref 1
	link_netem loss 0%
}

# rt_do "BARRIERS" COMMAND...: runs COMMAND; whatever it returns, marks
# each of BARRIERS as reached by this host, so that a failure here never
# leaves the other host waiting at one of them.
rt_do() {
	local barriers=$1 b rc
	shift
	"$@"
	rc=$?
	for b in $barriers; do
		touch "$RPAGE_SYNC/$RPAGE_NODE.$b"
	done
	return "$rc"
}

# wait_file_or_exit SECONDS FILE PID: FILE appears, or PID ends first.
wait_file_or_exit() {
	wait_until "$1" eval "[ -e '$2' ] || ! kill -0 $3 2>/dev/null" &&
		[ -e "$2" ]
}

RT_OUTAGE_S=10
RT_LOSS_S=15
# How much of pool 1 a sweep touches, and after how much the trouble
# starts. What matters is that faults are under way when it starts and
# that enough of them come after it (a sweep that ended first fails the
# checks: no reconnect, no retry counted): 24 MiB after it, 6144 faults
# from 4 threads, outlast each trouble's start here (the debug tier's
# 12 MiB did, at a thirtieth of the speed). 64 MiB cost the CI run
# about 5 minutes more over both kernels, for nothing a test checks.
# Less on the debug tier's kernel, where a fault takes about 30 times as
# long (RPAGE_SLOW), so that a sweep ends in minutes.
RT_SWEEP=32M
RT_SWEEP_AFTER=8M
if [ "$RPAGE_SLOW" -gt 1 ]; then
	RT_SWEEP=16M
	RT_SWEEP_AFTER=4M
fi
# A fault that waits for a peer gone past the loss timeout gives up by:
RT_SIGBUS_BOUND_MS=$(( (RT_LOSS_S + 5) * 1000 ))

# rt_touch NAME: B touches RT_SWEEP of A's pool 1 from 4 threads in
# random order; after RT_SWEEP_AFTER it stops and tells A (barrier NAME-ready), waits for
# A's trouble to start (NAME-go), then touches the rest, which must all
# arrive intact with no SIGBUS. With a command after NAME, B runs it
# itself once the sweep goes on (its own trouble). The tool's result is
# left in /tmp/NAME.out.
rt_touch() {
	local name=$1 out=/tmp/$1.out pid rc
	shift
	rm -f "/tmp/$name.ready" "/tmp/$name.go"
	"$FAULT" touch a 1 "$RT_SWEEP" --threads 4 --order random --after "$RT_SWEEP_AFTER" \
		--ready "/tmp/$name.ready" --go "/tmp/$name.go" > "$out" 2>&1 &
	pid=$!
	wait_file_or_exit 120 "/tmp/$name.ready" "$pid" ||
		{ kill "$pid"; cat "$out"; fail "the sweep never got to $RT_SWEEP_AFTER"; return; }
	barrier "$name-ready" || { kill "$pid"; return 1; }
	barrier "$name-go" || { kill "$pid"; return 1; }
	RT_STATE_AT_GO=$(peer_field a state)
	touch "/tmp/$name.go"
	if [ $# -gt 0 ]; then
		sleep 0.5
		"$@"
	fi
	wait "$pid"
	rc=$?
	cat "$out"
	expect_eq "$rc" 0 "touch's exit status (a SIGBUS or a wrong byte fails it)"
}

peer_cause() {
	peer_field "$1" cause
}

# rt_mark NAME: remembers the peer's counters, for rt_expect_rode_through.
rt_mark() {
	RT_RECONNECTS=$(peer_field "$1" reconnects)
	RT_RETRIED=$(peer_field "$1" retried)
	RT_LOST=$(peer_field "$1" lost)
}

# rt_expect_rode_through NAME [retried]: since rt_mark, the peer's status
# shows a reconnect (and with "retried", transfers retried: where faults
# were surely in flight when the trouble came), and no transfer lost.
rt_expect_rode_through() {
	"$RPAGECTL" peer show "$1"
	[ "$(peer_field "$1" reconnects)" -gt "$RT_RECONNECTS" ] ||
		fail "no reconnect counted" || return
	if [ "${2:-}" = retried ]; then
		[ "$(peer_field "$1" retried)" -gt "$RT_RETRIED" ] ||
			fail "no transfer counted as retried" || return
	fi
	expect_eq "$(( $(peer_field "$1" lost) - RT_LOST ))" 0 "transfers lost"
}

# --- A's link down for 10 s, loss timeout 60 s: not one SIGBUS --------

test_rt_outage_a() {
	barrier rt-outage-ready || return
	link_cut || fail "cutting the link" || return
	barrier rt-outage-go || { link_restore; return 1; }
	sleep "$RT_OUTAGE_S"
	link_restore
	barrier rt-outage-done
}

# While the sweep waits, `peer show` must say why.
rt_watch_cause() {
	local deadline=$(( $(date +%s) + 30 )) state cause
	while [ "$(date +%s)" -lt "$deadline" ]; do
		state=$(peer_field a state)
		if [ "$state" != connected ]; then
			cause=$(peer_cause a)
			echo "state $state, cause: $cause" > /tmp/rt-cause
			return 0
		fi
		sleep 0.5
	done
	echo "never left connected" > /tmp/rt-cause
}

# rpagectl monitor -j, from before the outage to after it: peer a's
# state changes, each with its cause, in order (each from the state the
# one before went to, times never going back), from connected to
# reconnecting and at last connected again; and a's pools gone with its
# connections, then announced again.
rt_monitor_start() {
	"$RPAGECTL" -j monitor > /tmp/rt-monitor.json 2> /tmp/rt-monitor.err &
	RT_MONITOR=$!
	# Subscribed in a moment; the link goes down seconds later, after
	# the touch has begun and two barriers with A.
	sleep 1
}

rt_monitor_check() {
	local peer_events
	kill "$RT_MONITOR"
	wait "$RT_MONITOR" 2> /dev/null
	cat /tmp/rt-monitor.err
	echo "rpagectl -j monitor during the outage:"
	cat /tmp/rt-monitor.json
	peer_events=$(jq -sc '[.[] | select(.event == "peer_state" and .peer == "a")]' \
		< /tmp/rt-monitor.json) || fail "monitor -j printed no JSON" || return
	echo "$peer_events" | jq -e 'length >= 2 and
		.[0].old_state == "connected" and .[0].state == "reconnecting" and
		.[-1].state == "connected" and
		all(.[]; (.cause | length) > 0) and
		([range(1; length) as $i | .[$i].old_state == .[$i - 1].state and
		  .[$i].time_ns >= .[$i - 1].time_ns] | all)' > /dev/null ||
		fail "peer a's state changes, in order, from connected back to connected" || return
	jq -se '
		([.[] | select(.event == "pool_del" and .peer == "a" and .cause == "disconnected")] | length) > 0 and
		([.[] | select(.event == "pool_del" and .peer == "a")][0].time_ns) <
		([.[] | select(.event == "pool_add" and .peer == "a")][-1].time_ns // 0)' \
		< /tmp/rt-monitor.json > /dev/null ||
		fail "a's pools gone with its connections, then announced again"
}

test_rt_outage_b() {
	rt_mark a
	rt_monitor_start
	rt_watch_cause_after_go &
	rt_touch rt-outage || { kill "$RT_MONITOR"; return 1; }
	wait "$!"
	echo "during the outage: $(cat /tmp/rt-cause)"
	grep -qE "completion|heartbeat|connecting|SEND" /tmp/rt-cause ||
		{ kill "$RT_MONITOR"; fail "peer show did not name the cause"; return; }
	# Faults are surely in flight when the loss is noticed if the sweep
	# went on before it was. On the debug tier's kernel the barrier can
	# take longer than the heartbeat needs to notice (5 s): the sweep's
	# faults then wait for the reconnection and post nothing to retry.
	if [ "$RPAGE_SLOW" -gt 1 ] && [ "$RT_STATE_AT_GO" != connected ]; then
		echo "peer a was $RT_STATE_AT_GO when the sweep went on: no transfer in flight to retry"
		rt_expect_rode_through a || return
	else
		rt_expect_rode_through a retried || { kill "$RT_MONITOR"; return 1; }
	fi
	barrier rt-outage-done || { kill "$RT_MONITOR"; return 1; }
	rt_monitor_check
}

rt_watch_cause_after_go() {
	wait_until 120 test -e /tmp/rt-outage.go > /dev/null && rt_watch_cause
}

# --- A's link down past a 15 s loss timeout: SIGBUS in time, then back --

test_rt_loss_a() {
	barrier rt-loss-ready || return
	link_cut || fail "cutting the link" || return
	barrier rt-loss-go && barrier rt-loss-survived
	link_restore
	barrier rt-loss-link-up || return
	barrier rt-loss-done
}

test_rt_loss_b() {
	local out=/tmp/rt-loss.out pid rc t0 waited connected
	"$RPAGECTL" peer set a loss-timeout "$RT_LOSS_S" || fail "peer set" || return
	rm -f /tmp/rt-loss.ready /tmp/rt-loss.go
	"$FAULT" survive a 1 64M --fetched 4M --ready /tmp/rt-loss.ready \
		--go /tmp/rt-loss.go --timeout-ms "$RT_SIGBUS_BOUND_MS" > "$out" 2>&1 &
	pid=$!
	wait_file_or_exit 120 /tmp/rt-loss.ready "$pid" ||
		{ kill "$pid"; cat "$out"; fail "survivor never fetched"; return; }
	barrier rt-loss-ready || { kill "$pid"; return 1; }
	barrier rt-loss-go || { kill "$pid"; return 1; }
	touch /tmp/rt-loss.go
	wait "$pid"
	rc=$?
	cat "$out"
	"$RPAGECTL" peer show a
	barrier rt-loss-survived || return
	expect_eq "$rc" 0 "survivor's exit status" || return
	[ "$(peer_field a lost)" -ge 1 ] || fail "no transfer counted as lost" || return
	# Back once the link is: reconnected at its next attempt, which the
	# backoff puts up to 12 s out (reconnect_delay_ms 1000, doubled up
	# to 8 times, plus up to half), and its pool table listed within
	# 5 s of that, each by the peer's own clock (in-state time).
	barrier rt-loss-link-up || return
	t0=${EPOCHREALTIME/./}
	wait_until 30 remote_pool_listed a 1 || fail "pool 1 of a not listed again" || return
	connected=$(peer_since_ms a "$t0") || fail "no state time for a" || return
	waited=$(ms_since "$t0")
	echo "pools of a listed again ${waited} ms after the link came back, connected $connected ms after it"
	[ "$connected" -le $(( (12000 + 5000) * RPAGE_SLOW)) ] ||
		fail "reconnected $connected ms after the link came back" || return
	[ $((waited - connected)) -le $((5000 * RPAGE_SLOW)) ] ||
		fail "pools listed only $((waited - connected)) ms after the reconnection" || return
	"$RPAGECTL" peer set a loss-timeout 60 || fail "peer set" || return
	# A new mapping reads every byte right.
	"$FAULT" touch a 1 8M --threads 2 || return
	barrier rt-loss-done
}

# --- A forgets B and adds it back while B faults: no SIGBUS ----------

test_rt_readd_a() {
	barrier rt-readd-ready || return
	barrier rt-readd-go || return
	sleep 0.5
	"$RPAGECTL" peer del b && "$RPAGECTL" peer add b addr "$RPAGE_PEER_IP" ||
		fail "peer del and add" || return
	barrier rt-readd-done
}

test_rt_readd_b() {
	rt_mark a
	rt_touch rt-readd || return
	rt_expect_rode_through a || return
	barrier rt-readd-done
}

# --- Either host's RDMA device removed and added back under B's faults --

rt_relink() {
	rdma link delete rxe0 || fail "rdma link delete" || return
	sleep 1
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add"
}

test_rt_relink_a() {
	barrier rt-relink-a-ready || return
	barrier rt-relink-a-go || return
	sleep 0.5
	rt_relink || return
	barrier rt-relink-a-done || return
	barrier rt-relink-b-ready || return
	barrier rt-relink-b-go || return
	barrier rt-relink-b-done || return
	# A's peer b and endpoint came back too.
	wait_until 60 peer_is "$PEER" connected || fail "b not connected again"
}

test_rt_relink_b() {
	rt_mark a
	rt_touch rt-relink-a || return
	barrier rt-relink-a-done || return
	rt_expect_rode_through a || return
	rt_mark a
	rt_touch rt-relink-b rt_relink || return
	barrier rt-relink-b-done || return
	rt_expect_rode_through a
}

# --- 1% of the packets A sends lost for the whole sweep: no SIGBUS ------

test_rt_lossy_a() {
	barrier rt-lossy-ready || return
	link_netem loss 1% || fail "tc netem" || return
	barrier rt-lossy-go
	barrier rt-lossy-done
	tc -s qdisc show dev eth0
	link_netem loss 0%
}

test_rt_lossy_b() {
	rt_touch rt-lossy || return
	barrier rt-lossy-done
}

# --- A's acknowledgments arrive late: every byte still right -----------
#
# A delays the RC acknowledgments it sends (BTH opcode 0x11, the first
# byte after the UDP header of RoCE v2, port 4791) by 50 ms and nothing
# else, while B heartbeats every 20 ms and touches pool 1. Each late ACK
# is for a SEND that B's next READ response already acknowledged; RC
# must ignore it. rxe on 6.12 does not when it lands between two packets
# of a multi-packet READ response: it completes that READ as successful
# with part of its data missing, then puts the queue pair in error and
# warns (rxe_comp.c, "WARN_ON_ONCE(wqe->status == IB_WC_SUCCESS)"). A
# lost ACK and the retransmission it causes can do the same. rpage keeps
# READs on queue pairs that carry nothing acknowledged.

test_rt_late_acks_a() {
	barrier rt-lateack-ready || return
	tc qdisc change dev eth0 parent 1:2 handle 20: netem delay 50ms &&
	tc filter add dev eth0 parent 1: protocol ip pref 1 u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		match u8 0x11 0xff at 28 flowid 1:2 || fail "tc" || return
	barrier rt-lateack-go
	barrier rt-lateack-done
	tc -s qdisc show dev eth0
	tc filter del dev eth0 parent 1: pref 1
	tc qdisc change dev eth0 parent 1:2 handle 20: netem delay 0ms
}

test_rt_late_acks_b() {
	local hb ret=0
	hb=$(cat /sys/module/rpage/parameters/heartbeat_ms)
	echo 20 > /sys/module/rpage/parameters/heartbeat_ms
	rt_touch rt-lateack || ret=1
	echo "$hb" > /sys/module/rpage/parameters/heartbeat_ms
	barrier rt-lateack-done
	return "$ret"
}

# --- A fault stalled on the network holds up nothing else -------------

test_rt_stall_a() {
	barrier rt-stall-ready || return
	link_cut || fail "cutting the link" || return
	barrier rt-stall-go && barrier rt-stall-done
	link_restore
}

test_rt_stall_b() {
	local out=/tmp/rt-stall.out pid ret=0
	rm -f /tmp/rt-stall.fetched /tmp/rt-stall.go /tmp/rt-stall.ready
	"$FAULT" stall a 1 64M --fetched-ready /tmp/rt-stall.fetched \
		--go /tmp/rt-stall.go --ready /tmp/rt-stall.ready > "$out" 2>&1 &
	pid=$!
	wait_file_or_exit 60 /tmp/rt-stall.fetched "$pid" ||
		{ kill -9 "$pid"; cat "$out"; fail "stall tool never fetched"; return; }
	barrier rt-stall-ready || { kill -9 "$pid"; return 1; }
	barrier rt-stall-go || { kill -9 "$pid"; return 1; }
	touch /tmp/rt-stall.go
	if ! wait_file_or_exit 60 /tmp/rt-stall.ready "$pid"; then
		kill -9 "$pid"
		cat "$out"
		barrier rt-stall-done
		fail "stall tool never measured"
		return
	fi
	cat "$out"
	stall_held_up_nothing "$out" "$pid" || ret=1
	barrier rt-stall-done
	# The peer comes back after the stall: later tests need it.
	wait_until 60 peer_is a connected || { echo "FAIL: a not connected again"; ret=1; }
	return "$ret"
}

# --- A pool destroyed and created again with the same id -------------

test_rt_replaced_a() {
	"$RPAGECTL" pool create 6 size 16M writable || return
	wait_until 30 remote_pool_listed self 6 || fail "pool 6 not announced to self" || return
	"$PATTERN" fill self 6 16M || return
	barrier rt-replaced-ready || return
	"$RPAGECTL" pool destroy 6 || fail "pool destroy" || return
	"$RPAGECTL" pool create 6 size 16M writable || fail "pool create again" || return
	wait_until 30 remote_pool_listed self 6 || fail "new pool 6 not announced to self" || return
	"$PATTERN" write self 6 0 16M --seed 7 || return
	barrier rt-replaced-go || return
	barrier rt-replaced-done || return
	# Nothing B evicted through its old mapping landed in the new pool.
	"$PATTERN" read self 6 0 16M --seed 7 || fail "the new pool was written through the old mapping" || return
	"$RPAGECTL" pool destroy 6
}

test_rt_replaced_b() {
	local out=/tmp/rt-replaced.out pid rc
	wait_until 60 remote_pool_listed a 6 || fail "pool 6 not announced" || return
	rm -f /tmp/rt-replaced.ready /tmp/rt-replaced.go
	"$FAULT" replaced a 6 16M --fetched 4M --ready /tmp/rt-replaced.ready \
		--go /tmp/rt-replaced.go --seed-new 7 > "$out" 2>&1 &
	pid=$!
	wait_file_or_exit 60 /tmp/rt-replaced.ready "$pid" ||
		{ kill "$pid"; cat "$out"; fail "tool never fetched"; return; }
	barrier rt-replaced-ready || { kill "$pid"; return 1; }
	barrier rt-replaced-go || { kill "$pid"; return 1; }
	touch /tmp/rt-replaced.go
	wait "$pid"
	rc=$?
	cat "$out"
	barrier rt-replaced-done || return
	expect_eq "$rc" 0 "exit status" || return
	grep -q " evict_errno=ESTALE" "$out" || fail "evict did not fail with ESTALE" || return
	grep -q " msync_errno=ESTALE" "$out" || fail "msync did not report the write back's ESTALE" || return
	grep -q " evict_after_msync_errno=ESTALE" "$out" ||
		fail "an eviction after the write back did not fail with ESTALE"
}

# --- B powers off without a word: A's heartbeat notices ---------------

# On A, once B has gone (its QEMU exited): A's peer b leaves connected
# within the heartbeat bound, and no inbound connection of B's is left.
# Timed from B's QEMU's exit as A sees it (the host's NODE.gone), not
# from B's job's end: B's guest powers off some seconds after that.
test_rt_heartbeat_a() {
	local t0 waited
	wait_until 600 test -e "$RPAGE_SYNC/$RPAGE_PEER_NODE.gone" || fail "b never went" || return
	t0=${EPOCHREALTIME/./}
	wait_until 30 eval '[ "$(peer_field b state)" != connected ]' ||
		fail "b still connected 30 s after it went" || return
	waited=$(ms_since "$t0")
	wait_until 30 peer_field_is b qps_inbound 0 ||
		fail "b's inbound connections still there" || return
	"$RPAGECTL" peer show b
	echo "b left connected ${waited} ms after its QEMU exited; inbound $(peer_field b qps_inbound)"
	# Heartbeats every second, 5 missed at most; and the RC retries.
	[ "$waited" -le 10000 ] || fail "noticed after $waited ms"
}

# The barriers of each test, for rt_do.
RT_OUTAGE="rt-outage-ready rt-outage-go rt-outage-done"
RT_LOSS="rt-loss-ready rt-loss-go rt-loss-survived rt-loss-link-up rt-loss-done"
RT_READD="rt-readd-ready rt-readd-go rt-readd-done"
RT_RELINK="rt-relink-a-ready rt-relink-a-go rt-relink-a-done rt-relink-b-ready rt-relink-b-go rt-relink-b-done"
RT_LOSSY="rt-lossy-ready rt-lossy-go rt-lossy-done"
RT_LATEACK="rt-lateack-ready rt-lateack-go rt-lateack-done"
RT_STALL="rt-stall-ready rt-stall-go rt-stall-done"
RT_REPLACED="rt-replaced-ready rt-replaced-go rt-replaced-done"
