#!/usr/bin/env python3
"""Replays the recordings earlier agents made (tests/data/recordings/) with
`stallwatch report`, so that the command keeps reading every earlier
protocol.  What is checked comes from elsewhere than the command's output:

- recordings.json, written from the commands that made the recordings:
  how many stalls, their kind, how long each step took, and the functions
  the app's source calls for it, root first;
- the symbols `nm` finds in the recorded binaries (bin/): every app frame
  of the heaviest path the command prints must be the function nm places
  at its address, and the heaviest raw stack, symbolicated with nm here,
  must hold the expected call chain;
- every output format parses (JSON, speedscope, the folded lines, the
  gzip'd pprof protobuf, the text trees) and agrees on the stall count;
- the same recording claiming a newer agent protocol, or a newer file
  format, is refused with a message that says it is newer.

usage: test-recordings.py STALLWATCH RECORDINGS_DIR
"""
import bisect
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from swtest import check, failures, pb_fields

exe, data = sys.argv[1:3]
bindir = os.path.join(data, "bin")


def report(*args):
    p = subprocess.run([exe, "report", "--color=never", "--min-percent", "0", "-S", bindir]
                       + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode()


def in_order(names, chain):
    it = iter(names)
    return all(any(n == c for n in it) for c in chain)


class Symbols:
    """The function symbols of one ELF file, as nm lists them."""

    def __init__(self, nm, path):
        out = subprocess.run([nm, "--defined-only", "-S", path], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        syms = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "tTwW":
                syms.append((int(f[0], 16), int(f[1], 16), f[3]))
        syms.sort()
        self.starts = [s[0] for s in syms]
        self.syms = syms

    def at(self, vaddr):
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i >= 0 and vaddr < self.syms[i][0] + self.syms[i][1]:
            return self.syms[i][2]
        return None


def nm_name(symbols, images, address, leaf):
    """The function at a frame's address in one of bin/'s images, else None."""
    for im in images:
        base = os.path.basename(im["path"])
        start = int(im["load_address"], 16)
        if base in symbols and start <= address < start + im["text_size"]:
            pc = address if leaf else address - 1  # a return address is past its call
            return symbols[base].at(pc - start + int(im["text_vmaddr"], 16))
    return None


def check_ndjson(name, want, symbols):
    rc, out, err = report("--format", "ndjson", os.path.join(data, name))
    check(rc == 0, "%s: report --format ndjson exited %d: %s" % (name, rc, err))
    objs = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    stalls = [o for o in objs if o["type"] == "stall"]
    check(len(stalls) == len(want["stalls"]),
          "%s: %d stalls, the command made %d" % (name, len(stalls), len(want["stalls"])))
    for st, w in zip(stalls, want["stalls"]):
        what = "%s #%s (%s)" % (name, st["id"], w["step"])
        check(st["kind"] == w["kind"], "%s: kind %s, want %s" % (what, st["kind"], w["kind"]))
        # the step itself takes its time; the loop iteration around it a little more
        check(w["ms"] * 0.98 <= st["duration_ms"] <= w["ms"] + 250,
              "%s: %.1f ms for a %d ms step" % (what, st["duration_ms"], w["ms"]))
        main = [s for s in st["stacks"] if s["thread"] == st["thread"]]
        counted = sum(s["count"] for s in main)
        check(counted == st["samples"] > 0, "%s: %d samples, stacks count %d"
              % (what, st["samples"], counted))
        check(st["samples"] * st["interval_ms"] <= st["duration_ms"] + st["interval_ms"],
              "%s: %d samples every %.1f ms in %.1f ms" % (what, st["samples"], st["interval_ms"],
                                                          st["duration_ms"]))
        # agents since the late samples say how many there were; older ones say nothing
        late = (st["late_rounds"], st["late_ms"])
        if want.get("late_fields"):
            times = st["sample_times_ms"]
            gaps = sum(b - a for a, b in zip(times, times[1:]) if b - a > st["interval_ms"])
            check(isinstance(late[0], int) and isinstance(late[1], (int, float))
                  and late[1] <= gaps + 0.01,
                  "%s: late samples %s, with %.1f ms of gaps over an interval" % (what, late, gaps))
        else:
            check(late == (None, None), "%s: an older agent's late samples %s" % (what, late))
        # the command's heaviest path: its app frames are nm's functions, in the chain's order
        app = [f for f in st["heaviest"] if f["image"] in symbols]
        for f in app:
            got = nm_name(symbols, st["images"], int(f["address"], 16), f is st["heaviest"][-1])
            check(got == f["symbol"], "%s: %s at %s, nm says %s" % (what, f["symbol"],
                                                                     f["address"], got))
        check(in_order([f["symbol"] for f in app], w["chain"]),
              "%s: heaviest path %s lacks %s" % (what, [f["symbol"] for f in app], w["chain"]))
        # the most frequent raw stack, symbolicated here, holds the chain too
        top = max(main, key=lambda s: s["count"])
        frames = [int(a, 16) for a in top["frames"]]
        names = [nm_name(symbols, st["images"], a, i == 0) for i, a in enumerate(frames)]
        names = [n for n in reversed(names) if n]
        check(in_order(names, w["chain"]), "%s: top stack %s lacks %s" % (what, names, w["chain"]))
    summary = [o for o in objs if o["type"] == "summary"]
    check(len(summary) == 1 and summary[0]["stalls"] == len(stalls),
          "%s: summary %s" % (name, summary))

    rc, out, err = report("--format", "ndjson", "--thread", "all", os.path.join(data, name))
    objs = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    threads = max((len(o.get("threads", [])) for o in objs if o["type"] == "stall"), default=0)
    check(rc == 0 and threads >= want["threads"],
          "%s: --thread all shows %d threads, the app had %d" % (name, threads, want["threads"]))
    return stalls


def folded_lines(text):
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(.+) (\d+)$", line)
        if check(m is not None, "folded line %r" % line):
            lines.append((m.group(1).split(";"), int(m.group(2))))
    return lines


def check_formats(name, stalls, want):
    path = os.path.join(data, name)
    n = len(want["stalls"])
    chains = [w["chain"] for w in want["stalls"]]
    outs = {}
    for fmt in ["tree", "sample", "folded", "json", "speedscope", "pprof"]:
        rc, out, err = report("--format", fmt, path)
        check(rc == 0 and out, "%s: report --format %s exited %d: %s" % (name, fmt, rc, err))
        outs[fmt] = out

    # tree: one header per stall with its duration, then its call tree
    text = outs["tree"].decode()
    heads = re.findall(r"^#(\d+)  ([\d.]+) ms  (\w+)  ", text, re.M)
    check(len(heads) == n, "%s tree: %d stall headers, want %d" % (name, len(heads), n))
    for (num, ms, kind), st in zip(heads, stalls):
        check(abs(float(ms) - st["duration_ms"]) < 0.1 and kind == st["kind"],
              "%s tree: #%s %s ms %s, ndjson says %.1f %s" % (name, num, ms, kind,
                                                             st["duration_ms"], st["kind"]))
    for i, chain in enumerate(chains, 1):
        words = [l.split()[-2] for l in text.splitlines()
                 if l.startswith("#%d " % i) and len(l.split()) > 5]
        check(in_order(words, chain), "%s tree: #%d lacks %s" % (name, i, chain))

    # sample: Instruments' "Stall #N:" blocks
    text = outs["sample"].decode()
    check(len(re.findall(r"^Stall #\d+:", text, re.M)) == n, "%s sample: stall count" % name)
    for chain in chains:
        check(all(" %s  (in " % f in text for f in chain), "%s sample: lacks %s" % (name, chain))

    # folded: "label;frames... weight", the weights of a stall (microseconds,
    # stallwatch-output(7)) add up to its sampled time
    lines = folded_lines(outs["folded"].decode())
    labels = sorted({f[0] for f, _ in lines})
    check(len(labels) == n, "%s folded: stalls %s" % (name, labels))
    for i, (chain, st) in enumerate(zip(chains, stalls), 1):
        mine = [(f, w) for f, w in lines if f[0] == "#%d" % i]
        total = sum(w for _, w in mine)
        check(abs(total - st["sampled_ms"] * 1e3) <= st["sampled_ms"] * 10 + len(mine),
              "%s folded: #%d weighs %d us, sampled %.1f ms" % (name, i, total, st["sampled_ms"]))
        heavy = max(mine, key=lambda fw: fw[1])[0] if mine else []
        check(in_order(heavy, chain), "%s folded: #%d heaviest %s lacks %s" % (name, i, heavy,
                                                                               chain))

    # json and speedscope: JSON documents with one entry per stall
    doc = json.loads(outs["json"])
    check(len(doc.get("stalls", [])) == n, "%s json: stall count" % name)
    doc = json.loads(outs["speedscope"])
    check(len(doc.get("profiles", [])) == n, "%s speedscope: profile count" % name)
    frame_names = {f["name"] for f in doc.get("shared", {}).get("frames", [])}
    check(all(f in frame_names for c in chains for f in c), "%s speedscope: frames" % name)

    # pprof: a gzip'd Profile whose samples (field 2) exist and whose string
    # table (field 6) names the chain's functions
    try:
        fields = list(pb_fields(gzip.decompress(outs["pprof"])))
        strings = {v.decode() for f, wt, v in fields if f == 6 and wt == 2}
        check(sum(1 for f, _, _ in fields if f == 2) > 0, "%s pprof: no samples" % name)
        check(all(f in strings for c in chains for f in c), "%s pprof: string table" % name)
    except (OSError, ValueError, IndexError, UnicodeDecodeError) as e:
        check(False, "%s pprof does not parse: %s" % (name, e))


def main():
    nm = shutil.which("nm") or shutil.which("llvm-nm")
    if not nm:
        print("SKIP: no nm on PATH to read the recorded binaries' symbols")
        return 77
    manifest = json.load(open(os.path.join(data, "recordings.json")))["recordings"]
    symbols = {f: Symbols(nm, os.path.join(bindir, f)) for f in sorted(os.listdir(bindir))}
    total = 0
    for name, want in sorted(manifest.items()):
        with open(os.path.join(data, name), "rb") as f:
            version = int.from_bytes(f.read(10)[8:10], "little")
        # the -table ones are of format 2, written through the stack table
        want_version = want.get("format", 2 if name.endswith("-table.swtrace") else 1)
        check(version == want_version, "%s: recording format %d" % (name, version))
        stalls = check_ndjson(name, want, symbols)
        check_formats(name, stalls, want)
        total += len(want["stalls"])
        print("%s: %d stalls replayed" % (name, len(stalls)))

    # all of them at once: ids qualified by the file, one summary
    rc, out, err = report("--format", "ndjson", *[os.path.join(data, n) for n in sorted(manifest)])
    objs = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    labels = [o["label"] for o in objs if o["type"] == "stall"]
    check(rc == 0 and len(labels) == total and all("#" in l and l[0] != "#" for l in labels),
          "several recordings: exit %d, labels %s" % (rc, labels))

    # a newer agent or recording format is named as newer, not misread
    with open(os.path.join(data, "stalls.swtrace"), "rb") as f:
        orig = f.read()
    tmp = tempfile.mkdtemp(prefix="sw-recordings-")
    for what, data_ in [("agent", orig.replace(b"SWAG\x01", b"SWAG\x7f", 1)),
                        ("format", orig[:8] + b"\x7f" + orig[9:])]:
        path = os.path.join(tmp, "newer-%s.swtrace" % what)
        with open(path, "wb") as f:
            f.write(data_)
        rc, out, err = report(path)
        check(rc == 5 and "newer" in err and "127" in err and "upgrade" in err,
              "newer %s: exit %d, %r" % (what, rc, err))
    shutil.rmtree(tmp)

    # the recordings found in the directory are the ones described
    found = sorted(f for f in os.listdir(data) if f.endswith(".swtrace"))
    check(found == sorted(manifest), "recordings %s, described %s" % (found, sorted(manifest)))
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
