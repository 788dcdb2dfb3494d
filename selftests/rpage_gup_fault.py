#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Faults in pages of a named mapping the way KVM does.

    rpage_gup_fault.py NODE OFFSET PAGES [--write] [--pause-at N READY GO]

Maps NODE shared and, through /dev/rpage_gup_test (selftests/kmod/
rpage_gup_test.ko), asks for each of PAGES pages from byte OFFSET on as
a vCPU's fault asks for guest memory: get_user_pages(FOLL_NOWAIT) first,
which must come back without the page (it is not here yet, and the
fault may not wait for its READ), then again every 10 ms until the page
is there. The 64 bytes GUP saw at each page must be what the process
reads there. Then one more page, the next, without FOLL_NOWAIT: got at
once. Writes PAGES + 1 pages, as read, to standard output (for
rpage_pattern check-file); one line per page on standard error. With
--pause-at, before page N it creates the file READY and waits for the
file GO (a test does something to the host meanwhile). Exit status 0 if
every page went so, 1 if not.
"""
import ctypes
import fcntl
import mmap
import os
import struct
import sys
import time

PAGE = 4096
NOWAIT, WRITE = 1, 2
# struct rpage_gup_test_fault: addr, flags, result, ns, head[64]
FMT = "=QIiQ64s"
FAULT = (3 << 30) | (struct.calcsize(FMT) << 16) | (ord("r") << 8) | 0xF0
POLL_S = 0.01
WAIT_S = 10 * int(os.environ.get("RPAGE_SLOW", "1"))


def gup(dev, addr, flags):
    buf = bytearray(struct.pack(FMT, addr, flags, 0, 0, bytes(64)))
    fcntl.ioctl(dev, FAULT, buf)
    _, _, result, ns, head = struct.unpack(FMT, buf)
    return result, ns, head


def main():
    node, offset, pages = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3])
    extra = WRITE if "--write" in sys.argv[4:] else 0
    pause_at, ready, go = -1, None, None
    if "--pause-at" in sys.argv[4:]:
        at = sys.argv.index("--pause-at")
        pause_at, ready, go = int(sys.argv[at + 1]), sys.argv[at + 2], sys.argv[at + 3]
    fd = os.open(node, os.O_RDWR)
    size = os.lseek(fd, 0, os.SEEK_END)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    dev = os.open("/dev/rpage_gup_test", os.O_RDWR)
    bad = 0
    for i in range(pages):
        if i == pause_at:
            open(ready, "w").close()
            while not os.path.exists(go):
                time.sleep(0.05)
        off = offset + i * PAGE
        result, ns, head = gup(dev, base + off, NOWAIT | extra)
        first = result
        polls = 0
        deadline = time.monotonic() + WAIT_S
        while result != 1 and time.monotonic() < deadline:
            time.sleep(POLL_S)
            result, _, head = gup(dev, base + off, NOWAIT | extra)
            polls += 1
        seen = m[off:off + 64]
        print("page at %d: first FOLL_NOWAIT %d in %d us, got after %d polls, %s"
              % (off, first, ns // 1000, polls,
                 "bytes match" if head == seen else "BYTES DIFFER"),
              file=sys.stderr)
        if first == 1:
            print("FAIL: the first FOLL_NOWAIT got the page at %d: its fault "
                  "waited for the READ" % off, file=sys.stderr)
            bad = 1
        if result != 1:
            print("FAIL: page at %d not here after %d s of FOLL_NOWAIT "
                  "(last %d)" % (off, WAIT_S, result), file=sys.stderr)
            bad = 1
        if head != seen:
            bad = 1
    off = offset + pages * PAGE
    result, ns, head = gup(dev, base + off, extra)
    seen = m[off:off + 64]
    print("page at %d without FOLL_NOWAIT: %d in %d us, %s"
          % (off, result, ns // 1000,
             "bytes match" if head == seen else "BYTES DIFFER"), file=sys.stderr)
    if result != 1 or head != seen:
        print("FAIL: a fault that may wait did not get the page", file=sys.stderr)
        bad = 1
    sys.stdout.buffer.write(m[offset:offset + (pages + 1) * PAGE])
    return bad


if __name__ == "__main__":
    sys.exit(main())
