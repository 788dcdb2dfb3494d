# SPDX-License-Identifier: GPL-2.0
#
# Named mappings in one guest: `rpagectl map add` makes a host-owned
# mapping of the peer self's pool with a device node,
# /dev/rpage-map/NAME, which processes open by path, as QEMU's
# memory-backend-file does. Stock QEMU (paused, its guest-physical
# memory read through its qtest socket) must see the pool's pattern;
# every process that maps the node shares one copy of each page; the
# node's owner, group and mode decide who may open it; a deleted mapping
# in use raises SIGBUS, never a hang.
. "$RPAGE_REPO/selftests/guest/lib.sh"

NODE_TOOL="python3 $RPAGE_REPO/selftests/rpage_node_tool.py"
NAMED_PATTERN=$SELFTESTS/rpage_pattern
NAMED_POOL=7
NAMED_SIZE=$((64 << 20))
NODE=/dev/rpage-map/vm
QEMU_PID=""

named_field() {
	"$RPAGECTL" -j map show | jq -r --arg n "$1" ".[] | select(.name == \$n) | .$2"
}

# Runs a command as the unprivileged user nobody.
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

test_named_setup() {
	modprobe ib_core && modprobe rdma_cm || return
	insmod "$RPAGE_KO" qps_per_peer=2 io_timeout_ms=5000 || fail "insmod" || return
	"$RPAGECTL" endpoint add "$RPAGE_IP" || return
	"$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	"$RPAGECTL" pool create "$NAMED_POOL" size 64M writable || return
	wait_until 30 remote_pool_listed self "$NAMED_POOL" || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self "$NAMED_POOL" 64M || fail "filling the pool"
}

# gup_map_add NAME: the named mapping NAME of the pool, and the test
# module that faults as KVM does (/dev/rpage_gup_test), both there.
gup_map_add() {
	insmod "$RPAGE_GUP_KO" || fail "insmod rpage_gup_test" || return
	"$RPAGECTL" map add "$1" peer self pool "$NAMED_POOL" || fail "map add" || return
	wait_until 10 test -c "/dev/rpage-map/$1" && wait_until 10 test -c /dev/rpage_gup_test ||
		fail "no /dev/rpage-map/$1 or /dev/rpage_gup_test"
}

# A fault taken as KVM takes one (get_user_pages with FOLL_NOWAIT, so
# FAULT_FLAG_RETRY_NOWAIT) does not wait for its READ: it comes back
# without the page and the READ goes on behind it; asked again, the page
# is there, with the pool's bytes. Read or written alike; without
# FOLL_NOWAIT the page comes at once (selftests/rpage_gup_fault.py).
# The faulting task posts the READ itself, no worker in between: every
# page's READ is posted (rpage_io_post) in the task's context. Over RDMA
# and over the loop (whose copy is done at once).
test_named_kvm_fault_does_not_wait() {
	local map at pid posts
	loop_peer_add lo-kvm "$NAMED_POOL" || return
	gup_map_add kvm || return
	"$RPAGECTL" map add kvm-lo peer lo-kvm pool "$NAMED_POOL" || fail "map add kvm-lo" || return
	wait_until 10 test -c /dev/rpage-map/kvm-lo || fail "no /dev/rpage-map/kvm-lo" || return
	for map in kvm kvm-lo; do
		for at in "$((40 << 20)) 16" "$((48 << 20)) 4 --write"; do
			# Other pages of the pool: the first touch of each.
			[ "$map" = kvm ] || at="$(( ${at%% *} - (32 << 20) )) ${at#* }"
			traced rpage_io_post bash -c 'echo $$ > /tmp/gup.pid && exec "$@"' gup \
				env RPAGE_SLOW="$RPAGE_SLOW" python3 "$RPAGE_REPO/selftests/rpage_gup_fault.py" \
				"/dev/rpage-map/$map" $at > /tmp/gup.out || fail "faults as KVM's on $map, at $at" || return
			"$NAMED_PATTERN" check-file "$NAMED_POOL" - --offset "${at%% *}" < /tmp/gup.out ||
				fail "the bytes of the pages got on $map, at $at" || return
			pid=$(cat /tmp/gup.pid)
			# The task's column is <...>-PID (trace_setup records no names).
			posts=$(awk -v t="-$pid" '/ rpage_io_post: /{ if (substr($1, length($1) - length(t) + 1) == t) n++ } END { print n + 0 }' \
				"$TRACEFS/trace")
			echo "# $map: $posts READs posted by the faulting task $pid (pages at $at)"
			set -- $at
			[ "$posts" -ge "$2" ] ||
				fail "$map: the faulting task posted $posts READs for its $2 FOLL_NOWAIT faults: a worker posted them" || return
		done
	done
	"$RPAGECTL" map del kvm && "$RPAGECTL" map del kvm-lo && "$RPAGECTL" peer del lo-kvm &&
		rmmod rpage_gup_test
}

# gup_pages_got N: rpage_gup_fault.py has reported N pages at least.
gup_pages_got() {
	[ "$(grep -c "bytes match" /tmp/gup.err)" -ge "$1" ]
}

# KVM's faults ride through the RDMA device going away: FOLL_NOWAIT
# faults on 256 pages, paused after 20 while rxe0 is deleted, going on
# while it is added again. A READ a fault posted that fails flushed
# leaves its folio out of the page cache, and the next fault reads it
# again; a fault that finds the peer reconnecting has a worker read its
# page once the peer is back. Every page arrives, with the pool's bytes,
# and the kernel log stays clean.
test_named_kvm_faults_ride_through_device_removal() {
	local node=/dev/rpage-map/kvm2 pid rc polls=0
	gup_map_add kvm2 || return
	rm -f /tmp/gup.ready /tmp/gup.go
	# A page waits out the outage: a minute of FOLL_NOWAIT polls at most.
	RPAGE_SLOW=$((RPAGE_SLOW * 6)) python3 "$RPAGE_REPO/selftests/rpage_gup_fault.py" \
		"$node" $((56 << 20)) 256 --pause-at 20 /tmp/gup.ready /tmp/gup.go \
		> /tmp/gup.out 2> /tmp/gup.err &
	pid=$!
	if wait_until 60 test -e /tmp/gup.ready && rdma link delete rxe0; then
		touch /tmp/gup.go
		sleep 1
		rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add"
	else
		fail "the faults never started, or rdma link delete failed"
		touch /tmp/gup.go
		rdma link show rxe0/1 > /dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0
	fi
	wait "$pid"
	rc=$?
	grep -v "bytes match" /tmp/gup.err
	polls=$(sed -n 's/.*got after \([0-9]*\) polls.*/\1/p' /tmp/gup.err | sort -n | tail -n 1)
	echo "# $(grep -c "bytes match" /tmp/gup.err) pages got, one after ${polls:-?} polls at most"
	# Gone whatever happened, so that no later test finds them.
	wait_until 60 peer_is self connected || fail "self not connected again"
	"$RPAGECTL" map del kvm2 && rmmod rpage_gup_test || fail "map del kvm2, rmmod"
	[ "$TEST_FAILED" -eq 0 ] || return 1
	expect_eq "$rc" 0 "faults as KVM's through the device's removal" || return
	[ "${polls:-0}" -ge 2 ] || fail "no fault waited for the device: the outage met none" || return
	"$NAMED_PATTERN" check-file "$NAMED_POOL" - --offset $((56 << 20)) < /tmp/gup.out ||
		fail "the bytes of the pages got"
}

