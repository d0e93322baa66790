#!/usr/bin/env python3
"""Integration tests of stallwatch's device support against the fake device.

Usage: test-device.py STALLWATCH SOURCE_ROOT BUILD_ROOT [--basic|--streams] [TEST...]

--basic runs the tests that need no app (listing, deadlines, errors);
--streams those that stream from apps running the agent (meson labels them
'agent' too, so sanitizer builds that cannot run the agent can leave them out).

The real `stallwatch` binary talks through the unmodified libimobiledevice
and libusbmuxd to tests/fake-device/fakedevice.py, found through
USBMUXD_SOCKET_ADDRESS.  Apps on the fake devices are real processes running
the stallwatch agent (tests/apps/stallapp with libstallwatch-agent.so), so
what crosses the fake is real agent traffic.

STALLWATCH_TEST_FARM sets how many devices the farm test attaches at once
(default 20; 200 is the figure to check by hand).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fake-device"))
import fakedevice  # noqa: E402
from swtest import LineReader, free_port, scratch_dir  # noqa: E402

EXE, SRC, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
GROUP = None
SELECTED = [a for a in sys.argv[4:] if not a.startswith("--")]
for a in sys.argv[4:]:
    if a in ("--basic", "--streams"):
        GROUP = a[2:]
TESTS = []
failures = []


def test(fn):
    fn.group = "basic"
    TESTS.append(fn)
    return fn


def stream_test(fn):
    """A test with apps running the agent on the fake devices."""
    fn.group = "streams"
    TESTS.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Env:
    """A temporary directory, a fake usbmuxd in it, and a way to run the command."""

    def __init__(self, hang=False, timeout="3"):
        self.dir = tempfile.mkdtemp(prefix="sw-device-")
        self.sock = os.path.join(self.dir, "usbmuxd.sock")
        self.mux = fakedevice.FakeUsbmuxd(self.sock, hang=hang)
        self.env = dict(os.environ)
        self.env["USBMUXD_SOCKET_ADDRESS"] = "UNIX:" + self.sock
        self.env["STALLWATCH_DEVICE_TIMEOUT"] = timeout
        self.env.pop("NO_COLOR", None)

    def run(self, *args, timeout=60, **kw):
        start = time.monotonic()
        r = subprocess.run([EXE, *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout, **kw)
        r.elapsed = time.monotonic() - start
        return r

    def close(self):
        self.mux.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def udid(n):
    return "00008110-%016X" % (0xA1B2C3D40000 + n)


# ---- devices ----


@test
def devices_one():
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(1), name="Ana's iPhone", product_type="iPhone15,3",
                                    version="16.7.2"))
        r = e.run("devices")
        check(r.returncode == 0, f"status {r.returncode}: {r.stderr}")
        fields = r.stdout.split()
        check(fields[:4] == [udid(1), "usb", "16.7.2", "iPhone15,3"], r.stdout)
        check(r.stdout.rstrip().endswith("Ana's iPhone"), r.stdout)
        r = e.run("devices", "--json")
        objs = [json.loads(line) for line in r.stdout.splitlines()]
        check(len(objs) == 1, r.stdout)
        o = objs[0]
        check(o["schema"] == 1 and o["type"] == "device", o)
        check((o["udid"], o["name"], o["product_type"], o["ios_version"], o["connection"])
              == (udid(1), "Ana's iPhone", "iPhone15,3", "16.7.2", "usb"), o)
    finally:
        e.close()


@test
def devices_two_and_network():
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(2), name="B", version="17.1"))
        e.mux.add(fakedevice.Device(udid(1), name="A", version="16.1"))
        e.mux.add(fakedevice.Device(udid(3), name="W", version="17.0", conn="Network"))
        r = e.run("devices", "--json")
        objs = [json.loads(line) for line in r.stdout.splitlines()]
        check([o["udid"] for o in objs] == [udid(1), udid(2), udid(3)], r.stdout)
        check([o["connection"] for o in objs] == ["usb", "usb", "network"], r.stdout)
        check(objs[1]["ios_version"] == "17.1" and objs[1]["name"] == "B", objs[1])
        # The network device's lockdownd (127.0.0.2) does not answer: a warning.
        check(objs[2]["error"] and objs[2]["name"] is None, objs[2])
        check(r.returncode == 0 and udid(3) in r.stderr, f"status {r.returncode}")
    finally:
        e.close()


@test
def devices_none():
    e = Env()
    try:
        r = e.run("devices")
        check(r.returncode == 0 and r.stdout == "", f"status {r.returncode}, {r.stdout!r}")
        check("no devices" in r.stderr, r.stderr)
    finally:
        e.close()


@test
def devices_many():
    """More devices than lockdownd queries run at once (64)."""
    e = Env(timeout="10")
    try:
        for i in range(150):
            e.mux.add(fakedevice.Device(udid(1000 + i), name="farm %d" % i, version="16.%d" % (i % 8)))
        r = e.run("devices", "--json")
        objs = [json.loads(line) for line in r.stdout.splitlines()]
        check(r.returncode == 0 and len(objs) == 150, f"{r.returncode}, {len(objs)} devices")
        check(all(o["name"] == "farm %d" % i and o["ios_version"] == "16.%d" % (i % 8)
                  for i, o in enumerate(objs)), "wrong names or versions")
    finally:
        e.close()


def devices_fails_fast(e, message):
    """`devices` exits 3 within 3 s, saying message."""
    r = e.run("devices")
    check(r.returncode == 3, f"status {r.returncode}")
    check(message in r.stderr, r.stderr)
    check(r.elapsed < 3, f"took {r.elapsed:.1f}s")


@test
def usbmuxd_absent():
    e = Env()
    try:
        e.mux.close()
        devices_fails_fast(e, "usbmuxd is not running")
    finally:
        e.close()


@test
def library_loaded_when_needed():
    """libimobiledevice is not a start-up dependency: it is loaded by the first
    device operation, and a missing one is one clear line (exit 3) while the
    commands that need no device still run."""
    out = subprocess.run(["readelf", "-d", EXE], capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", out)
    check(needed and not any("imobiledevice" in n or "debuginfod" in n for n in needed),
          "linked at start-up: %s" % needed)
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(1)))
        e.env["STALLWATCH_IMOBILEDEVICE"] = os.path.join(e.dir, "libimobiledevice-gone.so")
        r = e.run("devices")
        check(r.returncode == 3, f"status {r.returncode}: {r.stderr}")
        check("cannot load" in r.stderr and "libimobiledevice-gone.so" in r.stderr and
              "install libimobiledevice" in r.stderr and r.stderr.count("\n") == 1, r.stderr)
        r = e.run("demangle", "_Z3foov")
        check(r.returncode == 0 and r.stdout.strip() == "foo()", f"demangle: {r.stdout!r}")
        del e.env["STALLWATCH_IMOBILEDEVICE"]
        r = e.run("devices")
        check(r.returncode == 0 and udid(1) in r.stdout, f"status {r.returncode}: {r.stderr}")
    finally:
        e.close()


@test
def usbmuxd_hangs():
    e = Env(hang=True, timeout="1.5")
    try:
        devices_fails_fast(e, "no answer within 1500 ms")  # the deadline is 1.5 s
    finally:
        e.close()


@test
def lockdownd_hangs():
    e = Env(timeout="1.5")
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        d.hang_lockdown = True
        e.mux.add(fakedevice.Device(udid(2), name="fine"))
        r = e.run("devices", "--json")
        check(r.returncode == 3, f"status {r.returncode}")
        check(udid(1) in r.stderr and "no answer" in r.stderr, r.stderr)
        objs = [json.loads(line) for line in r.stdout.splitlines()]
        check(objs[1]["name"] == "fine", objs)
        check(r.elapsed < 3, f"took {r.elapsed:.1f}s, deadline 1.5s")
    finally:
        e.close()


# ---- doctor ----


def doctor_lines(r):
    """{check: [(verdict, text, fix)]} from doctor's output."""
    out, last = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("      fix: ") and last:
            last[2] = line[len("      fix: "):]
            continue
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] in ("ok", "FAIL", "skip"):
            last = [parts[0], parts[2], None]
            out.setdefault(parts[1], []).append(last)
    return out


