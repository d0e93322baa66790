#!/usr/bin/env python3
"""The Swift app (tests/apps/stallapp-swift.swift) under `stallwatch run`.

Its main thread runs RunLoop.main and stalls the ways iOS apps do; each
stall must be reported once, with the app's own measured duration (within
60 ms) and the right kind, and its heaviest path must run from `main`
through Foundation's run-loop frames to the Swift function that stalled.
The names shown must be what `swift demangle --simplified` (and, with
--full-names, `swift demangle`) prints for the frames' linkage names.

Environment (tests/meson.build): STALLWATCH, STALLWATCH_AGENT, SWIFTC and
STALLAPP_SWIFT.  Exit 77 when there is no Swift toolchain.
"""
import json
import os
import subprocess
import sys
import tempfile

from swtest import check, failures

STALLWATCH = os.environ.get("STALLWATCH", "")
AGENT = os.environ.get("STALLWATCH_AGENT", "")
SWIFTC = os.environ.get("SWIFTC", "")
APP = os.environ.get("STALLAPP_SWIFT", "")
TOLERANCE_MS = 60.0

# step -> (kind, the chain its heaviest path must contain, root first)
RUNLOOP = ["main", "RunLoop.run()", "CFRunLoopRunSpecific", "__CFRunLoopRun"]
EXPECTED = {
    "timer": ("busy", RUNLOOP + ["__CFRunLoopDoTimer", "closure #1 in next(after:)", "runNext()",
                                 "Stalls.timerFired(_:)", "crunch(milliseconds:)"]),
    "semaphore": ("blocked", RUNLOOP + ["_dispatch_main_queue_callback_4CF", "closure #1 in runNext()",
                                        "Stalls.waitForWorker(_:)",
                                        "closure #1 in Stalls.waitForWorker(_:)"]),
    "fileio": ("blocked", RUNLOOP + ["__CFRunLoopDoTimer", "runNext()", "Stalls.readSlowFile(_:)",
                                     "FileHandle.readDataToEndOfFile()"]),
    "pump": ("busy", RUNLOOP + ["__CFRunLoopDoTimer", "runNext()", "Stalls.computeWhilePumping(_:)",
                                "crunch(milliseconds:)"]),
    "actor": ("busy", RUNLOOP + ["_dispatch_main_queue_callback_4CF", "swift_job_run",
                                 "computeOnMainActor(_:)", "crunch(milliseconds:)"]),
}
SCRIPT = ["timer:400", "hitch:120", "semaphore:500", "fileio:400", "pump:400", "actor:450"]


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def swift_demangle(names, simplified):
    """`swift demangle` of each name, from the toolchain beside SWIFTC."""
    tool = os.path.join(os.path.dirname(os.path.realpath(SWIFTC)), "swift-demangle")
    args = [tool, "--simplified"] if simplified else [tool]
    out = subprocess.run(args, input="".join(n + "\n" for n in names), capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def steps_of(lines):
    steps, open_ = [], {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "step" and parts[2] == "begin":
            open_[parts[1]] = int(parts[3])
        elif len(parts) >= 5 and parts[0] == "step" and parts[2] == "end":
            steps.append({"kind": parts[1], "begin": open_.pop(parts[1]), "end": int(parts[3]),
                          "elapsed_ms": float(parts[4].split("=")[1])})
    return steps


def stalls_in(text):
    return [json.loads(l) for l in text.splitlines()
            if l.startswith("{") and json.loads(l).get("type") == "stall"]


def chain_in_order(names, chain):
    pos = 0
    for want in chain:
        while pos < len(names) and names[pos] != want:
            pos += 1
        if pos == len(names):
            return False
        pos += 1
    return True


def check_names(stall, what, simplified):
    """Every Swift frame of the heaviest path shows what swift demangle prints."""
    frames = [f for f in stall["heaviest"] if f.get("linkage") and not f.get("inlined")
              and f["linkage"].lstrip("_").startswith("$s")]
    want = swift_demangle([f["linkage"] for f in frames], simplified)
    for f, w in zip(frames, want):
        check(f["symbol"] == w, "%s: %s shown as %r, swift demangle%s prints %r"
              % (what, f["linkage"], f["symbol"], " --simplified" if simplified else "", w))
    return len(frames)


def main():
    if not SWIFTC or not APP:
        skip("no Swift toolchain (swiftc not on PATH and SWIFTC unset)")
    if not (STALLWATCH and AGENT):
        skip("STALLWATCH and STALLWATCH_AGENT must be set")
    rec = tempfile.mktemp(suffix=".swtrace")
    # --results -: the NDJSON on stdout (run prints results on stderr by default)
    p = subprocess.run([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "-o", rec,
                        "--", APP] + SCRIPT,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
    steps = steps_of(p.stdout.splitlines())
    stalls = stalls_in(p.stdout)
    print("app:", [(s["kind"], s["elapsed_ms"]) for s in steps])
    print("stalls:", [(s["id"], s["duration_ms"], s["kind"]) for s in stalls])
    check("done" in p.stdout.splitlines(), "the app did not finish")
    check(sorted(s["kind"] for s in steps) == sorted(a.split(":")[0] for a in SCRIPT),
          "the app did not run every step")
    seen = {}
    for st in stalls:
        step = min(steps, key=lambda s: abs(s["begin"] - st["monotonic_start_ns"]))
        if not check(abs(step["begin"] - st["monotonic_start_ns"]) < TOLERANCE_MS * 1e6,
                     "stall %d matches no step" % st["id"]):
            continue
        kind = step["kind"]
        if not check(kind in EXPECTED and kind not in seen, "stall %d reported for step %s%s"
                     % (st["id"], kind, " again" if kind in seen else "")):
            continue
        seen[kind] = st
        check(st["kind"] == EXPECTED[kind][0], "%s: kind %s, expected %s"
              % (kind, st["kind"], EXPECTED[kind][0]))
        # pump included: its nested run-loop waits return at once, so they are no
        # waits (stallwatch-agent(7)) and its stall lasts as long as the step
        check(abs(st["duration_ms"] - step["elapsed_ms"]) <= TOLERANCE_MS,
              "%s: duration %.1f ms, the app measured %.1f ms"
              % (kind, st["duration_ms"], step["elapsed_ms"]))
        names = [f["symbol"] for f in st["heaviest"]]
        print(kind, "heaviest:", names)
        check(chain_in_order(names, EXPECTED[kind][1]),
              "%s: the heaviest path lacks %s" % (kind, " > ".join(EXPECTED[kind][1])))
        if kind == "actor":
            # stallwatch-agent(7): the Task closure that awaited the async
            # function tail-called it, so it is not on the stack
            check(not any(n.startswith("closure #2 in runNext()") for n in names),
                  "actor: the awaiting Task closure is on the stack, unlike stallwatch-agent(7) says")
    for kind in EXPECTED:
        check(kind in seen, "no stall reported for step %s" % kind)
    check(len(stalls) == len(EXPECTED), "expected %d stalls (the hitch is not one), got %d"
          % (len(EXPECTED), len(stalls)))

    swift_frames = sum(check_names(st, kind, True) for kind, st in seen.items())
    check(swift_frames >= 3 * len(seen), "only %d Swift frames on the heaviest paths" % swift_frames)
    r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", "--full-names", rec],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "report --full-names exited %d: %s" % (r.returncode, r.stderr))
    for st in stalls_in(r.stdout):
        check_names(st, "report --full-names #%d" % st["id"], False)
    os.unlink(rec)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
