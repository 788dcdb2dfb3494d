#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every test of rpage: installs what it needs (as root), builds, runs the
# host-side checks, then boots each supported Debian kernel in QEMU
# guests (one guest over rxe loopback, and a pair "a" and "b" joined on
# 127.0.0.1, over RDMA and then over TCP) and runs the selftests inside. Ends with one line:
#   N passed, N failed, N skipped
# summed over every check, guest and kernel. Exit status 0 only when
# nothing failed.
#
# Environment: RPAGE_KERNELS, RPAGE_VM_ACCEL, RPAGE_VM_TIMEOUT (see
# selftests/vm/lib.sh); RPAGE_SKIP_DEPS=1 skips the package install;
# RPAGE_RUN_BUDGET, the seconds the whole run may take (4800);
# RPAGE_QUICK=1, the quick job alone (see QUICK_PARTS); RPAGE_JOBS, the
# jobs each kernel runs (default "single hostile pair pair-tcp"), for a
# tier that cannot run them all in its time.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/vm/lib.sh"
cd "$RPAGE_REPO" || exit 1

start=$(date +%s)
results=$RPAGE_BUILD/results
rm -rf "$results"
mkdir -p "$results"
. "$here/vm/tap.sh"

# The TAP streams each job writes (selftests/guest/): one missing is a
# part or a program that never ran.
SINGLE_STREAMS="module api teardown conn-single config pool-single pool map
	loop-single map-loop loop-single-end tcp-single map-tcp tcp-single-end
	fault-single pool-teardown named"
HOSTILE_STREAMS="fuzz rogue kept guard"

# Judges a finished guest: its job, its TAP, its kernel log. Returns 0
# if all is well, 1 if a test failed, 2 if the guest itself failed (the
# end of its console shown then).
judge_guest() {
	local label=$1 run=$2 expected=$3 failed_before=$failed
	[ -s "$run/boot-retried" ] && echo "# [$label] note: $(cat "$run/boot-retried")"
	collect_tap "$label" "$run" "$expected"
	if vm_judge "$run"; then
		report OK "[$label] guest finished with a clean kernel log"
	else
		local problems=()
		mapfile -t problems < "$run/problems"
		report FAIL "[$label] guest finished with a clean kernel log" \
			"${problems[@]}" "console: $run/console.log"
		[ -s "$run/bad-lines" ] && sed 's/^/#     /' "$run/bad-lines" | head -n 20
		vm_console_tail "$run" "#     console: "
		return 2
	fi
	[ "$failed" -eq "$failed_before" ] || return 1
}

# link_counters RUNDIR NODE: a guest's NIC counters at its end, on one
# line ("ip -s link": RX and TX bytes, packets, errors, drops; and the
# interrupts of its receive and send queues).
link_counters() {
	printf 'host %s eth0 ' "$2"
	sed -n '3,6p' "$1/out/link.txt" 2>/dev/null | tr -s ' \n' ' '
	awk '/-(input|output)\.[0-9]+$/ {
		n = 0
		for (i = 2; $i ~ /^[0-9]+$/; i++)
			n += $i
		printf "%s irqs %d ", $NF, n
	}' "$1/out/link.txt" 2>/dev/null
}

# Judges host A and host B of a pair. One guest's failure often starts
# on the other (a peer that fell silent or crashed, a barrier it never
# reached): if either failed, the end of each console not shown yet is.
judge_pair() {
	local label=$1 pair=$2 node rc_a rc_b rc stall stalled=0
	judge_guest "$label host-a" "$pair/a" pair-a
	rc_a=$?
	judge_guest "$label host-b" "$pair/b" pair-b
	rc_b=$?
	[ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ] && return 0
	for node in a b; do
		# A link whose frames stopped moving fails every test on
		# both hosts: said once, with when it began.
		stall=$(grep -m 1 -a "NETDEV WATCHDOG" "$pair/$node/console.log" 2>/dev/null | tr -d '\r')
		if [ -n "$stall" ]; then
			echo "# [$label host-$node] its NIC stopped sending: $stall"
			recap+=("#   [$label host-$node] its NIC stopped sending: $stall")
			stalled=1
		fi
		[ "$node" = a ] && rc=$rc_a || rc=$rc_b
		[ "$rc" -eq 2 ] && continue
		echo "# [$label host-$node] its console, as the pair failed: $pair/$node/console.log"
		vm_console_tail "$pair/$node" "#     console: "
	done
	# And each host's NIC counters at its end, once.
	[ "$stalled" -eq 1 ] &&
		recap+=("#     $(link_counters "$pair/a" a)" "#     $(link_counters "$pair/b" b)")
	return 1
}

# --- dependencies and host-side builds --------------------------------
if [ "${RPAGE_SKIP_DEPS:-0}" != 1 ]; then
	if ! "$RPAGE_REPO/scripts/install-deps.sh"; then
		report FAIL "install dependencies"
		echo "$passed passed, $failed failed, $skipped skipped"
		exit 1
	fi
fi

