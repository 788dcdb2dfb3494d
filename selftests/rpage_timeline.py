#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rpage_timeline: a VM move's timeline, as host B recorded it, as data
for gnuplot.

  rpage_timeline.py TIMELINE [KERNEL DATE]

TIMELINE is what selftests/guest/vmmove.sh wrote on B (the run's
out/vm-timeline.txt): "S SECONDS MAP-SHOW STAT-MAP" samples of the
mapping (rpagectl -j map show vm, rpagectl -j stat map vm) and
"E SECONDS NAME" steps, SECONDS since the epoch. Prints, on standard
output, the data file the admin guide's drawing
(Documentation/admin-guide/rpage-vm-move.gp) plots: a header saying
where it comes from, then gnuplot's data set 0, one line per sample:

  seconds-since-the-VM-stopped  MiB-on-B  MiB-read-by-faults  MiB-pulled

and data set 1, one line per step: seconds and its name, with
"all-on-B" at the first sample where every page is on B (the mapping
needs A no more). The samples begin with the last one before the VM
stopped and end once every page is on B (and one more); the steps are
those from the first sample on.
"""
import json
import sys

PAGE = 4096
MIB = 1 << 20
REGION = 2 * MIB


def fail(msg):
    print(f"rpage_timeline: {msg}", file=sys.stderr)
    sys.exit(1)


def parse(path):
    samples, events = [], []
    decoder = json.JSONDecoder()
    with open(path) as f:
        for line in f:
            kind, _, rest = line.strip().partition(" ")
            when, _, rest = rest.partition(" ")
            if kind == "E":
                events.append((float(when), rest))
                continue
            if kind != "S":
                continue
            try:
                show, end = decoder.raw_decode(rest)
                stat, _ = decoder.raw_decode(rest[end:].lstrip())
            except ValueError:
                continue        # the mapping was not there yet, or gone
            if not show or not stat.get("maps"):
                continue
            m, fault = show[0], stat["maps"][0]["fault"]
            four_k = fault["faults"] - fault.get("huge_faults", 0)
            samples.append((float(when), m["pages_local"] * PAGE,
                            m["length"],
                            fault.get("huge_faults", 0) * REGION +
                            four_k * PAGE,
                            fault["prefetched"] * PAGE))
    return samples, events


def main():
    if len(sys.argv) not in (2, 4):
        fail("usage: rpage_timeline.py TIMELINE [KERNEL DATE]")
    samples, events = parse(sys.argv[1])
    t0 = next((t for t, name in events if name == "stop"), None)
    if t0 is None or not samples:
        fail(f"{sys.argv[1]}: no samples, or no 'stop' step")
    print("# A VM's move from host A to host B, as B saw it "
          "(selftests/rpage_timeline.py of selftests/guest/vmmove.sh's record)")
    if len(sys.argv) == 4:
        print(f"# kernel {sys.argv[2]}, {sys.argv[3]}; TCG guests")
    print("# seconds  MiB-on-B  MiB-read-by-faults  MiB-pulled")
    # From the last sample before the VM stopped (nothing moves before).
    first = max([i for i, s in enumerate(samples) if s[0] < t0] or [0])
    done = False
    for when, local, length, by_faults, pulled in samples[first:]:
        print(f"{when - t0:.3f} {local / MIB:.1f} {by_faults / MIB:.1f} "
              f"{pulled / MIB:.1f}")
        if done:
            break
        done = local >= length
    # The mapping needs A no more from the first sample with every page.
    whole = next((w for w, local, length, _, _ in samples[first:]
                  if local >= length), None)
    if whole is not None:
        events = sorted(events + [(whole, "all-on-B")])
    print("\n")
    print("# seconds  step")
    for when, name in events:
        if when >= samples[first][0]:
            print(f"{when - t0:.3f} {name}")


if __name__ == "__main__":
    main()
