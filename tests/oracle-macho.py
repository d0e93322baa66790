#!/usr/bin/env python3
"""Compares `stallwatch symbolicate` on Mach-O images and their dSYMs with
llvm-symbolizer 14, and checks stripped images against the unstripped truth.

Uses the fixtures of make-macho-fixtures.sh: arm64 with DWARF 5 and 4
dSYMs, x86_64, and a universal binary with a universal dSYM (--arch).
Addresses: every function's first and last instruction (from llvm-nm and
the __text bounds llvm-objdump prints, never from the reader under test)
plus random addresses in __text.  Both sides run with --no-demangle; our
output must equal the oracle's wherever the oracle has debug information.
On stripped images every function must come out at its exact start, named
from the export trie when it is exported, where llvm-symbolizer names the
nearest remaining symbol (__mh_execute_header).

usage: oracle-macho.py STALLWATCH FIXTURE_DIR [--random N]
Exit status 77 (skipped) when llvm-symbolizer-14 or the fixtures are missing.
"""
import os
import random
import re
import shutil
import subprocess
import sys

SYMBOLIZER = "llvm-symbolizer-14"


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def text_bounds(binary, arch):
    out = run(["llvm-objdump-14", "--macho", "--section-headers", "--arch=" + arch, binary])
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[1] == "__text":
            return int(f[3], 16), int(f[3], 16) + int(f[2], 16)
    raise SystemExit("no __text in " + binary)


def functions(binary, arch):
    out = run(["llvm-nm-14", "--arch=" + arch, "-n", "--defined-only", binary])
    fns = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "Tt" and f[2] != "__mh_execute_header":
            fns.append((int(f[0], 16), f[1], f[2]))
    return fns


def blocks(text):
    return [b.strip("\n") for b in text.strip("\n").split("\n\n")]


def compare(label, sw, binary, dsym, arch, addrs, tally):
    ours = blocks(run([sw, "symbolicate", "--no-demangle", "-e", binary, "--arch", arch,
                       "--dsym", dsym] + ["0x%x" % a for a in addrs]))
    oracle = blocks(run([SYMBOLIZER, "--no-demangle", "--obj=" + binary,
                         "--default-arch=" + arch, "--dsym-hint=" + dsym,
                         "--functions=linkage", "--inlines"] + ["0x%x" % a for a in addrs]))
    assert len(ours) == len(oracle) == len(addrs), (label, len(ours), len(oracle))
    for a, o, w in zip(addrs, ours, oracle):
        if "??:0" in w:
            tally["excluded"] += 1
            continue
        tally["compared"] += 1
        if o != w:
            tally["differ"] += 1
            if tally["differ"] <= 10:
                print("%s 0x%x:\n  ours:   %r\n  oracle: %r" % (label, a, o, w))


def addresses(fns, lo, hi, step, n_random, rng):
    addrs = []
    starts = [f[0] for f in fns]
    for i, s in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else hi
        addrs += [s, end - step]
    addrs += [rng.randrange(lo, hi) for _ in range(n_random)]
    return addrs


def check_stripped(sw, stripped, truth, arch, step, tally):
    fns = functions(truth, arch)
    addrs = [s + step for s, _, _ in fns]
    ours = blocks(run([sw, "symbolicate", "--no-demangle", "-e", stripped, "--arch", arch]
                      + ["0x%x" % a for a in addrs]))
    oracle = blocks(run([SYMBOLIZER, "--no-demangle", "--obj=" + stripped,
                         "--default-arch=" + arch] + ["0x%x" % a for a in addrs]))
    for (start, kind, name), o, w in zip(fns, ours, oracle):
        fn = o.split("\n")[0]
        plain = name[1:] if name.startswith("_") else name
        if kind == "T":
            good = fn == "%s + 0x%x" % (plain, step)
        else:
            good = re.search(r"\b(sub_)?0*%x\b" % start, fn) is not None
        tally["stripped"] += 1
        if not good:
            tally["stripped_wrong"] += 1
            print("%s 0x%x (%s at 0x%x): ours %r" % (stripped, start + step, name, start, fn))
        if w.split("\n")[0] != fn:
            tally["oracle_worse"] += 1


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    sw, fx = os.path.abspath(sys.argv[1]), sys.argv[2]
    n_random = int(sys.argv[sys.argv.index("--random") + 1]) if "--random" in sys.argv else 2000
    if not shutil.which(SYMBOLIZER) or not shutil.which("llvm-nm-14"):
        print("SKIP: llvm-symbolizer-14 missing")
        return 77
    if os.path.exists(os.path.join(fx, "SKIP")):
        print("SKIP: Mach-O fixtures not built")
        return 77
    os.chdir(fx)
    rng = random.Random(4)
    cases = [
        ("app-arm64", "app-arm64.dSYM", "arm64", 4),
        ("app-arm64-d4", "app-arm64-d4.dSYM", "arm64", 4),
        ("app-x86_64", "app-x86_64.dSYM", "x86_64", 1),
        ("app-universal", "app-universal.dSYM", "x86_64", 1),
        ("app-universal", "app-universal.dSYM", "arm64", 4),
    ]
    tally = dict(compared=0, excluded=0, differ=0, stripped=0, stripped_wrong=0,
                 oracle_worse=0)
    for binary, dsym, arch, step in cases:
        lo, hi = text_bounds(binary, arch)
        addrs = addresses(functions(binary, arch), lo, hi, step, n_random, rng)
        compare("%s (%s)" % (binary, arch), sw, binary, dsym, arch, addrs, tally)
    for stripped, truth in (("app-arm64-stripped", "app-arm64"),
                            ("app-arm64-lld14-stripped", "app-arm64-lld14")):
        check_stripped(sw, stripped, truth, "arm64", 4, tally)
    print("%(compared)d addresses equal to llvm-symbolizer's required, %(differ)d differ; "
          "%(excluded)d excluded (the oracle has no debug information there)" % tally)
    print("stripped: %(stripped)d functions, %(stripped_wrong)d not at their exact start; "
          "llvm-symbolizer named %(oracle_worse)d of them otherwise" % tally)
    return 1 if tally["differ"] or tally["stripped_wrong"] or not tally["compared"] else 0


if __name__ == "__main__":
    sys.exit(main())
