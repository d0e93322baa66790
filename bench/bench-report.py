#!/usr/bin/env python3
"""`stallwatch report` on the 1M-sample x 64-frame recording, every format
(and --junit)
(issue 17): CPU time and peak memory per format, medians of interleaved
runs, against the goal (< 1 s CPU, < 200 MB) and against the baseline
named by the issue, the project's own tree benchmark (bench-tree, the
same number of samples and frames aggregated in memory): the real
pipeline should cost what the benchmark costs.  The recording is written
the way `record` writes one (through its stack table); one more row, "tree
(whole)", reads the same samples written as the agent sends them, as a
recording from before the table holds them.

    bench-report.py STALLWATCH GEN-RECORDING BENCH-TREE [RUNS [SAMPLES]]

RUNS is 5 by default: on a shared machine a format's CPU time moves by 5 to
10% from one run to the next, and a median of three moved with it.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

FORMATS = ["tree", "sample", "ndjson", "json", "folded", "speedscope", "pprof", "junit"]
GOAL_S, GOAL_MB = 1.0, 200.0
WHOLE = "tree (whole)"


def measure(args, allowed=(0,)):
    """CPU seconds and peak RSS (MB) of one run of args, output discarded."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(args, stdout=null, stderr=null)
        _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) not in allowed:
        sys.exit("bench-report: %s failed" % " ".join(args))
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    stallwatch, gen, bench_tree = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    samples = sys.argv[5] if len(sys.argv) > 5 else "1000000"
    d = tempfile.mkdtemp()
    rec = os.path.join(d, "bench.swtrace")
    whole = os.path.join(d, "whole.swtrace")
    subprocess.run([gen, rec, samples], check=True)
    subprocess.run([gen, "--whole", whole, samples], check=True)
    print("medians of %d interleaved runs" % runs)
    print("recording: %s samples x 64 frames, 100k distinct stacks, 20 images, %.0f MB "
          "(%.0f MB with every stack whole)"
          % (samples, os.path.getsize(rec) / 1e6, os.path.getsize(whole) / 1e6))
    cpu = {f: [] for f in FORMATS + ["bench-tree", WHOLE]}
    mem = {f: [] for f in FORMATS + ["bench-tree", WHOLE]}
    for _ in range(runs):  # interleaved: each round runs everything once
        c, m = measure([bench_tree, samples, "64"], (0, 1))  # 1: it missed its own target
        cpu["bench-tree"].append(c)
        mem["bench-tree"].append(m)
        for f in FORMATS:
            # junit is a file beside the default output, as CI writes it
            extra = ["--junit", os.path.join(d, "junit.xml")] if f == "junit" else ["--format", f]
            c, m = measure([stallwatch, "report"] + extra + [rec])
            cpu[f].append(c)
            mem[f].append(m)
        c, m = measure([stallwatch, "report", "--format", "tree", whole])
        cpu[WHOLE].append(c)
        mem[WHOLE].append(m)
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)
    base = statistics.median(cpu["bench-tree"])
    base_mb = statistics.median(mem["bench-tree"])
    print("%-12s %8s %8s %10s %10s %13s %7s" % ("format", "CPU s", "peak MB", "CPU/goal",
                                               "MB/goal", "CPU/baseline", "goal"))
    print("%-12s %8.2f %8.0f %9.2fx %9.2fx %13s" % ("bench-tree", base, base_mb, base / GOAL_S,
                                                     base_mb / GOAL_MB, "(baseline)"))
    missed = 0
    for f in FORMATS + [WHOLE]:
        c, m = statistics.median(cpu[f]), statistics.median(mem[f])
        met = c < GOAL_S and m < GOAL_MB
        missed += not met and f != WHOLE
        print("%-12s %8.2f %8.0f %9.2fx %9.2fx %12.2fx %7s"
              % (f, c, m, c / GOAL_S, m / GOAL_MB, c / base, "met" if met else "MISSED"))
    print("goal: every format < %.0f s CPU and < %.0f MB (x: ratio, below 1 meets it); "
          "baseline: bench-tree, the same samples aggregated in memory" % (GOAL_S, GOAL_MB))
    print("%d of %d formats miss the goal" % (missed, len(FORMATS)))


if __name__ == "__main__":
    main()
