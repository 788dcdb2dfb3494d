# SPDX-License-Identifier: GPL-2.0
#
# The scale rows of `make bench`: one guest with two vCPUs in which one
# thread, then two, fault disjoint slices of one fresh mapping (a
# shuffled order, each page once), as the kernel's demand_paging_test
# does, over the loop transport (no wire: the fault path alone) and over
# RDMA (the peer "self" over rxe loopback). Two threads on two vCPUs
# should fault nearly twice as many pages a second as one, and each of
# their faults should take about as long as one thread's: what they
# share (the peer, its queue pairs, the mapping's page cache) shows as
# the shortfall. One run of each, then ROUNDS rounds with the order of
# one and two threads flipped every round; the records go to
# $RPAGE_OUT/scale/ and its rounds/N/, as scale_loop_* and scale_rdma_*.
. "$RPAGE_REPO/selftests/guest/lib.sh"

# Over the loop a fault takes ~20 us: 64 MiB make a window long enough
# for a throughput; over rxe ~150 us, and 16 MiB do.
SIZE=64M
RDMA_SIZE=16M
# As many as bench.sh's: a ratio is judged over rounds that have both figures.
ROUNDS=5
BENCH=$SELFTESTS/rpage-bench
OUT=$RPAGE_OUT/scale
SELF=$RPAGE_IP

scale_setup() {
	rpage_load || fail "insmod" || return
	"$RPAGECTL" endpoint add "$SELF" && "$RPAGECTL" peer add self addr "$SELF" ||
		fail "peer self" || return
	wait_until 60 peer_is self connected || fail "self not connected" || return
	loop_pattern_pool 2 "$SIZE" scale || return
	wait_until 30 remote_pool_listed self 2 || fail "pool 2 not announced to self" || return
	"$RPAGECTL" peer show
}

# scale_pass FILE T1 T2: one and two threads (in the order given) over
# the loop, then over RDMA.
scale_pass() {
	local peer prefix size t
	for peer in lo self; do
		if [ "$peer" = lo ]; then
			prefix=scale_loop_ size=$SIZE
		else
			prefix=scale_rdma_ size=$RDMA_SIZE
		fi
		for t in "$2" "$3"; do
			"$BENCH" "$peer" 2 --size "$size" --only "$t" --prefix "$prefix" >> "$1" ||
				fail "rpage-bench $t over $peer" || return
		done
	done
}

scale_measure() {
	local r dir
	mkdir -p "$OUT"
	scale_pass "$OUT/scale.jsonl" fault_t1 fault_t2 || return
	cat "$OUT/scale.jsonl"
	for r in $(seq "$ROUNDS"); do
		dir=$OUT/rounds/$r
		mkdir -p "$dir"
		if [ $((r % 2)) -eq 1 ]; then
			scale_pass "$dir/scale.jsonl" fault_t2 fault_t1 || return
		else
			scale_pass "$dir/scale.jsonl" fault_t1 fault_t2 || return
		fi
	done
	"$RPAGECTL" stat peer self
	touch /tmp/until-scale
}

rxe_up
tap_begin scale
run_test scale_setup scale_setup
run_test scale_measure scale_measure
tap_end
