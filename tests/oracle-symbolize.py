#!/usr/bin/env python3
"""Compares `stallwatch symbolicate` with llvm-symbolizer 14 on ELF fixtures.

The fixtures are built here from tests/data/symbolize/ by every compiler
found (gcc-12, clang-14, clang-19), with DWARF 4 and 5, -O0 and -O2,
compressed sections (SHF_COMPRESSED and .zdebug), a separate debug file
reached through --dsym, split DWARF (.dwo files, moved or missing, a .dwp
package, and clang's single mode, the split units left in the objects), and
freestanding builds for ELF32 and big-endian targets, a Rust program
when a rustc is found ($RUSTC), and a Go program built with cgo when a go
is on PATH.  The addresses asked are every function's first and last
instruction and every inline boundary, both found with llvm-objdump,
llvm-nm and llvm-dwarfdump (never with the reader under test), plus
random addresses in .text.  Both sides run with --no-demangle; our output
must equal the oracle's wherever the oracle has debug information.  On
stripped images every function must come out at its exact start (from the
unstripped symbol table) wherever .eh_frame has an FDE for it.  A large
input on a second run (the DWARF index and range table in place), which
two threads share, must be answered as on one processor and as without the
index.

usage: oracle-symbolize.py STALLWATCH SOURCE_DIR [--random N] [--keep DIR]
Exit status 77 (skipped) when llvm-symbolizer-14 is missing.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

from swtest import runs

LLVM = {
    "symbolizer": "llvm-symbolizer-14",
    "objdump": "llvm-objdump-14",
    "nm": "llvm-nm-14",
    "dwarfdump": "llvm-dwarfdump-14",
    "objcopy": "llvm-objcopy-14",
    "readelf": "llvm-readelf-14",
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def have(tool):
    return shutil.which(tool) is not None


def build(srcdir, out, cc, cxx, flags, ldflags=(), keep_objects=False):
    objs = []
    for src in ("main.c", "util.c", "cxx.cc"):
        comp = cxx if src.endswith(".cc") else cc
        obj = out + "." + src + ".o"
        run([comp, *flags, "-c", os.path.join(srcdir, src), "-o", obj])
        objs.append(obj)
    run([cxx, *flags, *ldflags, *objs, "-o", out])
    for o in objs if not keep_objects else ():
        os.unlink(o)


def build_freestanding(srcdir, out, target):
    run(["clang-19", "-target", target, "-O2", "-g", "-ffreestanding", "-nostdlib",
         "-fuse-ld=lld", "-static", os.path.join(srcdir, "freestanding.c"), "-o", out])


def functions(binary):
    """(name, start, size) of the sized function symbols, from llvm-nm."""
    funcs = []
    for line in run([LLVM["nm"], "-S", "--defined-only", binary]).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTW":
            funcs.append((parts[3], int(parts[0], 16), int(parts[1], 16)))
    return funcs


def instructions(binary):
    """Sorted instruction addresses of the executable sections, from llvm-objdump."""
    addrs = set()
    for line in run([LLVM["objdump"], "-d", "--no-show-raw-insn", binary]).splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+\S", line)
        if m:
            addrs.add(int(m.group(1), 16))
    return sorted(addrs)


def text_range(binary):
    for line in run([LLVM["objdump"], "-h", binary]).splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1] == ".text":
            return int(parts[3], 16), int(parts[2], 16)
    raise RuntimeError("no .text in " + binary)


def inline_ranges(binary):
    """[lo, hi) of every DW_TAG_inlined_subroutine, from llvm-dwarfdump."""
    ranges = []
    cur = None
    for line in run([LLVM["dwarfdump"], "--debug-info", binary]).splitlines():
        if "DW_TAG_" in line:
            cur = "inl" if "DW_TAG_inlined_subroutine" in line else None
            lo = None
            continue
        if cur != "inl":
            continue
        m = re.search(r"DW_AT_low_pc\s+\((0x[0-9a-f]+)\)", line)
        if m:
            lo = int(m.group(1), 16)
        m = re.search(r"DW_AT_high_pc\s+\((0x[0-9a-f]+)\)", line)
        if m and lo is not None:
            ranges.append((lo, int(m.group(1), 16)))
        m = re.search(r"\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)", line)
        if m:
            ranges.append((int(m.group(1), 16), int(m.group(2), 16)))
    return ranges


def addresses(binary, nrandom, rng):
    insns = instructions(binary)
    import bisect

    def before(a):
        i = bisect.bisect_left(insns, a)
        return insns[i - 1] if i > 0 else None

    def containing(a):
        i = bisect.bisect_right(insns, a)
        return insns[i - 1] if i > 0 else None

    picked = {}
    for name, start, size in functions(binary):
        picked[start] = "function start"
        last = containing(start + size - 1) if size else None
        if last is not None:
            picked.setdefault(last, "function last instruction")
    for lo, hi in inline_ranges(binary):
        for a, why in ((lo, "inline start"), (before(lo), "before inline"),
                       (containing(hi - 1), "inline last instruction"), (hi, "after inline")):
            if a is not None:
                picked.setdefault(a, why)
    start, size = text_range(binary)
    for _ in range(nrandom):
        picked.setdefault(start + rng.randrange(size), "random")
    return picked


def blocks(text):
    out = []
    for b in text.split("\n\n"):
        b = b.strip("\n")
        if b:
            out.append(b.split("\n"))
    return out


def symbolize(cmd, addrs):
    data = "".join("0x%x\n" % a for a in addrs)
    res = blocks(subprocess.run(cmd, input=data, check=True, capture_output=True,
                                text=True).stdout)
    if len(res) != len(addrs):
        raise RuntimeError("%s answered %d of %d addresses" % (cmd[0], len(res), len(addrs)))
    return res


def has_debug_info(block):
    return any(loc != "??:0:0" for loc in block[1::2])


class Tally:
    def __init__(self):
        self.compared = self.excluded = self.failed = 0
        self.reasons = {}


def compare(tally, label, sw, binary, picked, our_args=(), oracle_binary=None, both_args=(),
            symbolizer=None):
    addrs = sorted(picked)
    oracle = symbolize([symbolizer or LLVM["symbolizer"], "--no-demangle", *both_args, "-e",
                        oracle_binary or binary], addrs)
    ours = symbolize([sw, "symbolicate", "--no-demangle", *both_args, "-e", binary, *our_args],
                     addrs)
    seqs = line_sequences(oracle_binary or binary)
    import bisect
    los = [lo for lo, hi in seqs]

    def in_line_table(a):
        i = bisect.bisect_right(los, a)
        return any(lo <= a < hi for lo, hi in seqs[max(0, i - 4):i])

    bad = 0
    for a, o, s in zip(addrs, oracle, ours):
        if not in_line_table(a):
            tally.excluded += 1
            tally.reasons["not in any line table sequence"] = \
                tally.reasons.get("not in any line table sequence", 0) + 1
            continue
        if not has_debug_info(o):
            tally.excluded += 1
            tally.reasons["oracle has no debug info"] = \
                tally.reasons.get("oracle has no debug info", 0) + 1
            continue
        tally.compared += 1
        if o != s:
            bad += 1
            if bad <= 8:
                print("MISMATCH %s 0x%x (%s):\n  oracle: %s\n  ours:   %s" %
                      (label, a, picked[a], " | ".join(o), " | ".join(s)))
    tally.failed += bad
    print("%-40s %6d addresses, %6d compared, %d differ" %
          (label, len(addrs), sum(1 for a, o in zip(addrs, oracle)
                                   if has_debug_info(o) and in_line_table(a)), bad))


def fde_starts(binary):
    starts = set()
    for line in run([LLVM["dwarfdump"], "--eh-frame", binary]).splitlines():
        m = re.search(r"FDE .*pc=([0-9a-f]+)\.\.\.([0-9a-f]+)", line)
        if m:
            starts.add(int(m.group(1), 16))
    return starts


def line_sequences(binary):
    """[lo, hi) of every line table sequence, from llvm-dwarfdump --debug-line."""
    seqs, lo = [], None
    for line in run([LLVM["dwarfdump"], "--debug-line", binary]).splitlines():
        m = re.match(r"^0x([0-9a-f]{16})\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s*(.*)$", line)
        if not m:
            continue
        a = int(m.group(1), 16)
        if lo is None:
            lo = a
        if "end_sequence" in m.group(2):
            if lo < a:
                seqs.append((lo, a))
            lo = None
    return sorted(seqs)


def check_stripped(tally, label, sw, binary, workdir):
    stripped = os.path.join(workdir, os.path.basename(binary) + ".stripped")
    run([LLVM["objcopy"], "--strip-all", binary, stripped])
    fdes = fde_starts(binary)
    funcs = [f for f in functions(binary) if f[2] > 0]
    insns = instructions(binary)
    import bisect
    probes = []
    for name, start, size in funcs:
        if start not in fdes:
            tally.reasons["stripped: function without FDE"] = \
                tally.reasons.get("stripped: function without FDE", 0) + 1
            tally.excluded += 1
            continue
        i = bisect.bisect_right(insns, start + size - 1)
        probes.append((start, start, name))
        probes.append((insns[i - 1], start, name))
    data = "".join("0x%x\n" % p[0] for p in probes)
    out = subprocess.run([sw, "symbolicate", "--json", "-e", stripped], input=data, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    bad = 0
    for (addr, start, name), line in zip(probes, out):
        frame = json.loads(line)["frames"][0]
        got = int(frame.get("symbol_address", "0x0"), 16)
        tally.compared += 1
        if got != start:
            bad += 1
            if bad <= 8:
                print("STRIPPED MISMATCH %s 0x%x in %s: start 0x%x, ours %s" %
                      (label, addr, name, start, frame))
    tally.failed += bad
    print("%-40s %6d probes of %d functions, %d wrong starts" %
          (label + " stripped", len(probes), len(funcs), bad))


def check_shared(tally, label, sw, binary, workdir, rng):
    """A second run (the index in place) on a large input shares the work
    with a second thread when it may run on two processors: its answers,
    errors and exit status must be those of a run on one processor and of
    one without the index, for clean input, for input with blank lines and
    carriage returns among the addresses, and for input with a mistake far
    into it (everything before the mistake answered, nothing after)."""
    lo, size = text_range(binary)
    addrs = [lo + rng.randrange(size) for _ in range(30000)]
    addrs[100:200] = addrs[:100]  # repeated addresses
    clean = "".join("0x%x\n" % a for a in addrs)
    mixed = "".join(("0x%x\r\n" if i % 7 == 0 else "%x\n") % a +
                    ("\n" if i % 11 == 0 else "") for i, a in enumerate(addrs))
    lines = clean.splitlines(True)
    wrong = "".join(lines[:17000]) + "0xnot-an-address\n" + "".join(lines[17000:])
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(workdir, "cache-shared"))
    env.pop("STALLWATCH_NO_INDEX", None)
    cmd = [sw, "symbolicate", "--no-demangle", "-e", binary]

    def sym(data, prefix=(), extra=()):
        r = subprocess.run([*prefix, *cmd, *extra], input=data, capture_output=True, text=True,
                           env=env)
        return r.returncode, r.stdout, r.stderr

    sym(clean)  # the first run writes the index and the range table once it has answered
    index = os.path.join(workdir, "cache-shared", "stallwatch")
    for _ in range(200):
        if all(os.path.isdir(os.path.join(index, d)) and os.listdir(os.path.join(index, d))
               for d in ("dwarf", "symbols", "ranges")):
            break
        time.sleep(0.05)
    one_cpu = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    bad = 0
    for name, data in (("clean", clean), ("blank lines and CRs", mixed), ("a mistake", wrong)):
        shared = sym(data)
        for other, got in (("one processor", sym(data, one_cpu)),
                           ("no index", sym(data, extra=["--no-index"]))):
            tally.compared += 1
            if got != shared:
                bad += 1
                print("SHARED MISMATCH %s, %s input: two threads and %s differ: "
                      "status %d/%d, %d/%d lines, stderr %r/%r" %
                      (label, name, other, shared[0], got[0], shared[1].count("\n"),
                       got[1].count("\n"), shared[2][-200:], got[2][-200:]))
        answered = len(blocks(shared[1]))
        expect = 17000 if name == "a mistake" else len(addrs)
        if answered != expect or (name == "a mistake") != (shared[0] != 0):
            bad += 1
            print("SHARED %s, %s input: %d answers (expected %d), status %d: %s" %
                  (label, name, answered, expect, shared[0], shared[2][-200:]))
        if name == "a mistake" and "line 17001" not in shared[2]:
            bad += 1
            print("SHARED %s: the mistake is not named by its line: %s" % (label, shared[2]))
    tally.failed += bad
    print("%-40s %6d addresses, two threads, one and no index: %d differ (%d processors)" %
          (label + " shared", len(addrs), bad, len(os.sched_getaffinity(0))))


def split_build(srcdir, out, cc, cxx, flags):
    """build() with -gsplit-dwarf: the binary and the .dwo file of each object."""
    build(srcdir, out, cc, cxx, [*flags, "-gsplit-dwarf"])
    return sorted(out + "." + src + ".dwo" for src in ("main.c", "util.c", "cxx.cc"))


def check_split(tally, label, sw, srcdir, out, cc, cxx, flags, picked, workdir):
    """Split DWARF: .dwo files where the skeleton units say, the same files
    moved beside the binary, a package (.dwp) in their place, and one file
    missing: warned about, answered from the line table, and kept out of
    the caches, so that a run after it is found answers in full."""
    split = out + "-split"
    dwos = split_build(srcdir, split, cc, cxx, flags)
    # llvm-symbolizer 14 misses inlined calls in clang 19's split units
    # (their range lists); llvm-symbolizer 19 reads them, and is the oracle there
    oracle = "llvm-symbolizer-19" if cc == "clang-19" and have("llvm-symbolizer-19") else None
    if cc == "clang-19" and not oracle:
        print("%-40s skipped: no llvm-symbolizer-19" % (label + " -gsplit-dwarf"))
        return
    compare(tally, label + " -gsplit-dwarf", sw, split, picked, symbolizer=oracle)
    if cc.startswith("clang"):
        # clang's single mode: the split units stay in the objects, beside their skeletons
        single = out + "-single"
        build(srcdir, single, cc, cxx, [*flags, "-gsplit-dwarf=single"], keep_objects=True)
        compare(tally, label + " -gsplit-dwarf=single", sw, single, picked, symbolizer=oracle)
    addrs = sorted(picked)
    ours = symbolize([sw, "symbolicate", "--no-demangle", "--no-index", "-e", split], addrs)
    # the binary and its .dwo files moved together, out of the build tree
    moved = os.path.join(workdir, os.path.basename(split) + "-moved")
    os.makedirs(moved, exist_ok=True)
    shutil.copy(split, moved)
    for f in dwos:
        os.rename(f, os.path.join(moved, os.path.basename(f)))
    got = symbolize([sw, "symbolicate", "--no-demangle", "--no-index", "-e",
                     os.path.join(moved, os.path.basename(split))], addrs)
    bad = sum(1 for a, b in zip(ours, got) if a != b)
    tally.compared += len(addrs)
    print("%-40s %6d addresses, moved beside the binary: %d differ" %
          (label + " -gsplit-dwarf", len(addrs), bad))
    for f in dwos:
        os.rename(os.path.join(moved, os.path.basename(f)), f)
    # one .dwo missing: a warning naming it; the others still answer in full
    cache = os.path.join(workdir, "cache-split-" + os.path.basename(split))
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    env.pop("STALLWATCH_NO_INDEX", None)
    hidden = dwos[0] + ".hidden"
    os.rename(dwos[0], hidden)
    data = "".join("0x%x\n" % a for a in addrs)
    res = subprocess.run([sw, "symbolicate", "--no-demangle", "-e", split], input=data,
                         capture_output=True, text=True, env=env)
    partial = blocks(res.stdout)
    # nothing such a run reads can be kept: a second one forks no background
    # writer (it read the whole image again on every run, only to decline)
    if have("strace"):
        trace = os.path.join(workdir, "split.strace")
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=clone,clone3,fork,vfork", "-o",
                        trace, sw, "symbolicate", "--no-demangle", "-e", split], input=data,
                       capture_output=True, text=True, env=env)
        # a fork shares no memory: threads, and LeakSanitizer's tracer under
        # ASan, are clones with CLONE_VM
        forked = [l for l in open(trace) if re.search(r"clone|fork", l) and
                  "CLONE_VM" not in l]
        os.unlink(trace)
        if forked:
            bad += 1
            print("SPLIT %s: with %s missing, a second run forked: %s" %
                  (label, os.path.basename(dwos[0]), forked[0].strip()))
    else:
        print("%-40s no strace: the background writer is not checked" % (label + " -gsplit-dwarf"))
    os.rename(hidden, dwos[0])
    fewer = sum(1 for a, b in zip(ours, partial) if len(b) < len(a))
    if (res.returncode != 0 or dwos[0] not in res.stderr or "1 split unit not found" not in
            res.stderr or not fewer or len(partial) != len(addrs)):
        bad += 1
        print("SPLIT %s: with %s missing: status %d, %d of %d answers lost inlined calls, "
              "stderr %r" % (label, os.path.basename(dwos[0]), res.returncode, fewer,
                             len(addrs), res.stderr[-300:]))
    # what that run read went into no cache: now that the file is back, every answer is whole
    for _ in range(2):  # the first run writes the caches, the second reads them
        res = subprocess.run([sw, "symbolicate", "--no-demangle", "-e", split], input=data,
                             capture_output=True, text=True, env=env)
        if blocks(res.stdout) != ours or res.stderr:
            bad += 1
            print("SPLIT %s: after the missing file came back, the answers differ: %r" %
                  (label, res.stderr[-300:]))
        subprocess.run([sw, "symbolicate", "--no-index", "-e", split, "0"],
                       capture_output=True)  # lets the background writer finish
        time.sleep(0.5)
    print("%-40s %6d addresses, a .dwo missing (%d lose inlined calls) and back: %s" %
          (label + " -gsplit-dwarf", len(addrs), fewer, "ok" if not bad else "FAILED"))
    tally.failed += bad
    # a package in place of the .dwo files: llvm-symbolizer reads BINARY.dwp too
    dwp = next((t for t in ("llvm-dwp-19", "llvm-dwp-14") if have(t)), None)
    if dwp:
        # llvm-dwp 14 and 19 spin forever on gcc 12's DWARF 5 .dwo files (and
        # binutils' dwp crashes): those builds go without a package
        try:
            subprocess.run([dwp, "-e", split, "-o", split + ".dwp"], check=True,
                           capture_output=True, timeout=20)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            print("%-40s no package: %s fails on it (%s)" %
                  (label + " -gsplit-dwarf .dwp", dwp, type(e).__name__))
            return
        for f in dwos:
            os.rename(f, f + ".away")
        try:
            compare(tally, label + " -gsplit-dwarf .dwp", sw, split, picked, symbolizer=oracle)
        finally:
            for f in dwos:
                os.rename(f + ".away", f)
            os.unlink(split + ".dwp")


def check_rust(tally, sw, testdir, workdir, nrandom, rng):
    """A Rust program (tests/apps/stallapp.rs), against llvm-symbolizer 19.

    rustc's DWARF (namespaces, generics, std's units by the thousand) from
    the rustc that $RUSTC names (tests/find-compiler.py).  Only addresses
    in .text are asked: GNU ld leaves the DWARF of the functions it
    discarded from std's objects at address 0, where no code is and both
    readers answer something arbitrary.
    """
    rustc = os.environ.get("RUSTC", "")
    usable = bool(rustc) and runs(rustc)
    if not usable or not have("llvm-symbolizer-19"):
        print("rustc -O: skipped (%s)" % ("no llvm-symbolizer-19" if usable else
                                            "no rustc that runs for this user"))
        return
    out = os.path.join(workdir, "rust-stallapp")
    run([rustc, "-O", "-g", "-C", "symbol-mangling-version=v0", "-o", out,
         os.path.join(testdir, "apps", "stallapp.rs")])
    start, size = text_range(out)
    picked = {a: why for a, why in addresses(out, nrandom, rng).items()
              if start <= a < start + size}
    compare(tally, "rustc -O", sw, out, picked, symbolizer="llvm-symbolizer-19")


def check_go(tally, sw, testdir, workdir, nrandom, rng):
    """A Go program built with cgo (tests/apps/stallapp-cgo.go), against llvm-symbolizer 19.

    Go's linker writes its own DWARF (one unit per package, "." as every
    unit's folder, <autogenerated> wrappers, inlined calls), beside gcc's
    for the program's C; built with the go on PATH in a cache of its own.
    """
    go = shutil.which("go")
    usable = bool(go) and runs(go, "version") and subprocess.run(
        ["pkg-config", "--exists", "glib-2.0"]).returncode == 0
    if not usable or not have("llvm-symbolizer-19"):
        print("go build: skipped (%s)" % ("no llvm-symbolizer-19" if usable else
                                           "no go that runs for this user, or no glib-2.0"))
        return
    out = os.path.join(workdir, "go-stallapp")
    env = dict(os.environ, GOCACHE=os.path.join(workdir, "gocache"),
               GOPATH=os.path.join(workdir, "gopath"), GOPROXY="off", GOTOOLCHAIN="local",
               GOFLAGS="", CGO_ENABLED="1")
    run([go, "build", "-o", out, os.path.join(testdir, "apps", "stallapp-cgo.go")], env=env,
        cwd=workdir)
    start, size = text_range(out)
    picked = {a: why for a, why in addresses(out, nrandom, rng).items()
              if start <= a < start + size}
    compare(tally, "go build (cgo)", sw, out, picked, symbolizer="llvm-symbolizer-19")


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    sw, srcdir = os.path.abspath(args[0]), os.path.join(args[1], "tests", "data", "symbolize")
    nrandom, keep = 2000, None
    if "--random" in args:
        nrandom = int(args[args.index("--random") + 1])
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
    if not all(have(t) for t in LLVM.values()):
        print("SKIP: llvm 14 tools missing")
        return 77
    rng = random.Random(4)
    workdir = keep or tempfile.mkdtemp(prefix="sw-oracle-")
    os.makedirs(workdir, exist_ok=True)
    tally = Tally()
    compilers = [(c, x) for c, x in (("gcc-12", "g++-12"), ("clang-14", "clang++-14"),
                                     ("clang-19", "clang++-19")) if have(c) and have(x)]
    try:
        for cc, cxx in compilers:
            for dwarf in ("4", "5"):
                for opt in ("-O0", "-O2"):
                    label = "%s -gdwarf-%s %s" % (cc, dwarf, opt)
                    out = os.path.join(workdir, "%s-d%s%s" % (cc, dwarf, opt))
                    build(srcdir, out, cc, cxx, ["-g", "-gdwarf-" + dwarf, opt])
                    picked = addresses(out, nrandom, rng)
                    compare(tally, label, sw, out, picked)
                    if opt == "-O2":
                        check_stripped(tally, label, sw, out, workdir)
                    if opt == "-O2" and dwarf == "5":
                        # compressed sections, both kinds, and a separate debug file
                        gz = out + "-gz"
                        build(srcdir, gz, cc, cxx, ["-g", "-gdwarf-5", opt, "-gz=zlib"],
                              ["-Wl,--compress-debug-sections=zlib"])
                        compare(tally, label + " -gz", sw, gz, addresses(gz, nrandom, rng))
                        zd = out + "-zdebug"
                        run(["objcopy", "--compress-debug-sections=zlib-gnu", out, zd])
                        compare(tally, label + " .zdebug", sw, zd, picked, oracle_binary=out)
                        dbg, dl = out + ".debug", out + "-debuglink"
                        run([LLVM["objcopy"], "--only-keep-debug", out, dbg])
                        run([LLVM["objcopy"], "--strip-debug", "--add-gnu-debuglink=" + dbg,
                             out, dl])
                        compare(tally, label + " debuglink", sw, dl, picked, ["--dsym", dbg],
                                oracle_binary=out)
                        compare(tally, label + " --no-inlines", sw, out, picked,
                                both_args=["--no-inlines"])
                        check_shared(tally, label, sw, out, workdir, rng)
                    if opt == "-O2":
                        check_split(tally, label, sw, srcdir, out, cc, cxx,
                                    ["-g", "-gdwarf-" + dwarf, opt], picked, workdir)
        # 64-bit DWARF, and cross-unit references (DW_FORM_ref_addr) from LTO
        extra = [("gcc-12", "g++-12", ["-g", "-gdwarf-5", "-gdwarf64", "-O2"], [], "gcc-12 -gdwarf64"),
                 ("gcc-12", "g++-12", ["-gdwarf-3", "-O2"], [], "gcc-12 -gdwarf-3"),
                 ("clang-14", "clang++-14", ["-gdwarf-2", "-O1"], [], "clang-14 -gdwarf-2"),
                 ("clang-14", "clang++-14", ["-g", "-gdwarf-4", "-gdwarf64", "-O1"], [],
                  "clang-14 -gdwarf-4 -gdwarf64"),
                 ("clang-14", "clang++-14", ["-g", "-O2", "-flto"], ["-fuse-ld=lld"],
                  "clang-14 -flto"),
                 ("gcc-12", "g++-12", ["-g", "-O2", "-flto"], [], "gcc-12 -flto")]
        for cc, cxx, flags, ldflags, label in extra:
            if not (have(cc) and have(cxx)):
                continue
            out = os.path.join(workdir, label.replace(" ", ""))
            build(srcdir, out, cc, cxx, flags, ldflags)
            compare(tally, label, sw, out, addresses(out, nrandom, rng))
        if have("clang-19") and have("ld.lld-19") or have("ld.lld"):
            for target in ("i386-linux-gnu", "powerpc-linux-gnu", "powerpc64-linux-gnu",
                           "aarch64-linux-gnu"):
                out = os.path.join(workdir, "freestanding-" + target)
                try:
                    build_freestanding(srcdir, out, target)
                except subprocess.CalledProcessError as e:
                    print("cannot build for %s: %s" % (target, e.stderr.strip()[:200]))
                    continue
                compare(tally, "clang-19 " + target, sw, out, addresses(out, nrandom // 4, rng))
        check_rust(tally, sw, os.path.dirname(os.path.dirname(srcdir)), workdir, nrandom, rng)
        check_go(tally, sw, os.path.dirname(os.path.dirname(srcdir)), workdir, nrandom, rng)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\ncompared %d addresses, %d differ; excluded %d: %s" %
          (tally.compared, tally.failed, tally.excluded,
           ", ".join("%s %d" % kv for kv in sorted(tally.reasons.items()))))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