def doctor_env(e):
    """What doctor needs beside the fake usbmuxd: the agent, no stray variables."""
    for k in [k for k in e.env if k.startswith("STALLWATCH_") and k not in
              ("STALLWATCH_DEVICE_TIMEOUT",)]:
        e.env.pop(k)
    e.env["STALLWATCH_AGENT"] = os.environ.get(
        "STALLWATCH_AGENT", os.path.join(BUILD, "injector", "libstallwatch-agent.so"))


@test
def doctor_all_good():
    e = Env()
    try:
        doctor_env(e)
        e.mux.add(fakedevice.Device(udid(1), name="Ana's iPhone", version="16.7.2"))
        e.mux.add(fakedevice.Device(udid(2), name="W", conn="Network"))
        r = e.run("doctor")
        lines = doctor_lines(r)
        check(r.returncode == 0 and "FAIL" not in r.stdout, f"{r.returncode}: {r.stdout}")
        check(lines["agent"][0][0] == "ok" and "loads" in lines["agent"][0][1], r.stdout)
        check(lines["usbmuxd"][0][0] == "ok" and "2 devices" in lines["usbmuxd"][0][1],
              r.stdout)
        paired = [l for l in lines["device"] if l[0] == "ok"]
        check(len(paired) == 1 and udid(1) in paired[0][1] and "paired" in paired[0][1],
              r.stdout)
        check(any(l[0] == "ok" and "STALLWATCH_DEVICE_TIMEOUT=3" in l[1]
                  for l in lines["env"]), r.stdout)
        check(r.stdout.rstrip().endswith("everything checked works"), r.stdout)
    finally:
        e.close()


