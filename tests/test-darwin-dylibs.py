#!/usr/bin/env python3
"""The Darwin agent as cross-built for its five targets (tests/build-darwin.sh,
with the cross files in cross/linux-*.txt), each held to its contract by
check-dylib: the dylib's shape, platform and minimum OS as the cross file's
target triple says, its exports, imports (tests/darwin-imports.txt) and
signature; the capture object's imports (tests/darwin-capture-imports.txt).

usage: test-darwin-dylibs.py CHECK-DYLIB BUILD-DARWIN SOURCE-ROOT OUTDIR
Skips (77) when build-darwin.sh does (no clang 19 / ld64.lld 19).  The
builds are shared with the darwin-cross test (same OUTDIR, both run alone).
"""
import glob
import os
import re
import subprocess
import sys

TARGETS = ["ios-arm64", "iossim-arm64", "iossim-x86_64", "macos-arm64", "macos-x86_64"]


def triple_of(src, target):
    """arch, platform, minimum OS from the cross file's target triple."""
    text = open(os.path.join(src, "cross", "linux-%s.txt" % target)).read()
    m = re.search(r"target = '(\w+)-apple-(ios|macos)([0-9.]+)(-simulator)?'", text)
    if not m:
        sys.exit("no target triple in cross/linux-%s.txt" % target)
    platform = m.group(2) + ("-simulator" if m.group(4) else "")
    return m.group(1), platform, m.group(3)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    checker, build_darwin, src, out = sys.argv[1:]
    r = subprocess.run(["sh", build_darwin, src, out], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="")
    if r.returncode == 77:
        sys.exit(77)
    failed = r.returncode != 0
    for target in TARGETS:
        arch, platform, min_os = triple_of(src, target)
        dylib = os.path.join(out, target, "injector", "libstallwatch.dylib")
        if not os.path.exists(dylib):
            print("FAIL: %s: no dylib" % target)
            failed = True
            continue
        checks = [[checker, "--arch", arch, "--platform", platform, "--min-os", min_os,
                   "--api", os.path.join(src, "injector", "stallwatch.h"),
                   "--allow", os.path.join(src, "tests", "darwin-imports.txt"), dylib]]
        objs = glob.glob(os.path.join(out, target, "**", "*capture-mach.c.o"), recursive=True)
        if len(objs) != 1:
            print("FAIL: %s: capture object not found once: %s" % (target, objs))
            failed = True
        else:
            checks.append([checker, "--object", "--arch", arch, "--allow",
                           os.path.join(src, "tests", "darwin-capture-imports.txt"), objs[0]])
        for cmd in checks:
            c = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print("%s: %s" % (target, c.stdout.strip()))
            if c.returncode != 0:
                failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
