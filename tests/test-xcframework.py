#!/usr/bin/env python3
"""
Stallwatch.xcframework as Xcode reads it, and Package.swift as SwiftPM reads
it.  Builds the XCFramework with make-xcframework.sh (reusing the Darwin
cross builds in BUILDS) and checks it with readers that are not ours:
plistlib, llvm-lipo, llvm-otool, llvm-nm, `swift package dump-package`.

usage: test-xcframework.py SOURCE_ROOT OUTDIR PLIST_TOOL VERSION BUILDS
"""
import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import tempfile

SRC, OUT, PLIST_TOOL, VERSION, BUILDS = sys.argv[1:6]
TOOLS = {k: f"{k}-19" for k in ("llvm-lipo", "llvm-otool", "llvm-nm")}
# LC_BUILD_VERSION platforms (mach-o/loader.h): what each library must carry
PLATFORM = {("ios", None): "2", ("ios", "simulator"): "7", ("macos", None): "1"}
BUNDLE_PLATFORM = {("ios", None): "iPhoneOS", ("ios", "simulator"): "iPhoneSimulator",
                   ("macos", None): "MacOSX"}
failures = checks = 0


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", what)


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def public_entry_points():
    """The functions injector/stallwatch.h declares, as Mach-O symbol names."""
    header = open(os.path.join(SRC, "injector", "stallwatch.h")).read()
    header = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    return {"_" + n for n in re.findall(r"^\s*void\s+(\w+)\s*\(void\)\s*;", header, re.M)}


def build_version(binary, arch):
    """(platform, minos) of the slice's LC_BUILD_VERSION."""
    out = run(TOOLS["llvm-otool"], "-arch", arch, "-l", binary)
    block = out[out.index("LC_BUILD_VERSION"):]
    platform = re.search(r"platform (\d+)", block).group(1)
    minos = re.search(r"minos ([\d.]+)", block).group(1)
    return platform, minos


def check_binary(lib, binary, archs, platform_key):
    ident = lib["LibraryIdentifier"]
    got = sorted(run(TOOLS["llvm-lipo"], "-archs", binary).split())
    check(got == archs, f"{ident}: binary slices {got}, Info.plist says {archs}")
    install = "@rpath/Stallwatch.framework/" + ("Versions/A/" if platform_key[0] == "macos" else "")
    install += "Stallwatch"
    lowest = None
    for arch in got:
        hdr = run(TOOLS["llvm-otool"], "-arch", arch, "-hv", binary)
        check(" DYLIB " in hdr, f"{ident} {arch}: not MH_DYLIB:\n{hdr}")
        ids = run(TOOLS["llvm-otool"], "-arch", arch, "-D", binary).split()
        check(ids[-1] == install, f"{ident} {arch}: install name {ids[-1]}, wanted {install}")
        platform, minos = build_version(binary, arch)
        version = tuple(int(x) for x in minos.split("."))
        if lowest is None or version < lowest[0]:
            lowest = (version, minos)
        check(platform == PLATFORM[platform_key],
              f"{ident} {arch}: LC_BUILD_VERSION platform {platform}")
        exports = set(run(TOOLS["llvm-nm"], "--arch", arch, "--extern-only", "--defined-only",
                          "--just-symbol-name", binary).split())
        check(exports == public_entry_points(),
              f"{ident} {arch}: exports {sorted(exports)} beyond the public entry points")
    return lowest[1]


def check_framework(xc, lib):
    ident = lib["LibraryIdentifier"]
    platform, variant = lib["SupportedPlatform"], lib.get("SupportedPlatformVariant")
    key = (platform, variant)
    check(key in PLATFORM, f"{ident}: unknown platform {platform} / variant {variant}")
    archs = sorted(lib["SupportedArchitectures"])
    want_id = f"{platform}-{'_'.join(archs)}" + (f"-{variant}" if variant else "")
    check(ident == want_id, f"library identifier {ident}, Xcode names it {want_id}")
    fw = os.path.join(xc, ident, lib["LibraryPath"])
    check(lib["LibraryPath"] == "Stallwatch.framework" and os.path.isdir(fw),
          f"{ident}: no {lib['LibraryPath']}")
    versioned = platform == "macos"
    root = os.path.join(fw, "Versions", "A") if versioned else fw
    if versioned:
        check(os.readlink(os.path.join(fw, "Versions", "Current")) == "A", "Versions/Current")
        for f in ("Stallwatch", "Headers", "Modules", "Resources"):
            check(os.readlink(os.path.join(fw, f)) == f"Versions/Current/{f}", f"link {f}")
    info_path = os.path.join(root, "Resources" if versioned else "", "Info.plist")
    info = plistlib.load(open(info_path, "rb"))
    check(info.get("CFBundlePackageType") == "FMWK", f"{ident}: CFBundlePackageType")
    check(info.get("CFBundleExecutable") == "Stallwatch", f"{ident}: CFBundleExecutable")
    check(info.get("CFBundleSupportedPlatforms") == [BUNDLE_PLATFORM[key]],
          f"{ident}: CFBundleSupportedPlatforms {info.get('CFBundleSupportedPlatforms')}")
    check(info.get("CFBundleShortVersionString") == VERSION, f"{ident}: version")
    binary = os.path.join(root, info["CFBundleExecutable"])
    minos = check_binary(lib, binary, archs, key)
    min_key = "LSMinimumSystemVersion" if versioned else "MinimumOSVersion"
    check(info.get(min_key) == minos,
          f"{ident}: {min_key} {info.get(min_key)}, the lowest slice's is {minos}")
    header = os.path.join(root, "Headers", "stallwatch.h")
    check(open(header).read() == open(os.path.join(SRC, "injector", "stallwatch.h")).read(),
          f"{ident}: Headers/stallwatch.h is not the public header")
    modmap = open(os.path.join(root, "Modules", "module.modulemap")).read()
    check(re.search(r'framework module Stallwatch\s*\{[^}]*umbrella header "stallwatch.h"',
                    modmap) is not None, f"{ident}: module map {modmap!r}")
    return binary