# A mapping's pages are charged to the process whose memory they are.
# The named mapping is made from one memory cgroup (rpagectl's), mapped
# by a process in a second, and its pages faulted in by a third that
# reads the second's memory through /proc/PID/mem: get_user_pages of
# another process's memory, as KVM's asynchronous page faults and
# process_vm_readv take them. The second cgroup is charged with them,
# as file memory (page cache, on the file LRU lists); neither other
# cgroup is, as file or as kernel memory. A fourth faults 256 pages as
# a vCPU does (FOLL_NOWAIT, whose READ runs in a worker, then again):
# charged to it, not to the maker. The bytes are the pool's.
test_named_pages_charged_to_their_process() {
	local cg=/sys/fs/cgroup/rpage-charge g pid addr size=$((16 << 20)) v
	local small=$((512 << 10))
	memcg_up || fail "no memory cgroup" || return
	insmod "$RPAGE_GUP_KO" || fail "insmod rpage_gup_test" || return
	for g in maker holder reader vcpu; do
		mkdir -p "$cg-$g" || return
	done
	bash -c "echo \$\$ > $cg-maker/cgroup.procs && exec $RPAGECTL map add charge peer self pool $NAMED_POOL" ||
		fail "map add" || return
	wait_until 10 test -c /dev/rpage-map/charge || fail "no node" || return
	rm -f /tmp/mapped /tmp/go
	bash -c "echo \$\$ > $cg-holder/cgroup.procs && exec $NODE_TOOL map /dev/rpage-map/charge --ready /tmp/mapped --go /tmp/go" &
	pid=$!
	wait_until 60 test -s /tmp/mapped || fail "the holder never mapped it" || return
	addr=$(cat /tmp/mapped)
	bash -c "echo \$\$ > $cg-reader/cgroup.procs && exec dd if=/proc/$pid/mem bs=1M iflag=skip_bytes,fullblock skip=$addr count=$((size >> 20)) status=none" |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - --length "$size" ||
		fail "the bytes read through /proc/$pid/mem" || return
	bash -c "echo \$\$ > $cg-vcpu/cgroup.procs && RPAGE_SLOW=$RPAGE_SLOW exec python3 $RPAGE_REPO/selftests/rpage_gup_fault.py /dev/rpage-map/charge $((32 << 20)) 255" \
		2> /tmp/gup.err > /tmp/gup.out || { cat /tmp/gup.err; fail "faults as KVM's"; return; }
	"$NAMED_PATTERN" check-file "$NAMED_POOL" - --offset $((32 << 20)) --length $((256 << 12)) < /tmp/gup.out ||
		fail "the bytes of the pages got as KVM's" || return
	for g in maker holder reader vcpu; do
		echo "$g: $(grep -E '^(file|kernel|active_file|inactive_file|unevictable) ' "$cg-$g/memory.stat" | tr '\n' ' ')"
	done
	v=$(memcg_stat "$cg-holder" file) && [ "$v" -ge "$size" ] ||
		fail "the holder's cgroup has ${v:-?} bytes of file memory, under $size" || return
	v=$(( $(memcg_stat "$cg-holder" active_file) + $(memcg_stat "$cg-holder" inactive_file) )) &&
		[ "$v" -ge "$size" ] ||
		fail "the holder's cgroup has ${v:-?} bytes on its file LRU lists, under $size" || return
	v=$(memcg_stat "$cg-vcpu" file) && [ "$v" -ge $((1 << 20)) ] ||
		fail "the vCPU's cgroup has ${v:-?} bytes of file memory, under 1 MiB" || return
	for g in maker reader; do
		v=$(memcg_stat "$cg-$g" file) && [ "$v" -lt "$small" ] ||
			fail "the $g's cgroup was charged ${v:-?} bytes of file memory" || return
		v=$(memcg_stat "$cg-$g" kernel) && [ "$v" -lt "$small" ] ||
			fail "the $g's cgroup was charged ${v:-?} bytes of kernel memory" || return
	done
	touch /tmp/go
	wait "$pid" || fail "the holder" || return
	"$RPAGECTL" map del charge && rmmod rpage_gup_test || return
	for g in maker holder reader vcpu; do
		rmdir "$cg-$g" || return
	done
}

# Compaction can move a mapping's pages (movable page cache, where they
# were driver pages that nothing could move), and a page moved reads the
# same bytes: 16 MiB touched, all memory compacted, the frames the pages
# are in compared before and after (/proc/self/pagemap), every byte
# checked after. Compaction moves only the pages below where its two
# scanners meet, and where the allocator put the mapping's pages is
# chance: a round whose pages all lay above moves none (seen once on 6.1
# in CI). Up to three rounds, each with pages allocated afresh; pages
# that cannot move fail every round (a round returns 3 when it moved
# none).
named_compaction_round() {
	local moved rc size=$((16 << 20))
	"$RPAGECTL" map add compact peer self pool "$NAMED_POOL" || fail "map add" || return
	wait_until 10 test -c /dev/rpage-map/compact ||
		{ "$RPAGECTL" map del compact; fail "no node"; return; }
	$NODE_TOOL compact /dev/rpage-map/compact "$size" 2> /tmp/compact.err |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - --length "$size"
	rc=$?
	# Gone whatever happened, so that no later test finds it.
	"$RPAGECTL" map del compact || fail "map del compact" || return
	cat /tmp/compact.err
	expect_eq "$rc" 0 "the bytes after compaction" || return
	moved=$(sed -n 's/^moved \([0-9]*\) of .*/\1/p' /tmp/compact.err)
	[ -n "$moved" ] || fail "the tool said nothing of pages moved" || return
	[ "$moved" -gt 0 ] && return
	echo "# round $1: none of the mapping's pages was where compaction moves pages"
	return 3
}

test_named_compaction_moves_pages() {
	local round rc
	for round in 1 2 3; do
		named_compaction_round "$round"
		rc=$?
		# Anything but a round that moved nothing ends the test.
		[ "$rc" -eq 3 ] || return "$rc"
	done
	fail "compaction moved none of the mapping's pages in three rounds"
}

test_named_map_add_makes_a_node() {
	"$RPAGECTL" map add vm peer self pool "$NAMED_POOL" owner nobody group nogroup mode 0640 ||
		fail "map add" || return
	wait_until 10 test -c "$NODE" || fail "no $NODE" || return
	expect_eq "$(stat -c '%a %U %G' "$NODE")" "640 nobody nogroup" "node mode and owner" || return
	expect_eq "$($NODE_TOOL size "$NODE")" "$NAMED_SIZE" "size by lseek(SEEK_END)" || return
	"$RPAGECTL" map show
	expect_eq "$(named_field vm length)" "$NAMED_SIZE" "map show length" || return
	expect_eq "$(named_field vm pages_local)" 0 "pages local before any touch" || return
	expect_eq "$(named_field vm users)" 0 "users" || return
	# Bad input: a second with the name, a bad name, an unknown pool.
	! "$RPAGECTL" map add vm peer self pool "$NAMED_POOL" 2> /tmp/err ||
		fail "a second 'vm' was made" || return
	grep -q "exists" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	! "$RPAGECTL" map add ../x peer self pool "$NAMED_POOL" 2> /dev/null ||
		fail "a name with a slash was taken" || return
	! "$RPAGECTL" map add other peer self pool 99 2> /tmp/err ||
		fail "a mapping of an unknown pool was made" || return
	grep -q "does not announce" /tmp/err || fail "no clear message: $(cat /tmp/err)"
}

# json_keys WHAT EXPECTED CMD...: the keys of the JSON object jq's WHAT
# picks from CMD's output, in order, are EXPECTED (words), and the whole
# output parses.
json_keys() {
	local what=$1 want=$2 got
	shift 2
	got=$("$@" | jq_ordered -r "$what | keys_unsorted | join(\" \")") ||
		fail "$*: not JSON, or no $what" || return
	expect_eq "$got" "$want" "the keys of $* ($what)"
}

# Every object's -j output, with one of each kind there (a device, an
# endpoint, a peer, a pool, a remote pool, a named mapping): the keys
# rpagectl(8) documents, in its order.
test_json_outputs_have_their_documented_keys() {
	json_keys . "library module" "$RPAGECTL" -j version || return
	json_keys .module "version api features ioctls" "$RPAGECTL" -j version || return
	json_keys '.[0]' "index name node_guid ports" "$RPAGECTL" -j device show || return
	json_keys '.[0]' "addr port state transport accepted rejected_unknown rejected_version rejected_other" \
		"$RPAGECTL" -j endpoint show || return
	json_keys '.[0]' "name id addr port state transport qps qps_connected qps_inbound node_id proto connects rejects last_reject last_error loss_timeout_ms state_ms reconnects retried lost refused_msgs refused_pools refused_qps refused_access cause" \
		"$RPAGECTL" -j peer show || return
	json_keys '.[0]' "id length flags kind owner" "$RPAGECTL" -j pool show || return
	json_keys '.[0]' "peer peer_id id length flags" "$RPAGECTL" -j pool show remote || return
	json_keys '.[0]' "name id peer pool offset length pages_local pages users depends readahead pagesize node uid gid mode" \
		"$RPAGECTL" -j map show || return
	json_keys . "peers devices" "$RPAGECTL" -j stat show || return
	json_keys '.peers[0]' "name id reads writes read_bytes write_bytes errors connects rejects latency fault" \
		"$RPAGECTL" -j stat show || return
	json_keys '.devices[0]' "name index reads writes read_bytes write_bytes errors connects rejects latency" \
		"$RPAGECTL" -j stat show || return
	json_keys '.peers[0].latency' "p50_ns p90_ns p99_ns p999_ns samples histogram" "$RPAGECTL" -j stat show || return
	json_keys '.peers[0].fault' "faults minor_faults waits prefetched prefetch_hits evicted written sigbus vma_locked mmap_locked refetched huge_faults huge_fallbacks huge_prefetched latency" \
		"$RPAGECTL" -j stat show || return
	json_keys '.maps[0]' "name id peer fault" "$RPAGECTL" -j stat map || return
	# Types where text had words: booleans, and null where nothing is.
	"$RPAGECTL" -j map show vm | jq -e '.[0] | (.depends | type) == "boolean" and (.readahead | type) == "boolean"' ||
		fail "depends and readahead are not booleans"
}

