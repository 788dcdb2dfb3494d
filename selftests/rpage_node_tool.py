#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rpage_node_tool: what the named-mapping tests do to a device node
/dev/rpage-map/NAME, and to a QEMU that uses one as guest RAM.

  size PATH                    print the size lseek(SEEK_END) reports
  private PATH                 mmap MAP_PRIVATE; print the errno name
  write PATH OFFSET HEX        map it shared, store the bytes HEX at OFFSET
  read PATH OFFSET LENGTH      map it shared, print LENGTH bytes at OFFSET
                               as hex
  dump PATH OFFSET LENGTH      the same, raw, on standard output (a page
                               that cannot be read kills it: SIGBUS)
  load PATH OFFSET             map it shared, store standard input's
                               bytes at OFFSET, a MiB at a time
  hold PATH OFFSET --ready F --go G
                               map it shared, read the page at OFFSET,
                               create F, wait for G, then read the page
                               at OFFSET and the last page: exits 0 if it
                               could, or dies of the signal (SIGBUS) the
                               kernel sends
  map PATH --ready F --go G
                               map it shared and touch nothing; write the
                               address it is mapped at (decimal) to F,
                               wait for G, then exit 0
  compact PATH LENGTH          map it shared, compact all memory once (the
                               low end free), read its first LENGTH bytes
                               (each page right after a page of filler
                               memory, freed then: the mapping's pages
                               sit between holes, where compaction has
                               work to do), have the kernel compact all
                               memory
                               (/proc/sys/vm/compact_memory), then write
                               those bytes, read again, to standard output;
                               on standard error, how many of the pages
                               compaction moved ("moved N of M pages", by
                               their frames in /proc/self/pagemap)
  touch PATH OFFSET LENGTH AT...
                               map LENGTH bytes of it shared from OFFSET
                               (at an address mmap chooses), read one byte
                               at each AT (from OFFSET), then write the
                               LENGTH bytes to standard output; on standard
                               error "FilePmdMapped N" (kB of the area
                               mapped with 2 MiB entries, from
                               /proc/self/smaps) and "aligned yes|no" (the
                               address against OFFSET, modulo 2 MiB)
  fragment READY GO            fragment the host's memory, as a long-running
                               host's gets: take anonymous 4 KiB pages
                               (MADV_NOHUGEPAGE) until no zone but DMA has
                               a free block of 2 MiB or more
                               (/proc/buddyinfo) or memory is low, give
                               every other page back, so that what is free
                               is holes of 4 KiB, then take the 2 MiB
                               blocks left with transparent huge pages
                               (defrag never meanwhile); write what it did
                               to READY, hold the rest until GO exists
  qtest SOCKET ADDR LENGTH     read guest-physical memory through QEMU's
                               qtest socket; raw bytes on standard output
  qtest-pages SOCKET POOL SIZE COUNT
                               read COUNT random guest-physical pages from
                               1 MiB up to SIZE through qtest, and check
                               each against the test pattern of pool POOL
                               at the same offset (selftests/rpage_pattern.h)

Exit status 0 on success, 1 on an error (said on standard error).
"""
import base64
import ctypes
import errno
import mmap
import os
import socket
import sys
import time


def fail(msg):
    print(f"rpage_node_tool: {msg}", file=sys.stderr)
    sys.exit(1)


def node_size(path):
    fd = os.open(path, os.O_RDWR)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def shared_map(path):
    fd = os.open(path, os.O_RDWR)
    size = os.lseek(fd, 0, os.SEEK_END)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    return m


def cmd_private(path):
    fd = os.open(path, os.O_RDWR)
    try:
        mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_PRIVATE,
                  mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
        return 0
    print("mapped")
    return 0


def cmd_hold(path, offset, ready, go):
    m = shared_map(path)
    first = m[offset]
    with open(ready, "w") as f:
        f.write(f"{first}\n")
    wait_for(go)
    # A deleted mapping: each of these dies of SIGBUS.
    _ = m[offset]
    _ = m[len(m) - 1]
    print("read after go")
    return 0


def wait_for(go):
    deadline = time.monotonic() + 300
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            fail(f"{go} never came")
        time.sleep(0.05)


def cmd_map(path, ready, go):
    m = shared_map(path)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    with open(ready + ".tmp", "w") as f:
        f.write(f"{addr}\n")
    os.rename(ready + ".tmp", ready)
    wait_for(go)
    return 0


def frames(addr, pages):
    """The page frame of each of @pages pages from @addr (0: none)."""
    with open("/proc/self/pagemap", "rb") as f:
        f.seek((addr // 4096) * 8)
        raw = f.read(pages * 8)
    out = []
    for i in range(pages):
        e = int.from_bytes(raw[i * 8:i * 8 + 8], "little")
        out.append(e & ((1 << 55) - 1) if e >> 63 else 0)
    return out


def cmd_compact(path, length):
    m = shared_map(path)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    pages = length // 4096
    # Compaction empties the low end of a zone into free pages at its
    # top: a first pass leaves the low end free, so that the mapping's
    # pages, allocated next, are likely there. Interleaved with filler
    # pages, then freed: free memory lies between them too, and the
    # second pass, the one measured, has them to move.
    with open("/proc/sys/vm/compact_memory", "w") as f:
        f.write("1\n")
    filler = mmap.mmap(-1, length)
    for i in range(pages):
        filler[i * 4096] = 1
        _ = m[i * 4096]
    filler.close()
    before = frames(addr, pages)
    if 0 in before:
        fail("a page touched is not mapped")
    with open("/proc/sys/vm/compact_memory", "w") as f:
        f.write("1\n")
    data = m[:length]
    after = frames(addr, pages)
    moved = sum(1 for b, a in zip(before, after) if a and a != b)
    print(f"moved {moved} of {pages} pages", file=sys.stderr)
    sys.stdout.buffer.write(data)
    return 0


def smaps_field(addr, field):
    """FIELD (kB) of the area of /proc/self/smaps that holds ADDR."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == field + ":":
                return int(line.split()[1])
    fail(f"no {field} in /proc/self/smaps for {addr:#x}")


