#!/usr/bin/env python3
"""What the sampled thread pays per sample: bench-hold spins in one long
loop iteration under `stallwatch run --interval 1`; per sample it reports
the wall time the main thread lost in gaps under 1 ms (baseline: the
handler's own time, about 1.1 us; longer gaps are other processes' time
slices, printed apart) and its involuntary context switches (goal: none
from the watchdog; on a loaded machine other processes add some),
and the sampling's coverage (goal: >= 95% of the intervals, no gap longer
than 2 intervals); the same spin without the agent, in the same rounds,
gives the machine's own share.  Medians of interleaved runs; with a second stallwatch
(argument 3) both are run side by side."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

app = sys.argv[1]
tools = sys.argv[2:]
ROUNDS = 5
SPIN_MS = 2000


def run(tool):
    d = tempfile.mkdtemp()
    out = os.path.join(d, "hold")
    p = subprocess.run([tool, "run", "--format", "ndjson", "--interval", "1", "--", app, out,
                        str(SPIN_MS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, timeout=60)
    stalls = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    stalls = [s for s in stalls if s.get("type") == "stall"]
    with open(out) as f:
        got = dict((l.split()[0], float(l.split()[1])) for l in f)
    s = max(stalls, key=lambda s: s["duration_ms"])
    times = s["sample_times_ms"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    n = s["samples"]
    return {
        "held_us": got["gap-ns"] / 1000 / n,
        "long_ms": got["long-ns"] / 1e6,
        "preempt": got["preemptions"] / n,
        "preemptions": got["preemptions"],
        "samples": n,
        "coverage": n * s["interval_ms"] / s["duration_ms"],
        "max_gap": max(gaps) / s["interval_ms"] if gaps else 0,
    }


def run_alone():
    """The same spin without the agent: what the machine itself takes, per 1 ms slot."""
    d = tempfile.mkdtemp()
    out = os.path.join(d, "hold")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    subprocess.run([app, out, str(SPIN_MS)], env=env, check=True, timeout=60)
    with open(out) as f:
        got = dict((l.split()[0], float(l.split()[1])) for l in f)
    return {"held_us": got["gap-ns"] / 1000 / SPIN_MS, "preempt": got["preemptions"] / SPIN_MS}


results = {t: [] for t in tools}
alone = []
for _ in range(ROUNDS):
    alone.append(run_alone())
    for t in tools:
        results[t].append(run(t))
print("without the agent (the machine's own noise): %.1f us lost and %.3f preemptions per 1 ms"
      % (statistics.median(x["held_us"] for x in alone),
         statistics.median(x["preempt"] for x in alone)))
for t in tools:
    r = results[t]

    def med(k):
        return statistics.median(x[k] for x in r)
    name = "" if len(tools) == 1 else " (%s)" % t
    print("sampled thread held per sample%s: %.1f us wall (baseline: the handler, ~1.1 us; ratio %.1f)"
          % (name, med("held_us"), med("held_us") / 1.1))
    print("  (and %.0f ms in gaps over 1 ms: other processes' time slices)" % med("long_ms"))
    print("preemptions of the sampled thread%s: %.3f per sample, %d for %d samples (goal 0)"
          % (name, med("preempt"), med("preemptions"), med("samples")))
    print("coverage at 1 ms%s: %.1f%% (goal >= 95%%), longest gap %.1f intervals (goal <= 2); "
          "worst run %.1f%%, %.1f" % (name, 100 * med("coverage"), med("max_gap"),
                                       100 * min(x["coverage"] for x in r), max(x["max_gap"] for x in r)))
