#!/usr/bin/env python3
"""Integration tests of the Linux agent with `stallwatch run` / `attach`.

Real processes only: the test apps (tests/apps/) stall on command, the real
agent samples them, the real command prints NDJSON.  What is expected comes
from the apps' own output (CLOCK_MONOTONIC times of every step) and from
llvm-symbolizer as an independent oracle for the names in the stacks.

    test-agent.py SCENARIO

with STALLWATCH, STALLWATCH_AGENT, STALLAPP (and STALLAPP_GLIB, SW_CC,
SW_SOURCE_ROOT, SW_BUILD_ROOT) in the environment, as tests/meson.build sets
them.  Exit 77 means skipped.
"""
import ctypes.util
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from swtest import LineReader, check, failures, free_port, msg, uleb, wstr

STALLWATCH = os.environ.get("STALLWATCH", "")
AGENT = os.environ.get("STALLWATCH_AGENT", "")
STALLAPP = os.environ.get("STALLAPP", "")
INTERVAL_MS = 10.0

def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def finish():
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
    sys.exit(0)


# ---- running things -------------------------------------------------------


class Output(LineReader):
    """Collects a process's stdout lines in a thread, so tests can wait for one."""

    def wait_for(self, pred, timeout=20.0):
        """The first line pred accepts, or None."""
        return self.wait_until(lambda lines: next((l for l in lines if pred(l)), None), timeout)

    def count(self, pred):
        with self.cond:
            return sum(1 for l in self.lines if l is not None and pred(l))

    def done(self, timeout=60.0):
        self.thread.join(timeout)
        return [l for l in self.lines if l is not None]


class MachineWatch:
    """What the machine did while a test ran, read from /proc/stat every few
    milliseconds: the CPU time a hypervisor took from this virtual machine
    (steal, summed over the CPUs) and how many tasks were runnable.  A gap
    between samples is the agent's fault only if the machine was running us."""

    PERIOD = 0.005
    TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")

    def __init__(self):
        self.points = []  # (CLOCK_MONOTONIC ns, steal ms, runnable tasks)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def read():
        try:
            with open("/proc/stat") as f:
                text = f.read()
        except OSError:
            return None
        steal, running = 0.0, 0
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == "cpu" and len(fields) > 8:
                steal = int(fields[8]) * MachineWatch.TICK_MS
            elif fields and fields[0] == "procs_running":
                running = int(fields[1])
        return steal, running

    def _poll(self):
        while True:
            got = self.read()
            if got:
                self.points.append((time.monotonic_ns(),) + got)
            if self.stop.wait(self.PERIOD):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def during(self, lo_ns, hi_ns):
        """(steal ms, most runnable tasks) from the last reading at or before
        lo_ns to the first at or after hi_ns; steal is counted in whole clock
        ticks, so the window takes one tick more on either side."""
        slack = int(self.TICK_MS * 1e6)
        before = [p for p in self.points if p[0] <= lo_ns - slack]
        after = [p for p in self.points if p[0] >= hi_ns + slack]
        if not before or not after:
            return None
        inside = [p for p in self.points if before[-1][0] <= p[0] <= after[0][0]]
        return after[0][1] - before[-1][1], max(p[2] for p in inside)


last_machine = None  # the MachineWatch of the last stallwatch_run()


def stallwatch_run(args, app_args, extra_env=None, timeout=60):
    global last_machine
    env = dict(os.environ)
    env.update(extra_env or {})
    # --results -: the NDJSON beside the app's own lines, which parse() splits
    with MachineWatch() as last_machine:
        p = subprocess.run([STALLWATCH, "run", "--format", "ndjson", "--results", "-"] + args
                           + ["--"] + app_args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env, timeout=timeout)
    return p


def parse(lines):
    """Splits stdout into NDJSON objects and the app's own lines."""
    objs, app = [], []
    for line in lines:
        try:
            objs.append(json.loads(line) if line.startswith("{") else None)
        except ValueError:
            # the app and the command share stdout: a line can mix both
            objs.append(None)
        if objs[-1] is None:
            objs.pop()
            app.append(line)
    return objs, app


def steps_of(app_lines):
    """The app's steps: kind, begin and end (monotonic ns), elapsed ms, in order."""
    steps, open_ = [], {}
    for line in app_lines:
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "step" and parts[2] == "begin":
            open_[parts[1]] = {"kind": parts[1], "begin": int(parts[3])}
        elif len(parts) >= 5 and parts[0] == "step" and parts[2] == "end":
            st = open_.pop(parts[1])
            st["end"] = int(parts[3])
            st["elapsed_ms"] = float(parts[4].split("=")[1])
            steps.append(st)
    return steps


def stalls_of(objs):
    return [o for o in objs if o.get("type") == "stall"]


def match(stall, steps):
    """The step whose begin is nearest the stall's start."""
    best = min(steps, key=lambda s: abs(s["begin"] - stall["monotonic_start_ns"]))
    if abs(best["begin"] - stall["monotonic_start_ns"]) > 20_000_000:
        return None
    return best


# ---- symbols through llvm-symbolizer --------------------------------------


def symbolizer():
    for name in ("llvm-symbolizer", "llvm-symbolizer-19", "llvm-symbolizer-14"):
        path = shutil.which(name)
        if path:
            return path
    skip("llvm-symbolizer not found")


def image_of(stall, text):
    """The stall's image holding address text (hex), or None."""
    addr = int(text, 16)
    return next((m for m in stall["images"]
                 if int(m["load_address"], 16) <= addr < int(m["load_address"], 16) + m["text_size"]),
                None)


