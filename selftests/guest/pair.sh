# SPDX-License-Identifier: GPL-2.0
#
# The two-guest job, run on host A (node a) and host B (node b) at once:
# rdma-core peers across the guests' link, and rpage.ko on both.
. "$RPAGE_REPO/selftests/guest/lib.sh"

RPING_COUNT=20

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
			cat /tmp/rping.log | tail -n 3
			expect_eq "$got" "$RPING_COUNT" "pings sent"
			return
		fi
		sleep 1
	done
	cat /tmp/rping.log
	fail "rping to $RPAGE_PEER_IP failed $try times"
}

test_rpage_version() {
	"$RPAGECTL" -j version | jq -e '.module.api == 1' &&
	rpage_devices | grep -qx rxe0
}

tap_begin "pair-$RPAGE_NODE"
run_test rxe_up rxe_up
run_test rpage_load rpage_load
run_test "rpagectl_version_on_$RPAGE_NODE" test_rpage_version
if [ "$RPAGE_NODE" = a ]; then
	run_test rping_server_on_a test_rping_server
else
	run_test rping_client_on_b test_rping_client
fi
barrier done
run_test rpage_unload rpage_unload
tap_end
