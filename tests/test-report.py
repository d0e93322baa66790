#!/usr/bin/env python3
"""Integration tests of call trees from live sessions and of `report`: the
real agent in the test app (tests/apps/stallapp), the real command.

- `run -o` prints trees; `report --color=never` on the recording prints the
  same bytes, in several formats;
- the same app run twice gives the same signatures;
- the trees hold the call chain the app's source defines (steps.c:
  main -> run_step -> stall_busy_outer -> stall_busy_inner -> spin_ms);
- several recordings merge with qualified ids; CI options give the exit
  statuses of stallwatch(1) (--require-symbols: 6 when the app's binary is
  gone, or another build is in its place); --junit writes one test case per
  signature;
- a truncated recording prints what precedes the cut and warns; garbage
  exits 5.

Environment (tests/meson.build): STALLWATCH, STALLWATCH_AGENT, STALLAPP.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from swtest import check, failures, scratch_dir

STALLWATCH = os.environ.get("STALLWATCH", "")
STALLAPP = os.environ.get("STALLAPP", "")


def run_as(exe, args, app, script='exec "$0" "$@" >/dev/null'):
    # the app would share our stdout and could write into the middle of a long
    # line: a shell sends its output away and execs it (--exe picks it)
    p = subprocess.run([STALLWATCH, "run", "--results", "-", "--exe", os.path.basename(exe)] + args
                       + ["--", "sh", "-c", script, exe] + app,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode()


def run(args, app):
    return run_as(STALLAPP, args, app)


def report(args):
    p = subprocess.run([STALLWATCH, "report"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode()


def stalls_of(ndjson):
    objs = [json.loads(l) for l in ndjson.decode().splitlines() if l.strip()]
    return [o for o in objs if o["type"] == "stall"], [o for o in objs if o["type"] == "summary"]


def in_order(names, chain):
    it = iter(names)
    return all(any(n == c for n in it) for c in chain)


BUSY_CHAIN = ["main", "run_step", "stall_busy_outer", "stall_busy_inner", "spin_ms"]
SLEEP_CHAIN = ["main", "run_step", "stall_sleep"]


def main():
    if not (STALLWATCH and STALLAPP and os.environ.get("STALLWATCH_AGENT")):
        print("SKIP: STALLWATCH, STALLWATCH_AGENT and STALLAPP must be set")
        return 77
    tmp = scratch_dir("sw-report-")
    app = ["busy:300", "sleep:300"]

    # live output and report agree byte for byte, format by format
    for fmt in ["tree", "ndjson", "folded", "sample", "json"]:
        rec = os.path.join(tmp, "live-%s.swtrace" % fmt)
        rc, live, err = run(["--color=never", "--format", fmt, "-o", rec], app)
        check(rc == 0, "run --format %s exited %d: %s" % (fmt, rc, err))
        rc, again, err = report(["--color=never", "--format", fmt, rec])
        check(rc == 0, "report --format %s exited %d: %s" % (fmt, rc, err))
        check(live == again, "report --format %s differs from the live output:\n%s\n---\n%s"
              % (fmt, live.decode()[:2000], again.decode()[:2000]))
        check(len(live) > 0, "run --format %s printed nothing" % fmt)

    # two runs, same signatures; trees hold the source's call chains
    sigs = []
    for k in range(2):
        rec = os.path.join(tmp, "run%d.swtrace" % (k + 1))
        rc, out, err = run(["--format", "ndjson", "--min-percent", "0", "-o", rec], app)
        stalls, summary = stalls_of(out)
        check(len(stalls) == 2, "run %d: %d stalls, expected 2" % (k, len(stalls)))
        check(len(summary) == 1 and summary[0]["stalls"] == 2, "run %d summary" % k)
        sigs.append([s["signature"] for s in stalls])
        for s in stalls:
            names = [f["symbol"] for f in s["heaviest"]]
            chain = BUSY_CHAIN if s["kind"] == "busy" else SLEEP_CHAIN
            check(in_order(names, chain), "heaviest path %s lacks %s" % (names, chain))
            check(sum(n["total"] for n in s["tree"] if n["parent"] is None)
                  > 0.9 * s["duration_ms"] * 1e6,
                  "tree total covers the stall")
            check(all("tree" in s and "signature" in s and "stacks" in s for s in stalls),
                  "stall objects keep the agent's fields and add the tree")
    check(sigs[0] == sigs[1], "signatures differ between runs: %s" % sigs)
    check(len(set(sigs[0])) == 2, "busy and sleep stalls share a signature: %s" % sigs[0])

    r1, r2 = os.path.join(tmp, "run1.swtrace"), os.path.join(tmp, "run2.swtrace")
    # the default tree: every line carries its stall's label
    rc, out, _ = report(["--color=never", r1])
    lines = out.decode().splitlines()
    check(lines and all(re.match(r"^#\d+  ", l) for l in lines), "tree lines without labels")
    check(any("stall_busy_inner" in l for l in lines), "no stall_busy_inner in the tree")
    # options: bottom-up puts a leaf first; hide-system removes libc
    rc, out, _ = report(["--color=never", "--invert", "--hide-system", "--min-percent", "0", r1])
    check("(libc.so.6)" not in out.decode(), "--hide-system left libc frames")
    rc, out, _ = report(["--color=never", "--focus", "^stall_sleep$", r1])
    check("stall_busy" not in out.decode() and "stall_sleep" in out.decode(), "--focus")
    # a recording on standard input through a pipe prints what the file does
    rc, whole, _ = report(["--color=never", r1])
    p = subprocess.run([STALLWATCH, "report", "--color=never", "-"], input=open(r1, "rb").read(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0 and p.stdout == whole, "report - with a recording on a pipe: exit %d, %s"
          % (p.returncode, p.stderr.decode()))
    # merging: ids qualified by the recording's name
    rc, out, _ = report(["--color=never", r1, r2])
    labels = {l.split()[0] for l in out.decode().splitlines()}
    check(labels == {"run1#1", "run1#2", "run2#1", "run2#2"}, "merged labels: %s" % labels)

    # CI semantics
    check(report(["--fail-on-stall", r1])[0] == 1, "--fail-on-stall: not 1")
    check(report(["--fail-if-longer-than", "100000", r1])[0] == 0, "--fail-if-longer-than high")
    check(report(["--fail-if-longer-than", "100", r1])[0] == 1, "--fail-if-longer-than low")
    rc, out, _ = report(["--max-stalls", "1", "--format", "ndjson", r1])
    check(len(stalls_of(out)[0]) == 1, "--max-stalls 1")
    junit = os.path.join(tmp, "stalls.xml")
    rc, _, err = report(["--junit", junit, "--fail-if-longer-than", "100", r1, r2])
    check(rc == 1, "junit run exit %d" % rc)
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    check(len(cases) == 2, "junit: %d test cases, expected one per signature (2)" % len(cases))
    check(all(c.find("failure") is not None for c in cases), "junit: cases should fail")
    check({c.get("name").rsplit(" sig ", 1)[-1] for c in cases} == set(sigs[0]), "junit names")
    rc, _, _ = run(["--fail-on-stall"], ["busy:300"])
    check(rc == 1, "run --fail-on-stall exited %d, expected 1" % rc)
    rc, _, _ = run(["--fail-if-longer-than", "100000"], ["busy:300"])
    check(rc == 0, "run --fail-if-longer-than 100000 exited %d" % rc)

    # --require-symbols: 6 once the app's binary is gone, whether it vanished
    # before report read the recording or while run watched it
    gone = os.path.join(tmp, "gone-app")
    shutil.copy(STALLAPP, gone)
    rec = os.path.join(tmp, "gone.swtrace")
    rc, _, err = run_as(gone, ["-o", rec], ["busy:300"])
    check(rc == 0, "run of a copied app exited %d: %s" % (rc, err))
    rc, _, err = report(["--require-symbols", rec])
    check(rc == 0, "--require-symbols with every binary present exited %d: %s" % (rc, err))
    os.unlink(gone)
    rc, _, err = report(["--require-symbols", rec])
    check(rc == 6 and "symbols not found" in err and gone in err,
          "report --require-symbols without the binary: exit %d, %s" % (rc, err))
    rc, _, err = report([rec])
    check(rc == 0 and gone in err, "report without the binary: exit %d, %s" % (rc, err))
    # another build where the binary was: never its symbols (they would name
    # other functions), and the build that ran is still found by its id
    true = shutil.which("true")
    shutil.copy(true, gone)
    rc, out, err = report(["--require-symbols", rec])
    check(rc == 6 and re.search(r"'%s' is another build of it \(id [0-9a-f]+\)" %
                                re.escape(gone), err) and b"stall_busy_inner" not in out,
          "report with another build at the binary's path: exit %d, %s" % (rc, err[-400:]))
    kept = os.path.join(tmp, "kept-builds")
    os.makedirs(kept)
    shutil.copy(STALLAPP, os.path.join(kept, "the-app-that-ran"))
    rc, out, err = report(["--require-symbols", "-S", kept, rec])
    check(rc == 0 and b"stall_busy_inner" in out and "another build" not in err,
          "report -S with the build that ran: exit %d, %s" % (rc, err[-400:]))
    os.unlink(gone)
    shutil.copy(STALLAPP, gone)
    rc, _, err = run_as(gone, ["--require-symbols"], ["gap:600", "busy:300"],
                        script='(sleep 0.1; rm "$0") & exec "$0" "$@" >/dev/null')
    check(rc == 6 and gone in err, "run --require-symbols, binary removed: exit %d, %s"
          % (rc, err))

    # --duration and --max-stalls end the program with the watch, status 0
    t0 = time.time()
    rc, out, err = run(["--duration", "1.5", "--format", "ndjson"], ["busy:300", "idle:20000"])
    check(rc == 0 and time.time() - t0 < 15, "run --duration: exit %d after %.1f s: %s"
          % (rc, time.time() - t0, err))
    check(len(stalls_of(out)[0]) == 1, "run --duration: one stall expected")
    rc, out, err = run(["--max-stalls", "1", "--format", "ndjson"], ["busy:300", "busy:300", "idle:20000"])
    check(rc == 0 and len(stalls_of(out)[0]) == 1, "run --max-stalls 1: exit %d" % rc)

    # a cut recording: what precedes the cut, and a warning when the cut is
    # inside a message (dropping the last byte always is; 2/3 may fall on a
    # message boundary, so it only must not invent stalls, and exits 5 when
    # the cut comes before the first complete stall)
    data = open(r1, "rb").read()
    whole = len(stalls_of(report(["--format", "ndjson", r1])[1])[0])
    cut = os.path.join(tmp, "cut.swtrace")
    open(cut, "wb").write(data[:-1])
    rc, out, err = report(["--format", "ndjson", cut])
    check(rc == 0, "cut recording exited %d: %s" % (rc, err))
    check("warning" in err and "offset" in err, "no warning for a cut recording: %s" % err)
    check(whole - 1 <= len(stalls_of(out)[0]) <= whole, "cut recording lost stalls before the cut")
    open(cut, "wb").write(data[: len(data) * 2 // 3])
    rc, out, err = report(["--format", "ndjson", cut])
    check(rc in (0, 5) and len(stalls_of(out)[0]) <= whole, "recording cut at 2/3: exit %d" % rc)
    garbage = os.path.join(tmp, "garbage.swtrace")
    open(garbage, "wb").write(b"not a recording at all")
    rc, out, err = report([garbage])
    check(rc == 5 and "cannot read" in err, "garbage: exit %d, %s" % (rc, err))
    rc, out, err = report([os.path.join(tmp, "missing.swtrace")])
    check(rc == 5, "missing file: exit %d" % rc)

    # the demo: its stalls in the functions its source names
    p = subprocess.run([STALLWATCH, "demo", "--format", "ndjson"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, "demo exited %d: %s" % (p.returncode, p.stderr.decode()[-500:]))
    stalls, _ = stalls_of(p.stdout)
    paths = [[f["symbol"] for f in s["heaviest"]] for s in stalls]
    for chain in (["main", "parse_config_file"], ["main", "load_thumbnails", "blur_pixel"],
                  ["main", "save_document"], ["main", "wait_for_worker"]):
        check(any(in_order(p, chain) for p in paths), "demo: no stall in %s: %s" % (chain, paths))
    thumbs = [s["signature"] for s, p in zip(stalls, paths) if "load_thumbnails" in p]
    check(len(thumbs) == 2 and thumbs[0] == thumbs[1], "demo: the two thumbnail hangs differ: %s"
          % thumbs)

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
