# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the jobs that run inside a guest (see selftests/vm/): TAP
# output, loading rpage.ko, the rxe device, and barriers between the two
# guests of a pair.
#
# Each TAP stream goes to its own file under $RPAGE_OUT/tap/ and to
# standard output (the console).

set -u
# Another build if the job chose one (selftests/mutate.sh).
RPAGE_KO=${RPAGE_KO:-$RPAGE_BUILD/kmod/$RPAGE_KVER/kmod/rpage.ko}
# Faults taken as KVM takes them (selftests/kmod/rpage_gup_test.c).
RPAGE_GUP_KO=$RPAGE_BUILD/kmod/$RPAGE_KVER/test/rpage_gup_test.ko
# An access section held open (selftests/kmod/rpage_hold_test.c).
RPAGE_HOLD_KO=$RPAGE_BUILD/kmod/$RPAGE_KVER/test/rpage_hold_test.ko
RPAGECTL=$RPAGE_BUILD/user/rpagectl
export PATH=$RPAGE_BUILD/user:$PATH
SELFTESTS=$RPAGE_BUILD/user/selftests
TAP_DIR=$RPAGE_OUT/tap
mkdir -p "$TAP_DIR"

# How many times longer RDMA takes here than on Debian's kernels: on the
# debug tier's kernel (KASAN, lockdep; make check-debug) a READ takes
# about 36 times as long, 190 ms for 64 KiB under TCG. Timeouts that
# bound how long reads in flight may take are multiplied by it, and so
# are the bounds of wait_until and barrier: they say how long to wait
# before calling it a failure, never how long something should take
# (tests that time the product measure that themselves).
case "$RPAGE_KVER" in
*-rpage-debug) RPAGE_SLOW=20 ;;
*) RPAGE_SLOW=1 ;;
esac

tap_file=""
tap_count=0

# tap_begin NAME: starts the stream NAME.tap.
tap_begin() {
	tap_file=$TAP_DIR/$1.tap
	tap_count=0
	echo "TAP version 13" > "$tap_file"
	echo "# $1 on $RPAGE_NODE ($RPAGE_KVER)" | tee -a "$tap_file"
}

tap_end() {
	echo "1..$tap_count" >> "$tap_file"
}

tap_line() {
	echo "$*" | tee -a "$tap_file"
}

# Set by fail() and skip() within a test point, read by run_test.
TEST_FAILED=0
TEST_SKIPPED=0

# A test point still running after this many seconds (times RPAGE_SLOW)
# is reported on the console, once; the report fails nothing.
RPAGE_TEST_WARN_S=${RPAGE_TEST_WARN_S:-300}

# run_test_tree PID SKIP: the processes under PID, but for SKIP's.
run_test_tree() {
	ps -e -o pid= -o ppid= | awk -v root="$1" -v skip="$2" '
		{ parent[$1] = $2 }
		END {
			for (p in parent) {
				for (q = p; q in parent && q != root && q != skip; q = parent[q])
					;
				if (q == root && p != skip)
					print p
			}
		}'
}

# run_test_watch NAME LOG: after RPAGE_TEST_WARN_S, says that test NAME
# still runs, what it has printed (in LOG) and where each of its
# processes waits in the kernel, and has the kernel list its blocked
# tasks: a job that then times out says which test hung, and on what.
# One process that waits in a builtin (a guest has no /dev/fd), disowned
# so that a bare "wait" in a test waits only for the test's own; its pid
# in RUN_TEST_WATCHER for run_test_unwatch.
run_test_watch() {
	local limit=$((RPAGE_TEST_WARN_S * RPAGE_SLOW)) shell=$$
	RUN_TEST_WATCHER=""
	mkfifo "$2.fifo" || return
	(
		self=$BASHPID
		# A pipe this process holds both ends of: no end of file.
		read -r -t "$limit" _ <> "$2.fifo"
		{
			echo "# $1 still running after ${limit}s; its output so far:"
			sed 's/^/#   /' "$2"
			for p in $(run_test_tree "$shell" "$self"); do
				# Gone meanwhile (what listed them, for one).
				[ -r "/proc/$p/cmdline" ] || continue
				echo "# $p $(tr '\0' ' ' 2> /dev/null < "/proc/$p/cmdline" | cut -c 1-100)"
				sed 's/^/#     /' "/proc/$p/stack" 2>/dev/null
			done
		} | tee -a "$tap_file"
		echo w > /proc/sysrq-trigger
	) > /dev/console 2>&1 &
	RUN_TEST_WATCHER=$!
	disown "$RUN_TEST_WATCHER"
}