# stat prometheus: Prometheus' own parser takes every line; the series
# say what -j says (the peer up, the mapping's pages, a histogram's
# +Inf bucket its count).
test_stat_prometheus_parses() {
	"$RPAGECTL" stat prometheus > /tmp/rpage.prom || fail "stat prometheus" || return
	/usr/bin/python3 - /tmp/rpage.prom "$((NAMED_SIZE / 4096))" <<-'EOF' || fail "stat prometheus: $(head -c 2000 /tmp/rpage.prom)"
	import sys
	from prometheus_client.parser import text_string_to_metric_families
	text = open(sys.argv[1]).read()
	fams = {f.name: f for f in text_string_to_metric_families(text)}
	def value(fam, sample, **labels):
	    for s in fams[fam].samples:
	        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
	            return s.value
	    raise SystemExit("no %s %s" % (sample, labels))
	want = {"rpage_peer_up", "rpage_peer_state", "rpage_peer_reads", "rpage_peer_reconnects",
	        "rpage_peer_transfer_latency_seconds", "rpage_peer_fault_faults",
	        "rpage_peer_fault_latency_seconds", "rpage_device_reads",
	        "rpage_device_transfer_latency_seconds", "rpage_map_fault_faults",
	        "rpage_map_fault_latency_seconds", "rpage_map_pages_local", "rpage_map_pages"}
	missing = want - set(fams)
	if missing:
	    raise SystemExit("missing families: %s" % sorted(missing))
	assert value("rpage_peer_up", "rpage_peer_up", peer="self") == 1
	assert value("rpage_peer_state", "rpage_peer_state", peer="self", state="connected") == 1
	assert value("rpage_map_pages", "rpage_map_pages", map="vm") == int(sys.argv[2])
	for fam in ("rpage_peer_transfer_latency_seconds", "rpage_peer_fault_latency_seconds"):
	    assert value(fam, fam + "_bucket", peer="self", le="+Inf") == value(fam, fam + "_count", peer="self")
	assert value("rpage_peer_reads", "rpage_peer_reads_total", peer="self") > 0
	print("%d families, %d samples" % (len(fams), sum(len(f.samples) for f in fams.values())))
	EOF
}

qemu_start() {
	local size=$1
	rm -f /tmp/qtest.sock
	qemu-system-x86_64 -S -accel tcg -qtest unix:/tmp/qtest.sock,server=on,wait=off \
		-qtest-log /dev/null -machine pc,memory-backend=m -m "$size" \
		-object "memory-backend-file,id=m,size=$size,mem-path=$NODE,share=on" \
		-display none -nodefaults > /tmp/qemu.log 2>&1 &
	QEMU_PID=$!
}

qemu_stop() {
	[ -n "$QEMU_PID" ] || return 0
	kill "$QEMU_PID" 2> /dev/null
	wait "$QEMU_PID" 2> /dev/null
	QEMU_PID=""
}

# QEMU's guest RAM is the pool: 64 random guest-physical pages from 1 MiB
# up (below, firmware shadows RAM) and a whole 4 MiB range read
# through qtest carry the pool's pattern at the same offsets.
test_named_qemu_guest_ram_is_the_pool() {
	local local_before local_after
	qemu_start 64M
	wait_until 60 test -S /tmp/qtest.sock || { cat /tmp/qemu.log; fail "QEMU did not start"; return; }
	local_before=$(named_field vm pages_local)
	$NODE_TOOL qtest-pages /tmp/qtest.sock "$NAMED_POOL" "$NAMED_SIZE" 64 ||
		fail "random guest-physical pages are not the pool's" || return
	$NODE_TOOL qtest /tmp/qtest.sock $((16 << 20)) $((4 << 20)) |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - --offset $((16 << 20)) ||
		fail "4 MiB at 16 MiB are not the pool's" || return
	local_after=$(named_field vm pages_local)
	echo "pages local: $local_before after QEMU started, $local_after after the reads"
	expect_eq "$(named_field vm users)" 2 "users (QEMU's file and its area)"
	# The 4 MiB (1024 pages) and the random pages came from the pool:
	# at least that many pages were faulted in, and not the whole pool.
	[ "$local_after" -ge $((local_before + 1024)) ] ||
		fail "only $((local_after - local_before)) pages faulted in" || return
	[ "$local_after" -lt $((NAMED_SIZE / 4096)) ] || fail "QEMU faulted in every page" || return
	qemu_stop
}

test_named_qemu_refuses_a_larger_size() {
	qemu_start 128M
	wait "$QEMU_PID"
	local rc=$?
	QEMU_PID=""
	cat /tmp/qemu.log
	[ "$rc" -ne 0 ] || fail "QEMU took 128M of a 64M node" || return
	grep -qi "size" /tmp/qemu.log || fail "QEMU said nothing about the size"
}

test_named_private_refused() {
	expect_eq "$($NODE_TOOL private "$NODE")" EINVAL "mmap MAP_PRIVATE"
}

# Only who the node allows: nobody may read a 0640 nobody node, and never
# /dev/rpage; after a mode of 0600 root, nobody may not.
test_named_node_permissions() {
	as_nobody $NODE_TOOL read "$NODE" 0 8 > /dev/null ||
		fail "nobody cannot read its own 0640 node" || return
	! as_nobody $NODE_TOOL size /dev/rpage 2> /dev/null ||
		fail "nobody opened /dev/rpage" || return
	"$RPAGECTL" map add root-only peer self pool "$NAMED_POOL" length 1M || return
	wait_until 10 test -c /dev/rpage-map/root-only || return
	expect_eq "$(stat -c '%a %U' /dev/rpage-map/root-only)" "600 root" "default mode" || return
	! as_nobody $NODE_TOOL size /dev/rpage-map/root-only 2> /dev/null ||
		fail "nobody opened a 0600 root node" || return
	"$RPAGECTL" map del root-only || fail "map del root-only" || return
	[ ! -e /dev/rpage-map/root-only ] || fail "node left after map del"
}

# One copy of each page: what one process writes, another reads. The
# pool is writable, and the flusher may write the page back while it
# holds the write: the bytes that were there are put back and the page
# evicted (written back first), so that the pool holds its pattern again
# for the tests after this one, which read the pool itself.
test_named_processes_share_pages() {
	local off=$((5 << 20)) got was
	was=$($NODE_TOOL read "$NODE" "$off" 16) || return
	$NODE_TOOL write "$NODE" "$off" 0123456789abcdeffedcba9876543210 || return
	got=$($NODE_TOOL read "$NODE" "$off" 16) || return
	$NODE_TOOL write "$NODE" "$off" "$was" || return
	"$RPAGECTL" map evict vm offset "$off" length 4K || fail "evicting the page written" || return
	expect_eq "$got" 0123456789abcdeffedcba9876543210 "bytes read by another process"
}

# A VMM's guest RAM file on tmpfs, exported as it is (no copy): the peer
# reads its bytes, through a named mapping too, and sees later writes
# to the file; a file on disk is refused, with the reason.
test_named_pool_of_a_tmpfs_file() {
	local got
	"$RPAGECTL" read self "$NAMED_POOL" 0 64M file /dev/shm/rpage-ram || return
	"$RPAGECTL" pool create 8 file /dev/shm/rpage-ram || fail "pool create file" || return
	"$RPAGECTL" pool show
	expect_eq "$("$RPAGECTL" -j pool show | jq -r '.[] | select(.id == 8) | .kind')" file "kind" || return
	wait_until 30 remote_pool_listed self 8 || return
	"$RPAGECTL" map add ram peer self pool 8 || return
	wait_until 10 test -c /dev/rpage-map/ram || return
	$NODE_TOOL dump /dev/rpage-map/ram 0 "$NAMED_SIZE" |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - || fail "the file's bytes through the pool" || return
	printf 'rpage-file-pool!' | dd of=/dev/shm/rpage-ram bs=16 seek=$((3 << 16)) conv=notrunc status=none
	"$RPAGECTL" read self 8 $((3 << 20)) 4K file /tmp/page || return
	expect_eq "$(head -c 16 /tmp/page)" "rpage-file-pool!" "a later write to the file, read by the peer" || return
	! "$RPAGECTL" pool create 9 file /etc/hostname 2> /tmp/err || fail "a file on disk was exported" || return
	grep -q "not a file on tmpfs" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	"$RPAGECTL" map del ram && "$RPAGECTL" pool destroy 8 && rm -f /dev/shm/rpage-ram
}

