#!/usr/bin/env python3
"""check-dylib (tests/check-dylib.c) against dylibs and objects built here
with clang's Apple targets and ld64.lld: a stand-in agent passes for all
five Darwin targets, and each planted defect (a forbidden or unlisted
import, an import bound to the wrong library, an extra library or export,
a missing export, a wrong install name, platform or minimum OS, no UUID, a
bundle, a universal file, a broken or missing signature, malloc or a lock
in the capture object) fails with a message naming it.  First, what the
reader finds in each target's dylib (check-dylib --dump) must be what
llvm-objdump, llvm-nm and llvm-dwarfdump find: load commands, UUID,
imports with their libraries, fixups, exports.

usage: test-dylib-check.py CHECK-DYLIB SOURCE-ROOT WORKDIR
Skips (77) when clang-19 or ld64.lld-19 is missing.
"""
import os
import re
import shutil
import subprocess
import sys

from swtest import check, failures

CLANG = os.environ.get("SW_APPLE_CC", "clang-19")
LD = os.environ.get("SW_APPLE_LD", "ld64.lld-19")
LIPO = "llvm-lipo-19"
OBJDUMP = "llvm-objdump-19"
NM = "llvm-nm-19"
DWARFDUMP = "llvm-dwarfdump-19"
SDK = "17.5"  # unlike any minimum OS, so that the two cannot be confused
PLATFORMS = {"macos": 1, "ios": 2, "iossimulator": 7}

# (arch, clang triple, ld64 platform, minimum OS)
TARGETS = [
    ("arm64", "arm64-apple-ios14.0", "ios", "14.0"),
    ("arm64", "arm64-apple-ios14.0-simulator", "ios-simulator", "14.0"),
    ("x86_64", "x86_64-apple-ios14.0-simulator", "ios-simulator", "14.0"),
    ("arm64", "arm64-apple-macos11.0", "macos", "11.0"),
    ("x86_64", "x86_64-apple-macos10.15", "macos", "10.15"),
]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


class Fixtures:
    def __init__(self, checker, root, work):
        self.checker = checker
        self.data = os.path.join(root, "tests", "data", "dylib-check")
        self.api = os.path.join(root, "injector", "stallwatch.h")
        self.allow = os.path.join(self.data, "allowed.txt")
        self.capture_allow = os.path.join(root, "tests", "darwin-capture-imports.txt")
        self.work = work
        self.env = dict(os.environ)
        self.env.pop("LIBRARY_PATH", None)

    def compile(self, src, target, tag, defines=()):
        obj = os.path.join(self.work, "%s-%s.o" % (tag, target[1]))
        cmd = [CLANG, "-target", target[1], "-nostdlibinc", "-O1", "-fvisibility=hidden",
               "-c", os.path.join(self.data, src), "-o", obj] + ["-D" + d for d in defines]
        r = run(cmd, env=self.env)
        if r.returncode != 0:
            sys.exit("cannot compile %s: %s" % (src, r.stdout))
        return obj

    def link(self, target, tag, defines=(), flags=(), libs=("libSystem", "CoreFoundation"),
             install="@rpath/libstallwatch.dylib", platform=None, min_os=None):
        obj = self.compile("agent.c", target, tag, defines)
        out = os.path.join(self.work, "%s-%s.dylib" % (tag, target[1]))
        cmd = [LD, "-arch", target[0], "-platform_version", platform or target[2],
               min_os or target[3], SDK, "-install_name", install, "-o", out,
               obj] + [os.path.join(self.data, l + ".tbd") for l in libs] + list(flags)
        if "-bundle" not in flags:
            cmd.append("-dylib")
        r = run(cmd, env=self.env)
        if r.returncode != 0:
            sys.exit("cannot link %s: %s" % (out, r.stdout))
        return out

    def check(self, target, path, allow=None):
        return run([self.checker, "--arch", target[0], "--platform", target[2], "--min-os",
                    target[3], "--api", self.api, "--allow", allow or self.allow, path])

    def check_object(self, target, path):
        return run([self.checker, "--object", "--arch", target[0], "--allow",
                    self.capture_allow, path])


def expect_ok(what, r):
    check(r.returncode == 0, "%s: check-dylib failed (%d):\n%s" % (what, r.returncode, r.stdout))


def expect_fail(what, r, *words):
    ok = r.returncode == 1 and all(w in r.stdout for w in words)
    check(ok, "%s: expected a failure naming %s, got %d:\n%s" % (what, words, r.returncode,
                                                                  r.stdout))


def good_targets(fx):
    for t in TARGETS:
        tag = "good"
        expect_ok("%s %s" % (t[1], tag), fx.check(t, fx.link(t, tag)))
        obj = fx.compile("capture.c", t, "capture")
        expect_ok("capture object for %s" % t[1], fx.check_object(t, obj))


def short(lib):
    """A library as llvm-objdump and llvm-nm name it: libSystem, CoreFoundation."""
    return os.path.basename(lib).split(".")[0]


