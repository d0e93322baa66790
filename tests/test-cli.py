#!/usr/bin/env python3
"""The command as a new user meets it: where results go, what the README
shows, and the exit statuses and one-line messages of misuses.

    test-cli.py CHECK...

with STALLWATCH, STALLWATCH_AGENT, STALLAPP and SW_SOURCE_ROOT in the
environment (tests/meson.build).  The checks:

- results: run's results never mix with the program's standard output;
  --results FILE gets them whole;
- readme: every command of README.md's "Using it" block that needs no device
  runs as written (./app, ./app-tests and libfoo.so stand for the test app
  and its plugin), and its output feeds the consumer the line names when
  that consumer is installed;
- statuses: the documented status and one line on stderr for an
  unparsable --connect address, a --thread naming no thread, a damaged
  recording with no complete stall, and --max-stalls/--duration stopping
  the program.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from swtest import check, failures, free_port

STALLWATCH = os.environ.get("STALLWATCH", "")
AGENT = os.environ.get("STALLWATCH_AGENT", "")
STALLAPP = os.environ.get("STALLAPP", "")
PLUGIN = os.environ.get("STALLAPP_PLUGIN", "")
SOURCE = os.environ.get("SW_SOURCE_ROOT", "")


def sw(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 120)
    return subprocess.run([STALLWATCH] + args, **kw)


def one_line(stderr, what):
    """The one line of stderr (bytes or text) besides the summary's lines and a
    usage error's "try 'stallwatch VERB --help'" hint."""
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    summary = r"stallwatch: \d+ stalls?[ ,]|stallwatch: top signatures|  sig [0-9a-f]{16} |try '"
    lines = [l for l in text.splitlines() if not re.match(summary, l)]
    check(len(lines) == 1, "%s: want one line on stderr, got %r" % (what, text))
    return lines[0] if lines else ""


def check_results():
    r = sw(["run", "--format", "json", "--", "sh", "-c", "echo hello"])
    check(r.returncode == 0, "run -- sh: status %d" % r.returncode)
    check(r.stdout == b"hello\n", "run's stdout is not the program's: %r" % r.stdout[:200])
    d = tempfile.mkdtemp(prefix="sw-cli-")
    path = os.path.join(d, "r.json")
    r = sw(["run", "--format", "json", "--results", path, "--exe", os.path.basename(STALLAPP),
            "--", "sh", "-c", 'echo hello; exec "$0" busy:300', STALLAPP])
    check(r.returncode == 0, "run --results: status %d: %s" % (r.returncode, r.stderr))
    check(r.stdout.startswith(b"hello\n") and b"{" not in r.stdout,
          "run --results: stdout holds more than the program's: %r" % r.stdout[:200])
    try:
        doc = json.load(open(path))
        check(len(doc["stalls"]) == 1, "run --results: %d stalls in the file" % len(doc["stalls"]))
    except (OSError, ValueError) as e:
        check(False, "run --results: the file is not one JSON document: %s" % e)
    r = sw(["run", "--results", os.path.join(d, "no", "such", "dir"), "--", "true"])
    check(r.returncode == 7, "run --results into a missing directory: status %d" % r.returncode)
    shutil.rmtree(d)


# ---- README.md ------------------------------------------------------------

