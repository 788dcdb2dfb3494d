# SPDX-License-Identifier: GPL-2.0
#
# rpage: rpage.ko (through the kernel's build system), librpage, rpagectl
# and the selftests.
#
#   make                      module + library + rpagectl
#   make selftests            the test programs (needs linux-source)
#   make KDIR=/path/to/build  against another kernel's headers
#   make check                every test, in QEMU guests (README.md)
#   make check-debug          the guests' tests on a KASAN, lockdep and
#                             kmemleak kernel built here (once, cached)
#   make check-debug-quick    a part of them, for every change to kmod/
#   make demo                 the two-host demo, in QEMU guests: a VM
#                             moved from host A to host B without its RAM
#   make demo-faults          host B faulting in host A's pool
#   make bench                rpage against its baselines, in QEMU guests
#   make bench-count          the instructions a fault executes, against
#                             the kernel's own first touch (QEMU -icount)
#   make install              library, headers, rpagectl, man pages, and
#                             rpage-setup with its systemd unit and udev rule,
#                             bash completion
#   make install-dkms         the module's sources, for DKMS to build
#   make deb                  Debian packages (debian/), in build/deb
#   make htmldocs             the documentation, with its drawings, in
#                             build/htmldocs (Sphinx and graphviz)

VERSION := $(shell cat VERSION)
# librpage's ABI: MAJOR changes only if a released symbol breaks.
ABI_MAJOR := 1
ABI_VERSION := $(ABI_MAJOR).7.0

# The running kernel's build dir; where there is none (a host that
# cannot load modules), the newest installed Debian headers.
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(lastword $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V)))

O_USER ?= build/user
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
# The systemd unit and the udev rule go where Debian 12's systemd and
# udev look for a package's, whatever the PREFIX (pkg-config systemd
# --variable=systemdsystemunitdir, and udev's, say so there).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# The bpftrace scripts, as bpftrace's own tools are kept.
BPFTRACEDIR ?= $(PREFIX)/share/rpage/bpftrace
SYSTEMDUNITDIR ?= /lib/systemd/system
UDEVRULESDIR ?= /lib/udev/rules.d
# The UAPI header is installed as <linux/rpage.h> under a directory of
# rpage's own, which librpage.pc adds to the include path: the files of
# $(INCLUDEDIR)/linux belong to the C library's kernel headers
# (linux-libc-dev on Debian).
UAPI_INCLUDEDIR = $(INCLUDEDIR)/rpage
DESTDIR ?=

CC ?= cc
# CFLAGS, CPPFLAGS and LDFLAGS are the builder's (a distribution's
# hardening flags, for one); what rpage itself needs is added to them.
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
CPPFLAGS_USER := -D_GNU_SOURCE -Iinclude/uapi -Iulib \
	-DRPAGE_LIB_VERSION=\"$(VERSION)\"
USER_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) $(CPPFLAGS_USER) $(CPPFLAGS)

LIB_SO := $(O_USER)/librpage.so.$(ABI_VERSION)
LIB_SONAME := librpage.so.$(ABI_MAJOR)
LIB_A := $(O_USER)/librpage.a
RPAGECTL := $(O_USER)/rpagectl

LIB_SRCS := ulib/librpage.c ulib/librpage-events.c
CTL_SRCS := ulib/rpagectl.c ulib/rpagectl-config.c ulib/rpagectl-pool.c \
	ulib/rpagectl-stat.c ulib/rpagectl-json.c ulib/rpagectl-map.c \
	ulib/rpagectl-save.c ulib/rpagectl-prom.c ulib/rpagectl-monitor.c
CTL_OBJS := $(patsubst ulib/%.c,$(O_USER)/%.o,$(CTL_SRCS))
LIB_HDRS := ulib/librpage.h include/uapi/linux/rpage.h

KSELFTEST_DIR := build/kselftest
# kselftest_harness programs, and the rdma-core peers the tests use.
TEST_PROGS := rpage_api_test rpage_config_test rpage_pool_test rpage_map_test
RDMA_PEERS := rpage_rogue_peer rpage_rogue_exporter rpage_uffd_baseline
TEST_TOOLS := rpage_pattern rpage_fault rpage-bench rpage_ioctl_fuzz
TCP_PEERS := rpage_rogue_tcp
TEST_BINS := $(addprefix $(O_USER)/selftests/,$(TEST_PROGS) $(RDMA_PEERS) \
	$(TCP_PEERS) $(TEST_TOOLS))

.PHONY: htmldocs
.PHONY: all module user selftests check check-debug check-debug-quick demo \
	demo-faults bench bench-count \
	install install-dkms deb clean checkpatch sparse deps

all: module user