run_test_unwatch() {
	kill "$RUN_TEST_WATCHER" 2> /dev/null
	rm -f "$1.fifo"
}

# run_test NAME COMMAND...: one test point; the command's output is kept
# as TAP diagnostics. It fails if the command fails, or if any check in
# it failed (fail()), whatever the command did after that; it is skipped
# only if it said so (skip()).
run_test() {
	local name=$1 log rc t0
	shift
	tap_count=$((tap_count + 1))
	TEST_FAILED=0
	TEST_SKIPPED=0
	log=$(mktemp)
	t0=${EPOCHREALTIME/./}
	run_test_watch "$name" "$log"
	"$@" > "$log" 2>&1
	rc=$?
	run_test_unwatch "$log"
	# How long each test point takes: where a job's time goes.
	echo "took $(( (${EPOCHREALTIME/./} - t0) / 1000 )) ms" >> "$log"
	sed 's/^/# /' "$log" | tee -a "$tap_file"
	rm -f "$log"
	if [ "$TEST_FAILED" -ne 0 ]; then
		tap_line "not ok $tap_count $name"
	elif [ "$TEST_SKIPPED" -ne 0 ] && [ "$rc" -eq 4 ]; then
		tap_line "ok $tap_count $name # SKIP"
	elif [ "$rc" -eq 0 ]; then
		tap_line "ok $tap_count $name"
	else
		[ "$rc" -eq 4 ] && echo "# exit status 4 without skip(): a failure" |
			tee -a "$tap_file"
		tap_line "not ok $tap_count $name"
	fi
}

# run_kselftest NAME BINARY [ARGS]: a kselftest_harness program, whose
# TAP output is its own stream; its exit status goes beside it, in
# NAME.exit, for the host to judge (a program that failed to start
# prints no plan, and one that crashed an incomplete one).
run_kselftest() {
	local name=$1
	shift
	"$@" 2>&1 | tee "$TAP_DIR/$name.tap"
	echo "${PIPESTATUS[0]}" > "$TAP_DIR/$name.exit"
}

# Helpers that fail a test with a reason: the test point fails even if a
# later command of it succeeds.
fail() {
	echo "FAIL: $*"
	TEST_FAILED=1
	return 1
}

# skip REASON: the test point cannot run here (a feature or device is
# missing); returns 4, which the test returns.
skip() {
	echo "SKIP: $*"
	TEST_SKIPPED=1
	return 4
}

expect_eq() {
	[ "$1" = "$2" ] || fail "${3:-value}: got '$1', want '$2'"
}

# cgroup v2 at /sys/fs/cgroup, its children with the memory controller.
memcg_up() {
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || return 1
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control
}

# memcg_stat CGROUP KEY: KEY's value in CGROUP's memory.stat (bytes).
memcg_stat() {
	awk -v k="$2" '$1 == k { print $2; found = 1 } END { exit !found }' "$1/memory.stat"
}

# json_filter TOOL ARGS...: TOOL (a jq) on standard input, with no
# input an error: Debian's jq 1.6 takes empty input for success even
# with -e, so that a check of what a command printed would pass when the
# command failed and printed nothing.
json_filter() {
	local tool=$1 input
	shift
	input=$(cat)
	if [ -z "$input" ]; then
		echo "$tool: no input" >&2
		return 1
	fi
	printf '%s\n' "$input" | command "$tool" "$@"
}

# The tests' jq is gojq: under TCG jq 1.6 takes half a second to start
# (it compiles its builtins on every run), gojq a fifth of that, and a
# job calls it hundreds of times, most of them in wait_until's polls
# (the single job on 6.1: 264 calls; 601 s against 719). gojq keeps no
# order of an object's keys: jq_ordered, jq 1.6 itself, checks that.
jq() {
	json_filter gojq "$@"
}

jq_ordered() {
	json_filter jq "$@"
}

# bt_need: bpftrace can run here, or the test fails (no bpftrace) or is
# skipped: a kernel built without the bpf() system call, as the debug
# tier's is (scripts/build-debug-kernel.sh, for its build time), lets
# bpftrace make no map ("Function not implemented"). Such a kernel has
# no /sys/fs/bpf, which the bpf file system makes with the call.
bt_need() {
	command -v bpftrace > /dev/null ||
		fail "no bpftrace on the host (scripts/install-deps.sh installs it)" || return
	[ -d /sys/fs/bpf ] ||
		skip "$RPAGE_KVER has no bpf() system call (no /sys/fs/bpf: CONFIG_BPF_SYSCALL is off)"
}

rpage_load() {
	modprobe ib_core && modprobe rdma_cm || return 1
	insmod "$RPAGE_KO"
}

