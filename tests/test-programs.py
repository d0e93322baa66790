#!/usr/bin/env python3
"""What real programs showed (issue 14), with `stallwatch run` on real programs.

    test-programs.py SCENARIO

with STALLWATCH, STALLWATCH_AGENT, STALLAPP, STALLAPP_GLIB, STALLAPP_UV,
STALLAPP_QT, SW_CC and SW_SOURCE_ROOT in the environment, as tests/meson.build sets them.  Each step
of the apps prints "step KIND begin NS" / "step KIND end NS" (CLOCK_MONOTONIC),
so what is expected comes from the programs themselves.  Exit 77: skipped.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from swtest import check, emacs_native, failures, runs, scratch_dir

STALLWATCH = os.environ.get("STALLWATCH", "")
SOURCE = os.environ.get("SW_SOURCE_ROOT", "")
APPS = os.path.join(SOURCE, "tests", "apps")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def run(app_args, args=(), timeout=90, env=None):
    """stallwatch run, recorded: (NDJSON objects of report, app lines, stderr, status).

    The program's own lines and run's output share a pipe and may interleave,
    so the NDJSON comes from `report` on the recording instead.
    """
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "run.swtrace")
        p = subprocess.run([STALLWATCH, "run", "--format", "ndjson", "-o", rec, *args, "--",
                            *app_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, env=env)
        app = [l for l in p.stdout.splitlines() if not l.startswith("{")]
        r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", *args_report(args), rec],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        objs = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    return objs, app, p.stderr, p.returncode


def args_report(args):
    """The options of run that report takes too (output options)."""
    out, it = [], iter(args)
    for a in it:
        if a in ("--threshold", "--interval"):
            next(it)
        elif a != "--all-threads":
            out.append(a)
    return out


def stalls(objs):
    return [o for o in objs if o.get("type") == "stall"]


def steps(app):
    """kind -> (begin, end) in monotonic ns, from the app's own lines."""
    out, begun = {}, {}
    for line in app:
        m = re.match(r"step (\S+) (begin|end) (\d+)", line)
        if m and m.group(2) == "begin":
            begun[m.group(1)] = int(m.group(3))
        elif m:
            out[m.group(1)] = (begun.pop(m.group(1)), int(m.group(3)))
    return out


def stall_of(sts, span):
    """The stall that began within 30 ms of span's begin, or None."""
    for st in sts:
        if abs(st["monotonic_start_ns"] - span[0]) < 30_000_000:
            return st
    return None


def heaviest_names(st):
    return [f["symbol"] or "" for f in st.get("heaviest", [])]


def expect_blocked(sts, spans, kind, calls, culprit=None):
    """One stall for step kind, lasting it, with a wait call (and culprit) on its heaviest path."""
    if not check(kind in spans, "%s: the program did not run the step" % kind):
        return
    st = stall_of(sts, spans[kind])
    if not check(st is not None, "%s: no stall for a blocking call of %.0f ms" %
                 (kind, (spans[kind][1] - spans[kind][0]) / 1e6)):
        return
    want = (spans[kind][1] - spans[kind][0]) / 1e6
    check(abs(st["duration_ms"] - want) < 40,
          "%s: stall of %.1f ms, the call took %.1f ms" % (kind, st["duration_ms"], want))
    names = heaviest_names(st)
    print("%s: %.1f ms, heaviest %s" % (kind, st["duration_ms"], " > ".join(names)))
    check(any(re.search(calls, n) for n in names),
          "%s: no %s on the heaviest path" % (kind, calls))
    # a thread blocked under the agent's hook is unwound from /proc's stack
    # pointer and program counter alone: the hook must not need a frame
    # pointer, and the path goes on past it into the code that waited
    check(names and names[0] != "<unwinding stopped>",
          "%s: the heaviest path stops unwinding: %s" % (kind, " > ".join(names)))
    images = [f.get("image") or "" for f in st.get("heaviest", [])]
    hook = next((i for i, im in enumerate(images) if im.startswith("libstallwatch-agent")), None)
    check(hook is None or (hook > 0 and not re.match(r"libc\.so|libstallwatch-agent|$",
                                                      images[hook - 1])),
          "%s: nothing of the program's own code calls the wait: %s" % (kind, images))
    if culprit:
        check(culprit in names, "%s: %s not on the heaviest path" % (kind, culprit))


def expect_none(sts, spans, kind):
    if not check(kind in spans, "%s: the program did not run the step" % kind):
        return
    st = stall_of(sts, spans[kind])
    check(st is None, "%s: a loop that waits was reported as a stall of %.1f ms" %
          (kind, st["duration_ms"] if st else 0))


# ---- 1. blocking calls inside callbacks -----------------------------------


def scenario_nested_c():
    objs, app, err, status = run([os.environ["STALLAPP"], "idle:100", "pollwait:500",
                                  "zeropoll:400", "busy:300", "readypoll:400"])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts, spans = stalls(objs), steps(app)
    expect_blocked(sts, spans, "pollwait", r"poll", "stall_pollwait")
    # polls that return at once are not waits: the spin around them is the stall
    if check("zeropoll" in spans and stall_of(sts, spans["zeropoll"]) is not None,
             "zeropoll: zero-timeout polls ended the stall"):
        st = stall_of(sts, spans["zeropoll"])
        check(st["duration_ms"] > 380, "zeropoll: stall of %.1f ms < 400" % st["duration_ms"])
    expect_blocked(sts, spans, "busy", r"stall_busy_inner")
    # 200 polls with a timeout that find data ready never blocked: they do not
    # make the agent take them for a loop that moved (stallwatch-agent(7))
    expect_stall(sts, spans, "readypoll", "busy", "stall_readypoll", r"stall_readypoll|spin_ms")
    check(len(sts) == 4, "expected 4 stalls, got %d" % len(sts))


