#!/usr/bin/env python3
"""Replaces a build machine's directory in binary seeds with a neutral one.

Seeds built from fixtures carry the directories they were compiled in
(DW_AT_comp_dir, N_OSO, file names).  Committed seeds must not name the
machine they were made on, so each occurrence of PREFIX becomes a string of
the same length, which keeps every offset and string table valid.

usage: scrub-paths.py PREFIX FILE...
"""
import sys


def neutral(length):
    base = b"/src/stallwatch"
    return (base * (length // len(base) + 1))[:length]


def main():
    prefix = sys.argv[1].encode()
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        if prefix in data:
            open(path, "wb").write(data.replace(prefix, neutral(len(prefix))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
