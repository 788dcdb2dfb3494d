# SPDX-License-Identifier: GPL-2.0
#
# The benchmark job on each host: host A serves (an rpage pool, the
# userfaultfd baseline's server, the perftest servers); host B measures.
# First one run of every figure and baseline, in this order: perftest's
# bare RDMA READ (ib_read_lat, ib_read_bw), rpage (rpage-bench), then the
# userfaultfd handler over libibverbs and over TCP. Then ROUNDS rounds of
# the headline pairs, each figure next to its baseline in the same round
# and the order flipped every round (rpage first, then baseline first),
# so that the report's ratios are medians of per-round ratios, which a
# drift of the emulated wire over the run does not bias. B leaves JSON
# lines and latency samples in $RPAGE_OUT/bench/ (the rounds' records in
# rounds/N/) for the host to tabulate. B also measures its own pool
# through its loop peer "lo" (no wire) against a userfaultfd handler
# that copies each page from local memory, in the rounds too. Last, both
# hosts configure each other again over TCP, and B faults A's pool over
# it against the userfaultfd handler over TCP on the same link, once and
# in ROUNDS rounds of its own (recorded in the same rounds/N/).
. "$RPAGE_REPO/selftests/guest/lib.sh"

# Bytes each fault benchmark touches; iterations of the perftest runs
# (ib_read_bw with 4 KiB READs, as a fault issues them, and with 64 KiB
# READs, as rpage issues them for 16 adjacent pages, at most 16 in flight
# as on rpage's queue pairs).
SIZE=16M
LAT_ITERS=5000
BW_ITERS=20000
BW64K_ITERS=2000
# And 2 MiB READs, as a pagesize 2M mapping's faults and pull issue
# them: one at a time (a first touch), and four in flight (a pull reads
# four regions a chunk).
LAT2M_ITERS=200
BW2M_ITERS=200
BW2M_DEPTH=4
# The rounds: how many, the bytes their fault and prefetch figures
# touch, their perftest iterations.
ROUNDS=5
ROUND_FAULT_SIZE=4M
ROUND_PREFETCH_SIZE=16M
ROUND_LAT_ITERS=1000
ROUND_BW_ITERS=4000
ROUND_BW64K_ITERS=500
ROUND_HUGE_SIZE=16M
ROUND_LAT2M_ITERS=50
ROUND_BW2M_ITERS=50
PATTERN=$SELFTESTS/rpage_pattern
UFFD=$SELFTESTS/rpage_uffd_baseline
BENCH=$SELFTESTS/rpage-bench
OUT=$RPAGE_OUT/bench
PEER=$RPAGE_PEER_NODE

# perftest_server NAME COMMAND...: on A, runs a perftest server and
# tells B (barrier NAME-listening) once its rdma_cm id listens. perftest's
# client sometimes fails to connect over rxe (refused, or crashing in
# librdmacm), so B retries and A serves again after a failed exchange;
# both ends are bounded.
perftest_server() {
	local name=$1 pid
	shift
	( for _ in 1 2 3 4 5; do
		timeout 120 "$@" >> "/tmp/$name-server.log" 2>&1 && exit 0
	  done; exit 1 ) &
	pid=$!
	wait_until 30 sh -c "rdma resource show cm_id | grep -q 'state LISTEN.* comm $1'" ||
		echo "perftest $1: no listening cm_id seen; going on"
	barrier "$name-listening" || return
	wait "$pid" || { cat "/tmp/$name-server.log"; fail "$1 server"; }
}

# perftest_client NAME LOG COMMAND...: on B, once A's server NAME
# listens; the output in LOG, shown if every try failed.
perftest_client() {
	local name=$1 log=$2
	shift 2
	barrier "$name-listening" || return
	for _ in 1 2 3 4 5; do
		timeout 120 "$@" "$RPAGE_PEER_IP" > "$log" 2>&1 && return 0
		sleep 2
	done
	cat "$log"
	fail "$*"
}

