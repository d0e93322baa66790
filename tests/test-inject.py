#!/usr/bin/env python3
"""
stallwatch inject on executables, .app bundles and .ipa archives built here
with clang's Apple targets and ld64.lld.  llvm-otool is the independent
reader of the load commands; `stallwatch symbolicate` (the project's own
reader) must still name the same functions after the edit.

usage: test-inject.py STALLWATCH WORKDIR
Skips (77) when the Apple-target toolchain is missing.
"""
import os
import plistlib
import shutil
import struct
import subprocess
import sys
import zipfile

V = "19"
TOOLS = {k: f"{k}-{V}" for k in ("clang", "ld64.lld", "llvm-lipo", "llvm-otool", "llvm-nm")}
SW, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
INSTALL_NAME = "@rpath/libstallwatch.dylib"
RPATH = "@executable_path/Frameworks"
failures = 0
checks = 0

TBD = """--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-ios, arm64-macos, x86_64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1319
exports:
  - targets:         [ arm64-ios, arm64-macos, x86_64-macos ]
    symbols:         [ _puts, dyld_stub_binder ]
...
"""
APP_C = """int puts(const char *);
__attribute__((noinline)) int work(int n) { return n * 3 + puts("work"); }
int main(int argc, char **argv) { (void)argv; return work(argc); }
"""
LIB_C = "int stallwatch_agent_present(void) { return 1; }\n"


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", what)


def run(*cmd, ok=True, **kw):
    p = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if ok and p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    return p


def link_exe(target, arch, platform, out, *extra):
    obj = out + ".o"
    run(TOOLS["clang"], "-target", target, "-nostdlibinc", "-O1", "-c", "app.c", "-o", obj)
    run(TOOLS["ld64.lld"], "-arch", arch, "-platform_version", platform, "14.0", "14.0",
        "-o", out, obj, "libSystem.tbd", "-e", "_main", *extra)


def load_commands(path, arch=None):
    """[(cmd, {field: value})] per slice, from llvm-otool -l."""
    args = [TOOLS["llvm-otool"], "-l", path] + (["-arch", arch] if arch else [])
    out = run(*args).stdout
    cmds, cur = [], None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("cmd "):
            cur = {"cmd": line.split()[1]}
            cmds.append(cur)
        elif cur is not None and " " in line:
            key, _, rest = line.partition(" ")
            cur.setdefault(key, rest.strip())
    return cmds


def dylibs(path, arch=None):
    return [(c["cmd"], c.get("name", "").split(" (offset")[0])
            for c in load_commands(path, arch) if c["cmd"].startswith("LC_LOAD")]


def rpaths(path, arch=None):
    return [c.get("path", "").split(" (offset")[0]
            for c in load_commands(path, arch) if c["cmd"] == "LC_RPATH"]


def symbolicate(path, arch, addr):
    args = [SW, "symbolicate", "-e", path] + (["--arch", arch] if arch else []) + [hex(addr)]
    return run(*args).stdout.splitlines()[0]


def func_addr(path, arch, name):
    args = [TOOLS["llvm-nm"], "--defined-only"] + (["--arch", arch] if arch else []) + [path]
    for line in run(*args).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    sys.exit(f"no {name} in {path}")


def inject(*args, status=0):
    p = run(SW, "inject", *args, ok=False)
    check(p.returncode == status, f"inject {' '.join(args)}: status {p.returncode}, "
          f"wanted {status}: {p.stderr.strip()}")
    return p


def refused(path, why, word):
    before = open(path, "rb").read()
    p = inject(path, status=5)
    check(word in p.stderr and p.stderr.count("\n") == 1,
          f"{why}: one line naming the cause ('{word}'), got {p.stderr!r}")
    check(open(path, "rb").read() == before, f"{why}: the file was changed")
    check(not os.path.exists(path + ".orig"), f"{why}: a backup was written")


def slices(path):
    """(arch name, cputype, offset) per slice, read from the fat header here."""
    data = open(path, "rb").read()
    if struct.unpack_from(">I", data)[0] != 0xcafebabe:
        return [(None, struct.unpack_from("<i", data, 4)[0], 0)]
    n = struct.unpack_from(">I", data, 4)[0]
    out = []
    for i in range(n):
        cpu, sub, off, size, _ = struct.unpack_from(">iiIII", data, 8 + 20 * i)
        out.append(({7 | 0x01000000: "x86_64", 12 | 0x01000000: "arm64"}[cpu], cpu, off))
    return out


