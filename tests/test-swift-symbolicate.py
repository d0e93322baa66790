#!/usr/bin/env python3
"""`stallwatch symbolicate` on Swift binaries against llvm-symbolizer.

The Swift test app (tests/apps/stallapp-swift.swift) as meson built it
(swiftc -g -Onone) and built again here with -O (inlined calls), is asked
about every instruction address of its executable sections, found with
llvm-objdump.  With --no-demangle on both sides our output must equal
llvm-symbolizer's (19, else 14) frame for frame -- function, inlined calls,
file:line:column -- wherever llvm-symbolizer has line information; where it
has none (addresses outside every line table sequence: the C runtime's
start files, PLT stubs) our output differs as
stallwatch-symbolicate(1) documents (nearest symbol + 0xoffset, sub_ADDR)
and those addresses are counted, not compared.  Then every Swift function
name we print with demangling must be what `swift demangle` prints for the
linkage name.

Environment (tests/meson.build): STALLWATCH, SWIFTC, STALLAPP_SWIFT.
Exit 77 when there is no Swift toolchain or no llvm-symbolizer.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from swtest import check, failures

STALLWATCH = os.environ.get("STALLWATCH", "")
SWIFTC = os.environ.get("SWIFTC", "")
APP = os.environ.get("STALLAPP_SWIFT", "")
SWIFT_PREFIXES = ("$s", "_$s", "$S", "_$S", "$e")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def tool(*names):
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def run(cmd, data=None):
    return subprocess.run(cmd, input=data, capture_output=True, text=True, check=True).stdout


def instructions(objdump, binary):
    addrs = []
    for line in run([objdump, "-d", "--no-show-raw-insn", binary]).splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+\S", line)
        if m:
            addrs.append(int(m.group(1), 16))
    return addrs


def line_sequences(dwarfdump, binary):
    """[lo, hi) of every line table sequence, from llvm-dwarfdump --debug-line."""
    seqs, lo = [], None
    for line in run([dwarfdump, "--debug-line", binary]).splitlines():
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


def blocks(cmd, addrs):
    out = run(cmd, "".join("0x%x\n" % a for a in addrs))
    res = [b.split("\n") for b in out.strip("\n").split("\n\n")]
    if len(res) != len(addrs):
        sys.exit("'%s' answered %d of %d addresses" % (cmd[0], len(res), len(addrs)))
    return res


def compare(label, binary, symbolizer, objdump, dwarfdump, demangler):
    addrs = instructions(objdump, binary)
    seqs = line_sequences(dwarfdump, binary)
    oracle = blocks([symbolizer, "--no-demangle", "-e", binary], addrs)
    ours = blocks([STALLWATCH, "symbolicate", "--no-demangle", "-e", binary], addrs)
    compared = no_lines = bad = inlined = 0
    for a, o, s in zip(addrs, oracle, ours):
        if not any(lo <= a < hi for lo, hi in seqs):
            no_lines += 1  # no line information: the documented difference
            continue
        compared += 1
        inlined += len(o) > 2
        if o != s:
            bad += 1
            if bad <= 8:
                print("MISMATCH %s 0x%x:\n  llvm-symbolizer: %s\n  stallwatch:      %s"
                      % (label, a, " | ".join(o), " | ".join(s)))
    print("%s: %d addresses, %d compared (%d with inlined calls), %d outside the line "
          "tables, %d differ" % (label, len(addrs), compared, inlined, no_lines, bad))
    check(bad == 0, "%s: %d addresses differ from llvm-symbolizer" % (label, bad))
    check(compared >= 0.75 * len(addrs), "%s: only %d of %d addresses have line information"
          % (label, compared, len(addrs)))

    # names: the demangled output against swift demangle of the linkage names
    shown = blocks([STALLWATCH, "symbolicate", "-e", binary], addrs)
    pairs = {}
    for raw, dem in zip(ours, shown):
        for linkage, name in zip(raw[0::2], dem[0::2]):
            if linkage.startswith(SWIFT_PREFIXES):
                pairs[linkage] = name
    names = sorted(pairs)
    want = run([demangler], "".join(n + "\n" for n in names)).splitlines()
    wrong = [(n, w, pairs[n]) for n, w in zip(names, want) if pairs[n] != w]
    for n, w, g in wrong[:8]:
        print("NAME %s\n  swift demangle: %s\n  stallwatch:     %s" % (n, w, g))
    print("%s: %d Swift functions named, %d unlike swift demangle" % (label, len(names), len(wrong)))
    check(not wrong, "%s: %d names differ from swift demangle" % (label, len(wrong)))
    check(len(names) >= 50, "%s: only %d Swift function names" % (label, len(names)))
    return inlined


def main():
    if not SWIFTC or not APP:
        skip("no Swift toolchain (swiftc not on PATH and SWIFTC unset)")
    symbolizer = tool("llvm-symbolizer-19", "llvm-symbolizer-14")
    objdump = tool("llvm-objdump-19", "llvm-objdump-14", "llvm-objdump")
    dwarfdump = tool("llvm-dwarfdump-19", "llvm-dwarfdump-14", "llvm-dwarfdump")
    if not symbolizer or not objdump or not dwarfdump:
        skip("llvm-symbolizer-19/-14, llvm-objdump or llvm-dwarfdump not found")
    demangler = os.path.join(os.path.dirname(os.path.realpath(SWIFTC)), "swift-demangle")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps", "stallapp-swift.swift")
    with tempfile.TemporaryDirectory() as tmp:
        optimized = os.path.join(tmp, "stallapp-swift-O")
        subprocess.run([SWIFTC, "-g", "-O", "-module-name", "stallapp_swift", "-module-cache-path",
                        os.path.join(tmp, "cache"), src, "-o", optimized], check=True)
        compare("-Onone", APP, symbolizer, objdump, dwarfdump, demangler)
        inlined = compare("-O", optimized, symbolizer, objdump, dwarfdump, demangler)
        check(inlined >= 100, "-O: only %d addresses inside inlined calls" % inlined)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