# perftest_lat_record LOG [NAME SIZE]: ib_read_lat's summary line (usec)
# as the latency record NAME (ib_read_lat, of 4096-byte READs); the
# sample lines of -H (one per iteration, usec) as its samples file.
perftest_lat_record() {
	awk -v out="$OUT/samples/${2:-ib_read_lat}.txt" -v name="${2:-ib_read_lat}" \
		-v size="${3:-4096}" '
		{ gsub(/,/, " ") }
		/^ *[0-9]+ +[0-9.]+ *$/ && NF == 2 { printf "%d\n", $2 * 1000 > out; next }
		$1 == size && NF >= 9 {
			printf "{\"bench\":\"%s\",\"kind\":\"latency\",\"samples\":%d,\"min_ns\":%d,\"p50_ns\":%d,\"p90_ns\":null,\"p99_ns\":%d,\"p999_ns\":%d,\"max_ns\":%d}\n",
				name, $2, $3 * 1000, $5 * 1000, $8 * 1000, $9 * 1000, $4 * 1000
		}' "$1"
}

# perftest_bw_record LOG NAME SIZE: ib_read_bw's summary line (MB/sec,
# 2^20 bytes) as the throughput record NAME.
perftest_bw_record() {
	awk -v name="$2" -v size="$3" '$1 == size && NF >= 5 {
		printf "{\"bench\":\"%s\",\"kind\":\"throughput\",\"bytes\":%d,\"seconds\":null,\"mib_per_s\":%s,\"pages_per_s\":%.1f}\n",
			name, $2 * size, $4, $4 * 256
	}' "$1"
}

test_connect_peer() {
	"$RPAGECTL" endpoint add "$RPAGE_IP" || return
	"$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" || return
	wait_until 90 peer_is "$PEER" connected || fail "$PEER not connected"
}

serve_on_a() {
	rm -f /tmp/ready1 /tmp/until1 /tmp/uffd.ready /tmp/uffd.until
	"$PATTERN" export 1 "$SIZE" --ready /tmp/ready1 --until /tmp/until1 > /dev/null &
	"$UFFD" serve --size "$SIZE" --addr "$RPAGE_IP" --ready /tmp/uffd.ready \
		--until /tmp/uffd.until &
	wait_until 60 test -e /tmp/ready1 || fail "pool exporter not ready" || return
	wait_until 60 test -e /tmp/uffd.ready || fail "userfaultfd baseline server not ready" || return
	barrier servers-up || return
	perftest_server lat ib_read_lat -s 4096 -R -F -n "$LAT_ITERS" || return
	perftest_server bw ib_read_bw -s 4096 -R -F -n "$BW_ITERS" || return
	perftest_server bw64k ib_read_bw -s 65536 -o 16 -R -F -n "$BW64K_ITERS" || return
	perftest_server lat2m ib_read_lat -s 2097152 -R -F -n "$LAT2M_ITERS" || return
	perftest_server bw2m ib_read_bw -s 2097152 -o "$BW2M_DEPTH" -R -F -n "$BW2M_ITERS" || return
	local r
	for r in $(seq "$ROUNDS"); do
		perftest_server "lat$r" ib_read_lat -s 4096 -R -F -n "$ROUND_LAT_ITERS" || return
		perftest_server "bw$r" ib_read_bw -s 4096 -R -F -n "$ROUND_BW_ITERS" || return
		perftest_server "bw64k$r" ib_read_bw -s 65536 -o 16 -R -F \
			-n "$ROUND_BW64K_ITERS" || return
		perftest_server "lat2m$r" ib_read_lat -s 2097152 -R -F \
			-n "$ROUND_LAT2M_ITERS" || return
		perftest_server "bw2m$r" ib_read_bw -s 2097152 -o "$BW2M_DEPTH" -R -F \
			-n "$ROUND_BW2M_ITERS" || return
	done
	barrier measured || return
	# B reads over TCP next: A's peer b must be TCP's too.
	"$RPAGECTL" peer del "$PEER" &&
		"$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" transport tcp || return
	barrier a-on-tcp || return
	barrier tcp-measured || return
	touch /tmp/until1 /tmp/uffd.until
	wait
}

