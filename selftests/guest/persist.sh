# SPDX-License-Identifier: GPL-2.0
#
# The configuration of both hosts of the pair, applied by rpage-setup
# (what rpage.service runs at boot) from a configuration directory,
# saved with rpagectl save, and applied again from what was saved after
# both modules were unloaded: the same peers connected, with the same
# node ids, the same pools and named mappings, and a save of the result
# the same as the first. Sourced by pair.sh; each host runs its half,
# with rpage.ko not loaded before or after.

CFG_DIR=/tmp/rpage-etc
CFG_SAVED=/tmp/rpage-etc-saved
CFG_POOL=7
CFG_LEN=4M
CFG_BYTES=$((4 << 20))
# B's node id is configured; A's is derived from the machine id (the two
# guests share one, from the host's root: only one of them may derive).
CFG_NODE_B=0x00000000000b0b0b
CFG_NODE_TOOL="python3 $RPAGE_REPO/selftests/rpage_node_tool.py"
CFG_BARRIERS="cfg-a-up cfg-b-mapped cfg-saved cfg-b-down cfg-a-up2 cfg-b-up2 cfg-done"

# cfg_setup DIR COMMAND: rpage-setup of DIR, this build's module and
# rpagectl, as the unit would run it.
cfg_setup() {
	PATH=$RPAGE_BUILD/user:$PATH \
		"$RPAGE_REPO/systemd/rpage-setup" -c "$1" -m "$RPAGE_KO" "$2"
}

# cfg_node_id: this host's node id, as rpage.ko has it (decimal).
cfg_node_id() {
	cat /sys/module/rpage/parameters/node_id
}

# cfg_save FILE: rpagectl save into FILE, or a failure.
cfg_save() {
	"$RPAGECTL" save > "$1" || fail "rpagectl save failed"
}

# cfg_same FIRST SECOND: the two saves are the same.
cfg_same() {
	if ! cmp -s "$1" "$2"; then
		diff "$1" "$2"
		fail "the configuration applied again from rpagectl save is not the one saved"
	fi
}

cfg_connected() {
	wait_until $((90 * RPAGE_SLOW)) peer_is "$PEER" connected ||
		{ "$RPAGECTL" peer show; fail "$PEER not connected"; }
}

test_config_survives_reload_a() {
	local id id2 peer_id peer_id2

	rm -rf "$CFG_DIR" "$CFG_SAVED"
	mkdir -p "$CFG_DIR" "$CFG_SAVED"
	cat > "$CFG_DIR/rpage.conf" <<-EOF
	# Host A: it exports pool $CFG_POOL to B alone.
	endpoint add $RPAGE_IP
	peer add "$PEER" addr $RPAGE_PEER_IP loss-timeout 30   # a comment
	pool create $CFG_POOL size $CFG_LEN writable peers $PEER
	pool create 8 size 1M
	EOF
	cfg_setup "$CFG_DIR" start || fail "rpage-setup start" || return
	id=$(cfg_node_id)
	expect_eq "$id" "$(( $(cfg_setup "$CFG_DIR" node-id) ))" \
		"node id loaded, the one derived from the machine id" || return
	[ "$id" != 0 ] || fail "node id 0" || return
	barrier cfg-a-up || return
	cfg_connected || return
	barrier cfg-b-mapped || return
	peer_id=$(peer_field "$PEER" node_id)
	cfg_save "$CFG_SAVED/first" || return
	cat "$CFG_SAVED/first"
	barrier cfg-saved || return
	barrier cfg-b-down || return
	cfg_setup "$CFG_DIR" stop || fail "rpage-setup stop" || return
	[ ! -d /sys/module/rpage ] || fail "rpage.ko still loaded" || return

	# Back from what was saved, alone.
	rm -f "$CFG_DIR/rpage.conf"
	cp "$CFG_SAVED/first" "$CFG_DIR/rpage.conf"
	cfg_setup "$CFG_DIR" start || fail "rpage-setup start, from the save" || return
	id2=$(cfg_node_id)
	expect_eq "$id2" "$id" "node id after the reload" || return
	barrier cfg-a-up2 || return
	cfg_connected || return
	barrier cfg-b-up2 || return
	peer_id2=$(peer_field "$PEER" node_id)
	expect_eq "$peer_id2" "$peer_id" "B's node id, as A sees it, after the reload" || return
	cfg_save "$CFG_SAVED/second" || return
	cfg_same "$CFG_SAVED/first" "$CFG_SAVED/second" || return
	barrier cfg-done || return
	cfg_setup "$CFG_DIR" stop || fail "rpage-setup stop at the end"
}

