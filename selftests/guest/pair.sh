# SPDX-License-Identifier: GPL-2.0
#
# The two-guest job, run on host A (node a) and host B (node b) at once:
# rdma-core peers across the guests' link, then rpage.ko on both hosts
# connecting to each other, refusing strangers and speaking up about
# protocol versions.
. "$RPAGE_REPO/selftests/guest/lib.sh"
. "$RPAGE_REPO/selftests/guest/ride.sh"
. "$RPAGE_REPO/selftests/guest/pressure.sh"
# The VM the pair moves: 16 MiB, a quarter of the demo's, which moves the
# same way (under two levels of TCG its guest's fill and checks of 60 MiB
# were most of the test's minute).
VM_MIB=16
. "$RPAGE_REPO/selftests/guest/vmmove.sh"
. "$RPAGE_REPO/selftests/guest/persist.sh"

RPING_COUNT=20
ROGUE=$SELFTESTS/rpage_rogue_peer
PEER=$RPAGE_PEER_NODE
# The transport between the hosts: rdma, over an rxe device on each NIC,
# or tcp (selftests/guest/pair-tcp.sh), with no RDMA device at all: the
# automatic choice must then be TCP, for the peers and the endpoints.
PAIR_TRANSPORT=${PAIR_TRANSPORT:-rdma}

test_rping_server() {
	rping -s -a "$RPAGE_IP" -C "$RPING_COUNT" -v > /tmp/rping.log 2>&1 &
	local pid=$!
	sleep 2
	barrier rping-listening || return
	wait "$pid" || { cat /tmp/rping.log; fail "rping server failed"; return; }
	local got
	got=$(grep -c "ping data" /tmp/rping.log)
	expect_eq "$got" "$RPING_COUNT" "pings received"
}

test_rping_client() {
	barrier rping-listening || return
	local try
	for try in 1 2 3 4 5; do
		if rping -c -a "$RPAGE_PEER_IP" -C "$RPING_COUNT" -v > /tmp/rping.log 2>&1; then
			local got
			got=$(grep -c "ping data" /tmp/rping.log)
			tail -n 3 /tmp/rping.log
			expect_eq "$got" "$RPING_COUNT" "pings sent"
			return
		fi
		sleep 1
	done
	cat /tmp/rping.log
	fail "rping to $RPAGE_PEER_IP failed $try times"
}

test_rpage_version() {
	"$RPAGECTL" -j version | jq -e '.module.api == 1' || return
	if [ "$PAIR_TRANSPORT" = rdma ]; then
		rpage_devices | grep -qx rxe0
	else
		[ -z "$(rpage_devices)" ] || fail "an RDMA device is listed"
	fi
}

# On the debug tier's kernel 64 READs in flight on one queue pair can
# take more than 10 s to complete (RPAGE_SLOW in lib.sh).
rpage_load_pair() {
	modprobe ib_core && modprobe rdma_cm &&
	insmod "$RPAGE_KO" qps_per_peer=2 connect_timeout_ms=3000 \
		reconnect_delay_ms=500 io_timeout_ms=$((10000 * RPAGE_SLOW)) \
		heartbeat_ms=1000
}

test_mutual_connect() {
	"$RPAGECTL" endpoint add "$RPAGE_IP" || fail "endpoint add" || return
	"$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" || fail "peer add" || return
	wait_until 90 peer_is "$PEER" connected || { "$RPAGECTL" peer show; fail "not connected"; return; }
	wait_until 30 peer_field_is "$PEER" qps_inbound 2 ||
		{ "$RPAGECTL" peer show; fail "peer's queue pairs did not arrive"; return; }
	"$RPAGECTL" peer show
	"$RPAGECTL" endpoint show
	expect_eq "$(peer_field "$PEER" proto)" 2.0 "peer protocol" || return
	expect_eq "$(peer_field "$PEER" transport)" "$PAIR_TRANSPORT" "transport chosen" || return
	if [ "$PAIR_TRANSPORT" = rdma ]; then
		expect_eq "$(endpoint_field transport)" rdma,tcp "endpoint listens over"
	else
		expect_eq "$(endpoint_field transport)" tcp "endpoint listens over"
	fi
}