# A VMM's guest RAM on hugetlbfs (2 MiB pages): a range with holes is
# refused with the reason; preallocated, a pool from 1 MiB into the file
# (inside a huge page) reads exactly the file's bytes, a mark written in
# each huge page included, and a writable one's writes land in the file.
# Once the pools are destroyed and the file removed, every huge page is
# free again: none is left held.
test_named_pool_of_a_hugetlbfs_file() {
	local dir=/tmp/rpage-huge file i off free total
	file=$dir/ram
	mkdir -p "$dir" || return
	mountpoint -q "$dir" || mount -t hugetlbfs -o pagesize=2M none "$dir" ||
		fail "mount hugetlbfs" || return
	echo 16 > /proc/sys/vm/nr_hugepages
	total=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
	[ "$total" -ge 8 ] || fail "only $total huge pages" || return
	truncate -s 16M "$file" || return
	! "$RPAGECTL" pool create 10 file "$file" 2> /tmp/err ||
		fail "a file with holes was exported" || return
	grep -q "no pages yet" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	fallocate -l 16M "$file" || fail "fallocate" || return
	for i in 0 1 2 3 4 5 6 7; do
		off=$(( (i << 21) + i * 4096 + 100 ))
		$NODE_TOOL write "$file" "$off" "$(printf 'huge%02d-rpage-mark' "$i" | od -An -tx1 | tr -d ' \n')" || return
	done
	"$RPAGECTL" pool create 10 file "$file" offset 1M size 14M || fail "pool create hugetlbfs" || return
	"$RPAGECTL" pool create 11 file "$file" offset 8M size 4M writable ||
		fail "pool create hugetlbfs writable" || return
	wait_until 30 remote_pool_listed self 11 || fail "pool 11 not announced" || return
	"$RPAGECTL" read self 10 0 14M file /tmp/huge.read || fail "read pool 10" || return
	dd if="$file" bs=1M skip=1 count=14 status=none | cmp - /tmp/huge.read ||
		fail "pool 10 is not the file's bytes" || return
	expect_eq "$(grep -ao 'huge0[0-7]-rpage-mark' /tmp/huge.read | wc -l)" 7 "marks read (huge pages 1 to 7)" || return
	head -c 64K /dev/urandom > /tmp/huge.in
	"$RPAGECTL" write self 11 $(( (1 << 20) + 8192 )) 64K file /tmp/huge.in ||
		fail "write pool 11" || return
	dd if="$file" bs=4K skip=$(( (9 << 8) + 2 )) count=16 status=none | cmp - /tmp/huge.in ||
		fail "the write through pool 11 is not in the file" || return
	"$RPAGECTL" pool destroy 10 && "$RPAGECTL" pool destroy 11 || return
	rm -f "$file" /tmp/huge.read /tmp/huge.in
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	expect_eq "$free" "$total" "huge pages free after the pools and the file went" || return
	umount "$dir" && echo 0 > /proc/sys/vm/nr_hugepages
}

# In use: EBUSY; by force: the process holding it dies of SIGBUS on its
# next access, fetched page or not, and the node goes.
test_named_del_in_use() {
	local rc
	rm -f /tmp/held /tmp/go
	$NODE_TOOL hold "$NODE" $((9 << 20)) --ready /tmp/held --go /tmp/go &
	local pid=$!
	wait_until 60 test -e /tmp/held || fail "the holder never mapped it" || return
	! "$RPAGECTL" map del vm 2> /tmp/err || fail "deleted while in use" || return
	grep -q "in use" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	"$RPAGECTL" map del vm force || fail "map del force" || return
	[ ! -e "$NODE" ] || fail "node left after a forced delete" || return
	touch /tmp/go
	wait "$pid"
	rc=$?
	expect_eq "$rc" $((128 + 7)) "the holder's exit (SIGBUS)" || return
	expect_eq "$("$RPAGECTL" -j map show | jq length)" 0 "named mappings left" || return
	# An unknown name prints nothing, not an empty list, and fails.
	"$RPAGECTL" -j map show vm > /tmp/out 2> /tmp/err
	expect_eq "$?" 1 "map show of a deleted mapping" || return
	[ ! -s /tmp/out ] || fail "map show of a deleted mapping printed: $(cat /tmp/out)" || return
	grep -q "no such named mapping" /tmp/err || fail "no clear message: $(cat /tmp/err)"
}

# Eviction gives a named mapping's memory back: the page a process wrote
# reaches the pool, every page of the range leaves (local 0) and the next
# touch reads it again; a range past the mapping and an unknown name are
# refused with the reason.
test_named_evict() {
	local pool=12 mark out
	mark=$(printf 'rpage-evict-mark' | od -An -tx1 | tr -d ' \n')
	"$RPAGECTL" pool create $pool size 4M writable || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self $pool 4M || fail "filling the pool" || return
	"$RPAGECTL" map add ev peer self pool $pool || return
	wait_until 10 test -c /dev/rpage-map/ev || return
	$NODE_TOOL dump /dev/rpage-map/ev 0 $((1 << 20)) |
		"$NAMED_PATTERN" check-file $pool - > /dev/null || fail "the first MiB" || return
	$NODE_TOOL write /dev/rpage-map/ev $((8192 + 100)) "$mark" || return
	expect_eq "$(named_field ev pages_local)" 256 "pages local before the eviction" || return
	out=$("$RPAGECTL" -j map evict ev) || fail "map evict" || return
	echo "$out"
	expect_eq "$(echo "$out" | jq .evicted)" 256 "pages evicted" || return
	expect_eq "$(echo "$out" | jq .written)" 1 "pages written back" || return
	expect_eq "$(named_field ev pages_local)" 0 "pages local after the eviction" || return
	# The mark is in the pool itself, and a touch reads it back from there.
	"$RPAGECTL" read self $pool 8192 4K file /tmp/page || return
	expect_eq "$(dd if=/tmp/page bs=1 skip=100 count=16 status=none)" rpage-evict-mark \
		"the written page in the pool" || return
	expect_eq "$($NODE_TOOL read /dev/rpage-map/ev $((8192 + 100)) 16)" "$mark" \
		"the written page touched again" || return
	$NODE_TOOL dump /dev/rpage-map/ev 0 8192 |
		"$NAMED_PATTERN" check-file $pool - > /dev/null || fail "the pages before it" || return
	expect_eq "$("$RPAGECTL" map evict ev offset 2M length 4K)" "ev evicted 0 written 0" \
		"evicting a page not here" || return
	! "$RPAGECTL" map evict ev offset 4M 2> /tmp/err || fail "an eviction past the end worked" || return
	grep -q "beyond the mapping" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	! "$RPAGECTL" map evict ev offset 2M length 4M 2> /tmp/err || fail "an eviction past the end worked" || return
	grep -q "beyond the mapping" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	! "$RPAGECTL" map evict nosuch 2> /tmp/err || fail "an unknown mapping was evicted" || return
	grep -q "no such named mapping" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	"$RPAGECTL" map del ev && "$RPAGECTL" pool destroy $pool
}

# huge_fault NAME FIELD: a fault counter of named mapping NAME.
huge_fault() {
	"$RPAGECTL" -j stat map "$1" | jq -er ".maps[0].fault.$2"
}