measure_on_b() {
	mkdir -p "$OUT/samples"
	barrier servers-up || return
	perftest_client lat "$OUT/ib_read_lat.log" ib_read_lat -s 4096 -R -F -H \
		-n "$LAT_ITERS" || return
	perftest_lat_record "$OUT/ib_read_lat.log" > "$OUT/perftest.jsonl"
	perftest_client bw "$OUT/ib_read_bw.log" ib_read_bw -s 4096 -R -F \
		-n "$BW_ITERS" || return
	perftest_bw_record "$OUT/ib_read_bw.log" ib_read_bw 4096 >> "$OUT/perftest.jsonl"
	perftest_client bw64k "$OUT/ib_read_bw_64k.log" ib_read_bw -s 65536 -o 16 \
		-R -F -n "$BW64K_ITERS" || return
	perftest_bw_record "$OUT/ib_read_bw_64k.log" ib_read_bw_64k 65536 >> "$OUT/perftest.jsonl"
	perftest_client lat2m "$OUT/ib_read_lat_2m.log" ib_read_lat -s 2097152 -R -F -H \
		-n "$LAT2M_ITERS" || return
	perftest_lat_record "$OUT/ib_read_lat_2m.log" ib_read_lat_2m 2097152 >> "$OUT/perftest.jsonl"
	perftest_client bw2m "$OUT/ib_read_bw_2m.log" ib_read_bw -s 2097152 -o "$BW2M_DEPTH" \
		-R -F -n "$BW2M_ITERS" || return
	perftest_bw_record "$OUT/ib_read_bw_2m.log" ib_read_bw_2m 2097152 >> "$OUT/perftest.jsonl"
	cat "$OUT/perftest.jsonl"

	"$BENCH" "$PEER" 1 --size "$SIZE" --samples-dir "$OUT/samples" > "$OUT/rpage.jsonl" ||
		fail "rpage-bench" || return
	cat "$OUT/rpage.jsonl"

	local run
	: > "$OUT/uffd.jsonl"
	# Random faults over TCP are measured once, with rpage's over TCP
	# (measure_tcp): one record a name, or the table and the plot could
	# show two runs.
	for run in "rdma random" "rdma seq" "tcp seq"; do
		set -- $run
		"$UFFD" fault --server "$RPAGE_PEER_IP" --transport "$1" \
			--size "$SIZE" --order "$2" --samples-dir "$OUT/samples" \
			>> "$OUT/uffd.jsonl" || fail "uffd baseline $run" || return
	done
	cat "$OUT/uffd.jsonl"
	loop_setup || return
	measure_loop "$OUT" "$SIZE" || return
	measure_rounds || return
	touch /tmp/until-loop
	"$RPAGECTL" stat peer "$PEER"
	profile_faults || return
	measure_tcp
}

# Over TCP: B's peer a configured again with transport tcp (A did the
# same with its peer b), then pool 1 faulted over it, one thread and
# four, against the userfaultfd handler over TCP, once and in rounds,
# the order flipped every round as in measure_rounds.
measure_tcp() {
	local r dir
	barrier a-on-tcp || return
	"$RPAGECTL" peer del "$PEER" &&
		"$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" transport tcp || return
	wait_until 90 peer_is "$PEER" connected || fail "$PEER not connected over tcp" || return
	wait_until 60 remote_pool_listed "$PEER" 1 || fail "pool 1 not listed over tcp" || return
	"$RPAGECTL" peer show "$PEER"
	tcp_rpage "$OUT" "$SIZE" && tcp_uffd "$OUT" "$SIZE" || return
	for r in $(seq "$ROUNDS"); do
		dir=$OUT/rounds/$r
		if [ $((r % 2)) -eq 1 ]; then
			tcp_rpage "$dir" "$ROUND_FAULT_SIZE" && tcp_uffd "$dir" "$ROUND_FAULT_SIZE" || return
		else
			tcp_uffd "$dir" "$ROUND_FAULT_SIZE" && tcp_rpage "$dir" "$ROUND_FAULT_SIZE" || return
		fi
	done
	"$RPAGECTL" stat peer "$PEER"
	barrier tcp-measured
}

tcp_rpage() {
	"$BENCH" "$PEER" 1 --size "$2" --only fault_random,fault_t4 --prefix tcp_ \
		>> "$1/rpage.jsonl" || fail "rpage-bench over tcp"
}

