#!/usr/bin/env python3
"""Prints the Swift compiler the tests use, or nothing: $SWIFTC, else swiftc
on PATH, else the swiftc beside the `swift` found on PATH, else the swiftc a
login shell finds (toolchains often reach PATH through /etc/profile.d, which
a non-interactive shell does not read).  The tests find the rest of the
toolchain (swift-demangle, the libraries) from there, so no machine's path
is ever written down (issue 13)."""
import os
import shutil
import subprocess


def beside_swift():
    swift = shutil.which("swift")
    if swift:
        beside = os.path.join(os.path.dirname(os.path.realpath(swift)), "swiftc")
        if os.access(beside, os.X_OK):
            return beside
    return None


def login_shell():
    sh = shutil.which("bash") or shutil.which("sh")
    if not sh:
        return None
    try:
        r = subprocess.run([sh, "-lc", "command -v swiftc"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    return path if os.path.isabs(path) and os.access(path, os.X_OK) else None


env = os.environ.get("SWIFTC", "")
found = shutil.which(env) if env else (shutil.which("swiftc") or beside_swift() or login_shell())
print(found or "", end="")
