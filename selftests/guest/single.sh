# SPDX-License-Identifier: GPL-2.0
#
# The one-guest job: rpage.ko against a real ib_core and an rxe device
# that talks to itself (loopback).
. "$RPAGE_REPO/selftests/guest/lib.sh"

want_version=$(cat "$RPAGE_REPO/VERSION")

test_load_handshake_unload() {
	rpage_load || fail "insmod rpage.ko" || return
	[ -c /dev/rpage ] || fail "/dev/rpage missing after load" || return
	expect_eq "$(cat /sys/module/rpage/version)" "$want_version" "module version" || return
	"$RPAGECTL" version || fail "rpagectl version" || return
	"$RPAGECTL" -j version | jq -e ".module.api == 1 and .module.version == \"$want_version\"" ||
		fail "rpagectl -j version" || return
	rpage_unload || fail "rmmod rpage" || return
	[ ! -e /dev/rpage ] || fail "/dev/rpage left after unload" || return
	! "$RPAGECTL" version || fail "rpagectl version succeeded without the module" || return
	# The library's version all the same, and no module.
	"$RPAGECTL" -j version > /tmp/version.json
	expect_eq "$?" 1 "rpagectl -j version's status without the module" || return
	jq -e ".library.version == \"$want_version\" and .module == null" < /tmp/version.json ||
		fail "rpagectl -j version without the module: $(cat /tmp/version.json)"
}

test_rpagectl_reports_errors() {
	local msg
	msg=$("$RPAGECTL" device show 2>&1)
	[ $? -eq 1 ] || fail "device show without module: want exit 1" || return
	echo "$msg" | grep -q "is rpage.ko loaded" || fail "no hint in: $msg" || return
	"$RPAGECTL" frobnicate > /dev/null 2>&1
	[ $? -eq 2 ] || fail "unknown object: want exit 2" || return
	"$RPAGECTL" device frob > /dev/null 2>&1
	[ $? -eq 2 ] || fail "unknown command: want exit 2" || return
	# A batch names the line of its failure, and stops there unless -f;
	# without the module every command fails.
	printf '# no module\n\ndevice show\nversion\n' > /tmp/batch
	msg=$("$RPAGECTL" -b /tmp/batch 2>&1)
	expect_eq "$?" 1 "batch status" || return
	echo "$msg" | grep -q '^rpagectl: /tmp/batch:3: /dev/rpage: no such device' ||
		fail "no FILE:LINE in: $msg" || return
	! echo "$msg" | grep -q ':4:' || fail "the batch went on past its failure: $msg" || return
	msg=$("$RPAGECTL" -f -b /tmp/batch 2>&1)
	expect_eq "$?" 1 "batch -f status" || return
	echo "$msg" | grep -q '/tmp/batch:4: ' && echo "$msg" | grep -q '2 of its commands failed' ||
		fail "-f did not go on, or not say how many failed: $msg" || return
	msg=$(printf 'device "show\n' | "$RPAGECTL" -b - 2>&1)
	expect_eq "$?" 2 "batch with an open quote" || return
	echo "$msg" | grep -q '(stdin):1: a quote is not closed' || fail "no open quote in: $msg" || return
	# Abbreviations as ip(8) takes them: the first command, in each
	# object's order, that a word begins ("peer s" is show, "p" peer),
	# and the other objects' verbs; a usage error points at its
	# object's help.
	msg=$(printf 'p s\npeer se x\npool add\npool del\npool create 1 length 0\n' |
		"$RPAGECTL" -f -b - 2>&1)
	for want in "(stdin):1: /dev/rpage: no such device" \
		"(stdin):2: peer set x: nothing to set" \
		"(stdin):3: pool create: missing ID (try 'rpagectl pool help')" \
		"(stdin):4: pool destroy: missing ID (try 'rpagectl pool help')" \
		"(stdin):5: pool create 1: size '0' is not a non-zero multiple"; do
		echo "$msg" | grep -qF "$want" || fail "no '$want' in: $msg" || return
	done
}

test_device_attached() {
	rpage_devices | grep -qx rxe0 || fail "rxe0 not listed"
	"$RPAGECTL" device show
}

test_rxe_removed_and_readded() {
	rpage_devices | grep -qx rxe0 || fail "rxe0 not listed before" || return
	rdma link delete rxe0 || fail "rdma link delete" || return
	! rpage_devices | grep -qx rxe0 || fail "rxe0 still listed after delete" || return
	dmesg | grep -q "rxe0: rpage detached" || fail "no detach message" || return
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add" || return
	rpage_devices | grep -qx rxe0 || fail "rxe0 not listed after re-add"
}

test_rxe_driver_unloaded() {
	rmmod rdma_rxe || fail "rmmod rdma_rxe (rpage must not pin it)" || return
	[ -z "$(rpage_devices)" ] || fail "devices listed after rdma_rxe unload" || return
	rxe_up || fail "rxe back up" || return
	rpage_devices | grep -qx rxe0 || fail "rxe0 not listed after reload"
}

# Module parameters out of range are refused, at load and at run time.
test_bad_parameters_refused() {
	local p
	for p in io_timeout_ms=0 io_timeout_ms=4000000000 connect_timeout_ms=0 \
		 reconnect_delay_ms=0 qps_per_peer=1 qps_per_peer=17 heartbeat_ms=600001 \
		 ack_timeout=32 loss_timeout_ms=86400001; do
		if insmod "$RPAGE_KO" "$p" 2> /dev/null; then
			rmmod rpage
			fail "insmod with $p succeeded"
			return
		fi
		dmesg | tail -n 5 | grep -q "out of range" ||
			fail "no reason logged for $p" || return
	done
	rpage_load || fail "insmod with defaults" || return
	! echo 0 > /sys/module/rpage/parameters/io_timeout_ms 2> /dev/null ||
		fail "io_timeout_ms=0 written at run time" || return
	expect_eq "$(cat /sys/module/rpage/parameters/io_timeout_ms)" 10000 "io_timeout_ms" || return
	echo 2000 > /sys/module/rpage/parameters/io_timeout_ms || fail "a good value refused" || return
	echo 10000 > /sys/module/rpage/parameters/io_timeout_ms
	rpage_unload
}

test_unload_with_device_present() {
	rpage_unload || fail "rmmod rpage with rxe0 present" || return
	rpage_load || fail "reload" || return
	rpage_devices | grep -qx rxe0 || fail "rxe0 not listed after reload"
}

rxe_up || echo "rxe setup failed"

tap_begin module
run_test rpagectl_reports_errors_without_module test_rpagectl_reports_errors
run_test load_handshake_unload test_load_handshake_unload
run_test bad_module_parameters_refused test_bad_parameters_refused
rpage_load
run_test device_attached test_device_attached
run_test rxe_link_removed_and_readded test_rxe_removed_and_readded
run_test rxe_driver_unloaded_and_reloaded test_rxe_driver_unloaded
run_test unload_with_device_present test_unload_with_device_present
tap_end

RPAGE_TEST_DEVICE=rxe0 run_kselftest api "$SELFTESTS/rpage_api_test"

tap_begin teardown
run_test final_unload rpage_unload
tap_end

. "$RPAGE_REPO/selftests/guest/conn-single.sh"
. "$RPAGE_REPO/selftests/guest/pool-single.sh"
. "$RPAGE_REPO/selftests/guest/named-single.sh"

exit 0
