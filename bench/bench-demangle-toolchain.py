#!/usr/bin/env python3
"""Our Swift demangler against the Swift toolchain's, side by side.

Collects every Swift symbol of the toolchain's libraries (the toolchain is
found from SWIFTC, as the tests find it), then
1. runs bench-demangle-toolchain: libswiftDemangle (dlopen) against our
   demangler in one process, CPU time, full and simplified names;
2. compares the command-line tools on the same file: `stallwatch demangle`
   against `swift demangle` (baseline), full and --simplified, best of
   three runs each, CPU time of the child.

    bench-demangle-toolchain.py BENCH_EXE STALLWATCH
Exit 77 when there is no Swift toolchain.
"""
import glob
import os
import resource
import subprocess
import sys
import tempfile

PREFIXES = ("$s", "_$s", "$S", "_$S", "$e", "_T0")


def cpu_of(cmd, path):
    """CPU seconds (user + system) of cmd reading path on its stdin, best of three."""
    best = None
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(path) as f:
            subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
    return best


def main():
    bench, stallwatch = sys.argv[1], sys.argv[2]
    swiftc = os.environ.get("SWIFTC", "")
    if not swiftc:
        print("SKIP: no Swift toolchain (swiftc not on PATH and SWIFTC unset)")
        sys.exit(77)
    usr = os.path.dirname(os.path.dirname(os.path.realpath(swiftc)))
    lib = os.path.join(usr, "lib", "libswiftDemangle.so")
    tool = os.path.join(usr, "bin", "swift-demangle")
    core = glob.glob(os.path.join(usr, "lib", "swift", "*", "libswiftCore.so"))
    if not (os.path.exists(lib) and os.access(tool, os.X_OK) and core):
        print("SKIP: no libswiftDemangle.so, swift-demangle or libswiftCore.so under '%s'" % usr)
        sys.exit(77)
    names = set()
    for so in glob.glob(os.path.join(os.path.dirname(core[0]), "lib*.so")):
        for opt in ("-a", "-D"):
            out = subprocess.run(["nm", opt, so], capture_output=True, text=True).stdout
            names.update(l.split()[-1] for l in out.splitlines() if l.split())
    names = sorted(n for n in names if n.startswith(PREFIXES))
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(n + "\n" for n in names))
        path = f.name
    try:
        r = subprocess.run([bench, path, lib])
        print("command line, %d names, CPU time, best of 3; baseline: swift demangle" % len(names))
        for style, opt in (("full", []), ("simplified", ["--simplified"])):
            ours = cpu_of([stallwatch, "demangle"] + opt, path)
            theirs = cpu_of([tool] + opt, path)
            print("%-10s  stallwatch demangle %.3f s  swift demangle %.3f s  ratio %.2fx the baseline"
                  % (style, ours, theirs, theirs / ours))
    finally:
        os.unlink(path)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
