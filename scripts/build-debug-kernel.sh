#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-debug-kernel.sh
#
# Builds the kernel of the debug tier (make check-debug) once, and reuses
# it afterwards: Debian's 6.12 source (linux-source-6.12), configured
# from Debian's own 6.12 config, trimmed to the modules the guests load
# and rid of built-in parts they never use (about 1900 objects to
# compile rather than 2700), with the checkers the kernel's
# maintainers run: KASAN, lockdep
# (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, kmemleak, DEBUG_LIST and
# debug objects. Debian packages no such kernel.
#
# Everything goes to build/debug-kernel/ (never committed), laid out
# like a root file system so that the VM harness finds the kernel as it
# finds an installed one (selftests/vm/lib.sh, RPAGE_VM_KERNEL_ROOT):
#   boot/vmlinuz-KVER, boot/config-KVER, boot/System.map-KVER
#   lib/modules/KVER/     the modules (INSTALL_MOD_PATH), whose build
#                         link is the build tree below
#   src/linux-source-6.12/  the build tree: make -C it M=DIR modules
#   kver, stamp, build.log, build-time
# The stamp holds a hash of the source version, Debian's config and the
# changes below: while it matches, nothing is rebuilt.
#
# Prints KVER (6.12.N-rpage-debug) on standard output, the rest on
# standard error. The build runs under nice -n 19, so that it does not
# starve guests running beside it.
#
# Environment:
#   RPAGE_SKIP_DEPS=1          skip the package installation
#   RPAGE_DEBUG_KERNEL_JOBS    make -j (default: the number of CPUs)
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
root=$repo/build/debug-kernel
series=6.12
localversion=-rpage-debug
jobs=${RPAGE_DEBUG_KERNEL_JOBS:-$(nproc)}

say() {
	echo "build-debug-kernel: $*" >&2
}

die() {
	say "$*"
	exit 1
}

# The modules the guests load (localmodconfig drops every other module
# Debian builds, most of the build time): RDMA and rxe, the qdiscs,
# filters and actions the tests shape links with (selftests/guest/ride.sh),
# and the socket diagnostics that let ss -K cut connections and the veth
# pairs the guard's IPv6 test links through (guard-single.sh).
# virtio and 9p are built in (below) and need no initramfs modules.
MODULES="
ib_core ib_cm iw_cm rdma_cm ib_uverbs rdma_ucm rdma_rxe
udp_tunnel ip6_udp_tunnel
sch_netem sch_prio cls_u32 sch_ingress cls_matchall act_gact
inet_diag tcp_diag veth
"