rpage_unload() {
	rmmod rpage
}

rpage_loaded() {
	[ -d /sys/module/rpage ]
}

# The rxe device over eth0; ib_uverbs and rdma_ucm for rdma-core peers.
rxe_up() {
	modprobe rdma_rxe || return 1
	rdma link show rxe0/1 > /dev/null 2>&1 ||
		rdma link add rxe0 type rxe netdev eth0 || return 1
	modprobe ib_uverbs && modprobe rdma_ucm
}

# Names of the devices rpage.ko lists, one a line.
rpage_devices() {
	"$RPAGECTL" -j device show | jq -r '.[].name'
}

# The directory the two guests of a pair share (the host's DIR/sync):
# NODE.NAME once NODE has reached barrier NAME, NODE.exited (its job's
# exit status) once NODE's job is over, written by selftests/vm/guest-init,
# and NODE.gone once NODE's QEMU has exited, written by the host.
RPAGE_SYNC=${RPAGE_SYNC:-/run/rpage-sync}

# peer_end: prints why the other guest of the pair will never reach
# another barrier (its job exited, with its status, or its guest is
# gone); false, printing nothing, while it still may.
peer_end() {
	local dir=$RPAGE_SYNC peer=$RPAGE_PEER_NODE rc
	if [ -e "$dir/$peer.exited" ]; then
		rc=$(cat "$dir/$peer.exited" 2>/dev/null)
		echo "$peer's job exited ${rc:-(status unknown)}"
	elif [ -e "$dir/$peer.gone" ]; then
		echo "$peer's guest is gone"
	else
		return 1
	fi
}

# peer_gone: true once the other guest's job has exited or its guest is
# gone, for a test that goes on alone after its peer has stopped.
peer_gone() {
	peer_end > /dev/null
}

# The last barrier the other guest reached, or "none".
peer_last_barrier() {
	local last
	last=$(ls -t "$RPAGE_SYNC" 2>/dev/null |
		sed -n "s/^$RPAGE_PEER_NODE\.//p" | grep -vx -e exited -e gone | head -n 1)
	echo "${last:-none}"
}

# barrier NAME: wait until the other guest of the pair reaches NAME too.
# Fails at once if the other guest's job is over, or its guest gone,
# without having reached NAME (it never will), and after BARRIER_TIMEOUT
# polls of 0.2 s (1500) if it is alive but stuck.
barrier() {
	local name=$1 dir=$RPAGE_SYNC peer=$RPAGE_PEER_NODE waited=0 why
	case "$name" in
	exited|gone) echo "barrier $name: a reserved name"; return 1 ;;
	esac
	touch "$dir/$RPAGE_NODE.$name"
	while [ ! -e "$dir/$peer.$name" ]; do
		# The peer marks NAME before its job can end: look again once
		# it has, lest it passed NAME just before.
		if why=$(peer_end) && [ ! -e "$dir/$peer.$name" ]; then
			echo "barrier $name: $peer will never come: $why" \
				"(its last barrier: $(peer_last_barrier))"
			return 1
		fi
		sleep 0.2
		waited=$((waited + 1))
		if [ "$waited" -ge "${BARRIER_TIMEOUT:-$((1500 * RPAGE_SLOW))}" ]; then
			echo "barrier $name: $peer never came" \
				"(its last barrier: $(peer_last_barrier))"
			return 1
		fi
	done
}

# Milliseconds since $1, a time in microseconds taken as
# t0=${EPOCHREALTIME/./}: bash's own clock, no program starts between.
ms_since() {
	echo $(( (${EPOCHREALTIME/./} - $1) / 1000 ))
}

# peer_since_ms PEER T0: how long after T0 (as ms_since takes it) PEER
# entered the state it is in, in ms, by the peer's own clock (its time
# in that state, read before the clock is): on a loaded host each poll
# that would see it takes seconds.
peer_since_ms() {
	local in_state
	in_state=$(peer_field "$1" state_ms) && [ -n "$in_state" ] || return
	echo $(( $(ms_since "$2") - ${in_state%.*} ))
}

# dmesg_mark: puts a mark in the kernel log and prints it, for
# dmesg_since. A mark of its own, not a line count: in a long job the
# kernel's ring buffer wraps, and line numbers with it.
dmesg_mark() {
	local mark="rpage-test-mark-$$-$RANDOM-${EPOCHREALTIME/./}"
	echo "$mark" > /dev/kmsg
	echo "$mark"
}