def cmd_touch(path, offset, length, at):
    fd = os.open(path, os.O_RDWR)
    m = mmap.mmap(fd, length, mmap.MAP_SHARED,
                  mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
    os.close(fd)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    for a in at:
        _ = m[a]
    print(f"FilePmdMapped {smaps_field(addr, 'FilePmdMapped')}",
          file=sys.stderr)
    print("aligned", "yes" if (addr - offset) % (2 << 20) == 0 else "no",
          file=sys.stderr)
    for a in range(0, length, 1 << 20):
        sys.stdout.buffer.write(m[a:min(a + (1 << 20), length)])
    return 0


def meminfo_kb(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    fail(f"no {field} in /proc/meminfo")


def free_huge_blocks():
    """Free blocks of 2 MiB or more (order 9 up) outside ZONE_DMA, whose
    reserve keeps it from ordinary allocations mostly."""
    n = 0
    with open("/proc/buddyinfo") as f:
        for line in f:
            words = line.split()
            if words[3] != "DMA":
                n += sum(int(x) for x in words[4 + 9:])
    return n


def cmd_fragment(ready, go):
    step, page, huge = 2 << 20, 4096, 2 << 20
    size = meminfo_kb("MemTotal") << 10
    # MAP_NORESERVE: the areas are as large as memory; only what is
    # touched is taken.
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000
    small = mmap.mmap(-1, size, flags)
    small.madvise(mmap.MADV_NOHUGEPAGE)
    # 4 KiB pages down to twice the minimum watermark and 8 MiB free.
    with open("/proc/sys/vm/min_free_kbytes") as f:
        floor_kb = 2 * int(f.read()) + (8 << 10)
    before, taken = free_huge_blocks(), 0
    while taken + step <= size and free_huge_blocks() > 0 and \
            meminfo_kb("MemFree") > floor_kb:
        for off in range(taken, taken + step, page):
            small[off] = 1
        taken += step
    # Holes of one page each: no two free pages of the area side by side.
    for off in range(0, taken, 2 * page):
        small.madvise(mmap.MADV_DONTNEED, off, page)
    # The 2 MiB blocks still free (under the floor): taken whole by
    # transparent huge pages, allocated without compaction (defrag
    # never), which would make blocks of the holes again.
    defrag = "/sys/kernel/mm/transparent_hugepage/defrag"
    with open(defrag) as f:
        old = f.read().split("[")[1].split("]")[0]
    with open(defrag, "w") as f:
        f.write("never")
    # Room to align the area to 2 MiB.
    big = mmap.mmap(-1, size + huge, flags)
    big.madvise(mmap.MADV_HUGEPAGE)
    base = -ctypes.addressof(ctypes.c_char.from_buffer(big)) % huge
    held = 0
    try:
        while base + held + huge <= size and free_huge_blocks() > 0:
            big[base + held] = 1
            held += huge
    finally:
        with open(defrag, "w") as f:
            f.write(old)
    with open(ready + ".tmp", "w") as f:
        print(f"took {taken >> 20} MiB in 4 KiB pages, gave back every other"
              f" page, then {held >> 20} MiB in 2 MiB pages; free 2 MiB blocks"
              f" {before} before, {free_huge_blocks()} after", file=f)
    os.rename(ready + ".tmp", ready)
    while not os.path.exists(go):
        time.sleep(0.1)
    return 0


def qtest_read(sock_path, addr, length):
    """Guest-physical bytes [addr, addr + length), by qtest's b64read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + 60
    while True:
        try:
            s.connect(sock_path)
            break
        except OSError:
            if time.monotonic() > deadline:
                fail(f"cannot connect to {sock_path}")
            time.sleep(0.2)
    f = s.makefile("rwb")
    out = bytearray()
    chunk = 1 << 20
    while len(out) < length:
        n = min(chunk, length - len(out))
        f.write(f"b64read {addr + len(out):#x} {n:#x}\n".encode())
        f.flush()
        while True:
            line = f.readline()
            if not line:
                fail("qtest closed the connection")
            # Asynchronous events (IRQ ...) may come in between.
            if line.startswith(b"OK") or line.startswith(b"FAIL"):
                break
        if not line.startswith(b"OK "):
            fail(f"qtest: {line.decode().strip()}")
        out += base64.b64decode(line[3:].strip())
    s.close()
    return bytes(out)


M64 = (1 << 64) - 1


def pattern_word(pool, offset, seed=0):
    """rpage_pattern() of selftests/rpage_pattern.h."""
    x = ((pool * 0x9E3779B97F4A7C15) & M64) ^ offset ^ \
        ((seed * 0xBF58476D1CE4E5B9) & M64) ^ 0xD1B54A32D192ED03
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def cmd_qtest_pages(sock_path, pool, size, count):
    import random
    page = 4096
    rng = random.Random(0x7e57)
    addrs = sorted({rng.randrange(1 << 20, size, page) for _ in range(count)})
    for addr in addrs:
        data = qtest_read(sock_path, addr, page)
        for i in range(0, page, 8):
            got = int.from_bytes(data[i:i + 8], "little")
            want = pattern_word(pool, addr + i)
            if got != want:
                fail(f"guest-physical {addr + i:#x}: {got:#018x}, "
                     f"want {want:#018x}")
    print(f"ok {len(addrs)} pages")
    return 0


def main(argv):
    if len(argv) < 3:
        fail("usage: see the top of the file")
    cmd, path = argv[1], argv[2]
    if cmd == "size" and len(argv) == 3:
        print(node_size(path))
    elif cmd == "private" and len(argv) == 3:
        return cmd_private(path)
    elif cmd == "write" and len(argv) == 5:
        m = shared_map(path)
        data = bytes.fromhex(argv[4])
        off = int(argv[3], 0)
        m[off:off + len(data)] = data
    elif cmd == "read" and len(argv) == 5:
        m = shared_map(path)
        off, n = int(argv[3], 0), int(argv[4], 0)
        print(m[off:off + n].hex())
    elif cmd == "dump" and len(argv) == 5:
        m = shared_map(path)
        off, n = int(argv[3], 0), int(argv[4], 0)
        for at in range(off, off + n, 1 << 20):
            sys.stdout.buffer.write(m[at:min(at + (1 << 20), off + n)])
    elif cmd == "load" and len(argv) == 4:
        m = shared_map(path)
        at = int(argv[3], 0)
        while True:
            data = sys.stdin.buffer.read(1 << 20)
            if not data:
                break
            m[at:at + len(data)] = data
            at += len(data)
    elif cmd == "hold" and len(argv) == 8 and argv[4] == "--ready" \
            and argv[6] == "--go":
        return cmd_hold(path, int(argv[3], 0), argv[5], argv[7])
    elif cmd == "map" and len(argv) == 7 and argv[3] == "--ready" \
            and argv[5] == "--go":
        return cmd_map(path, argv[4], argv[6])
    elif cmd == "touch" and len(argv) >= 6:
        return cmd_touch(path, int(argv[3], 0), int(argv[4], 0),
                         [int(x, 0) for x in argv[5:]])
    elif cmd == "compact" and len(argv) == 4:
        return cmd_compact(path, int(argv[3], 0))
    elif cmd == "fragment" and len(argv) == 4:
        return cmd_fragment(path, argv[3])
    elif cmd == "qtest-pages" and len(argv) == 6:
        return cmd_qtest_pages(path, int(argv[3], 0), int(argv[4], 0),
                               int(argv[5], 0))
    elif cmd == "qtest" and len(argv) == 5:
        data = qtest_read(path, int(argv[3], 0), int(argv[4], 0))
        sys.stdout.buffer.write(data)
    else:
        fail("usage: see the top of the file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