# A pagesize 2M mapping: a process's first touch of a 2 MiB region reads
# the region whole, into one folio its area maps with one PMD entry
# (smaps FilePmdMapped), the bytes the pool's. An area that starts inside
# a region has 4 KiB pages there (counted as fallbacks) and 2 MiB ones in
# the regions it holds whole. A store dirties a region whole, and
# eviction writes back every page of it (never a part: the pool holds
# the bytes after). A fault as KVM takes one (FOLL_NOWAIT) has the region
# read whole in the background.
test_named_huge_pages() {
	local pool=16 node=/dev/rpage-map/huge out v
	"$RPAGECTL" pool create $pool size 16M writable || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self $pool 16M || fail "filling the pool" || return
	! "$RPAGECTL" map add huge peer self pool $pool offset 4K pagesize 2M 2> /tmp/err ||
		fail "a 2M mapping at an offset not 2 MiB aligned was made" || return
	! "$RPAGECTL" map add huge peer self pool $pool pagesize 2M readahead 2> /dev/null ||
		fail "a 2M mapping with read-ahead was made" || return
	"$RPAGECTL" map add huge peer self pool $pool pagesize 2M || fail "map add pagesize 2M" || return
	wait_until 10 test -c $node || fail "no $node" || return
	expect_eq "$(named_field huge pagesize)" 2M "map show pagesize" || return
	"$RPAGECTL" save | grep "^map add huge .* pagesize 2M" || fail "save without pagesize 2M" || return

	# One touch in each of four regions: each region one RDMA READ into
	# one scatter/gather entry, its 2 MiB folio.
	traced rpage_io_done $NODE_TOOL touch $node 0 $((8 << 20)) 0 $(((2 << 20) + 28672)) \
		$(((4 << 20) + 12345)) $((6 << 20)) 2> /tmp/huge.err > /tmp/huge.bytes ||
		fail "touching four regions: $(cat /tmp/huge.err)" || return
	"$NAMED_PATTERN" check-file $pool /tmp/huge.bytes --length 8M ||
		fail "the bytes of 8 MiB in four 2 MiB regions" || return
	cat /tmp/huge.err
	grep -m 1 rpage_io_done "$TRACEFS/trace"
	expect_eq "$(grep -c ' READ pages=512 status=0 ' "$TRACEFS/trace")" 4 "READs of a whole region" || return
	expect_eq "$(grep -c ' READ ' "$TRACEFS/trace")" 4 "READs" || return
	expect_eq "$(sed -n 's/^aligned //p' /tmp/huge.err)" yes "the area's address, modulo 2 MiB" || return
	expect_eq "$(sed -n 's/^FilePmdMapped //p' /tmp/huge.err)" 8192 "kB mapped by PMD" || return
	"$RPAGECTL" stat map huge
	expect_eq "$(huge_fault huge huge_faults)" 4 "2 MiB faults" || return
	expect_eq "$(huge_fault huge huge_fallbacks)" 0 "fallbacks" || return
	expect_eq "$(huge_fault huge faults)" 4 "faults" || return
	expect_eq "$(named_field huge pages_local)" 2048 "pages here" || return

	# An area from 8 MiB + 4 KiB: region 4 is 4 KiB, region 5 2 MiB.
	$NODE_TOOL touch $node $(((8 << 20) + 4096)) $((4 << 20)) 0 $(((2 << 20) - 4096)) \
		2> /tmp/huge.err | "$NAMED_PATTERN" check-file $pool - --offset $(((8 << 20) + 4096)) \
		--length 4M || fail "the bytes of an area that starts inside a region: $(cat /tmp/huge.err)" || return
	cat /tmp/huge.err
	expect_eq "$(sed -n 's/^FilePmdMapped //p' /tmp/huge.err)" 2048 "kB mapped by PMD" || return
	expect_eq "$(huge_fault huge huge_faults)" 5 "2 MiB faults" || return
	v=$(huge_fault huge huge_fallbacks)
	[ "$v" -ge 1 ] || fail "no fallback counted for a region the area does not hold" || return

	# Stores: 2 MiB of 0xa5 into region 7 (a write fault reads it whole),
	# one byte into region 0 (a clean huge page dirtied): both written
	# back whole.
	head -c 2M /dev/zero | tr '\0' '\245' > /tmp/huge.a5
	$NODE_TOOL load $node $((14 << 20)) < /tmp/huge.a5 || fail "store 2 MiB" || return
	$NODE_TOOL write $node 100 a5 || fail "store a byte" || return
	out=$("$RPAGECTL" -j map evict huge) || fail "map evict" || return
	echo "$out"
	# By the eviction, or by the flusher before it (a slow kernel's):
	# the mapping's counter has both.
	expect_eq "$(huge_fault huge written)" 1024 "pages written back: two whole regions" || return
	expect_eq "$(named_field huge pages_local)" 0 "pages here after the eviction" || return
	"$RPAGECTL" read self $pool 14M 2M file /tmp/huge.pool || return
	cmp /tmp/huge.a5 /tmp/huge.pool || fail "the pool after the eviction: not the 2 MiB stored" || return
	"$RPAGECTL" read self $pool 0 2M file /tmp/huge.pool || return
	expect_eq "$(od -An -tx1 -j 100 -N 1 /tmp/huge.pool | tr -d ' ')" a5 "the byte stored" || return
	dd if=/tmp/huge.pool bs=4096 skip=1 status=none |
		"$NAMED_PATTERN" check-file $pool - --offset 4096 --length $(((2 << 20) - 4096)) ||
		fail "the rest of region 0 in the pool" || return

	# A fault as KVM's: FOLL_NOWAIT first, the region read in the background.
	insmod "$RPAGE_GUP_KO" || fail "insmod rpage_gup_test" || return
	wait_until 10 test -c /dev/rpage_gup_test || fail "no /dev/rpage_gup_test" || return
	RPAGE_SLOW=$RPAGE_SLOW python3 "$RPAGE_REPO/selftests/rpage_gup_fault.py" $node $((12 << 20)) 1 \
		> /tmp/gup.out || fail "a fault as KVM's on a 2 MiB region" || return
	"$NAMED_PATTERN" check-file $pool - --offset $((12 << 20)) < /tmp/gup.out ||
		fail "the bytes KVM's fault got" || return
	# Regions 0-3, 5, 7 (the stores) and 6.
	expect_eq "$(huge_fault huge huge_faults)" 7 "2 MiB faults" || return
	rmmod rpage_gup_test
	"$RPAGECTL" map del huge && "$RPAGECTL" pool destroy $pool
}

# A pull of a pagesize 2M mapping reads each region none of whose pages
# is here whole, into one folio that the faults after map with one PMD
# entry: a VM pulled onto it keeps its huge pages. A region with a 4 KiB
# page here already is read 4 KiB at a time (a fallback), and so is the
# tail past the last whole region. Every byte the pool's.
test_named_huge_pull() {
	local pool=17 node=/dev/rpage-map/hpull pages=$(((9 << 20) / 4096))
	"$RPAGECTL" pool create $pool size 9M writable || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self $pool 9M || fail "filling the pool" || return
	"$RPAGECTL" map add hpull peer self pool $pool pagesize 2M || fail "map add pagesize 2M" || return
	wait_until 10 test -c $node || fail "no $node" || return
	# One 4 KiB page of region 1, by an area of 4 KiB (a fallback).
	$NODE_TOOL touch $node $(((2 << 20) + 4096)) 4096 0 2> /dev/null |
		"$NAMED_PATTERN" check-file $pool - --offset $(((2 << 20) + 4096)) --length 4096 ||
		fail "the page touched first" || return
	expect_eq "$(huge_fault hpull huge_fallbacks)" 1 "fallbacks before the pull" || return

	"$RPAGECTL" -j map pull hpull wait > /tmp/hpull.json || fail "map pull" || return
	cat /tmp/hpull.json
	jq -e ".queued == $((pages - 1)) and .failed == 0 and .pages_local == $pages" \
		< /tmp/hpull.json || fail "map pull's summary" || return
	"$RPAGECTL" stat map hpull
	expect_eq "$(huge_fault hpull huge_prefetched)" 3 "regions pulled whole (0, 2, 3)" || return
	expect_eq "$(huge_fault hpull huge_fallbacks)" 2 "fallbacks: the first touch and region 1's pull" || return
	expect_eq "$(huge_fault hpull prefetched)" $((pages - 1)) "pages pulled" || return
	# By cause: the first touch's area is unaligned, the pull found 4 KiB here.
	"$RPAGECTL" -j stat map hpull > /tmp/hpull.stat || fail "stat map" || return
	json_keys '.maps[0].fallbacks' "tail disabled unaligned pte_table small_cached nomem" \
		cat /tmp/hpull.stat || return
	jq -e '.maps[0].fallbacks | .unaligned == 1 and .small_cached == 1 and
		([.[]] | add) == 2' < /tmp/hpull.stat ||
		fail "fallbacks by cause: $(cat /tmp/hpull.stat)" || return
	"$RPAGECTL" stat map hpull | grep -x '    fallbacks tail 0 disabled 0 unaligned 1 pte_table 0 small_cached 1 nomem 0' ||
		fail "the text fallbacks line" || return
	"$RPAGECTL" stat prometheus | grep -x 'rpage_map_huge_fallbacks_total{map="hpull",cause="small_cached"} 1' ||
		fail "the Prometheus series of the fallbacks" || return

	# The faults after: a PMD for each region pulled whole, no READ.
	$NODE_TOOL touch $node 0 $((9 << 20)) 0 $((2 << 20)) $((4 << 20)) $((6 << 20)) $((8 << 20)) \
		2> /tmp/hpull.err | "$NAMED_PATTERN" check-file $pool - --length 9M ||
		fail "the bytes of the pulled mapping: $(cat /tmp/hpull.err)" || return
	cat /tmp/hpull.err
	expect_eq "$(sed -n 's/^FilePmdMapped //p' /tmp/hpull.err)" 6144 "kB mapped by PMD" || return
	expect_eq "$(huge_fault hpull faults)" 1 "faults that read (the first touch only)" || return
	expect_eq "$(huge_fault hpull huge_faults)" 0 "2 MiB faults" || return
	"$RPAGECTL" map del hpull && "$RPAGECTL" pool destroy $pool
}