# dmesg_since MARK: the kernel log lines after MARK (from dmesg_mark);
# the whole log if MARK has scrolled out of it (all of it is newer).
dmesg_since() {
	local log
	log=$(dmesg)
	if grep -q -- "$1" <<< "$log"; then
		sed -n "/$1/,\$p" <<< "$log" | tail -n +2
	else
		echo "$log"
	fi
}

# stall_held_up_nothing OUT PID: `rpage_fault stall` (PID, its output in
# OUT) measured with its fault waiting: every call it timed took under
# 100 ms, another process reads its /proc/PID/cmdline in under 100 ms,
# and kill -9 ends it within a second. Kills it either way; false (said)
# if any of these failed.
stall_held_up_nothing() {
	local out=$1 pid=$2 line max t0 took ret=0
	line=$(grep '^stall ' "$out")
	for max in $(echo "$line" | grep -oE '[0-9]+\.[0-9]+'); do
		awk -v m="$max" 'BEGIN { exit !(m < 100) }' ||
			{ echo "FAIL: $line: a call took 100 ms or more"; ret=1; }
	done
	# A shell builtin: the time is the read's, not a program's start.
	t0=${EPOCHREALTIME/./}
	IFS= read -r -d '' line < "/proc/$pid/cmdline"
	took=$(ms_since "$t0")
	echo "read of /proc/$pid/cmdline: $took ms ($line)"
	[ "$took" -lt 100 ] || { echo "FAIL: the read took $took ms"; ret=1; }
	t0=${EPOCHREALTIME/./}
	kill -9 "$pid"
	wait "$pid" 2> /dev/null
	took=$(ms_since "$t0")
	echo "kill -9: gone after $took ms"
	[ "$took" -lt 1000 ] || { echo "FAIL: kill -9 took $took ms"; ret=1; }
	return "$ret"
}

# wait_until SECONDS COMMAND...: polls COMMAND until it succeeds, for
# SECONDS (times RPAGE_SLOW).
wait_until() {
	local deadline=$(( $(date +%s) + $1 * RPAGE_SLOW ))
	shift
	until "$@" > /dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "timed out waiting for: $*"
			return 1
		fi
		sleep 0.5
	done
}

# peer_field NAME FIELD: one field of `rpagectl -j peer show`.
peer_field() {
	"$RPAGECTL" -j peer show | jq -r --arg n "$1" ".[] | select(.name == \$n) | .$2"
}

# step COMMAND...: prints the command, as a shell would show it, and runs
# it (the demos' jobs, whose output is read by people).
step() {
	echo "\$ $*"
	"$@"
}

# remote_pool_listed PEER ID: PEER announced its pool ID to this host.
remote_pool_listed() {
	"$RPAGECTL" -j pool show remote |
		jq -e --arg p "$1" --argjson id "$2" 'any(.[]; .peer == $p and .id == $id)' > /dev/null
}

# file_pool_follows_its_file PEER: pools of a 1 MiB file on tmpfs follow
# it as a shared mapping of it would. A write to the file and a growth
# of it leave them be (PEER reads the write); a hole punched in one's
# range, or a truncate into it, withdraws that pool before fallocate or
# truncate returns: PEER cannot read a byte the file no longer has, the
# log says why, and a pool of the file's range that lost nothing stays.
file_pool_follows_its_file() {
	local peer=$1 f=/dev/shm/rpage-follow how mark ret=0
	for how in punch truncate; do
		head -c 1M /dev/zero | tr '\0' '\021' > "$f"
		"$RPAGECTL" pool create 63 file "$f" size 512K writable &&
			"$RPAGECTL" pool create 64 file "$f" offset 768K size 256K ||
			fail "pool create file" || return
		wait_until 30 remote_pool_listed "$peer" 63 &&
			wait_until 30 remote_pool_listed "$peer" 64 ||
			fail "the file's pools not listed on $peer" || return
		head -c 4K /dev/zero | tr '\0' '\042' |
			dd of="$f" bs=4K seek=1 conv=notrunc status=none
		truncate -s 2M "$f"
		"$RPAGECTL" read "$peer" 63 4K 4K file /tmp/follow.written ||
			fail "a write to the file, or its growth, took the pool away" || return
		head -c 4K /dev/zero | tr '\0' '\042' | cmp -s - /tmp/follow.written ||
			fail "$peer did not read the page the file's user wrote" || return
		mark=$(dmesg_mark)
		case $how in
		punch) fallocate -p -o 256K -l 4K "$f" ;;
		truncate) truncate -s 384K "$f" ;;
		esac
		# At once: withdrawn before the call returned.
		if "$RPAGECTL" -j pool show | jq -e '.[] | select(.id == 63)' > /dev/null; then
			fail "$how: the pool of the range is still there"
			ret=1
		fi
		if "$RPAGECTL" read "$peer" 63 256K 4K file /tmp/follow.read 2> /dev/null; then
			fail "$how: $peer read a page the file no longer has: $(od -An -tx1 /tmp/follow.read | head -1)"
			ret=1
		fi
		dmesg_since "$mark" | grep -q "pool 63: its file was truncated or punched under it" ||
			{ fail "$how: the log does not say why the pool went"; ret=1; }
		case $how in
		punch)
			"$RPAGECTL" read "$peer" 64 0 4K file /tmp/follow.read ||
				{ fail "a punch outside its range took pool 64 away"; ret=1; }
			;;
		truncate)
			"$RPAGECTL" -j pool show | jq -e '.[] | select(.id == 64)' > /dev/null &&
				{ fail "a truncate below pool 64 left it"; ret=1; }
			;;
		esac
		"$RPAGECTL" pool destroy 63 2> /dev/null
		"$RPAGECTL" pool destroy 64 2> /dev/null
		[ "$ret" = 0 ] || break
	done
	rm -f "$f"
	return "$ret"
}

