"""Blocking calls and a nested loop inside GLib callbacks, from Python (gi).

    blocking_glib.py KIND...

runs a GLib main loop that ticks every 10 ms; every 300 ms it runs the next
KIND inside a timeout callback, between "step KIND begin NS" and
"step KIND end NS" (CLOCK_MONOTONIC):

    subprocess   subprocess.run(["sleep", "0.4"], capture_output=True)
    nested       a nested GLib.MainLoop on the default context for 0.6 s that
                 keeps serving the 10 ms tick (a modal dialog): no stall
"""
import subprocess
import sys
import time

from gi.repository import GLib


def stamp(kind, what):
    print("step %s %s %d" % (kind, what, time.clock_gettime_ns(time.CLOCK_MONOTONIC)), flush=True)


kinds = sys.argv[1:]
loop = GLib.MainLoop()
ticks = [0]


def tick():
    ticks[0] += 1
    return True


def step():
    if not kinds:
        loop.quit()
        return False
    kind = kinds.pop(0)
    stamp(kind, "begin")
    if kind == "subprocess":
        subprocess.run(["sleep", "0.4"], capture_output=True, check=True)
    elif kind == "nested":
        inner = GLib.MainLoop()
        before = ticks[0]
        GLib.timeout_add(600, lambda: inner.quit() or False)
        inner.run()
        print("nested ticks=%d" % (ticks[0] - before), flush=True)
    stamp(kind, "end")
    return True


GLib.timeout_add(10, tick)
GLib.timeout_add(300, step)
print("ready", flush=True)
loop.run()
print("done", flush=True)
