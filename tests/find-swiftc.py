#!/usr/bin/env python3
"""Prints the Swift compiler the tests use, or nothing: $SWIFTC, else swiftc
on PATH, else the swiftc beside the `swift` found on PATH (issue 13).  The
tests find the rest of the toolchain (swift-demangle, the libraries) from
there, so no machine's path is ever written down."""
import os
import shutil

env = os.environ.get("SWIFTC", "")
found = shutil.which(env) if env else shutil.which("swiftc")
if not found:
    swift = shutil.which("swift")
    if swift:
        beside = os.path.join(os.path.dirname(os.path.realpath(swift)), "swiftc")
        found = beside if os.access(beside, os.X_OK) else None
print(found or "", end="")
