#!/usr/bin/env python3
"""Every sample counts under its own stack, however stalls share and repeat
stacks (`report` remembers raw stacks across stalls and within one).

    test-report-stacks.py STALLWATCH

A recording written here (a fixed seed) holds stacks of named functions (the
agent's symbol hints), of depths 1 to 90, and near twins of them: the same
stack but for one frame, the leaf, the root or one between, either in
another function or at another call site of the same function.  Stalls draw
from them with repeats, in different orders; images arrive between stalls
and inside one (which starts the memory of raw stacks over), and the
program's image is replaced by another at the same address, whose names
then hold.  The recording is written twice: with every stack whole (as the
agent sends them) and through a stack table (format version 2, as `record`
writes them), each time read to the same answers (one stall's raw stacks
are more than 64 KiB of NDJSON; another's stacks come both through the
table and whole, as past the table's room); two recordings with
tables of their own, reported together, read as each does alone.  What `report
--format folded` prints for each stall must be, line for line, the self
weights counted here from the stacks written: one millisecond per sample;
and the raw stacks `--format ndjson` prints for each stall (each stall's
are written where the stall before's were) must be those written, with
their counts.  Last, the program announced again at the same address with
another build id (the collector's entry for it is rewritten in place):
pprof must put the second stall's frames in a mapping of the new id.
"""
import collections
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from swtest import (BASE, RECORDING_HEADER, RECORDING_HEADER_TABLE, StackTable, check,
                    failures, m_begin, m_end, m_hello, m_hint, m_image, m_image_removed, m_sample,
                    msg, pb_fields, uleb, wstr)

NFUNC = 24
FUNC_SIZE = 0x40
MS = 1000000  # ns, the hello's sampling interval: every sample weighs as much


def func_offset(f):
    return 0x1000 + 0x100 * f


def address(f, site):
    """A call site inside function f (a return address: site's byte - 1 is still in f)."""
    return BASE + func_offset(f) + 0x10 + 4 * site