# On B: foreign initiators built on rdma-core, against A's endpoint.
test_rogue_version() {
	local out rc
	out=$("$ROGUE" -t 20 -M 3 "$RPAGE_PEER_IP")
	rc=$?
	echo "$out"
	expect_eq "$rc" 2 "exit status" || return
	expect_eq "$out" "rejected reason version proto 2.0" "outcome"
}

test_rogue_bad_magic() {
	local out rc
	out=$("$ROGUE" -t 20 -x "$RPAGE_PEER_IP")
	rc=$?
	echo "$out"
	expect_eq "$rc" 2 "exit status" || return
	expect_eq "$out" "rejected reason bad-hello proto 2.0" "outcome"
}

test_rogue_good_hello_from_a_peer_address() {
	local out rc want
	out=$("$ROGUE" -t 20 "$RPAGE_PEER_IP")
	rc=$?
	echo "$out"
	expect_eq "$rc" 0 "exit status" || return
	# rxe answers up to 128 READs: the initiator gets the 16 it asks for.
	want="accepted node_id $(peer_field "$PEER" node_id) proto 2.0 reads_in_flight 16"
	expect_eq "$out" "$want" "outcome"
}

# On A: what it counted and logged of B's rogue attempts.
test_refusals_counted_and_logged() {
	"$RPAGECTL" endpoint show
	[ "$(endpoint_field rejected_version)" -ge 1 ] || fail "version refusal not counted" || return
	[ "$(endpoint_field rejected_other)" -ge 1 ] || fail "bad hello not counted" || return
	dmesg | grep -q "it speaks protocol 3.0, we speak 2.0" || fail "version refusal not logged"
}

# A forgets B: B's connections are refused as from an unknown peer.
test_forgotten_peer_is_refused_a() {
	"$RPAGECTL" peer del "$PEER" || fail "peer del" || return
	barrier a-forgot-b || return
	wait_until 60 endpoint_field_ge rejected_unknown 1 ||
		fail "refusals of the unknown peer not counted" || return
	barrier b-saw-refusal || return
	"$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" || fail "peer re-add" || return
	wait_until 90 peer_is "$PEER" connected || fail "no reconnect to b"
}

test_forgotten_peer_is_refused_b() {
	barrier a-forgot-b || return
	wait_until 60 peer_field_is "$PEER" last_reject unknown-peer ||
		{ "$RPAGECTL" peer show; fail "refusal reason not shown"; return; }
	expect_eq "$(peer_field "$PEER" state)" reconnecting "state" || return
	[ "$(peer_field "$PEER" rejects)" -ge 1 ] || fail "refusal not counted" || return
	barrier b-saw-refusal || return
	wait_until 90 peer_is "$PEER" connected || fail "no reconnect once a re-added b"
}

PATTERN=$SELFTESTS/rpage_pattern

# On A: a 64 MiB kernel pool with the pattern of (pool 1, offset), given
# through A's own loopback peer, and 16 MiB of a process's memory.
test_pools_on_a() {
	"$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	"$RPAGECTL" pool create 1 size 64M writable || return
	wait_until 30 remote_pool_listed self 1 || fail "pool 1 not announced to self" || return
	"$PATTERN" fill self 1 64M || fail "filling pool 1" || return
	rm -f /tmp/ready2 /tmp/until2
	"$PATTERN" export 2 16M --writable --ready /tmp/ready2 --until /tmp/until2 \
		--expect 5 1M 2M > /tmp/export2.out 2>&1 &
	echo $! > /tmp/export2.pid
	wait_until 30 test -e /tmp/ready2 || fail "exporter not ready"
}

test_process_on_a_sees_writes_from_b() {
	touch /tmp/until2
	wait "$(cat /tmp/export2.pid)" 2>/dev/null
	cat /tmp/export2.out
	grep -q verified /tmp/export2.out || fail "B's write did not reach A's process"
}

test_b_reads_every_page_librpage() {
	wait_until 60 remote_pool_listed a 1 || fail "pool 1 not announced" || return
	wait_until 60 remote_pool_listed a 2 || fail "pool 2 not announced" || return
	"$RPAGECTL" pool show remote
	"$PATTERN" read a 1 0 64M || return
	"$PATTERN" read a 2 0 16M
}

