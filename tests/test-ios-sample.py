#!/usr/bin/env python3
"""
The sample iOS app (tests/apps/ios-sample) as far as Linux can check it:
its Swift sources parse, its Info.plist names the executable build.sh
writes and the bundle identifier CHECKLIST.md uses, and every function
CHECKLIST.md and README.md promise a stall in exists in Stalls.swift.
UIKit exists on Apple's systems only, so nothing here type-checks or runs it.

usage: test-ios-sample.py SAMPLE_DIR
"""
import glob
import os
import plistlib
import re
import shutil
import subprocess
import sys

sample = sys.argv[1]
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


info = plistlib.load(open(os.path.join(sample, "Info.plist"), "rb"))
build = open(os.path.join(sample, "build.sh")).read()
checklist = open(os.path.join(sample, "CHECKLIST.md")).read()
readme = open(os.path.join(sample, "README.md")).read()
stalls = open(os.path.join(sample, "Sources", "Stalls.swift")).read()
check(f'-o "$app/{info["CFBundleExecutable"]}"' in build,
      f"build.sh does not write the executable Info.plist names ({info['CFBundleExecutable']})")
check(info["CFBundleIdentifier"] in checklist, "CHECKLIST.md uses another bundle identifier")
check(info.get("MinimumOSVersion") == "14.0" and "arm64-apple-ios14.0" in build,
      "the deployment target differs between Info.plist and build.sh")
defined = set(re.findall(r"static func (\w+)\(", stalls))
promised = set(re.findall(r"`Stalls\.(\w+)\(", checklist + readme))
check(promised and promised <= defined, f"promised stalls {sorted(promised - defined)} do not exist")

swiftc = shutil.which("swiftc")
if not swiftc:
    print("skipped the parse: no Swift toolchain on PATH (swiftc)")
else:
    for src in sorted(glob.glob(os.path.join(sample, "Sources", "*.swift"))):
        p = subprocess.run([swiftc, "-parse", src], capture_output=True, text=True)
        check(p.returncode == 0, f"{os.path.basename(src)} does not parse: {p.stderr}")
print(f"{len(defined)} stall functions, {failures} failed")
sys.exit(1 if failures else 0)
