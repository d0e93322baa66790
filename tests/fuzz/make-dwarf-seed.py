#!/usr/bin/env python3
"""Packs the DWARF sections of an ELF file as fuzz-dwarf.c reads them.

usage: make-dwarf-seed.py ELF OUTPUT

Then scrub-paths.py SOURCE-ROOT OUTPUT, so the seed names no directory of
the machine it was made on.
"""
import os
import struct
import subprocess
import sys
import tempfile

NAMES = ["info", "abbrev", "line", "str", "line_str", "str_offsets", "addr", "ranges",
         "rnglists", "aranges"]


def main():
    elf, out = sys.argv[1], sys.argv[2]
    with open(elf, "rb") as f:
        ident = f.read(6)
    blobs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in NAMES:
            path = os.path.join(tmp, n)
            r = subprocess.run(["llvm-objcopy-14", "--dump-section=.debug_%s=%s" % (n, path),
                                elf, os.path.join(tmp, "x")], capture_output=True)
            blobs.append(open(path, "rb").read() if r.returncode == 0 and
                         os.path.exists(path) else b"")
    flags = (1 if ident[5] == 2 else 0) | (2 if ident[4] == 1 else 0)
    with open(out, "wb") as f:
        f.write(b"".join(struct.pack("<I", len(b)) for b in blobs))
        f.write(bytes([flags]))
        f.write(b"".join(blobs))


if __name__ == "__main__":
    main()