def symbolize(stall, frames):
    """Function names of frames (leaf first), '??' where unknown."""
    by_path = {}
    where = []
    for i, text in enumerate(frames):
        addr = int(text, 16)
        im = image_of(stall, text)
        if im is None or not os.path.exists(im["path"]):
            where.append(None)
            continue
        file_addr = addr - int(im["load_address"], 16) + int(im["text_vmaddr"], 16)
        if i > 0:
            file_addr -= 1  # a return address: look up the call
        by_path.setdefault(im["path"], []).append((i, file_addr))
        where.append(im["path"])
    names = ["??"] * len(frames)
    tool = symbolizer()
    for path, items in by_path.items():
        out = subprocess.run([tool, "--obj=" + path, "--no-inlines", "--output-style=LLVM"]
                             + ["0x%x" % a for _, a in items],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        blocks = [b for b in out.split("\n\n") if b.strip()]
        for (i, _), block in zip(items, blocks):
            names[i] = block.splitlines()[0].strip()
    return names


def chain_in_order(names, chain):
    """Whether chain (root first) appears in names (leaf first) in that order."""
    root_first = list(reversed(names))
    pos = 0
    for want in chain:
        while pos < len(root_first) and root_first[pos] != want:
            pos += 1
        if pos == len(root_first):
            return False
        pos += 1
    return True


def heaviest(stall, thread=None):
    stacks = [s for s in stall["stacks"] if thread is None or s["thread"] == thread]
    return max(stacks, key=lambda s: s["count"]) if stacks else None


def check_coverage(stall, what):
    interval = stall["interval_ms"]
    check(stall["samples"] * interval >= 0.95 * stall["duration_ms"],
          "%s: coverage %d samples x %.0f ms < 95%% of %.1f ms"
          % (what, stall["samples"], interval, stall["duration_ms"]))
    times = stall["sample_times_ms"]
    check(len(times) > 0, "%s: no sample times" % what)
    check_late(stall, what)
    start = stall["monotonic_start_ns"]
    unexplained = []
    for a, b in zip(times, times[1:]):
        gap = b - a
        if gap <= 2 * interval:
            continue
        seen = last_machine and last_machine.during(start + int(a * 1e6), start + int(b * 1e6))
        machine = ("the hypervisor took %.0f ms of CPU meanwhile, up to %d tasks were runnable"
                   % seen if seen else "no reading of the machine")
        if seen and seen[0] >= gap - 2 * interval:  # the steal covers its excess over 2 intervals
            print("%s: gap between samples %.1f ms, not judged: %s" % (what, gap, machine))
            continue
        unexplained.append((gap, machine))
    # a sample the agent took over an interval after it was due came late
    # because its thread, or the sampled one, got a processor late: that
    # time is the machine's too (the late scenario checks the count)
    excess = sum(gap - interval for gap, _ in unexplained)
    if unexplained and excess <= (stall["late_ms"] or 0):
        print("%s: gaps between samples %s ms, not judged: the agent took %d samples late "
              "by %.1f ms in all (%s)" % (what, ", ".join("%.1f" % g for g, _ in unexplained),
                                          stall["late_rounds"], stall["late_ms"],
                                          "; ".join(m for _, m in unexplained)))
        return
    for gap, machine in unexplained:
        check(False, "%s: gap between samples %.1f ms > 2 intervals (%s; %s samples late by "
              "%s ms in all)" % (what, gap, machine, stall["late_rounds"], stall["late_ms"]))


# ---- scenarios ------------------------------------------------------------


def scenario_stalls():
    rec = tempfile.mktemp(suffix=".swtrace")
    p = stallwatch_run(["-o", rec], [STALLAPP, "threads:64", "busy:400", "hitch:120",
                                     "mutex:600", "sleep:350", "recurse:3000:300"])
    check(p.returncode == 0, "run exits with the app's status 0, got %d: %s" % (p.returncode, p.stderr))
    objs, app = parse(p.stdout.splitlines())
    steps = steps_of(app)
    stalls = stalls_of(objs)
    print("app:", [(s["kind"], s["elapsed_ms"]) for s in steps])
    print("stalls:", [(s["id"], s["duration_ms"], s["kind"], s["samples"]) for s in stalls])
    check("sleep interrupted" not in app, "the app's nanosleep was interrupted")
    want = {"busy": "busy", "mutex": "blocked", "sleep": "blocked", "recurse": "busy"}
    seen = {}
    for st in stalls:
        step = match(st, steps)
        if not check(step is not None, "stall %d matches no step" % st["id"]):
            continue
        check(step["kind"] in want, "stall %d reported for step %s" % (st["id"], step["kind"]))
        check(step["kind"] not in seen, "step %s reported twice" % step["kind"])
        seen[step["kind"]] = st
        if step["kind"] not in want:
            continue
        check(st["kind"] == want[step["kind"]],
              "%s: kind %s, expected %s (cpu %.1f of %.1f ms)"
              % (step["kind"], st["kind"], want[step["kind"]], st["cpu_ms"], st["duration_ms"]))
        check(abs(st["duration_ms"] - step["elapsed_ms"]) <= st["interval_ms"] + 2,
              "%s: duration %.1f ms vs %.1f ms measured by the app"
              % (step["kind"], st["duration_ms"], step["elapsed_ms"]))
        check(st["complete"], "%s: stall not complete" % step["kind"])
        check_coverage(st, step["kind"])
    for kind in want:
        check(kind in seen, "no stall reported for step %s" % kind)
    check(len(stalls) == len(want), "expected %d stalls, got %d" % (len(want), len(stalls)))
    step = next((s for s in steps if s["kind"] == "sleep"), None)
    check(step and step["elapsed_ms"] >= 350, "nanosleep(350 ms) lasted %s" % (step and step["elapsed_ms"]))

    chains = {
        "busy": ["main", "run_step", "stall_busy_outer", "stall_busy_inner", "spin_ms"],
        "mutex": ["main", "run_step", "stall_mutex"],
        "sleep": ["main", "run_step", "stall_sleep"],
    }
    for kind, chain in chains.items():
        if kind not in seen:
            continue
        st = seen[kind]
        top = heaviest(st, st["thread"])
        names = symbolize(st, top["frames"])
        print(kind, "heaviest:", names)
        check(chain_in_order(names, chain), "%s: heaviest stack lacks %s" % (kind, " > ".join(chain)))
        check("truncated" not in top["flags"], "%s: heaviest stack truncated" % kind)
        if kind in ("mutex", "sleep"):
            check("blocked" in top["flags"], "%s: sampled with a signal, not from /proc" % kind)
    if "recurse" in seen:
        st = seen["recurse"]
        top = heaviest(st, st["thread"])
        names = symbolize(st, top["frames"])
        # deeper than the cap: both ends kept, the count between them said (issue 14)
        check("elided" in top["flags"] and "truncated" not in top["flags"],
              "recursion: both ends not kept: %s" % top["flags"])
        check(len(top["frames"]) == 512, "recursion: depth %d, expected the cap 512" % len(top["frames"]))
        check(2400 < top.get("elided", 0) < 3000, "recursion: %s frames left out" % top.get("elided"))
        check(names.count("stall_recurse") >= 500, "recursion: %d stall_recurse frames"
              % names.count("stall_recurse"))
        check(chain_in_order(names, ["main", "run_step", "stall_recurse", "spin_ms"]),
              "recursion: the entry and the culprit are not both kept")
    summary = [o for o in objs if o.get("type") == "summary"]
    check(summary and summary[-1]["dropped"] == 0, "summary: dropped %s" % (summary and summary[-1]["dropped"]))
    with open(rec, "rb") as f:
        head = f.read(16)
    check(head[:8] == b"SWTRACE\0", "the recording has no SWTRACE header")
    check(os.path.getsize(rec) > 1000, "the recording is nearly empty")
    os.unlink(rec)


def scenario_dlopen():
    plugin = os.environ.get("STALLAPP_PLUGIN")
    if not plugin:
        skip("STALLAPP_PLUGIN not set")
    p = stallwatch_run([], [STALLAPP, "plugin:400", "plugin:300"])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
    check("plugin unavailable" not in app, "the app could not load the plugin")
    if not check(len(stalls) == 2, "expected 2 stalls, got %d" % len(stalls)):
        return
    for st in stalls:
        check(any(os.path.samefile(m["path"], plugin) for m in st["images"] if os.path.exists(m["path"])),
              "stall %d: the plugin is not in the image list" % st["id"])
        top = heaviest(st, st["thread"])
        names = symbolize(st, top["frames"])
        print("dlopen heaviest:", names)
        check(chain_in_order(names, ["main", "run_step", "stall_plugin", "plugin_outer", "plugin_inner"]),
              "stall %d: the stack does not go through the new library" % st["id"])
        check("truncated" not in top["flags"], "stall %d: stack cut" % st["id"])
        # every sample, the pre-roll's included, unwound through the new library
        mains = [x for x in st["stacks"] if x["thread"] == st["thread"]]
        good = sum(x["count"] for x in mains
                   if "truncated" not in x["flags"]
                   and "plugin_outer" in symbolize(st, x["frames"]))
        total = sum(x["count"] for x in mains)
        check(good >= 0.9 * total, "stall %d: only %d of %d samples unwound through the plugin"
              % (st["id"], good, total))


def scenario_idle():
    # 10 s idle (SW_IDLE_SECONDS shortens it by hand), then 20 ms
    # iterations during which the process is stopped for a second.
    idle_s = float(os.environ.get("SW_IDLE_SECONDS", "10"))
    proc = subprocess.Popen([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "--", STALLAPP,
                             "idle:%d" % (idle_s * 1000), "burst:60:20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    ready = out.wait_for(lambda l: l.startswith("ready pid="))
    pid = int(ready.split("=")[1])
    out.wait_for(lambda l: l.startswith("step hitch begin"), timeout=idle_s + 10)
    while out.count(lambda l: l.startswith("step hitch end")) < 10:
        time.sleep(0.01)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(1.0)
    os.kill(pid, signal.SIGCONT)
    proc.wait(timeout=60)
    lines = out.done()
    objs, app = parse(lines)
    stalls = stalls_of(objs)
    check(proc.returncode == 0, "run exited %d" % proc.returncode)
    check("done" in app, "the app did not finish")
    check(not stalls, "stalls reported while idle or stopped: %s"
          % [(s["duration_ms"], s["kind"]) for s in stalls])
    # a clean CI run: the app waits in its loop, idle, until --duration ends
    # the watch; its loop was watched the whole time, and no stall is no stall
    r = subprocess.run([STALLWATCH, "run", "--duration", "1.5", "--format", "ndjson",
                        "--results", "-", "--", STALLAPP, "idle:30000"],
                       capture_output=True, text=True, timeout=60)
    summary = [o for o in parse(r.stdout.splitlines())[0] if o.get("type") == "summary"]
    loop = summary[0].get("loop") if summary else None
    print("idle until --duration: loop %s" % loop)
    check(r.returncode == 0 and loop == "watched" and "nothing was watched" not in r.stderr,
          "an app idle until --duration: loop %s, status %d: %s" % (loop, r.returncode, r.stderr))


def attach(port, extra=()):
    return subprocess.Popen([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port,
                             "--format", "ndjson"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def scenario_attach():
    port = free_port()
    env = dict(os.environ, LD_PRELOAD=AGENT, STALLWATCH_LISTEN="127.0.0.1:%d" % port,
               STALLWATCH_RING_KB="16")
    steps = ["idle:1500", "busy:300", "idle:800"] + ["busy:300"] * 8 + ["idle:2500", "busy:300"]
    app = subprocess.Popen([STALLAPP] + steps, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
    app_out = Output(app)
    app_out.wait_for(lambda l: l.startswith("ready"))
    c1 = attach(port)
    c1_out = Output(c1)
    first = c1_out.wait_for(lambda l: l.startswith('{"schema":1,"type":"stall"'), timeout=15)
    check(first is not None, "the first client got no stall")
    c1.kill()
    c1.wait()
    # eight more stalls with nobody reading: a 16 KiB ring overflows
    while app_out.count(lambda l: l.startswith("step busy end")) < 9:
        if app.poll() is not None:
            break
        time.sleep(0.05)
    # the bad token is refused with status 4 (the agent has none set: any token passes),
    # so check the protocol side instead: a second client gets later stalls
    c2 = attach(port)
    c2_out = Output(c2)
    app.wait(timeout=60)
    c2.wait(timeout=20)
    lines = c2_out.done()
    objs, _ = parse(lines)
    stalls = stalls_of(objs)
    summary = [o for o in objs if o.get("type") == "summary"]
    check(app.returncode == 0, "the app exited %s after its client was killed" % app.returncode)
    check("done" in app_out.done(), "the app did not run to its end")
    check(any(s["id"] > 1 for s in stalls), "the second client got no later stall: %s"
          % [s["id"] for s in stalls])
    last_step_begin = [l for l in app_out.done() if l.startswith("step busy begin")][-1]
    check(any(abs(s["monotonic_start_ns"] - int(last_step_begin.split()[3])) < 20_000_000
              for s in stalls), "the second client missed the stall after it connected")
    check(summary and summary[-1]["dropped"] > 0, "no dropped count reported: %s" % summary)
    check(c2.returncode == 0, "attach exited %s" % c2.returncode)


def scenario_token():
    port = free_port()
    env = dict(os.environ, LD_PRELOAD=AGENT, STALLWATCH_LISTEN="127.0.0.1:%d" % port,
               STALLWATCH_TOKEN="sesame")
    app = subprocess.Popen([STALLAPP, "idle:3000"], stdout=subprocess.DEVNULL, env=env)
    time.sleep(0.5)
    bad = subprocess.run([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port, "--token", "x"],
                         capture_output=True, text=True, timeout=20)
    check(bad.returncode == 4, "a refused token gives status 4, got %d" % bad.returncode)
    app.kill()
    app.wait()
    refused = subprocess.run([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port],
                             capture_output=True, text=True, timeout=20)
    check(refused.returncode == 4, "no agent gives status 4, got %d" % refused.returncode)


def scenario_children():
    p = stallwatch_run([], [STALLAPP, "child:300"])
    objs, app = parse(p.stdout.splitlines())
    ready = [l for l in app if l.startswith("ready pid=")]
    parent = int(ready[0].split("=")[1])
    child_line = [l for l in app if l.startswith("child agent=")]
    check(child_line and child_line[0].startswith("child agent=absent"),
          "the child loaded the agent: %s" % child_line)
    check(child_line and "preload=" in child_line[0] and "stallwatch" not in child_line[0],
          "the child still has the agent in LD_PRELOAD: %s" % child_line)
    for st in stalls_of(objs):
        check(st["pid"] == parent, "a stall from another process %d" % st["pid"])
    check(p.returncode == 0, "run exited %d" % p.returncode)
    check("unwatched" not in p.stderr,
          "a child that ended with its parent named as still running: %s" % p.stderr)
    # a wrapper script: its shell stays untouched, the program named by --exe is watched
    d = tempfile.mkdtemp()
    script = os.path.join(d, "wrapper.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n/bin/true\n\"%s\" busy:300\nexit 0\n" % STALLAPP)
    os.chmod(script, 0o755)
    p = stallwatch_run(["--exe", os.path.basename(STALLAPP)], [script])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "run of a wrapper exited %d: %s" % (p.returncode, p.stderr))
    check(len(stalls) == 1 and stalls[0]["process"] == os.path.basename(STALLAPP),
          "wrapper: expected one stall from the app, got %s"
          % [(s["process"], s["duration_ms"]) for s in stalls])
    # a bash script, the agent active in bash: bash's own unsetenv() and
    # setenv() work on its shell variables and leave environ alone until its
    # main(), where the agent's constructor once looped forever; its
    # commands get neither the agent's variables nor its preload entry,
    # and another library preloaded stays
    bash = shutil.which("bash")
    if bash:
        script = os.path.join(d, "bash-script")
        with open(script, "w") as f:
            f.write("#!%s\necho \"shell preload=[$LD_PRELOAD] pid=[$STALLWATCH_PID]\"\n"
                    "%s -c 'import os; print(\"child preload=[%%s]\" %% "
                    "os.environ.get(\"LD_PRELOAD\", \"\"))'\n" % (bash, sys.executable))
        os.chmod(script, 0o755)
        libm = ctypes.util.find_library("m")
        for preload in ("", libm or ""):
            env = dict(os.environ, LD_PRELOAD=preload) if preload else None
            try:
                r = subprocess.run([STALLWATCH, "run", "--", script], capture_output=True,
                                   text=True, timeout=20, env=env)
                out, rc = r.stdout, r.returncode
            except subprocess.TimeoutExpired as e:
                out, rc = e.stdout or "", "a timeout"
            print("bash script (preloading %r): %s, %s"
                  % (preload, rc, [l for l in str(out).splitlines() if "preload" in l]))
            check(rc == 0 and "shell preload=[%s] pid=[]" % preload in out
                  and "child preload=[%s]" % preload in out,
                  "a bash script under run (preloading %r): %s: %s" % (preload, rc, out))
    # a program started under another name (redis-server links to
    # redis-check-rdb) goes by that name, as ps shows it: in full past the
    # 15 bytes the kernel keeps of it, the executable's own when the name is
    # only its start (python3 runs python3.11)
    for link in ("renamed-app", "a-renamed-app-past-fifteen-bytes", "stall"):
        path = os.path.join(d, link)
        os.symlink(STALLAPP, path)
        p = stallwatch_run([], [path, "busy:300"])
        stalls = stalls_of(parse(p.stdout.splitlines())[0])
        want = link if link != "stall" else os.path.basename(STALLAPP)
        print("started as %s: process %s" % (link, [s["process"] for s in stalls]))
        check(len(stalls) == 1 and stalls[0]["process"] == want
              and ("1 stall from %s (pid" % want) in p.stderr,
              "started as %s: expected process %s, got %s: %s"
              % (link, want, [s["process"] for s in stalls], p.stderr))
    # the watched process execs another program: the stream ends, the program goes
    # on, and --duration still bounds the run (CI relies on it)
    execs = os.path.join(d, "execs.sh")
    with open(execs, "w") as f:
        f.write("#!/bin/sh\nexec sleep 30\n")
    os.chmod(execs, 0o755)
    t0 = time.monotonic()
    r = subprocess.run([STALLWATCH, "run", "--duration", "1", "--", execs], capture_output=True,
                       text=True, timeout=60)
    took = time.monotonic() - t0
    print("a program that exec'd after its stream: stopped in %.1f s" % took)
    check(took < 10 and r.returncode == 0 and "--duration 1" in r.stderr,
          "--duration after the stream ended: %.1f s, status %d: %s"
          % (took, r.returncode, r.stderr))
    check_daemon(d)
    check_workers()
    check_threads()
    shutil.rmtree(d)


DAEMON_PY = """
import os, selectors, subprocess, sys, time
sel = selectors.DefaultSelector()
sel.select(0.02)
parent_fds = set(os.listdir("/proc/self/fd"))
if os.fork() == 0:  # a child that ends before the program, with the agent's descriptors?
    for fd in sorted(parent_fds - {"0", "1", "2"}, key=int):
        try:
            print("child fd", fd, os.readlink("/proc/self/fd/" + fd), flush=True)
        except OSError:
            pass
    os._exit(0)
os.wait()
# another program, left running
helper = subprocess.Popen(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:  # into the background, as daemon(3) goes
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(30)
    os._exit(0)
os.wait()
while not os.path.exists(sys.argv[1]) or not os.path.exists(sys.argv[2]):
    sel.select(0.01)
print("helper", helper.pid, flush=True)
"""


def check_daemon(d):
    """A program that forks into the background: the process left running,
    where the agent is off, is named; a child that ended, another program it
    started, and the same program under another run are not."""
    prog = os.path.join(d, "daemon.py")
    with open(prog, "w") as f:
        f.write(DAEMON_PY)
    pidfile, go = os.path.join(d, "daemon.pid"), os.path.join(d, "go")
    a = subprocess.Popen([STALLWATCH, "run", "--", sys.executable, prog, pidfile, go],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the same program under another run, started after the first and alive at its end
    b = subprocess.Popen([STALLWATCH, "run", "--", sys.executable, "-c",
                          "import time; time.sleep(30)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    open(go, "w").close()
    try:
        out, err = a.communicate(timeout=30)
    finally:
        b.terminate()  # run forwards it to its program
    daemon = int(open(pidfile).read()) if os.path.exists(pidfile) else None
    helper = [int(l.split()[1]) for l in out.splitlines() if l.startswith("helper ")]
    for pid in [daemon] + helper:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    b.wait()
    check(a.returncode == 0, "daemon: run exited %d: %s" % (a.returncode, err))
    # python's own descriptors are files and its epoll; the agent's pipes and sockets are gone
    kept = [l for l in out.splitlines() if l.startswith("child fd ")]
    print("\n".join(kept))
    check(kept and not [l for l in kept if "pipe:" in l or "socket:" in l],
          "the forked child kept the agent's descriptors: %s" % kept)
    line = [l for l in err.splitlines() if "unwatched" in l]
    print("daemon %s, helper %s: %s" % (daemon, helper, line))
    check(daemon and len(line) == 1 and line[0].endswith("unwatched: pid %d" % daemon)
          and line[0].startswith("stallwatch: 1 process forked by "),
          "daemon: expected one line naming pid %s only, got %s" % (daemon, err))
    check("keep it in the foreground" in err and "stallwatch-run(1)" in err,
          "daemon: no advice: %s" % err)
    # a program that forks into the background before its loop ever waits
    # (dbus-daemon --fork): the daemon is the word on its loop, not "nothing was watched"
    early = subprocess.run([STALLWATCH, "run", "--", sys.executable, "-c",
                            "import os, time\n"
                            "if os.fork() == 0:\n"
                            "    n = os.open(os.devnull, os.O_RDWR)\n"
                            "    for fd in (0, 1, 2): os.dup2(n, fd)\n"
                            "    time.sleep(30)\n"],
                           capture_output=True, text=True, timeout=30)
    named = re.search(r"unwatched: pid (\d+)", early.stderr)
    if named:
        os.kill(int(named.group(1)), signal.SIGKILL)
    check(named and "nothing was watched" not in early.stderr,
          "a daemon forked before the loop waited: %s" % early.stderr)


# A prefork server (nginx's master and workers): the program forks its
# workers, whose loops wait in select, and itself only waits for them.
PREFORK_PY = """
import os, selectors, signal, sys, time
workers = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        sel = selectors.DefaultSelector()
        while True:
            sel.select(0.01)
    workers.append(pid)
print("workers", *workers, flush=True)
if len(sys.argv) > 1:  # the master ends its workers and itself
    time.sleep(float(sys.argv[1]))
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    sys.exit(0)
def stop(*_):
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
for pid in workers:
    os.waitpid(pid, 0)
"""


def check_workers():
    """A program whose loop runs in forked workers, the program itself
    never waiting in a loop: the workers are named, whether they still run
    at the end (--duration) or ended before the program did.  A process of
    the same executable with the agent loaded that started before the run
    is not one of them."""
    before = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              env=dict(os.environ, LD_PRELOAD=AGENT),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)  # some clock ticks (/proc's start times) before the run's
    try:
        run_workers()
    finally:
        before.kill()
        before.wait()


def run_workers():
    for how, args in (("--duration", ["--duration", "2", "--", sys.executable, "-c", PREFORK_PY]),
                      ("ended", ["--", sys.executable, "-c", PREFORK_PY, "1.5"])):
        r = subprocess.run([STALLWATCH, "run"] + args, capture_output=True, text=True,
                           timeout=60)
        workers = [int(x) for l in r.stdout.splitlines() if l.startswith("workers ")
                   for x in l.split()[1:]]
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        named = re.search(r"forked (\d+) process(?:es)? during the run, unwatched: pid ([\d, ]+)",
                          r.stderr)
        print("workers %s (%s): %s" % (workers, how, named.group(0) if named else None))
        check(r.returncode == 0 and len(workers) == 2, "workers (%s): run exited %d: %s"
              % (how, r.returncode, r.stderr))
        check(named and sorted(int(x) for x in named.group(2).split(", ")) == sorted(workers),
              "workers (%s): expected pids %s named, got %s" % (how, workers, r.stderr))
        check("run it as one process" in r.stderr and "event loop the agent sees" not in r.stderr,
              "workers (%s): the advice for loops the agent cannot see, not for workers: %s"
              % (how, r.stderr))


# A program whose main thread only waits for the thread that does its work,
# as the java launcher waits for the thread that runs main().
THREADED_PY = """
import sys, threading, time
def work(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
t = threading.Thread(target=work, args=(float(sys.argv[1]),))
t.start()
t.join()
"""


def check_threads():
    """A program that never waited in a loop and whose work ran on a thread
    other than the main one: run says so, with the two CPU times, whether
    the program ends by itself or at --duration; a program whose main
    thread did the work gets the advice for loops that wait another way
    only."""
    for how, args in (("ended", ["--", sys.executable, "-c", THREADED_PY, "1.6"]),
                      ("--duration", ["--duration", "1.5", "--", sys.executable, "-c",
                                      THREADED_PY, "30"])):
        r = subprocess.run([STALLWATCH, "run"] + args, capture_output=True, text=True,
                           timeout=60)
        m = re.search(r"its main thread used (\d+) ms of the process's (\d+) ms of CPU time: "
                      r"the rest ran on other threads", r.stderr)
        print("threads (%s): %s" % (how, m.group(0) if m else None))
        check(m and int(m.group(1)) * 10 <= int(m.group(2)) and int(m.group(2)) >= 1000,
              "threads (%s): no word of the other threads' CPU time: %s" % (how, r.stderr))
        check("a loop on another thread (java runs main() on a new thread) is not watched"
              in r.stderr and "event loop the agent sees" not in r.stderr
              and "call stallwatch_before_wait()" in r.stderr,
              "threads (%s): advice: %s" % (how, r.stderr))
    r = subprocess.run([STALLWATCH, "run", "--", sys.executable, "-c",
                        "import time\nend = time.monotonic() + 1.6\n"
                        "while time.monotonic() < end: pass\n"],
                       capture_output=True, text=True, timeout=60)
    check("nothing was watched: the program never waited" in r.stderr
          and "other threads" not in r.stderr,
          "a busy main thread taken for work on other threads: %s" % r.stderr)


def scenario_status():
    d = tempfile.mkdtemp()
    r = subprocess.run([STALLWATCH, "run", "--", os.path.join(d, "missing")], capture_output=True)
    check(r.returncode == 127, "missing program: %d, expected 127" % r.returncode)
    r = subprocess.run([STALLWATCH, "run", "--", "no-such-program-anywhere"], capture_output=True)
    check(r.returncode == 127, "program not on PATH: %d, expected 127" % r.returncode)
    noexec = os.path.join(d, "noexec")
    with open(noexec, "w") as f:
        f.write("not a program\n")
    os.chmod(noexec, 0o644)
    r = subprocess.run([STALLWATCH, "run", "--", noexec], capture_output=True)
    check(r.returncode == 126, "not executable: %d, expected 126" % r.returncode)
    r = subprocess.run([STALLWATCH, "run", "--", "/bin/sh", "-c", "exit 3"], capture_output=True)
    check(r.returncode == 3, "the program's status 3: got %d" % r.returncode)
    r = subprocess.run([STALLWATCH, "run", "--", "/bin/sh", "-c", "kill -9 $$"], capture_output=True)
    check(r.returncode == 128 + 9, "killed by SIGKILL: %d, expected 137" % r.returncode)
    r = subprocess.run([STALLWATCH, "run", "--", STALLAPP], capture_output=True,
                       env=dict(os.environ, STALLWATCH_AGENT=os.path.join(d, "nope.so")))
    check(r.returncode == 125, "stallwatch failing itself: %d, expected 125" % r.returncode)
    r = subprocess.run([STALLWATCH, "run", "--bogus", "--", STALLAPP], capture_output=True)
    check(r.returncode == 2, "usage error: %d, expected 2" % r.returncode)
    cc = os.environ.get("SW_CC", "cc")
    src = os.path.join(d, "static.c")
    with open(src, "w") as f:
        f.write("#include <poll.h>\nint main(void){poll(0,0,100);return 0;}\n")
    exe = os.path.join(d, "static")
    if subprocess.run([cc, "-static", "-o", exe, src], capture_output=True).returncode == 0:
        t0 = time.monotonic()
        r = subprocess.run([STALLWATCH, "run", "--", exe], capture_output=True, text=True)
        check(r.returncode == 4, "static program: %d, expected 4 (%s)" % (r.returncode, r.stderr))
        check("without loading the agent: it is statically linked" in r.stderr,
              "static program: no clear error: %s" % r.stderr)
        print("static binary refused in %.1f s" % (time.monotonic() - t0))
    else:
        print("no static libc: static case not checked")
    # setgid to a group we are not in: the kernel runs it securely, the loader drops LD_PRELOAD
    setgid = os.path.join(d, "setgid-app")
    shutil.copy(STALLAPP, setgid)
    other = 65534 if os.getegid() != 65534 else 65533
    try:
        os.chown(setgid, -1, other)
        os.chmod(setgid, 0o2755)
    except PermissionError:
        print("cannot give a file another group as an ordinary user: setgid case not checked")
    else:
        r = subprocess.run([STALLWATCH, "run", "--", setgid, "busy:10"], capture_output=True,
                           text=True)
        check(r.returncode == 4 and "without loading the agent: it is setgid" in r.stderr,
              "setgid program: %d, %s" % (r.returncode, r.stderr))
        # the bit alone says nothing: setgid to our own group changes nothing
        os.chown(setgid, -1, os.getegid())
        os.chmod(setgid, 0o2755)
        r = subprocess.run([STALLWATCH, "run", "--", setgid, "busy:300"], capture_output=True,
                           text=True)
        check(r.returncode == 0 and "1 stall from" in r.stderr,
              "setgid to our own group: %d, %s" % (r.returncode, r.stderr))
    shutil.rmtree(d)
    scenario_token()


def scenario_all_threads():
    p = stallwatch_run(["--all-threads"], [STALLAPP, "threads:8", "busy:300"])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "run exited %d" % p.returncode)
    if not check(len(stalls) == 1, "expected one stall, got %d" % len(stalls)):
        return
    st = stalls[0]
    threads = {s["thread"] for s in st["stacks"]}
    check(len(threads) >= 9, "all-threads: stacks of %d threads, expected main + 8 idle"
          % len(threads))
    check_coverage(st, "all-threads")
    idle = [s for s in st["stacks"] if s["thread"] != st["thread"]]
    names = symbolize(st, heaviest({"stacks": idle})["frames"])
    print("idle thread:", names)
    check("idle_thread" in names, "an idle thread's stack lacks idle_thread")
    check(all("blocked" in s["flags"] for s in idle), "idle threads were signalled")


def scenario_glib():
    app = os.environ.get("STALLAPP_GLIB")
    if not app:
        skip("GLib not found at configure time")
    p = stallwatch_run([], [app, "busy:400"])
    objs, out = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
    if not check(len(stalls) == 1, "expected one stall, got %d" % len(stalls)):
        return
    st = stalls[0]
    names = symbolize(st, heaviest(st, st["thread"])["frames"])
    print("glib heaviest:", names)
    check(chain_in_order(names, ["main", "g_main_loop_run", "g_main_context_dispatch",
                                 "step_cb", "run_step", "stall_busy_outer", "stall_busy_inner"]),
          "the GLib stack does not go through GLib's frames to the stall")
    check_coverage(st, "glib")


def scenario_install():
    build = os.environ.get("SW_BUILD_ROOT")
    if not build or not shutil.which("meson"):
        skip("no build tree or meson")
    d = tempfile.mkdtemp()
    r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", d],
                       capture_output=True, text=True)
    if not check(r.returncode == 0, "meson install failed: %s" % r.stderr):
        return
    exe = [os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs
           if f == "stallwatch" and os.path.basename(dp) == "bin"]
    # the shell completions, where bash, zsh and fish look for them
    for where in ("share/bash-completion/completions/stallwatch",
                  "share/zsh/site-functions/_stallwatch",
                  "share/fish/vendor_completions.d/stallwatch.fish"):
        check(any(os.path.join(dp, f).endswith(where) for dp, _, fs in os.walk(d) for f in fs),
              "install lacks " + where)
    agents = [os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs
              if f == "libstallwatch-agent.so"]
    check(exe and agents, "install lacks the command or the agent")
    if exe and agents:
        env = dict(os.environ)
        env.pop("STALLWATCH_AGENT", None)
        r = subprocess.run([exe[0], "run", "--format", "ndjson", "--results", "-", "--", STALLAPP,
                            "busy:300"],
                           capture_output=True, text=True, env=env, timeout=60)
        check(r.returncode == 0, "installed run exited %d: %s" % (r.returncode, r.stderr))
        check('"type":"stall"' in r.stdout, "the installed command found no agent / no stall")
    shutil.rmtree(d)


def aarch64_tools():
    """The cross toolchain and emulator, or a skip."""
    src = os.environ.get("SW_SOURCE_ROOT")
    build = os.environ.get("SW_BUILD_ROOT")
    gcc = shutil.which("aarch64-linux-gnu-gcc")
    qemu = shutil.which("qemu-aarch64")
    sysroot = "/usr/aarch64-linux-gnu"
    if not (src and build and gcc and qemu and os.path.isdir(sysroot)):
        skip("needs aarch64-linux-gnu-gcc, qemu-aarch64 and the aarch64 libc")
    return src, build, gcc, qemu, sysroot


def scenario_aarch64():
    # return addresses signed with the A key (pac-ret), then the B key
    for protection in ("pac-ret", "pac-ret+b-key"):
        print("aarch64 with -mbranch-protection=%s" % protection, flush=True)
        aarch64_stalls(protection)


def aarch64_stalls(protection):
    src, build, gcc, qemu, sysroot = aarch64_tools()
    d = tempfile.mkdtemp()
    inj = os.path.join(src, "injector")
    agent_srcs = [os.path.join(inj, f) for f in sorted(os.listdir(inj)) if f.endswith(".c")]
    agent_srcs += [os.path.join(inj, "linux", f) for f in sorted(os.listdir(os.path.join(inj, "linux")))
                   if f.endswith(".c")]
    agent_srcs.append(os.path.join(src, "lib", "wire", "wire-encode.c"))
    flags = ["-O2", "-g", "-mbranch-protection=" + protection, "-D_GNU_SOURCE", "-std=gnu11"]
    agent = os.path.join(d, "libstallwatch-agent.so")
    r = subprocess.run([gcc, "-shared", "-fPIC", "-fvisibility=hidden", "-o", agent] + flags
                       + ["-I" + inj, "-I" + os.path.join(src, "lib"), "-I" + build]
                       + agent_srcs + ["-lpthread", "-ldl"], capture_output=True, text=True)
    if not check(r.returncode == 0, "cross-compiling the agent failed: %s" % r.stderr):
        return
    app = os.path.join(d, "stallapp")
    apps = os.path.join(src, "tests", "apps")
    r = subprocess.run([gcc, "-o", app] + flags + ["-fno-optimize-sibling-calls",
                       os.path.join(apps, "stallapp.c"), os.path.join(apps, "steps.c"),
                       os.path.join(apps, "hazards.c"),
                       "-lpthread", "-ldl"], capture_output=True, text=True)
    if not check(r.returncode == 0, "cross-compiling the app failed: %s" % r.stderr):
        return
    port = free_port()
    env = dict(os.environ, STALLWATCH_LISTEN="127.0.0.1:%d" % port, STALLWATCH_WAIT_MS="20000")
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen([qemu, "-cpu", "max", "-L", sysroot, "-E", "LD_PRELOAD=" + agent,
                             "-E", "STALLWATCH_LISTEN=127.0.0.1:%d" % port,
                             "-E", "STALLWATCH_WAIT_MS=20000",
                             app, "busy:600", "recurse:3000:400"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    client = None
    for _ in range(200):
        client = attach(port)
        try:
            client.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            break
        time.sleep(0.1)
    out, err = client.communicate(timeout=120)
    proc.wait(timeout=60)
    objs, _ = parse(out.splitlines())
    stalls = stalls_of(objs)
    check(proc.returncode == 0, "the aarch64 app exited %s" % proc.returncode)
    print("aarch64 stalls:", [(s["duration_ms"], s["samples"]) for s in stalls])
    if check(len(stalls) == 2, "aarch64: expected 2 stalls: %s" % err):
        st = stalls[0]
        check("truncated" not in heaviest(st, st["thread"])["flags"], "aarch64: busy stack cut")
        names = symbolize(st, heaviest(st, st["thread"])["frames"])
        print("aarch64 heaviest:", names)
        check(chain_in_order(names, ["main", "run_step", "stall_busy_outer", "stall_busy_inner",
                                     "spin_ms"]), "aarch64: heaviest stack lacks the chain")
        check(all(int(f, 16) < (1 << 48) for s in st["stacks"] for f in s["frames"]),
              "aarch64: pointer-authentication bits left in frames")
        top = heaviest(stalls[1], stalls[1]["thread"])
        check(len(top["frames"]) == 512 and "elided" in top["flags"],
              "aarch64 recursion depth %d %s" % (len(top["frames"]), top["flags"]))
    shutil.rmtree(d)


# ---- the agent must never harm the app (issue 11) ------------------------


def run_many(jobs, width=4):
    """Runs the argument lists of jobs through stallwatch_run, width at a time."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(width) as pool:
        return list(pool.map(lambda j: stallwatch_run(*j), jobs))


def scenario_exec():
    # 40 runs whose main thread replaces its image while sampled every 1 ms:
    # no agent signal may reach the new image (it has no handler and dies)
    jobs = []
    for i in range(40):
        how = ("exec", "exec", "spawn", "forkexec")[i % 4]
        first = ["sigblock"] if i % 8 == 1 else []
        jobs.append((["--interval", "1"], [STALLAPP] + first + ["busy:300",
                    "%s:%d" % (how, 262 + (i * 7) % 40)]))
    bad = []
    for (args, app), p in zip(jobs, run_many(jobs)):
        # the app's lines and the command's share stdout: look for words, not lines
        how = app[-1].split(":")[0]
        ok = p.returncode == 0 and "exec ok pending=0" in p.stdout
        if how != "exec":
            ok = ok and "%s status=0 signal=0" % how in p.stdout
        if not ok:
            bad.append((" ".join(app[1:]), p.returncode,
                        [l for l in p.stdout.splitlines() if "ok" in l or "status" in l]))
    check(not bad, "%d of 40 runs harmed by exec: %s" % (len(bad), bad[:4]))


# A script whose loop waits, is busy 400 ms in one iteration, and waits again.
ENV_SCRIPT = """#!/usr/bin/env %s
import selectors, time
sel = selectors.DefaultSelector()
sel.select(0.05)
end = time.monotonic() + 0.4
while time.monotonic() < end:
    pass
sel.select(0.05)
"""


def scenario_follow():
    """The watched process execs: the agent goes on in the new image, and
    run reads on from it into the same output and recording.  A script
    under env(1) is watched in its interpreter; a shell wrapper that execs
    the program is watched in the program; a stall the exec cut off is
    printed as far as it went, once live and once from the recording; a
    loop that waited in an earlier image was watched."""
    d = tempfile.mkdtemp()
    interp = os.path.basename(sys.executable)
    script = os.path.join(d, "env-script")
    with open(script, "w") as f:
        f.write(ENV_SCRIPT % interp)
    os.chmod(script, 0o755)
    p = stallwatch_run([], [script])
    objs, _ = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    # env execs what PATH names interp: its process goes by its own name
    names = sorted(set(s["process"] for s in stalls))
    print("env script: %s, %s" % ([round(s["duration_ms"]) for s in stalls], names))
    check(p.returncode == 0 and len(stalls) == 1 and 350 <= stalls[0]["duration_ms"] < 1000
          and names[0].startswith("python") and ("1 stall from %s (pid" % names[0]) in p.stderr,
          "a script under env: expected one 400 ms stall from python: %s: %s"
          % ([(s["process"], s["duration_ms"]) for s in stalls], p.stderr))
    # a wrapper that execs the app: a busy iteration, then one cut off by an
    # exec of the app itself, whose new image only prints and exits
    wrapper = os.path.join(d, "wrapper")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec \"$@\"\n")
    os.chmod(wrapper, 0o755)
    rec = os.path.join(d, "follow.swtrace")
    p = stallwatch_run(["-o", rec], [wrapper, STALLAPP, "busy:300", "exec:400"])
    objs, app = parse(p.stdout.splitlines())
    live = [(s["process"], s["complete"], round(s["duration_ms"])) for s in stalls_of(objs)]
    summary = [o for o in objs if o.get("type") == "summary"]
    print("wrapper: %s, app %s, loop %s"
          % (live, [l for l in app if l.startswith("exec")],
             summary and summary[-1].get("loop")))
    app_name = os.path.basename(STALLAPP)
    # the cut one lasted as far as its last sample, sent before the exec went on
    check(p.returncode == 0 and len(live) == 2 and live[0][:2] == (app_name, True)
          and 280 <= live[0][2] < 500 and live[1][:2] == (app_name, False)
          and 350 <= live[1][2] <= 450,
          "a wrapper that execs the app: expected a stall of 300 ms and one cut off by "
          "the exec: %s: %s" % (live, p.stderr))
    check(any(l.startswith("exec ok pending=0") for l in app),
          "the app's new image: %s" % app)
    check(summary and summary[-1].get("loop") == "watched"
          and "nothing was watched" not in p.stderr,
          "a loop that waited before the exec was not watched: %s: %s" % (summary, p.stderr))
    r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", rec], capture_output=True,
                       text=True, timeout=60)
    again = [(s["process"], s["complete"], round(s["duration_ms"]))
             for s in stalls_of(parse(r.stdout.splitlines())[0])]
    print("the recording: %s" % again)
    check(r.returncode == 0 and again == live,
          "the recording gives %s, live %s: %s" % (again, live, r.stderr))
    # run killed, the program goes on and execs: with no client to read, the
    # new image does not wait for one before its main()
    t0, t1 = os.path.join(d, "t0"), os.path.join(d, "t1")
    prog = ("import os, selectors, sys, time\n"
            "selectors.DefaultSelector().select(1.0)\n"
            "open(sys.argv[1], 'w').write(repr(time.time()))\n"
            "os.execv(sys.executable, [sys.executable, '-c', "
            "'import sys, time; open(sys.argv[1], \"w\").write(repr(time.time()))', "
            "sys.argv[2]])\n")
    a = subprocess.Popen([STALLWATCH, "run", "--", sys.executable, "-c", prog, t0, t1],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    a.kill()
    a.wait()
    deadline = time.monotonic() + 15
    while not os.path.exists(t1) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.05)
    took = (float(open(t1).read()) - float(open(t0).read())) if os.path.exists(t1) else None
    print("an exec after run was killed: the new image started %s s later" % took)
    check(took is not None and took < 2.0,
          "an exec after run was killed waited %s s for a client" % took)
    shutil.rmtree(d)


def scenario_sigblock():
    # a main thread that blocks every signal (and reads them from a signalfd)
    # must receive none of the agent's: its stalls say they could not be sampled
    p = stallwatch_run([], [STALLAPP, "sigblock", "busy:400", "busy:400", "busy:400", "pending",
                            "exec:10"])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    print("app:", [l for l in app if not l.startswith("step")])
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr[-300:]))
    check("pending rt=0 signalfd=0" in app, "the app received the agent's signals: %s"
          % [l for l in app if l.startswith("pending")])
    check(any(l.startswith("exec ok pending=0") for l in app), "signals survived exec")
    check(len(stalls) == 3, "expected 3 stalls, got %d" % len(stalls))
    for st in stalls:
        mains = [s for s in st["stacks"] if s["thread"] == st["thread"]]
        # never signalled: a sample says the thread blocks the signal, or was read
        # without one while it happened to be in a system call ("blocked"); the
        # stall says why at least once (a stall usually has the one marker, and a
        # loaded machine may add a read from /proc: 1 of 2 is not a majority)
        unsignalled = [s for s in mains
                       if "signal_blocked" in s["flags"] or "blocked" in s["flags"]]
        marked = [s for s in mains if "signal_blocked" in s["flags"]]
        check(mains and len(unsignalled) == len(mains) and marked,
              "stall %d: samples not marked signal_blocked: %s"
              % (st["id"], [s["flags"] for s in mains]))
    tree = subprocess.run([STALLWATCH, "run", "--results", "-", "--", STALLAPP, "sigblock",
                           "busy:400"],
                          capture_output=True, text=True, timeout=60)
    check("--focus" not in tree.stdout, "the tree blames --focus/--exclude, never given:\n"
          + tree.stdout)
    check("blocks the agent's signal" in tree.stdout, "the tree does not say why the stall "
          "has no stacks:\n" + tree.stdout)


# EINTR from nanosleep in a thread that computes and sleeps: the rate
# stallwatch-agent(7) states, per 10,000 calls
EINTR_PER_10K = 10


def naps_of(app):
    import re
    found = [re.search(r"naps calls=(\d+) eintr=(\d+)", l) for l in app]
    found = [m for m in found if m]
    return (int(found[0].group(1)), int(found[0].group(2))) if found else (0, 0)


def scenario_eintr():
    p = stallwatch_run(["--interval", "1"], [STALLAPP, "naps:5000:50", "naps:3000:400"])
    objs, app = parse(p.stdout.splitlines())
    calls = eintr = 0
    for line in app:
        c, e = naps_of([line])
        calls, eintr = calls + c, eintr + e
    print("signals: %d EINTR in %d calls" % (eintr, calls))
    check(p.returncode == 0 and calls > 5000, "run exited %d after %d calls"
          % (p.returncode, calls))
    check(eintr * 10000 <= EINTR_PER_10K * calls, "%d EINTR in %d calls: above %d per 10,000"
          % (eintr, calls, EINTR_PER_10K))
    check(stalls_of(objs), "no stall reported")
    # STALLWATCH_SIGNALS=never: no EINTR at all, the stalls still reported
    p = stallwatch_run(["--interval", "1"], [STALLAPP, "naps:3000:100", "sleep:400"],
                       extra_env={"STALLWATCH_SIGNALS": "never"})
    objs, app = parse(p.stdout.splitlines())
    calls, eintr = naps_of(app)
    stalls = stalls_of(objs)
    print("never: %d EINTR in %d calls, stalls %s" % (eintr, calls,
          [(s["duration_ms"], s["kind"]) for s in stalls]))
    check(p.returncode == 0 and calls > 2000, "never: run exited %d after %d calls"
          % (p.returncode, calls))
    check(eintr == 0, "never: %d EINTR in %d calls" % (eintr, calls))
    check("sleep interrupted" not in app, "never: the app's nanosleep was interrupted")
    check(len(stalls) == 2, "never: expected 2 stalls, got %d" % len(stalls))
    signalled = [s["flags"] for st in stalls for s in st["stacks"]
                 if s["thread"] == st["thread"] and s["frames"] and "blocked" not in s["flags"]]
    check(not signalled, "never: %d stacks were taken with a signal" % len(signalled))
    running = [s for st in stalls for s in st["stacks"] if "no_signal" in s["flags"]]
    check(running, "never: no sample says a running thread went unsampled")
    if len(stalls) == 2:
        sleep = stalls[1]
        top = heaviest(sleep, sleep["thread"])
        check(top and "blocked" in top["flags"] and top["frames"],
              "never: a thread waiting in the kernel is still sampled from /proc")


def scenario_seccomp():
    # a filter the app installs after the agent started kills the process on
    # process_vm_readv: the agent must not make that call any more
    p = stallwatch_run([], [STALLAPP, "seccomp", "sleep:400", "busy:400"])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "the app under seccomp exited %d: %s" % (p.returncode, p.stderr[-300:]))
    check("seccomp on" in app, "the app could not install its filter: %s" % app)
    check("done" in app, "the app did not run to its end")
    check(len(stalls) == 2, "expected 2 stalls, got %d" % len(stalls))
    check("passive" in p.stderr and "seccomp" in p.stderr,
          "the command does not say the agent went passive: %s" % p.stderr[-300:])
    for st in stalls:
        check(all("passive" in s["flags"] for s in st["stacks"]),
              "stall %d: samples taken under the filter" % st["id"])


def scenario_sigtoggle():
    # the app installs its own handler on the agent's signal and puts the old
    # one back, again and again: its handler must never run for the agent's
    p = stallwatch_run(["--interval", "1"], [STALLAPP, "sigtoggle:3000"])
    objs, app = parse(p.stdout.splitlines())
    line = next((l for l in app if l.startswith("sigtoggle ")), "")
    print(line)
    f = dict(kv.split("=") for kv in line.split()[1:]) if line else {}
    check(p.returncode == 0, "run exited %d" % p.returncode)
    check(f and int(f["foreign"]) == 0, "the app's handler ran for %s of the agent's signals"
          % f.get("foreign"))
    check(f and int(f["own"]) == int(f["sent"]) > 0, "the app's handler missed its own "
          "signals: got %s of %s" % (f.get("own"), f.get("sent")))
    check(len(stalls_of(objs)) == 1, "expected one stall")


def scenario_auxv():
    # Go's runtime finds the auxiliary vector past the end of the environment
    # the kernel laid out, and reads the page size there: the agent's
    # variables, taken out of that array, must not leave stale entries where
    # the vector is looked for (Go died with "failed to get system page size")
    p = stallwatch_run([], [STALLAPP, "auxv", "busy:300"])
    objs, app = parse(p.stdout.splitlines())
    line = next((l for l in app if l.startswith("auxv ")), "")
    print(line)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr[-300:]))
    # "empty" sends Go to /proc/self/auxv; "real" would do too
    check(line in ("auxv real", "auxv empty"), "the vector past the environment: %r" % line)
    check(len(stalls_of(objs)) == 1, "expected one stall, got %d" % len(stalls_of(objs)))
    # and the scrubbed environment still has no trace of the agent
    p = subprocess.run([STALLWATCH, "run", "--", "sh", "-c", "env"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    leaked = [l for l in p.stdout.splitlines()
              if l.startswith("STALLWATCH_") or (l.startswith("LD_PRELOAD=") and "stallwatch" in l)]
    check(p.returncode == 0 and not leaked, "the shell's environment: %s" % leaked)


def scenario_altstack():
    # a thread on a small stack of its own making (a goroutine's, a
    # coroutine's) that has an alternate signal stack: the agent's signal
    # must use that, not write its frame past the small stack's end
    p = stallwatch_run(["--interval", "1"], [STALLAPP, "altstack:600"])
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr[-300:]))
    check("altstack ok" in app, "the app did not come back from its small stack: %s" % app)
    check(len(stalls) == 1, "expected one stall, got %d" % len(stalls))
    if stalls:
        mains = [s for s in stalls[0]["stacks"] if s["thread"] == stalls[0]["thread"]]
        n = sum(s["count"] for s in mains)
        check(n >= 300, "the stall on the small stack has %d samples, want 300 or more" % n)
    # a program that crashes says so, rather than "nothing was watched"
    p = subprocess.run([STALLWATCH, "run", "--", "sh", "-c", "kill -SEGV $$"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check(p.returncode == 128 + signal.SIGSEGV, "a crash: run exited %d" % p.returncode)
    check(re.search(r"sh \(pid \d+\) was killed by signal %d \(Segmentation fault\)"
                    % signal.SIGSEGV, p.stderr) and "nothing was watched" not in p.stderr,
          "a crash is not named: %s" % p.stderr)


def scenario_smallalt():
    # a thread with an alternate signal stack of the bare minimum, as some
    # programs set for their own SIGSEGV handler: the agent's handler ran
    # 1,100 bytes past its bottom, into the app's memory.  Set through
    # sigaltstack() the agent never signals it; set by a raw system call,
    # the handler leaves at once.  Either way its samples say why they have
    # no stack.
    for raw in (0, 1):
        p = stallwatch_run(["--interval", "1"], [STALLAPP, "smallalt:500:%d" % raw])
        objs, app = parse(p.stdout.splitlines())
        stalls = stalls_of(objs)
        line = next((l for l in app if l.startswith("smallalt ")), "")
        print("raw %d: %s" % (raw, line))
        check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr[-300:]))
        check(line == "smallalt clean", "raw %d: the app's memory below its alternate stack: "
              "%r" % (raw, line))
        check(len(stalls) == 1, "raw %d: expected one stall, got %d" % (raw, len(stalls)))
        if stalls:
            mains = [s for s in stalls[0]["stacks"] if s["thread"] == stalls[0]["thread"]]
            marked = [s for s in mains if "small_altstack" in s["flags"]]
            others = [s for s in mains if "small_altstack" not in s["flags"]
                      and "blocked" not in s["flags"]]
            check(marked and not any(s["frames"] for s in marked) and not others,
                  "raw %d: samples not marked small_altstack: %s"
                  % (raw, [(s["flags"], len(s["frames"])) for s in mains]))
    tree = subprocess.run([STALLWATCH, "run", "--results", "-", "--", STALLAPP,
                           "smallalt:400"], capture_output=True, text=True, timeout=60)
    check("alternate signal stack is too small" in tree.stdout,
          "the tree does not say why the stall has no stacks:\n" + tree.stdout)


def scenario_exitmain():
    # a main thread that ends with pthread_exit() or is cancelled: the
    # process ends when the last of the app's threads does, with status 0.
    # The agent's threads kept it alive, forever and deaf to SIGTERM (they
    # block every signal, and no other thread was left to take one): the
    # agent ends them when the main thread ends, as it has no loop left
    for step in ("exitmain:300", "exitmain:300:1", "exitmain:300:2"):
        p = subprocess.Popen([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "--",
                              STALLAPP, "busy:300", step], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the app too, which run's own kill misses
            out, err = p.communicate()
            check(False, "%s: the process did not end within 20 s of its last thread" % step)
            continue
        objs, app = parse(out.splitlines())
        summary = next((o for o in objs if o.get("type") == "summary"), {})
        print("%s: run exited %d, %d stalls, goodbye %r" % (step, p.returncode,
                                                             len(stalls_of(objs)),
                                                             summary.get("goodbye")))
        check(p.returncode == 0 and "helper done" in app,
              "%s: run exited %d: %s" % (step, p.returncode, err[-300:]))
        check(len(stalls_of(objs)) == 1, "%s: %d stalls, not the busy one alone"
              % (step, len(stalls_of(objs))))
        check(summary.get("goodbye") == "the main thread ended",
              "%s: the agent's goodbye: %r" % (step, summary.get("goodbye")))


def scenario_exitnow():
    # a process that ends with _exit() in a stall (Go's runtime always
    # does; a crash, the system's watchdog killing a hung app) runs nothing
    # of the agent's on the way out: what reached the command is what the
    # streamer had sent.  It sends every 50 ms while an iteration is
    # watched (it waited 250 ms between looks, and lost up to that much of
    # the stall's end).  Three runs: the end falls anywhere between looks.
    for attempt in range(3):
        p = stallwatch_run([], [STALLAPP, "exitnow:1000"])
        objs, app = parse(p.stdout.splitlines())
        stalls = stalls_of(objs)
        end = next((int(l.split()[2]) for l in app if l.startswith("exitnow end ")), None)
        if not check(p.returncode == 0 and end and len(stalls) == 1,
                     "exitnow: run exited %d, %d stalls, app %s" % (p.returncode, len(stalls), app)):
            return
        st = stalls[0]
        lost = (end - st["monotonic_start_ns"]) / 1e6 - st["duration_ms"]
        print("exitnow: stall %.1f ms, %.1f ms of its end not received" % (st["duration_ms"], lost))
        check(not st["complete"], "exitnow: the stall says it is complete")
        check(lost < 100, "exitnow: %.1f ms of the stall's end were lost" % lost)


def scenario_records():
    # `run --results -` shares stdout with the program: each NDJSON record
    # must leave in one write(2), or the program's lines land inside it
    # (agent-follow failed in CI on a stall record split by the exec'd
    # image's first line: stdio wrote a record longer than its buffer in two)
    if not shutil.which("strace"):
        skip("no strace (Debian: strace)")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "run.strace")
        # the command alone is traced (not -f): its writes to standard output
        p = subprocess.run(["strace", "-qq", "-e", "trace=write", "-e", "signal=none", "-s", "0",
                            "-o", trace, STALLWATCH, "run", "--format", "ndjson", "--results", "-",
                            "--", STALLAPP, "busy:300", "busy:300"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        writes = [int(m.group(1)) for m in
                  (re.match(r'write\(1, ""\.\.\., \d+\)\s+= (\d+)', l) for l in open(trace))
                  if m]
    objs, app = parse(p.stdout.splitlines())
    # the records in their order (the program's own lines are not the command's writes)
    sizes = [len(l.encode()) + 1 for l in p.stdout.splitlines() if l.startswith("{")]
    print("records:", sizes, "writes to stdout:", writes)
    check(p.returncode == 0 and len(stalls_of(objs)) == 2,
          "run exited %d with %d stalls" % (p.returncode, len(stalls_of(objs))))
    check(max(sizes, default=0) > 4096, "no record longer than stdio's buffer: nothing is shown")
    # every write ends where a record ends (one record, or several, per write)
    ends = set(itertools.accumulate(sizes))
    check(sum(writes) == sum(sizes) and all(c in ends for c in itertools.accumulate(writes)),
          "records left in pieces: writes %s for records %s" % (writes, sizes))


def agent_thread(pid, name):
    """The thread id of the agent's thread called name in process pid."""
    return next(int(t) for t in os.listdir("/proc/%d/task" % pid)
                if open("/proc/%d/task/%s/comm" % (pid, t)).read().strip() == name)


def task_cpus(pid, tid):
    """(the processor the task last ran on, the processors it may run on)."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        last = int(f.read().rsplit(")", 1)[1].split()[36])  # field 39, processor
    allowed = set()
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                for part in line.split()[1].split(","):
                    lo, _, hi = part.partition("-")
                    allowed.update(range(int(lo), int(hi or lo) + 1))
    return last, allowed


def scenario_keepoff():
    # While the loop idles, the watchdog already keeps off the processor the
    # main thread last ran on, so that its first look at an iteration that
    # turns into a stall does not preempt it (it learns that processor from
    # the kernel's rseq copy, which glibc 2.35 and later registers)
    if len(os.sched_getaffinity(0)) < 2:
        skip("one processor: nowhere else for the watchdog to run")
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    if not libc.startswith("glibc ") or tuple(map(int, libc.split()[1].split(".")[:2])) < (2, 35):
        skip("%s registers no rseq area" % (libc or "this C library"))
    proc = subprocess.Popen([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "--",
                             STALLAPP, "idle:1500", "busy:400"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    ready = out.wait_for(lambda l: l.startswith("ready pid="))
    pid = int(ready.split("=")[1])
    time.sleep(0.5)
    watchdog = agent_thread(pid, "sw-watchdog")
    seen = []
    for _ in range(10):
        main_cpu, _ = task_cpus(pid, pid)
        _, allowed = task_cpus(pid, watchdog)
        seen.append((main_cpu, sorted(allowed)))
        time.sleep(0.05)
    print("main thread's processor, the watchdog's allowed set: %s" % seen)
    # the main thread may wake elsewhere between two reads: the watchdog
    # follows at its next look, so most reads must find it away
    check(sum(cpu not in allowed for cpu, allowed in seen) >= 8,
          "the watchdog may run where the idle main thread is: %s" % seen)
    proc.wait(timeout=60)
    objs, app = parse(out.done())
    check(proc.returncode == 0 and len(stalls_of(objs)) == 1,
          "run exited %d with %d stalls" % (proc.returncode, len(stalls_of(objs))))


# A real-time task that takes one processor (its first argument) from the
# agent and the app alike for BURST ms out of every PERIOD, for SECONDS,
# and prints each burst's start and end (monotonic ns).
HOG = r"""
import os, sys, time
cpu, burst, period, seconds = (float(a) for a in sys.argv[1:])  # CPU BURST PERIOD SECONDS
os.sched_setaffinity(0, {int(cpu)})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))  # above the watchdog's 1
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    t0 = time.monotonic_ns()
    while time.monotonic_ns() - t0 < burst * 1e6:
        pass
    print("burst", t0, time.monotonic_ns(), flush=True)
    time.sleep((period - burst) / 1e3)
"""


def check_late(stall, what):
    """The late samples the agent counts are within what the sample times
    allow: each one's lateness is under the gap before it, which is over
    an interval."""
    interval, times = stall["interval_ms"], stall["sample_times_ms"]
    gaps = sum(b - a for a, b in zip(times, times[1:]) if b - a > interval)
    check(stall["late_rounds"] is not None and stall["late_ms"] is not None,
          "%s: the agent says nothing of late samples" % what)
    if stall["late_ms"] is None:
        return
    check(stall["late_ms"] <= gaps + 0.01,
          "%s: %.1f ms late in %d samples, more than the %.1f ms of gaps over an interval"
          % (what, stall["late_ms"], stall["late_rounds"], gaps))
    check(stall["late_ms"] == 0 or stall["late_rounds"] > 0,
          "%s: %.1f ms late in no sample" % (what, stall["late_ms"]))
    check(stall["late_ms"] >= stall["late_rounds"] * interval,
          "%s: %d samples late by %.1f ms in all: each is over an interval late"
          % (what, stall["late_rounds"], stall["late_ms"]))


def scenario_late():
    # A task of higher priority takes the app's processor 20 ms in every 50:
    # the samples after each burst come late, the agent counts them, and the
    # tree's header says so.  The bursts are the test's own, so the counts
    # can be checked against them.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError:
        skip("a real-time task needs CAP_SYS_NICE or an RLIMIT_RTPRIO, which this user lacks")
    cpu = min(os.sched_getaffinity(0))
    burst, period, interval = 20, 50, 2
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(cpu), str(burst), str(period), "8"],
                           stdout=subprocess.PIPE, text=True)
    try:
        check(hog.stdout.readline().strip() == "ready", "the hog did not start")
        rec = tempfile.mktemp(suffix=".swtrace")
        p = stallwatch_run(["--interval", str(interval), "-o", rec,
                            "--exe", os.path.basename(STALLAPP)],
                           ["taskset", "-c", str(cpu), STALLAPP, "busy:1500"])
    finally:
        hog.kill()
        bursts = [tuple(int(x) for x in l.split()[1:]) for l in hog.stdout if l.startswith("burst")]
        hog.wait()
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    if not check(p.returncode == 0 and len(stalls) == 1,
                 "run exited %d with %d stalls: %s" % (p.returncode, len(stalls), p.stderr)):
        return
    st = stalls[0]
    start = st["monotonic_start_ns"]
    first, last = start + st["sample_times_ms"][0] * 1e6, start + st["sample_times_ms"][-1] * 1e6
    inside = [(a, b) for a, b in bursts if first < a and b < last]
    # after each burst the next sample is late by about the burst, less an interval
    want = sum((b - a) / 1e6 - 2 * interval for a, b in inside)
    print("bursts inside the stall: %d (%.0f ms); the agent: %d samples late by %.1f ms"
          % (len(inside), sum(b - a for a, b in inside) / 1e6, st["late_rounds"] or 0,
             st["late_ms"] or 0))
    check(len(inside) >= 15, "only %d bursts fell inside the stall" % len(inside))
    # over a third of the stall: the run's summary says so
    check("samples came late in 1 stall (" in p.stderr,
          "the summary does not say samples came late: %s" % p.stderr)
    check_late(st, "late")
    check(st["late_rounds"] is not None and st["late_rounds"] >= 0.8 * len(inside),
          "%s samples late for %d bursts" % (st["late_rounds"], len(inside)))
    check(st["late_ms"] is not None and st["late_ms"] >= 0.8 * want,
          "%s ms late for %d bursts, expected at least %.1f" % (st["late_ms"], len(inside),
                                                                  0.8 * want))
    # the recording keeps them: the tree's header says how many, and by how much
    tree = subprocess.run([STALLWATCH, "report", "--color", "never", rec],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    os.unlink(rec)
    head = [l for l in tree.stdout.splitlines() if l.startswith("#1 ") and " sig " in l]
    print("header:", head)
    m = head and re.search(r"  late (\d+) \(([\d.]+) (ms|s)\)  ", head[0])
    if check(m, "the header does not say how many samples were late: %s" % head):
        shown = float(m.group(2)) * (1000 if m.group(3) == "s" else 1)
        rounding = 5.001 if m.group(3) == "s" else 0.051  # as the header rounds
        check(int(m.group(1)) == st["late_rounds"] and abs(shown - st["late_ms"]) <= rounding,
              "the header says %s samples %s late, the NDJSON %s and %.3f ms"
              % (m.group(1), m.group(2) + " " + m.group(3), st["late_rounds"], st["late_ms"]))


def hold_thread(tid, seconds):
    """Holds one thread of a descendant in a ptrace stop for seconds, the
    others running on: (CLOCK_MONOTONIC ns at the hold, at the release), or
    None with the errno when ptrace is refused."""
    import ctypes
    seize, interrupt, detach, wall = 0x4206, 0x4207, 17, 0x40000000
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(seize, tid, None, None) != 0:
        return None, ctypes.get_errno()
    libc.ptrace(interrupt, tid, None, None)
    os.waitpid(tid, wall)
    t0 = time.monotonic_ns()
    time.sleep(seconds)
    t1 = time.monotonic_ns()
    libc.ptrace(detach, tid, None, None)
    return (t0, t1), 0


def scenario_held():
    # A watchdog that did not run for a while, though the process did, is no
    # stop: here a ptrace stop of the watchdog alone stands for a hypervisor
    # that took the machine's processors (steal) or an uninterruptible wait of
    # the watchdog, neither of which shows as time it waited for a processor.
    # The main thread, waiting in a poll inside a callback all along, never
    # ran: the stall keeps its whole length.  A SIGSTOP of the whole process
    # in the same kind of wait makes every thread run, to stop and to go on,
    # and is still taken out (stallwatch-agent(7)).
    proc = subprocess.Popen([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "--",
                             STALLAPP, "idle:300", "pollwait:1000", "idle:300", "pollwait:1500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    pid = int(out.wait_for(lambda l: l.startswith("ready pid=")).split("=")[1])
    time.sleep(0.1)
    watchdog = agent_thread(pid, "sw-watchdog")
    out.wait_for(lambda l: l.startswith("step pollwait begin"))
    time.sleep(0.2)
    held, err = hold_thread(watchdog, 0.5)
    if held is None:
        proc.kill()
        proc.wait()
        skip("ptrace of the app's thread refused (%s): see /proc/sys/kernel/yama/ptrace_scope"
             % os.strerror(err))
    out.wait_for(lambda l: l.startswith("step pollwait begin") and
                 out.count(lambda x: x.startswith("step pollwait begin")) == 2)
    time.sleep(0.3)
    t0 = time.monotonic_ns()
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.6)
    os.kill(pid, signal.SIGCONT)
    stopped_ms = (time.monotonic_ns() - t0) / 1e6
    proc.wait(timeout=60)
    objs, app = parse(out.done())
    stalls = stalls_of(objs)
    steps = [s for s in steps_of(app) if s["kind"] == "pollwait"]
    print("held %.0f ms, stopped %.0f ms; stalls %s for steps %s"
          % ((held[1] - held[0]) / 1e6, stopped_ms, [s["duration_ms"] for s in stalls],
             [s["elapsed_ms"] for s in steps]))
    if not check(proc.returncode == 0 and len(stalls) == 2 and len(steps) == 2,
                 "run exited %d with %d stalls" % (proc.returncode, len(stalls))):
        return
    first, second = stalls
    want = steps[0]["elapsed_ms"]
    check(abs(first["duration_ms"] - want) <= 4 * INTERVAL_MS,
          "a held watchdog shortened the stall: %.1f ms for a wait of %.1f ms"
          % (first["duration_ms"], want))
    # the stop is timed from here: the signals' flight and the machine add a little
    want = steps[1]["elapsed_ms"] - stopped_ms
    check(abs(second["duration_ms"] - want) <= 6 * INTERVAL_MS,
          "a stopped process: stall of %.1f ms, the wait less the stop is %.1f ms"
          % (second["duration_ms"], want))


# ---- reports that must be right (issue 11 item 8) -------------------------


def tree_stalls(text):
    """(header duration ms, tree root weight ms) of each stall of a tree output."""
    out, header = [], None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[0].startswith("#") or parts[2] != "ms":
            continue
        if parts[3] in ("busy", "blocked"):
            header = float(parts[1])
        elif header is not None and parts[3].endswith("%"):
            out.append((header, float(parts[1])))
            header = None
    return out


def read_uleb(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def long_stall(data, count):
    """A recording's first stall given count more empty samples (stallwatch-format(5))."""
    out, pos, done = bytearray(data[:16]), 16, False
    while pos < len(data):
        start = pos
        kind = data[pos]
        length, pos = read_uleb(data, pos + 1)
        body = data[pos:pos + length]
        pos += length
        if kind == 4 and not done:
            stall_id, p = read_uleb(body, 0)
            thread, p = read_uleb(body, p)
            t0, _ = read_uleb(body, p)
        if kind == 5 and not done:
            for i in range(count):
                b = uleb(stall_id) + uleb(t0 + i) + uleb(thread) + b"\0\0"
                out += bytes([6]) + uleb(len(b)) + b
            done = True
        out += data[start:pos]
    return bytes(out)


def scenario_reports():
    # 1,000 idle threads with --all-threads: the end is the loop's, not a late round's
    p = stallwatch_run(["--all-threads"], [STALLAPP, "threads:1000", "busy:400", "busy:400",
                                           "busy:400"], timeout=120)
    objs, app = parse(p.stdout.splitlines())
    steps = [s for s in steps_of(app) if s["kind"] == "busy"]
    stalls = stalls_of(objs)
    print("1000 threads:", [(s["duration_ms"], s["samples"]) for s in stalls],
          [s["elapsed_ms"] for s in steps])
    check(len(stalls) == 3, "1000 threads: expected 3 stalls, got %d" % len(stalls))
    for st in stalls:
        step = match(st, steps)
        check(step and abs(st["duration_ms"] - step["elapsed_ms"]) <= st["interval_ms"] + 5,
              "1000 threads: stall of %.1f ms for a step of %s ms"
              % (st["duration_ms"], step and step["elapsed_ms"]))

    # stopped for 3 s inside a stall (the app's spin ends by the wall clock, so the
    # stall is the 350 ms before the stop): header and tree root agree, without the stop
    proc = subprocess.Popen([STALLWATCH, "run", "--color", "never", "--results", "-", "--",
                             STALLAPP, "busy:600"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    pid = int(out.wait_for(lambda l: l.startswith("ready pid=")).split("=")[1])
    out.wait_for(lambda l: l.startswith("step busy begin"))
    time.sleep(0.35)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(3)
    os.kill(pid, signal.SIGCONT)
    proc.wait(timeout=60)
    lines = out.done()
    trees = tree_stalls("\n".join(lines))
    print("stopped:", trees)
    print("\n".join(l for l in lines if l.startswith("#"))[:600])
    if check(len(trees) == 1, "stopped: expected one stall, got %s" % trees):
        header, root = trees[0]
        check(header < 500, "stopped: the header counts the stop: %.1f ms" % header)
        # the tree ends at the last sample, up to two intervals (and a late tick)
        # before the loop's own end
        check(abs(root - header) <= 3 * INTERVAL_MS, "stopped: tree root %.1f ms, header %.1f ms"
              % (root, header))
    # nor is the stop a sample taken late (the machine's doing)
    m = re.search(r"  late \d+ \(([\d.]+) (ms|s)\)", "\n".join(lines))
    late = float(m.group(1)) * (1000 if m.group(2) == "s" else 1) if m else 0
    check(late < 1000, "stopped: the 3 s stop counted as %.1f ms of samples taken late" % late)

    # a main thread that calls pthread_exit() is not a stall
    p = stallwatch_run([], [STALLAPP, "exitmain:1500"])
    objs, app = parse(p.stdout.splitlines())
    check("helper done" in p.stdout, "exitmain: the helper did not finish")
    check(not stalls_of(objs), "exitmain: false stalls %s"
          % [s["duration_ms"] for s in stalls_of(objs)])

    # a stall past the command's limits (2^20 samples): report stops there and says so once
    # (stallwatch-report(1) LIMITS; run and attach warn once and go on: test-bounds.py)
    rec = tempfile.mktemp(suffix=".swtrace")
    p = stallwatch_run(["-o", rec], [STALLAPP, "busy:300"])
    with open(rec, "rb") as f:
        data = f.read()
    cut = os.path.join(os.path.dirname(rec), "cut-" + os.path.basename(rec))
    with open(cut, "wb") as f:
        f.write(long_stall(data, 1_050_000))
    r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", cut], capture_output=True,
                       text=True, timeout=300)
    cuts = r.stderr.count("more than 1048576 samples in one stall")
    print("limit lines:", cuts)
    check(r.returncode == 5 and cuts == 1, "the limit was named %d times (exit %d)"
          % (cuts, r.returncode))
    os.unlink(rec)
    os.unlink(cut)

    # a stall left open when the app dies: both summary lines count it
    proc = subprocess.Popen([STALLWATCH, "run", "--color", "never", "--", STALLAPP, "busy:300",
                             "busy:300", "busy:5000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    pid = int(out.wait_for(lambda l: l.startswith("ready pid=")).split("=")[1])
    out.wait_for(lambda l: l.startswith("step busy begin") and
                 out.count(lambda x: x.startswith("step busy begin")) == 3)
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    err = proc.stderr.read()
    proc.wait(timeout=60)
    a = re.search(r"stallwatch: (\d+) stalls? from", err)
    b = re.search(r"stallwatch: (\d+) stalls?, .* in total", err)
    print("killed:", a and a.group(0), "|", b and b.group(0))
    check(a and b and a.group(1) == b.group(1) == "3", "the summary lines disagree:\n" + err)


def scenario_descriptors():
    # an app that closes every descriptor from 3 up and opens its own in
    # their place: the agent never reads, writes, accepts or closes them, and
    # stays idle (issue 11 item 1)
    d = tempfile.mkdtemp()
    env = {"STALLAPP_LOG": os.path.join(d, "app.log"),
           "STALLWATCH_LOG": os.path.join(d, "agent.log")}
    p = stallwatch_run([], [STALLAPP, "fdreuse:400", "busy:300"], extra_env=env)
    line = next((l for l in p.stdout.splitlines() if l.startswith("fdreuse ")), "")
    print(line)
    f = dict(kv.split("=") for kv in line.split()[1:]) if line else {}
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr[-300:]))
    check(f.get("pipe") == "796", "the app read %s of the 796 bytes in its pipe" % f.get("pipe"))
    check(f.get("accept") == "ok", "the app could not accept its own connection")
    check(f.get("log") == "clean", "the app's log is not what the app wrote: %s"
          % [l for l in p.stdout.splitlines() if l.startswith("fdreuse log")])
    check(f and int(f["agent_cpu_ms"]) < 50, "the agent used %s ms of CPU in an idle second"
          % f.get("agent_cpu_ms"))
    check("done" in p.stdout, "the app did not run to its end")
    p = stallwatch_run([], [STALLAPP, "fdreuse:400:1"], extra_env=env)
    line = next((l for l in p.stdout.splitlines() if l.startswith("fdclose ")), "")
    print(line)
    cpu = int(line.split("=")[1]) if line else -1
    check(0 <= cpu < 50, "with its descriptors closed the agent used %d ms of CPU in an idle "
          "second" % cpu)
    shutil.rmtree(d)


def client_hello(token=""):
    return msg(64, b"SWCL" + uleb(1) + wstr(token) + wstr("attacker"))


def raw_connect(port):
    import socket
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(0.5)
    return s


def read_for(s, seconds):
    data, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = s.recv(65536)
        except OSError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def scenario_connect():
    # who may connect (issue 11 item 4): the real client, which reads the
    # agent's token file, keeps every stall while others try everything
    import socket
    port = free_port()
    run_dir = tempfile.mkdtemp()
    os.chmod(run_dir, 0o755)  # as open as a shared directory: the agent must close its own
    env = dict(os.environ, LD_PRELOAD=AGENT, STALLWATCH_LISTEN="127.0.0.1:%d" % port,
               STALLWATCH_BUNDLE_ID="com.example.safety", XDG_RUNTIME_DIR=run_dir)
    steps = ["idle:1500", "gap:500"] + ["busy:300"] * 10
    app = subprocess.Popen([STALLAPP] + steps, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
    app_out = Output(app)
    app_out.wait_for(lambda l: l.startswith("ready"))
    time.sleep(0.3)
    client_env = dict(os.environ, XDG_RUNTIME_DIR=run_dir)
    client = subprocess.Popen([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port,
                               "--format", "ndjson"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=client_env)
    c_out = Output(client)
    first = c_out.wait_for(lambda l: '"type":"stall"' in l, timeout=15)
    check(first is not None, "the real client got no stall")
    # what another user could read, checked as any user: the run directory is
    # open to all here, so only the agent's own directory and file keep the
    # token (a directory of 0755 or a file of 0644 fails)
    own_dir = os.path.join(run_dir, "stallwatch")
    token = os.path.join(own_dir, "agent-%d.token" % port)
    for path, mode in ((own_dir, 0o700), (token, 0o600)):
        st = os.lstat(path)
        check(st.st_uid == os.getuid() and (st.st_mode & 0o777) == mode,
              "%s: mode %o, owner %d" % (path, st.st_mode & 0o777, st.st_uid))

    # while the app runs: without the token file, with a wrong token, or as
    # another user, refused (status 4)
    empty = tempfile.mkdtemp()
    r = subprocess.run([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port, "--duration",
                        "1"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, XDG_RUNTIME_DIR=empty))
    check(r.returncode == 4 and "token refused" in r.stderr and "no token file" in r.stderr,
          "a client without the token file got status %d: %s" % (r.returncode, r.stderr))
    r = subprocess.run([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port, "--token",
                        "wrong", "--duration", "1"], capture_output=True, text=True, timeout=30,
                       env=client_env)
    check(r.returncode == 4 and "token refused" in r.stderr,
          "a wrong token got status %d: %s" % (r.returncode, r.stderr))
    if os.getuid() == 0:
        # another user cannot read the token file
        r = subprocess.run([STALLWATCH, "attach", "--connect", "127.0.0.1:%d" % port,
                            "--duration", "1"], capture_output=True, text=True, timeout=30,
                           env=client_env, preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        check(r.returncode == 4 and "token refused" in r.stderr,
              "another user got status %d: %s" % (r.returncode, r.stderr))

    # before proof: protocol and bundle id, nothing else (no paths, no names)
    s = raw_connect(port)
    pre = read_for(s, 0.5)
    s.sendall(client_hello(""))
    after = read_for(s, 0.5)
    s.close()
    check(b"com.example.safety" in pre, "the agent did not send its bundle id before proof")
    check(b"stallapp" not in pre + after and b"libc" not in pre + after,
          "an unproven connection got the app's names or paths: %r" % (pre + after)[:200])
    # a config from a connection without the token changes nothing
    s = raw_connect(port)
    read_for(s, 0.2)
    s.sendall(client_hello("") + msg(65, uleb(15) + uleb(1) + uleb(1000) + uleb(1) + uleb(8)))
    read_for(s, 0.3)
    s.close()
    # garbage, a half hello, slowloris, 100 parallel connections, bare connects
    s = raw_connect(port)
    s.sendall(os.urandom(2000))
    s.close()
    half = raw_connect(port)
    half.sendall(client_hello("")[:5])
    slow = raw_connect(port)
    many = []
    for _ in range(100):
        try:
            many.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            pass
    for b in client_hello("x" * 40):
        try:
            slow.sendall(bytes([b]))
        except OSError:
            break
        time.sleep(0.1)
    for _ in range(5):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError:
            pass
    for m in many:
        m.close()
    half.close()
    slow.close()
    app.wait(timeout=60)
    client.wait(timeout=30)
    objs, _ = parse(c_out.done())
    stalls = stalls_of(objs)
    print("real client:", [(st["id"], st["interval_ms"]) for st in stalls], client.returncode)
    check(client.returncode == 0, "the real client exited %s" % client.returncode)
    check(sorted(st["id"] for st in stalls) == list(range(1, 11)),
          "the real client lost stalls: got %s" % [st["id"] for st in stalls])
    check(all(st["interval_ms"] == 10 and len({x["thread"] for x in st["stacks"]}) == 1
              for st in stalls), "an unproven config changed the sampling")
    check(app.returncode == 0, "the app exited %s" % app.returncode)
    shutil.rmtree(run_dir)
    shutil.rmtree(empty)


def scenario_pac():
    """tests/test-agent-pac.c under qemu: PAC stripping, the async bit, a signed chain."""
    src, build, gcc, qemu, sysroot = aarch64_tools()
    d = tempfile.mkdtemp()
    inj = os.path.join(src, "injector")
    prog = os.path.join(d, "test-agent-pac")
    r = subprocess.run([gcc, "-O2", "-g", "-static", "-D_GNU_SOURCE", "-std=gnu11",
                        "-mbranch-protection=pac-ret+b-key", "-I" + inj,
                        "-I" + os.path.join(src, "lib"), "-I" + os.path.join(src, "tests"),
                        "-I" + build, "-o", prog, os.path.join(src, "tests", "test-agent-pac.c")]
                       + [os.path.join(inj, f) for f in ("unwind.c", "unwind-cfi.c",
                                                         "unwind-compact.c")],
                       capture_output=True, text=True)
    if not check(r.returncode == 0, "cross-compiling test-agent-pac failed: %s" % r.stderr):
        return
    for cpu, args, want in (("max", [], "pac on"), ("cortex-a57", ["nopac"], "pac off")):
        r = subprocess.run([qemu, "-cpu", cpu, prog] + args, capture_output=True, text=True,
                           timeout=60)
        print(r.stdout.strip(), r.stderr.strip(), sep="\n")
        check(r.returncode == 0 and want in r.stdout,
              "test-agent-pac on -cpu %s: exit %d" % (cpu, r.returncode))
    shutil.rmtree(d)


def scenario_crash():
    # issue 11 item 9: every stall printed by `run -o` is already on disk,
    # so a SIGKILL of the command after N printed stalls leaves a recording
    # that `report` reads N stalls from.
    d = tempfile.mkdtemp()
    rec = os.path.join(d, "crash.swtrace")
    proc = subprocess.Popen([STALLWATCH, "run", "--format", "ndjson", "--results", "-", "-o", rec, "--",
                             STALLAPP, "busy:300", "busy:300", "busy:300", "idle:30000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Output(proc)
    ready = out.wait_for(lambda l: l.startswith("ready pid="))
    pid = int(ready.split("=")[1]) if ready else 0
    printed = out.wait_until(
        lambda lines: sum(1 for l in lines if '"type":"stall"' in l) >= 3 or None, 30)
    proc.kill()
    proc.wait(timeout=30)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    check(printed, "run printed fewer than 3 stalls before the kill")
    r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", rec],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    objs, _ = parse(r.stdout.splitlines())
    got = len(stalls_of(objs))
    check(got == 3, "report on the recording of a killed run shows %d of 3 printed stalls (%s)"
          % (got, r.stderr.strip()))
    shutil.rmtree(d)


def image_path(stall, text):
    """The path of the image holding address text (hex), or None."""
    im = image_of(stall, text)
    return im["path"] if im else None


def scenario_hook():
    # The agent's wait hook unwinds the main thread with the C runtime's
    # unwinder when it learns the loop's wait and when it meets a new one
    # (loop-wait.c).  SW_UNWIND_SPY_LIB stands in for that unwinder and
    # spins 300 ms first on the main thread.  Learning, in the idle time
    # before the step, must make no stall of its own: the frame is found
    # once the loop is idle.  The step's poll is a new wait inside the
    # iteration, so the hook's unwinding there makes the step a stall;
    # the samples of that time end at the hook, where the app waits, and
    # none shows the agent's unwinding.
    spy = os.environ.get("SW_UNWIND_SPY_LIB", "")
    if not spy:
        skip("SW_UNWIND_SPY_LIB is not set (meson test sets it)")
    d = tempfile.mkdtemp(prefix="sw-hook-")
    log = os.path.join(d, "unwinds")
    env = {"LD_PRELOAD": spy, "SW_UNWIND_SPY": log, "SW_UNWIND_SPY_MS": "300"}
    p = stallwatch_run([], [STALLAPP, "pollwait:50"], env)
    objs, app = parse(p.stdout.splitlines())
    stalls = stalls_of(objs)
    steps = steps_of(app)
    unwinds = [tuple(int(x) for x in l.split()[1:]) for l in open(log)] if os.path.exists(log) else []
    shutil.rmtree(d)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
    check(len(steps) == 1, "the app's step did not run: %s" % app)
    # the constructor's, the learning's, the step's new wait's
    check(len(unwinds) >= 3, "the spy saw %d unwinds on the main thread, want 3 or more: "
          "is it preloaded?" % len(unwinds))
    check(len(stalls) == 1, "want the step's stall alone, got %d: %s"
          % (len(stalls), [(s["monotonic_start_ns"], s["duration_ms"]) for s in stalls]))
    if len(stalls) != 1 or not steps:
        return
    st, step = stalls[0], steps[0]
    end = st["monotonic_start_ns"] + st["duration_ms"] * 1e6
    check(abs(st["monotonic_start_ns"] - step["begin"]) < 50e6,
          "the stall starts %.1f ms from the step" % ((st["monotonic_start_ns"] - step["begin"]) / 1e6))
    inside = [u for u in unwinds if st["monotonic_start_ns"] <= u[0] < end]
    check(inside and all(step["begin"] <= u[0] for u in inside),
          "want the step's unwinding inside the stall: %s (step %d to %d)"
          % (inside, step["begin"], step["end"]))
    mains = [s for s in st["stacks"] if s["thread"] == st["thread"] and s["frames"]]
    paths = [[image_path(st, f) for f in s["frames"]] for s in mains]
    in_spy = sum(1 for pp in paths if any(x and os.path.basename(x) == os.path.basename(spy)
                                          for x in pp))
    in_libgcc = sum(1 for pp in paths if any(x and "libgcc_s" in os.path.basename(x)
                                             for x in pp))
    check(not in_spy and not in_libgcc,
          "stacks inside the hook's unwinding: %d in the spy, %d in libgcc_s"
          % (in_spy, in_libgcc))
    # most of the stall is the hook's: those samples end at the hook, in the agent
    hook = [(s, pp) for s, pp in zip(mains, paths)
            if pp[0] and os.path.realpath(pp[0]) == os.path.realpath(AGENT)]
    at_hook = sum(s["count"] for s, _ in hook)
    total = sum(s["count"] for s in mains)
    check(total and at_hook * 2 >= total,
          "%d of %d samples end at the hook, want half or more" % (at_hook, total))
    if hook:
        names = symbolize(st, hook[0][0]["frames"])
        check(names[0] == "poll" and "stall_pollwait" in names[1:3],
              "a sample at the hook is %s, want poll called by stall_pollwait" % names[:3])


SCENARIOS = {
    "stalls": scenario_stalls,
    "dlopen": scenario_dlopen,
    "idle": scenario_idle,
    "attach": scenario_attach,
    "children": scenario_children,
    "status": scenario_status,
    "all-threads": scenario_all_threads,
    "glib": scenario_glib,
    "install": scenario_install,
    "aarch64": scenario_aarch64,
    "exec": scenario_exec,
    "follow": scenario_follow,
    "sigblock": scenario_sigblock,
    "eintr": scenario_eintr,
    "seccomp": scenario_seccomp,
    "sigtoggle": scenario_sigtoggle,
    "auxv": scenario_auxv,
    "altstack": scenario_altstack,
    "smallalt": scenario_smallalt,
    "exitnow": scenario_exitnow,
    "exitmain": scenario_exitmain,
    "records": scenario_records,
    "keepoff": scenario_keepoff,
    "late": scenario_late,
    "held": scenario_held,
    "reports": scenario_reports,
    "descriptors": scenario_descriptors,
    "connect": scenario_connect,
    "pac": scenario_pac,
    "crash": scenario_crash,
    "hook": scenario_hook,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print("usage: test-agent.py %s" % "|".join(SCENARIOS), file=sys.stderr)
        sys.exit(2)
    if not (STALLWATCH and AGENT and STALLAPP):
        skip("STALLWATCH, STALLWATCH_AGENT and STALLAPP must be set (meson test does)")
    SCENARIOS[sys.argv[1]]()
    # Timings on a shared machine can miss by a scheduling quantum: a
    # scenario that failed gets one more run, and both results are shown.
    if failures and sys.argv[1] in ("stalls", "idle", "all-threads", "glib", "attach"):
        print("RETRY after %d failure(s): %s" % (len(failures), failures))
        failures.clear()
        SCENARIOS[sys.argv[1]]()
    finish()