def make_stacks(rng):
    """Stacks root first, as (function, site) pairs, with their near twins."""
    stacks = []
    for _ in range(60):
        depth = rng.choice([1, 2, 3, 8, 17, 40, 63, 64, 65, 90])
        stacks.append([(rng.randrange(NFUNC), rng.randrange(4)) for _ in range(depth)])
    twins = []
    for s in stacks[:30]:
        for where in (0, len(s) - 1, len(s) // 2):
            for other_function in (True, False):
                t = list(s)
                f, site = t[where]
                t[where] = ((f + 1) % NFUNC, site) if other_function else (f, (site + 1) % 4)
                twins.append(t)
    return stacks + twins


def write_recording(path, rng, stacks, table):
    sample = table.m_sample if table else lambda sid, tid, frames, time: m_sample(
        sid, 0, tid, frames, time=time)
    body = m_hello() + m_image(0, BASE, 0x100000, "/nonexistent/app")
    body += b"".join(m_hint(0, func_offset(f), "fn_%02d" % f, FUNC_SIZE) for f in range(NFUNC))
    want, raw = {}, {}
    prefix = "fn"
    for sid in range(1, 9):
        start = sid * 1000 * MS
        chosen = rng.sample(range(len(stacks)), 40)
        n = rng.randrange(60, 160)
        if sid == 5:
            # a library loaded between stalls: what was remembered starts over
            body += m_image(1, 0x7f0000000000, 0x10000, "/nonexistent/libone.so")
        if sid == 7:
            # the program replaced at its address: the stacks seen before are its now
            body += m_image_removed(0) + m_image(3, BASE, 0x100000, "/nonexistent/app2")
            body += b"".join(m_hint(3, func_offset(f), "gn_%02d" % f, FUNC_SIZE)
                             for f in range(NFUNC))
            prefix = "gn"
        body += m_begin(sid, 1, start)
        counts, raw_counts = collections.Counter(), collections.Counter()
        for k in range(n):
            s = stacks[rng.choice(chosen)]
            counts[tuple("%s_%02d" % (prefix, f) for f, _ in s)] += 1
            raw_counts[tuple("0x%x" % address(f, site) for f, site in reversed(s))] += 1
            # the wire's frames are leaf first
            body += sample(sid, 1, [address(f, site) for f, site in reversed(s)],
                           start + (k + 1) * MS)
            if sid == 6 and k == n // 2:
                body += m_image(2, 0x7f1000000000, 0x10000, "/nonexistent/libtwo.so")
        body += m_end(sid, n, start + (n + 1) * MS, (n + 1) * MS)
        want[sid], raw[sid] = counts, raw_counts
    # stall 9: addresses in no image, of every length from 1 to 16 hex digits,
    # their digits all different, and a 1 with zeros after it
    sid, start = 9, 9000 * MS
    lengths = [int("fedcba9876543210"[:n], 16) for n in range(1, 17)]
    ones = [1 << (4 * (n - 1)) for n in range(1, 17)]
    body += m_begin(sid, 1, start)
    counts, raw_counts = collections.Counter(), collections.Counter()
    for k, frames in enumerate([lengths, lengths[::-1], ones, ones[::-1], lengths[5:9] + ones]):
        counts[tuple("0x%x" % a for a in reversed(frames))] += 1
        raw_counts[tuple("0x%x" % a for a in frames)] += 1
        body += sample(sid, 1, frames, start + (k + 1) * MS)
    body += m_end(sid, 5, start + 6 * MS, 6 * MS)
    want[sid], raw[sid] = counts, raw_counts
    # stall 10: every stack twice, raw stacks of more than 64 KiB of NDJSON
    # (which go out without a copy)
    sid, start = 10, 10000 * MS
    body += m_begin(sid, 1, start)
    counts, raw_counts = collections.Counter(), collections.Counter()
    for k in range(2 * len(stacks)):
        s = stacks[k % len(stacks)]
        counts[tuple("%s_%02d" % (prefix, f) for f, _ in s)] += 1
        raw_counts[tuple("0x%x" % address(f, site) for f, site in reversed(s))] += 1
        body += sample(sid, 1, [address(f, site) for f, site in reversed(s)],
                       start + (k + 1) * MS)
    n = 2 * len(stacks)
    body += m_end(sid, n, start + (n + 1) * MS, (n + 1) * MS)
    want[sid], raw[sid] = counts, raw_counts
    # stall 11: each stack through the table and also whole, as `record` sends a
    # stack past the table's room (the collector numbers only the whole ones):
    # one stack either way, in the tree and in the raw stacks
    sid, start = 11, 11000 * MS
    body += m_begin(sid, 1, start)
    counts, raw_counts = collections.Counter(), collections.Counter()
    n = 0
    for s in stacks[:30]:
        frames = [address(f, site) for f, site in reversed(s)]
        for whole in (False, True, True, False):
            n += 1
            counts[tuple("%s_%02d" % (prefix, f) for f, _ in s)] += 1
            raw_counts[tuple("0x%x" % a for a in frames)] += 1
            time = start + n * MS
            body += (m_sample(sid, 0, 1, frames, time=time) if whole
                     else sample(sid, 1, frames, time))
    body += m_end(sid, n, start + (n + 1) * MS, (n + 1) * MS)
    want[sid], raw[sid] = counts, raw_counts
    with open(path, "wb") as f:
        f.write((RECORDING_HEADER_TABLE if table else RECORDING_HEADER) + body)
    return want, raw


def folded(stallwatch, path):
    r = subprocess.run([stallwatch, "report", "--format", "folded", path], capture_output=True,
                       text=True)
    check(r.returncode == 0, "report exits %d: %s" % (r.returncode, r.stderr[-500:]))
    got = collections.defaultdict(dict)
    for line in r.stdout.splitlines():
        frames, _, weight = line.rpartition(" ")
        label, *names = frames.split(";")
        got[int(label.lstrip("#"))][tuple(names)] = int(weight)
    return got


def folded_lines(stallwatch, paths):
    r = subprocess.run([stallwatch, "report", "--format", "folded"] + paths,
                       capture_output=True, text=True)
    check(r.returncode == 0, "report exits %d: %s" % (r.returncode, r.stderr[-500:]))
    return r.stdout.splitlines()


def raw_stacks(stallwatch, path):
    r = subprocess.run([stallwatch, "report", "--format", "ndjson", path], capture_output=True,
                       text=True)
    check(r.returncode == 0, "report --format ndjson exits %d: %s" % (r.returncode,
                                                                      r.stderr[-500:]))
    got = {}
    for line in r.stdout.splitlines():
        o = json.loads(line)
        if o["type"] == "stall":
            got[o["id"]] = collections.Counter(
                {tuple(st["frames"]): st["count"] for st in o["stacks"]})
    return got


def check_report(stallwatch, path, want, raw):
    got = folded(stallwatch, path)
    check(sorted(got) == sorted(want), "stalls %s, written %s" % (sorted(got), sorted(want)))
    for sid, counts in sorted(want.items()):
        expect = {names: n * MS // 1000 for names, n in counts.items()}
        have = got.get(sid, {})
        wrong = [(names, expect.get(names), have.get(names))
                 for names in set(expect) | set(have) if expect.get(names) != have.get(names)]
        check(not wrong, "stall #%d: %d of %d paths differ, e.g. %s" %
              (sid, len(wrong), len(expect), sorted(wrong, key=str)[:2]))
        print("stall #%d: %d samples on %d paths" % (sid, sum(counts.values()), len(expect)))
    got_raw = raw_stacks(stallwatch, path)
    for sid, counts in sorted(raw.items()):
        check(got_raw.get(sid) == counts, "stall #%d: raw stacks %d distinct, written %d" %
              (sid, len(got_raw.get(sid, {})), len(counts)))


def m_image_id(index, build_id, path="/nonexistent/app"):
    """An ELF image at BASE with a build id (m_image() gives none)."""
    return msg(2, uleb(index) + uleb(BASE) + uleb(0) + uleb(0x100000) + uleb(2) +
               uleb(len(build_id)) + build_id + wstr(path) + wstr("x86_64"))


def check_reannounced(stallwatch, d):
    """Each stall's frames in the mapping of the build id its image had then."""
    ids = [bytes(range(20)), bytes(range(100, 120))]
    body = m_hello()
    for sid, build_id in enumerate(ids, 1):
        body += m_image_id(0, build_id) + m_begin(sid, 1, sid * 1000 * MS)
        for k in range(5):
            body += m_sample(sid, 0, 1, [BASE + 0x1010 + 4 * k, BASE + 0x2010],
                             time=sid * 1000 * MS + (k + 1) * MS)
        body += m_end(sid, 5, sid * 1000 * MS + 6 * MS, 6 * MS)
    path = os.path.join(d, "reannounced.swtrace")
    with open(path, "wb") as f:
        f.write(RECORDING_HEADER + body)
    p = subprocess.run([stallwatch, "report", "--format", "pprof", path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    check(p.returncode == 0, "report --format pprof on a re-announced image failed")
    profile = list(pb_fields(gzip.decompress(p.stdout)))
    strings = [v.decode() for f, _, v in profile if f == 6]
    # Mapping: id 1, build_id 6 (a string index); Location: id 1, mapping_id 2
    build_id_of = {}
    for f, _, v in profile:
        if f == 3:
            m = {k: x for k, _, x in pb_fields(v)}
            build_id_of[m.get(1)] = strings[m.get(6, 0)]
    used = set()
    for f, _, v in profile:
        if f == 4:
            loc = {k: x for k, _, x in pb_fields(v)}
            used.add(build_id_of.get(loc.get(2)))
    check(used == {i.hex() for i in ids},
          "frames of an image announced again with another build id are in mappings of %s"
          % sorted(x or "none" for x in used))


def main():
    stallwatch = sys.argv[1]
    d = tempfile.mkdtemp(prefix="sw-report-stacks-")
    try:
        for table in (None, StackTable()):
            rng = random.Random(20261127)
            stacks = make_stacks(rng)
            path = os.path.join(d, "stacks.swtrace")
            want, raw = write_recording(path, rng, stacks, table)
            print("with%s a stack table: %d bytes" % ("" if table else "out",
                                                     os.path.getsize(path)))
            check_report(stallwatch, path, want, raw)
        # two recordings of one report, each table numbered from its first
        # entry: the second's entries are not the first's
        paths = []
        for seed in (1, 2):
            rng = random.Random(seed)
            paths.append(os.path.join(d, "table%d.swtrace" % seed))
            write_recording(paths[-1], rng, make_stacks(rng), StackTable())
        alone = [folded_lines(stallwatch, [p]) for p in paths]
        both = folded_lines(stallwatch, paths)
        check(both == ["table1" + l for l in alone[0]] + ["table2" + l for l in alone[1]],
              "two table recordings in one report differ from each alone")
        check_reannounced(stallwatch, d)
    finally:
        shutil.rmtree(d)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