# Applied after the trimming; each line is checked in the final config.
FRAGMENT="
CONFIG_LOCALVERSION=\"$localversion\"
# CONFIG_LOCALVERSION_AUTO is not set
# Debian's signing keys are not in the source package; the modules
# here are loaded unsigned (lockdown would insist on signatures).
# CONFIG_MODULE_SIG is not set
# CONFIG_SECURITY_LOCKDOWN_LSM is not set
CONFIG_SYSTEM_TRUSTED_KEYS=\"\"
# CONFIG_MODULE_COMPRESS is not set
# No debug info: it doubles the build; KASAN and lockdep reports name
# functions and offsets without it.
CONFIG_DEBUG_INFO_NONE=y
# CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT is not set
# CONFIG_IKHEADERS is not set
# KASAN makes some frames larger than FRAME_WARN: warnings, not errors.
# CONFIG_WERROR is not set
# The guests' root and network, built in.
CONFIG_VIRTIO=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_9P_FS_POSIX_ACL=y
# What the tests use.
CONFIG_INFINIBAND=m
CONFIG_INFINIBAND_USER_ACCESS=m
CONFIG_INFINIBAND_ADDR_TRANS=y
CONFIG_RDMA_RXE=m
CONFIG_USERFAULTFD=y
CONFIG_DEBUG_FS=y
CONFIG_FTRACE=y
CONFIG_MEMCG=y
CONFIG_NET_SCHED=y
CONFIG_NET_SCH_NETEM=m
CONFIG_NET_SCH_PRIO=m
CONFIG_NET_SCH_INGRESS=m
CONFIG_NET_CLS_U32=m
CONFIG_NET_CLS_MATCHALL=m
CONFIG_NET_CLS_ACT=y
CONFIG_NET_ACT_GACT=m
# Under TCG with KASAN and lockdep, ACPI's interpreter is so slow that
# evaluating QEMU's PCI interrupt routing (_PRT) hits its 30 s loop
# timeout, once per device: route from the BIOS's table instead.
CONFIG_CMDLINE_BOOL=y
CONFIG_CMDLINE=\"pci=noacpi\"
# CONFIG_CMDLINE_OVERRIDE is not set
# Built-in parts of Debian's config no guest uses: a third of the build
# (and boot time: no crypto self-tests, no TPM or IOMMU probing).
# CONFIG_XEN is not set
# CONFIG_HYPERV is not set
# CONFIG_SECURITY is not set
# CONFIG_AUDIT is not set
# CONFIG_BPF_SYSCALL is not set
# CONFIG_CGROUP_BPF is not set
# CONFIG_IO_URING is not set
# CONFIG_MPTCP is not set
# CONFIG_NETFILTER is not set
# CONFIG_XFRM_USER is not set
# CONFIG_NET_KEY is not set
# CONFIG_MPLS is not set
# CONFIG_IPV6_SEG6_LWTUNNEL is not set
# CONFIG_IPV6_IOAM6_LWTUNNEL is not set
# CONFIG_IPV6_MIP6 is not set
# CONFIG_WIREGUARD is not set
# CONFIG_WIRELESS is not set
# CONFIG_WLAN is not set
# CONFIG_CXL_BUS is not set
# CONFIG_INTEL_IOMMU is not set
# CONFIG_AMD_IOMMU is not set
# CONFIG_EFI is not set
# CONFIG_HIBERNATION is not set
# CONFIG_SUSPEND is not set
# CONFIG_KEXEC is not set
# CONFIG_KEXEC_FILE is not set
# CONFIG_CRASH_DUMP is not set
# CONFIG_LIVEPATCH is not set
# CONFIG_IA32_EMULATION is not set
# CONFIG_X86_X32_ABI is not set
# CONFIG_NUMA is not set
# CONFIG_MEMORY_HOTPLUG is not set
# CONFIG_ZSWAP is not set
# CONFIG_DAMON is not set
# CONFIG_FUSE_FS is not set
# CONFIG_MD is not set
# CONFIG_INPUT_JOYSTICK is not set
# CONFIG_INPUT_TABLET is not set
# CONFIG_INPUT_TOUCHSCREEN is not set
# CONFIG_INPUT_MISC is not set
# CONFIG_INPUT_MOUSE is not set
# CONFIG_FB is not set
# CONFIG_USB_SUPPORT is not set
# CONFIG_I2C is not set
# CONFIG_SPI is not set
# CONFIG_GPIOLIB is not set
# CONFIG_PINCTRL is not set
# CONFIG_PINCTRL_INTEL is not set
# CONFIG_RAS is not set
# CONFIG_TCG_TPM is not set
# CONFIG_HW_RANDOM is not set
# CONFIG_AGP is not set
# CONFIG_VHOST_MENU is not set
# CONFIG_WATCHDOG is not set
# CONFIG_ACPI_APEI is not set
# CONFIG_ACPI_NFIT is not set
# CONFIG_PCIEPORTBUS is not set
# CONFIG_HOTPLUG_PCI is not set
# CONFIG_DMI_SYSFS is not set
# CONFIG_X86_INTEL_LPSS is not set
# CONFIG_X86_AMD_PLATFORM_DEVICE is not set
# CONFIG_X86_MCE is not set
# CONFIG_X86_SGX is not set
# CONFIG_X86_RESCTRL is not set
# CONFIG_X86_USER_SHADOW_STACK is not set
# CONFIG_INTEL_TDX_GUEST is not set
# CONFIG_AMD_MEM_ENCRYPT is not set
# CONFIG_PERF_EVENTS_INTEL_UNCORE is not set
# CONFIG_PERF_EVENTS_INTEL_RAPL is not set
# CONFIG_PERF_EVENTS_INTEL_CSTATE is not set
# CONFIG_PERF_EVENTS_AMD_UNCORE is not set
# CONFIG_SIGNED_PE_FILE_VERIFICATION is not set
CONFIG_CRYPTO_MANAGER_DISABLE_TESTS=y
# The checkers.
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_KASAN_VMALLOC=y
CONFIG_PROVE_LOCKING=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
# Lockdep's tables sized as syzbot sizes them: the defaults run out in a
# long run (\"BUG: MAX_LOCKDEP_CHAIN_HLOCKS too low!\"), and lockdep then
# turns itself off.
CONFIG_LOCKDEP_BITS=16
CONFIG_LOCKDEP_CHAINS_BITS=17
CONFIG_LOCKDEP_STACK_TRACE_BITS=20
CONFIG_LOCKDEP_STACK_TRACE_HASH_BITS=14
CONFIG_LOCKDEP_CIRCULAR_QUEUE_BITS=12
CONFIG_DEBUG_KMEMLEAK=y
# CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF is not set
# Scanned when the suite asks (selftests/vm/guest-init), not every 10
# minutes behind the tests' backs.
# CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN is not set
CONFIG_DEBUG_LIST=y
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_OBJECTS_RCU_HEAD=y
CONFIG_DEBUG_OBJECTS_PERCPU_COUNTER=y
CONFIG_DEBUG_OBJECTS_ENABLE_DEFAULT=1
"

