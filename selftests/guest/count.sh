# SPDX-License-Identifier: GPL-2.0
#
# The work of a fault, counted rather than timed (`make bench-count`):
# one guest whose QEMU counts instructions (-icount shift=0,sleep=off),
# so that its clock advances one nanosecond per instruction executed and
# never while idle. A touch "timed" in it is the instructions the vCPU
# ran for its fault: rpage's, the kernel's around it, and nothing of the
# host's noise, which swings TCG's real times 1.5x run to run. A fault
# over the loop transport (a copy, no wire: all of it CPU work) is
# counted against the floor (the kernel's own first touch of a page of a
# fresh shared memfd, and of anonymous memory) and against the
# userfaultfd handler installing pages from local memory, in ROUNDS
# rounds, the order flipped every round. The records (one JSON line
# each, their "ns" instructions) go to $RPAGE_OUT/count/rounds/N/.
. "$RPAGE_REPO/selftests/guest/lib.sh"

ROUNDS=3
SIZE=4M
UFFD=$SELFTESTS/rpage_uffd_baseline
BENCH=$SELFTESTS/rpage-bench
OUT=$RPAGE_OUT/count

# Pool 2 of this host, with the pattern, through its loop peer "lo".
count_setup() {
	loop_pattern_pool 2 "$SIZE" count
}

count_rpage() {
	"$BENCH" lo 2 --size "$SIZE" --only fault_random --prefix loop_ >> "$1/rpage.jsonl" ||
		fail "rpage-bench over lo"
}

count_baselines() {
	"$UFFD" floor --size "$SIZE" --order random >> "$1/floor.jsonl" &&
		"$UFFD" fault --transport local --size "$SIZE" --order random >> "$1/uffd.jsonl" ||
		fail "the baselines"
}

count_rounds() {
	local r dir
	[ "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" = tsc ] ||
		echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	for r in $(seq "$ROUNDS"); do
		dir=$OUT/rounds/$r
		mkdir -p "$dir"
		if [ $((r % 2)) -eq 1 ]; then
			count_rpage "$dir" && count_baselines "$dir" || return
		else
			count_baselines "$dir" && count_rpage "$dir" || return
		fi
		echo "round $r of $ROUNDS:"
		cat "$dir"/*.jsonl
	done
	touch /tmp/until-count
}

tap_begin count
run_test rpage_load rpage_load
run_test count_setup count_setup
run_test count_rounds count_rounds
tap_end