def test_executable(path, weak=False):
    """Add, add again, remove: the load commands and the bytes at each step."""
    original = open(path, "rb").read()
    archs = [a for a, _, _ in slices(path)]
    names = {a: symbolicate(path, a, func_addr(path, a, "_work")) for a in archs}
    p = inject(*(["--weak"] if weak else []), path)
    want = "LC_LOAD_WEAK_DYLIB" if weak else "LC_LOAD_DYLIB"
    for a in archs:
        libs = dylibs(path, a)
        check(libs[-1] == (want, INSTALL_NAME), f"{path} {a}: last dylib is {libs[-1]}")
        check(libs[:-1] == dylibs(path + ".orig", a), f"{path} {a}: other dylibs changed")
        check(rpaths(path, a).count(RPATH) == 1, f"{path} {a}: rpaths {rpaths(path, a)}")
        check(symbolicate(path, a, func_addr(path, a, "_work")) == names[a],
              f"{path} {a}: the project's reader no longer names _work")
    check(len(open(path, "rb").read()) == len(original), f"{path}: size changed")
    check(open(path + ".orig", "rb").read() == original, f"{path}: backup differs from original")
    check(f"codesign --force --sign" in p.stdout, f"{path}: no codesign line on stdout")
    injected = open(path, "rb").read()
    p = inject(path)
    check("nothing to do" in p.stderr and open(path, "rb").read() == injected,
          f"{path}: a second inject changed something: {p.stderr!r}")
    inject("--remove", path)
    check(open(path, "rb").read() == original, f"{path}: --remove did not give the original bytes")


def make_app(bundle, exe_src, exe_name, binary_plist=False):
    os.makedirs(bundle)
    shutil.copy(exe_src, os.path.join(bundle, exe_name))
    info = {"CFBundleExecutable": exe_name, "CFBundleIdentifier": "com.example.app"}
    fmt = plistlib.FMT_BINARY if binary_plist else plistlib.FMT_XML
    with open(os.path.join(bundle, "Info.plist"), "wb") as f:
        plistlib.dump(info, f, fmt=fmt)
    with open(os.path.join(bundle, "Assets.car"), "wb") as f:
        f.write(os.urandom(3000))


def test_app(exe, dylib):
    bundle = os.path.join(WORK, "Demo.app")
    make_app(bundle, exe, "DemoBinary")  # not the bundle's name: Info.plist decides
    inner = os.path.join(bundle, "DemoBinary")
    original = open(inner, "rb").read()
    p = inject(bundle, status=2)
    check("--dylib" in p.stderr, f"a bundle without --dylib: {p.stderr!r}")
    p = inject("--dylib", dylib, bundle)
    check(dylibs(inner)[-1] == ("LC_LOAD_DYLIB", INSTALL_NAME), "bundle: no load command")
    copied = os.path.join(bundle, "Frameworks", "libstallwatch.dylib")
    check(os.path.exists(copied) and open(copied, "rb").read() == open(dylib, "rb").read(),
          "bundle: the dylib was not copied into Frameworks/")
    backup = os.path.join(WORK, "Demo.orig")
    check(os.path.exists(backup) and open(backup, "rb").read() == original,
          "bundle: the original executable is not in Demo.orig")
    lines = p.stdout.splitlines()
    check(len(lines) == 2 and "Frameworks/libstallwatch.dylib" in lines[0]
          and lines[1].endswith("Demo.app'"), f"bundle: codesign lines {lines}")
    inject("--remove", bundle)
    check(open(inner, "rb").read() == original and not os.path.exists(copied),
          "bundle: --remove left the executable or the dylib changed")


def raw_entries(path):
    """name -> the entry's local header and data, byte for byte."""
    data = open(path, "rb").read()
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            off = info.header_offset
            name_len, extra_len = struct.unpack_from("<HH", data, off + 26)
            end = off + 30 + name_len + extra_len + info.compress_size
            out[info.filename] = (data[off:end], info.external_attr, info.compress_type)
    return out


def test_ipa(exe, dylib):
    stage = os.path.join(WORK, "ipa-stage")
    make_app(os.path.join(stage, "Payload", "Shop.app"), exe, "Shop", binary_plist=True)
    ipa = os.path.join(WORK, "Shop.ipa")
    with zipfile.ZipFile(ipa, "w") as z:
        z.writestr("iTunesMetadata.plist", plistlib.dumps({"itemName": "Shop"}),
                   zipfile.ZIP_STORED)
        for root, _, files in sorted(os.walk(stage)):
            for n in sorted(files):
                full = os.path.join(root, n)
                arc = os.path.relpath(full, stage)
                z.write(full, arc, zipfile.ZIP_DEFLATED)
    before = raw_entries(ipa)
    original_exe = open(os.path.join(stage, "Payload", "Shop.app", "Shop"), "rb").read()
    # libzip is loaded by the first archive, not at start-up: without it,
    # one line names it and the archive is left alone
    gone = os.path.join(WORK, "libzip-gone.so")
    p = run(SW, "inject", "--dylib", dylib, ipa, ok=False,
            env=dict(os.environ, STALLWATCH_LIBZIP=gone))
    check(p.returncode != 0 and "cannot load" in p.stderr and gone in p.stderr and
          "install libzip" in p.stderr and p.stderr.count("\n") == 1,
          f"inject without libzip: status {p.returncode}: {p.stderr!r}")
    check(raw_entries(ipa) == before and not os.path.exists(ipa + ".orig"),
          "inject without libzip changed the archive")
    inject("--dylib", dylib, ipa)
    after = raw_entries(ipa)
    exe_name = "Payload/Shop.app/Shop"
    lib_name = "Payload/Shop.app/Frameworks/libstallwatch.dylib"
    for name, entry in before.items():
        if name != exe_name:
            check(after.get(name) == entry, f"ipa: entry {name} changed")
    check(set(after) == set(before) | {lib_name}, f"ipa: entries {sorted(after)}")
    with zipfile.ZipFile(ipa) as z:
        z.extract(exe_name, os.path.join(WORK, "ipa-out"))
        check(z.read(lib_name) == open(dylib, "rb").read(), "ipa: dylib differs")
        check(z.getinfo(exe_name).external_attr == before[exe_name][1],
              "ipa: the executable's attributes changed")
        check(z.testzip() is None, "ipa: a CRC does not match")
    out_exe = os.path.join(WORK, "ipa-out", exe_name)
    check(dylibs(out_exe)[-1] == ("LC_LOAD_DYLIB", INSTALL_NAME), "ipa: no load command")
    check(os.path.exists(ipa + ".orig") and raw_entries(ipa + ".orig") == before,
          "ipa: the original archive is not kept in Shop.ipa.orig")
    inject("--remove", ipa)
    with zipfile.ZipFile(ipa) as z:
        check(z.read(exe_name) == original_exe and lib_name not in z.namelist(),
              "ipa: --remove did not restore the executable")