@test
def doctor_problems():
    """Each problem is one FAIL line with its fix, and the status of its kind."""
    e = Env()
    try:
        doctor_env(e)
        d = e.mux.add(fakedevice.Device(udid(1)))
        d.paired = False
        r = e.run("doctor")
        dev = doctor_lines(r)["device"][0]
        check(r.returncode == 3 and dev[0] == "FAIL" and "Trust" in (dev[2] or ""),
              f"an unpaired device: {r.returncode}: {r.stdout}")
        d.paired = True
        e.env["STALLWATCH_AGENT"] = os.path.join(e.dir, "no-agent.so")
        e.env["STALLWATCH_TRESHOLD_MS"] = "100"  # misspelt
        r = e.run("doctor")
        lines = doctor_lines(r)
        check(r.returncode == 4 and lines["agent"][0][0] == "FAIL" and lines["agent"][0][2],
              f"no agent: {r.returncode}: {r.stdout}")
        check(any(l[0] == "FAIL" and "STALLWATCH_TRESHOLD_MS" in l[1] for l in lines["env"]),
              r.stdout)
        e.mux.close()
        doctor_env(e)
        r = e.run("doctor")
        mux = doctor_lines(r)["usbmuxd"][0]
        check(r.returncode == 3 and mux[0] == "FAIL" and "usbmuxd" in (mux[2] or ""),
              f"no usbmuxd: {r.returncode}: {r.stdout}")
    finally:
        e.close()


# ---- apps running the agent ----

BUNDLE = "com.example.stallapp"
VERSION = "2.4.1"  # what the app's CFBundleShortVersionString would say
_stallapp = None


def stallapp():
    """tests/apps/stallapp, from the build or compiled here from its source."""
    global _stallapp
    if _stallapp:
        return _stallapp
    built = os.environ.get("STALLAPP", os.path.join(BUILD, "tests", "stallapp"))
    if os.path.exists(built):
        _stallapp = built
        return built
    out = os.path.join(scratch_dir("sw-stallapp-"), "stallapp")
    cc = os.environ.get("CC", "cc")
    src = os.path.join(SRC, "tests", "apps")
    subprocess.run([cc, "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", out,
                    os.path.join(src, "stallapp.c"), os.path.join(src, "steps.c"), "-ldl"],
                   check=True)
    _stallapp = out
    return out


def agent_lib():
    path = os.environ.get("STALLWATCH_AGENT",
                          os.path.join(BUILD, "injector", "libstallwatch-agent.so"))
    if not os.path.exists(path):
        print("SKIP: the agent library is not built")
        sys.exit(77)
    return path


def agent_env(bundle=BUNDLE, wait_ms=5000):
    # the fake device stands for iOS, where the usbmuxd connection is the proof
    return {"LD_PRELOAD": agent_lib(), "STALLWATCH_BUNDLE_ID": bundle,
            "STALLWATCH_BUNDLE_VERSION": VERSION, "STALLWATCH_WAIT_MS": str(wait_ms), "STALLWATCH_PROOF": "connection"}


def start_app(device, steps, bundle=BUNDLE, device_port=27300, wait_ms=5000):
    """Runs stallapp with the agent on a loopback port the device maps to device_port."""
    port = free_port()
    env = dict(os.environ)
    env.update(agent_env(bundle, wait_ms))
    env["STALLWATCH_LISTEN"] = "127.0.0.1:%d" % port
    proc = subprocess.Popen([stallapp(), *steps], env=env, stdout=subprocess.PIPE, text=True)
    # The device port leads to the agent once it listens (the agent's first
    # client would otherwise be replaced by this probe).
    for _ in range(100):
        try:
            import socket
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    device.map_port(device_port, ("127.0.0.1", port))
    return proc


def stalls_of(out, udid=None):
    """The stall objects of NDJSON output (of one device's stream)."""
    objs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [o for o in objs if o.get("type") == "stall" and (udid is None or o["source"] == udid)]


def stall_ids(out, udid=None):
    return {o["id"] for o in stalls_of(out, udid)}


def functions(stall):
    """The functions on the heaviest path of a stall, outermost first."""
    return [f["symbol"] for f in stall["heaviest"]]


