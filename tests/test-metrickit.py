#!/usr/bin/env python3
"""`stallwatch report` on MetricKit JSON, checked against expectations that
this script derives from the payloads itself (python's json module):

- our fixtures (tests/data/metrickit/): a diagnostic payload with two hangs
  and hangDuration, whose trees must add up to the durations exactly, with
  each path weighing its self count scaled (within a nanosecond of rounding);
  malformed payloads exit 5 with a message, never a crash;
- the real and malformed payloads of sentry-cocoa's tests, vendored in
  tests/data/metrickit-sentry/: bare trees read as sample counts, each
  root's count the tree's total; tree-garbage.json exits 5.
- the fixture payload on standard input (`report -`, a pipe) prints what
  the file does.

- symbolication with -S: an arm64 iOS binary built here (clang, ld64.lld,
  dsymutil) and a payload naming its UUID and offsets; the functions the
  tree shows must be those llvm-nm places at the offsets (skipped without
  the Apple-target toolchain).

Exits 77 (skipped) when the command was built without jansson
(SW_HAVE_JANSSON=0 in the environment, set by meson).

usage: test-metrickit.py STALLWATCH FIXTURE_DIR SENTRY_DIR [MACHO_DATA_DIR]
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import gzip

from swtest import check, failures, pb_fields, scratch_dir

exe, fixtures, sentry = sys.argv[1:4]
if os.environ.get("SW_HAVE_JANSSON") == "0":
    print("SKIP: stallwatch was built without jansson, which MetricKit JSON needs")
    sys.exit(77)


def report(*args):
    p = subprocess.run([exe, "report", "--min-percent", "0"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def name(f):
    return "%s + %d" % (f.get("binaryName") or "???", f.get("offsetIntoBinaryTextSegment", 0))


def self_counts(frames, prefix, out):
    for f in frames:
        path = prefix + (name(f),)
        subs = f.get("subFrames", [])
        own = f.get("sampleCount", 0) - sum(s.get("sampleCount", 0) for s in subs)
        if own > 0:
            out[path] += own
        self_counts(subs, path, out)
    return out


def trees(doc):
    """(tree, metadata) pairs in the order stallwatch numbers stalls."""
    for d in doc if isinstance(doc, list) else [doc]:
        if "hangDiagnostics" in d:
            for h in d["hangDiagnostics"]:
                yield h["callStackTree"], h.get("diagnosticMetaData")
        else:
            yield d, None


def duration_ns(meta):
    v = (meta or {}).get("hangDuration")
    if v is None:
        return 0
    num, unit = v.split()
    return round(float(num) * {"ms": 1e6, "sec": 1e9, "s": 1e9}[unit])


def main_stack(tree):
    stacks = tree["callStacks"]
    return next((s for s in stacks if s.get("threadAttributed")), stacks[0])


def check_file(path):
    doc = json.load(open(path))
    rc, out, err = report("--format", "ndjson", path)
    check(rc == 0, "%s: exit %d: %s" % (path, rc, err))
    stalls = [json.loads(l) for l in out.splitlines() if json.loads(l)["type"] == "stall"]
    rc, folded, _ = report("--format", "folded", path)
    lines = collections.defaultdict(dict)
    for line in folded.splitlines():
        stack, w = line.rsplit(" ", 1)
        frames = stack.split(";")
        lines[frames[0]][tuple(frames[1:])] = int(w)
    items = list(trees(doc))
    check(len(stalls) == len(items), "%s: %d stalls for %d trees" % (path, len(stalls), len(items)))
    for st, (tree, meta) in zip(stalls, items):
        want = self_counts(main_stack(tree)["callStackRootFrames"], (), collections.Counter())
        total = sum(want.values())
        dur = duration_ns(meta)
        got = lines[st["label"]]
        check(set(got) == set(want), "%s %s: paths %s != %s" % (path, st["label"], set(got), set(want)))
        check(st["kind"] == "hang", "kind hang")
        if dur:
            check(st["weight_unit"] == "ns" and st["duration_ms"] * 1e6 == dur, "duration")
            # folded weighs in microseconds, rounded
            check(abs(sum(got.values()) - dur / 1000) <= len(got),
                  "%s: weights add to %d us, not %d" % (path, sum(got.values()), dur / 1000))
            for k, c in want.items():
                check(abs(got.get(k, 0) - c * dur / total / 1000) <= 1, "%s: %s weighs %s us, not %s"
                      % (path, k, got.get(k), c * dur / total / 1000))
            check(st["metadata"] == meta, "metadata kept")
        else:
            check(st["weight_unit"] == "samples", "counts without a duration")
            check(got == dict(want), "%s: counts %s != %s" % (path, got, dict(want)))
        check(sum(n["total"] for n in st["tree"] if n["parent"] is None) == (dur or total),
              "tree total")
    # pprof: every sample has as many values as the profile has sample types
    # ([samples] for counts alone, [samples, wall] with a duration)
    p = subprocess.run([exe, "report", "--min-percent", "0", "--format", "pprof", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    fields = list(pb_fields(gzip.decompress(p.stdout))) if p.returncode == 0 else []
    types = sum(1 for f, _, _ in fields if f == 1)
    nvalues = set()
    for f, _, v in fields:
        if f == 2:
            values = [x for sf, _, x in pb_fields(v) if sf == 2]
            nvalues.add(sum(1 for b in b"".join(values) if b < 0x80))  # packed varints' last bytes
    want_types = 2 if any(duration_ns(m) for _, m in items) else 1
    check(p.returncode == 0 and types == want_types and nvalues == {types},
          "%s pprof: %d sample types, samples with %s values" % (path, types, sorted(nvalues)))


check_file(os.path.join(fixtures, "payload-hangs.json"))
# standard input through a pipe ("-"): sniffed as MetricKit, printed as from the file
payload = os.path.join(fixtures, "payload-hangs.json")
from_file = report("--format", "ndjson", payload)
p = subprocess.run([exe, "report", "--min-percent", "0", "--format", "ndjson", "-"],
                   input=b"\n  " + open(payload, "rb").read(), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=60)
check(p.returncode == 0 and p.stdout.decode() == from_file[1] and from_file[1],
      "report - with MetricKit on a pipe: exit %d, %s" % (p.returncode, p.stderr.decode()))
for bad in ["bad-types.json", "bad-shape.json", "bad-nesting.json"]:
    rc, out, err = report(os.path.join(fixtures, bad))
    check(rc == 5 and "cannot read" in err and out == "", "%s: exit %d, %r" % (bad, rc, err))

# JSON that is no MetricKit input, and a payload of crashes only: said so, and
# what the payload holds instead is named
for doc, said in (({"a": 1}, "payload: neither a MetricKit payload"),
                  ({"crashDiagnostics": [], "cpuExceptionDiagnostics": [],
                    "timeStampBegin": "2026-12-01 10:00:00"},
                   "(it holds crashDiagnostics, cpuExceptionDiagnostics)"),
                  ([{"callStacks": []}, {"b": 2}], "document 2: neither")):
    f = tempfile.NamedTemporaryFile(mode="w", suffix=".json", delete=False)
    json.dump(doc, f)
    f.close()
    rc, out, err = report(f.name)
    os.unlink(f.name)
    check(rc == 5 and said in err, "%s: exit %d, %r" % (doc, rc, err))

# issue 11 item 11: past the profile's 65,536 images the message names the limit
many = tempfile.NamedTemporaryFile(mode="w", suffix=".json", delete=False)
json.dump({"callStacks": [{"threadAttributed": True, "callStackRootFrames": [
    {"sampleCount": 1, "binaryUUID": "%08X-0000-4000-8000-000000000000" % i,
     "binaryName": "lib%d" % i, "offsetIntoBinaryTextSegment": i} for i in range(65537)]}]},
    many)
many.close()
p = subprocess.run([exe, "report", many.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   timeout=600)
rc, err = p.returncode, p.stderr.decode()
os.unlink(many.name)
lines = [l for l in err.splitlines() if "cannot read" in l]
check(rc == 5 and len(lines) == 1 and "65536" in lines[0] and "unknown error" not in err,
      "65,537 binaries: exit %d, %r" % (rc, lines or err[:300]))

sentry_payloads = sorted(f for f in os.listdir(sentry) if f.endswith(".json"))
check(len(sentry_payloads) >= 8, "%d payloads in %s" % (len(sentry_payloads), sentry))
for f in sentry_payloads:
    path = os.path.join(sentry, f)
    if f == "tree-garbage.json":
        rc, out, err = report(path)
        check(rc == 5 and "offset" in err, "garbage: exit %d, %r" % (rc, err))
        continue
    check_file(path)
print("sentry-cocoa payloads: %d read" % len(sentry_payloads))

SWIFT = "$s4Demo5CacheC4load3keySSSS_tF"  # Demo.Cache.load(key: Swift.String) -> Swift.String
SOURCE = """
int hang_inner(int n);
int hang_outer(int n);
int swift_load(int n) __asm__("_%s");
int hang_inner(int n) { volatile int x = 0; for (int i = 0; i < n; i++) x += i; return x; }
int hang_outer(int n) { return hang_inner(n) + 1; }
int swift_load(int n) { return hang_outer(n) * 2; }
int main(void) { return swift_load(100); }
""" % SWIFT


def symbolicated(macho_data):
    tools = ["clang-19", "ld64.lld-19", "dsymutil-19", "llvm-nm-19", "llvm-dwarfdump-19"]
    tbd = os.path.abspath(os.path.join(macho_data, "libSystem.tbd"))
    if not all(shutil.which(t) for t in tools) or not os.path.exists(tbd):
        print("note: no Apple-target toolchain; the -S check was skipped")
        return
    d = scratch_dir("sw-metrickit-")
    open(os.path.join(d, "app.c"), "w").write(SOURCE)
    run = lambda *a: subprocess.run(a, cwd=d, check=True, stdout=subprocess.PIPE).stdout.decode()
    run("clang-19", "-target", "arm64-apple-ios14.0", "-nostdlibinc", "-O1", "-g", "-fno-inline",
        "-c", "app.c", "-o", "app.o")
    run("ld64.lld-19", "-arch", "arm64", "-platform_version", "ios", "14.0", "14.0", "-o", "App",
        "app.o", tbd, "-e", "_main")
    run("dsymutil-19", "App", "-o", "App.dSYM")
    uuid = re.search(r"UUID: (\S+)", run("llvm-dwarfdump-19", "--uuid", "App")).group(1)
    syms = {}
    for line in run("llvm-nm-19", "App").splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue  # undefined symbols have no address
        addr, kind, name = parts
        if kind == "T":
            syms[name.lstrip("_")] = int(addr, 16) - 0x100000000  # offsets into __TEXT
    load = 0x104E00000  # any slide: MetricKit gives address and offset

    def frame(fn, delta, count, subs=None):
        f = {"binaryUUID": uuid, "binaryName": "App", "offsetIntoBinaryTextSegment": syms[fn] + delta,
             "address": load + syms[fn] + delta, "sampleCount": count}
        if subs:
            f["subFrames"] = subs
        return f
    payload = {"callStackPerThread": True, "callStacks": [{"threadAttributed": True, "callStackRootFrames": [
        frame("main", 8, 5, [frame(SWIFT, 8, 5, [frame("hang_outer", 8, 5, [frame("hang_inner", 16, 4)])])])]}]}
    path = os.path.join(d, "payload.json")
    json.dump(payload, open(path, "w"))
    rc, out, err = report("--format", "folded", "-S", d, path)
    check(rc == 0, "-S: exit %d: %s" % (rc, err))
    rc, nd, err = report("--format", "ndjson", "-S", d, path)
    st = json.loads(nd.splitlines()[0])
    linkages = [f["linkage"] for f in st["heaviest"]]
    check(linkages == ["main", SWIFT, "hang_outer", "hang_inner"], "-S: linkage names %s" % linkages)
    shown = st["heaviest"][1]["symbol"]  # demangled when the Swift demangler is built in
    rc, nd_full, _ = report("--format", "ndjson", "--full-names", "-S", d, path)
    full = json.loads(nd_full.splitlines()[0])
    check(full["signature"] == st["signature"], "--full-names changed the signature")
    got = {tuple(l.rsplit(" ", 1)[0].split(";")[1:]): int(l.rsplit(" ", 1)[1]) for l in out.splitlines()}
    want = {("main", shown, "hang_outer", "hang_inner"): 4, ("main", shown, "hang_outer"): 1}
    check(got == want, "-S: symbolicated paths %s != %s" % (got, want))
    rc, out, err = report("--format", "folded", path)
    check("App + " in out, "without -S frames are binaryName + offset: %s" % out)


if len(sys.argv) > 4:
    symbolicated(sys.argv[4])

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
