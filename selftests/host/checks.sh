#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side checks, as TAP: kernel coding style (checkpatch --strict),
# sparse on every kernel, the library's exported ABI, and the install
# layout and Debian packages (packages.sh). Runs after the userspace
# build and before the guests.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../vm/lib.sh"
cd "$RPAGE_REPO" || exit 1

n=0
tap() {
	n=$((n + 1))
	echo "$1 $n - $2"
}

tools=$RPAGE_BUILD/tools
if [ ! -s "$tools/checkpatch.pl" ]; then
	./scripts/extract-kernel-files.sh "$tools" scripts/checkpatch.pl \
		scripts/spelling.txt scripts/const_structs.checkpatch
fi
kernel_files=(kmod/*.c kmod/*.h include/uapi/linux/rpage.h selftests/kmod/*.c)
# Findings that come from what a file is, not from its code: the kernel
# version tests of the compat header (the one place they may live) and
# the hyphen in the trace header's own name (TRACE_INCLUDE_FILE).
by_design='^kmod/rpage-compat\.h:[0-9]+: WARNING:(LINUX_VERSION_CODE|CONSTANT_COMPARISON):'
by_design+="|^kmod/rpage-trace\.h:[0-9]+: CHECK:SPACING: spaces preferred around that '-' \(ctx:VxV\)"
out=$(perl "$tools/checkpatch.pl" --no-tree --strict --terse --show-types \
	-f "${kernel_files[@]}" 2>&1 | grep -v "^total: " | grep -Ev "$by_design")
if [ -z "$out" ]; then
	tap ok "checkpatch --strict: kmod/, the UAPI header and the test modules"
else
	tap "not ok" "checkpatch --strict: kmod/, the UAPI header and the test modules"
	echo "$out" | sed 's/^/#   /'
fi

for kver in $(vm_kernels); do
	vm_build_module "$kver" > /dev/null 2>&1 || {
		tap "not ok" "[$kver] sparse (module does not build)"
		continue
	}
	dir=$RPAGE_BUILD/kmod/$kver
	all=$(make -C "$(vm_kernel_build_dir "$kver")" M="$dir" C=2 W=1 modules 2>&1)
	out=$(echo "$all" | grep -E "(warning|error):")
	# A sparse that did not run (not installed) says nothing either.
	if ! command -v sparse > /dev/null || ! echo "$all" | grep -q "^  CHECK "; then
		tap "not ok" "[$kver] sparse and W=1 clean (sparse did not run)"
		echo "$all" | tail -n 5 | sed 's/^/#   /'
	elif [ -z "$out" ]; then
		tap ok "[$kver] sparse and W=1 clean"
	else
		tap "not ok" "[$kver] sparse and W=1 clean"
		echo "$out" | sed 's/^/#   /'
	fi
done

# librpage exports exactly the symbols of its version script, versioned.
lib=$RPAGE_BUILD/user/librpage.so.1
want=$(sed -n 's/^\t\t\(rpage_[a-z_]*\);$/\1/p' ulib/librpage.map | sort)
got=$(nm -D --defined-only "$lib" 2>/dev/null | awk '$3 ~ /@@RPAGE_/ { sub(/@@.*/, "", $3); print $3 }' | sort)
if [ -n "$want" ] && [ "$want" = "$got" ]; then
	tap ok "librpage exports exactly the versioned symbols of librpage.map"
else
	tap "not ok" "librpage exports exactly the versioned symbols of librpage.map"
	diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