test_b_reads_every_page_rpagectl() {
	"$RPAGECTL" read a 1 0 64M file /tmp/a1 || fail "rpagectl read pool 1" || return
	"$PATTERN" check-file 1 /tmp/a1 || return
	"$RPAGECTL" read a 2 0 16M file /tmp/a2 || fail "rpagectl read pool 2" || return
	"$PATTERN" check-file 2 /tmp/a2
	rm -f /tmp/a1 /tmp/a2
}

test_b_stats() {
	"$RPAGECTL" stat peer a
	# Both pools were read twice (librpage, rpagectl): 2 * (64 + 16) MiB.
	"$RPAGECTL" -j stat peer a |
		jq -e '.peers[0].reads >= 40960 and .peers[0].read_bytes >= 167772160 and .peers[0].errors == 0 and .peers[0].latency.p999_ns != null'
}

FAULT=$SELFTESTS/rpage_fault

# On A: pool 3, a process's 16 MiB that B writes through a mapping and
# evicts; pool 4, 32 MiB of kernel memory destroyed under B's feet.
test_fault_pools_on_a() {
	rm -f /tmp/ready3 /tmp/until3
	"$PATTERN" export 3 16M --writable --ready /tmp/ready3 --until /tmp/until3 \
		--expect 9 1M 2M > /tmp/export3.out 2>&1 &
	echo $! > /tmp/export3.pid
	wait_until 30 test -e /tmp/ready3 || fail "exporter of pool 3 not ready" || return
	"$RPAGECTL" pool create 4 size 32M writable || return
	wait_until 30 remote_pool_listed self 4 || fail "pool 4 not announced to self" || return
	"$PATTERN" fill self 4 32M
}

test_process_on_a_sees_evicted_pages() {
	touch /tmp/until3
	wait "$(cat /tmp/export3.pid)" 2>/dev/null
	cat /tmp/export3.out
	grep -q verified /tmp/export3.out || fail "B's evicted pages did not reach A's process"
}

test_a_destroys_pool_4() {
	"$RPAGECTL" pool destroy 4
}

# On B: the fault path against A's pools.
test_b_touches_64m_from_4_threads() {
	wait_until 60 remote_pool_listed a 1 || fail "pool 1 not announced" || return
	"$FAULT" touch a 1 64M --threads 4 --order random --expect-faults 16384
}

test_b_prefetch_then_touch() {
	"$FAULT" prefetch a 1 16M --offset 32M --depth 32
}

test_b_readahead_follows_a_stride() {
	"$FAULT" touch a 1 8M --threads 1 --order seq --readahead > /tmp/ra.out || return
	cat /tmp/ra.out
	# Most pages came from read-ahead, not from their own fault's READ.
	local pages hits
	pages=$(sed -n 's/.*pages=\([0-9]*\).*/\1/p' /tmp/ra.out)
	hits=$(sed -n 's/.*prefetch_hits=\([0-9]*\).*/\1/p' /tmp/ra.out)
	[ "$((hits * 2))" -gt "$pages" ] || fail "read-ahead served $hits of $pages pages"
}

test_b_writes_evicts_and_reads_back() {
	wait_until 60 remote_pool_listed a 3 || fail "pool 3 not announced" || return
	"$FAULT" evict a 3 1M 2M --seed 9 || return
	"$FAULT" evict a 3 4M 1M --clean
}

test_b_fault_stats() {
	"$RPAGECTL" stat peer a
	"$RPAGECTL" -j stat peer a |
		jq -e '.peers[0].fault.faults >= 16384 and .peers[0].fault.prefetch_hits > 0 and .peers[0].fault.evicted > 0 and .peers[0].fault.written > 0 and .peers[0].fault.latency.p50_ns != null'
}