tcp_uffd() {
	local samples=()
	# The single run's samples, for the latency plot.
	[ "$1" = "$OUT" ] && samples=(--samples-dir "$OUT/samples")
	"$UFFD" fault --server "$RPAGE_PEER_IP" --transport tcp --size "$2" --order random \
		"${samples[@]}" >> "$1/uffd.jsonl" &&
		"$UFFD" fault --server "$RPAGE_PEER_IP" --transport tcp --size "$2" \
		--order random --threads 4 >> "$1/uffd.jsonl" &&
		"$UFFD" fault --server "$RPAGE_PEER_IP" --transport tcp --size "$2" \
		--order random --threads 4 --handlers 4 >> "$1/uffd.jsonl" ||
		fail "uffd baseline over tcp"
}

# On B: its own pool 2, with the pattern, read through its loop peer.
loop_setup() {
	loop_pattern_pool 2 "$SIZE" loop
}

# measure_loop DIR SIZE [R]: faults over the loop, one thread and four,
# the userfaultfd handler copying from local memory, and the floor (the
# kernel's own first touch of a new page, no fault handler of anyone's);
# the baselines first in even rounds, as in measure_rounds.
measure_loop() {
	if [ $(( ${3:-1} % 2 )) -eq 1 ]; then
		loop_rpage "$1" "$2" && loop_uffd "$1" "$2" && loop_floor "$1" "$2"
	else
		loop_floor "$1" "$2" && loop_uffd "$1" "$2" && loop_rpage "$1" "$2"
	fi
}

loop_rpage() {
	"$BENCH" lo 2 --size "$2" --only fault_random,fault_t4 --prefix loop_ \
		>> "$1/rpage.jsonl" || fail "rpage-bench over lo"
}

# Four faulting threads against one handler thread (QEMU's post-copy has
# one) and against four (a pipelined handler: each rpage fault is served
# in its own thread).
loop_uffd() {
	"$UFFD" fault --transport local --size "$2" --order random >> "$1/uffd.jsonl" &&
		"$UFFD" fault --transport local --size "$2" --order random --threads 4 \
		>> "$1/uffd.jsonl" &&
		"$UFFD" fault --transport local --size "$2" --order random --threads 4 \
		--handlers 4 >> "$1/uffd.jsonl" || fail "uffd baseline, local"
}

# The floor under a loop fault, in the same guest: the first read of a
# fresh shared memfd's page, and the first write of anonymous memory's,
# in the order of the loop's fault_random.
loop_floor() {
	"$UFFD" floor --size "$2" --order random >> "$1/floor.jsonl" ||
		fail "the floor's first touches"
}

# round_rpage DIR R: round R's rpage figures: random faults, a prefetch
# of a whole mapping touched in order, then the 2 MiB regions (touched
# 4 KiB at a time and whole, and pulled).
round_rpage() {
	"$BENCH" "$PEER" 1 --size "$ROUND_FAULT_SIZE" --only fault_random >> "$1/rpage.jsonl" &&
		"$BENCH" "$PEER" 1 --size "$ROUND_PREFETCH_SIZE" --only prefetch_touch >> "$1/rpage.jsonl" &&
		"$BENCH" "$PEER" 1 --size "$ROUND_HUGE_SIZE" --only region_touch,huge_touch,huge_pull \
			>> "$1/rpage.jsonl" ||
		fail "round $2: rpage-bench"
}