def tool(*cmd):
    r = run(list(cmd))
    check(r.returncode == 0, "%s failed: %s" % (cmd[0], r.stdout))
    return r.stdout


def reader_view(fx, path):
    out = run([fx.checker, "--dump", path]).stdout
    view = {"dylib": [], "undefined": set(), "chained": set(), "bind": set(),
            "lazy-bind": set(), "weak-bind": set(), "export": set()}
    for line in out.splitlines():
        key, _, rest = line.partition(" ")
        if key == "dylib":
            view["dylib"].append(rest)
        elif key in ("undefined", "chained", "bind", "lazy-bind", "weak-bind"):
            name, lib = rest.split(" ", 1)
            view[key].add((name, short(lib)))
        elif key == "export":
            name, addr = rest.split()
            view[key].add((name, int(addr, 16)))
        else:
            view[key] = rest
    return view


def oracle_view(path):
    view = {}
    used = tool(OBJDUMP, "--macho", "--dylibs-used", path).splitlines()[1:]
    view["dylib"] = [l.strip().split(" (compatibility")[0] for l in used]
    headers = tool(OBJDUMP, "--macho", "--private-headers", path)
    m = re.search(r"platform (\w+)\n\s+sdk \S+\n\s+minos ([0-9.]+)", headers)
    view["build-version"] = "%d %s" % (PLATFORMS.get(m.group(1), -1), m.group(2)) if m else None
    view["code-signature"] = "LC_CODE_SIGNATURE" in headers
    m = re.search(r"UUID: ([0-9A-F-]+)", tool(DWARFDUMP, "--uuid", path))
    view["uuid"] = m.group(1) if m else None
    view["undefined"] = set(re.findall(r"\(undefined\) external (\S+) \(from (\w+)\)",
                                       tool(NM, "-u", "-m", path)))
    fix = tool(OBJDUMP, "--macho", "--chained-fixups", path)
    view["chained"] = {(n, l) for l, n in re.findall(
        r"lib_ordinal = -?\d+ \((\S+)\)\n\s+weak_import = \d\n\s+name_offset = \d+ \((\S+)\)",
        fix)}
    binds = tool(OBJDUMP, "--macho", "--bind", "--lazy-bind", path)
    tables = re.split(r"^Lazy bind table:$", binds, flags=re.M)
    view["bind"] = set((n, l) for l, n in re.findall(r"^\S+\s+\S+\s+0x[0-9A-Fa-f]+ \w+\s+-?\d+ "
                                                    r"(\S+)\s+(\S+)$", tables[0], re.M))
    view["lazy-bind"] = set((n, l) for l, n in re.findall(
        r"^\S+\s+\S+\s+0x[0-9A-Fa-f]+ (\S+)\s+(\S+)$",
        tables[1] if len(tables) > 1 else "", re.M))
    view["export"] = {(n, int(a, 16)) for a, n in re.findall(
        r"^0x([0-9A-Fa-f]+)\s+(\S+)$", tool(OBJDUMP, "--macho", "--exports-trie", path), re.M)}
    return view


def reader_vs_tools(fx):
    for t in TARGETS:
        path = fx.link(t, "good")
        mine, theirs = reader_view(fx, path), oracle_view(path)
        check(theirs["dylib"] == [mine.get("install-name")] + mine["dylib"],
              "%s: dylibs %s, llvm-objdump %s" % (t[1], mine["dylib"], theirs["dylib"]))
        check(mine.get("build-version") == theirs["build-version"],
              "%s: build version %s, llvm-objdump %s" % (t[1], mine.get("build-version"),
                                                         theirs["build-version"]))
        check(mine.get("uuid") == theirs["uuid"], "%s: uuid %s, llvm-dwarfdump %s"
              % (t[1], mine.get("uuid"), theirs["uuid"]))
        check(("code-signature" in mine) == theirs["code-signature"], "%s: signature" % t[1])
        for key in ("undefined", "chained", "bind", "lazy-bind", "export"):
            check(mine[key] == theirs[key], "%s: %s %s, tools %s" % (t[1], key, sorted(mine[key]),
                                                                    sorted(theirs[key])))
        check(mine["export"] and mine["undefined"] and (mine["chained"] or mine["lazy-bind"]),
              "%s: nothing to compare" % t[1])


