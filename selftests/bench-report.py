#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tabulates one benchmark run: rpage's figures next to the baselines
measured in the same run, with their ratios.

    bench-report.py RESULTS_DIR [--kernel KVER] [--accel ACCEL]

RESULTS_DIR holds the JSON lines host B wrote (*.jsonl: one record per
measurement, as rpage-bench, rpage_uffd_baseline and the perftest
wrappers of selftests/guest/bench.sh print them), samples/NAME.txt
(latency samples in ns, one per line) and rounds/N/*.jsonl (the records
of round N of the interleaved rounds). Writes results.json, results.csv
and latency.png (a gnuplot CDF of the latency samples) there, and prints
the tables: first each ratio the rounds measured, as the median of its
per-round ratios with their spread, then the single run of everything.
"""
import argparse
import csv
import datetime
import glob
import json
import os
import subprocess
import sys

LAT_FIELDS = ("samples", "min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns",
              "max_ns")

# (what, rpage record, field, baseline record, field, target, better)
# better: "lower" for latencies, "higher" for throughputs; target is
# the ratio rpage/baseline the issue asks for, None if it names none.
COMPARISONS = [
    ("fault p50, random", "fault_random", "p50_ns", "ib_read_lat", "p50_ns", 1.0, "lower"),
    ("fault p50, sequential", "fault_seq", "p50_ns", "ib_read_lat", "p50_ns", 1.0, "lower"),
    ("fault p50, random", "fault_random", "p50_ns", "uffd_rdma_random", "p50_ns", 0.5, "lower"),
    ("fault p99, random", "fault_random", "p99_ns", "uffd_rdma_random", "p99_ns", 0.5, "lower"),
    ("fault p50, sequential", "fault_seq", "p50_ns", "uffd_rdma_seq", "p50_ns", 0.5, "lower"),
    ("fault p99, sequential", "fault_seq", "p99_ns", "uffd_rdma_seq", "p99_ns", 0.5, "lower"),
    ("fault p50, random", "fault_random", "p50_ns", "uffd_tcp_random", "p50_ns", None, "lower"),
    ("fault p99, random", "fault_random", "p99_ns", "uffd_tcp_random", "p99_ns", None, "lower"),
    ("fault p50, sequential", "fault_seq", "p50_ns", "uffd_tcp_seq", "p50_ns", None, "lower"),
    ("read ioctl p50, qd 1", "read_lat_qd1", "p50_ns", "ib_read_lat", "p50_ns", None, "lower"),
    ("profile: READ on the wire / fault in rpage", "trace_read_on_wire", "p50_ns", "trace_fault_in_rpage", "p50_ns", None, "lower"),
    ("profile: fault in rpage / fault seen", "trace_fault_in_rpage", "p50_ns", "fault_random", "p50_ns", None, "lower"),
    # What each costs a fault on top of its READ's time on the wire: rpage
    # (time in the fault minus its READ, tracepoints) against the
    # userfaultfd handler (message read to UFFDIO_COPY done, minus its
    # READ, timestamps in the handler). The wire hides this in the fault
    # p50s under TCG; a real NIC's 3 us READ would not.
    ("fault overhead p50, random", "trace_fault_overhead", "p50_ns", "uffd_rdma_random_overhead", "p50_ns", 1 / 3, "lower"),
    ("fault overhead p99, random", "trace_fault_overhead", "p99_ns", "uffd_rdma_random_overhead", "p99_ns", None, "lower"),
    # The loop transport: a fault on host B's own pool with no wire at
    # all, against a userfaultfd handler that installs each page from
    # local memory (UFFDIO_COPY, no fetch). With nothing on the wire,
    # each figure is its fault path's own cost.
    ("fault overhead p50, random, loop (no wire)", "loop_fault_random", "p50_ns", "uffd_local_random", "p50_ns", 1 / 3, "lower"),
    ("fault overhead p99, random, loop (no wire)", "loop_fault_random", "p99_ns", "uffd_local_random", "p99_ns", None, "lower"),
    # The floor: the kernel's own first touch of a new page in the same
    # guest and round, no fault handler of anyone's. A shared memfd's
    # first read (allocate, clear, add to the page cache, map) is what a
    # loop fault does with a copy for the clearing; anonymous memory's
    # first write (allocate, clear, map) the least any fault bringing a
    # page can cost.
    ("loop fault p50 / the floor: shared memfd first touch", "loop_fault_random", "p50_ns", "floor_memfd_random", "p50_ns", 1.0, "lower"),
    ("loop fault p50 / the floor: anonymous first touch", "loop_fault_random", "p50_ns", "floor_anon_random", "p50_ns", 3.0, "lower"),
    # Four faulting threads: against one handler thread (QEMU's
    # post-copy) and against four (h4, a pipelined handler, as rpage
    # serves each fault in its own thread).
    ("fault p50, 4 threads, loop (no wire)", "loop_fault_t4", "p50_ns", "uffd_local_random_t4", "p50_ns", None, "lower"),
    ("faults MiB/s, 4 threads, loop (no wire)", "loop_fault_t4_tput", "mib_per_s", "uffd_local_random_t4_tput", "mib_per_s", None, "higher"),
    ("fault p50, 4 threads, loop, 4 handlers", "loop_fault_t4", "p50_ns", "uffd_local_random_t4_h4", "p50_ns", None, "lower"),
    ("faults MiB/s, 4 threads, loop, 4 handlers", "loop_fault_t4_tput", "mib_per_s", "uffd_local_random_t4_h4_tput", "mib_per_s", None, "higher"),
    # The TCP transport: pool 1 of host A faulted over TCP, against the
    # userfaultfd handler fetching each page over TCP on the same link.
    ("fault p50, random, over TCP", "tcp_fault_random", "p50_ns", "uffd_tcp_random", "p50_ns", 0.5, "lower"),
    ("fault p99, random, over TCP", "tcp_fault_random", "p99_ns", "uffd_tcp_random", "p99_ns", None, "lower"),
    ("fault p50, 4 threads, over TCP", "tcp_fault_t4", "p50_ns", "uffd_tcp_random_t4", "p50_ns", None, "lower"),
    ("fault p99, 4 threads, over TCP", "tcp_fault_t4", "p99_ns", "uffd_tcp_random_t4", "p99_ns", None, "lower"),
    ("faults MiB/s, 4 threads, over TCP", "tcp_fault_t4_tput", "mib_per_s", "uffd_tcp_random_t4_tput", "mib_per_s", None, "higher"),
    ("fault p50, 4 threads, TCP, 4 handlers", "tcp_fault_t4", "p50_ns", "uffd_tcp_random_t4_h4", "p50_ns", None, "lower"),
    ("faults MiB/s, 4 threads, TCP, 4 handlers", "tcp_fault_t4_tput", "mib_per_s", "uffd_tcp_random_t4_h4_tput", "mib_per_s", None, "higher"),
    ("fault p99 / p50, random", "fault_random", "p99_ns", "fault_random", "p50_ns", 3.0, "lower"),
    ("fault p99 / p50, sequential", "fault_seq", "p99_ns", "fault_seq", "p50_ns", 3.0, "lower"),
    # Every throughput ratio at one READ size. rpage reads up to 16
    # adjacent pages in one READ, 16 in flight: its prefetch is held to
    # bare 64 KiB READs, 16 in flight (ib_read_bw -s 65536 -o 16). It was
    # once held to 4 KiB READs, which credited it with the difference.
    ("prefetch + touch MiB/s, 64 KiB READs", "prefetch_touch_tput", "mib_per_s", "ib_read_bw_64k", "mib_per_s", 0.9, "higher"),
    ("read ioctl MiB/s, qd 64, 64 KiB READs", "read_qd64", "mib_per_s", "ib_read_bw_64k", "mib_per_s", None, "higher"),
    # 64 ranges of one page each: 4 KiB READs in flight together, as
    # ib_read_bw's (which keeps 128 in flight: rpage's window is the
    # smaller). One iovec of D pages makes READs of up to 16 pages, so
    # only D = 1 has ib_read_bw's 4 KiB READs; qd 2-32 are figures, not
    # ratios.
    ("read ioctl MiB/s, 64 scattered pages per call", "read_scatter64", "mib_per_s", "ib_read_bw", "mib_per_s", None, "higher"),
    ("read ioctl MiB/s, qd 1", "read_qd1", "mib_per_s", "ib_read_bw", "mib_per_s", None, "higher"),
    # 2 MiB pages (pagesize 2M): the first touch of a region is one fault
    # and one 2 MiB READ, held to a bare 2 MiB READ and to the same
    # region touched 4 KiB at a time (512 faults of a 4 KiB mapping); a
    # pull reads a region a READ, four in flight, held to bare 2 MiB
    # READs four in flight (ib_read_bw -s 2097152 -o 4).
    ("2 MiB region first touch p50", "huge_touch", "p50_ns", "ib_read_lat_2m", "p50_ns", None, "lower"),
    ("2 MiB region first touch p50 / 512 4 KiB faults", "huge_touch", "p50_ns", "region_touch", "p50_ns", None, "lower"),
    ("pull of a 2M mapping MiB/s, 2 MiB READs", "huge_pull_tput", "mib_per_s", "ib_read_bw_2m", "mib_per_s", 0.9, "higher"),
    # Scale: one guest with two vCPUs, one thread then two faulting
    # disjoint slices of one mapping (selftests/guest/scale.sh).
    ("faults MiB/s, 2 threads on 2 vCPUs / 1, loop", "scale_loop_fault_t2_tput", "mib_per_s", "scale_loop_fault_t1_tput", "mib_per_s", 1.8, "higher"),
    ("fault p50, 2 threads on 2 vCPUs / 1, loop", "scale_loop_fault_t2", "p50_ns", "scale_loop_fault_t1", "p50_ns", None, "lower"),
    ("faults MiB/s, 2 threads on 2 vCPUs / 1, RDMA", "scale_rdma_fault_t2_tput", "mib_per_s", "scale_rdma_fault_t1_tput", "mib_per_s", None, "higher"),
    ("fault p50, 2 threads on 2 vCPUs / 1, RDMA", "scale_rdma_fault_t2", "p50_ns", "scale_rdma_fault_t1", "p50_ns", 1.1, "lower"),
] + [
    ("faults MiB/s, 1 thread, random", "fault_t1_tput", "mib_per_s", "uffd_rdma_random_tput", "mib_per_s", None, "higher"),
    ("faults MiB/s, 1 thread, random", "fault_t1_tput", "mib_per_s", "uffd_tcp_random_tput", "mib_per_s", None, "higher"),
    ("faults MiB/s, 2 threads / 1", "fault_t2_tput", "mib_per_s", "fault_t1_tput", "mib_per_s", None, "higher"),
    ("faults MiB/s, 4 threads / 1", "fault_t4_tput", "mib_per_s", "fault_t1_tput", "mib_per_s", None, "higher"),
]

# make bench-count: what a fault executes, in instructions (a guest
# under -icount shift=0: one ns of its clock per instruction), held to
# the same baselines as the loop rows above.
COUNTED = ["loop_fault_random", "floor_memfd_random", "floor_anon_random",
           "uffd_local_random"]
COUNT_COMPARISONS = [
    ("loop fault / the floor: shared memfd first touch", "loop_fault_random", "p50_ns", "floor_memfd_random", "p50_ns", 1.0, "lower"),
    ("loop fault / the floor: anonymous first touch", "loop_fault_random", "p50_ns", "floor_anon_random", "p50_ns", 3.0, "lower"),
    ("loop fault / userfaultfd handler, local", "loop_fault_random", "p50_ns", "uffd_local_random", "p50_ns", None, "lower"),
]

# The latency distributions the plot shows, when their samples exist.
PLOTTED = ["fault_random", "fault_seq", "read_lat_qd1", "ib_read_lat",
           "uffd_rdma_random", "uffd_tcp_random"]


class MixedRuns(Exception):
    pass


def load_records(results):
    """The records of one run, by name. Two records of one name in one
    directory are two runs of it, whose figures and samples could come
    from either: refused, not picked."""
    records = {}
    where = {}
    for path in sorted(glob.glob(os.path.join(results, "*.jsonl"))):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if line.startswith("{"):
                    rec = json.loads(line)
                    name = rec["bench"]
                    if name in records:
                        raise MixedRuns("%s: recorded twice, at %s and %s:%d" %
                                        (name, where[name], path, n))
                    records[name] = rec
                    where[name] = "%s:%d" % (path, n)
    return records


# Baselines that post their work requests from user space: over rxe,
# rdma-core's provider makes a write() system call per post (its
# doorbell), which a kernel module such as rpage does not pay, and a
# real NIC's doorbell is a store. A ratio against one of them carries
# that difference in rpage's favour.
DOORBELL_BASELINES = ("ib_read_", "uffd_rdma_")


def doorbell(baseline):
    return baseline.startswith(DOORBELL_BASELINES)


def load_rounds(results):
    """The records of each round, in round order."""
    rounds = []
    dirs = glob.glob(os.path.join(results, "rounds", "*"))
    for d in sorted((x for x in dirs if os.path.basename(x).isdigit()),
                    key=lambda x: int(os.path.basename(x))):
        rounds.append(load_records(d))
    return rounds


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def compare_rounds(rounds, comparisons=None):
    """Each comparison whose two figures every round measured: its
    per-round ratios, their median (judged against the target) and
    spread. A drift over the run moves both figures of a round alike, so
    the median of per-round ratios holds still where the ratio of two
    figures measured minutes apart does not."""
    rows = []
    if not rounds:
        return rows
    for what_, mine, mf, base, bf, target, better in comparisons or COMPARISONS:
        ratios = []
        for recs in rounds:
            a = recs.get(mine, {}).get(mf)
            b = recs.get(base, {}).get(bf)
            if a is None or not b:
                break
            ratios.append(a / b)
        if len(ratios) != len(rounds):
            continue
        med = median(ratios)
        met = None
        if target is not None:
            met = med <= target if better == "lower" else med >= target
        rows.append({"what": what_, "rpage": mine, "rpage_field": mf,
                     "baseline": base, "baseline_field": bf,
                     "rounds": len(ratios), "ratios": ratios, "median": med,
                     "min": min(ratios), "max": max(ratios),
                     "spread": (max(ratios) - min(ratios)) / med if med else None,
                     "target": target, "better": better, "met": met,
                     "doorbell": doorbell(base)})
    return rows


def fmt_target(r):
    if r["target"] is None:
        return "-"
    sign = "<=" if r["better"] == "lower" else ">="
    return "%s %.2f %s" % (sign, r["target"],
                           {True: "met", False: "MISSED", None: "?"}[r["met"]])


def figure(bench, field):
    """fault_random p50, prefetch_touch_tput: a record and its field."""
    return "%s %s" % (bench, field[:-3]) if field.endswith("_ns") else bench


def what(r):
    """A row's measure, marked (*) where the baseline pays rxe's doorbell."""
    return r["what"] + (" (*)" if r["doorbell"] else "")


DOORBELL_NOTE = ("(*) the baseline posts from user space: over rxe each post is "
                 "a write() system call, which rpage, a kernel module, does not "
                 "make (nor does a real NIC's doorbell cost one)")


def print_rounds(rows):
    if not rows:
        return
    print("ratios, median of %d interleaved rounds (min-max; per round)" %
          rows[0]["rounds"])
    print("%-48s %-22s %-26s %6s %11s %-14s %s" %
          ("measure", "rpage", "baseline", "median", "min-max", "target",
           "per round"))
    for r in rows:
        print("%-48s %-22s %-26s %6.2f %11s %-14s %s" %
              (what(r), figure(r["rpage"], r["rpage_field"]),
               figure(r["baseline"], r["baseline_field"]), r["median"],
               "%.2f-%.2f" % (r["min"], r["max"]), fmt_target(r),
               " ".join("%.2f" % x for x in r["ratios"])))
    if any(r["doorbell"] for r in rows):
        print(DOORBELL_NOTE)


def rst_table(header, rows):
    """A reStructuredText simple table."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([rule, line(header), rule] + [line(r) for r in rows] + [rule])


def write_rst(path, meta, rows):
    """The rounds' ratios as the performance document shows them: what
    was measured, on what, from which commit, and every ratio with its
    spread, the rxe doorbell marked."""
    body = [
        "Measured on %s on Debian's %s in %s guests, by ``make bench`` on "
        "commit %s; each ratio is the median of %d interleaved rounds "
        "(min-max):" % (meta["date"][:10], meta["kernel"] or "?",
                        (meta["accel"] or "?").upper(), meta["commit"] or "?",
                        rows[0]["rounds"] if rows else 0),
        "",
        rst_table(("measure", "rpage", "baseline", "ratio", "min-max", "target"),
                  [(what(r), figure(r["rpage"], r["rpage_field"]),
                    figure(r["baseline"], r["baseline_field"]),
                    "%.2f" % r["median"], "%.2f-%.2f" % (r["min"], r["max"]),
                    fmt_target(r)) for r in rows]),
        "",
        DOORBELL_NOTE[:1].upper() + DOORBELL_NOTE[1:] + ".",
        "",
    ]
    with open(path, "w") as f:
        f.write("\n".join(body))


def percentile(ns, pct):
    """Nearest rank, as rpage-bench and rpage_uffd_baseline compute it."""
    rank = max(1, -(-len(ns) * pct // 100))
    return ns[int(rank) - 1]


def records_from_samples(results, records):
    """Latency records for samples files no program summarised (the
    tracepoint profile of selftests/guest/bench.sh)."""
    for path in sorted(glob.glob(os.path.join(results, "samples", "*.txt"))):
        name = os.path.basename(path)[:-4]
        if name in records:
            continue
        with open(path) as f:
            ns = sorted(int(x) for x in f if x.strip())
        if not ns:
            continue
        records[name] = {"bench": name, "kind": "latency", "samples": len(ns),
                         "min_ns": ns[0], "p50_ns": percentile(ns, 50),
                         "p90_ns": percentile(ns, 90), "p99_ns": percentile(ns, 99),
                         "p999_ns": percentile(ns, 99.9), "max_ns": ns[-1]}


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%d ns" % ns


def fmt_value(field, value):
    if value is None:
        return "-"
    if field.endswith("_ns"):
        return fmt_ns(value)
    return "%.1f MiB/s" % value


def compare(records):
    rows = []
    for what_, mine, mf, base, bf, target, better in COMPARISONS:
        a = records.get(mine, {}).get(mf)
        b = records.get(base, {}).get(bf)
        ratio = a / b if a is not None and b else None
        met = None
        if ratio is not None and target is not None:
            met = ratio <= target if better == "lower" else ratio >= target
        rows.append({"what": what_, "rpage": mine, "rpage_field": mf,
                     "rpage_value": a, "baseline": base, "baseline_field": bf,
                     "baseline_value": b, "ratio": ratio, "target": target,
                     "better": better, "met": met, "doorbell": doorbell(base)})
    return rows


def print_tables(records, rows):
    print("%-48s %-20s %11s %-22s %11s %6s %s" %
          ("measure", "rpage", "", "baseline", "", "ratio", "target"))
    for r in rows:
        target = fmt_target(r)
        ratio = "-" if r["ratio"] is None else "%.2f" % r["ratio"]
        print("%-48s %-20s %11s %-22s %11s %6s %s" %
              (what(r), r["rpage"], fmt_value(r["rpage_field"], r["rpage_value"]),
               r["baseline"], fmt_value(r["baseline_field"], r["baseline_value"]),
               ratio, target))
    print(DOORBELL_NOTE)
    print()
    print("%-24s %8s %10s %10s %10s %10s %10s %10s" %
          ("latency", "samples", "min", "p50", "p90", "p99", "p99.9", "max"))
    for name, rec in sorted(records.items()):
        if rec.get("kind") == "latency":
            print("%-24s %8s %10s %10s %10s %10s %10s %10s" %
                  ((name, rec.get("samples")) +
                   tuple(fmt_ns(rec.get(k)) for k in LAT_FIELDS[1:])))
    print()
    print("%-28s %12s %12s" % ("throughput", "MiB/s", "pages/s"))
    for name, rec in sorted(records.items()):
        if rec.get("kind") == "throughput":
            print("%-28s %12s %12s" % (name, "%.1f" % rec["mib_per_s"],
                                        "%.0f" % rec["pages_per_s"]))


def write_csv(path, records):
    fields = ["bench", "kind", "samples", "min_ns", "p50_ns", "p90_ns",
              "p99_ns", "p999_ns", "max_ns", "bytes", "seconds", "mib_per_s",
              "pages_per_s"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for name in sorted(records):
            w.writerow(records[name])


def plot(results):
    """A CDF of each plotted latency distribution, log-scale time axis."""
    series = []
    for name in PLOTTED:
        src = os.path.join(results, "samples", name + ".txt")
        if not os.path.exists(src):
            continue
        with open(src) as f:
            ns = sorted(int(x) for x in f if x.strip())
        if not ns:
            continue
        dat = os.path.join(results, "samples", name + ".cdf")
        with open(dat, "w") as f:
            step = max(1, len(ns) // 2000)
            for i in range(0, len(ns), step):
                f.write("%f %f\n" % (ns[i] / 1000.0, 100.0 * (i + 1) / len(ns)))
            f.write("%f 100\n" % (ns[-1] / 1000.0))
        series.append((name, dat))
    if not series:
        return None
    png = os.path.join(results, "latency.png")
    script = [
        "set terminal png size 1000,600 noenhanced",
        "set output '%s'" % png,
        "set logscale x",
        "set xlabel 'latency (us, log scale)'",
        "set ylabel 'percent of samples at or below'",
        "set key bottom right",
        "set grid",
        "set title 'Latency of one 4 KiB page: rpage faults and reads vs. baselines'",
        "plot " + ", ".join("'%s' using 1:2 with lines lw 2 title '%s'" %
                            (dat, name) for name, dat in series),
    ]
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    return png


def commit():
    """The tree's commit, for the record: what was measured."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def count_report(results, kernel):
    """make bench-count: each figure's p50 in instructions (the median of
    the rounds, with their range), then the ratios. 1 if a round lacks
    a figure."""
    try:
        rounds = load_rounds(results)
    except MixedRuns as e:
        print("bench-report: records of two runs mixed: %s" % e, file=sys.stderr)
        return 1
    missing = sorted({name for recs in rounds for name in COUNTED
                      if recs.get(name, {}).get("p50_ns") is None})
    if not rounds or missing:
        print("bench-report: rounds without a figure: %s" %
              (", ".join(missing) or "no rounds"), file=sys.stderr)
        return 1
    figures = {}
    print("instructions per first touch, p50, median of %d rounds (min-max)" %
          len(rounds))
    for name in COUNTED:
        per = [recs[name]["p50_ns"] for recs in rounds]
        figures[name] = {"median": median(per), "min": min(per),
                         "max": max(per), "rounds": per}
        print("  %-22s %9d  (%d-%d)" % (name, median(per), min(per), max(per)))
    rows = compare_rounds(rounds, COUNT_COMPARISONS)
    print()
    print_rounds(rows)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel": kernel, "accel": "tcg, -icount shift=0,sleep=off",
            "commit": commit(), "unit": "instructions"}
    with open(os.path.join(results, "results.json"), "w") as f:
        json.dump({"meta": meta, "figures": figures, "rounds": rows}, f,
                  indent=1, sort_keys=True)
    print()
    print("results: %s/results.json" % results)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--accel", default="")
    ap.add_argument("--count", action="store_true",
                    help="make bench-count's records: instructions, not times")
    args = ap.parse_args()
    if args.count:
        return count_report(args.results, args.kernel)

    try:
        records = load_records(args.results)
        rounds = load_rounds(args.results)
    except MixedRuns as e:
        print("bench-report: records of two runs mixed: %s" % e, file=sys.stderr)
        return 1
    records_from_samples(args.results, records)
    if not records:
        print("bench-report: no records in %s" % args.results, file=sys.stderr)
        return 1
    rows = compare(records)
    round_rows = compare_rounds(rounds)
    print_rounds(round_rows)
    if round_rows:
        print()
        print("one run of everything:")
    print_tables(records, rows)
    write_csv(os.path.join(args.results, "results.csv"), records)
    png = plot(args.results)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel": args.kernel, "accel": args.accel, "commit": commit()}
    with open(os.path.join(args.results, "results.json"), "w") as f:
        json.dump({"meta": meta, "records": records, "comparisons": rows,
                   "rounds": round_rows}, f,
                  indent=1, sort_keys=True)
    write_rst(os.path.join(args.results, "results.rst"), meta, round_rows)
    print()
    print("results: %s/results.json, results.csv, results.rst%s" %
          (args.results, ", latency.png" if png else ""))
    missing = [r["rpage"] for r in rows if r["rpage_value"] is None] + \
              [r["baseline"] for r in rows if r["baseline_value"] is None]
    if missing:
        print("bench-report: rows without a figure: %s" %
              ", ".join(sorted(set(missing))), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
