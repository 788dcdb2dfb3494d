# SPDX-License-Identifier: GPL-2.0
#
# Connections in one guest: rpage.ko connects to itself over rxe
# loopback (the peer "self" is this host), then every teardown order.
. "$RPAGE_REPO/selftests/guest/lib.sh"

SELF=$RPAGE_IP

setup() {
	"$RPAGECTL" endpoint add "$SELF" &&
	"$RPAGECTL" peer add self addr "$SELF"
}

test_connects_to_itself() {
	setup || return
	wait_until 60 peer_is self connected || { "$RPAGECTL" peer show; return 1; }
	"$RPAGECTL" peer show
	"$RPAGECTL" endpoint show
	local qps
	qps=$(peer_field self qps)
	expect_eq "$qps" 2 "queue pairs (qps_per_peer=2)" || return
	wait_until 20 peer_field_is self qps_inbound "$qps" ||
		fail "inbound queue pairs: $(peer_field self qps_inbound), want $qps" || return
	expect_eq "$(peer_field self node_id)" "$(printf '0x%x' "$(cat /sys/module/rpage/parameters/node_id)")" "node id" || return
	expect_eq "$(peer_field self proto)" "2.0" "protocol" || return
	expect_eq "$(endpoint_field accepted)" "$qps" "accepted"
}

test_peer_del_while_connected() {
	"$RPAGECTL" peer del self || fail "peer del" || return
	[ "$("$RPAGECTL" -j peer show | jq length)" = 0 ] || fail "peer still listed" || return
	"$RPAGECTL" peer add self addr "$SELF" || fail "re-add" || return
	wait_until 60 peer_is self connected || fail "no reconnect after re-add"
}

test_endpoint_del_keeps_connections() {
	"$RPAGECTL" endpoint del "$SELF" || fail "endpoint del" || return
	sleep 1
	peer_is self connected || fail "outbound set dropped with the endpoint" || return
	"$RPAGECTL" endpoint add "$SELF" || fail "endpoint re-add"
}

# The peer deleted while its connections to us are being accepted, over
# and over: an inbound connection accepted as its peer goes must still
# be torn down, or the device removal and the unload that follow wait
# for it forever (issue 13, defect 7).
test_peer_del_racing_its_connections() {
	local i
	"$RPAGECTL" peer del self || return
	for i in $(seq 30); do
		"$RPAGECTL" peer add self addr "$SELF" || fail "peer add, round $i" || return
		sleep "0.$((RANDOM % 4))"
		"$RPAGECTL" peer del self || fail "peer del, round $i" || return
	done
	"$RPAGECTL" peer add self addr "$SELF" || return
	wait_until 60 peer_is self connected || fail "not connected after the races" || return
	timeout 60 rdma link delete rxe0 || fail "rdma link delete hung or failed" || return
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add" || return
	wait_until 30 endpoint_field_is state listening || fail "endpoint down" || return
	wait_until 60 peer_is self connected || fail "peer did not reconnect"
}

test_device_removal_while_connected() {
	rdma link delete rxe0 || fail "rdma link delete" || return
	wait_until 20 peer_field_is self state reconnecting ||
		fail "peer not reconnecting after device removal" || return
	expect_eq "$(peer_field self qps_inbound)" 0 "inbound after removal" || return
	expect_eq "$(endpoint_field state)" down "endpoint state" || return
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add" || return
	wait_until 30 endpoint_field_is state listening ||
		fail "endpoint did not listen again" || return
	wait_until 60 peer_is self connected || fail "peer did not reconnect"
}

test_unload_while_connected() {
	peer_is self connected || fail "not connected before unload" || return
	rpage_unload || fail "rmmod with a connected peer" || return
	# Nothing of rpage's left on the device: counts back to a bare rxe0.
	expect_eq "$(rdma_resources)" "$RXE_BARE" "rxe0 resources after unload"
}

# pd, cq, qp, cm_id and mr counts of rxe0.
rdma_resources() {
	rdma resource show rxe0 | sed 's/^[0-9]*: rxe0: //'
}

test_unload_while_reconnecting() {
	rpage_load_qps || return
	"$RPAGECTL" peer add nobody addr 192.0.2.99 || fail "peer add" || return
	wait_until 30 peer_field_is nobody state reconnecting ||
		fail "unreachable peer not reconnecting" || return
	[ "$(peer_field nobody last_error)" != null ] || fail "no last error recorded" || return
	rpage_unload || fail "rmmod with a reconnecting peer" || return
	expect_eq "$(rdma_resources)" "$RXE_BARE" "rxe0 resources after unload"
}

rpage_load_qps() {
	modprobe ib_core && modprobe rdma_cm && insmod "$RPAGE_KO" qps_per_peer=2 connect_timeout_ms=2000
}

rxe_up || echo "rxe setup failed"
RXE_BARE=$(rdma_resources)
echo "# rxe0 without rpage: $RXE_BARE"
rpage_load_qps || echo "rpage load failed"

tap_begin conn-single
run_test connects_to_itself_over_loopback test_connects_to_itself
run_test peer_del_while_connected test_peer_del_while_connected
run_test endpoint_del_keeps_outbound_connections test_endpoint_del_keeps_connections
run_test peer_del_racing_its_connections_leaves_none test_peer_del_racing_its_connections
run_test rxe_removed_while_connected_then_reconnects test_device_removal_while_connected
run_test unload_while_connected test_unload_while_connected
run_test unload_while_reconnecting test_unload_while_reconnecting
tap_end

rpage_load_qps
RPAGE_TEST_DEVICE=rxe0 run_kselftest config "$SELFTESTS/rpage_config_test"
rpage_unload
