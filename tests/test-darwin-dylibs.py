#!/usr/bin/env python3
"""The Darwin agent as cross-built for its five targets (tests/build-darwin.sh,
with the cross files in cross/linux-*.txt), each held to its contract by
check-dylib: the dylib's shape, platform and minimum OS as the cross file's
target triple says, its exports, imports (tests/darwin-imports.txt) and
signature; the capture object's imports (tests/darwin-capture-imports.txt).
Then the real capture-mach.c, with a call planted where a thread is held,
is compiled as the build compiles it: check-dylib must reject each object,
naming the call.

usage: test-darwin-dylibs.py CHECK-DYLIB BUILD-DARWIN SOURCE-ROOT OUTDIR
Skips (77) when build-darwin.sh does (no clang 19 / ld64.lld 19).  The
builds are shared with the darwin-cross test (same OUTDIR, both run alone).
"""
import glob
import json
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


# (declaration and call planted after the suspend, what check-dylib must say)
PLANTS = [
    ("extern void *malloc(unsigned long); extern void free(void *); "
     "void *volatile p_ = malloc(16); free(p_);",
     "import '_malloc' is not on the allowed list"),
    ("extern int pthread_mutex_lock(void *); pthread_mutex_lock(cap);",
     "import '_pthread_mutex_lock' is not on the allowed list"),
    ("extern int dladdr(const void *, void *); dladdr(cap, cap);", "forbidden import '_dladdr'"),
    ("extern void *objc_msgSend(void *, void *); objc_msgSend(cap, cap);",
     "forbidden import '_objc_msgSend'"),
]
ANCHOR = "cap->regs.valid = 0;"


def planted_objects(checker, src, out, target, arch, tmp):
    """Each plant compiled with the build's own command for capture-mach.c."""
    cmds = json.load(open(os.path.join(out, target, "compile_commands.json")))
    entry = [c for c in cmds if c["file"].endswith("capture-mach.c")]
    if len(entry) != 1:
        print("FAIL: %s: no compile command for capture-mach.c" % target)
        return False
    text = open(os.path.join(src, "injector", "darwin", "capture-mach.c")).read()
    if ANCHOR not in text:
        print("FAIL: the anchor %r left capture-mach.c: move the plants" % ANCHOR)
        return False
    ok = True
    for i, (code, message) in enumerate(PLANTS):
        planted = os.path.join(tmp, "planted-%d.c" % i)
        obj = os.path.join(tmp, "planted-%s-%d.o" % (target, i))
        with open(planted, "w") as f:
            f.write(text.replace(ANCHOR, ANCHOR + " { " + code + " }", 1))
        args = entry[0]["command"].split()
        args = [a for a in args if a not in ("-MD", "-Werror")]
        for flag in ("-MQ", "-MF", "-o"):
            while flag in args:
                i_flag = args.index(flag)
                del args[i_flag:i_flag + 2]
        # the source is last; its own folder is on the path for its includes
        args = args[:-1] + ["-I" + os.path.join(src, "injector", "darwin"), planted, "-o", obj]
        c = subprocess.run(args, cwd=entry[0]["directory"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if c.returncode != 0:
            print("FAIL: %s: planted capture does not compile: %s" % (target, c.stdout))
            ok = False
            continue
        r = subprocess.run([checker, "--object", "--arch", arch, "--allow",
                            os.path.join(src, "tests", "darwin-capture-imports.txt"), obj],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 1 or message not in r.stdout:
            print("FAIL: %s: planted %r: check-dylib said (%d) %s" % (target, code,
                                                                      r.returncode, r.stdout))
            ok = False
        else:
            print("%s: planted %s rejected" % (target, message.split("'")[1]))
    return ok


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    checker, build_darwin, src, out = [os.path.abspath(a) for a in sys.argv[1:]]
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
    tmp = os.path.join(out, "planted")
    os.makedirs(tmp, exist_ok=True)
    for target in ("ios-arm64", "macos-x86_64"):
        if os.path.exists(os.path.join(out, target, "compile_commands.json")):
            arch = triple_of(src, target)[0]
            failed |= not planted_objects(checker, src, out, target, arch, tmp)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
