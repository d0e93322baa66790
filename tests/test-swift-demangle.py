#!/usr/bin/env python3
"""The Swift demangler against the toolchain's own `swift demangle`.

Takes every Swift symbol of the Swift toolchain's libraries (the standard
library, Foundation, Dispatch's overlay, concurrency, XCTest, Testing, ...:
every lib*.so beside libswiftCore.so) and of the test app (its symbol tables
and its DWARF linkage names), and compares `stallwatch demangle` with
`swift demangle`, and `stallwatch demangle --simplified` with
`swift demangle --simplified`, line by line.

Differences left are listed in tests/data/swift-demangle-known.txt: a
"cause: WHY" line, then "full|simplified<TAB>mangled name" for each name
it explains.  The test
fails on a difference not listed, on a listed entry that no longer differs
(or whose name is gone), and when the list holds more than 0.1% of the
names.

    test-swift-demangle.py KNOWN_FILE [--show N]

with STALLWATCH, SWIFTC and STALLAPP_SWIFT in the environment (meson sets
them).  --show N prints N differences of each mode and no verdict, for
work on the demangler.  Exit 77 when there is no Swift toolchain.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from swtest import check, failures

STALLWATCH = os.environ.get("STALLWATCH", "")
SWIFTC = os.environ.get("SWIFTC", "")
APP = os.environ.get("STALLAPP_SWIFT", "")
PREFIXES = ("$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0")
MAX_KNOWN = 0.001


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def toolchain_libs():
    usr = os.path.dirname(os.path.dirname(os.path.realpath(SWIFTC)))
    core = glob.glob(os.path.join(usr, "lib", "swift", "*", "libswiftCore.so"))
    if not core:
        skip("no libswiftCore.so in the toolchain of '%s'" % SWIFTC)
    return sorted(glob.glob(os.path.join(os.path.dirname(core[0]), "lib*.so")))


def symbols_of(path):
    """Names in the static and dynamic symbol tables (nm)."""
    names = set()
    for opt in ("-a", "-D"):
        r = subprocess.run(["nm", opt, path], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            parts = line.split()
            if parts:
                names.add(parts[-1])
    return names


def linkage_names_of(path):
    """DW_AT_linkage_name strings of path's DWARF."""
    tool = next((t for t in ("llvm-dwarfdump-19", "llvm-dwarfdump", "llvm-dwarfdump-14")
                 if shutil.which(t)), None)
    if tool is None:
        skip("llvm-dwarfdump not found")
    out = subprocess.run([tool, "--debug-info", path], capture_output=True, text=True).stdout
    return set(re.findall(r'DW_AT_linkage_name\s+\("([^"]*)"\)', out))


def demangle(cmd, names):
    out = subprocess.run(cmd, input="".join(n + "\n" for n in names), capture_output=True,
                         text=True, check=True).stdout.split("\n")
    if len(out) != len(names) + 1:
        sys.exit("'%s' printed %d lines for %d names" % (" ".join(cmd), len(out) - 1, len(names)))
    return out[:-1]


def read_known(path):
    """{(mode, name): cause} from the known-differences file; causes without names fail."""
    known, cause, used = {}, None, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith("cause: "):
                cause = line[len("cause: "):].strip()
                check(cause and cause not in used, "%s:%d: empty or repeated cause" % (path, n))
                used[cause] = 0
                continue
            parts = line.split("\t")
            if not check(cause and len(parts) == 2 and parts[0] in ("full", "simplified"),
                         "%s:%d: not 'full|simplified<TAB>name' after a cause" % (path, n)):
                continue
            check((parts[0], parts[1]) not in known, "%s:%d: listed twice" % (path, n))
            known[(parts[0], parts[1])] = cause
            used[cause] += 1
    for cause, count in used.items():
        check(count > 0, "%s: cause without names: %s" % (path, cause))
    return known


def main():
    args = sys.argv[1:]
    show = int(args[args.index("--show") + 1]) if "--show" in args else None
    if not SWIFTC:
        skip("no Swift toolchain (swiftc not on PATH and SWIFTC unset)")
    tool = os.path.join(os.path.dirname(os.path.realpath(SWIFTC)), "swift-demangle")
    if not os.access(tool, os.X_OK):
        skip("no swift-demangle beside '%s'" % SWIFTC)
    names = set()
    libs = toolchain_libs()
    for lib in libs:
        names |= symbols_of(lib)
    app_names = set()
    if APP and os.path.exists(APP):
        app_names = symbols_of(APP) | linkage_names_of(APP)
    names = sorted(n for n in names | app_names if n.startswith(PREFIXES))
    app_swift = [n for n in app_names if n.startswith(PREFIXES)]
    print("%d Swift names from %d toolchain libraries and the app (%d from the app)"
          % (len(names), len(libs), len(app_swift)))
    check(len(names) >= 20000, "only %d Swift names found" % len(names))
    check(len(app_swift) >= 50, "only %d Swift names in the app" % len(app_swift))
    diffs = {}
    for mode, opt in (("full", []), ("simplified", ["--simplified"])):
        want = demangle([tool] + opt, names)
        got = demangle([STALLWATCH, "demangle"] + opt, names)
        diffs[mode] = {n: (w, g) for n, w, g in zip(names, want, got) if w != g}
        print("%s: %d of %d identical (%.3f%%)" % (mode, len(names) - len(diffs[mode]), len(names),
                                                   100.0 * (len(names) - len(diffs[mode])) / len(names)))
    if show is not None:
        for mode in diffs:
            for n, (w, g) in list(diffs[mode].items())[:show]:
                print("%s %s\n  swift:      %s\n  stallwatch: %s" % (mode, n, w, g))
        return
    known = read_known(args[0])
    for mode in diffs:
        for n, (w, g) in diffs[mode].items():
            check((mode, n) in known, "%s: %s\n  swift demangle: %s\n  stallwatch:     %s"
                  % (mode, n, w, g))
    for (mode, n) in known:
        check(n in diffs[mode], "%s: %s is listed as a known difference but no longer differs%s"
              % (mode, n, "" if n in names else " (no such name any more)"))
    check(len(known) <= MAX_KNOWN * len(names), "%d known differences, more than %.1f%% of %d names"
          % (len(known), 100 * MAX_KNOWN, len(names)))
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
