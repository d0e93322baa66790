#!/usr/bin/env python3
"""The portable run-loop detector (the one the iOS agent uses) on Linux,
against the Swift toolchain's Core Foundation: a Swift program whose main
thread runs RunLoop.main stalls busy in a Timer callback and blocked in a
block posted to the main queue, with a short hitch between.  Each detector
-- the interposed waits (the Linux default), the CFRunLoopObservers
(STALLWATCH_DETECTOR=runloop) and the main-queue ping (=ping) -- must report
the same two stalls, of the right kind, each lasting what the program
measured itself (within 60 ms), and nothing for the hitch.

Needs STALLWATCH, STALLWATCH_AGENT, SW_SOURCE_ROOT and SWIFTC (empty when
meson found no swiftc: skipped, exit 77).
"""
import json
import os
import subprocess
import sys
import tempfile

from swtest import check, failures

TOLERANCE_MS = 60.0
STEPS = ["busy:400", "hitch:100", "blocked:400"]
WANT = {"busy": "busy", "blocked": "blocked"}


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def build(swiftc, tmp):
    src = os.path.join(os.environ["SW_SOURCE_ROOT"], "tests", "apps", "runloop-swift.swift")
    exe = os.path.join(tmp, "runloop-swift")
    p = subprocess.run([swiftc, "-g", "-Onone", "-module-cache-path", os.path.join(tmp, "mc"),
                        src, "-o", exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit("cannot build %s" % src)
    return exe


def run(exe, detector):
    env = dict(os.environ, STALLWATCH_LOG="1", STALLWATCH_DETECTOR=detector)
    p = subprocess.run([os.environ["STALLWATCH"], "run", "--format", "ndjson", "--", exe] + STEPS,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=120)
    objs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    steps, opened = {}, {}
    for line in p.stderr.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "step" and parts[2] == "begin":
            opened[parts[1]] = int(parts[3])
        elif len(parts) >= 5 and parts[0] == "step" and parts[2] == "end":
            steps[parts[1]] = {"begin": opened[parts[1]],
                               "elapsed_ms": float(parts[4].split("=")[1])}
    check(p.returncode == 0, "%s: run exits %d: %s" % (detector, p.returncode, p.stderr[-500:]))
    return [o for o in objs if o.get("type") == "stall"], steps, p.stderr


def check_detector(exe, detector):
    stalls, steps, log = run(exe, detector)
    print("%s: steps %s" % (detector, {k: v["elapsed_ms"] for k, v in steps.items()}))
    print("%s: stalls %s" % (detector, [(s["duration_ms"], s["kind"], s.get("context"))
                                        for s in stalls]))
    if detector != "waits":
        check("watching the main loop with the %s detector" % detector in log,
              "%s: the detector did not start (agent log: %s)" % (detector, log[-400:]))
    found = {}
    for st in stalls:
        kind = min(steps, key=lambda k: abs(steps[k]["begin"] - st["monotonic_start_ns"]))
        # the ping is posted up to one interval after the step began
        late = abs(steps[kind]["begin"] - st["monotonic_start_ns"]) / 1e6
        if not check(late <= 2 * st["interval_ms"] + 5,
                     "%s: stall at %d matches no step" % (detector, st["monotonic_start_ns"])):
            continue
        check(kind in WANT, "%s: a stall reported for step %s" % (detector, kind))
        check(kind not in found, "%s: step %s reported twice" % (detector, kind))
        found[kind] = st
        if kind not in WANT:
            continue
        check(st["kind"] == WANT[kind], "%s: %s reported as %s" % (detector, kind, st["kind"]))
        check(abs(st["duration_ms"] - steps[kind]["elapsed_ms"]) <= TOLERANCE_MS,
              "%s: %s lasted %.1f ms, reported %.1f ms"
              % (detector, kind, steps[kind]["elapsed_ms"], st["duration_ms"]))
        if detector == "runloop":
            check(st.get("context") == "kCFRunLoopCommonModes",
                  "runloop: context %r, expected the observers' mode" % st.get("context"))
    for kind in WANT:
        check(kind in found, "%s: no stall for step %s" % (detector, kind))
    return {k: v["duration_ms"] for k, v in found.items()}


def main():
    swiftc = os.environ.get("SWIFTC", "")
    if not swiftc:
        skip("no swiftc found: the Swift run-loop test needs a Swift toolchain")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(swiftc, tmp)
        durations = {d: check_detector(exe, d) for d in ("waits", "runloop", "ping")}
    for d in ("runloop", "ping"):
        for kind, ms in durations[d].items():
            if kind in durations["waits"]:
                check(abs(ms - durations["waits"][kind]) <= TOLERANCE_MS,
                      "%s: %s %.1f ms, the interposed waits %.1f ms"
                      % (d, kind, ms, durations["waits"][kind]))
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")


main()
