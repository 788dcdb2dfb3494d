#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The harness fails what it must, as TAP: a check that failed fails its
# test point whatever the test did after it; a skip is only what a test
# says is one; a JSON check of nothing fails; and the host counts a
# stream cut short, a stream missing and a program that failed as
# failures. Each case feeds the harness's own code (selftests/guest/lib.sh,
# selftests/vm/tap.sh) a made-up test or a made-up guest's output.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

n=0
tap() {
	n=$((n + 1))
	echo "$1 $n - $2"
}

# guest_points BODY...: the TAP lines of one test point per BODY, each
# run by the guests' run_test as a test function.
guest_points() (
	export RPAGE_OUT=$work/out RPAGE_BUILD=$work RPAGE_KVER=test \
		RPAGE_NODE=test RPAGE_REPO=$here/..
	# shellcheck source=selftests/guest/lib.sh
	. "$here/guest/lib.sh" > /dev/null
	tap_begin points > /dev/null
	i=0
	for body in "$@"; do
		i=$((i + 1))
		eval "point_$i() { $body; }"
		run_test "point_$i" "point_$i" > /dev/null
	done
	tap_end
	grep -E '^(not )?ok ' "$TAP_DIR/points.tap"
)

# The line of point 1 is what it must be.
expect_point() {
	local got
	got=$(guest_points "$2" | head -n 1)
	case "$got" in
	$3) tap ok "$1" ;;
	*) tap "not ok" "$1"; echo "#   got: $got" ;;
	esac
}

expect_point "a failed check fails its test, whatever follows it" \
	'false || fail "the check"; true' 'not ok 1 *'
expect_point "a check that held passes" \
	'true || fail "the check"; true' 'ok 1 *'
expect_point "exit status 4 without skip() is a failure" \
	'return 4' 'not ok 1 *'
expect_point "skip() is a skip" \
	'skip "no such device" || return' 'ok 1 *# SKIP*'
expect_point "a JSON check of no input fails" \
	'printf "" | jq -e "true" > /dev/null || fail "no JSON"' 'not ok 1 *'
expect_point "a JSON check of JSON holds" \
	'echo "[1]" | jq -e ".[0] == 1" > /dev/null || fail "JSON"' 'ok 1 *'

# host_counts EXPECTED: "passed failed" of collect_tap over $work/guest.
host_counts() (
	# shellcheck source=selftests/vm/tap.sh
	. "$here/vm/tap.sh"
	collect_tap guest "$work/guest" "$1" > /dev/null
	echo "$passed $failed"
)

guest_stream() {
	mkdir -p "$work/guest/out/tap"
	printf '%s\n' "${@:2}" > "$work/guest/out/tap/$1.tap"
}

expect_counts() {
	local got
	got=$(host_counts "$2")
	if [ "$got" = "$3" ]; then
		tap ok "$1"
	else
		tap "not ok" "$1"
		echo "#   passed and failed: got $got, want $3"
	fi
	rm -rf "$work/guest"
}

guest_stream good "TAP version 13" "ok 1 a" "ok 2 b" "1..2"
expect_counts "a whole stream counts its tests" "good" "2 0"
guest_stream short "TAP version 13" "1..3" "ok 1 a" "ok 2 b"
expect_counts "a stream that reports fewer tests than planned fails" "short" "2 1"
guest_stream cut "TAP version 13" "ok 1 a"
expect_counts "a stream with no plan fails" "cut" "1 1"
guest_stream good "TAP version 13" "ok 1 a" "1..1"
expect_counts "a stream the job must write and did not fails, by name" "good gone" "1 1"
guest_stream prog "TAP version 13" "1..1" "ok 1 a"
echo 1 > "$work/guest/out/tap/prog.exit"
expect_counts "a program that exited 1 fails though its tests passed" "prog" "1 1"

echo "1..$n"
