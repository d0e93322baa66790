"""What the python test scripts share (they find it beside themselves, as
python puts a script's own directory first on its path):

- check(): a check that records a failure and goes on, so one run reports
  every failure; `failures` lists them;
- LineReader: a process's output lines, read in a thread so that a full
  pipe never holds the process up, and a way to wait for a line;
- free_port(): a loopback TCP port free at the moment;
- pb_fields(): the top-level fields of a protobuf message (pprof output).
"""
import socket
import threading
import time

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


class LineReader:
    """Reads proc.stdout (text) in a thread; lines keep their newline with keep_ends."""

    def __init__(self, proc, keep_ends=False):
        self.proc = proc
        self.keep_ends = keep_ends
        self.lines = []  # None last, once the output ends
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line if self.keep_ends else line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)
            self.cond.notify_all()

    def wait_until(self, f, timeout):
        """Waits until f(the lines so far) is true, the output ends or timeout
        seconds pass; returns what f gave last."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = f([l for l in self.lines if l is not None])
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or (self.lines and self.lines[-1] is None):
                    return got
                self.cond.wait(left)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pb_fields(data):
    """Top-level (field, wire type, value) of a protobuf message; raises on bad input."""
    pos = 0

    def varint():
        nonlocal pos
        v = shift = 0
        while True:
            b = data[pos]
            pos += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v

    while pos < len(data):
        key = varint()
        field, wt = key >> 3, key & 7
        if wt == 0:
            yield field, wt, varint()
        elif wt == 2:
            n = varint()
            if pos + n > len(data):
                raise ValueError("truncated field %d" % field)
            yield field, wt, data[pos:pos + n]
            pos += n
        elif wt in (1, 5):
            pos += 8 if wt == 1 else 4
            yield field, wt, None
        else:
            raise ValueError("wire type %d" % wt)