if [ "${RPAGE_SKIP_DEPS:-0}" != 1 ]; then
	"$repo/scripts/install-deps.sh" >&2 || die "cannot install the packages"
fi
tarball=/usr/src/linux-source-$series.tar.xz
[ -s "$tarball" ] || die "no $tarball (apt-get install linux-source-$series)"
srcver=$(dpkg-query -W -f '${Version}' "linux-source-$series")
base=$(ls /boot/config-$series.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$base" ] || die "no /boot/config-$series.*-amd64 (apt-get install linux-image-$series-amd64)"

mkdir -p "$root"
# One build at a time: a second make check-debug waits for the first.
exec 9> "$root/.lock"
flock 9

key=$( { echo "$srcver"; sha256sum < "$base"; echo "$MODULES"; echo "$FRAGMENT";
	 gcc --version | head -n 1; } | sha256sum | cut -d' ' -f1)
tree=$root/src/linux-source-$series
if [ -s "$root/stamp" ] && [ "$(cat "$root/stamp")" = "$key" ]; then
	kver=$(cat "$root/kver")
	if [ -s "$root/boot/vmlinuz-$kver" ] &&
	   [ -s "$root/lib/modules/$kver/modules.dep" ] &&
	   [ -s "$tree/Module.symvers" ]; then
		say "$kver is built (build/debug-kernel/stamp matches)"
		echo "$kver"
		exit 0
	fi
fi

start=$(date +%s)
rm -rf "$root/src" "$root/boot" "$root/lib" "$root/stamp" "$root/kver"
mkdir -p "$root/src" "$root/boot"
log=$root/build.log
: > "$log"
say "extracting linux-source-$series $srcver"
nice -n 19 tar -C "$root/src" -xJf "$tarball"

cd "$tree"
# Debian's config, trimmed to what the guests load.
cp "$base" .config
echo "$MODULES" | tr ' ' '\n' | sed '/^$/d' > "$root/modules.list"
say "configuring from $(basename "$base")"
yes '' | make LSMOD="$root/modules.list" localmodconfig >> "$log" 2>&1 ||
	die "localmodconfig failed: $log"
echo "$FRAGMENT" >> .config
make olddefconfig >> "$log" 2>&1 || die "olddefconfig failed: $log"
missing=""
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" .config || missing="$missing $line" ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }
		sym=${sym%% *}
		grep -qE "^$sym=[ym]" .config && missing="$missing $sym=n" ;;
	esac
done <<< "$FRAGMENT"
[ -z "$missing" ] || die "the config lacks:$missing"
grep -qx 'CONFIG_TRACEPOINTS=y' .config || die "the config lacks tracepoints"

say "building with -j$jobs under nice -n 19 (log: $log)"
nice -n 19 make -j"$jobs" >> "$log" 2>&1 || die "the build failed: $log"
# Known only once the build has synced the config (LOCALVERSION).
kver=$(cat include/config/kernel.release)
case "$kver" in
*"$localversion") ;;
*) die "built $kver, not a $localversion kernel" ;;
esac
nice -n 19 make INSTALL_MOD_PATH="$root" modules_install >> "$log" 2>&1 ||
	die "modules_install failed: $log"
cp arch/x86/boot/bzImage "$root/boot/vmlinuz-$kver"
cp .config "$root/boot/config-$kver"
cp System.map "$root/boot/System.map-$kver"

echo "$(( $(date +%s) - start ))" > "$root/build-time"
echo "$kver" > "$root/kver"
echo "$key" > "$root/stamp"
say "built $kver in $(cat "$root/build-time")s"
echo "$kver"