# Fragmented memory (a hog takes 4 KiB pages until no free 2 MiB block
# is left, or only those under the allocator's reserve, then frees every
# other page): first touches of the 32 regions of a pagesize 2M
# mapping find no 2 MiB folio (allocated without reclaim or compaction,
# as THP faults are) and read 4 KiB instead, each counted as a fallback
# for want of memory (nomem); every byte right. The
# kernel's proactive compaction is off meanwhile, so that the holes stay.
test_named_huge_fragmented() {
	local pool=18 node=/dev/rpage-map/hfrag pro rc=0 st
	"$RPAGECTL" pool create $pool size 64M writable || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self $pool 64M || fail "filling the pool" || return
	"$RPAGECTL" map add hfrag peer self pool $pool pagesize 2M || fail "map add pagesize 2M" || return
	wait_until 10 test -c $node || fail "no $node" || return
	pro=$(cat /proc/sys/vm/compaction_proactiveness)
	echo 0 > /proc/sys/vm/compaction_proactiveness
	sync
	echo 3 > /proc/sys/vm/drop_caches
	rm -f /tmp/frag.ready /tmp/frag.go
	$NODE_TOOL fragment /tmp/frag.ready /tmp/frag.go &
	if wait_until 600 test -e /tmp/frag.ready; then
		cat /tmp/frag.ready
		# shellcheck disable=SC2046
		$NODE_TOOL touch $node 0 $((64 << 20)) $(seq 0 $((2 << 20)) $((62 << 20))) \
			2> /tmp/hfrag.err > /tmp/hfrag.bytes || rc=1
	else
		rc=2
	fi
	touch /tmp/frag.go
	wait
	echo "$pro" > /proc/sys/vm/compaction_proactiveness
	[ "$rc" != 2 ] || fail "the hog did not fragment memory in 600 s" || return
	[ "$rc" = 0 ] || fail "touching 32 regions: $(cat /tmp/hfrag.err)" || return
	cat /tmp/hfrag.err
	"$NAMED_PATTERN" check-file $pool /tmp/hfrag.bytes --length 64M ||
		fail "the bytes of the 32 regions" || return
	"$RPAGECTL" stat map hfrag
	st=$("$RPAGECTL" -j stat map hfrag) || fail "stat map" || return
	# Each region's first touch: 2 MiB, or nomem. The rest of a region
	# read 4 KiB at a time falls back for its page table (pte_table).
	echo "$st" | jq -e '.maps[0] | .fallbacks.nomem >= 1 and
		.fault.huge_faults + .fallbacks.nomem == 32 and
		([.fallbacks | del(.nomem, .pte_table)[]] | add) == 0' > /dev/null ||
		fail "fallbacks for want of memory: $st" || return
	expect_eq "$(sed -n 's/^FilePmdMapped //p' /tmp/hfrag.err)" \
		$(( $(echo "$st" | jq '.maps[0].fault.huge_faults') * 2048 )) \
		"kB mapped by PMD: the regions that had a 2 MiB folio" || return
	"$RPAGECTL" map del hfrag && "$RPAGECTL" pool destroy $pool
}

# named_pulled_and_partial: maps the pool twice, as "pulled" (every page
# fetched) and "partial" (only its first MiB read).
named_pulled_and_partial() {
	"$RPAGECTL" map add pulled peer self pool "$NAMED_POOL" || return
	"$RPAGECTL" map add partial peer self pool "$NAMED_POOL" || return
	wait_until 10 test -c /dev/rpage-map/partial || return
	"$RPAGECTL" -j map pull pulled wait > /tmp/pull.json || fail "map pull" || return
	"$RPAGECTL" map show
	expect_eq "$(named_field pulled pages_local)" $((NAMED_SIZE / 4096)) "pages local after the pull" || return
	# Its summary, and the mapping's own counters: every page read by
	# the pull, none by a fault.
	jq -e ".name == \"pulled\" and .queued == $((NAMED_SIZE / 4096)) and .failed == 0 and
		.pages_local == $((NAMED_SIZE / 4096)) and .pages == $((NAMED_SIZE / 4096)) and .ms > 0" \
		< /tmp/pull.json || fail "map pull's summary: $(cat /tmp/pull.json)" || return
	"$RPAGECTL" stat map pulled
	"$RPAGECTL" -j stat map pulled |
		jq -e ".maps | length == 1 and .[0].name == \"pulled\" and .[0].peer == \"self\" and
			.[0].fault.prefetched == $((NAMED_SIZE / 4096)) and .[0].fault.faults == 0" ||
		fail "stat map pulled: $("$RPAGECTL" -j stat map pulled)" || return
	! "$RPAGECTL" stat map nosuch 2> /tmp/err || fail "stat of an unknown mapping worked" || return
	grep -q "no named mapping nosuch" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	expect_eq "$(named_field pulled depends)" false "depends on its peer" || return
	$NODE_TOOL dump /dev/rpage-map/partial 0 $((1 << 20)) |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - > /dev/null || fail "partial's first MiB"
}

# named_after_the_loss WHAT: once WHAT happened, "pulled" still reads
# right, "partial" keeps the MiB it fetched and raises SIGBUS elsewhere.
named_after_the_loss() {
	local rc
	$NODE_TOOL dump /dev/rpage-map/pulled 0 "$NAMED_SIZE" |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - ||
		fail "the pulled mapping after $1" || return
	$NODE_TOOL dump /dev/rpage-map/partial 0 $((1 << 20)) |
		"$NAMED_PATTERN" check-file "$NAMED_POOL" - > /dev/null ||
		fail "partial's fetched pages after $1" || return
	$NODE_TOOL dump /dev/rpage-map/partial $((32 << 20)) 4096 > /dev/null 2>&1
	rc=$?
	expect_eq "$rc" $((128 + 7)) "an unfetched page after $1 (SIGBUS)"
}

# A pulled mapping needs its peer no more: with every page here, the pool
# destroyed, all 64 MiB still read right. One not pulled keeps the pages
# it fetched, and an unfetched page raises SIGBUS.
test_named_pull_then_pool_destroyed() {
	named_pulled_and_partial || return
	"$RPAGECTL" pool destroy "$NAMED_POOL" || fail "pool destroy" || return
	named_after_the_loss "its pool was destroyed" || return
	"$RPAGECTL" map del pulled && "$RPAGECTL" map del partial
}

# Writes to the pulled mapping once its peer is gone have nowhere to go:
# writeback leaves their pages clean in the mapping, which keeps them,
# rather than dirty forever, which would hold every writer on the host to
# the dirty limits forever. With the limit at 4 MiB, all 64 MiB are
# written within two minutes (within seconds on a stock kernel; the
# writer hung before), and read back.
named_writes_without_a_peer() {
	local ratio bytes rc
	head -c "$NAMED_SIZE" /dev/urandom > /tmp/nopeer.bin || return
	ratio=$(cat /proc/sys/vm/dirty_ratio) bytes=$(cat /proc/sys/vm/dirty_bytes)
	echo $((4 << 20)) > /proc/sys/vm/dirty_bytes || return
	timeout 120 $NODE_TOOL load /dev/rpage-map/pulled 0 < /tmp/nopeer.bin
	rc=$?
	# Back as it was: one of the two is 0, and writing it would not do.
	if [ "$bytes" -ne 0 ]; then
		echo "$bytes" > /proc/sys/vm/dirty_bytes
	else
		echo "$ratio" > /proc/sys/vm/dirty_ratio
	fi
	expect_eq "$rc" 0 "64 MiB written to a mapping without its peer (124: the writer was held)" || return
	$NODE_TOOL dump /dev/rpage-map/pulled 0 "$NAMED_SIZE" | cmp - /tmp/nopeer.bin ||
		fail "the bytes written without a peer" || return
	rm -f /tmp/nopeer.bin
}

# Deleting the peer lets go of it: no mapping keeps a reference. The
# pulled one reads right without it and says it has no peer; the one not
# pulled keeps the pages it fetched, raises SIGBUS on the others and
# refuses a pull with a clear message.
test_named_pull_then_peer_deleted() {
	"$RPAGECTL" pool create "$NAMED_POOL" size 64M writable || return
	wait_until 30 remote_pool_listed self "$NAMED_POOL" || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self "$NAMED_POOL" 64M || fail "filling the pool" || return
	named_pulled_and_partial || return
	"$RPAGECTL" peer del self || fail "peer del" || return
	"$RPAGECTL" map show
	expect_eq "$(named_field pulled peer)" null "the pulled mapping's peer after peer del" || return
	expect_eq "$(named_field partial peer)" null "the partial mapping's peer after peer del" || return
	"$RPAGECTL" map show pulled | grep -q ' peer (deleted) ' || fail "map show's text has no (deleted) peer" || return
	expect_eq "$(named_field pulled depends)" false "the pulled mapping depends on its peer" || return
	named_after_the_loss "its peer was deleted" || return
	! "$RPAGECTL" map pull partial wait 2> /tmp/err || fail "a pull without a peer worked" || return
	grep -q "peer was deleted" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	# Nor may either give pages back: nobody could serve them again.
	! "$RPAGECTL" map evict partial 2> /tmp/err || fail "an eviction without a peer worked" || return
	grep -q "peer was deleted" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	! "$RPAGECTL" map evict pulled offset 0 length 4K 2> /tmp/err ||
		fail "an eviction of a pulled mapping without a peer worked" || return
	grep -q "peer was deleted" /tmp/err || fail "no clear message: $(cat /tmp/err)" || return
	expect_eq "$(named_field pulled pages_local)" $((NAMED_SIZE / 4096)) "pages local after the refused eviction" || return
	named_after_the_loss "a refused eviction" || return
	named_writes_without_a_peer || return
	"$RPAGECTL" map pull pulled wait > /tmp/pull.txt ||
		fail "a pull of a mapping with every page here" || return
	grep -Eq "^pulled queued 0 failed 0 local $((NAMED_SIZE / 4096))/$((NAMED_SIZE / 4096)) time [0-9.]+s rate [0-9.]+MiB/s$" \
		/tmp/pull.txt || fail "the summary of a pull of nothing: $(cat /tmp/pull.txt)" || return
	"$RPAGECTL" -j stat map | jq -e '.maps[] | select(.name == "pulled") | .peer == null' ||
		fail "a mapping's peer after peer del, in stat map: $("$RPAGECTL" -j stat map)" || return
	"$RPAGECTL" map del pulled && "$RPAGECTL" map del partial || return
	# The next test wants the peer back, and the pool gone.
	"$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	wait_until 60 peer_is self connected || fail "self not connected again" || return
	"$RPAGECTL" pool destroy "$NAMED_POOL"
}