def app_steps(out, kind):
    """The elapsed times the app itself printed for steps of this kind."""
    return [float(l.split("elapsed_ms=")[1]) for l in out.splitlines()
            if l.startswith("step %s end" % kind)]


@stream_test
def attach_running_app():
    e = Env()
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        app = start_app(d, ["idle:200", "busy:400", "idle:200", "sleep:350", "idle:300"],
                        device_port=27302)
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--wait", "5", "-o", os.path.join(e.dir, "rec.swtrace"))
        out = app.communicate(timeout=30)[0]
        check(r.returncode == 0, f"status {r.returncode}: {r.stderr}")
        check("port 27302" in r.stderr, r.stderr)
        check(f"'{BUNDLE}' version {VERSION} (pid" in r.stderr, r.stderr)
        stalls = stalls_of(r.stdout)
        check([o["id"] for o in stalls] == [1, 2], r.stdout[:500])
        # what the app itself says it did: durations by its clock, functions by its source
        want = app_steps(out, "busy") + app_steps(out, "sleep")
        got = [o["duration_ms"] for o in stalls]
        check(len(got) == 2 and all(abs(a - b) < 60 for a, b in zip(got, want)),
              f"stall durations {got}, app says {want}")
        check("stall_busy_inner" in functions(stalls[0]), functions(stalls[0]))
        check("stall_sleep" in functions(stalls[1]), functions(stalls[1]))
        check(all(o["source"] == udid(1) and o["bundle_id"] == BUNDLE for o in stalls), stalls)
        check(all(o["bundle_version"] == VERSION for o in stalls), stalls)
        with open(os.path.join(e.dir, "rec.swtrace"), "rb") as f:
            rec = f.read()
        check(rec[:8] == b"SWTRACE\0" and udid(1).encode() in rec, "recording lacks the UDID")
        # the recording keeps the app's version for later reports
        r = e.run("report", os.path.join(e.dir, "rec.swtrace"), "--format", "ndjson")
        check([o["bundle_version"] for o in stalls_of(r.stdout)] == [VERSION] * 2, r.stdout[:500])
    finally:
        e.close()


def readme_device_lines():
    """The README's device commands, as written (its "Using it" block)."""
    import re
    text = open(os.path.join(SRC, "README.md")).read()
    block = text.split("## Using it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"\s+#.*$", "", l).strip() for l in block.splitlines()]
    return [l.split() for l in lines
            if l.startswith("stallwatch devices") or l.startswith("stallwatch attach com.")]


@stream_test
def readme_device_examples():
    """Every device example of the README works as written against the fake
    device, the app there running the agent (the bundle id the README names)."""
    lines = readme_device_lines()
    check(len(lines) >= 4, f"README device lines: {lines}")
    steps = ["idle:300", "busy:300", "idle:300"]
    for words in lines:
        e = Env(timeout="10")
        apps = []
        try:
            d = e.mux.add(fakedevice.Device(udid(1), version="16.7.2"))
            cmd = [os.path.abspath(EXE)] + words[1:]
            bundle = words[2] if len(words) > 2 else BUNDLE
            if "--launch" in words:
                app = fakedevice.App(bundle, [stallapp(), *steps], env=agent_env(bundle),
                                     executable="StallApp", dev_signed=True)
                d.apps[bundle] = app
            elif words[1] == "attach":
                apps.append(start_app(d, steps + (["idle:60000"] if "--all-devices" in words
                                                  else []), bundle=bundle, wait_ms=30000))
            if "--all-devices" in words:  # until Ctrl-C, as its comment says
                p = subprocess.Popen(cmd, env=e.env, cwd=e.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                p.reader = Reader(p)
                p.reader.wait_for(lambda l: "#1" in l, 20)
                p.send_signal(signal.SIGINT)
                out, err = p.reader.finish(30)
                rc = p.returncode
                check(os.path.exists(os.path.join(e.dir, "farm", udid(1) + ".swtrace")),
                      f"{' '.join(words)}: no recording in farm/")
            else:
                r = subprocess.run(cmd, env=e.env, cwd=e.dir, capture_output=True, text=True,
                                   timeout=90)
                rc, out, err = r.returncode, r.stdout, r.stderr
            check(rc == 0, f"{' '.join(words)}: status {rc}: {err}")
            if words[1] == "attach":
                check("#1" in out, f"{' '.join(words)}: no stall printed: {out[:300]} {err}")
            else:
                check(udid(1) in out, f"{' '.join(words)}: {out}")
        finally:
            for a in apps:
                a.kill()
                a.wait()
            e.close()


@stream_test
def attach_wrong_bundle():
    e = Env()
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        app = start_app(d, ["idle:3000"], bundle="com.example.other")
        r = e.run("attach", BUNDLE, "--format", "ndjson")
        app.kill()
        app.wait()
        check(r.returncode == 4, f"status {r.returncode}: {r.stderr}")
        check("com.example.other" in r.stderr and "port 27300" in r.stderr, r.stderr)
    finally:
        e.close()


@stream_test
def attach_two_devices():
    e = Env()
    try:
        d1 = e.mux.add(fakedevice.Device(udid(1), name="first"))
        d2 = e.mux.add(fakedevice.Device(udid(2), name="second"))
        r = e.run("attach", BUNDLE, "--format", "ndjson")
        check(r.returncode == 3, f"status {r.returncode}: {r.stderr}")
        check(udid(1) in r.stderr and udid(2) in r.stderr and "-u" in r.stderr, r.stderr)
        app = start_app(d2, ["idle:200", "busy:300", "idle:300"])
        r = e.run("attach", BUNDLE, "--format", "ndjson", "-u", udid(2))
        app.communicate(timeout=30)
        check(r.returncode == 0, f"status {r.returncode}: {r.stderr}")
        check(stall_ids(r.stdout) == {1} and udid(2) in r.stderr, r.stderr)
        r = e.run("attach", BUNDLE, "--format", "ndjson", "-u", udid(9))
        check(r.returncode == 3 and udid(9) in r.stderr, r.stderr)
        del d1
    finally:
        e.close()


@test
def attach_network_only():
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(1), conn="Network"))
        r = e.run("attach", BUNDLE, "--format", "ndjson")
        check(r.returncode == 3, f"status {r.returncode}: {r.stderr}")
        check("network only" in r.stderr and "USB" in r.stderr, r.stderr)
    finally:
        e.close()