def set_cryptid(path, value):
    """Sets cryptid in the LC_ENCRYPTION_INFO_64 that ld64.lld writes for iOS."""
    data = bytearray(open(path, "rb").read())
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x2c:
            struct.pack_into("<I", data, at + 16, value)
            open(path, "wb").write(data)
            return
        at += size
    sys.exit("no LC_ENCRYPTION_INFO_64 to mark")


def full_header():
    """An executable whose load commands end within 90 bytes of its first section."""
    obj = "full.o"
    run(TOOLS["clang"], "-target", "arm64-apple-ios14.0", "-nostdlibinc", "-O1", "-c", "app.c",
        "-o", obj)
    for n in range(230, 420):
        args = sum((["-rpath", f"@loader_path/padding/{i:04d}"] for i in range(n)), [])
        run(TOOLS["ld64.lld"], "-arch", "arm64", "-platform_version", "ios", "14.0", "14.0",
            "-o", "full", obj, "libSystem.tbd", "-e", "_main", *args)
        data = open("full", "rb").read()
        end = 32 + struct.unpack_from("<I", data, 20)[0]
        text = [c for c in load_commands("full") if c.get("sectname") == "__text"]
        room = int(text[0]["offset"]) - end
        if 0 <= room < 90:
            return "full"
    sys.exit("could not fill a header to within 90 bytes of its first section")


def main():
    missing = [t for t in TOOLS.values() if not shutil.which(t)]
    if missing:
        print(f"skipped: the Apple-target toolchain is missing ({', '.join(missing)})")
        sys.exit(77)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chdir(WORK)
    open("libSystem.tbd", "w").write(TBD)
    open("app.c", "w").write(APP_C)
    open("lib.c", "w").write(LIB_C)
    run(TOOLS["clang"], "-target", "arm64-apple-ios14.0", "-nostdlibinc", "-dynamiclib",
        "-fuse-ld=lld", "-nostdlib", "lib.c", "libSystem.tbd", "-o", "libstallwatch.dylib",
        "-Wl,-install_name," + INSTALL_NAME)

    link_exe("arm64-apple-ios14.0", "arm64", "ios", "thin")
    for f in ("thin-copy", "thin-weak", "thin-app", "thin-ipa", "encrypted", "arm64e"):
        shutil.copy("thin", f)
    test_executable("thin-copy")
    test_executable("thin-weak", weak=True)

    link_exe("x86_64-apple-macos11", "x86_64", "macos", "mac-x86_64", "-headerpad", "0x400")
    link_exe("arm64-apple-macos11", "arm64", "macos", "mac-arm64", "-headerpad", "0x400")
    run(TOOLS["llvm-lipo"], "-create", "mac-x86_64", "mac-arm64", "-output", "universal")
    test_executable("universal")
    p = inject("universal")
    check("2 of 2 slices" in p.stderr and "no longer valid" in p.stderr,
          f"universal: the summary or the signature warning: {p.stderr!r}")

    # Debian's toolchain cannot build arm64e: relabel an arm64 build's subtype.
    data = bytearray(open("arm64e", "rb").read())
    struct.pack_into("<I", data, 8, 0x80000002)
    open("arm64e", "wb").write(data)
    test_executable("arm64e")

    test_app("thin-app", "libstallwatch.dylib")
    test_ipa("thin-ipa", "libstallwatch.dylib")

    set_cryptid("encrypted", 1)
    refused("encrypted", "an encrypted binary", "encrypted")
    refused(full_header(), "a header without room", "bytes between its load commands")
    link_exe("x86_64-apple-macos11", "x86_64", "macos", "tight")  # lld's default: 40 bytes
    refused("tight", "lld's x86_64 default padding", "-headerpad")
    open("notes.txt", "w").write("not an executable\n")
    refused("notes.txt", "a text file", "not a Mach-O file")
    refused("libstallwatch.dylib", "a dylib", "not an executable")

    print(f"{checks} checks, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
