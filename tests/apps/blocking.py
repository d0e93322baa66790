"""Blocking calls inside event-loop callbacks, for the agent's tests.

    blocking.py KIND...

runs an asyncio loop that ticks every 10 ms; every 300 ms it runs the next
KIND inside a callback, printing "step KIND begin NS" and "step KIND end NS"
(CLOCK_MONOTONIC) around it:

    subprocess   subprocess.run(["sleep", "0.4"], capture_output=True): waits on
                 the child's pipes with poll()
    recv         recv() on a silent socket with a 0.4 s timeout (poll inside)
    sleeptask    await asyncio.sleep(0.4): the loop waits, no stall
"""
import asyncio
import socket
import subprocess
import sys
import time


def stamp(kind, what):
    print("step %s %s %d" % (kind, what, time.clock_gettime_ns(time.CLOCK_MONOTONIC)), flush=True)


def blocking(kind):
    stamp(kind, "begin")
    if kind == "subprocess":
        subprocess.run(["sleep", "0.4"], capture_output=True, check=True)
    elif kind == "recv":
        a, b = socket.socketpair()
        a.settimeout(0.4)
        try:
            a.recv(1)
        except socket.timeout:
            pass
        a.close()
        b.close()
    stamp(kind, "end")


async def main(kinds):
    loop = asyncio.get_running_loop()
    stop = loop.create_future()

    def tick():
        if not stop.done():
            loop.call_later(0.01, tick)

    tick()
    print("ready", flush=True)
    for kind in kinds:
        await asyncio.sleep(0.3)
        if kind == "sleeptask":
            stamp(kind, "begin")
            await asyncio.sleep(0.4)
            stamp(kind, "end")
        else:
            loop.call_soon(blocking, kind)
            await asyncio.sleep(0)
    await asyncio.sleep(0.3)
    stop.set_result(None)
    print("done", flush=True)


asyncio.run(main(sys.argv[1:]))