@test
def attach_app_not_running():
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(1)))
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--wait", "2")
        check(r.returncode == 4, f"status {r.returncode}: {r.stderr}")
        check("no agent listens on ports 27300-27309" in r.stderr, r.stderr)
        check(1.8 < r.elapsed < 6, f"took {r.elapsed:.1f}s for --wait 2")
    finally:
        e.close()


@stream_test
def attach_waits_for_app():
    e = Env()
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        p = subprocess.Popen([EXE, "attach", BUNDLE, "--format", "ndjson", "--wait", "10"], env=e.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        app = start_app(d, ["idle:200", "busy:300", "idle:300"], device_port=27305)
        out, err = p.communicate(timeout=30)
        app.communicate(timeout=30)
        check(p.returncode == 0 and stall_ids(out) == {1}, f"status {p.returncode}: {err}")
    finally:
        e.close()


@stream_test
def device_vanishes():
    e = Env()
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        app = start_app(d, ["idle:200", "busy:300", "idle:30000"])
        rec = os.path.join(e.dir, "rec.swtrace")
        p = subprocess.Popen([EXE, "attach", BUNDLE, "--format", "ndjson", "-o", rec], env=e.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = json.loads(p.stdout.readline())
        check(first["type"] == "stall" and first["id"] == 1, first)
        e.mux.remove(d)
        start = time.monotonic()
        out, err = p.communicate(timeout=20)
        app.kill()
        app.wait()
        check(p.returncode == 3, f"status {p.returncode}: {err}")
        check("went away" in err and rec in err, err)
        check(time.monotonic() - start < 8, "too slow to notice")
        with open(rec, "rb") as f:
            data = f.read()
        check(data[:8] == b"SWTRACE\0" and len(data) > 200, f"recording of {len(data)} bytes")
    finally:
        e.close()


def farm(count, steps, with_output=True, extra=()):
    e = Env(timeout="10")
    apps = []
    try:
        devices = []
        for i in range(count):
            d = e.mux.add(fakedevice.Device(udid(100 + i), name="farm %d" % i))
            devices.append(d)
            apps.append(start_app(d, steps, wait_ms=30000))
        outdir = os.path.join(e.dir, "recs") + "/"
        args = [EXE, "attach", BUNDLE, "--all-devices", *extra]
        if with_output:
            args += ["-o", outdir]
        p = subprocess.Popen(args, env=e.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.reader = Reader(p)
        return e, devices, apps, p, outdir
    except Exception:
        for a in apps:
            a.kill()
        e.close()
        raise


class Reader(LineReader):
    """Reads a process's stdout in a thread, so a full pipe never holds it up."""

    def __init__(self, proc):
        super().__init__(proc, keep_ends=True)

    def wait_for(self, pred, timeout):
        """Waits until pred(lines so far) holds; returns whether it did."""
        return bool(self.wait_until(pred, timeout))

    def finish(self, timeout=60):
        err = self.proc.stderr.read()
        self.proc.wait(timeout)
        self.thread.join(timeout)
        return "".join(l for l in self.lines if l), err


def fds_of(pid):
    d = "/proc/%d/fd" % pid
    return [int(x) for x in os.listdir(d)]


@stream_test
def all_devices_two():
    e, devices, apps, p, outdir = farm(2, ["idle:300", "busy:300", "idle:300", "sleep:300",
                                           "idle:60000"])
    try:
        # a third device arrives later with the app already running
        time.sleep(2.5)
        late = e.mux.add(fakedevice.Device(udid(7), name="late"))
        apps.append(start_app(late, ["idle:300", "busy:300", "idle:60000"], wait_ms=30000))
        time.sleep(3)
        p.send_signal(signal.SIGINT)
        out, err = p.reader.finish(30)
        check(p.returncode == 0, f"status {p.returncode}: {err}")
        # tree text: every line starts with its stall's label, qualified by device
        labels = {}
        for line in out.splitlines():
            if not line:
                continue
            label = line.split()[0]
            check("#" in label, f"unqualified line: {line}")
            src, _, num = label.rpartition("#")
            labels.setdefault(src, set()).add(int(num))
        for d in devices:
            check(labels.get(d.udid) == {1, 2}, f"{d.udid}: {labels.get(d.udid)}")
            check(os.path.getsize(outdir + d.udid + ".swtrace") > 100, "no recording")
            check(f"device '{d.udid}' (farm" in err, err)
        check(labels.get(late.udid) == {1}, f"late device: {err}")
    finally:
        for a in apps:
            a.kill()
            a.wait()
        e.close()


@stream_test
def all_devices_app_restarts():
    """After the app ends, --all-devices waits for its next start on that device."""
    e, devices, apps, p, outdir = farm(1, ["idle:300", "busy:300", "idle:300"],
                                       extra=("--format", "ndjson"))
    try:
        d = devices[0]
        apps[0].communicate(timeout=30)
        d.ports.clear()
        time.sleep(0.5)
        apps.append(start_app(d, ["idle:300", "sleep:300", "idle:300"], device_port=27301))
        apps[1].communicate(timeout=30)
        time.sleep(1)
        p.send_signal(signal.SIGINT)
        out, err = p.reader.finish(30)
        stalls = stalls_of(out, d.udid)
        check([o["pid"] for o in stalls] == [apps[0].pid, apps[1].pid], f"{stalls}: {err}")
        check(os.path.exists(outdir + d.udid + ".swtrace")
              and os.path.exists(outdir + d.udid + "-2.swtrace"), os.listdir(outdir))
        check(f"device '{d.udid}' (farm 0): 2 stalls" in err, err)
    finally:
        for a in apps:
            a.kill()
            a.wait()
        e.close()


@stream_test
def all_devices_report():
    """report on --all-devices recordings names each stall's device, however the files are named."""
    e, devices, apps, p, outdir = farm(2, ["idle:300", "busy:300", "idle:300"],
                                       extra=("--color=never",))
    try:
        for a in apps:
            a.communicate(timeout=30)
        time.sleep(1)
        p.send_signal(signal.SIGINT)
        live, err = p.reader.finish(30)
        check(p.returncode == 0, f"status {p.returncode}: {err}")
        live_labels = {l.split()[0] for l in live.splitlines() if l}
        check(live_labels == {d.udid + "#1" for d in devices}, f"live labels {live_labels}")
        # renamed, so the files' names cannot be what qualifies the ids
        recs = []
        for i, d in enumerate(devices):
            recs.append(os.path.join(e.dir, "run%d.swtrace" % i))
            os.rename(outdir + d.udid + ".swtrace", recs[-1])
        r = e.run("report", "--color=never", *recs)
        check(r.returncode == 0, f"report status {r.returncode}: {r.stderr}")
        labels = {l.split()[0] for l in r.stdout.splitlines() if l}
        check(labels == live_labels, f"report labels {labels}, live {live_labels}")
        # one recording alone: ids as plain attach prints them, the device as the source
        r = e.run("report", "--format", "ndjson", recs[0])
        check([o["source"] for o in stalls_of(r.stdout)] == [devices[0].udid], r.stdout[:500])
    finally:
        for a in apps:
            a.kill()
            a.wait()
        e.close()


@stream_test
def all_devices_farm():
    count = int(os.environ.get("STALLWATCH_TEST_FARM", "20"))
    # busy well past the 250 ms threshold: twenty apps and the command share
    # two cores here, and a watchdog that first runs after a 300 ms stall
    # has ended samples nothing (19 of 20 devices once, in CI)
    e, devices, apps, p, outdir = farm(count, ["idle:500", "busy:800", "idle:600000"],
                                       with_output=True, extra=("--format", "ndjson"))
    try:
        def sources(lines):
            return {o["source"] for o in map(json.loads, lines) if o["type"] == "stall"}
        p.reader.wait_for(lambda lines: len(sources(lines)) == count, 30 + count * 0.5)
        with p.reader.cond:
            seen = sources([l for l in p.reader.lines if l])
        check(len(seen) == count, f"stalls from {len(seen)} of {count} devices")
        fds = fds_of(p.pid)
        print(f"     {count} devices streaming: {len(fds)} descriptors, highest {max(fds)}")
        check(max(fds) < 1024, f"descriptor {max(fds)}")
        for d in devices:
            e.mux.remove(d)
        time.sleep(3 + count * 0.02)
        after = fds_of(p.pid)
        print(f"     after detaching: {len(after)} descriptors {sorted(after)}")
        check(len(after) <= 8, f"{len(after)} descriptors left: {sorted(after)}")
        p.send_signal(signal.SIGINT)
        out, err = p.reader.finish(60)
        check(p.returncode == 3, f"status {p.returncode}")
        gone = err.count("went away")
        check(gone == count, f"{gone} of {count} devices reported gone")
    finally:
        for a in apps:
            a.kill()
            a.wait()
        e.close()


# ---- --launch ----


def install(device, steps, dev_signed=True):
    app = fakedevice.App(BUNDLE, [stallapp(), *steps], env=agent_env(),
                         executable="StallApp", dev_signed=dev_signed)
    device.apps[BUNDLE] = app
    return app


@stream_test
def launch_ios16():
    e = Env(timeout="10")
    try:
        d = e.mux.add(fakedevice.Device(udid(1), version="16.7.2"))
        app = install(d, ["idle:300", "busy:400", "idle:300"])
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch", "--threshold", "200", "--dylib",
                  "Frameworks/libstallwatch-agent.dylib")
        check(r.returncode == 0, f"status {r.returncode}: {r.stderr}")
        check(len(app.processes) == 1, "the fake debugserver started no app")
        out = app.processes[0].communicate(timeout=20)[0]
        check("launched" in r.stderr and "pid %d" % app.processes[0].pid in r.stderr, r.stderr)
        env = d.launched_env
        check(env.get("STALLWATCH_THRESHOLD_MS") == "200", env)
        check(env.get("DYLD_INSERT_LIBRARIES") ==
              app.container + "/Frameworks/libstallwatch-agent.dylib", env)
        check(stall_ids(r.stdout) == {1} and app_steps(out, "busy"), r.stdout[:300])
    finally:
        e.close()


@test
def launch_problems():
    e = Env(timeout="5")
    try:
        d = e.mux.add(fakedevice.Device(udid(1), version="15.8"))
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 4 and "not installed" in r.stderr, f"{r.returncode}: {r.stderr}")
        install(d, ["idle:100"], dev_signed=False)
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 4 and "not signed for development" in r.stderr,
              f"{r.returncode}: {r.stderr}")
        install(d, ["idle:100"])
        d.ddi_mounted = False
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 3 and "developer disk image" in r.stderr,
              f"{r.returncode}: {r.stderr}")
        d.ddi_mounted = True
        d.paired = False
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 3 and "tap Trust" in r.stderr, f"{r.returncode}: {r.stderr}")
    finally:
        e.close()


