#!/usr/bin/env python3
"""Prints the compiler the tests use, or nothing.

    find-compiler.py swiftc|rustc

swiftc: $SWIFTC, else swiftc on PATH, else the swiftc beside the `swift`
found on PATH, else the swiftc a login shell finds (toolchains often reach
PATH through /etc/profile.d, which a non-interactive shell does not read).
rustc: $RUSTC, else rustc on PATH, else the one a login shell finds, else
the one in $CARGO_HOME/bin (rustup's default: ~/.cargo/bin).  The tests
find the rest of the toolchain (swift-demangle, the libraries) from there,
so no machine's path is ever written down (issue 13)."""
import os
import shutil
import subprocess
import sys


def beside_swift():
    swift = shutil.which("swift")
    if swift:
        beside = os.path.join(os.path.dirname(os.path.realpath(swift)), "swiftc")
        if os.access(beside, os.X_OK):
            return beside
    return None


def login_shell(name):
    sh = shutil.which("bash") or shutil.which("sh")
    if not sh:
        return None
    try:
        r = subprocess.run([sh, "-lc", "command -v " + name], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    return path if os.path.isabs(path) and os.access(path, os.X_OK) else None


def cargo_home():
    home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    path = os.path.join(home, "bin", "rustc")
    return path if os.access(path, os.X_OK) else None


name = sys.argv[1] if len(sys.argv) > 1 else "swiftc"
env = os.environ.get(name.upper(), "")
if env:
    found = shutil.which(env)
elif name == "swiftc":
    found = shutil.which("swiftc") or beside_swift() or login_shell("swiftc")
elif name == "rustc":
    found = shutil.which("rustc") or login_shell("rustc") or cargo_home()
else:
    sys.exit("find-compiler.py: swiftc or rustc, not '%s'" % name)
print(found or "", end="")