# round_baselines DIR R: round R's baselines: bare READs of one page
# (latency, then throughput), bare 64 KiB READs 16 in flight (rpage's
# prefetch READs), bare 2 MiB READs one at a time and BW2M_DEPTH in
# flight (a 2 MiB region's), and the userfaultfd handler over RDMA.
round_baselines() {
	perftest_client "lat$2" "$1/ib_read_lat.log" ib_read_lat -s 4096 -R -F \
		-n "$ROUND_LAT_ITERS" || return
	perftest_lat_record "$1/ib_read_lat.log" > "$1/perftest.jsonl"
	perftest_client "bw$2" "$1/ib_read_bw.log" ib_read_bw -s 4096 -R -F \
		-n "$ROUND_BW_ITERS" || return
	perftest_bw_record "$1/ib_read_bw.log" ib_read_bw 4096 >> "$1/perftest.jsonl"
	perftest_client "bw64k$2" "$1/ib_read_bw_64k.log" ib_read_bw -s 65536 -o 16 \
		-R -F -n "$ROUND_BW64K_ITERS" || return
	perftest_bw_record "$1/ib_read_bw_64k.log" ib_read_bw_64k 65536 >> "$1/perftest.jsonl"
	perftest_client "lat2m$2" "$1/ib_read_lat_2m.log" ib_read_lat -s 2097152 -R -F \
		-n "$ROUND_LAT2M_ITERS" || return
	perftest_lat_record "$1/ib_read_lat_2m.log" ib_read_lat_2m 2097152 >> "$1/perftest.jsonl"
	perftest_client "bw2m$2" "$1/ib_read_bw_2m.log" ib_read_bw -s 2097152 -o "$BW2M_DEPTH" \
		-R -F -n "$ROUND_BW2M_ITERS" || return
	perftest_bw_record "$1/ib_read_bw_2m.log" ib_read_bw_2m 2097152 >> "$1/perftest.jsonl"
	"$UFFD" fault --server "$RPAGE_PEER_IP" --transport rdma --size "$ROUND_FAULT_SIZE" \
		--order random > "$1/uffd.jsonl" || fail "round $2: uffd baseline"
}

# The rounds, rpage first in odd ones and the baselines first in even
# ones; each round's records in rounds/N/.
measure_rounds() {
	local r dir
	for r in $(seq "$ROUNDS"); do
		dir=$OUT/rounds/$r
		mkdir -p "$dir"
		if [ $((r % 2)) -eq 1 ]; then
			round_rpage "$dir" "$r" && round_baselines "$dir" "$r" || return
		else
			round_baselines "$dir" "$r" && round_rpage "$dir" "$r" || return
		fi
		measure_loop "$dir" "$ROUND_FAULT_SIZE" "$r" || return
		echo "round $r of $ROUNDS:"
		cat "$dir"/*.jsonl
	done
}

# Where a fault's time goes, from the tracepoints: the fault's time in
# rpage (rpage_fault_end), its READ's time on the wire, post to
# completion (rpage_io_done), and their difference per fault (what rpage
# itself costs a fault), as samples files the report tabulates next to
# rpage-bench's fault_random (the time seen by the toucher) and to the
# userfaultfd handler's own cost (uffd_rdma_random_overhead).
profile_faults() {
	local tracefs=/sys/kernel/tracing
	[ -d "$tracefs/events/rpage" ] || { echo "no rpage tracepoints"; return 0; }
	echo > "$tracefs/trace"
	echo 1 > "$tracefs/events/rpage/rpage_fault_end/enable"
	echo 1 > "$tracefs/events/rpage/rpage_io_done/enable"
	"$BENCH" "$PEER" 1 --size 4M --only fault_random > /dev/null
	local rc=$?
	echo 0 > "$tracefs/events/rpage/enable"
	[ "$rc" -eq 0 ] || { fail "profiled rpage-bench"; return; }
	sed -n 's/.* rpage_fault_end: .* fetched err=0 ns=\([0-9]*\)$/\1/p' "$tracefs/trace" \
		> "$OUT/samples/trace_fault_in_rpage.txt"
	sed -n 's/.* rpage_io_done: .* READ pages=1 status=0 ns=\([0-9]*\)$/\1/p' "$tracefs/trace" \
		> "$OUT/samples/trace_read_on_wire.txt"
	# Each fault's own cost: its time in rpage minus its READ's time on
	# the wire. One thread faulting without read-ahead: each fetching
	# fault is one READ's io_done, then its fault_end.
	awk '/ rpage_io_done: .* READ pages=1 status=0 ns=/ { sub(/.*ns=/, ""); wire = $0; next }
	     / rpage_fault_end: .* fetched err=0 ns=/ && wire != "" {
		sub(/.*ns=/, ""); print $0 - wire; wire = "" }' "$tracefs/trace" \
		> "$OUT/samples/trace_fault_overhead.txt"
	wc -l "$OUT"/samples/trace_*.txt
	barrier measured
}

rxe_up
tap_begin "bench-$RPAGE_NODE"
run_test rpage_load rpage_load
run_test connect test_connect_peer
if [ "$RPAGE_NODE" = a ]; then
	run_test serve serve_on_a
else
	run_test measure measure_on_b
fi
barrier done
run_test rpage_unload rpage_unload
tap_end
exit 0
