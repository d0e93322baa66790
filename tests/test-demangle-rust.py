#!/usr/bin/env python3
"""Rust names against an independent demangler, on a real program's symbols.

tests/apps/stallapp.rs is built twice with the rustc found (the default
mangling, and -C symbol-mangling-version=v0); every Rust symbol of both
binaries is demangled by `stallwatch demangle` and checked:

- v0 names ("_R..."): against LLVM's demangler (llvm-cxxfilt), a second
  implementation of the same documented grammar (libiberty is ours);
- legacy names ("_ZN...17h<16 hex digits>E"): against the legacy rule
  applied here to llvm-cxxfilt's Itanium reading of them: the last
  component, the hash, goes, and the "$..$" escapes are decoded;
- Mach-O's extra leading underscore, names inside running text (the
  filter), and a v0 name of 600 bytes whose back references double its
  output at each of 60 levels: it is left mangled, at once.

    test-demangle-rust.py

with STALLWATCH, RUSTC (from tests/find-compiler.py) and SW_SOURCE_ROOT in
the environment.  Exit 77 without rustc or llvm-cxxfilt.
"""
import os
import re
import shutil
import subprocess
import sys
import time

from swtest import check, failures, runs, scratch_dir

STALLWATCH = os.environ.get("STALLWATCH", "")
RUSTC = os.environ.get("RUSTC", "")
SOURCE = os.path.join(os.environ.get("SW_SOURCE_ROOT", ""), "tests", "apps", "stallapp.rs")
LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E$")
# the legacy mangling's escapes (rustc's legacy symbol names)
ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ","}


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def cxxfilt():
    for name in ("llvm-cxxfilt-19", "llvm-cxxfilt", "llvm-cxxfilt-14"):
        if shutil.which(name):
            return name
    skip("no llvm-cxxfilt (Debian package llvm-19)")


def symbols(path):
    r = subprocess.run(["nm", path], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in r.stdout.splitlines() if line.split()}


def demangle(names, *opts):
    out = subprocess.run([STALLWATCH, "demangle", *opts], input="\n".join(names) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(names)]


def legacy_rule(itanium):
    """The legacy Rust name from the Itanium reading of its nested name."""
    m = re.match(r"^(.*)::h[0-9a-f]{16}$", itanium)
    if not m:
        return None
    parts = []
    for comp in m.group(1).split("::"):
        if comp.startswith("_$"):
            comp = comp[1:]  # a component that starts with an escape gets an underscore
        comp = re.sub(r"\$(SP|BP|RF|LT|GT|LP|RP|C)\$", lambda e: ESCAPES[e.group(1)], comp)
        comp = re.sub(r"\$u([0-9a-f]{2})\$", lambda e: chr(int(e.group(1), 16)), comp)
        parts.append(comp.replace("..", "::"))
    return "::".join(parts)


def main():
    if not RUSTC:
        skip("no rustc (RUSTC unset; none on PATH, a login shell's PATH or in ~/.cargo/bin)")
    if not runs(RUSTC):
        skip("'%s --version' fails for this user (another user's rustup?)" % RUSTC)
    filt = cxxfilt()
    tmp = scratch_dir("sw-rust-")
    names = set()
    for out, flags in (("default", []), ("v0", ["-C", "symbol-mangling-version=v0"])):
        binary = os.path.join(tmp, out)
        subprocess.run([RUSTC, "-O", "-g", *flags, "-o", binary, SOURCE], check=True)
        names |= symbols(binary)
    v0 = sorted(n for n in names if n.startswith("_R"))
    legacy = sorted(n for n in names if LEGACY.match(n))
    print("%d v0 names, %d legacy names" % (len(v0), len(legacy)))
    check(len(v0) >= 20, "fewer than 20 v0 names: %d" % len(v0))
    check(legacy, "no legacy names")

    # v0: LLVM's reading, without its " (.N)" for a symbol's suffix (we drop it)
    llvm = subprocess.run([filt], input="\n".join(v0) + "\n", capture_output=True, text=True,
                          check=True).stdout.split("\n")
    ours = demangle(v0)
    differ = [(n, a, b) for n, a, b in zip(v0, llvm, ours)
              if re.sub(r" \(\.[\w.]+\)$", "", a) != b]
    for n, a, b in differ[:10]:
        print("v0 %s\n  llvm-cxxfilt: %s\n  stallwatch:   %s" % (n, a, b))
    check(not differ, "%d of %d v0 names differ from llvm-cxxfilt" % (len(differ), len(v0)))
    check(any(n == "stallapp::handle_event" for n in ours),
          "the v0 build's handle_event is not stallapp::handle_event")
    # Mach-O symbol tables: one more underscore, the same name
    check(demangle(["_" + n for n in v0]) == ours, "__R names differ from their _R names")

    itanium = subprocess.run([filt], input="\n".join(legacy) + "\n", capture_output=True,
                             text=True, check=True).stdout.split("\n")
    ours = demangle(legacy)
    differ = [(n, legacy_rule(i), b) for n, i, b in zip(legacy, itanium, ours) if legacy_rule(i) != b]
    for n, a, b in differ[:10]:
        print("legacy %s\n  rule:       %s\n  stallwatch: %s" % (n, a, b))
    check(not differ, "%d of %d legacy names differ from the rule" % (len(differ), len(legacy)))
    check("stallapp::handle_event" in ours, "the default build's handle_event: %s" % ours[:5])

    # in running text, as in a log: replaced where they stand
    line = "at %s+0x1c, called from %s." % (v0[0], legacy[0])
    got = demangle([line])[0]
    want = "at %s+0x1c, called from %s." % (demangle([v0[0]])[0], demangle([legacy[0]])[0])
    check(got == want, "filtered text: %r, want %r" % (got, want))

    # back references that double the output at each level: 2^60 pairs of
    # "()" (c++filt runs for minutes); left mangled, as Itanium bombs are
    def b62(n):
        digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        if n == 0:
            return "_"
        n, s = n - 1, ""
        while True:
            s, n = digits[n % 62] + s, n // 62
            if not n:
                return s + "_"
    body, prev = "INvC1a1f", None
    prev, body = len(body), body + "TuuE"
    small = "_R" + body + "TB%sB%sEE" % (b62(prev), b62(prev))
    check(demangle([small])[0] == "a::f::<((), ()), (((), ()), ((), ()))>",
          "a back reference: %s" % demangle([small])[0])
    for _ in range(60):
        at, body = len(body), body + "TB%sB%sE" % (b62(prev), b62(prev))
        prev = at
    bomb = "_R" + body + "E"
    start = time.monotonic()
    got = subprocess.run([STALLWATCH, "demangle", bomb], capture_output=True, text=True,
                         timeout=60).stdout
    took = time.monotonic() - start
    check(got == bomb + "\n", "the back-reference bomb was not left mangled: %r" % got[:80])
    check(took < 10, "the back-reference bomb took %.1f s" % took)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
