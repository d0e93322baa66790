#!/usr/bin/env python3
"""Every input's cost is bounded by its size (issue 11, item 10).

    test-bounds.py STALLWATCH GEN-RECORDING CASE

Each hostile file runs within 256 MiB + 20 x its size and 2 s + 1 s per MB
of CPU time, and 1 s more per 256 MiB it prints (report may print that
much, its output limit, from a small file), faulting in at most 8 x its peak
memory (memory given back and taken again for each stall costs CPU time in
the kernel, most of it on a machine in use); beyond a documented limit, `symbolicate` stops with one line
and exit status 5, and a C++ name whose demangling would explode is printed
mangled.  Cases:

- stacks: a recording of 400k distinct stacks in one stall takes at most
  8 x the time of one with 100k (the grouping of stacks was quadratic,
  which would take 16 x; linear work takes 4 x, somewhat more where the
  larger tables leave the caches);
- elf: an ELF whose compressed .debug_info inflates to 1 GiB;
- cxx: a 300-byte C++ name whose demangling doubles with each nested
  template argument, through `demangle` and through `symbolicate`;
- limits: a line of `symbolicate`'s input past its limit, and
  recordings past each limit of stallwatch-report(1) LIMITS:
  `report` prints the stalls before the one past it, then one line naming
  the limit, the file and the byte, and exits 5; `attach`, given the same
  messages by an agent, warns once and goes on, its status unchanged;
- shared: recordings whose samples share frames with the sample before
  (deep stacks, each a new leaf on a long common root: one stall, and 64
  open at once, and one just below the limit), which expand far beyond
  their size: `report` in every format within the bounds above, or stopped
  at a limit in one line;
- images: 8192 images and 200,000 samples spread over them: every frame's
  image is found within the bounds;
- shared-render: the same for 40,000 copies of one 4096-deep stack and 400
  deep stalls in a row, which the collector holds in little memory but
  whose output (per-sample formats, trees indented by depth) grows with
  depth x samples.

Exit 77 means skipped.
"""
import json
import os
import re
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import zlib

from swtest import (BASE, RECORDING_HEADER, check, failures, m_begin, m_end, m_goodbye, m_hello,
                    m_hint, m_image, m_sample, m_sample_ref)

MiB = 1 << 20


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


# CPU time a run may take per byte it prints, besides what it reads
CPU_PER_OUTPUT_BYTE = 1.0 / (256 * MiB)
# pages a run may fault in, per page of its peak memory
FAULTS_PER_PEAK_PAGE = 8


def run_own(args, size, what):
    cpu_max = 2.0 + size / 1e6
    rss_max = 256 * MiB + 20 * size
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        resource.setrlimit(resource.RLIMIT_CPU, (int(3 * cpu_max) + 1, int(3 * cpu_max) + 1))
        os.dup2(out_f.fileno(), 1)
        os.dup2(err_f.fileno(), 2)
        try:
            os.execv(args[0], args)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    out_f.seek(0)
    err_f.seek(0)
    out = out_f.read().decode("utf-8", "replace")
    err = err_f.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    cpu_max += len(out) * CPU_PER_OUTPUT_BYTE
    cpu = ru.ru_utime + ru.ru_stime
    rss = ru.ru_maxrss * 1024
    faults = ru.ru_minflt / (rss / resource.getpagesize())
    print("%s: %.2f s cpu (bound %.2f), %.0f MiB (bound %.0f), %.1f x its peak faulted in"
          " (bound %d), exit %d"
          % (what, cpu, cpu_max, rss / MiB, rss_max / MiB, faults, FAULTS_PER_PEAK_PAGE, code))
    check(cpu <= cpu_max, "%s: %.2f s of CPU > %.2f s" % (what, cpu, cpu_max))
    check(rss <= rss_max, "%s: %.0f MiB > %.0f MiB" % (what, rss / MiB, rss_max / MiB))
    check(faults <= FAULTS_PER_PEAK_PAGE, "%s: %d page faults, %.1f x its peak of %.0f MiB"
          % (what, ru.ru_minflt, faults, rss / MiB))
    return code, out, err, cpu