module:
	@test -d "$(KDIR)" || { echo "KDIR=$(KDIR): no kernel build dir" \
		"(install linux-headers, or set KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

user: $(LIB_SO) $(LIB_A) $(RPAGECTL)

$(O_USER)/%.pic.o: ulib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(O_USER)/%.o: ulib/%.c $(LIB_HDRS) ulib/rpagectl.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -c -o $@ $<

LIB_PIC_OBJS := $(patsubst ulib/%.c,$(O_USER)/%.pic.o,$(LIB_SRCS))
LIB_OBJS := $(patsubst ulib/%.c,$(O_USER)/%.o,$(LIB_SRCS))

$(LIB_SO): $(LIB_PIC_OBJS) ulib/librpage.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		-Wl,--version-script=ulib/librpage.map -Wl,-z,defs \
		-o $@ $(LIB_PIC_OBJS)
	ln -sf $(notdir $@) $(O_USER)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(O_USER)/librpage.so

$(LIB_A): $(LIB_OBJS)
	$(AR) rcs $@ $^

# -pthread: map pull's progress reads the mapping while the pull waits.
$(RPAGECTL): $(CTL_OBJS) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^

# The kernel's own kselftest harness, taken from Debian's linux-source
# tarball at build time (never committed).
$(KSELFTEST_DIR)/kselftest_harness.h:
	./scripts/extract-kernel-files.sh $(KSELFTEST_DIR) \
		tools/testing/selftests/kselftest.h \
		tools/testing/selftests/kselftest_harness.h

MBGUEST := $(O_USER)/selftests/rpage_mbguest

selftests: $(TEST_BINS) $(MBGUEST)

# The guest of the VM demo: a freestanding 32-bit multiboot program that
# QEMU boots with -kernel (selftests/guest/vmmove.sh).
$(MBGUEST): selftests/rpage_mbguest.c selftests/rpage_mbguest.ld
	@mkdir -p $(dir $@)
	$(CC) -m32 -std=gnu11 $(WARN) -O2 -ffreestanding -fno-pic -fno-pie \
		-fno-stack-protector -fno-asynchronous-unwind-tables -nostdlib \
		-static -Wl,-melf_i386 -Wl,--build-id=none \
		-Wl,--no-warn-rwx-segments -Wl,-T,selftests/rpage_mbguest.ld \
		-o $@ $<

# A peer built on rdma-core alone (librdmacm), to speak to rpage.ko as a
# foreign host would.
$(O_USER)/selftests/rpage_rogue_peer: selftests/rpage_rogue_peer.c \
		kmod/rpage-proto.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -lrdmacm -libverbs

# An exporting host that misbehaves on command, on rdma-core alone.
$(O_USER)/selftests/rpage_rogue_exporter: selftests/rpage_rogue_exporter.c \
		kmod/rpage-proto.h selftests/rpage_pattern.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -lrdmacm -libverbs

# A reader over TCP that misbehaves, on plain sockets. It exports pools of
# its own memory with librpage, to destroy them under its own requests.
$(O_USER)/selftests/rpage_rogue_tcp: selftests/rpage_rogue_tcp.c \
		kmod/rpage-proto.h selftests/rpage_test.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< $(LIB_A)

# The baseline rpage is measured against: a userfaultfd handler thread
# fetching pages with libibverbs or over TCP, and the server it reads.
$(O_USER)/selftests/rpage_uffd_baseline: selftests/rpage_uffd_baseline.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -pthread -o $@ $< -lrdmacm -libverbs

# The tools the test scripts drive, on librpage alone: rpage_pattern
# fills, checks, exports and moves pool contents of a known pattern;
# rpage_fault touches, prefetches and evicts remote mappings of them;
# rpage_ioctl_fuzz throws seeded random ioctls at /dev/rpage.
$(addprefix $(O_USER)/selftests/,$(TEST_TOOLS)): $(O_USER)/selftests/%: \
		selftests/%.c selftests/rpage_tool.h selftests/rpage_test.h \
		selftests/rpage_pattern.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -pthread -o $@ $< $(LIB_A)

$(O_USER)/selftests/%: selftests/%.c selftests/rpage_test.h selftests/rpage_pattern.h $(LIB_A) \
		$(KSELFTEST_DIR)/kselftest_harness.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Wno-missing-prototypes -Wno-sign-compare \
		-I$(KSELFTEST_DIR) \
		-o $@ $< $(LIB_A) -lpthread

check:
	./selftests/run.sh

# The debug tier: the same guests on the kernel scripts/build-debug-kernel.sh
# builds (build/debug-kernel/, reused while unchanged). Everything runs
# far slower there (RDMA READs about 36x), hence the longer watchdog.
# The TCP pair stays out of its three hours (RPAGE_JOBS adds it): the
# single guest's TCP parts and the hostile guest's guard run TCP there.
check-debug:
	kver=$$(./scripts/build-debug-kernel.sh) && \
	RPAGE_KERNELS=$$kver RPAGE_SKIP_DEPS=1 \
	RPAGE_JOBS="$${RPAGE_JOBS:-single hostile pair}" \
	RPAGE_VM_TIMEOUT=$${RPAGE_VM_TIMEOUT:-5400} \
	RPAGE_RUN_BUDGET=$${RPAGE_RUN_BUDGET:-10800} ./selftests/run.sh

# The quick part of the debug tier: one guest of the tests a change to
# kmod/ touches most (selftests/run.sh, QUICK_PARTS), under 40 minutes.
check-debug-quick:
	kver=$$(./scripts/build-debug-kernel.sh) && \
	RPAGE_KERNELS=$$kver RPAGE_SKIP_DEPS=1 RPAGE_QUICK=1 \
	RPAGE_VM_TIMEOUT=$${RPAGE_VM_TIMEOUT:-2700} \
	RPAGE_RUN_BUDGET=$${RPAGE_RUN_BUDGET:-3000} ./selftests/run.sh

demo:
	./selftests/vm/demo.sh

demo-faults:
	./selftests/vm/demo.sh selftests/guest/demo-faults.sh

bench:
	./selftests/vm/bench.sh

bench-count:
	./selftests/vm/count.sh

# librpage.pc says where the library and headers are installed, so it is
# written here, from the directories of this make install: one made at
# build time kept the PREFIX of the build (make && make install
# PREFIX=/usr installed a librpage.pc that said /usr/local).
install: user
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(UAPI_INCLUDEDIR)/linux \
		$(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(UDEVRULESDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(BPFTRACEDIR)
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/librpage.so
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@UAPI_INCLUDEDIR@|$(UAPI_INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    ulib/librpage.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/librpage.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/librpage.pc
	install -m 0644 ulib/librpage.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 include/uapi/linux/rpage.h $(DESTDIR)$(UAPI_INCLUDEDIR)/linux/
	install -m 0755 $(RPAGECTL) systemd/rpage-setup $(DESTDIR)$(SBINDIR)/
	# A page that is another's name (rpage_map_del.3 is rpage_map_add.3's)
	# is a symbolic link to it, in the tree as installed.
	for f in ulib/man/*.[38]; do \
		d=$(DESTDIR)$(MANDIR)/man$${f##*.}; \
		if [ -L "$$f" ]; then ln -sf "$$(readlink "$$f")" "$$d/$${f##*/}"; \
		else install -m 0644 "$$f" "$$d/"; fi; \
	done
	sed -e 's|@SBINDIR@|$(SBINDIR)|' systemd/rpage.service.in \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/rpage.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/rpage.service
	install -m 0644 systemd/90-rpage.rules $(DESTDIR)$(UDEVRULESDIR)/
	install -m 0644 ulib/bash-completion/rpagectl $(DESTDIR)$(BASHCOMPDIR)/
	install -m 0755 ulib/bpftrace/*.bt $(DESTDIR)$(BPFTRACEDIR)/

# What DKMS needs to build rpage.ko on the host that loads it, in the
# directory DKMS looks in, whatever the PREFIX: dkms.conf, the Kbuild
# files, VERSION (kmod/Kbuild reads it) and the sources, and nothing
# else (no build/, no objects of an in-tree build). Then
# "dkms install rpage/$(VERSION)"; Debian's rpage-dkms package is this.
DKMS_SRCDIR = /usr/src/rpage-$(VERSION)
KMOD_SRCS = $(filter-out %.mod.c,$(wildcard kmod/*.c)) $(wildcard kmod/*.h) \
	kmod/Kbuild

install-dkms:
	install -d $(DESTDIR)$(DKMS_SRCDIR)/kmod \
		$(DESTDIR)$(DKMS_SRCDIR)/include/uapi/linux
	install -m 0644 dkms.conf Kbuild VERSION $(DESTDIR)$(DKMS_SRCDIR)/
	install -m 0644 $(KMOD_SRCS) $(DESTDIR)$(DKMS_SRCDIR)/kmod/
	install -m 0644 include/uapi/linux/rpage.h \
		$(DESTDIR)$(DKMS_SRCDIR)/include/uapi/linux/

# The packages, checked the way an archive would take them: lintian
# fails them on any error or warning (debian/*.lintian-overrides say why
# for each tag overridden).
DEB_OUT ?= build/deb
deb:
	./scripts/build-deb.sh $(DEB_OUT)
	lintian --fail-on error,warning --display-info $(DEB_OUT)/rpage_*.changes

clean:
	-test -d "$(KDIR)" && $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(O_USER)

# The documentation as HTML: Sphinx renders the reStructuredText and,
# with its graphviz extension, the drawings from their .dot sources.
# Warnings are errors, as the host checks build it.
htmldocs:
	/usr/bin/python3 -m sphinx -b html -q -W --keep-going Documentation build/htmldocs
	@echo "build/htmldocs/index.html"