# B has touched part of pool 4 when A destroys it: the rest SIGBUSes.
# survive POOL SIZE FETCHED FETCHED_BARRIER GO_BARRIER: B fetches part of
# A's POOL, tells A (FETCHED_BARRIER), waits until A has done its worst
# (GO_BARRIER), then touches the rest: rpage_fault checks that those
# pages SIGBUS in time and the fetched ones stay intact.
survive() {
	local pool=$1 size=$2 fetched=$3 out=/tmp/survive$1.out pid rc
	rm -f "/tmp/fetched$pool" "/tmp/go$pool"
	"$FAULT" survive a "$pool" "$size" --fetched "$fetched" \
		--ready "/tmp/fetched$pool" --go "/tmp/go$pool" > "$out" 2>&1 &
	pid=$!
	wait_until 120 test -e "/tmp/fetched$pool" ||
		{ cat "$out"; fail "survivor never fetched"; return; }
	barrier "$4" || return
	barrier "$5" || return
	touch "/tmp/go$pool"
	wait "$pid"
	rc=$?
	cat "$out"
	expect_eq "$rc" 0 "survivor's exit status"
}

test_b_survives_pool_destroy() {
	wait_until 60 remote_pool_listed a 4 || fail "pool 4 not announced" || return
	survive 4 32M 8M b-fetched-4 a-destroyed-4 || return
	"$RPAGECTL" -j stat peer a | jq -e '.peers[0].fault.sigbus > 0'
}

test_b_writes_to_a_process() {
	"$PATTERN" write a 2 1M 2M --seed 5 || return
	"$PATTERN" read a 2 1M 2M --seed 5
}

[ "$PAIR_TRANSPORT" = rdma ] && rxe_up

tap_begin "pair-$RPAGE_NODE"
run_test rpage_load rpage_load
run_test "rpagectl_version_on_$RPAGE_NODE" test_rpage_version
if [ "$PAIR_TRANSPORT" != rdma ]; then
	:
elif [ "$RPAGE_NODE" = a ]; then
	run_test rping_server_on_a test_rping_server
else
	run_test rping_client_on_b test_rping_client
fi
barrier rping-done
run_test rpage_unload rpage_unload
# The configuration is the same over either transport above the data
# path (rpage-setup, rpagectl -b and save), and is applied over RDMA.
if [ "$PAIR_TRANSPORT" = rdma ]; then
	run_test "config_survives_a_reload_on_$RPAGE_NODE" \
		rt_do "$CFG_BARRIERS" "test_config_survives_reload_$RPAGE_NODE"
	cfg_cleanup
fi

run_test rpage_load_two_qps_per_peer rpage_load_pair
run_test "mutual_connect_on_$RPAGE_NODE" test_mutual_connect
barrier connected
if [ "$RPAGE_NODE" = b ]; then
	if [ "$PAIR_TRANSPORT" = rdma ]; then
		run_test rogue_peer_with_protocol_3_is_refused test_rogue_version
		run_test rogue_peer_with_bad_magic_is_refused test_rogue_bad_magic
		run_test rogue_peer_from_a_peer_address_is_accepted test_rogue_good_hello_from_a_peer_address
	fi
	barrier rogues-done
	run_test forgotten_peer_is_refused_on_b test_forgotten_peer_is_refused_b
else
	barrier rogues-done
	[ "$PAIR_TRANSPORT" = rdma ] &&
		run_test refusals_counted_and_logged_on_a test_refusals_counted_and_logged
	run_test forgotten_peer_is_refused_on_a test_forgotten_peer_is_refused_a