def case_stacks(stallwatch, gen, d):
    # Sizes far enough apart, and runs long enough, that fixed costs and the
    # clock's grain do not decide the ratio: 50k against 100k took 0.07 and
    # 0.23 s on a busy machine, 3.3 x, although the work is linear.
    small, large = 100000, 400000
    times = {}
    for n in (small, large):
        rec = os.path.join(d, "stacks-%d.swtrace" % n)
        # n samples, n distinct stacks of 4 frames, one stall
        subprocess.run([gen, rec, str(n), str(n), "4", "20", str(n)], check=True)
        size = os.path.getsize(rec)
        best = None
        for _ in range(3):  # the best of three runs: the machine is shared
            code, out, err, cpu = run_own([stallwatch, "report", "--format", "tree", rec],
                                          size, "report of %d distinct stacks" % n)
            check(code == 0, "report of %d stacks exits %d: %s" % (n, code, err[-300:]))
            best = cpu if best is None else min(best, cpu)
        times[n] = best
    ratio = times[large] / max(times[small], 0.01)
    print("%dk / %dk distinct stacks: %.2f x (bound 8; linear 4, quadratic 16)"
          % (large // 1000, small // 1000, ratio))
    check(ratio <= 8 or times[large] < 0.2,
          "%dk distinct stacks take %.2f x the time of %dk"
          % (large // 1000, ratio, small // 1000))


def elf_with_section(path, name, data, flags):
    """A minimal ELF64 relocatable file with one extra section."""
    import struct
    shstr = b"\0" + name + b"\0.shstrtab\0"
    ehsize, shentsize = 64, 64
    off_data = ehsize
    off_shstr = off_data + len(data)
    off_sh = (off_shstr + len(shstr) + 7) & ~7
    sh = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
          struct.pack("<IIQQQQIIQQ", 1, 1, flags, 0, off_data, len(data), 0, 0, 1, 0),
          struct.pack("<IIQQQQIIQQ", 1 + len(name) + 1, 3, 0, 0, off_shstr, len(shstr), 0, 0,
                      1, 0)]
    eh = (b"\x7fELF\x02\x01\x01" + b"\0" * 9 +
          struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, off_sh, 0, ehsize, 0, 0, shentsize,
                      len(sh), 2))
    with open(path, "wb") as f:
        f.write(eh)
        f.write(data)
        f.write(shstr)
        f.write(b"\0" * (off_sh - off_shstr - len(shstr)))
        for s in sh:
            f.write(s)


def case_elf(stallwatch, gen, d):
    import struct
    size = 1 << 30
    z = zlib.compressobj(9)
    chunk = bytes(16 * MiB)
    parts = [z.compress(chunk) for _ in range(size // len(chunk))]
    stream = b"".join(parts) + z.flush()
    # Elf64_Chdr: ch_type 1 (zlib), reserved, ch_size, ch_addralign
    data = struct.pack("<IIQQ", 1, 0, size, 1) + stream
    path = os.path.join(d, "bomb.o")
    elf_with_section(path, b".debug_info", data, 0x800)  # SHF_COMPRESSED
    fsize = os.path.getsize(path)
    print("elf: %d bytes inflating to %d" % (fsize, size))
    code, out, err, _ = run_own([stallwatch, "symbolicate", "-e", path, "0x10"], fsize,
                                "symbolicate on a 1 GiB compressed section")
    lines = [l for l in err.splitlines() if l.strip()]
    check(code == 5, "symbolicate on the bomb exits %d, expected 5" % code)
    check(len(lines) == 1 and "limit" in lines[0],
          "symbolicate names the limit in one line, got %r" % lines)


def cxx_name(levels):
    """f(A, B<A, A>, B<B<A, A>, B<A, A> >, ...): each argument doubles the last."""
    def sub(i):
        digits = ""
        while True:
            digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 36] + digits
            i //= 36
            if not i:
                break
        return "S" + digits + "_"
    s = "_Z1f1A1BIS_S_E"
    for k in range(1, levels):
        s += "S0_I%s%sE" % (sub(k), sub(k))
    return s


def case_cxx(stallwatch, gen, d):
    name = cxx_name(27)
    print("name: %d bytes" % len(name))
    code, out, err, _ = run_own([stallwatch, "demangle", name], len(name),
                                "demangle of an exploding name")
    check(code == 0, "demangle exits %d: %s" % (code, err[-300:]))
    check(out.strip() == name, "the exploding name is printed mangled (%d bytes out)" % len(out))
    # a small name of the same shape still demangles
    code, out, _, _ = run_own([stallwatch, "demangle", cxx_name(2)], 30, "demangle of a small one")
    check(out.strip() == "f(A, B<A, A>, B<B<A, A>, B<A, A> >)",
          "a small name of that shape demangles, got %r" % out.strip())
    cc = shutil.which(os.environ.get("SW_CC", "cc")) or shutil.which("cc")
    if not cc:
        print("no C compiler: symbolicate part skipped")
        return
    obj = os.path.join(d, "name.o")
    src = ".text\n.globl %s\n.type %s,@function\n%s:\n ret\n.size %s,1\n" % ((name,) * 4)
    r = subprocess.run([cc, "-c", "-x", "assembler", "-", "-o", obj], input=src, text=True,
                       capture_output=True)
    if r.returncode != 0:
        print("cannot assemble the fixture: symbolicate part skipped:", r.stderr)
        return
    code, out, err, _ = run_own([stallwatch, "symbolicate", "-e", obj, "0x0"],
                                os.path.getsize(obj), "symbolicate of an exploding name")
    check(code == 0, "symbolicate exits %d: %s" % (code, err[-300:]))
    check(name in out, "symbolicate prints the exploding name mangled: %r" % out[:200])


def plain_stall(sid, n=3):
    return (m_begin(sid) + b"".join(m_sample(sid, k, 1, [BASE + 0x100 + k, BASE + 0x50])
                                    for k in range(n)) + m_end(sid, n))


def fake_agent(path, messages):
    """An agent on a unix socket that sends messages (a hello first) and leaves."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        conn.settimeout(10)
        try:
            conn.sendall(messages + m_goodbye())
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):
                pass
        except OSError:
            pass
        conn.close()
        srv.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    return th


# Each limit: (name, what the one line names, messages past it).  Every
# recording holds stall 1 before the limit and stall 99 after it.
def past_open_stalls():
    return b"".join(m_begin(s) for s in range(100, 165)) + b"".join(
        m_end(s, 0) for s in range(100, 165))


def past_images():
    return b"".join(m_image(i, BASE + (i + 1) * 0x2000000, 0x1000, "/nonexistent/lib%d" % i)
                    for i in range(1, 8193))


def past_hints():
    # from the highest offset down: each one lands before all that came
    return b"".join(m_hint(0, 0x10 + 16 * k) for k in range(65537, 0, -1))


def past_threads():
    return (m_begin(50) + b"".join(m_sample(50, k, 1000 + k, [BASE + 0x100, BASE + 0x50])
                                   for k in range(4097)) + m_end(50, 4097))


LIMITS = [("open stalls", "64", past_open_stalls),
          ("images", "8192", past_images),
          ("symbol hints", "65536", past_hints),
          ("threads", "4096", past_threads)]


def summary_stalls(ndjson):
    for line in ndjson.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("type") == "summary":
            return o.get("stalls")
    return None


def stall_ids(ndjson):
    import json
    ids = []
    for line in ndjson.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("type") == "stall":
            ids.append(o.get("id"))
    return ids


def limit_lines(err):
    return [l for l in err.splitlines() if "limit" in l]


def case_limits(stallwatch, gen, d):
    # symbolicate: a line of standard input past its limit, after one answered
    data = ("0x10\n" + "a" * 1100000 + "\n").encode()
    r = subprocess.run([stallwatch, "symbolicate", "-e", stallwatch], input=data,
                       capture_output=True, timeout=60)
    err = r.stderr.decode("utf-8", "replace")
    lines = [l for l in err.splitlines() if l.strip()]
    check(r.returncode == 5, "symbolicate past the line limit exits %d, want 5" % r.returncode)
    check(len(lines) == 1 and "1048575" in lines[0] and "line 2" in lines[0],
          "symbolicate names the line limit and the line in one line: %r" % lines)
    check(r.stdout.count(b"\n\n") == 1, "symbolicate answered the line before the limit")
    for name, number, past in LIMITS:
        body = m_hello() + m_image(0) + plain_stall(1) + past() + plain_stall(99)
        rec = os.path.join(d, "past-%s.swtrace" % name.replace(" ", "-"))
        with open(rec, "wb") as f:
            f.write(RECORDING_HEADER + body)
        size = os.path.getsize(rec)
        code, out, err, _ = run_own([stallwatch, "report", "--format", "ndjson", rec], size,
                                    "report past the limit of %s" % name)
        lines = limit_lines(err)
        check(code == 5, "report past the limit of %s exits %d, want 5" % (name, code))
        check(len(lines) == 1, "report past the limit of %s: %d lines name a limit: %r"
              % (name, len(lines), lines))
        if lines:
            check(number in lines[0] and os.path.basename(rec) in lines[0] and
                  "byte" in lines[0],
                  "the line names the limit (%s), the file and the byte: %r"
                  % (number, lines[0]))
        check(1 in stall_ids(out), "report past the limit of %s prints stall 1 before it"
              % name)
        check(summary_stalls(out) == len(stall_ids(out)),
              "report past the limit of %s: the summary counts %s stalls, %d printed"
              % (name, summary_stalls(out), len(stall_ids(out))))

        sock = os.path.join(d, "agent.sock")
        th = fake_agent(sock, body)
        r = subprocess.run([stallwatch, "attach", "--connect", "unix:" + sock, "--format",
                            "ndjson"], capture_output=True, text=True, timeout=60)
        th.join(5)
        os.unlink(sock)
        lines = limit_lines(r.stderr)
        check(r.returncode == 0, "attach past the limit of %s exits %d, want 0: %s"
              % (name, r.returncode, r.stderr[-300:]))
        check(len(lines) == 1, "attach past the limit of %s warns %d times: %r"
              % (name, len(lines), lines[:3]))
        if lines:
            check(number in lines[0], "attach's warning names the limit (%s): %r"
                  % (number, lines[0]))
        check(99 in stall_ids(r.stdout),
              "attach goes on past the limit of %s: stall 99 is printed" % name)
        check(summary_stalls(r.stdout) == len(stall_ids(r.stdout)),
              "attach past the limit of %s: the summary counts %s stalls, %d printed"
              % (name, summary_stalls(r.stdout), len(stall_ids(r.stdout))))



def deep_stall(sid, tid, depth, n, leaves, prev=None):
    """n samples of one thread, each a new leaf (of leaves) on the same depth - 1 root frames."""
    root = [BASE + 0x100000 + 0x40 * k for k in range(depth)]
    out = bytearray()
    for i in range(n):
        stack = [BASE + 0x10 + (i % leaves) * 4] + root[1:]
        if prev is None:
            out += m_sample(sid, i, tid, stack)
        else:
            out += m_sample_ref(sid, i, tid, stack, depth - 1, prev)
        prev = stack
    return bytes(out), prev


def shape_one_deep():
    # one stall: 28,000 samples 4096 deep, each a new leaf on the same root
    s, _ = deep_stall(1, 1, 4096, 28000, 28000)
    return m_begin(1) + s + m_end(1, 28000)


def shape_below_limit():
    # one stall of 1000 samples 4096 deep, each a new leaf: just below the
    # limit of frames in distinct stacks (4194304), so printed in full
    s, _ = deep_stall(1, 1, 4096, 1000, 1000)
    return m_begin(1) + s + m_end(1, 1000)


def shape_same_stack():
    # one stall: 40,000 samples of the same 4096-deep stack
    root = [BASE + 0x100000 + 0x40 * k for k in range(4096)]
    s = m_sample(1, 0, 1, root) + b"".join(m_sample_ref(1, i, 1, root, 4096, root)
                                           for i in range(1, 40000))
    return m_begin(1) + s + m_end(1, 40000)


def shape_open_deep():
    # 64 stalls open at once, 600 deep samples each, every one its own thread
    out = bytearray(b"".join(m_begin(s, s) for s in range(1, 65)))
    prev = {}
    for i in range(600):
        for s in range(1, 65):
            part, prev[s] = deep_stall(s, s, 4096, 1, 1, prev.get(s))
            # a different leaf each time: shift the leaf by the round
            out += part if i == 0 else m_sample_ref(
                s, i, s, [BASE + 0x10 + 4 * i] + prev[s][1:], 4095, prev[s])
            prev[s] = [BASE + 0x10 + 4 * i] + prev[s][1:] if i else prev[s]
    out += b"".join(m_end(s, 600) for s in range(1, 65))
    return bytes(out)


def shape_many_stalls():
    # 400 stalls one after another, 100 deep-shared samples each
    out = bytearray()
    prev = None
    for s in range(1, 401):
        part, prev = deep_stall(s, 1, 4096, 100, 100, prev)
        out += m_begin(s) + part + m_end(s, 100)
    return bytes(out)


FORMATS = ["tree", "sample", "ndjson", "json", "folded", "speedscope", "pprof"]


def case_shared(stallwatch, gen, d,
                shapes=(shape_below_limit, shape_one_deep, shape_open_deep)):
    for shape in shapes:
        rec = os.path.join(d, shape.__name__ + ".swtrace")
        with open(rec, "wb") as f:
            f.write(RECORDING_HEADER + m_hello() + m_image(0) + shape())
        size = os.path.getsize(rec)
        print("%s: %d bytes" % (shape.__name__, size))
        for fmt in FORMATS:
            code, out, err, _ = run_own([stallwatch, "report", "--format", fmt, rec], size,
                                        "%s as %s" % (shape.__name__, fmt))
            # a forked child's peak size counts this process's pages: drop
            # hundreds of MB of output before the next run
            out = None
            lines = limit_lines(err)
            check(code == 0 or (code == 5 and len(lines) == 1),
                  "%s as %s: exit %d, limit lines %r" % (shape.__name__, fmt, code, lines))
            if shape is shape_below_limit:
                check(code == 0, "%s as %s: exit %d: %s" % (shape.__name__, fmt, code, lines))


def case_images(stallwatch, gen, d):
    # 8192 images (the limit) and 200,000 samples whose frames are spread
    # over all of them: each frame is looked up among the images
    nimages, nsamples = 8192, 200000
    out = bytearray(RECORDING_HEADER + m_hello())
    for i in range(nimages):
        out += m_image(i, load=BASE + i * 0x10000, size=0x8000, path="/nonexistent/lib%d" % i)
    out += m_begin(1)
    for k in range(nsamples):
        # every address new: no memo of addresses seen before helps
        a = BASE + (k * 7919 % nimages) * 0x10000 + 0x40 + (k // nimages) * 0x100
        b = BASE + (k * 104729 % nimages) * 0x10000 + 0x80 + (k // nimages) * 0x100
        out += m_sample(1, k, 1, [a, b])
    out += m_end(1, nsamples)
    rec = os.path.join(d, "images.swtrace")
    with open(rec, "wb") as f:
        f.write(out)
    size = os.path.getsize(rec)
    print("images: %d bytes" % size)
    for fmt in ("folded", "tree"):
        code, out, err, _ = run_own([stallwatch, "report", "--format", fmt, "--min-percent",
                                     "0", rec], size, "8192 images as %s" % fmt)
        check(code == 0, "8192 images as %s: exit %d: %s" % (fmt, code, err[-300:]))
        if fmt == "tree":  # every frame was found in its image, named after it
            named = {l.rsplit("(", 1)[1].rstrip(")") for l in out.splitlines() if "(lib" in l}
            check(len(named) == nimages, "%d of %d images named" % (len(named), nimages))


def case_shared_render(stallwatch, gen, d):
    case_shared(stallwatch, gen, d, (shape_same_stack, shape_many_stalls))
    # Past the output limit (256 MiB and 64 bytes for every byte read) the
    # stalls printed before it stay whole: json is still one document,
    # ndjson whole lines; a second file is not read after it.
    rec = os.path.join(d, "shape_many_stalls.swtrace")
    size = os.path.getsize(rec)
    code, out, err, _ = run_own([stallwatch, "report", "--format", "json", rec, rec], 2 * size,
                                "two files past the output limit as json")
    lines = limit_lines(err)
    check(code == 5 and len(lines) == 1 and "stallwatch-report(1)" in lines[0],
          "output limit: exit %d, limit lines %r" % (code, lines))
    try:
        doc = json.loads(out)
        printed = len(doc["stalls"])
    except (ValueError, KeyError) as e:
        printed = 0
        check(False, "json past the output limit is not one document: %s" % e)
    check(0 < printed < 400 and len(out) > 256 * MiB,
          "output limit: %d stalls, %d bytes printed" % (printed, len(out)))
    check(all(s["label"].startswith("shape_many_stalls#") for s in doc["stalls"]),
          "output limit: stalls from the first file only")
    m = re.search(r"\(stall #(\d+)\)", lines[0] if lines else "")
    check(m is not None and int(m.group(1)) == printed,
          "the limit line names the last stall printed (%d): %r" % (printed, lines))


CASES = {"stacks": case_stacks, "elf": case_elf, "cxx": case_cxx, "limits": case_limits,
         "shared": case_shared, "shared-render": case_shared_render, "images": case_images}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print("usage: test-bounds.py STALLWATCH GEN-RECORDING %s" % "|".join(CASES),
              file=sys.stderr)
        sys.exit(2)
    d = tempfile.mkdtemp()
    try:
        CASES[sys.argv[3]](sys.argv[1], sys.argv[2], d)
    finally:
        shutil.rmtree(d)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