fi
soname=$(objdump -p "$lib" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" = librpage.so.1 ]; then
	tap ok "librpage SONAME is librpage.so.1"
else
	tap "not ok" "librpage SONAME is librpage.so.1 (got '$soname')"
fi
# dkms.conf carries the version too; it cannot read VERSION itself.
if grep -qx "PACKAGE_VERSION=\"$(cat VERSION)\"" dkms.conf; then
	tap ok "dkms.conf PACKAGE_VERSION matches VERSION"
else
	tap "not ok" "dkms.conf PACKAGE_VERSION matches VERSION ($(cat VERSION))"
fi
# A guest's kernel report, condensed for the end of a run's output
# (vm_log_report): first line, RIP, the reliable frames, the panic. The
# log is made up, in the format of a 6.12 guest's console.
want='kernel log: WARNING: CPU: 0 PID: 557 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160
  at RIP: 0010:exc_debug_kernel+0xca/0x160
  from asm_exc_debug+0x1f/0x30 < rxe_completer+0x10/0x900 [rdma_rxe] < do_task+0x60/0x1f0 [rdma_rxe] < process_one_work+0x179/0x390 < worker_thread+0x251/0x360
  then Kernel panic - not syncing: Fatal exception in interrupt'
got=$(vm_log_report selftests/host/kernel-report.log)
if [ "$got" = "$want" ]; then
	tap ok "a guest's kernel report is condensed to where and how"
else
	tap "not ok" "a guest's kernel report is condensed to where and how"
	diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
fi
# Whatever the complaint's line holds (a backslash, here), it is said:
# a reason left out of a guest's problems no longer fails its run.
log=$(mktemp)
printf '%s\n' '[    5.000000] rpage: ok' \
	'[    5.100000] BUG: unable to handle page fault for address: 0000000000000008 in "a\b"' > "$log"
got=$(vm_log_report "$log")
rm -f "$log"
if [ "$got" = 'kernel log: BUG: unable to handle page fault for address: 0000000000000008 in "a\b"' ]; then
	tap ok "a kernel complaint with a backslash is reported whole"
else
	tap "not ok" "a kernel complaint with a backslash is reported whole (got '$got')"
fi
# Every manual page renders as it is in the tree (man -l), the pages
# that are another's name too (symbolic links: a .so request would be
# looked for under the current directory).
out=$(for page in ulib/man/*.[38]; do
	man -l "$page" 2>&1 > /dev/null | sed "s|^|$page: |"
done)
if ! command -v man > /dev/null; then
	tap "not ok" "the manual pages render in the tree (man: not found)"
elif [ -z "$out" ]; then
	tap ok "the manual pages render in the tree"
else
	tap "not ok" "the manual pages render in the tree"
	echo "$out" | sed 's/^/#   /'
fi
# rpagectl's bash completion completes what rpagectl takes: objects and
# options, an object's commands (after an abbreviation too), a command's
# keywords and a keyword's values.
comp_out=$(bash -c '
	. /usr/share/bash-completion/bash_completion && . ulib/bash-completion/rpagectl || exit 1
	comp() {
		COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
		_rpagectl rpagectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		echo "$* -> ${COMPREPLY[*]}"
	}
	comp rpagectl p
	comp rpagectl -j ma ""
	comp rpagectl pe a x ""
	comp rpagectl peer add x transport ""
	comp rpagectl map add vm owner roo
	comp rpagectl map add vm pagesize ""
	comp rpagectl po cr 7 w
	comp rpagectl -b /de
' 2>&1)
comp_want='rpagectl p -> peer pool
rpagectl -j ma  -> add del pull evict show help
rpagectl pe a x  -> addr port transport loss-timeout
rpagectl peer add x transport  -> auto rdma tcp loop
rpagectl map add vm owner roo -> root
rpagectl map add vm pagesize  -> 4K 2M
rpagectl po cr 7 w -> writable
rpagectl -b /de -> /dev'
if [ "$comp_out" = "$comp_want" ]; then
	tap ok "rpagectl's bash completion: objects, commands, keywords, values"
else
	tap "not ok" "rpagectl's bash completion: objects, commands, keywords, values"
	diff <(echo "$comp_want") <(echo "$comp_out") | sed 's/^/#   /'
fi
# The documentation builds with Sphinx, warnings as errors (a title
# underline too short, a broken reference, a drawing graphviz cannot
# render all fail it), as make htmldocs builds it.
out=$(/usr/bin/python3 -m sphinx -b html -q -W --keep-going Documentation "$RPAGE_BUILD/htmldocs" 2>&1)
if [ $? -eq 0 ] && [ -s "$RPAGE_BUILD/htmldocs/index.html" ]; then
	tap ok "the documentation builds, with its drawings, and Sphinx warns of nothing"
else
	tap "not ok" "the documentation builds, with its drawings, and Sphinx warns of nothing"
	echo "$out" | tail -n 10 | sed 's/^/#   /'
fi
# The admin guide's libvirt domain validates against libvirt's schema,
# and libvirt turns it into the QEMU arguments the demo runs its VM with:
# the guest RAM a shared file backend on the named mapping's node, as the
# machine's memory. libvirt's QEMU driver runs embedded, in a directory
# of its own: no daemon, nothing of the host's libvirt touched.
xml=Documentation/admin-guide/rpage-libvirt.xml
lv=$(mktemp -d)
out=$( { virt-xml-validate "$xml" &&
	virsh -q -c "qemu:///embed?root=$lv" domxml-to-native qemu-argv "$xml"; } 2>&1)
rm -rf "$lv"
argv=$(echo "$out" | tail -n 1)
missing=""
for want in ' -m 64 ' \
	' -object memory-backend-file,id=rpage-ram,size=64M,mem-path=/dev/rpage-map/vm1,share=on ' \
	' -machine memory-backend=rpage-ram'; do
	case "$argv " in *"$want"*) ;; *) missing+="'$want' " ;; esac
done
if [ -z "$missing" ] && echo "$out" | grep -q "validates$"; then
	tap ok "the libvirt domain validates and gives QEMU the named mapping as guest RAM"
else
	tap "not ok" "the libvirt domain validates and gives QEMU the named mapping as guest RAM"
	echo "#   missing: $missing"
	echo "$out" | tail -n 5 | sed 's/^/#   /'
fi
# make install's layout and librpage.pc, and make deb's packages, their
# contents and lintian (about 15 s).
# shellcheck source=selftests/host/packages.sh
. "$here/packages.sh"
check_packages
echo "1..$n"