fi
barrier reconnected
if [ "$RPAGE_NODE" = a ]; then
	run_test a_link_shaping_set_up link_setup
	run_test pools_kernel_and_process_on_a test_pools_on_a
	barrier pools-ready
	barrier b-wrote
	run_test process_on_a_sees_writes_from_b test_process_on_a_sees_writes_from_b
	run_test fault_pools_on_a test_fault_pools_on_a
	barrier fault-pools-ready
	barrier b-evicted
	run_test process_on_a_sees_evicted_pages test_process_on_a_sees_evicted_pages
	barrier b-fetched-4
	run_test a_destroys_pool_4_under_b test_a_destroys_pool_4
	barrier a-destroyed-4
	run_test a_link_down_10s_under_b rt_do "$RT_OUTAGE" test_rt_outage_a
	run_test a_link_down_past_b_loss_timeout rt_do "$RT_LOSS" test_rt_loss_a
	run_test a_deletes_and_readds_b_under_b rt_do "$RT_READD" test_rt_readd_a
	# rxe's removal and RoCE's acknowledgments are RDMA's alone; the
	# memory pressure and VM tests are the same over either transport
	# above the data path, and run over RDMA.
	[ "$PAIR_TRANSPORT" = rdma ] &&
		run_test rxe_removed_and_added_on_a_then_b rt_do "$RT_RELINK" test_rt_relink_a
	run_test a_link_loses_1pct_under_b rt_do "$RT_LOSSY" test_rt_lossy_a
	[ "$PAIR_TRANSPORT" = rdma ] &&
		run_test a_link_delays_acks_under_b rt_do "$RT_LATEACK" test_rt_late_acks_a
	run_test a_link_down_under_a_stalled_fault rt_do "$RT_STALL" test_rt_stall_a
	run_test a_replaces_a_pool_b_maps rt_do "$RT_REPLACED" test_rt_replaced_a
	if [ "$PAIR_TRANSPORT" = rdma ]; then
		run_test a_exports_256m_under_pressure rt_do "$PRESSURE" test_pressure_pool_a
		run_test a_runs_a_vm_that_b_takes_over rt_do "$VM_BARRIERS" test_vm_move_a
	fi
else
	barrier pools-ready
	run_test b_reads_every_page_of_both_pools_librpage test_b_reads_every_page_librpage
	run_test b_reads_every_page_of_both_pools_rpagectl test_b_reads_every_page_rpagectl
	run_test b_stats_show_the_reads test_b_stats
	run_test b_writes_into_a_process_pool test_b_writes_to_a_process
	barrier b-wrote
	barrier fault-pools-ready
	run_test b_touches_64m_of_a_from_4_threads test_b_touches_64m_from_4_threads
	run_test b_prefetch_then_touch test_b_prefetch_then_touch
	run_test b_readahead_follows_a_stride test_b_readahead_follows_a_stride
	run_test b_writes_evicts_and_reads_back test_b_writes_evicts_and_reads_back
	barrier b-evicted
	run_test b_fault_stats test_b_fault_stats
	run_test b_survives_pool_destroy_on_a test_b_survives_pool_destroy
	run_test b_rides_out_10s_outage_with_no_sigbus rt_do "$RT_OUTAGE" test_rt_outage_b
	run_test b_sigbus_within_loss_timeout_then_back rt_do "$RT_LOSS" test_rt_loss_b
	run_test b_rides_out_a_deleting_and_readding_it rt_do "$RT_READD" test_rt_readd_b
	[ "$PAIR_TRANSPORT" = rdma ] &&
		run_test b_rides_out_rxe_removal_on_a_then_b rt_do "$RT_RELINK" test_rt_relink_b
	run_test b_rides_out_1pct_loss_with_no_sigbus rt_do "$RT_LOSSY" test_rt_lossy_b
	[ "$PAIR_TRANSPORT" = rdma ] &&
		run_test b_reads_right_bytes_when_acks_come_late rt_do "$RT_LATEACK" test_rt_late_acks_b
	run_test b_stalled_fault_holds_up_nothing_else rt_do "$RT_STALL" test_rt_stall_b
	run_test b_mapping_never_reads_a_replaced_pool rt_do "$RT_REPLACED" test_rt_replaced_b
	if [ "$PAIR_TRANSPORT" = rdma ]; then
		run_test b_background_prefetch_and_host_pressure_never_oom rt_do pressure-pool test_pressure_prefetch_b
		run_test b_memcg_bounds_a_process_reading_four_times_its_limit rt_do pressure-done test_pressure_memcg_b
		run_test b_takes_over_a_vm_without_its_memory rt_do "$VM_BARRIERS" test_vm_move_b
	fi
fi
barrier done
if [ "$RPAGE_NODE" = a ]; then
	# B powers off without a word (no unload) once its job is over.
	run_test a_notices_b_gone_by_heartbeat test_rt_heartbeat_a
	run_test unload_on_a rpage_unload
fi
tap_end

exit 0
