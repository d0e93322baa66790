"""Tcl's event loop inside Python, through tkinter without Tk (no display
needed): _tkinter loads libtcl with dlopen, locally, as tkinter apps do.
For tests/test-programs.py tcl.  Steps print "step KIND begin NS" /
"step KIND end NS" (CLOCK_MONOTONIC):

    busy     a 400 ms Python loop in a Tcl timer callback
    nested   a 400 ms vwait inside a callback, serving a 10 ms timer (no stall)
"""
import time
import tkinter

tcl = tkinter.Tcl()


def step(kind, fn):
    def run():
        print("step %s begin %d" % (kind, time.monotonic_ns()), flush=True)
        fn()
        print("step %s end %d" % (kind, time.monotonic_ns()), flush=True)
    return run


def spin():
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        pass


def nested():
    tcl.eval("set ticks 0; set nested 0; after 400 {set nested 1}")
    tcl.eval("proc tick {} { incr ::ticks; if {!$::nested} { after 10 tick } }; after 10 tick")
    tcl.eval("vwait nested")
    print("nested ticks=%s" % tcl.eval("set ticks"), flush=True)


tcl.createcommand("busy", step("busy", spin))
tcl.createcommand("nested", step("nested", nested))
tcl.eval("after 150 busy; after 700 nested; after 1300 {set done 1}; vwait done")
print("done", flush=True)