def scenario_nested_glib():
    app = os.environ.get("STALLAPP_GLIB")
    if not app:
        skip("GLib not found at configure time")
    objs, out, err, status = run([app, "idle:20", "idle:20", "idle:20", "nested:600",
                                  "pollwait:400"])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts = stalls(objs)
    ticks = [int(l.split("ticks=")[1]) for l in out if l.startswith("nested end")]
    check(ticks and ticks[0] >= 30, "the nested loop did not serve its timer: %s" % ticks)
    spans = steps(out)
    expect_blocked(sts, spans, "pollwait", r"poll", "stall_pollwait")
    check(len(sts) == 1, "a nested g_main_loop_run on the default context is no stall: "
          "%d stalls" % len(sts))


def python_with_gi():
    """An interpreter that has GLib's introspection (python3-gi), or None."""
    for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if py and subprocess.run([py, "-c", "import gi; gi.require_version('GLib', '2.0')"],
                                 stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def scenario_nested_python_glib():
    py = python_with_gi()
    if not py:
        skip("no Python with gi (Debian package python3-gi)")
    objs, app, err, status = run([py, os.path.join(APPS, "blocking_glib.py"),
                                  "subprocess", "nested"])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts, spans = stalls(objs), steps(app)
    ticks = [int(l.split("=")[1]) for l in app if l.startswith("nested ticks=")]
    check(ticks and ticks[0] >= 30, "the nested loop did not serve the tick: %s" % ticks)
    expect_blocked(sts, spans, "subprocess", r"poll")
    expect_none(sts, spans, "nested")
    check(len(sts) == 1, "expected 1 stall, got %d" % len(sts))


def scenario_nested_python():
    py = sys.executable
    objs, app, err, status = run([py, os.path.join(APPS, "blocking.py"),
                                  "subprocess", "recv", "sleeptask"])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts, spans = stalls(objs), steps(app)
    expect_blocked(sts, spans, "subprocess", r"poll")
    expect_blocked(sts, spans, "recv", r"poll")
    expect_none(sts, spans, "sleeptask")
    check(len(sts) == 2, "expected 2 stalls, got %d" % len(sts))


def scenario_nested_node():
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        skip("node not found (Debian package nodejs)")
    objs, app, err, status = run([node, os.path.join(APPS, "blocking.js"),
                                  "execSync", "spawnSync", "timer"])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts, spans = stalls(objs), steps(app)
    expect_blocked(sts, spans, "execSync", r"epoll|poll")
    expect_blocked(sts, spans, "spawnSync", r"epoll|poll")
    expect_none(sts, spans, "timer")


def scenario_jit_node():
    """JIT code named by the perf map V8 writes: live in run, and by report --perf-map."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        skip("node not found (Debian package nodejs)")
    with tempfile.TemporaryDirectory() as tmp:
        rec, live = os.path.join(tmp, "jit.swtrace"), os.path.join(tmp, "live.ndjson")
        p = subprocess.run([STALLWATCH, "run", "--format", "ndjson", "--results", live, "-o", rec,
                            "--", node, "--perf-basic-prof", os.path.join(APPS, "jit.js")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90,
                           cwd=tmp)  # V8 may write logs where it runs
        check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
        pid = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("pid ")]
        perf_map = "/tmp/perf-%d.map" % pid[0] if pid else ""
        try:
            objs = [json.loads(l) for l in open(live) if l.startswith("{")]
            offline = subprocess.run([STALLWATCH, "report", "--format", "ndjson", "--perf-map",
                                      perf_map, rec], capture_output=True, text=True)
            bare = subprocess.run([STALLWATCH, "report", "--format", "ndjson", rec],
                                  capture_output=True, text=True)
        finally:
            if perf_map and os.path.exists(perf_map):
                os.unlink(perf_map)
    sts = stalls(objs)
    if not check(len(sts) == 1, "expected the one stall of spinFib, got %d" % len(sts)):
        return
    st = sts[0]
    jit = [f["symbol"] for f in st["heaviest"] if f.get("image") == "JIT"]
    print("live: %.1f ms, JIT frames on the heaviest path: %s" % (st["duration_ms"], jit[:3]))
    check(any(re.match(r"JS:\S?spinFib .*jit\.js", n) for n in jit)
          and any(re.match(r"JS:\S?fib .*jit\.js", n) for n in jit),
          "the perf map did not name spinFib and fib: %s" % jit)
    check("e.g. #1  JS:" in p.stderr, "the summary's example is not the JS code: %s" % p.stderr)
    # offline with the same map: the same names, the same signature; without: addresses
    off = stalls([json.loads(l) for l in offline.stdout.splitlines() if l.startswith("{")])
    no = stalls([json.loads(l) for l in bare.stdout.splitlines() if l.startswith("{")])
    check(len(off) == 1 and off[0]["signature"] == st["signature"]
          and [f["symbol"] for f in off[0]["heaviest"]] == [f["symbol"] for f in st["heaviest"]],
          "report --perf-map differs from the live stall")
    check(len(no) == 1 and not [f for f in no[0]["heaviest"] if f.get("image") == "JIT"]
          and no[0]["signature"] != st["signature"],
          "report without the map named JIT frames anyway")


def scenario_emacs():
    """Emacs's command loop, a timer running natively compiled Lisp: its frames
    in the .eln file are named as Lisp names them, and explain the stall."""
    emacs, why = emacs_native()
    if not emacs:
        skip(why)
    tmp = scratch_dir("sw-emacs-")
    eln, took = os.path.join(tmp, "stallapp.eln"), os.path.join(tmp, "took")
    subprocess.run([emacs, "-Q", "--batch", "--eval", '(native-compile "%s" "%s")'
                    % (os.path.join(APPS, "stallapp.el"), eln)], check=True,
                   capture_output=True, env=dict(os.environ, HOME=tmp))
    drive = os.path.join(tmp, "drive.el")
    with open(drive, "w") as f:
        f.write("""(native-elisp-load "%s")
(run-at-time 0.5 nil
  (lambda ()
    (let ((t0 (float-time)))
      (stallapp-stall 20000000)
      (with-temp-file "%s" (insert (format "%%f" (- (float-time) t0)))))
    (run-at-time 0.3 nil (lambda () (kill-emacs 0)))))
""" % (eln, took))
    env = dict(os.environ, HOME=tmp, XDG_RUNTIME_DIR=tmp)
    objs, app, err, status = run([emacs, "-Q", "--fg-daemon=stallwatch-test", "-l", drive],
                                 env=env)
    check(status == 0, "run exited %d: %s" % (status, err[-600:]))
    sts = stalls(objs)
    print("stalls:", [(round(st["duration_ms"], 1), st["kind"]) for st in sts])
    if not check(len(sts) == 1 and os.path.exists(took),
                 "expected one stall, got %d: %s" % (len(sts), err[-600:])):
        return
    seconds = float(open(took).read())
    check(abs(sts[0]["duration_ms"] - seconds * 1e3) < 40,
          "a stall of %.1f ms, the Lisp took %.1f ms" % (sts[0]["duration_ms"], seconds * 1e3))
    check(sts[0]["kind"] == "busy", "a %s stall" % sts[0]["kind"])
    path = [(f["symbol"], f["image"], f["linkage"]) for f in sts[0]["heaviest"]]
    lisp = [(sym, image) for sym, image, _ in path if image == "stallapp.eln"]
    check(lisp == [("stallapp-stall", "stallapp.eln"), ("stallapp-count", "stallapp.eln")],
          "the .eln's frames on the heaviest path: %s" % lisp)
    linkage = [link for sym, _, link in path if sym == "stallapp-count"]
    check(linkage == ["F" + b"stallapp-count".hex() + "_stallapp_count_0"],
          "stallapp-count's linkage name: %s" % linkage)
    check("e.g. #1  stallapp-count (stallapp.eln)" in err,
          "the stall is not explained by stallapp-count: %s" % err[-600:])


def scenario_tcl():
    """Tcl's event loop, whose threaded notifier waits on a condition variable."""
    tclsh = shutil.which("tclsh") or shutil.which("tclsh8.6")
    if not tclsh:
        skip("tclsh not found (Debian package tcl)")
    objs, app, err, status = run([tclsh, os.path.join(APPS, "loop.tcl")])
    check(status == 0, "run exited %d: %s" % (status, err))
    sts, spans = stalls(objs), steps(app)  # microseconds of the wall clock, here
    ticks = [int(l.split("=")[1]) for l in app if l.startswith("nested ticks=")]
    check(ticks and ticks[0] >= 30, "the nested vwait did not serve its timer: %s" % ticks)
    print("stalls:", [(round(st["duration_ms"], 1), st["kind"]) for st in sts])
    # in order: the busy loop, the sleep, the loop of updates; the nested vwait is none
    want = [("busy", "busy"), ("sleep", "blocked"), ("update", None)]
    if not check(len(sts) == len(want) and all(k in spans for k, _ in want),
                 "expected stalls for %s, got %d: %s"
                 % ([k for k, _ in want], len(sts), err[-400:])):
        return
    for st, (kind, stall_kind) in zip(sts, want):
        took = (spans[kind][1] - spans[kind][0]) / 1e3
        check(abs(st["duration_ms"] - took) < 40,
              "%s: a stall of %.1f ms, the step took %.1f ms" % (kind, st["duration_ms"], took))
        check(stall_kind is None or st["kind"] == stall_kind,
              "%s: a %s stall, expected %s" % (kind, st["kind"], stall_kind))
    names = heaviest_names(sts[1])
    check("Tcl_Sleep" in names and any(re.match(r"select$|__select", n) for n in names),
          "sleep: Tcl_Sleep's select not on the heaviest path: %s" % names)
    # the script's code is libtcl's frames: three hangs, three signatures (under
    # version 4 all were tclsh's main), the sleep explained by Tcl_Sleep
    sigs = [st["signature"] for st in sts]
    check(len(set(sigs)) == 3, "three different hangs with signatures %s" % sigs)
    check("e.g. #2  Tcl_Sleep (libtcl" in err, "the sleep's example is not Tcl_Sleep: %s"
          % err[-600:])
    # tkinter's way: libtcl loaded with dlopen, locally, where RTLD_NEXT does not look
    py = sys.executable
    if subprocess.run([py, "-c", "import tkinter"], capture_output=True).returncode:
        print("no tkinter for %s (Debian package python3-tk): Tcl in Python not checked" % py)
        return
    objs, app, err, status = run([py, os.path.join(APPS, "tcl_in_python.py")],
                                 args=("--duration", "20"))
    check(status == 0 and "done" in app, "Tcl in Python did not finish: %d, %s" % (status, err))
    sts, spans = stalls(objs), steps(app)
    ticks = [int(l.split("=")[1]) for l in app if l.startswith("nested ticks=")]
    check(ticks and ticks[0] >= 30, "Tcl in Python: vwait did not serve its timer: %s" % ticks)
    print("Tcl in Python, stalls:", [(round(st["duration_ms"], 1), st["kind"]) for st in sts])
    # a Python callback of the Tcl loop: Python's evaluation below Tcl's event
    # service (exported names, found without debug information)
    expect_stall(sts, spans, "busy", "busy", "Tcl_ServiceEvent", r"^_PyEval_EvalFrameDefault$")
    st = stall_of(sts, spans["busy"]) if "busy" in spans else None
    names = heaviest_names(st) if st else []
    check("Tcl_ServiceEvent" in names and "_PyEval_EvalFrameDefault"
          in names[names.index("Tcl_ServiceEvent"):],
          "Tcl in Python: no Python code under Tcl's event service: %s" % names)
    expect_none(sts, spans, "nested")
    check(len(sts) == 1, "Tcl in Python: expected 1 stall, got %d" % len(sts))


def expect_stall(sts, spans, kind, stall_kind, culprit, call=None):
    """One stall of stall_kind for step kind, within 40 ms of it, culprit (and call) heaviest."""
    expect_blocked(sts, spans, kind, call or re.escape(culprit), culprit)
    st = stall_of(sts, spans[kind]) if kind in spans else None
    if st:
        check(st["kind"] == stall_kind, "%s: a %s stall, expected %s" % (kind, st["kind"], stall_kind))


def nested_loop(app_args, env=None):
    """A nested run of the app's own loop, a busy and a blocked callback."""
    objs, out, err, status = run(app_args + ["idle:20", "idle:20", "idle:20", "nested:600",
                                             "busy:400", "pollwait:400"], env=env)
    check(status == 0, "run exited %d: %s" % (status, err))
    print("app:", out[0] if out else "nothing")
    sts, spans = stalls(objs), steps(out)
    ticks = [int(l.split("ticks=")[1]) for l in out if l.startswith("step nested end")]
    # a 10 ms timer over 600 ms: the nested loop served it, so it really waited
    check(ticks and ticks[0] >= 30, "the nested loop did not serve its timer: %s" % ticks)
    print("stalls:", [(st["duration_ms"], st["kind"]) for st in sts])
    if check("nested" in spans, "the app did not run its nested loop"):
        b, e = spans["nested"]
        for st in sts:
            s0 = st["monotonic_start_ns"]
            check(s0 + st["duration_ms"] * 1e6 <= b or s0 >= e,
                  "a stall of %.1f ms overlaps the nested loop, which waits" % st["duration_ms"])
    expect_stall(sts, spans, "busy", "busy", "stall_busy_inner")
    expect_stall(sts, spans, "pollwait", "blocked", "stall_pollwait", r"^poll$|__poll")
    check(len(sts) == 2, "a nested run of the loop that waits is no stall: expected 2 stalls, "
          "got %d" % len(sts))


def scenario_nested_uv():
    app = os.environ.get("STALLAPP_UV")
    if not app:
        skip("libuv not found at configure time (Debian package libuv1-dev)")
    nested_loop([app])


def qt_app():
    app = os.environ.get("STALLAPP_QT")
    if not app:
        skip("Qt 5 not found at configure time (Debian package qtbase5-dev)")
    return app


def scenario_nested_qt():
    nested_loop([qt_app()])


def scenario_nested_qt_unix():
    """Qt's own event dispatcher (ppoll), not GLib's."""
    env = dict(os.environ, QT_NO_GLIB="1")
    nested_loop([qt_app()], env=env)


# ---- 2. every executable segment of an image -------------------------------


def tree_names(lines):
    """The symbol of each line of a tree (`#1  400.0 ms  64.5%  0.0 ms  SYMBOL ...`)."""
    out = []
    for l in lines:
        m = re.match(r"#\d+\s+\S+ ms\s+\S+%\s+\S+ ms\s+(.*?)(\s{2}|$)", l)
        if m:
            out.append(m.group(1).strip())
    return out


def build(tmp, source, out, *flags):
    cc = os.environ.get("SW_CC", "cc")
    subprocess.run([cc, "-O1", "-g", "-fno-omit-frame-pointer", "-o", os.path.join(tmp, out),
                    os.path.join(APPS, source), *flags], check=True)
    return os.path.join(tmp, out)


def scenario_segments():
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp, "farcode.c", "farcode", "-Wl,--section-start=fartext=0x4000000")
        ph = subprocess.run(["readelf", "-lW", exe], stdout=subprocess.PIPE, text=True).stdout
        xloads = [l for l in ph.splitlines() if l.split()[:1] == ["LOAD"] and " R E " in l]
        if not check(len(xloads) == 2, "the fixture has %d executable segments, not 2" % len(xloads)):
            return
        p = subprocess.run([STALLWATCH, "run", "--color", "never", "--results", "-", "--", exe],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    tree = [l for l in p.stdout.splitlines() if l.startswith("#1 ")]
    print("\n".join(tree))
    names = tree_names(tree)
    check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
    # main -> far_outer -> far_inner -> now_ms, each named, nothing bare between
    if check("main" in names, "main not in the tree"):
        path = names[names.index("main"):names.index("main") + 4]
        check(path == ["main", "far_outer", "far_inner", "now_ms"],
              "code in the second executable segment is not symbolicated: %s" % path)


# ---- 3. deep stacks keep both ends -----------------------------------------


def scenario_deep():
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp, "deep.c", "deep")
        rec = os.path.join(tmp, "run.swtrace")
        p = subprocess.run([STALLWATCH, "run", "--color", "never", "--results", "-", "-o", rec, "--", exe,
                            "3000", "2000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
        report = lambda *a: subprocess.run([STALLWATCH, "report", "--color", "never", *a, rec],
                                           stdout=subprocess.PIPE).stdout
        outputs = {f: report("--format", f) for f in
                   ("tree", "sample", "json", "ndjson", "folded", "speedscope", "pprof")}
    objs = [json.loads(l) for l in outputs["ndjson"].decode().splitlines()]
    sts = stalls(objs)
    if not check(len(sts) == 2, "expected 2 stalls, got %d" % len(sts)):
        return
    for st, n in zip(sts, (3000, 2000)):
        names = heaviest_names(st)
        print("%d deep: %s" % (n, " > ".join(names)))
        # the heaviest path runs from the entry to the culprit, one node between
        gap = [x for x in names if re.fullmatch(r"<\d+ frames left out>", x)]
        if not check(len(gap) == 1, "%d deep: no single node for the frames left out" % n):
            continue
        left = int(gap[0][1:].split()[0])
        check(n - 520 < left < n, "%d deep: %d frames said to be left out" % (n, left))
        check(names[:5] == ["_start", "__libc_start_main", "__libc_start_call_main", "main",
                            "deep_outer"], "%d deep: the outermost frames are missing" % n)
        i = names.index(gap[0])
        check(names[i + 1] == "deep_recurse" and "deep_spin" in names[i + 1:],
              "%d deep: the innermost frames are missing" % n)
        check(st.get("signature_version", 0) >= 2, "signature without its rule's version")
    check(sts[0]["signature"] == sts[1]["signature"],
          "the count of frames left out split the signature")
    # the first samples of the deepest stall outgrew the stack copy, and said so;
    # the copy grew, so later ones reach the entry
    flags = [s["flags"] for s in sts[0]["stacks"]]
    short = sum(1 for f in flags if "copy_short" in f)
    whole = sum(c["count"] for c in sts[0]["stacks"] if "copy_short" not in c["flags"])
    print("copy_short stacks: %d, samples after the copy grew: %d" % (short, whole))
    check(0 < short <= 3, "%d samples with a short copy (expected the first one to three)" % short)
    check(whole >= 20, "the copy did not grow: %d whole samples" % whole)
    for fmt, out in outputs.items():
        if fmt == "pprof" and out[:2] == b"\x1f\x8b":
            out = gzip.decompress(out)
        check(b" frames left out>" in out, "%s output lacks the frames-left-out node" % fmt)


# ---- 4. images that exist only in memory -----------------------------------


def scenario_vdso():
    # busy:400 spins on clock_gettime(), which runs in the vDSO
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "run.swtrace")
        p = subprocess.run([STALLWATCH, "run", "--color", "never", "--results", "-", "-o", rec, "--",
                            os.environ["STALLAPP"], "busy:400"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
        # recordings keep the hints: report names the same frames
        r = subprocess.run([STALLWATCH, "report", "--format", "ndjson", rec],
                           stdout=subprocess.PIPE, text=True)
        objs = [json.loads(l) for l in r.stdout.splitlines()]
    vdso_lines = [l for l in p.stdout.splitlines() if "(linux-vdso.so.1)" in l]
    print("\n".join(vdso_lines))
    if not check(vdso_lines, "no frame in the vDSO: the test cannot say anything"):
        return
    names = tree_names(vdso_lines)
    check(all(re.search(r"clock_gettime", n) for n in names),
          "vDSO frames not named from the agent's hints: %s" % names)
    sts = stalls(objs)
    if not check(len(sts) == 1, "expected 1 stall, got %d" % len(sts)):
        return
    frames = sts[0]["heaviest"]
    vdso = [f for f in frames if f["image"] == "linux-vdso.so.1"]
    other = [f for f in frames if f["image"] != "linux-vdso.so.1"]
    check(vdso and all(f.get("hint") is True and "clock_gettime" in f["symbol"] for f in vdso),
          "the recording's vDSO frames are not marked as hinted: %s" % vdso)
    check(not any(f.get("hint") for f in other), "frames with files marked as hinted")


# ---- 5. samples that could not be unwound ----------------------------------


def scenario_stopped():
    if os.uname().machine != "x86_64":
        skip("the fixture's frame-pointer trick is x86-64 assembly")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp, "lostframes.c", "lostframes", "-fno-asynchronous-unwind-tables",
                    "-fno-unwind-tables")
        rec = os.path.join(tmp, "run.swtrace")
        p = subprocess.run([STALLWATCH, "run", "--color", "never", "--results", "-", "-o", rec, "--", exe,
                            "lost", "plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        check(p.returncode == 0, "run exited %d: %s" % (p.returncode, p.stderr))
        report = lambda *a: subprocess.run([STALLWATCH, "report", "--color", "never", *a, rec],
                                           stdout=subprocess.PIPE, text=True).stdout
        objs = [json.loads(l) for l in report("--format", "ndjson").splitlines()]
        folded = report("--format", "folded")
        gobin, top = shutil.which("go"), None
        if gobin:  # pprof's own reader: the marker keeps its name there too
            pb = os.path.join(tmp, "run.pb.gz")
            subprocess.run([STALLWATCH, "report", "--format", "pprof", "--results", pb, rec],
                           capture_output=True)
            env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"), GOFLAGS="",
                       GOTOOLCHAIN="local")
            top = subprocess.run([gobin, "tool", "pprof", "-top", pb], capture_output=True,
                                 text=True, env=env).stdout
    sts = stalls(objs)
    if top is not None:
        check("<unwinding stopped>" in top and "<unknown>" not in top,
              "go tool pprof does not name the marker: %s" % top[-600:])
    if not check(len(sts) == 2, "expected 2 stalls, got %d" % len(sts)):
        return
    lost, plain = sts
    print("unwinding_stopped:", lost.get("unwinding_stopped"), "of", lost["samples"],
          "/", plain.get("unwinding_stopped"))
    check(0 < lost.get("unwinding_stopped", 0) < lost["samples"],
          "the partial samples are not counted in the stall's JSON")
    check(plain.get("unwinding_stopped") == 0, "whole stacks counted as stopped")
    check(lost["signature"] == plain["signature"],
          "partial stacks changed the signature: %s vs %s" % (lost["signature"], plain["signature"]))
    roots = [tree_names([l])[0] for l in p.stdout.splitlines()
             if re.match(r"#1\s+\S+ ms\s+\S+%\s+\S+ ms  \S", l)]
    print("roots of #1:", roots)
    check(sorted(roots) == ["<unwinding stopped>", "_start"],
          "partial stacks are not under one marked root: %s" % roots)
    check(re.search(r";<unwinding stopped>;lost_spin \d+$", folded, re.M) is not None,
          "folded output lacks the marked root")


# ---- 6. say when nothing was watched ----------------------------------------


def summary_of(objs):
    return next((o for o in objs if o.get("type") == "summary"), None)


def scenario_unwatched():
    gzip = shutil.which("gzip")
    if not gzip:
        skip("gzip not found")
    # a program with no event loop at all
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        with open(data, "w") as f:
            f.write("stallwatch " * 100000)
        objs, _, err, status = run([gzip, data])
    summ = summary_of(objs)
    print(err)
    check(status == 0, "run exited %d" % status)
    check(summ is not None and summ["loop"] == "never-waited",
          "summary does not say the loop never waited: %s" % summ)
    check(summ is not None and "stallwatch_before_wait()" in (summ.get("advice") or ""),
          "summary gives no advice: %s" % summ)
    check("nothing was watched" in err and "stallwatch_before_wait()" in err,
          "stderr does not say nothing was watched, and what to do")
    # a program that works 600 ms before its loop first waits
    late = ("import time, select\n"
            "end = time.monotonic() + 0.6\n"
            "while time.monotonic() < end: pass\n"
            "p = select.poll()\n"
            "for i in range(10): p.poll(20)\n")
    objs, _, err, status = run([sys.executable, "-c", late])
    summ = summary_of(objs)
    print(err)
    check(summ is not None and summ["loop"] == "late" and 590 <= summ["loop_first_wait_ms"] < 1500,
          "summary does not say the loop started late: %s" % summ)
    check(re.search(r"first waited \d+ ms after the start", err) is not None,
          "stderr does not say the start was not watched")
    # a loop watched from the start: nothing to say
    objs, _, err, status = run([os.environ["STALLAPP"], "busy:300"])
    summ = summary_of(objs)
    check(summ is not None and summ["loop"] == "watched" and summ["advice"] is None,
          "a watched loop: %s" % summ)
    check("not watched" not in err and "nothing was watched" not in err,
          "a watched loop said otherwise: %s" % err)


# ---- 7. a Rust program: its frames under Rust's names -----------------------


def scenario_rust():
    """A Rust poll loop (tests/apps/stallapp.rs): one stall, its frames demangled."""
    rustc = os.environ.get("RUSTC", "")
    if not rustc:
        skip("no rustc (RUSTC unset; none on PATH, a login shell's PATH or in ~/.cargo/bin)")
    if not runs(rustc):
        skip("'%s --version' fails for this user (another user's rustup?)" % rustc)
    with tempfile.TemporaryDirectory() as tmp:
        # v0 for the program's own names too: the standard library's are v0
        # in current releases, legacy in older ones (both are read)
        app = os.path.join(tmp, "stallapp")
        subprocess.run([rustc, "-O", "-g", "-C", "force-frame-pointers=yes", "-C",
                        "symbol-mangling-version=v0", "-o", app,
                        os.path.join(APPS, "stallapp.rs")], check=True)
        objs, lines, err, status = run([app, "busy:400", "busy2:400", "busy3:400", "sort:400"])
    check(status == 0 and "done true" in lines, "run exited %d: %s" % (status, err[-400:]))
    sts, spans = stalls(objs), steps(lines)
    expect_stall(sts, spans, "busy", "busy", "stallapp::handle_event")
    expect_stall(sts, spans, "sort", "busy", "stallapp::sort_numbers")
    # one hang, one signature, whichever std internal was heaviest in each
    # stall (version 6); another hang, another signature
    sigs = {k: stall_of(sts, spans[k])["signature"] for k in ("busy", "busy2", "busy3", "sort")
            if k in spans and stall_of(sts, spans[k])}
    print("signatures:", sigs)
    check(len(sigs) == 4 and sigs["busy"] == sigs["busy2"] == sigs["busy3"] != sigs["sort"],
          "signatures of three alike stalls and another: %s" % sigs)
    st = stall_of(sts, spans["busy"]) if "busy" in spans else None
    names = [n["symbol"] or "" for n in st["tree"]] if st else []
    print("%d nodes, e.g. %s" % (len(names), names[:8]))
    # Rust's manglings: v0 "_R...", legacy "_ZN...17h<hash>E"
    mangled = [n for n in names if re.match(r"_?_R[A-Z]|_?_ZN.*17h[0-9a-f]{16}E", n)]
    check(names and not mangled, "mangled Rust names in the tree: %s" % mangled[:3])
    check("stallapp::main" in names and "std::rt::lang_start_internal" in names,
          "the path from the runtime to main is not named: %s" % names[:20])
    # the standard library is compiled into the program, but not its own code:
    # the summary's example is the program's function that called it
    check(re.search(r"3 stalls .*e\.g\. #\d+  stallapp::handle_event \(stallapp\)", err) and
          re.search(r"1 stall .*e\.g\. #\d+  stallapp::sort_numbers \(stallapp\)", err),
          "the summary does not name stallapp::handle_event and sort_numbers: %s" % err[-400:])


# ---- 8. a Go program: cgo, a GLib loop on the main thread, Go callbacks -------


def go_module_proxy(proxy, module_dir, module, version):
    """Serves module_dir as module@version from a module proxy in the folder proxy
    (GOPROXY=file://...), in the layout the go command fetches from."""
    d = os.path.join(proxy, module, "@v")
    os.makedirs(d)
    with open(os.path.join(d, "list"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(d, version + ".info"), "w") as f:
        json.dump({"Version": version, "Time": "2026-01-01T00:00:00Z"}, f)
    shutil.copy(os.path.join(module_dir, "go.mod"), os.path.join(d, version + ".mod"))
    with zipfile.ZipFile(os.path.join(d, version + ".zip"), "w") as z:
        for name in sorted(os.listdir(module_dir)):
            z.write(os.path.join(module_dir, name), "%s@%s/%s" % (module, version, name))


def scenario_go():
    """tests/apps/stallapp-cgo.go: the program runs, its stalls name Go's functions."""
    go = shutil.which("go")
    if not go:
        skip("no go on PATH (Debian: golang-go)")
    if not runs(go, "version"):
        skip("'go version' fails for this user")
    if subprocess.run(["pkg-config", "--exists", "glib-2.0"]).returncode != 0:
        skip("no glib-2.0 for cgo (Debian: libglib2.0-dev)")
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "stallapp-cgo")
        # a module that requires a dependency, fetched from a proxy in a folder
        # into the module cache as from the network: its sources are
        # GOPATH/pkg/mod/example.com/wordfreq@v1.0.0/..., as a real one's are
        proxy, src = os.path.join(tmp, "proxy"), os.path.join(tmp, "src")
        go_module_proxy(proxy, os.path.join(APPS, "gomod", "wordfreq"), "example.com/wordfreq",
                        "v1.0.0")
        os.makedirs(src)
        for name in ("stallapp-cgo.go", "stallapp-cgo-dep.go"):
            shutil.copy(os.path.join(APPS, name), src)
        with open(os.path.join(src, "go.mod"), "w") as f:
            f.write("module stallwatch.test/stallapp\n\ngo 1.19\n\n"
                    "require example.com/wordfreq v1.0.0\n")
        # a cache of this run's own, nothing from the network: any user
        env = dict(os.environ, GOCACHE=os.path.join(tmp, "cache"), GOPATH=os.path.join(tmp, "gopath"),
                   GOPROXY="file://" + proxy, GOSUMDB="off", GOTOOLCHAIN="local",
                   GOFLAGS="-mod=mod", CGO_ENABLED="1")
        b = subprocess.run([go, "build", "-tags", "stallwatch_dep", "-o", app, "."],
                           env=env, cwd=src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        if not check(b.returncode == 0, "go build failed: %s" % b.stdout[-600:]):
            return
        # Go's runtime finds the auxiliary vector past the environment's end:
        # it died at its start ("failed to get system page size") when the
        # agent's scrub left stale entries there, for an odd number of them
        # (an even number put the vector back in step): one more variable
        # for the agent to take out tries the other count
        _, lines, err, status = run([app, "sort:10"],
                                    env=dict(os.environ, STALLWATCH_BUNDLE_VERSION="1"))
        check(status == 0 and "done true" in lines,
              "the Go program under the agent exited %d: %s" % (status, err[-400:]))
        objs, lines, err, status = run([app, "sort:400", "sort2:400", "sort3:400", "count:400",
                                        "tally:400", "tally2:400"])
        # the go command makes its module cache read-only: made writable to be removed
        subprocess.run(["chmod", "-R", "u+w", tmp])
    check(status == 0 and "done true" in lines,
          "the Go program under the agent exited %d: %s" % (status, err[-400:]))
    sts, spans = stalls(objs), steps(lines)
    for kind, culprit in (("sort", "main.sortNumbers"), ("sort2", "main.sortNumbers"),
                          ("sort3", "main.sortNumbers"), ("count", "main.countWords"),
                          ("tally", "main.tallyWords"), ("tally2", "main.tallyWords")):
        st = stall_of(sts, spans[kind]) if kind in spans else None
        if not check(st is not None, "%s: no stall" % kind):
            continue
        want = (spans[kind][1] - spans[kind][0]) / 1e6
        names = heaviest_names(st)
        print("%s: %.1f ms, heaviest %s" % (kind, st["duration_ms"], " > ".join(names)))
        check(abs(st["duration_ms"] - want) < 40,
              "%s: a stall of %.1f ms, the step took %.1f ms" % (kind, st["duration_ms"], want))
        check(st["kind"] == "busy", "%s: a %s stall" % (kind, st["kind"]))
        # the Go callback, down from the runtime's cgo entry, by Go's names
        check(culprit in names and "main.handleStep" in names and "main.goStep" in names,
              "%s: %s under main.handleStep and main.goStep not on the heaviest path" % (kind, culprit))
        check("runtime.cgocallbackg" in names, "%s: no runtime.cgocallbackg on the path" % kind)
        # the callback runs on the goroutine's stack, the loop on the thread's:
        # the walk goes over into the thread's at the frame record that links
        # there, and the GLib loop that called is on the path
        check("g_main_loop_run" in names and "on_timeout" in names
              and names.index("on_timeout") < names.index("main.goStep"),
              "%s: the loop that called the Go callback is not on the path" % kind)
        # and the copy ends at that link: it ran to the end of the goroutine's
        # mapping (Go's heap), a megabyte per sample, short of it all the same
        # (every sample of 40).  A sample whose chain does not link home is
        # copied as before: one of some thousands was, in one CI run (taken
        # while Go switched stacks, most likely)
        short = sum(s["count"] for s in st["stacks"] if "copy_short" in s["flags"])
        total = sum(s["count"] for s in st["stacks"])
        check(short <= max(1, total // 20),
              "%s: %d samples of %d with a stack copy cut short" % (kind, short, total))
    # the dependency's frames are in the tree, by the dependency's names, with
    # the heaviest of its functions (split for tally, rank for tally2) below
    for kind, inner in (("tally", "example.com/wordfreq.split"),
                        ("tally2", "example.com/wordfreq.rank")):
        st = stall_of(sts, spans[kind]) if kind in spans else None
        names = heaviest_names(st) if st else []
        check("example.com/wordfreq.Tally" in names and inner in names,
              "%s: example.com/wordfreq.Tally and %s not on the heaviest path: %s"
              % (kind, inner, names))
    # Go's standard library is the toolchain's (signature version 7): one
    # hang, one signature, whichever of sort's internals was heaviest; and a
    # dependency is not the app's own code either (version 8): one hang of
    # tallyWords, whichever of wordfreq's functions was heaviest
    kinds = ("sort", "sort2", "sort3", "count", "tally", "tally2")
    sigs = {k: stall_of(sts, spans[k])["signature"] for k in kinds
            if k in spans and stall_of(sts, spans[k])}
    print("signatures:", sigs)
    check(len(sigs) == 6 and sigs["sort"] == sigs["sort2"] == sigs["sort3"] and
          sigs["tally"] == sigs["tally2"] and
          len({sigs["sort"], sigs["count"], sigs["tally"]}) == 3,
          "signatures of three alike stalls, two alike and another: %s" % sigs)
    check(all(st.get("signature_version", 0) >= 8 for st in sts), "signature version before 8")
    check(re.search(r"3 stalls .*e\.g\. #\d+  main\.sortNumbers \(stallapp-cgo\)", err) and
          re.search(r"1 stall .*e\.g\. #\d+  main\.countWords \(stallapp-cgo\)", err) and
          re.search(r"2 stalls .*e\.g\. #\d+  main\.tallyWords \(stallapp-cgo\)", err),
          "the summary does not name main.sortNumbers, main.countWords and main.tallyWords: %s"
          % err[-600:])


SCENARIOS = {
    "nested-c": scenario_nested_c,
    "nested-glib": scenario_nested_glib,
    "nested-python": scenario_nested_python,
    "nested-python-glib": scenario_nested_python_glib,
    "nested-node": scenario_nested_node,
    "jit-node": scenario_jit_node,
    "tcl": scenario_tcl,
    "emacs": scenario_emacs,
    "nested-uv": scenario_nested_uv,
    "nested-qt": scenario_nested_qt,
    "nested-qt-unix": scenario_nested_qt_unix,
    "segments": scenario_segments,
    "stopped": scenario_stopped,
    "rust": scenario_rust,
    "go": scenario_go,
    "deep": scenario_deep,
    "vdso": scenario_vdso,
    "unwatched": scenario_unwatched,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print("usage: test-programs.py {%s}" % "|".join(SCENARIOS), file=sys.stderr)
        sys.exit(2)
    SCENARIOS[sys.argv[1]]()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
