#!/usr/bin/env python3
"""The agent's compact-unwind reader against images linked here by ld64.lld
for arm64 and x86_64 (tests/data/unwind-compact: one file built with frame
pointers, one without), with other tools as the reference: the function
offsets and encodings from `llvm-objdump --unwind-info`, each function's
prologue (frame size, pushed registers) from `llvm-objdump -d`, the FDEs
from `llvm-dwarfdump --eh-frame`.  test-unwind-compact.c does the checks.

Where aarch64-linux-gnu-gcc and qemu-aarch64 are found, the test program
is also cross-built for aarch64 (return addresses signed with PACIA) and
run under `qemu-aarch64 -cpu max` on the arm64 image, so that the core's
unwinder walks that image's stacks as on a device.

usage: test-unwind-compact.py TEST-PROGRAM SOURCE-ROOT WORKDIR
Skips (77) when the Apple-target toolchain is missing.
"""
import os
import re
import shutil
import subprocess
import sys

V = "19"
TOOLS = {"cc": "clang-" + V, "ld": "ld64.lld-" + V, "objdump": "llvm-objdump-" + V,
         "dwarfdump": "llvm-dwarfdump-" + V}

TBD = """--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-macos, x86_64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1319
exports:
  - targets:         [ arm64-macos, x86_64-macos ]
    symbols:         [ dyld_stub_binder ]
...
"""


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), r.stderr))
    return r.stdout


def build(arch, src, work):
    env_cflags = ["-target", arch + "-apple-macos11", "-nostdlibinc", "-O2",
                  "-fno-stack-protector", "-c"]
    objs = []
    for name, fp in (("omit", "-fomit-frame-pointer"), ("frame", "-fno-omit-frame-pointer")):
        obj = os.path.join(work, "%s-%s.o" % (name, arch))
        run([TOOLS["cc"]] + env_cflags + [fp, os.path.join(src, name + ".c"), "-o", obj])
        objs.append(obj)
    tbd = os.path.join(work, "libSystem.tbd")
    with open(tbd, "w") as f:
        f.write(TBD)
    out = os.path.join(work, "unwind-" + arch)
    run([TOOLS["ld"], "-arch", arch, "-platform_version", "macos", "11.0", "11.0", "-e", "_main",
         "-o", out] + objs + [tbd])
    return out


def unwind_entries(image):
    """(offset, encoding) of every second-level entry, and the sentinel's offset."""
    text = run([TOOLS["objdump"], "--unwind-info", image])
    entries = [(int(m.group(1), 16), int(m.group(2), 16)) for m in re.finditer(
        r"^\s+\[\d+\]: function offset=0x([0-9a-f]+), encoding(?:\[\d+\])?=0x([0-9a-f]+)",
        text, re.M)]
    tops = re.findall(r"^\s+\[\d+\]: function offset=0x([0-9a-f]+), 2nd level page offset",
                      text, re.M)
    return entries, int(tops[-1], 16)


def prologues(image, arch, base):
    """Per function offset: (frame size the prologue makes, registers pushed in order)."""
    text = run([TOOLS["objdump"], "-d", "--no-show-raw-insn", image])
    out = {}
    for block in re.split(r"\n(?=[0-9a-f]{16} <)", text):
        m = re.match(r"([0-9a-f]{16}) <", block)
        if not m:
            continue
        insns = [l.split(":", 1)[1].split(";")[0].split("##")[0].strip()
                 for l in block.splitlines()[1:] if re.match(r"\s*[0-9a-f]+:", l)]
        size, pushes = (8, []) if arch == "x86_64" else (0, [])
        for ins in insns:
            if arch == "x86_64":
                p = re.match(r"pushq\s+%(\w+)$", ins)
                s = re.match(r"subq\s+\$0x([0-9a-f]+), %rsp$", ins)
                if p:
                    size += 8
                    if p.group(1) != "rax":  # pushq %rax only moves the stack
                        pushes.append(p.group(1))
                elif s:
                    size += int(s.group(1), 16)
                else:
                    break
            else:
                p = re.match(r"(?:stp|str)\s+.*\[sp, #-0x([0-9a-f]+)\]!$", ins)
                s = re.match(r"sub\s+sp, sp, #0x([0-9a-f]+)(, lsl #12)?$", ins)
                if p:
                    size += int(p.group(1), 16)
                elif s:
                    size += int(s.group(1), 16) << (12 if s.group(2) else 0)
                else:
                    break
        out[int(m.group(1), 16) - base] = (size, pushes)
    return out


def fdes(image):
    text = run([TOOLS["dwarfdump"], "--eh-frame", image])
    return re.findall(r"^([0-9a-f]{8}) [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ "
                      r"pc=([0-9a-f]+)\.\.\.([0-9a-f]+)", text, re.M)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for tool in TOOLS.values():
        if not shutil.which(tool):
            print("skipped: %s not found" % tool)
            sys.exit(77)
    prog, root, work = sys.argv[1:]
    src = os.path.join(root, "tests", "data", "unwind-compact")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    status = 0
    for arch in ("arm64", "x86_64"):
        image = build(arch, src, work)
        base = 0x100000000
        entries, end = unwind_entries(image)
        pro = prologues(image, arch, base)
        ref = os.path.join(work, "unwind-%s.ref" % arch)
        with open(ref, "w") as f:
            f.write("end %x\n" % end)
            for off, enc in entries:
                size, pushes = pro.get(off, (-1, []))
                f.write("fn %x %x %d %s\n" % (off, enc, size, ",".join(pushes) or "-"))
            for off, lo, hi in fdes(image):
                f.write("fde %s %s %s\n" % (off, lo, hi))
        print("%s: %d entries, reference in %s" % (arch, len(entries), ref), flush=True)
        r = subprocess.run([prog, arch, image, ref])
        if r.returncode != 0:
            status = 1
        if arch == "arm64" and run_on_aarch64(root, work, image, ref) != 0:
            status = 1
    sys.exit(status)


def run_on_aarch64(root, work, image, ref):
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if not gcc or not qemu:
        print("aarch64: no aarch64-linux-gnu-gcc or qemu-aarch64, not run there")
        return 0
    prog = os.path.join(work, "test-unwind-compact-aarch64")
    inj = os.path.join(root, "injector")
    run([gcc, "-O2", "-g", "-static", "-D_GNU_SOURCE", "-std=gnu11", "-DSW_TEST_PAC",
         "-mbranch-protection=pac-ret", "-I" + inj, "-I" + os.path.join(root, "lib"),
         "-I" + os.path.join(root, "tests"), "-o", prog,
         os.path.join(root, "tests", "test-unwind-compact.c")]
        + [os.path.join(inj, f) for f in ("unwind.c", "unwind-cfi.c", "unwind-compact.c")])
    print("aarch64 (qemu-aarch64 -cpu max):", flush=True)
    r = subprocess.run([qemu, "-cpu", "max", prog, "arm64", image, ref], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    print(r.stdout, end="")
    if "return addresses signed" not in r.stdout:
        print("FAIL: the arm64 stack under qemu was not unwound with signed return addresses")
        return 1
    return r.returncode


if __name__ == "__main__":
    main()
