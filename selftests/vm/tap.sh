# SPDX-License-Identifier: GPL-2.0
#
# How the host counts what the guests report (selftests/run.sh): the
# counters, one host-level test point (report), a guest's TAP streams
# (collect_tap) and a TAP file of the host's own (collect_tap_file).
# Sourced; selftests/host/harness.sh checks that it fails what it must.

passed=0
failed=0
skipped=0
# Every failure and its first reasons, said again at the very end: a
# run's output is long, and whoever reads only its end (a CI summary)
# then still sees what failed and why.
recap=()

# report OK|FAIL|SKIP NAME [DETAIL...]: one host-level test point.
report() {
	local verdict=$1 name=$2
	shift 2
	case "$verdict" in
	OK) passed=$((passed + 1)); echo "ok - $name" ;;
	SKIP) skipped=$((skipped + 1)); echo "ok - $name # SKIP $*" ;;
	*) failed=$((failed + 1)); echo "not ok - $name"
	   recap+=("not ok - $name")
	   if [ $# -gt 0 ]; then
		printf '#   %s\n' "$@"
		recap+=("${@/#/#   }")
	   fi ;;
	esac
}

# How many of a failed test's last diagnostic lines the recap repeats,
# and how much of each: enough to say why without the whole stream.
RECAP_DIAG_LINES=6
RECAP_DIAG_WIDTH=240

# Counts the TAP streams a guest left, and echoes their failures. The
# recap gets each failed test's last diagnostic lines: the full output
# may be cut short where it is read. A stream must end with its plan
# (1..N, first or last) and report N tests; a kselftest program must
# have exited 0 (or 4, KSFT_SKIP, having skipped); and every stream the
# job is known to write (EXPECTED, names) must be there: a stream cut
# short, a program that did not start or a part that vanished fails the
# run, with its name.
collect_tap() {
	local label=$1 run=$2 expected=$3 f line diag=() name plan n status
	for name in $expected; do
		[ -e "$run/out/tap/$name.tap" ] ||
			report FAIL "[$label] stream $name: missing (its part or program never ran)"
	done
	for f in "$run"/out/tap/*.tap; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .tap)
		plan=""
		n=0
		while IFS= read -r line; do
			case "$line" in
			"1.."*)
				plan=${line#1..}
				plan=${plan%% *} ;;
			"#"*)
				diag+=("#     ${line:0:$RECAP_DIAG_WIDTH}")
				[ ${#diag[@]} -gt "$RECAP_DIAG_LINES" ] && diag=("${diag[@]:1}") ;;
			"not ok "*)
				n=$((n + 1))
				failed=$((failed + 1)); echo "not ok - [$label] ${line#not ok }"
				recap+=("not ok - [$label] ${line#not ok }" "${diag[@]}")
				diag=() ;;
			"ok "*"# SKIP"*|"ok "*"# skip"*)
				n=$((n + 1))
				skipped=$((skipped + 1)); echo "ok - [$label] ${line#ok } "
				diag=() ;;
			"ok "*)
				n=$((n + 1))
				passed=$((passed + 1)); echo "ok - [$label] ${line#ok }"
				diag=() ;;
			esac
		done < "$f"
		if [ -z "$plan" ]; then
			report FAIL "[$label] stream $name: no plan, cut short after $n tests"
		elif [ "$plan" != "$n" ]; then
			report FAIL "[$label] stream $name: $plan tests planned, $n reported"
		fi
		if [ -e "$run/out/tap/$name.exit" ]; then
			status=$(cat "$run/out/tap/$name.exit")
			[ "$status" = 0 ] || [ "$status" = 4 ] ||
				report FAIL "[$label] stream $name: its program exited $status"
		fi
	done
}

collect_tap_file() {
	local line plan="" n=0
	while IFS= read -r line; do
		case "$line" in
		"1.."*) plan=${line#1..} ;;
		"not ok "*) n=$((n + 1)); failed=$((failed + 1)); echo "$line"; recap+=("$line") ;;
		"ok "*"# SKIP"*) n=$((n + 1)); skipped=$((skipped + 1)); echo "$line" ;;
		"ok "*) n=$((n + 1)); passed=$((passed + 1)); echo "$line" ;;
		"#"*) echo "$line" ;;
		esac
	done < "$1"
	[ "$plan" = "$n" ] ||
		report FAIL "$(basename "$1"): ${plan:-no} tests planned, $n reported"
}
