#!/usr/bin/env python3
"""Integration tests of stallwatch's device support against the fake device.

Usage: test-device.py STALLWATCH SOURCE_ROOT BUILD_ROOT [TEST...]

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

EXE, SRC, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
SELECTED = sys.argv[4:]
TESTS = []
failures = []


def test(fn):
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
        check(r.returncode == 3, f"status {r.returncode}")
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
def usbmuxd_absent():
    e = Env()
    try:
        e.mux.close()
        r = e.run("devices")
        check(r.returncode == 3, f"status {r.returncode}")
        check("usbmuxd is not running" in r.stderr, r.stderr)
        check(r.elapsed < 3, f"took {r.elapsed:.1f}s")
    finally:
        e.close()


@test
def usbmuxd_hangs():
    e = Env(hang=True, timeout="1.5")
    try:
        r = e.run("devices")
        check(r.returncode == 3, f"status {r.returncode}")
        check("no answer within 1500 ms" in r.stderr, r.stderr)
        check(r.elapsed < 3, f"took {r.elapsed:.1f}s, deadline 1.5s")
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


def main():
    chosen = [t for t in TESTS if not SELECTED or t.__name__ in SELECTED]
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
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