def planted_imports(fx):
    t = TARGETS[0]
    expect_fail("dladdr", fx.check(t, fx.link(t, "dladdr", ["PLANT_DLADDR"])),
                "forbidden import '_dladdr'")
    expect_fail("objc", fx.check(t, fx.link(t, "objc", ["PLANT_OBJC"])),
                "forbidden import '_objc_msgSend'")
    expect_fail("unlisted", fx.check(t, fx.link(t, "unlisted", ["PLANT_UNLISTED"])),
                "'_thread_suspend' is not on the allowed list")
    expect_fail("wrong library", fx.check(t, fx.link(t, "wronglib", ["PLANT_WRONG_LIBRARY"])),
                "'_CFStringCreateCopy' is bound to '/usr/lib/libSystem.B.dylib'")
    dylib = fx.link(t, "extralib", ["PLANT_EXTRA_LIBRARY"],
                    libs=("libSystem", "CoreFoundation", "Extra"))
    expect_fail("extra library", fx.check(t, dylib), "loads '/usr/lib/libextra.dylib'",
                "'_extra_call' is not on the allowed list")
    # the x86_64 simulator binds with opcodes, not chained fixups
    t = TARGETS[2]
    expect_fail("dladdr (bind opcodes)", fx.check(t, fx.link(t, "dladdr", ["PLANT_DLADDR"])),
                "forbidden import '_dladdr' (fixups)", "forbidden import '_dladdr' (symbol table)")
    for t in (TARGETS[0], TARGETS[2]):
        for plant, name in (("PLANT_MALLOC", "_malloc"), ("PLANT_LOCK", "_pthread_mutex_lock")):
            obj = fx.compile("capture.c", t, plant.lower(), [plant])
            expect_fail("capture %s %s" % (plant, t[1]), fx.check_object(t, obj),
                        "'%s' is not on the allowed list" % name)


def planted_shape(fx):
    t = TARGETS[0]
    expect_fail("extra export", fx.check(t, fx.link(t, "extraexp", ["PLANT_EXTRA_EXPORT"])),
                "'_swa_internal_helper' is not in the public api",
                "export trie holds '_swa_internal_helper'")
    expect_fail("missing export", fx.check(t, fx.link(t, "missexp", ["PLANT_MISSING_EXPORT"])),
                "public function '_stallwatch_after_wait' is not exported")
    expect_fail("install name", fx.check(t, fx.link(t, "name", install="libstallwatch.dylib")),
                "install name 'libstallwatch.dylib'")
    expect_fail("platform", fx.check(t, fx.link(t, "plat", platform="ios-simulator")),
                "LC_BUILD_VERSION platform 7")
    expect_fail("minimum os", fx.check(t, fx.link(t, "minos", min_os="15.0")),
                "minos 15.0, not ios 14.0")
    expect_fail("uuid", fx.check(t, fx.link(t, "nouuid", flags=["-no_uuid"])), "no LC_UUID")
    expect_fail("bundle", fx.check(t, fx.link(t, "bundle", flags=["-bundle"])),
                "file type 8, not MH_DYLIB")
    expect_fail("cpu", fx.check(TARGETS[2], fx.link(t, "cpu")), "not x86_64")
    lipo = shutil.which(LIPO)
    if check(lipo, "%s not found" % LIPO):
        fat = os.path.join(fx.work, "fat.dylib")
        r = run([lipo, "-create", fx.link(t, "thin"), fx.link(TARGETS[2], "thin"), "-output", fat])
        check(r.returncode == 0, "lipo failed: " + r.stdout)
        expect_fail("universal", fx.check(t, fat), "not a thin 64-bit")
    # linked without libSystem: not loading an allowed library is a failure too
    expect_fail("missing library", fx.check(t, fx.link(t, "nolib", libs=("libSystem",),
                                                      flags=["-undefined", "dynamic_lookup"])),
                "does not load '/System/Library/Frameworks/CoreFoundation.framework/")


def planted_signature(fx):
    t = TARGETS[3]  # arm64 macOS: ld64.lld signs ad hoc
    dylib = fx.link(t, "signed")
    data = bytearray(open(dylib, "rb").read())
    data[0x4010] ^= 0xff  # a byte of __text, after the signature was made
    broken = dylib + ".broken"
    with open(broken, "wb") as f:
        f.write(data)
    expect_fail("broken signature", fx.check(t, broken), "(offset 0x4000) does not match", "code signature: page")
    expect_fail("no signature", fx.check(t, fx.link(t, "unsigned", flags=["-no_adhoc_codesign"])),
                "no code signature, while ld64.lld signs")
    t = TARGETS[0]  # iOS devices: ld64.lld leaves signing to codesign
    expect_fail("unexpected signature",
                fx.check(t, fx.link(t, "adhoc", flags=["-adhoc_codesign"])),
                "a code signature, while ld64.lld does not sign")
    # an ad-hoc signature that is valid passes the page check
    r = fx.check(t, fx.link(t, "adhoc", flags=["-adhoc_codesign"]))
    check("code signature:" not in r.stdout, "valid ad-hoc signature rejected:\n" + r.stdout)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for prog in (CLANG, LD, OBJDUMP, NM, DWARFDUMP):
        if not shutil.which(prog):
            print("skipped: %s not found" % prog)
            sys.exit(77)
    work = sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fx = Fixtures(sys.argv[1], sys.argv[2], work)
    reader_vs_tools(fx)
    good_targets(fx)
    planted_imports(fx)
    planted_shape(fx)
    planted_signature(fx)
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