# loop_peer_add NAME POOL: adds NAME, this host as its own peer over the
# loop transport, and waits until this host's pool POOL is listed
# through it.
loop_peer_add() {
	"$RPAGECTL" peer add "$1" transport loop || fail "peer add $1 transport loop" || return
	wait_until 30 remote_pool_listed "$1" "$2" || fail "pool $2 not listed through $1"
}

# loop_pattern_pool POOL SIZE TAG: this host's pool POOL of SIZE bytes,
# with the pattern (rpage_pattern export, until /tmp/until-TAG appears),
# read through its loop peer "lo" (the benchmarks' pool with no wire).
loop_pattern_pool() {
	rm -f "/tmp/ready-$3" "/tmp/until-$3"
	"$SELFTESTS/rpage_pattern" export "$1" "$2" --ready "/tmp/ready-$3" \
		--until "/tmp/until-$3" > /dev/null &
	wait_until 60 test -e "/tmp/ready-$3" || fail "the exporter of pool $1 is not ready" || return
	loop_peer_add lo "$1"
}

# endpoint_field FIELD: a field of the first endpoint.
endpoint_field() {
	"$RPAGECTL" -j endpoint show | jq -r ".[0].$1"
}

# peer_is NAME STATE: the peer is in STATE with all its queue pairs up
# (for "connected"), or just in STATE.
peer_is() {
	local state
	state=$(peer_field "$1" state)
	[ "$state" = "$2" ] || return 1
	if [ "$2" = connected ]; then
		[ "$(peer_field "$1" qps_connected)" = "$(peer_field "$1" qps)" ]
	fi
}

# Predicates for wait_until, read afresh on every poll.
peer_field_is() {
	[ "$(peer_field "$1" "$2")" = "$3" ]
}

peer_field_ge() {
	[ "$(peer_field "$1" "$2")" -ge "$3" ] 2>/dev/null
}

endpoint_field_is() {
	[ "$(endpoint_field "$1")" = "$2" ]
}

endpoint_field_ge() {
	[ "$(endpoint_field "$1")" -ge "$2" ] 2>/dev/null
}

# rpage's tracepoints, for the tests that read them.
TRACEFS=/sys/kernel/tracing

trace_count() {
	grep -c " $1: " "$TRACEFS/trace"
}

# An empty trace buffer, and tracing that does not record task names:
# that recording hooks the scheduler's own tracepoints at every first
# enable and last disable, and patching those (text_poke_bp) while the
# other vCPU runs __schedule once hung a 2-vCPU TCG guest (soft lockup,
# the other CPU looping in its int3 handler; no rpage code involved).
trace_setup() {
	[ -e "$TRACEFS/events" ] || mount -t tracefs nodev "$TRACEFS" || return
	[ -d "$TRACEFS/events/rpage" ] || fail "no events/rpage in tracefs" || return
	echo 0 > "$TRACEFS/options/record-cmd" || return
	echo > "$TRACEFS/trace"
}

# traced EVENTS COMMAND...: runs COMMAND while the rpage tracepoints
# EVENTS (comma-separated names, or "all") record into an empty buffer;
# returns COMMAND's status.
traced() {
	local events=$1 event rc
	shift
	trace_setup || return
	if [ "$events" = all ]; then
		echo 1 > "$TRACEFS/events/rpage/enable" || return
	else
		for event in ${events//,/ }; do
			echo 1 > "$TRACEFS/events/rpage/$event/enable" || return
		done
	fi
	"$@"
	rc=$?
	echo 0 > "$TRACEFS/events/rpage/enable"
	return "$rc"
}