test_config_survives_reload_b() {
	local id peer_id peer_id2 node=/dev/rpage-map/cfg

	rm -rf "$CFG_DIR" "$CFG_SAVED"
	mkdir -p "$CFG_DIR" "$CFG_SAVED"
	echo "$CFG_NODE_B   # this host's" > "$CFG_DIR/node-id"
	cat > "$CFG_DIR/rpage.conf" <<-EOF
	endpoint add $RPAGE_IP

	peer add $PEER addr $RPAGE_PEER_IP
	map add cfg peer $PEER pool $CFG_POOL owner nobody group nogroup mode 0640 readahead
	EOF
	# A's pool must be there before B maps it.
	barrier cfg-a-up || return
	cfg_setup "$CFG_DIR" start || fail "rpage-setup start" || return
	id=$(cfg_node_id)
	expect_eq "$id" "$(( CFG_NODE_B ))" "node id from node-id" || return
	cfg_connected || return
	wait_until 10 test -c "$node" || fail "no $node" || return
	peer_id=$(peer_field "$PEER" node_id)
	# The mapping works: a pattern written through it and evicted is in
	# A's pool.
	head -c "$CFG_BYTES" /dev/urandom > /tmp/cfg.pattern
	$CFG_NODE_TOOL load "$node" 0 < /tmp/cfg.pattern || fail "write through the mapping" || return
	"$RPAGECTL" map evict cfg || fail "map evict" || return
	"$RPAGECTL" read "$PEER" "$CFG_POOL" 0 "$CFG_LEN" file /tmp/cfg.read ||
		fail "read of A's pool" || return
	cmp /tmp/cfg.pattern /tmp/cfg.read || fail "A's pool does not hold what B wrote" || return
	"$RPAGECTL" -j map show cfg | jq -e '.[0].readahead == true and .[0].depends == true and
		.[0].peer == "'"$PEER"'" and .[0].mode == "0640"' ||
		fail "map show of the mapping: $("$RPAGECTL" -j map show cfg)" || return
	barrier cfg-b-mapped || return
	cfg_save "$CFG_SAVED/first" || return
	cat "$CFG_SAVED/first"
	grep -qx "map add cfg peer $PEER pool $CFG_POOL offset 0 length $CFG_LEN owner nobody group nogroup mode 0640 readahead" \
		"$CFG_SAVED/first" || fail "the mapping is not saved as it was made" || return
	barrier cfg-saved || return
	cfg_setup "$CFG_DIR" stop || fail "rpage-setup stop" || return
	[ ! -d /sys/module/rpage ] || fail "rpage.ko still loaded" || return
	barrier cfg-b-down || return

	barrier cfg-a-up2 || return
	rm -f "$CFG_DIR/rpage.conf"
	cp "$CFG_SAVED/first" "$CFG_DIR/rpage.conf"
	cfg_setup "$CFG_DIR" start || fail "rpage-setup start, from the save" || return
	expect_eq "$(cfg_node_id)" "$id" "node id after the reload" || return
	cfg_connected || return
	wait_until 10 test -c "$node" || fail "no $node after the reload" || return
	peer_id2=$(peer_field "$PEER" node_id)
	expect_eq "$peer_id2" "$peer_id" "A's node id, as B sees it, after the reload" || return
	expect_eq "$(stat -c '%U %G %a' "$node")" "nobody nogroup 640" "the node's owner, group and mode" || return
	# A's pool was made again, of zeros: so is the mapping.
	$CFG_NODE_TOOL dump "$node" 0 "$CFG_BYTES" | cmp -n "$CFG_BYTES" - /dev/zero ||
		fail "the mapping made again does not read A's new pool" || return
	cfg_save "$CFG_SAVED/second" || return
	cfg_same "$CFG_SAVED/first" "$CFG_SAVED/second" || return
	barrier cfg-b-up2 || return
	barrier cfg-done || return
	cfg_setup "$CFG_DIR" stop || fail "rpage-setup stop at the end"
}

# After the test, pass or fail: rpage.ko unloaded, for the tests after it,
# which load it their own way.
cfg_cleanup() {
	if [ -d /sys/module/rpage ]; then
		rmmod rpage || echo "# config test: rpage.ko could not be unloaded"
	fi
}