# A configuration applied at boot adds a peer and maps its pool in the
# next line, before the peer has connected and announced anything:
# `map add` without a length waits for the peer, as with one, and maps
# to the pool's end (the length it looked up first was unknown then, and
# the mapping failed with "does not announce"). Here the peer cannot
# connect until its endpoint comes back, 2 s after the map add began;
# the mapping is the pool's last 2 MiB of 3, every byte the pool's.
test_named_map_add_before_the_peer_connects() {
	local pid rc early="" pool=18
	"$RPAGECTL" pool create $pool size 3M writable || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$NAMED_PATTERN" fill self $pool 3M || fail "filling the pool" || return
	"$RPAGECTL" read self $pool 1M 2M file /tmp/early.want || fail "read of the pool" || return
	"$RPAGECTL" peer del self && "$RPAGECTL" endpoint del "$RPAGE_IP" || return
	"$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	"$RPAGECTL" map add early peer self pool $pool offset 1M > /tmp/early.out 2>&1 &
	pid=$!
	sleep 2
	peer_is self connected && early="self connected without its endpoint"
	kill -0 "$pid" 2> /dev/null ||
		early="map add gave up before the peer connected: $(cat /tmp/early.out)"
	"$RPAGECTL" endpoint add "$RPAGE_IP" || return
	wait "$pid"
	rc=$?
	cat /tmp/early.out
	[ -z "$early" ] || fail "$early" || return
	expect_eq "$rc" 0 "exit status of the map add" || return
	wait_until 10 test -c /dev/rpage-map/early || fail "no /dev/rpage-map/early" || return
	expect_eq "$(named_field early length)" $((2 << 20)) "the mapping's length" || return
	$NODE_TOOL dump /dev/rpage-map/early 0 $((2 << 20)) | cmp - /tmp/early.want ||
		fail "the mapping's bytes are not the pool's" || return
	"$RPAGECTL" map del early && "$RPAGECTL" pool destroy $pool
}

# AppArmor for the libvirt test: securityfs, libvirt's directory of
# domain profiles and the local abstractions made writable (tmpfs over
# the read-only host root, their files copied), and the libvirtd
# profile loaded, which is how libvirt tells that AppArmor confines its
# domains (security_apparmor.c, use_apparmor(): virsh itself runs
# unconfined here, as it runs the embedded driver).
named_apparmor_up() {
	local d
	grep -qw apparmor /sys/kernel/security/lsm 2> /dev/null ||
		mount -t securityfs securityfs /sys/kernel/security || return
	grep -qw apparmor /sys/kernel/security/lsm ||
		fail "AppArmor is not enabled in this kernel: $(cat /sys/kernel/security/lsm)" || return
	command -v apparmor_parser > /dev/null ||
		fail "no apparmor_parser on the host (scripts/install-deps.sh installs apparmor)" || return
	for d in /etc/apparmor.d/libvirt /etc/apparmor.d/local/abstractions; do
		mountpoint -q "$d" && continue
		rm -rf "/tmp/aa$d"
		mkdir -p "/tmp/aa$d"
		cp -a "$d/." "/tmp/aa$d/" && mount -t tmpfs tmpfs "$d" && cp -a "/tmp/aa$d/." "$d/" ||
			fail "making $d writable" || return
	done
	apparmor_parser -r -K /etc/apparmor.d/usr.sbin.libvirtd 2> /tmp/err ||
		fail "loading the libvirtd profile: $(cat /tmp/err)" || return
	grep -q '^libvirtd (enforce)$' /sys/kernel/security/apparmor/profiles ||
		fail "the libvirtd profile is not enforced" || return
}

