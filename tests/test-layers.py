#!/usr/bin/env python3
"""
The host library's folders depend on each other in one direction only.

Every cross-folder include names its folder ("dwarf/dwarf.h"), so the edges
between folders can be read off the include lines.  A folder may include
its own headers and those of folders on a lower layer; cli/ may use any of
lib/; the agent (injector/) shares only the wire format with lib/.

  util
  <- wire, objfile, demangle, tree, host
  <- session, dwarf, render
  <- symbols
  <- device, report
  <- cli

Usage: test-layers.py SOURCE_ROOT          checks the tree
       test-layers.py SOURCE_ROOT --self    also proves that a planted
                                            back-edge is caught
"""
import os
import re
import shutil
import sys
import tempfile

LAYERS = [
    ["util"],
    ["wire", "objfile", "demangle", "tree", "host"],
    ["session", "dwarf", "render"],
    ["symbols"],
    ["device", "report"],
]
LAYER = {folder: i for i, folders in enumerate(LAYERS) for folder in folders}
# What the agent may take from lib/: the wire format's headers.
AGENT_ALLOWED = {"wire/wire.h", "wire/wire-private.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top):
    for d, _, names in os.walk(top):
        for n in names:
            if n.endswith((".c", ".h")):
                yield os.path.join(d, n)


def check(root):
    """Returns a list of 'file: message' strings, empty when the tree is clean."""
    errors = []
    lib = os.path.join(root, "lib")
    folders = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
    for folder in folders:
        if folder not in LAYER:
            errors.append(f"lib/{folder}: a folder with no layer (add it to LAYERS and HACKING.md)")
    for path in sources(lib):
        rel = os.path.relpath(path, root)
        folder = rel.split(os.sep)[1]
        if folder not in LAYER:
            if "/" in rel[len("lib/"):]:
                continue
            errors.append(f"{rel}: source file at the top of lib/, outside every folder")
            continue
        for name in INCLUDE.findall(open(path, encoding="utf-8").read()):
            if name == "config.h":
                continue
            if "/" not in name:
                if not os.path.exists(os.path.join(os.path.dirname(path), name)):
                    errors.append(f"{rel}: includes '{name}' without its folder")
                continue
            target = name.split("/")[0]
            if target not in LAYER:
                errors.append(f"{rel}: includes '{name}', which is not a lib/ folder")
            elif target != folder and LAYER[target] >= LAYER[folder]:
                errors.append(f"{rel}: includes '{name}': {folder} (layer {LAYER[folder]}) "
                              f"may not depend on {target} (layer {LAYER[target]})")
    injector = os.path.join(root, "injector")
    for path in sources(injector):
        rel = os.path.relpath(path, root)
        for name in INCLUDE.findall(open(path, encoding="utf-8").read()):
            top = name.split("/")[0]
            if top in LAYER and name not in AGENT_ALLOWED:
                errors.append(f"{rel}: the agent includes '{name}'; it shares only the wire format with lib/")
    return errors


def self_test(root):
    """A copy of lib/ with one back-edge planted must fail, naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(root, "lib"), os.path.join(tmp, "lib"))
        os.mkdir(os.path.join(tmp, "injector"))
        planted = os.path.join(tmp, "lib", "util", "buf.c")
        with open(planted, "a") as f:
            f.write('\n#include "symbols/symsearch.h"\n')
        errors = check(tmp)
        if not any("lib/util/buf.c" in e and "symbols/symsearch.h" in e for e in errors):
            print("FAIL: a planted back-edge util -> symbols was not caught:", errors)
            return False
        print(f"ok: a planted back-edge is caught ({errors[0]})")
    return True


def main():
    root = sys.argv[1]
    errors = check(root)
    for e in errors:
        print("FAIL:", e)
    edges = 0
    for path in sources(os.path.join(root, "lib")):
        edges += sum(1 for n in INCLUDE.findall(open(path, encoding="utf-8").read()) if "/" in n)
    print(f"{edges} cross-folder includes checked, {len(errors)} against the layers")
    ok = not errors
    if "--self" in sys.argv[2:]:
        ok = self_test(root) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