@stream_test
def launch_slow_debugserver():
    """debugserver's replies arrive after libimobiledevice's 1-second read timeout."""
    e = Env(timeout="15")
    try:
        d = e.mux.add(fakedevice.Device(udid(1), version="16.1"))
        d.debugserver_delay = 1.3
        app = install(d, ["idle:300", "busy:300", "idle:300"])
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 0 and stall_ids(r.stdout) == {1}, f"{r.returncode}: {r.stderr}")
        app.processes[0].wait(10)
    finally:
        e.close()


@stream_test
def launch_ios17_guidance():
    e = Env()
    try:
        d = e.mux.add(fakedevice.Device(udid(1), version="17.2"))
        p = subprocess.Popen([EXE, "attach", BUNDLE, "--format", "ndjson", "--launch", "--threshold", "200",
                              "--all-threads", "--wait", "20"], env=e.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        want = [
            "  xcrun devicectl device process launch --device %s --environment-variables "
            "'{\"STALLWATCH_THRESHOLD_MS\":\"200\",\"STALLWATCH_ALL_THREADS\":\"1\"}' %s"
            % (udid(1), BUNDLE),
            "  pymobiledevice3 developer dvt launch --tunnel %s --env STALLWATCH_THRESHOLD_MS 200 "
            "--env STALLWATCH_ALL_THREADS 1 %s" % (udid(1), BUNDLE),
        ]
        lines = [p.stderr.readline().rstrip("\n") for _ in range(4)]
        check(lines[1:3] == want, "\n".join(lines))
        # the user runs one of them: the app starts with that environment
        app = start_app(d, ["idle:300", "busy:300", "idle:300"])
        out, err = p.communicate(timeout=30)
        app.communicate(timeout=20)
        check(p.returncode == 0 and stall_ids(out) == {1}, f"{p.returncode}: {err}")
    finally:
        e.close()


@test
def attach_deadlines():
    """A hung usbmuxd or lockdownd costs one deadline, then status 3."""
    e = Env(hang=True, timeout="1.5")
    try:
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--wait", "30")
        check(r.returncode == 3 and "no answer within 1500 ms" in r.stderr,
              f"{r.returncode}: {r.stderr}")
        check(r.elapsed < 3.5, f"took {r.elapsed:.1f}s")
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--all-devices")
        check(r.returncode == 3 and r.elapsed < 3.5, f"{r.returncode} after {r.elapsed:.1f}s")
    finally:
        e.close()
    e = Env(timeout="1.5")
    try:
        d = e.mux.add(fakedevice.Device(udid(1)))
        install(d, ["idle:100"])
        d.hang_lockdown = True
        r = e.run("attach", BUNDLE, "--format", "ndjson", "--launch")
        check(r.returncode == 3 and "no answer within 1500 ms" in r.stderr,
              f"{r.returncode}: {r.stderr}")
        check(r.elapsed < 5, f"took {r.elapsed:.1f}s")
    finally:
        e.close()
    e = Env()
    try:
        e.mux.close()
        r = e.run("attach", BUNDLE, "--format", "ndjson")
        check(r.returncode == 3 and "usbmuxd is not running" in r.stderr, r.stderr)
    finally:
        e.close()


@stream_test
def all_devices_ndjson():
    e, devices, apps, p, outdir = farm(2, ["idle:300", "busy:300", "idle:60000"],
                                       with_output=False, extra=("--format", "ndjson"))
    try:
        p.reader.wait_for(lambda lines: sum('"type":"stall"' in l for l in lines) >= 2, 20)
        p.send_signal(signal.SIGINT)
        out, err = p.reader.finish(30)
        seen = {}
        for o in map(json.loads, out.splitlines()):
            check(o.get("schema") == 1, o)
            if o.get("type") == "stall":
                check(o["label"] == "%s#%d" % (o["source"], o["id"]), o)
                seen[o["source"]] = o
        objs = [json.loads(line) for line in out.splitlines()]
        summaries = [o for o in objs if o["type"] == "summary"]
        check(set(seen) == {d.udid for d in devices}, f"stalls from {sorted(seen)}: {err}")
        check(len(summaries) == 1 and summaries[0]["stalls"] == 2, summaries)
        for d in devices:
            check(f"device '{d.udid}' (farm" in err, err)
    finally:
        for a in apps:
            a.kill()
            a.wait()
        e.close()


def fill_descriptors(upto):
    """In the child before exec: every descriptor from 3 to upto is open."""
    def fill():
        import resource as r
        soft, hard = r.getrlimit(r.RLIMIT_NOFILE)
        r.setrlimit(r.RLIMIT_NOFILE, (hard, hard))
        null = os.open("/dev/null", os.O_RDONLY)
        # dup2 over every number: subprocess's own close-on-exec pipes would
        # otherwise leave free descriptors low down after exec
        for fd in range(3, upto + 1):
            if fd != null:
                os.dup2(null, fd, inheritable=True)
        os.dup2(3, null, inheritable=True)
    return fill


@test
def descriptors_high():
    """With every descriptor below 1000 taken, device calls refuse to start
    rather than let libimobiledevice's select() abort the process."""
    e = Env()
    try:
        e.mux.add(fakedevice.Device(udid(1)))
        r = e.run("devices", preexec_fn=fill_descriptors(1000), close_fds=False)
        check(r.returncode == 3 and "too many descriptors" in r.stderr,
              f"{r.returncode}: {r.stderr}")
        # with room below 1024 it works
        r = e.run("devices", preexec_fn=fill_descriptors(900), close_fds=False)
        check(r.returncode == 0 and udid(1) in r.stdout, f"{r.returncode}: {r.stderr}")
    finally:
        e.close()


def main():
    chosen = [t for t in TESTS if (not SELECTED or t.__name__ in SELECTED)
              and (GROUP is None or t.group == GROUP)]
    for t in chosen:
        start = time.monotonic()
        try:
            t()
            print(f"ok   {t.__name__} ({time.monotonic() - start:.1f}s)", flush=True)
        except Exception as ex:  # noqa: BLE001
            failures.append(t.__name__)
            print(f"FAIL {t.__name__}: {ex}", flush=True)
            traceback.print_exc()
    print(f"{len(chosen)} tests, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
