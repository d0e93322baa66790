#!/usr/bin/env python3
"""check-dylib (tests/check-dylib.c) against dylibs and objects built here
with clang's Apple targets and ld64.lld: a stand-in agent passes for all
five Darwin targets, and each planted defect (a forbidden or unlisted
import, an import bound to the wrong library, an extra library or export,
a missing export, a wrong install name, platform or minimum OS, no UUID, a
bundle, a universal file, a broken or missing signature, malloc or a lock
in the capture object) fails with a message naming it.

usage: test-dylib-check.py CHECK-DYLIB SOURCE-ROOT WORKDIR
Skips (77) when clang-19 or ld64.lld-19 is missing.
"""
import os
import shutil
import subprocess
import sys

from swtest import check, failures

CLANG = os.environ.get("SW_APPLE_CC", "clang-19")
LD = os.environ.get("SW_APPLE_LD", "ld64.lld-19")
LIPO = "llvm-lipo-19"

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
               min_os or target[3], min_os or target[3], "-install_name", install, "-o", out,
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
    for tool in (CLANG, LD):
        if not shutil.which(tool):
            print("skipped: %s not found" % tool)
            sys.exit(77)
    work = sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fx = Fixtures(sys.argv[1], sys.argv[2], work)
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