def readme_commands():
    text = open(os.path.join(SOURCE, "README.md")).read()
    block = text.split("## Using it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    cmds = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            cmds.append(line)
    return cmds


STAND_IN = r"""
#undef main
#include <stdio.h>
int stallapp_main(int argc, char **argv);
int main(int argc, char **argv)
{
	char *steps[] = {argv[0], %s, NULL};
	/* a program that writes on its standard output: results must not mix in */
	puts("%s says hello");
	fflush(stdout);
	return stallapp_main(sizeof(steps) / sizeof(steps[0]) - 1, steps);
}
"""


def make_stand_ins(d):
    """./app, ./app-tests, libfoo.so and crash.log as the README names them:
    programs (not scripts, which the agent would watch instead) built from
    the test app with steps of their own, taking any arguments."""
    apps = os.path.join(SOURCE, "tests", "apps")
    for name, steps in (("app", '"busy:300", "idle:100", "busy:300"'), ("app-tests", '"busy:300"')):
        src = os.path.join(d, name + ".c")
        with open(src, "w") as f:
            f.write(STAND_IN % (steps, name))
        r = subprocess.run([os.environ.get("SW_CC", "cc"), "-g", "-O0", "-fno-omit-frame-pointer",
                            "-o", os.path.join(d, name), src, "-Dmain=stallapp_main",
                            os.path.join(apps, "stallapp.c"), os.path.join(apps, "steps.c"),
                            os.path.join(apps, "hazards.c"),
                            "-ldl", "-pthread"], capture_output=True, text=True)
        check(r.returncode == 0, "cannot build the stand-in %s: %s" % (name, r.stderr))
    if PLUGIN:
        shutil.copy(PLUGIN, os.path.join(d, "libfoo.so"))
    with open(os.path.join(d, "crash.log"), "w") as f:
        f.write("frame 0: _ZN3foo3barEv + 12\n")
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    os.symlink(STALLWATCH, os.path.join(bindir, "stallwatch"))
    return bindir


def consumers_missing(cmd):
    tools = []
    if "flamegraph.pl" in cmd:
        tools.append("flamegraph.pl")
    if "go tool pprof" in cmd:
        tools.append("go")
    return [t for t in tools if not shutil.which(t)]


def start_agent_app(d, port, sock):
    # the agent leaves its token where attach, run with the same $XDG_RUNTIME_DIR, finds it
    env = dict(os.environ, LD_PRELOAD=AGENT, STALLWATCH_LISTEN="127.0.0.1:%d" % port,
               XDG_RUNTIME_DIR=d)
    app = subprocess.Popen([STALLAPP, "idle:1500", "busy:300", "idle:500"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env["STALLWATCH_LISTEN"] = "unix:" + sock
    app2 = subprocess.Popen([STALLAPP, "idle:1500", "busy:300", "idle:500"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return [app, app2]


def fake_usbmuxd(d):
    """tests/fake-device's usbmuxd with one paired iPhone, or None."""
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fake-device"))
    try:
        import fakedevice
    except ImportError as e:
        print("note: no fake device (%s)" % e)
        return None
    mux = fakedevice.FakeUsbmuxd(os.path.join(d, "usbmuxd.sock"))
    mux.add(fakedevice.Device("00008110-0000A1B2C3D40001", name="Test iPhone"))
    return mux


def check_readme():
    d = tempfile.mkdtemp(prefix="sw-readme-")
    bindir = make_stand_ins(d)
    env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"], XDG_RUNTIME_DIR=d,
               USBMUXD_SOCKET_ADDRESS="UNIX:" + os.path.join(d, "usbmuxd.sock"),
               STALLWATCH_DEVICE_TIMEOUT="5")
    has_device = "+device" in sw(["--version"], text=True).stdout
    mux = fake_usbmuxd(d) if has_device else None
    ran = 0
    for cmd in readme_commands():
        words = cmd.split()
        verb = words[1] if len(words) > 1 else ""
        if verb == "attach" and "--connect" not in cmd:
            continue  # apps on devices: tests/test-device.py, against the fake device
        if verb == "devices" and not mux:
            print("note: not run, no device support or no fake device: %s" % cmd)
            continue
        missing = consumers_missing(cmd)
        if missing:
            print("note: not run, %s missing: %s" % (", ".join(missing), cmd))
            continue
        if "hang-diagnostic.json" in cmd:
            src = os.path.join(SOURCE, "tests", "data", "metrickit")
            shutil.copy(os.path.join(src, "payload-hangs.json"),
                        os.path.join(d, "hang-diagnostic.json"))
            os.makedirs(os.path.join(d, "App.dSYM"), exist_ok=True)
        if "farm/" in cmd and verb == "report":
            os.makedirs(os.path.join(d, "farm"), exist_ok=True)
            shutil.copy(os.path.join(d, "run.swtrace"), os.path.join(d, "farm", "a.swtrace"))
            shutil.copy(os.path.join(d, "run.swtrace"), os.path.join(d, "farm", "b.swtrace"))
        apps = []
        if verb == "attach":
            port = free_port()  # the README's 27300 may be taken on a shared machine
            cmd = cmd.replace("27300", str(port))
            apps = start_agent_app(d, port, os.path.join(d, "app.sock"))
        # an interactive shell's commands: bash, for `source <(...)`
        r = subprocess.run(["bash", "-c", cmd], cwd=d, env=env, capture_output=True, timeout=120)
        for a in apps:
            a.wait(timeout=30)
        ran += 1
        check(r.returncode == 0, "README: `%s` exited %d: %s" % (cmd, r.returncode,
                                                                 r.stderr.decode()[-400:]))
        if verb == "run":
            check(r.stdout.decode().startswith("app"), "README: `%s`: the program's output is "
                  "not its own: %r" % (cmd, r.stdout[:200]))
        if "--results run.ndjson" in cmd:
            objs = [json.loads(l) for l in open(os.path.join(d, "run.ndjson"))]
            check(sum(o["type"] == "stall" for o in objs) == 2,
                  "README: run.ndjson holds %d stalls" % sum(o["type"] == "stall" for o in objs))
        if "--junit" in cmd:
            check(os.path.getsize(os.path.join(d, "stalls.xml")) > 0, "README: no stalls.xml")
        if verb == "attach":
            check(b"stall" in r.stdout, "README: `%s` printed no stall" % cmd)
    if mux:
        mux.close()
    check(ran >= 10, "README: only %d commands ran" % ran)
    print("README: %d commands ran" % ran)
    shutil.rmtree(d)


def check_version():
    r = sw(["--version"], text=True)
    lines = r.stdout.splitlines()
    m = re.match(r"stallwatch (\S+) \(commit (\S+), protocol (\d+)\)$", lines[0] if lines else "")
    if not check(r.returncode == 0 and m and len(lines) == 2, "--version: %r" % r.stdout):
        return
    head = subprocess.run(["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode == 0:
        commit = m.group(2).split("-g")[-1].replace("-dirty", "")
        check(head.stdout.startswith(commit) or m.group(2).endswith(commit),
              "--version names commit %s, the tree is at %s" % (m.group(2), head.stdout[:12]))
    feats = dict((f[1:], f[0] == "+") for f in lines[1].split(":", 1)[1].split())
    check(sorted(feats) == ["debuginfod", "device", "libiberty", "metrickit", "pprof-gzip"],
          "--version features: %r" % lines[1])
    # each claim holds: what is built in works, what is not says so
    payload = os.path.join(SOURCE, "tests", "data", "metrickit", "payload-hangs.json")
    r = sw(["report", payload])
    check((r.returncode == 0) == feats.get("metrickit"),
          "--version says metrickit %s, report of a payload exits %d" % (feats.get("metrickit"),
                                                                      r.returncode))
    r = sw(["report", "--format", "pprof", payload])
    if r.returncode == 0:
        check(r.stdout.startswith(b"\x1f\x8b") == feats.get("pprof-gzip"),
              "--version says pprof-gzip %s, pprof output starts %r" % (feats.get("pprof-gzip"),
                                                                      r.stdout[:2]))
    r = sw(["devices"], env=dict(os.environ, USBMUXD_SOCKET_ADDRESS="UNIX:/nonexistent"))
    check(("without device support" in r.stderr.decode()) != feats.get("device"),
          "--version says device %s, devices says %r" % (feats.get("device"), r.stderr))


def message_starts(data):
    """Where each message of a recording starts (stallwatch-format(5): a
    16-byte header, then a type byte, a ULEB128 body length and the body)."""
    pos, starts = int.from_bytes(data[10:12], "little"), []
    while pos < len(data):
        starts.append(pos)
        length, shift, p = 0, 0, pos + 1
        while p < len(data):
            length |= (data[p] & 0x7F) << shift
            shift += 7
            p += 1
            if not data[p - 1] & 0x80:
                break
        pos = p + length
    return starts


def check_statuses():
    for addr in ("nonsense", "127.0.0.1:99999", "127.0.0.1:", "unix:", "[::1", "host:abc"):
        r = sw(["attach", "--connect", addr], text=True, timeout=20)
        check(r.returncode == 2, "attach --connect %s: status %d, want 2" % (addr, r.returncode))
        one_line(r.stderr, "attach --connect " + addr)
    r = sw(["run", "--thread", "no-such-thread", "--results", os.devnull, "--", STALLAPP,
            "busy:300"], text=True)
    check(r.returncode == 2, "--thread naming no thread: status %d, want 2" % r.returncode)
    check("no-such-thread" in one_line(r.stderr, "--thread naming no thread"),
          "--thread: the line does not name the thread: %r" % r.stderr)

    d = tempfile.mkdtemp(prefix="sw-cli-")
    rec = os.path.join(d, "one.swtrace")
    r = sw(["run", "-o", rec, "--results", os.devnull, "--", STALLAPP, "busy:300"])
    data = open(rec, "rb").read()
    cut = os.path.join(d, "cut.swtrace")
    starts = message_starts(data)
    # inside the messages at a quarter and at half the file: before the stall ends
    for size in (next(s for s in starts if s >= len(data) // 4) + 2,
                 next(s for s in starts if s >= len(data) // 2) + 2):
        open(cut, "wb").write(data[:size])
        r = sw(["report", cut], text=True)
        check(r.returncode == 5, "a recording cut at %d of %d bytes, no complete stall: "
              "status %d, want 5" % (size, len(data), r.returncode))
        one_line(r.stderr, "a recording cut before its first stall")

    # --max-stalls and --duration stop the program: said in one line; the count is right
    r = sw(["run", "--max-stalls", "1", "--results", os.devnull, "--", STALLAPP, "busy:300",
            "idle:200", "busy:300"], text=True)
    check(r.returncode == 0, "--max-stalls: status %d" % r.returncode)
    stopped = [l for l in r.stderr.splitlines() if "stopped" in l]
    check(len(stopped) == 1 and "--max-stalls 1" in stopped[0] and "1 stall" in stopped[0],
          "--max-stalls: no one line saying why the program stopped: %r" % r.stderr)
    out = os.path.join(d, "d.ndjson")
    r = sw(["run", "--format", "ndjson", "--results", out, "--duration", "0.9", "--", STALLAPP,
            "idle:200", "busy:1500", "idle:3000"], text=True)
    objs = [json.loads(l) for l in open(out)]
    stalls = [o for o in objs if o["type"] == "stall"]
    summary = [o for o in objs if o["type"] == "summary"]
    check(len(stalls) == 1 and summary and summary[-1]["stalls"] == len(stalls),
          "--duration: %d stalls printed, the summary counts %s" %
          (len(stalls), summary and summary[-1]["stalls"]))
    check(any("--duration 0.9" in l for l in r.stderr.splitlines() if "stopped" in l),
          "--duration: no line saying why the program stopped: %r" % r.stderr)

    # a FIFO is refused at once, not opened and waited on for a writer that never comes
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    try:
        r = sw(["symbolicate", "-e", fifo, "0x10"], text=True, timeout=20)
        check(r.returncode == 5 and "not a regular file" in one_line(r.stderr, "-e FIFO"),
              "symbolicate -e FIFO: status %d, %r" % (r.returncode, r.stderr))
    except subprocess.TimeoutExpired:
        check(False, "symbolicate -e FIFO: still waiting after 20 s")
    shutil.rmtree(d)


def check_symbols():
    d = tempfile.mkdtemp(prefix="sw-cli-")
    stripped = os.path.join(d, "stripped-app")
    shutil.copy(STALLAPP, stripped)
    strip = shutil.which("strip") or shutil.which("llvm-strip-19")
    if not strip:
        print("note: no strip: --require-symbols on a stripped program not checked")
    else:
        subprocess.run([strip, stripped], check=True)
        rec = os.path.join(d, "s.swtrace")
        r = sw(["run", "-o", rec, "--require-symbols", "--results", os.devnull, "--", stripped,
                "busy:300"], text=True)
        check(r.returncode == 6, "--require-symbols, app stripped (sub_ names): status %d, "
              "want 6" % r.returncode)
        check("stripped-app" in one_line(r.stderr, "--require-symbols, app stripped"),
              "--require-symbols: the line does not name the image: %r" % r.stderr)
        r = sw(["report", "--require-symbols", rec], text=True)
        check(r.returncode == 6, "report --require-symbols, app stripped: status %d" %
              r.returncode)
        r = sw(["report", rec], text=True)
        check(r.returncode == 0, "report without --require-symbols: status %d" % r.returncode)
    r = sw(["run", "--require-symbols", "--results", os.devnull, "--", STALLAPP, "busy:300"],
           text=True)
    check(r.returncode == 0, "--require-symbols, symbols present: status %d: %s" %
          (r.returncode, r.stderr))
    # -S naming nothing: a warning, and the search goes on
    r = sw(["run", "-S", os.path.join(d, "no-such-dir"), "--results", os.devnull, "--",
            STALLAPP, "busy:300"], text=True)
    check(r.returncode == 0, "-S missing: status %d" % r.returncode)
    check("warning" in one_line(r.stderr, "-S missing") and "no-such-dir" in r.stderr,
          "-S missing: no warning: %r" % r.stderr)
    shutil.rmtree(d)


def check_exe():
    # --exe NAME where NAME is a symbolic link to the program (python3 -> python3.11)
    d = tempfile.mkdtemp(prefix="sw-cli-")
    os.symlink(STALLAPP, os.path.join(d, "app-link"))
    env = dict(os.environ, PATH=d + ":" + os.environ["PATH"])
    for exe in ("app-link", os.path.join(d, "app-link")):
        r = sw(["run", "--exe", exe, "--format", "ndjson", "--results", "-", "--", "sh", "-c",
                "app-link busy:300"], text=True, env=env)
        check(r.returncode == 0, "--exe %s (a symbolic link): status %d: %s" %
              (exe, r.returncode, r.stderr))
        check(r.stdout.count('"type":"stall"') == 1, "--exe %s: no stall watched" % exe)
    # an --exe that no process runs is named as the cause, not a static program
    r = sw(["run", "--exe", "no-such-program", "--", "sh", "-c", "exit 0"], text=True)
    line = one_line(r.stderr, "--exe naming nothing")
    check("--exe" in line and "static" not in line, "--exe naming nothing: %r" % line)
    shutil.rmtree(d)


def check_deps():
    """The Quick start's first command installs only what building needs, and
    apt waits for the package lock: .ci/deps against stand-ins for apt-get,
    dpkg-query (nothing installed) and sudo that record what they are asked."""
    readme = open(os.path.join(SOURCE, "README.md")).read()
    quick = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    first = quick.strip().split("&&")[0].split()
    check(first[0] == ".ci/deps", "README's Quick start does not start with .ci/deps: %r"
          % quick)
    d = tempfile.mkdtemp(prefix="sw-deps-")
    log = os.path.join(d, "log")
    for name, body in (("apt-get", 'echo "apt-get $*" >> "%s"' % log),
                       ("dpkg-query", "exit 1"), ("sudo", 'exec "$@"')):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n%s\n" % body)
        os.chmod(path, 0o755)
    env = dict(os.environ, PATH=d + ":" + os.environ["PATH"])
    installs = {}
    for args in (first[1:], []):
        open(log, "w").close()
        r = subprocess.run([os.path.join(SOURCE, ".ci", "deps")] + args, env=env,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, ".ci/deps %s: status %d: %s" % (args, r.returncode, r.stderr))
        calls = open(log).read().splitlines()
        check(calls and all("DPkg::Lock::Timeout=" in c for c in calls),
              ".ci/deps %s: an apt-get call does not wait for the lock: %r" % (args, calls))
        installs[tuple(args)] = set(w for c in calls if " install " in c
                                    for w in c.split() if not w.startswith("-")) - {
                                        "apt-get", "install", "DPkg::Lock::Timeout=600"}
    quick_set, full = installs[tuple(first[1:])], installs[()]
    heavy = {"clang-19", "clang-14", "qemu-user", "golang-go", "valgrind", "gcc-aarch64-linux-gnu"}
    check(quick_set and quick_set < full and not (quick_set & heavy),
          "the Quick start installs %s" % sorted(quick_set))
    check({"meson", "ninja-build"} <= quick_set, "the Quick start misses meson or ninja: %s"
          % sorted(quick_set))
    shutil.rmtree(d)


def check_folded():
    # folded weighs in microseconds (stallwatch-output(7)), not nanoseconds
    d = tempfile.mkdtemp(prefix="sw-cli-")
    rec = os.path.join(d, "f.swtrace")
    sw(["run", "-o", rec, "--results", os.devnull, "--", STALLAPP, "busy:300", "busy:400"])
    ndjson = [json.loads(l) for l in sw(["report", "--format", "ndjson", rec]).stdout.splitlines()]
    want = {"#%d" % o["id"]: sum(n["total"] for n in o["tree"] if n["parent"] is None) / 1000
            for o in ndjson if o["type"] == "stall"}
    got, lines = {}, 0
    for line in sw(["report", "--format", "folded", rec], text=True).stdout.splitlines():
        stack, weight = line.rsplit(" ", 1)
        label = stack.split(";")[0]
        got[label] = got.get(label, 0) + int(weight)
        lines += 1
    check(len(want) == 2 and set(got) == set(want) and
          all(abs(got[k] - want[k]) <= lines for k in want),
          "folded weights %s, the stalls' sampled microseconds %s" % (got, want))
    shutil.rmtree(d)


TREE_LINE = re.compile(r"^#\d+\s+([\d.]+) ms\s+[\d.]+%\s+([\d.]+) ms  ( *)(\S+)")


def check_invert():
    # --invert as Instruments' Invert Call Tree: leaf functions at the top
    # with their self time, callers beneath with none
    d = tempfile.mkdtemp(prefix="sw-cli-")
    rec = os.path.join(d, "i.swtrace")
    sw(["run", "-o", rec, "--results", os.devnull, "--", STALLAPP, "busy:300"])
    ndjson = [json.loads(l) for l in sw(["report", "--format", "ndjson", rec]).stdout.splitlines()]
    tree = next(o for o in ndjson if o["type"] == "stall")["tree"]
    leaves = {}  # function -> its self time in the ordinary tree, ms
    for n in tree:
        if n["self"]:
            leaves[n["symbol"]] = leaves.get(n["symbol"], 0) + n["self"] / 1e6
    text = sw(["report", "--invert", "--color=never", "--min-percent", "0", rec],
              text=True).stdout
    roots = {}
    for line in text.splitlines():
        m = TREE_LINE.match(line)
        if not m:
            continue
        total, self, depth, name = float(m.group(1)), float(m.group(2)), len(m.group(3)), m.group(4)
        if depth == 0:
            roots[name] = roots.get(name, 0) + total
            check(abs(self - total) < 0.05, "--invert: root %s shows self %.1f of %.1f ms" %
                  (name, self, total))
        else:
            check(self == 0, "--invert: caller %s shows self %.1f ms" % (name, self))
    check(set(roots) == set(leaves) and
          all(abs(roots[k] - leaves[k]) < 0.1 * len(tree) for k in leaves),
          "--invert roots %s, the leaf functions' self times %s" % (roots, leaves))
    shutil.rmtree(d)


def check_culprit():
    # the summary's "e.g." names the app's own function that explains each
    # stall (tests/apps/steps.c): spin_ms spins (now_ns, inlined into it, is a
    # helper; clock_gettime is the system's), stall_sleep sleeps in libc
    r = sw(["run", "--results", os.devnull, "--", STALLAPP, "busy:300", "sleep:300"], text=True)
    named = re.findall(r"^  sig [0-9a-f]{16} .* e\.g\. #\d+  (\S+) \((\S+)\)$", r.stderr, re.M)
    check(sorted(named) == sorted([("spin_ms", os.path.basename(STALLAPP)),
                                   ("stall_sleep", os.path.basename(STALLAPP))]),
          "summary names %s, want spin_ms and stall_sleep: %s" % (named, r.stderr))
    check_culprit_stripped()


PLT_C = r"""
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char text[4096];

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* most of the time, on its own and in strlen: the heaviest path ends in libc */
__attribute__((noinline)) long crunch(long h)
{
	for (int k = 0; k < 400; k++)
		h = h * 31 + text[k & 63];
	return h + (long)strlen(text);
}

int main(void)
{
	long n = 0;
	memset(text, 'a', sizeof(text) - 1);
	poll(0, 0, 20);
	for (long end = now_ms() + 400; now_ms() < end;) {
		for (int i = 0; i < 1000; i++)
			n += labs(i - 500);
		for (int i = 0; i < 20; i++)
			n = crunch(n);
	}
	poll(0, 0, 20);
	return (int)(n & 1);
}
"""


def check_culprit_stripped():
    # a stripped app's only names are its PLT entries and sub_<hex>: the
    # summary names crunch by its address (it spends most of the time, on
    # its own and in strlen), not strlen (the heaviest path's leaf), labs,
    # nor labs@plt, a jump into libc
    d = tempfile.mkdtemp()
    src, exe, unstripped = (os.path.join(d, n) for n in ("plt.c", "plt", "plt-symbols"))
    with open(src, "w") as f:
        f.write(PLT_C)
    cc = os.environ.get("SW_CC", "cc")
    subprocess.run([cc, "-O1", "-fno-builtin", "-o", unstripped, src], check=True)
    subprocess.run([cc, "-O1", "-fno-builtin", "-s", "-o", exe, src], check=True)
    nm = subprocess.run(["nm", unstripped], capture_output=True, text=True, check=True).stdout
    crunch = [int(l.split()[0], 16) for l in nm.splitlines() if l.endswith(" crunch")]
    folded = os.path.join(d, "folded")
    r = sw(["run", "--interval", "1", "--format", "folded", "--results", folded, "--", exe],
           text=True)
    named = re.findall(r"^  sig [0-9a-f]{16} .* e\.g\. #\d+  (\S+) \((\S+)\)$", r.stderr, re.M)
    lines = open(folded).read().replace(";", " ")
    print("stripped app: e.g. %s; crunch at %s; samples in labs@plt: %s, in strlen: %s" %
          (named, crunch and hex(crunch[0]), "labs@plt " in lines, "strlen" in lines))
    check("labs@plt " in lines and "strlen" in lines,
          "stripped app: no sample in labs@plt or strlen, the case is not tried")
    check(len(crunch) == 1 and named == [("sub_%x" % crunch[0], "plt")],
          "stripped app: e.g. names %s, want crunch as sub_%s in plt" %
          (named, crunch and "%x" % crunch[0]))
    shutil.rmtree(d)


def validator():
    """A function validating an XML file against an XSD: xmlschema or lxml in
    this Python, else libxml2's xmllint (the Python that runs the tests need
    not be the system's, where Debian installs python3-xmlschema)."""
    try:
        import xmlschema

        def validate(xml, xsd):
            errors = list(xmlschema.XMLSchema(xsd).iter_errors(xml))
            return str(errors[0]) if errors else None
        return validate
    except ImportError:
        pass
    try:
        from lxml import etree

        def validate(xml, xsd):
            schema = etree.XMLSchema(etree.parse(xsd))
            return None if schema.validate(etree.parse(xml)) else str(schema.error_log.last_error)
        return validate
    except ImportError:
        pass
    if shutil.which("xmllint"):
        def validate(xml, xsd):
            r = subprocess.run(["xmllint", "--noout", "--schema", xsd, xml], capture_output=True,
                               text=True)
            return None if r.returncode == 0 else r.stderr.strip()
        return validate
    return None


def check_junit():
    d = tempfile.mkdtemp(prefix="sw-cli-")
    junit = os.path.join(d, "stalls.xml")
    app = os.path.basename(STALLAPP)
    # the sleep stall fails (longer than 450 ms), the busy one passes
    r = sw(["run", "--junit", junit, "--fail-if-longer-than", "450", "--results", os.devnull,
            "--", STALLAPP, "busy:300", "sleep:600"], text=True)
    check(r.returncode == 1, "--junit --fail-if-longer-than: status %d" % r.returncode)
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    names = sorted(re.sub(r" sig [0-9a-f]{16}$", "", n) for n in cases)
    check(names == ["spin_ms (%s)" % app, "stall_sleep (%s)" % app],
          "JUnit cases are not named by their culprit: %s" % sorted(cases))
    check(all(re.search(r" sig [0-9a-f]{16}$", n) for n in cases),
          "JUnit names lack the signature: %s" % sorted(cases))
    failing = [n for n, c in cases.items() if c.find("failure") is not None]
    check(len(failing) == 1 and failing[0].startswith("stall_sleep"),
          "JUnit failing cases: %s" % failing)
    validate = validator()
    if not validate:
        print("SKIP: neither xmlschema, lxml nor xmllint: the JUnit file was not validated")
        shutil.rmtree(d)
        sys.exit(77)
    for xsd in ("ant-junit.xsd", "jenkins-junit-10.xsd"):
        error = validate(junit, os.path.join(SOURCE, "tests", "data", "junit", xsd))
        check(error is None, "the JUnit file is not valid against %s: %s" % (xsd, error))
    shutil.rmtree(d)


STUB_TBD = """--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-ios ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1319
exports:
  - targets:         [ arm64-ios ]
    symbols:         [ _puts, _usleep, dyld_stub_binder ]
...
"""
STUB_C = "int puts(const char *);\nint usleep(unsigned);\n" \
         "int main(void){for(int i=0;i<3;i++){puts(\"x\");usleep(1000);}return 0;}\n"


def symbolicate_name(binary, addr):
    r = sw(["symbolicate", "-e", binary, "0x%x" % addr], text=True)
    return re.sub(r" \+ 0x[0-9a-f]+$", "", r.stdout.splitlines()[0]) if r.stdout else r.stderr


def check_stubs():
    """PLT entries and Mach-O stubs are named by what they jump to, never by
    the function before them; llvm-objdump is the oracle, on programs built
    here by gcc and clang (ELF) and clang-19 for iOS with ld64.lld-19."""
    objdump = shutil.which("llvm-objdump-19") or shutil.which("llvm-objdump")
    if not objdump:
        print("SKIP: no llvm-objdump")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="sw-stubs-")
    src = os.path.join(d, "p.c")
    open(src, "w").write("#include <stdio.h>\n#include <unistd.h>\n" + STUB_C.split("\n", 2)[2])
    builds = []
    for cc, flags in (("gcc", []), ("gcc", ["-fcf-protection=full", "-Wl,-z,ibtplt"]),
                      ("clang-19", []), ("clang-19", ["-fuse-ld=lld"])):
        if not shutil.which(cc):
            print("note: no %s" % cc)
            continue
        out = os.path.join(d, "%s-%d" % (cc, len(builds)))
        if subprocess.run([cc, "-O1", "-o", out, src] + flags, capture_output=True).returncode:
            print("note: %s %s cannot build the fixture" % (cc, flags))
            continue
        builds.append(out)
    checked = 0
    for b in builds:
        dis = subprocess.run([objdump, "-d", b], capture_output=True, text=True).stdout
        for addr, name in re.findall(r"^([0-9a-f]+) <([^>]+@plt)>:", dis, re.M):
            got = symbolicate_name(b, int(addr, 16) + 4)
            check(got == name, "%s: 0x%x is %r, llvm-objdump says %s" %
                  (os.path.basename(b), int(addr, 16) + 4, got, name))
            checked += 1
    check(checked >= 6, "only %d PLT entries checked" % checked)
    clang, ld = shutil.which("clang-19"), shutil.which("ld64.lld-19")
    if clang and ld:
        open(os.path.join(d, "libSystem.tbd"), "w").write(STUB_TBD)
        open(os.path.join(d, "m.c"), "w").write(STUB_C)
        subprocess.run([clang, "-target", "arm64-apple-ios14.0", "-nostdlibinc", "-O1", "-c",
                        "m.c", "-o", "m.o"], cwd=d, check=True)
        for out, extra in (("m", []), ("m-lazy", ["-no_fixup_chains"])):
            subprocess.run([ld, "-arch", "arm64", "-platform_version", "ios", "14.0", "14.0",
                            "-o", out, "m.o", "libSystem.tbd", "-e", "_main"] + extra,
                           cwd=d, check=True)
            b = os.path.join(d, out)
            ind = subprocess.run([objdump, "--macho", "--indirect-symbols", b],
                                 capture_output=True, text=True).stdout
            stubs = ind.split("(__TEXT,__stubs)")[1].split("Indirect symbols for")[0]
            entries = re.findall(r"^0x([0-9a-f]+)\s+\d+ _(\w+)$", stubs, re.M)
            check(len(entries) == 2, "%s: llvm-objdump lists stubs %s" % (out, entries))
            for addr, name in entries:
                got = symbolicate_name(b, int(addr, 16) + 4)
                check(got == name + " stub", "%s: stub 0x%s is %r, want '%s stub'" %
                      (out, addr, got, name))
            heads = subprocess.run([objdump, "--macho", "--section-headers", b],
                                   capture_output=True, text=True).stdout
            helper = re.search(r"__stub_helper\s+[0-9a-f]+\s+([0-9a-f]+)", heads)
            if helper:
                got = symbolicate_name(b, int(helper.group(1), 16) + 8)
                check(got == "stub helper", "%s: __stub_helper is %r" % (out, got))
    else:
        print("note: no clang-19 or ld64.lld-19: Mach-O stubs not checked")
    shutil.rmtree(d)


def check_baseline():
    d = tempfile.mkdtemp(prefix="sw-cli-")
    nd, rec = os.path.join(d, "base.ndjson"), os.path.join(d, "base.swtrace")
    r = sw(["run", "--format", "ndjson", "--results", nd, "-o", rec, "--", STALLAPP, "busy:300"])
    objs = [json.loads(l) for l in open(nd)]
    stall = next(o for o in objs if o["type"] == "stall")
    version = stall.get("signature_version")
    check(isinstance(version, int) and version >= 1, "NDJSON stalls carry no signature_version")
    for base in (nd, rec):
        what = os.path.basename(base)
        # the known busy hang fails nothing; the new sleep hang does
        r = sw(["run", "--fail-on-stall", "--baseline", base, "--results", os.devnull, "--",
                STALLAPP, "busy:300"], text=True)
        check(r.returncode == 0, "--baseline %s, only a known hang: status %d: %s" %
              (what, r.returncode, r.stderr))
        check("1 of 1 stall known" in r.stderr, "--baseline %s: the summary does not say what "
              "was known: %r" % (what, r.stderr))
        junit = os.path.join(d, "j.xml")
        r = sw(["run", "--fail-on-stall", "--baseline", base, "--junit", junit, "--results",
                os.devnull, "--", STALLAPP, "busy:300", "sleep:300"], text=True)
        check(r.returncode == 1, "--baseline %s, a new hang: status %d" % (what, r.returncode))
        failing = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")
                   if c.find("failure") is not None]
        check(len(failing) == 1 and failing[0].startswith("stall_sleep"),
              "--baseline %s: JUnit fails %s, want the sleep only" % (what, failing))
    # a baseline of another signature version is refused in one line, before the program
    other = os.path.join(d, "other.ndjson")
    newer = '"signature_version":%d' % (version + 1)
    open(other, "w").write(open(nd).read().replace('"signature_version":%d' % version, newer))
    r = sw(["run", "--baseline", other, "--", STALLAPP, "busy:300"], text=True)
    check(r.returncode == 5 and "version" in one_line(r.stderr, "baseline of another version") and
          "ready" not in r.stdout, "baseline of another version: status %d, %r" % (r.returncode,
                                                                                   r.stderr))
    shutil.rmtree(d)


def check_progress():
    # progress for long work on a terminal only (STALLWATCH_PROGRESS_AFTER_MS=0:
    # any work is long)
    import pty
    d = tempfile.mkdtemp(prefix="sw-cli-")
    rec = os.path.join(d, "p.swtrace")
    sw(["run", "-o", rec, "--results", os.devnull, "--", STALLAPP, "busy:300"])
    env = dict(os.environ, STALLWATCH_PROGRESS_AFTER_MS="0", TERM="xterm")
    master, slave = pty.openpty()
    p = subprocess.Popen([STALLWATCH, "report", rec], stdin=slave, stdout=subprocess.DEVNULL,
                         stderr=slave, env=env)
    os.close(slave)
    tty = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        tty += chunk
    p.wait(timeout=60)
    os.close(master)
    check(b"\rstallwatch: symbolicating stall 1" in tty.replace(b"\x1b[K", b""),
          "no progress line on a terminal: %r" % tty[:300])
    r = sw(["report", rec], env=env)
    check(b"symbolicating" not in r.stderr and b"\r" not in r.stderr,
          "progress in a pipe: %r" % r.stderr[:300])
    shutil.rmtree(d)


def check_doctor_symbols():
    # doctor's symbols check: a recording whose program is gone fails with its fix
    d = tempfile.mkdtemp(prefix="sw-cli-")
    app, rec = os.path.join(d, "gone-app"), os.path.join(d, "g.swtrace")
    shutil.copy(STALLAPP, app)
    sw(["run", "-o", rec, "--results", os.devnull, "--", app, "busy:300"])
    os.remove(app)
    env = dict(os.environ, USBMUXD_SOCKET_ADDRESS="UNIX:" + os.path.join(d, "none"))
    r = sw(["doctor", rec, STALLAPP], text=True, env=env)
    lines = [l for l in r.stdout.splitlines() if l.split()[1:2] == ["symbols"]]
    check(len(lines) == 2 and lines[0].startswith("FAIL") and "gone-app" in lines[0] and
          lines[1].startswith("ok"), "doctor symbols: %r" % r.stdout)
    check("fix: " in r.stdout.split(lines[0], 1)[1].splitlines()[1] if lines else False,
          "doctor: no fix for missing symbols: %r" % r.stdout)
    r = sw(["doctor", rec, "-S", d], text=True, env=env)
    check(r.returncode != 0, "doctor with a failing check exited 0")
    # every STALLWATCH_* variable the man pages name is one doctor knows
    names = set()
    for page in os.listdir(os.path.join(SOURCE, "man")):
        text = open(os.path.join(SOURCE, "man", page)).read().replace("\\_", "_")
        names |= set(re.findall(r"STALLWATCH_[A-Z_]*[A-Z]", text))
    env.update({n: "1" for n in names if n not in ("STALLWATCH_SYMBOLS", "STALLWATCH_AGENT")})
    r = sw(["doctor"], text=True, env=env)
    unknown = [l for l in r.stdout.splitlines() if "is not a variable" in l]
    check(names and not unknown, "doctor does not know what the man pages name: %s" % unknown)
    shutil.rmtree(d)


CHECKS = {
    "doctor": check_doctor_symbols,
    "progress": check_progress,
    "baseline": check_baseline,
    "stubs": check_stubs,
    "junit": check_junit,
    "culprit": check_culprit,
    "invert": check_invert,
    "folded": check_folded,
    "deps": check_deps,
    "exe": check_exe,
    "symbols": check_symbols,
    "statuses": check_statuses,
    "version": check_version,
    "results": check_results,
    "readme": check_readme,
}


def main():
    if not (STALLWATCH and AGENT and STALLAPP and SOURCE):
        print("SKIP: STALLWATCH, STALLWATCH_AGENT, STALLAPP and SW_SOURCE_ROOT must be set")
        return 77
    for name in sys.argv[1:] or CHECKS:
        CHECKS[name]()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