# The admin guide's libvirt recipe, booted: libvirt's QEMU driver,
# embedded in virsh (no daemon; its state in a directory of the test's
# own), starts a domain whose guest RAM is the named mapping, given to
# QEMU by the guide's qemu:commandline element (taken from
# Documentation/admin-guide/rpage-libvirt.xml); QEMU runs as
# libvirt-qemu:kvm, the node made for them (the guide's step 1), in the
# private /dev libvirt makes from cgroup_device_acl with the node added
# (step 2), confined by the AppArmor profile libvirt makes for the
# domain (Debian's default security driver) with the guide's rule in the
# local abstraction (step 3; without it, AppArmor refuses QEMU the node
# and the domain does not start: "Permission denied", seen 2026-11-29 on
# both kernels; not run every time, as each start of a confined domain
# compiles its profile five times, half a minute here). The domain runs
# the demo's small guest on TCG, which fills its memory and verifies it
# twice; the mapping then holds its pages (each read from the pool by a
# fault first), and QEMU, in its domain's profile, maps the node. The
# guide's 64 MiB domain is given 16 here (its <memory> and its backend's
# size alike): filling and checking 60 MiB under two levels of TCG took
# half the test's minute, and the size changes nothing the test checks.
LV_MIB=16
test_named_libvirt_domain_boots() {
	local lv=/tmp/lv doc=$RPAGE_REPO/Documentation/admin-guide/rpage-libvirt.xml
	local rule label qemu="" rc=0 local_aa=/etc/apparmor.d/local/abstractions/libvirt-qemu
	command -v virsh > /dev/null ||
		fail "no virsh on the host (scripts/install-deps.sh installs libvirt)" || return
	rule=$(sed -n '/local\/abstractions\/libvirt-qemu/,/reload AppArmor/s/^ *\(\/dev\/rpage-map\/.* rw,\)$/\1/p' \
		"$RPAGE_REPO/Documentation/admin-guide/rpage.rst")
	[ "$rule" = "/dev/rpage-map/* rw," ] ||
		fail "the admin guide's AppArmor rule: '$rule'" || return
	named_apparmor_up || return
	grep -q "<memory unit='MiB'>64</memory>" "$doc" && grep -q ",size=64M," "$doc" ||
		fail "the guide's domain is not of 64 MiB: the test's change of its size is stale" || return
	"$RPAGECTL" pool create 21 size "${LV_MIB}M" writable || fail "pool create 21" || return
	wait_until 30 remote_pool_listed self 21 || fail "pool 21 not announced" || return
	"$RPAGECTL" map add lv1 peer self pool 21 owner libvirt-qemu group kvm mode 0660 ||
		fail "map add" || return
	wait_until 10 test -c /dev/rpage-map/lv1 || fail "no /dev/rpage-map/lv1" || return
	rm -rf "$lv"
	mkdir -p "$lv/root/etc"
	cat > "$lv/root/etc/qemu.conf" <<-EOF
	stdio_handler = "file"
	user = "libvirt-qemu"
	group = "kvm"
	security_driver = "apparmor"
	cgroup_device_acl = [
	    "/dev/null", "/dev/full", "/dev/zero",
	    "/dev/random", "/dev/urandom",
	    "/dev/ptmx", "/dev/kvm",
	    "/dev/rpage-map/lv1"
	]
	EOF
	# Step 3.
	{ grep -v '/dev/rpage-map/' "$local_aa" || true; echo "  $rule"; } > /tmp/aa-local &&
		cat /tmp/aa-local > "$local_aa" || return
	{
		echo "<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>"
		echo "  <name>lv1</name>"
		echo "  <memory unit='MiB'>$LV_MIB</memory>"
		echo "  <vcpu>1</vcpu>"
		echo "  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$SELFTESTS/rpage_mbguest</kernel></os>"
		echo "  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
		echo "    <serial type='file'><source path='$lv/serial.log'/></serial></devices>"
		sed -n '/<qemu:commandline>/,/<\/qemu:commandline>/p' "$doc" |
			sed "s/vm1/lv1/g; s/,size=64M,/,size=${LV_MIB}M,/"
		echo "</domain>"
	} > "$lv/lv1.xml"
	cat "$lv/lv1.xml"
	# libvirt looks the host's name up: the guests have no DNS to ask,
	# and glibc's default wait for it is a minute.
	RES_OPTIONS="timeout:1 attempts:1" virsh -c "qemu:///embed?root=$lv/root" create "$lv/lv1.xml" ||
		{ cat "$lv"/root/log/qemu/*.log 2> /dev/null; fail "virsh create"; return; }
	qemu=$(pgrep -f 'guest=lv1' | head -n 1)
	[ -n "$qemu" ] || fail "no QEMU for the domain" || return
	label=$(tr -d '\0' < "/proc/$qemu/attr/apparmor/current")
	echo "QEMU $qemu runs as $(ps -o user=,group= -p "$qemu") in $label"
	echo "$label" | grep -Eqx 'libvirt-[0-9a-f-]{36} \(enforce\)' ||
		{ rc=1; fail "QEMU is not confined by its domain's profile: $label"; }
	wait_until 600 eval 'grep -c " ok, checksum " "$lv/serial.log" | grep -qx "[2-9]"' ||
		{ cat "$lv/serial.log"; rc=1; fail "the domain did not verify its memory twice"; }
	cat "$lv/serial.log"
	if [ "$rc" = 0 ]; then
		grep -q ' /dev/rpage-map/lv1$' "/proc/$qemu/maps" ||
			{ rc=1; fail "QEMU does not map /dev/rpage-map/lv1"; }
		# The small guest fills all but its first 4 MiB (and a part
		# of its last).
		[ "$(named_field lv1 pages_local)" -ge $(( (LV_MIB - 5) << 8 )) ] ||
			{ rc=1; fail "the mapping holds $(named_field lv1 pages_local) pages, not the domain's $((LV_MIB - 5)) MiB"; }
		"$RPAGECTL" stat map lv1
	fi
	kill "$qemu"
	wait_until 30 eval '! kill -0 '"$qemu"' 2> /dev/null' || fail "QEMU did not end"
	"$RPAGECTL" map del lv1 && "$RPAGECTL" pool destroy 21 || fail "map del, pool destroy" || return
	rm -rf "$lv"
	return "$rc"
}

# rpagectl monitor, -j and text, while a named mapping is made, pulled
# and deleted, and peer self is deleted and added again: map_add (its
# name, id, pool and length), prefetch_end of that id with every page
# here, map_del; self from connected to deleted, then from none to
# connecting ("added") and on to connected; in that order. Without
# CAP_NET_ADMIN it is refused, clearly.
test_named_monitor() {
	local mon text id rc pool=22
	"$RPAGECTL" pool create $pool size 8M || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced" || return
	"$RPAGECTL" -j monitor > /tmp/mon.json 2> /tmp/mon.err &
	mon=$!
	"$RPAGECTL" monitor map > /tmp/mon.txt 2>&1 &
	text=$!
	sleep 1
	"$RPAGECTL" map add mon peer self pool $pool length 8M || fail "map add" || return
	id=$(named_field mon id)
	"$RPAGECTL" map pull mon wait > /dev/null || fail "map pull" || return
	"$RPAGECTL" map del mon || fail "map del" || return
	"$RPAGECTL" peer del self && "$RPAGECTL" peer add self addr "$RPAGE_IP" || return
	wait_until 60 peer_is self connected || fail "self not connected again" || return
	wait_until 30 remote_pool_listed self $pool || fail "pool not announced again" || return
	"$RPAGECTL" pool destroy $pool || return
	kill "$mon" "$text"
	wait "$mon" 2> /dev/null
	wait "$text" 2> /dev/null
	echo "monitor -j:"
	cat /tmp/mon.err /tmp/mon.json
	echo "monitor map:"
	cat /tmp/mon.txt
	jq -se --argjson id "$id" '
		def first(f): [.[] | select(f)][0];
		(first(.event == "map_add" and .map == "mon") | .map_id == $id and .peer == "self" and
			.length == 8388608 and .offset == 0) and
		(first(.event == "prefetch_end" and .map_id == $id) | .local == .map_pages and
			.map_pages == 2048 and .failed == 0 and .stopped == null) and
		([.[] | select(.event == "peer_state" and .peer == "self") | [.old_state, .state]] |
			. == [["connected", "deleted"], [null, "connecting"]] + .[2:] and
			.[-1][1] == "connected") and
		([.[] | .event] | index("map_add") < index("prefetch_end") and
			index("prefetch_end") < index("map_del") and
			index("map_del") < index("peer_state"))' < /tmp/mon.json > /dev/null ||
		fail "the events of the mapping and the peer, in order" || return
	grep -Eq "^[0-9:.]+ map_add map mon id $id peer self " /tmp/mon.txt &&
		! grep -q peer_state /tmp/mon.txt ||
		fail "monitor map's text: $(cat /tmp/mon.txt)" || return
	echo "monitor as nobody:"
	timeout 30 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$RPAGECTL" monitor < /dev/null > /tmp/out 2> /tmp/err
	rc=$?
	cat /tmp/out /tmp/err
	expect_eq "$rc" 1 "exit status of monitor without CAP_NET_ADMIN (124: it listened)" || return
	grep -q "CAP_NET_ADMIN" /tmp/err || fail "no clear message: $(cat /tmp/err)"
}

# named_hold PATH HOW: a process holding PATH, as coprocess NAMED_HOLD:
# HOW is "open" (open read-only), or "mapped" (a page of it mapped
# shared and read, the file closed). It says "held" once it does.
named_hold() {
	coproc NAMED_HOLD {
		python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
if sys.argv[2] == "mapped":
    m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    m[0]
print("held", flush=True)
sys.stdin.read()
' "$1" "$2"
	}
	local said=""
	read -r -t 30 -u "${NAMED_HOLD[0]}" said
	[ "$said" = held ]
}

# Ends named_hold's process (whatever became of it).
named_release() {
	local pid=${NAMED_HOLD_PID:-}
	[ -n "${NAMED_HOLD[1]:-}" ] && exec {NAMED_HOLD[1]}>&-
	[ -z "$pid" ] || wait "$pid"
}

# rmmod is refused ("in use", the module still there) while /dev/rpage
# is open, a named node is open read-only, or a page of one is mapped
# by a process that closed the node: each holds the module's code.
test_named_unload_refused_while_in_use() {
	local how path pool=17
	"$RPAGECTL" pool create $pool size 1M || return
	wait_until 30 remote_pool_listed self $pool || return
	"$RPAGECTL" map add held peer self pool $pool || return
	wait_until 10 test -c /dev/rpage-map/held || return
	for how in "/dev/rpage open" "/dev/rpage-map/held open" \
		   "/dev/rpage-map/held mapped"; do
		path=${how% *}
		named_hold $how || { named_release; fail "holding $how"; return; }
		! rmmod rpage 2> /tmp/err ||
			fail "rmmod with $how went through" || return
		grep -q "in use" /tmp/err || fail "rmmod said: $(cat /tmp/err)"
		rpage_loaded || fail "rpage unloaded with $how" || return
		named_release
		echo "rmmod with $path ${how#* }: $(cat /tmp/err)"
	done
	"$RPAGECTL" map del held && "$RPAGECTL" pool destroy $pool
}

test_named_unload_with_a_mapping() {
	"$RPAGECTL" pool create "$NAMED_POOL" size 1M || return
	wait_until 30 remote_pool_listed self "$NAMED_POOL" || return
	"$RPAGECTL" map add last peer self pool "$NAMED_POOL" || return
	wait_until 10 test -c /dev/rpage-map/last || return
	rpage_unload || fail "rmmod with a named mapping" || return
	[ ! -e /dev/rpage-map/last ] || fail "node left after unload"
}

tap_begin named
run_test named_setup test_named_setup
run_test named_kvm_fault_does_not_wait test_named_kvm_fault_does_not_wait
run_test named_kvm_faults_ride_through_device_removal test_named_kvm_faults_ride_through_device_removal
run_test named_pages_charged_to_their_process test_named_pages_charged_to_their_process
run_test named_compaction_moves_pages test_named_compaction_moves_pages
run_test named_map_add_makes_a_node_of_its_size_and_owner test_named_map_add_makes_a_node
run_test json_outputs_have_their_documented_keys test_json_outputs_have_their_documented_keys
run_test stat_prometheus_parses test_stat_prometheus_parses
run_test named_qemu_guest_ram_is_the_pool test_named_qemu_guest_ram_is_the_pool
run_test named_qemu_refuses_a_size_past_the_node test_named_qemu_refuses_a_larger_size
run_test named_map_private_refused test_named_private_refused
run_test named_node_owner_group_mode_decide test_named_node_permissions
run_test named_processes_share_one_copy test_named_processes_share_pages
run_test named_pool_of_a_tmpfs_file_is_read_in_place test_named_pool_of_a_tmpfs_file
run_test named_pool_of_a_hugetlbfs_file_is_read_in_place test_named_pool_of_a_hugetlbfs_file
run_test named_del_in_use_is_ebusy_force_sigbus test_named_del_in_use
run_test named_evict_writes_back_and_drops test_named_evict
run_test named_huge_pages_are_read_and_mapped_whole test_named_huge_pages
run_test named_huge_pull_keeps_huge_pages test_named_huge_pull
run_test named_huge_fragmented_falls_back test_named_huge_fragmented
run_test named_pull_then_pool_destroyed_reads_right test_named_pull_then_pool_destroyed
run_test named_pull_then_peer_deleted_lets_it_go test_named_pull_then_peer_deleted
run_test named_map_add_before_the_peer_connects test_named_map_add_before_the_peer_connects
run_test named_libvirt_domain_boots_on_a_mapping test_named_libvirt_domain_boots
run_test named_monitor_sees_mappings_pulls_and_peers test_named_monitor
run_test named_unload_refused_while_in_use test_named_unload_refused_while_in_use
run_test named_unload_with_a_mapping test_named_unload_with_a_mapping
tap_end
qemu_stop
rpage_loaded && rpage_unload
