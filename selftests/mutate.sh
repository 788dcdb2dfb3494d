#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The mutation check (not part of make check): builds rpage.ko with one
# deliberate one-line defect at a time and runs, in a guest, the tests
# that should catch it. Every mutation must be caught - a test failing,
# or the guest's kernel log not clean - or the suite has a hole there.
#
#   selftests/mutate.sh [-l] [NAME...]
#
# -l lists the mutations. With NAMEs, only those run. Prints one line per
# mutation, "caught NAME: by TEST" or "SURVIVED NAME", and a summary;
# exit status 0 only if every mutation run was caught. Each runs on the
# first kernel of RPAGE_KERNELS (RPAGE_MUTATE_KVER to choose), one guest
# at a time; its build and guest land in build/mutate/NAME/.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/vm/lib.sh"
cd "$RPAGE_REPO" || exit 1

# NAME|FILE|SED|PART:TESTS [PART:TESTS...]
# SED changes one line of kmod/FILE, no more. TESTS, a regular expression
# without spaces, picks the test points (run_test) and kselftest streams
# (run_kselftest) of the guest part PART to run; its setup and teardown
# points run as well.
MUTATIONS='
tcp-no-bounds|rpage-tcp-xfer.c|s/if (offset >= length .. bytes > length - offset)$/if (0)/|pool-single.sh:^tcp_peer_and|^tcp_rogue_reader
pool-any-generation|rpage-pool.c|s/if (pool->id != id .. pool->generation != generation)$/if (pool->id != id)/|pool-single.sh:^tcp_peer_and|^tcp_rogue_reader
rpool-no-length-check|rpage-rpool.c|s/length > rpool->length - offset) {/length > rpool->length - offset \&\& 0) {/|pool-single.sh:^pool$
tcp-wrong-page|rpage-tcp-xfer.c|s/page = rpage_pool_page(pool, offset + ((u64)i << PAGE_SHIFT));/page = rpage_pool_page(pool, offset + ((u64)(i ^ 1) << PAGE_SHIFT));/|pool-single.sh:^tcp_peer_and|^tcp_and_rdma
fault-nowait-waits|rpage-fault.c|/^\tif (fc->vmf->flags \& FAULT_FLAG_RETRY_NOWAIT) {$/{N;s/^\tif (.*\n\t\trpage_fault_start_read/\tif (0) {\n\t\trpage_fault_start_read/}|named-single.sh:kvm_fault
fops-no-owner|rpage-main.c|/^static const struct file_operations rpage_fops = {/,/};/s/^\t\.owner\t\t= THIS_MODULE,$//|named-single.sh:unload_refused
folio-never-uptodate|rpage-map.c|s/^\tfolio_mark_uptodate(folio);$/\t;/|pool-single.sh:^map$
tcp-peer-crowds|rpage-tcp.c|s/if (n >= RPAGE_TCP_PEER_EMBRYOS) {/if (0) {/|guard-single.sh:crowd
tcp-answers-live-pages|rpage-tcp-xfer.c|s/if (rpage_pool_pages_stable(pool)) {/if (1) {/|guard-single.sh:destroy_ends
ipv6-any-scope|rpage-main.c|s/return f6->sin6_scope_id == p6->sin6_scope_id;/return true;/|guard-single.sh:ipv6
tcp-hello-deadline-long|rpage-tcp.c|s/msecs_to_jiffies(rpage_connect_timeout_ms);$/msecs_to_jiffies(rpage_connect_timeout_ms) * 10;/|guard-single.sh:crowd
map-kill-not-dead|rpage-map.c|s/^\tWRITE_ONCE(map->dead, true);$/\t;/|guard-single.sh:forced_map_del
evict-claim-no-yield|rpage-map.c|/^\t\tfolio_batch_init(\&fbatch);$/,/^\t}$/s/^\t\tcond_resched();$/\t\t;/|guard-single.sh:large_mapping
tcp-write-read-only|rpage-tcp-xfer.c|s/else if (write \&\& !rpage_pool_writable(pool))/else if (0)/|pool-single.sh:^tcp_peer_and|^tcp_rogue_reader
api-reserved-ignored|rpage-main.c|s/if (arg.reserved0 .. memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))$/if (arg.reserved0)/|single.sh:^api$
pool-destroy-no-wait|rpage-pool.c|/Off the table since the unlink/,+1s/^\tsynchronize_srcu(\&rpage_pool_srcu);$/\t;/|guard-single.sh:destroy_ends
fault-not-counted|rpage-fault.c|s/^\trpage_fault_count(map, RPAGE_FC_FAULTS, 1);$/\t;/|pool-single.sh:^map$
acks-unbounded|rpage-rpool.c|s/peer->nr_acks < RPAGE_ACKS_MAX)/peer->nr_acks < RPAGE_ACKS_MAX * 1000)/|guard-single.sh:flooding
scope-not-checked|rpage-pool.c|s/if (rpage_scope_has(srcu_dereference(pool->scope,$/if (1 + 0 * rpage_scope_has(srcu_dereference(pool->scope,/|guard-single.sh:pool_scoped
pd-shared-by-peers|rpage-ibdev.c|s/if (ppd->peer_id == peer_id) {/if (ppd) {/|rogue-single.sh:scoped_pool_keys
scope-keeps-regions|rpage-pool.c|s/if (!rpage_scope_has(rpage_pool_scope(pool), reg->ppd->peer_id))/if (0)/|rogue-single.sh:scoped_pool_keys
refused-access-not-counted|rpage-pool.c|s/^\t\tatomic64_inc(\&peer->refused_access);$/\t\t;/|guard-single.sh:pool_scoped
table-not-scoped|rpage-pool.c|s/^\t\t\tif (!rpage_pool_announced_to(pool, chans\[i\]->c.peer))$/\t\t\tif (0)/|guard-single.sh:pool_scoped
publish-not-scoped|rpage-pool.c|/A reader still being synced gets it/,/rpage_pool_told/s/^\tn = rpage_pool_told(pool, chans, n);$/\t;/|guard-single.sh:pool_scoped
scope-out-not-withdrawn|rpage-pool.c|s/^\t\t} else if (was \&\& !now) {$/\t\t} else if (0) {/|guard-single.sh:pool_scoped
get-peers-none|rpage-pool.c|s/^\t\tnr = scope->nr;$/\t\tnr = 0;/|pool-single.sh:pool_scoped
file-pool-unwatched|rpage-pool.c|s/^\twatch->mask = FS_MODIFY;$/\twatch->mask = 0;/|guard-single.sh:file_pool_follows
no-fault-around|rpage-map.c|s/^\t\.map_pages = rpage_vm_map_pages,$//|pool-single.sh:^map$
fault-around-no-hits|rpage-fault.c|s/^\t\trpage_map_pages_prefetch_hits(map, start_pgoff, end_pgoff);$/\t\t;/|pool-single.sh:^map$
kill-leaves-pages|rpage-map.c|s/^\t\t\trpage_folio_truncate(map->mapping, folio);$/\t\t\t;/|guard-single.sh:forced_map_del named-single.sh:del_in_use
pull-not-kept|rpage-fault.c|s/^\t\trpage_map_keep(map);$/\t\t;/|pool-single.sh:^map$
refetch-not-counted|rpage-fault.c|s/^\tif (reclaimed)$/\tif (0)/|pool-single.sh:^map$
file-pool-always-intact|rpage-pool.c|s/->mapping) != mapping)$/->mapping) != mapping \&\& 0)/|pool-single.sh:file_pool_follows
writeback-writes-nothing|rpage-fs.c|s/^\tret = rpage_xfer(\&x);$/\tret = 0;/|pool-single.sh:^map$|^loop_peer_added|^loop_writes_survive
inode-fake-hashed|rpage-fs.c|s/^\tinsert_inode_hash(inode);$/\tinode_fake_hash(inode);/|pool-single.sh:^map$
writeback-redirties-for-good|rpage-fs.c|s/^\t\tif (ret \&\& !for_good)$/\t\tif (ret)/|named-single.sh:^named_pull_then
rdma-sge-one-page|rpage-rdma-xfer.c|s/^\t\tmax_n = min(max_pages, folio_nr_pages(folio) - idx);$/\t\tmax_n = 1;/|named-single.sh:^named_huge_pages_are
prefetch-huge-never|rpage-fault.c|s/^\t\tif (run->huge \&\& IS_ALIGNED(run->next, RPAGE_HUGE_NR)) {$/\t\tif (0) {/|named-single.sh:^named_huge_pull
huge-fallback-no-cause|rpage-fault.c|s/^\trpage_fault_count(map, RPAGE_FC_HUGE_FB + cause, 1);$/\t;/|named-single.sh:^named_huge_pull
rdma-interrupt-wakes-all|rpage-rdma-xfer.c|s/^\trpage_xfer_wake_one(\&conn->cq_wait);$/\twake_up_all(\&conn->cq_wait);/|pool-single.sh:^map$
'

mutation_field() {
	echo "$1" | cut -d'|' -f"$2"
}

# mutation_build NAME FILE SED DIR KVER: rpage.ko with the mutation, in DIR.
mutation_build() {
	local name=$1 file=$2 sed=$3 dir=$4 kver=$5 changed
	rm -rf "$dir"
	vm_module_sources "$dir/src"
	sed -i "$sed" "$dir/src/kmod/$file"
	changed=$(diff "kmod/$file" "$dir/src/kmod/$file" | grep -c '^>')
	if [ "$changed" -ne 1 ]; then
		echo "mutation $name changes $changed lines of $file, not one: fix its pattern" >&2
		return 1
	fi
	diff -u "kmod/$file" "$dir/src/kmod/$file" > "$dir/mutation.diff"
	# Without -Werror: a mutation may leave a variable unused.
	vm_kbuild "$dir/src" "$kver" "$dir/build.log" ||
		{ echo "mutation $name does not build: $dir/build.log" >&2; return 1; }
}

# mutation_run NAME DIR KVER PART:TESTS...: boots a guest running the
# kept tests against DIR's module; prints what caught it, if anything.
mutation_run() {
	local name=$1 dir=$2 kver=$3 spec part job=$2/job.sh run=$2/guest caught
	shift 3
	{
		echo '. "$RPAGE_REPO/selftests/guest/lib.sh"'
		echo "RPAGE_KO=$dir/src/kmod/rpage.ko"
		echo 'rxe_up || echo "rxe setup failed"'
	} > "$job"
	for spec in "$@"; do
		part=${spec%%:*}
		vm_part_only "$part" "${spec#*:}" "$dir/$part"
		echo ". $dir/$part" >> "$job"
	done
	echo 'exit 0' >> "$job"
	vm_boot "$kver" "$run" "${job#"$RPAGE_REPO"/}" --smp 2 --mem 2048 \
		--timeout "${RPAGE_MUTATE_TIMEOUT:-900}" > /dev/null 2>&1
	caught=$(cat "$run"/out/tap/*.tap 2>/dev/null | grep -m 3 '^not ok' |
		sed 's/^not ok [0-9]* //' | paste -sd, -)
	if ! vm_judge "$run" > /dev/null 2>&1; then
		caught="${caught:+$caught; }the guest: $(head -n 1 "$run/problems")"
	fi
	echo "$caught"
}

list=0
[ "${1:-}" = -l ] && { list=1; shift; }
kver=${RPAGE_MUTATE_KVER:-$(vm_kernels | head -n 1)}
if [ "$list" = 0 ]; then
	make -s user selftests || exit 1
	vm_build_module "$kver" > /dev/null || exit 1
fi

ran=0 survived=0
while IFS= read -r m; do
	[ -n "$m" ] || continue
	name=$(mutation_field "$m" 1)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	if [ "$list" = 1 ]; then
		echo "$name: kmod/$(mutation_field "$m" 2): $(mutation_field "$m" 3)"
		continue
	fi
	dir=$RPAGE_BUILD/mutate/$name
	mutation_build "$name" "$(mutation_field "$m" 2)" "$(mutation_field "$m" 3)" \
		"$dir" "$kver" || { survived=$((survived + 1)); ran=$((ran + 1)); continue; }
	# shellcheck disable=SC2046
	caught=$(mutation_run "$name" "$dir" "$kver" $(echo "$m" | cut -d'|' -f4-))
	ran=$((ran + 1))
	if [ -n "$caught" ]; then
		echo "caught $name: by $caught"
	else
		echo "SURVIVED $name"
		survived=$((survived + 1))
	fi
done <<< "$MUTATIONS"
[ "$list" = 1 ] && exit 0
echo "$ran mutations, $((ran - survived)) caught, $survived survived or did not build"
[ "$survived" -eq 0 ]