def check_own_link(binary, ident):
    """The framework binary is its own link, not a renamed libstallwatch.dylib."""
    build = {"ios-arm64": "ios-arm64", "ios-arm64_x86_64-simulator": "iossim-arm64",
             "macos-arm64_x86_64": "macos-arm64"}[ident]
    dylib = os.path.join(BUILDS, build, "injector", "libstallwatch.dylib")
    ids = run(TOOLS["llvm-otool"], "-D", dylib).split()
    check(ids[-1] == "@rpath/libstallwatch.dylib", f"{build}: the dylib's install name {ids[-1]}")
    thin = run(TOOLS["llvm-lipo"], "-archs", binary).split()
    with tempfile.TemporaryDirectory() as tmp:
        one = binary
        if len(thin) > 1:
            one = os.path.join(tmp, "slice")
            run(TOOLS["llvm-lipo"], "-thin", "arm64", binary, "-output", one)
        check(open(one, "rb").read() != open(dylib, "rb").read(),
              f"{ident}: the framework binary is a copy of libstallwatch.dylib")


def check_package():
    swift = shutil.which("swift")
    if not swift:
        print("skipped: Package.swift not parsed: no Swift toolchain on PATH")
        return
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(SRC, "Package.swift"), tmp)
        out = subprocess.run([swift, "package", "dump-package"], cwd=tmp, capture_output=True,
                             text=True)
        check(out.returncode == 0, f"swift package dump-package: {out.stderr}")
        if out.returncode:
            return
        pkg = json.loads(out.stdout)
        targets = {t["name"]: t for t in pkg["targets"]}
        t = targets.get("Stallwatch", {})
        check(t.get("type") == "binary" and t.get("path") == "Stallwatch.xcframework",
              f"Package.swift: target {t}")
        products = [p["name"] for p in pkg["products"]]
        check(products == ["Stallwatch"], f"Package.swift: products {products}")
        platforms = {p["platformName"] for p in pkg["platforms"]}
        check(platforms == {"ios", "macos"}, f"Package.swift: platforms {platforms}")


def main():
    missing = [t for t in TOOLS.values() if not shutil.which(t)]
    if missing:
        print(f"skipped: {', '.join(missing)} not found")
        sys.exit(77)
    make = os.path.join(SRC, "injector", "darwin", "xcframework", "make-xcframework.sh")
    p = subprocess.run(["sh", make, SRC, OUT, PLIST_TOOL, VERSION, BUILDS],
                       capture_output=True, text=True)
    if p.returncode == 77:
        print(p.stdout.strip())
        sys.exit(77)
    if p.returncode:
        sys.exit(f"make-xcframework.sh failed:\n{p.stdout}{p.stderr}")
    xc = os.path.join(OUT, "Stallwatch.xcframework")
    info = plistlib.load(open(os.path.join(xc, "Info.plist"), "rb"))
    check(info.get("CFBundlePackageType") == "XFWK", "XCFramework CFBundlePackageType")
    check(info.get("XCFrameworkFormatVersion") == "1.0", "XCFrameworkFormatVersion")
    libs = info.get("AvailableLibraries", [])
    idents = sorted(lib["LibraryIdentifier"] for lib in libs)
    check(idents == ["ios-arm64", "ios-arm64_x86_64-simulator", "macos-arm64_x86_64"],
          f"libraries {idents}")
    check(sorted(os.listdir(xc)) == sorted(idents + ["Info.plist"]),
          f"XCFramework holds {sorted(os.listdir(xc))}")
    for lib in libs:
        binary = check_framework(xc, lib)
        check_own_link(binary, lib["LibraryIdentifier"])
    check_package()
    print(f"{checks} checks, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