mapfile -t kernels < <(vm_kernels)
if [ ${#kernels[@]} -eq 0 ]; then
	report FAIL "find kernels" "no Debian 6.1 or 6.12 kernel with headers installed"
	echo "$passed passed, $failed failed, $skipped skipped"
	exit 1
fi
echo "# kernels: ${kernels[*]}"

if make -s user selftests > "$results/make-user.log" 2>&1; then
	report OK "userspace builds with -Werror (librpage, rpagectl, selftests)"
else
	report FAIL "userspace builds with -Werror" "$(tail -n 20 "$results/make-user.log")"
fi

"$RPAGE_REPO/selftests/host/checks.sh" > "$results/host-checks.tap" 2>&1
collect_tap_file "$results/host-checks.tap"
# The harness fails what it must (before any guest trusts it).
"$RPAGE_REPO/selftests/host/harness.sh" > "$results/harness.tap" 2>&1
collect_tap_file "$results/harness.tap"

# The run's budget: CI stops a run at 90 minutes, and a run stopped says
# nothing of what failed. No guest's watchdog lets it run past the
# budget (less a minute to judge it), and a guest with less than two
# minutes left does not start and fails; the recap and the count come
# out either way, and on SIGTERM or SIGINT too.
RUN_BUDGET=${RPAGE_RUN_BUDGET:-4800}
job_times=()

# job_timeout NAME WATCHDOG: the watchdog NAME gets, WATCHDOG or what is
# left of the budget; false (a failure reported) if too little is left.
job_timeout() {
	local left=$(( RUN_BUDGET - ($(date +%s) - start) - 60 ))
	if [ "$left" -lt 120 ]; then
		report FAIL "[$1] not run: ${left}s left of the run's ${RUN_BUDGET}s budget"
		return 1
	fi
	echo $(( left < $2 ? left : $2 ))
}

# job_took NAME T0 WATCHDOG: how long NAME ran, said now and in the summary.
job_took() {
	local took=$(( $(date +%s) - $2 ))
	echo "# [$1] guest ran ${took}s"
	job_times+=("$1: ${took}s of its ${3}s watchdog")
}

# The test points that took longest, over every guest of the run (each
# test point's TAP stream says how long it took: "# took N ms").
slowest_tests() {
	local f k
	for k in "${kernels[@]}"; do
		printf '%s\n' "$VM_DIR/$k"/*/out/tap/*.tap "$VM_DIR/$k"/*/[ab]/out/tap/*.tap
	done | while read -r f; do
		[ -f "$f" ] || continue
		awk -v where="${f#"$VM_DIR"/}" '
			/^# took [0-9]+ ms$/ { ms = $3; next }
			/^(not )?ok [0-9]+ / && ms != "" {
				name = $0; sub(/^(not )?ok [0-9]+ /, "", name)
				print ms, where, name; ms = ""
			}' "$f"
	done | sort -rn | head -n 15
}

finish() {
	if [ ${#kernels[@]} -gt 0 ]; then
		echo "# the slowest test points (ms, stream, test):"
		slowest_tests | sed 's/^/#   /'
	fi
	if [ ${#recap[@]} -gt 0 ]; then
		echo "# what failed, again (details above):"
		printf '%s\n' "${recap[@]}" | head -n 120
	fi
	[ ${#job_times[@]} -gt 0 ] && printf '# %s\n' "${job_times[@]}"
	echo "# total time $(( $(date +%s) - start ))s of a ${RUN_BUDGET}s budget"
	echo "$passed passed, $failed failed, $skipped skipped"
}
trap 'report FAIL "the run was stopped after $(( $(date +%s) - start ))s"; finish; exit 1' TERM INT

# The quick job (RPAGE_QUICK=1, make check-debug-quick): what a change
# to kmod/ runs on the debug kernel before its stop, in one guest and
# well under 40 minutes there, in place of the four jobs: connections,
# pools over the three transports (scoped ones too), faults through
# named mappings and the loop, the hostile peers and the fuzzer, each
# part cut to its core. PART:TESTS a line, as selftests/mutate.sh takes
# them (TESTS: the test points and kselftest streams kept, besides each
# part's setup and teardown).
QUICK_PARTS='
conn-single.sh:.
pool-single.sh:^pools_created|^kernel_pool|^rpagectl_write|^pool_scoped|^loop_peer_added|^loop_and_rdma|^loop_destroy_waits|^tcp_peer_and|^tcp_and_rdma|^tcp_rogue_reader|^pool_destroyed|^peer_deleted_while|^loop_peer_deleted|^tcp_peer_deleted|^unload_with|^pool$|^map-loop$|^loop_mapping_bounded|^loop_writes_survive
named-single.sh:kvm_fault|charged|compaction|map_add_makes|processes_share|named_evict|huge
rogue-single.sh:.
guard-single.sh:^pool_scoped|^tcp_destroy_ends
fuzz-single.sh:.
'
# The fuzzer's calls in the quick job: a fifth of the full run's.
QUICK_ENV='RPAGE_FUZZ_CALLS=20000 RPAGE_FUZZ_LOOP_CALLS=10000'

# run_quick KVER UDP_PORT: the quick job on KVER, judged.
run_quick() {
	local kver=$1 run=$VM_DIR/$1/quick parts=$VM_DIR/$1/quick-parts
	local spec part job streams t0 tmo
	rm -rf "$parts"
	mkdir -p "$parts"
	job=$parts/job.sh
	{
		echo '. "$RPAGE_REPO/selftests/guest/lib.sh"'
		echo "export $QUICK_ENV"
		echo 'rxe_up || echo "rxe setup failed"'
	} > "$job"
	while read -r spec; do
		[ -n "$spec" ] || continue
		part=${spec%%:*}
		vm_part_only "$part" "${spec#*:}" "$parts/$part"
		echo ". $parts/$part" >> "$job"
	done <<< "$QUICK_PARTS"
	echo 'exit 0' >> "$job"
	streams=$(vm_part_streams "$parts"/*.sh | tr '\n' ' ')
	t0=$(date +%s)
	tmo=$(job_timeout "$kver quick" "${RPAGE_VM_TIMEOUT:-2700}") || return
	vm_boot "$kver" "$run" "${job#"$RPAGE_REPO"/}" --smp 2 --mem 2048 \
		--udp "$2:$(($2 + 1))" --timeout "$tmo"
	job_took "$kver quick" "$t0" "$tmo"
	judge_guest "$kver quick" "$run" "$streams"
}

# --- guests, kernel by kernel -----------------------------------------
JOBS=${RPAGE_JOBS:-single hostile pair pair-tcp}
for job in $JOBS; do
	case " single hostile pair pair-tcp " in
	*" $job "*) ;;
	*) report FAIL "RPAGE_JOBS: no job '$job' (single, hostile, pair, pair-tcp)"
	   finish; exit 1 ;;
	esac
done
# want JOB: whether RPAGE_JOBS names JOB.
want() {
	case " $JOBS " in *" $1 "*) return 0 ;; esac
	return 1
}
port_base=$((30000 + ($$ % 1000) * 20))
for kver in "${kernels[@]}"; do
	if vm_build_module "$kver" > "$results/module-$kver.log" 2>&1; then
		report OK "[$kver] rpage.ko builds with W=1 -Werror"
	else
		report FAIL "[$kver] rpage.ko builds with W=1 -Werror" \
			"$(tail -n 20 "$results/module-$kver.log")"
		continue
	fi
	accel=$(vm_accel "$kver")
	echo "# [$kver] accelerator: $accel"

	if [ "${RPAGE_QUICK:-0}" = 1 ]; then
		run_quick "$kver" "$port_base"
		continue
	fi

	# One guest, rxe loopback. Its job takes about 14 minutes under TCG
	# here: the default watchdog (15) leaves too little for a slower day.
	run=$VM_DIR/$kver/single
	t0=$(date +%s)
	if want single && tmo=$(job_timeout "$kver single" "${RPAGE_VM_TIMEOUT:-1200}"); then
		vm_boot "$kver" "$run" selftests/guest/single.sh --smp 2 --mem 2048 \
			--udp "$port_base:$((port_base + 1))" --timeout "$tmo"
		job_took "$kver single" "$t0" "$tmo"
		judge_guest "$kver single" "$run" "$SINGLE_STREAMS"
	fi

	# One guest of hostile input (ioctl fuzzer, rogue exporter), with
	# the slab allocator checking every object it hands out and frees.
	run=$VM_DIR/$kver/hostile
	t0=$(date +%s)
	# Its job takes 8 to 13 minutes under TCG here.
	if want hostile && tmo=$(job_timeout "$kver hostile" "${RPAGE_VM_TIMEOUT:-1500}"); then
		RPAGE_VM_APPEND="${RPAGE_VM_APPEND:-} slub_debug=FZPU" \
			vm_boot "$kver" "$run" selftests/guest/hostile.sh --smp 2 \
			--mem 2048 --udp "$((port_base + 2)):$((port_base + 3))" \
			--timeout "$tmo"
		job_took "$kver hostile" "$t0" "$tmo"
		judge_guest "$kver hostile" "$run" "$HOSTILE_STREAMS"
	fi

	# Two guests, host A and host B, on one link over a Unix socket.
	# Its job takes 13 to 15 minutes under TCG here: more than the
	# default watchdog leaves.
	pair=$VM_DIR/$kver/pair
	t0=$(date +%s)
	if want pair && tmo=$(job_timeout "$kver pair" "${RPAGE_VM_TIMEOUT:-1200}"); then
		vm_boot_pair "$kver" "$pair" selftests/guest/pair.sh --timeout "$tmo"
		job_took "$kver pair" "$t0" "$tmo"
		judge_pair "$kver" "$pair"
	fi

	# The same two hosts with no RDMA device: everything over TCP.
	pair=$VM_DIR/$kver/pair-tcp
	t0=$(date +%s)
	if want pair-tcp && tmo=$(job_timeout "$kver pair-tcp" "${RPAGE_VM_TIMEOUT:-1200}"); then
		vm_boot_pair "$kver" "$pair" selftests/guest/pair-tcp.sh --timeout "$tmo"
		job_took "$kver pair-tcp" "$t0" "$tmo"
		judge_pair "$kver pair-tcp" "$pair"
	fi
done

finish
[ "$failed" -eq 0 ]
