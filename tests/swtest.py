"""What the python test scripts share (they find it beside themselves, as
python puts a script's own directory first on its path):

- check(): a check that records a failure and goes on, so one run reports
  every failure; `failures` lists them;
- LineReader: a process's output lines, read in a thread so that a full
  pipe never holds the process up, and a way to wait for a line;
- free_port(): a loopback TCP port free at the moment;
- scratch_dir(): a fresh directory, removed when the script exits;
- runs(): whether a program found at configure time runs for this user;
- pb_fields(): the top-level fields of a protobuf message (pprof output);
- a wire encoder (stallwatch-format(5)): messages for recordings and fake
  agents that no real agent would send.
"""
import atexit
import shutil
import socket
import struct
import subprocess
import tempfile
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


def runs(program, arg="--version"):
    """Whether `program --version` (or `program ARG`) runs for this user (a
    compiler found by tests/find-compiler.py as another user may not)."""
    try:
        return subprocess.run([program, arg], capture_output=True).returncode == 0
    except OSError:
        return False


def emacs_native():
    """(emacs, None) for an emacs on PATH that compiles Lisp to native code
    (.eln files: Emacs 28 and later, built with it), else (None, why)."""
    emacs = shutil.which("emacs")
    if not emacs:
        return None, "emacs not found (Debian package emacs-nox)"
    r = subprocess.run([emacs, "-Q", "--batch", "--eval",
                        '(princ (if (native-comp-available-p) "yes" "no"))'],
                       capture_output=True, text=True)
    if r.stdout != "yes":
        return None, "this emacs does not compile Lisp to native code"
    return emacs, None


def scratch_dir(prefix):
    """A fresh directory (under $TMPDIR), removed with what it holds when the script exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


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


# A wire encoder (stallwatch-format(5)) for recordings no agent would send.
def uleb(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sleb(n):
    """n zigzagged, taken modulo 2**64 as the agent's int64_t deltas are."""
    n = ((n + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)
    return uleb(((n << 1) ^ (n >> 63)) & ((1 << 64) - 1))


def wstr(text):
    b = text.encode()
    return uleb(len(b)) + b


def msg(kind, body):
    return bytes([kind]) + uleb(len(body)) + body


RECORDING_HEADER = b"SWTRACE\0" + struct.pack("<HHI", 1, 16, 0)
# format version 2: samples may add to and name the recording's stack table
RECORDING_HEADER_TABLE = b"SWTRACE\0" + struct.pack("<HHI", 2, 16, 0)
BASE = 0x400000


def m_hello(max_depth=4096):
    return msg(1, b"SWAG" + uleb(1) + uleb(1) + wstr("test") + wstr("x86_64") + wstr("") +
               wstr("") + wstr("hostile") + wstr("") + uleb(4242) + uleb(1) + uleb(1) +
               uleb(0) + uleb(0) + uleb(15) + uleb(250) + uleb(1000) + uleb(0) +
               uleb(max_depth))


def m_image(index, load=BASE, size=0x1000000, path="/nonexistent/app"):
    return msg(2, uleb(index) + uleb(load) + uleb(0) + uleb(size) + uleb(0) + uleb(0) +
               wstr(path) + wstr("x86_64"))


def m_begin(sid, tid=1, start=None):
    """A stall begins at start (agent ticks: ns), sid * 1,000,000 unless given."""
    start = sid * 1000000 if start is None else start
    return msg(4, uleb(sid) + uleb(tid) + uleb(start) + uleb(start) + wstr("poll"))


def m_end(sid, n, end=None, duration=500000000):
    """A stall of n sampling rounds ends at end, sid * 1,000,000 + 500,000 unless given."""
    end = sid * 1000000 + 500000 if end is None else end
    return msg(5, uleb(sid) + uleb(end) + uleb(duration) + uleb(0) + uleb(n) + uleb(0))


def m_sample(sid, t, tid, frames, time=None):
    """frames leaf first, at time, sid * 1,000,000 + t unless given."""
    time = sid * 1000000 + t if time is None else time
    body = uleb(sid) + uleb(time) + uleb(tid) + uleb(0) + uleb(len(frames))
    last = 0
    for f in frames:
        body += sleb(f - last)
        last = f
    return msg(6, body)


def m_sample_ref(sid, t, tid, frames, shared, prev):
    """frames leaf first; the shared root-end frames are those of prev, the thread's last."""
    depth = len(frames)
    body = (uleb(sid) + uleb(sid * 1000000 + t) + uleb(tid) + uleb(0x200) + uleb(depth) +
            uleb(shared))
    last = 0
    for i, f in enumerate(frames[:depth - shared]):
        from_root = depth - 1 - i
        base = prev[len(prev) - 1 - from_root] if from_root < len(prev) else last
        body += sleb(f - base)
        last = f
    return msg(6, body)


class StackTable:
    """The writer's side of a version 2 recording's stack table (stallwatch-format(5))."""

    def __init__(self):
        self.entries = {}

    def m_sample(self, sid, tid, frames, time):
        """frames leaf first: named when the table has them, else whole and added."""
        key = tuple(frames)
        head = uleb(sid) + uleb(time) + uleb(tid)
        if key in self.entries:
            return msg(6, head + uleb(0x2000) + uleb(len(frames)) + uleb(self.entries[key]))
        self.entries[key] = len(self.entries)
        body = head + uleb(0x1000) + uleb(len(frames))
        last = 0
        for f in frames:
            body += sleb(f - last)
            last = f
        return msg(6, body)


def m_image_removed(index):
    return msg(3, uleb(index))


def m_hint(image, offset, name=None, size=4):
    """A symbol the agent read from memory: name (hint_OFFSET) over size bytes at offset."""
    name = "hint_%x" % offset if name is None else name
    return msg(8, uleb(image) + uleb(offset) + uleb(size) + wstr(name))


def m_goodbye():
    return msg(9, uleb(0) + wstr("exit"))
