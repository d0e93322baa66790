#!/usr/bin/env python3
"""Reads every output format back with an independent reader and checks it
against expectations derived here from the fixture (tests/data/
render-stacks.txt), not from the code under test:

  tree, sample  line grammar, stall labels on every tree line, weights
  folded        flamegraph.pl's line grammar ("frame;frame count"), in microseconds
  ndjson, json  python's json module; totals = self + children everywhere
  speedscope    the documented structure of speedscope's file format
  pprof         `go tool pprof -raw` and `protoc --decode_raw`

usage: test-render.py RENDER_FIXTURE STACKS_FILE
"""
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from swtest import check, failures

helper, stacks = sys.argv[1], sys.argv[2]


def render(fmt, *opts, binary=False):
    out = subprocess.run([helper, stacks, fmt, *opts], stdout=subprocess.PIPE, check=True)
    return out.stdout if binary else out.stdout.decode("utf-8")


# ---- the fixture, read independently ----
class Frame:
    def __init__(self, text, images):
        img, linkage, name, file, line, addr, inl = text.split("|")
        self.image = images.get(img)
        self.linkage = None if linkage == "-" else linkage
        self.name = None if name == "-" else name
        self.file = None if file == "-" else file
        self.line = int(line)
        self.address = int(addr, 0)
        self.inlined = inl == "1"

    def shown(self):
        if self.name or self.linkage:
            return self.name or self.linkage
        return "???" if self.image else "0x%x" % self.address

    def folded(self):
        # folded lines have no column for the image: an unknown function names it
        if self.image and not (self.name or self.linkage):
            return "??? (%s)" % self.image[0]
        return self.shown()

    def system(self):
        # a system library's, or the toolchain's library compiled into the app
        # (stallwatch-output(7)): C++ headers, Rust's standard library
        toolchain = self.file and (self.file.startswith(("/rustc/", "/rust/deps/")) or
                                   "/usr/include/" in self.file)
        return bool(toolchain) or (bool(self.image) and (self.image[1].startswith("/usr/lib/") or
                                                         self.image[1].startswith("/lib/")))


stalls = []
images = {}
for line in open(stacks, encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    word, rest = line.split(" ", 1)
    if word == "image":
        idx, path, load, size, bid = rest.split(" ")
        images[idx] = (os.path.basename(path), path, int(load, 0), int(size, 0), bid)
    elif word == "stall":
        sid, source, tid, dur, cpu, kind, mode = rest.split(" ")
        stalls.append(dict(id=int(sid), label="%s#%s" % (source, sid), tid=int(tid),
                           duration=int(dur), kind=kind, samples=[], threads={}))
    elif word == "thread":
        tid, name = rest.split(" ", 1)
        stalls[-1]["threads"][int(tid)] = name
    elif word == "sample":
        tid, weight, frames = rest.split(" ", 2)
        stalls[-1]["samples"].append((int(tid), int(weight), [Frame(f, images) for f in frames.split(";")]))


def expected(stall, invert=False, hide_system=False, max_depth=0, thread="main", name=Frame.shown):
    """{tuple of names root first (name(frame)): (weight, count)} for the stall's main thread."""
    agg = collections.defaultdict(lambda: [0, 0])
    for tid, weight, frames in stall["samples"]:
        if thread == "main" and tid != stall["tid"]:
            continue
        names = [name(f) for f in frames if not (hide_system and f.system())]
        if not names:
            names = [name(frames[0])]
        if invert:
            names.reverse()
        if max_depth:
            names = names[:max_depth]
        agg[tuple(names)][0] += weight
        agg[tuple(names)][1] += 1
    return {k: tuple(v) for k, v in agg.items()}


def main_total(stall):
    return sum(w for tid, w, _ in stall["samples"] if tid == stall["tid"])



# ---- folded ----
FOLDED = re.compile(r"^(?P<stack>[^\n]+) (?P<count>\d+)$")


def parse_folded(text):
    got = collections.defaultdict(lambda: collections.defaultdict(int))
    last = {}  # the previous line's weight, by stall and thread
    for line in text.splitlines():
        m = FOLDED.match(line)
        check(m is not None, "folded line grammar: %r" % line)
        if not m:
            continue
        frames = m.group("stack").split(";")
        check(all(frames), "folded: empty frame in %r" % line)
        # one line per call path, the heaviest first (stallwatch-output(7))
        path, count = tuple(frames[1:]), int(m.group("count"))
        check(path not in got[frames[0]], "folded: %r twice" % m.group("stack"))
        group = (frames[0], frames[1] if frames[1].startswith("thread ") else None)
        check(last.get(group, count) >= count,
              "folded: %r (%d) after a lighter line (%d)" % (m.group("stack"), count, last.get(group, count)))
        last[group] = count
        got[frames[0]][path] += count
    return got


def folded_name(name):
    # the documented folded escaping: ';' would split a frame, controls end lines
    return re.sub(r"[\x00-\x1f]", " ", name.replace(";", ":"))


for opts, kw in [((), {}), (("--invert",), dict(invert=True)),
                 (("--hide-system",), dict(hide_system=True)),
                 (("--max-depth", "3"), dict(max_depth=3))]:
    got = parse_folded(render("folded", *opts))
    for s in stalls:
        # folded weighs in microseconds, rounded; paths under 0.5 us are left out
        want = {tuple(map(folded_name, k)): (v[0] + 500) // 1000
                for k, v in expected(s, name=Frame.folded, **kw).items() if (v[0] + 500) // 1000}
        check(dict(got[s["label"]]) == want, "folded %s %s: %s != %s" % (opts, s["label"], dict(got[s["label"]]), want))
        check(abs(sum(got[s["label"]].values()) - main_total(s) / 1000) <= len(want),
              "folded sum %s" % s["label"])

# --thread all: the second frame names the thread
got = parse_folded(render("folded", "--thread", "all"))
worker = [k for k in got["run1#3"] if k[0] == "thread worker"]
check(len(worker) == 1 and worker[0][1:] == ("start_thread", "worker_main", "memcpy"), "folded thread all: %s" % worker)

# ---- tree ----
TREE_NODE = re.compile(r"^(?P<label>\S+)  +(?P<total>[\d.]+) ms +(?P<pct>[\d.]+)%  +(?P<self>[\d.]+) ms  (?P<indent> *)(?P<rest>.*)$")
text = render("tree", "--min-percent", "0")
labels = {s["label"]: s for s in stalls}
roots = collections.defaultdict(float)
selfs = collections.defaultdict(float)
for line in text.splitlines():
    label = line.split(" ", 1)[0]
    check(label in labels, "tree line without a stall label: %r" % line)
    m = TREE_NODE.match(line)
    if m:
        check(len(m.group("indent")) % 2 == 0, "tree indent")
        if not m.group("indent"):
            roots[label] += float(m.group("total"))
        selfs[label] += float(m.group("self"))
    else:
        check(re.search(r"  sig [0-9a-f]{16}$", line) is not None, "tree header: %r" % line)
for s in stalls:
    check(abs(roots[s["label"]] - main_total(s) / 1e6) < 0.1, "tree roots %s" % s["label"])
    check(abs(selfs[s["label"]] - main_total(s) / 1e6) < 0.1 * len(expected(s)), "tree selfs %s" % s["label"])
check("\x1b" not in text and "\t" not in text, "tree: no escapes or tabs without colour")

# ---- sample ----
text = render("sample", "--min-percent", "0")
SAMPLE_NODE = re.compile(r"^    [+!:| ]*(?P<count>\d+) (?P<name>.+?)  \(in (?P<image>[^)]+)\)( \+ \d+)?  \[0x[0-9a-f]+\]")
counts = collections.defaultdict(list)
current = None
for line in text.splitlines():
    if line.startswith("Stall "):
        current = line.split()[1].rstrip(":")
    m = SAMPLE_NODE.match(line)
    if m and current:
        counts[current].append((len(line) - len(line.lstrip(" +!:|")), int(m.group("count")), m.group("name")))
for s in stalls:
    nodes = counts[s["label"]]
    n_main = sum(1 for tid, _, _ in s["samples"] if tid == s["tid"])
    check(nodes and nodes[0][1] == n_main, "sample root count %s: %s" % (s["label"], nodes[:1]))

# ---- ndjson and json ----
def nest(flat):
    """The flat preorder list (nodes naming their parent's index) as nested dicts."""
    roots = []
    for i, n in enumerate(flat):
        n = dict(n, children=[])
        flat[i] = n
        if n["parent"] is None:
            check(n["depth"] == 0, "root depth")
            roots.append(n)
        else:
            check(0 <= n["parent"] < i, "parent precedes its child")
            parent = flat[n["parent"]]
            check(n["depth"] == parent["depth"] + 1, "child depth")
            parent["children"].append(n)
    return roots


def check_node(node, unit_total=None):
    for key in ("symbol", "image", "file", "line", "total", "self", "samples", "depth", "parent"):
        check(key in node, "tree node lacks %s" % key)
    child_sum = sum(c["total"] for c in node["children"])
    check(node["total"] == node["self"] + child_sum, "node total %s" % node["symbol"])
    for c in node["children"]:
        check_node(c)


def check_stall(obj, s):
    for key in ("id", "thread", "duration_ms", "sampled_ms", "cpu_ms", "samples", "kind", "signature", "heaviest", "tree"):
        check(key in obj, "stall lacks %s" % key)
    check(obj["id"] == s["id"] and obj["label"] == s["label"], "stall id")
    check(re.fullmatch(r"[0-9a-f]{16}", obj["signature"]) is not None, "signature form")
    roots = nest(list(obj["tree"]))
    check(sum(n["total"] for n in roots) == main_total(s), "ndjson roots %s" % s["label"])
    for n in roots:
        check_node(n)
    # the heaviest path follows the heaviest child from the heaviest root
    level, path = roots, []
    while level:
        top = max(level, key=lambda n: n["total"])
        path.append(top["symbol"])
        level = top["children"]
    check([f["symbol"] for f in obj["heaviest"]] == path, "heaviest %s" % s["label"])
    for f in obj["heaviest"]:
        check(all(k in f for k in ("symbol", "image", "file", "line")), "heaviest frame fields")


lines = render("ndjson", "--min-percent", "0").splitlines()
objs = [json.loads(line) for line in lines]
for o in objs:
    check(isinstance(o.get("schema"), int) and isinstance(o.get("type"), str), "schema and type")
stall_objs = [o for o in objs if o["type"] == "stall"]
check(len(stall_objs) == len(stalls), "one stall object each")
for o, s in zip(stall_objs, stalls):
    check_stall(o, s)
summary = [o for o in objs if o["type"] == "summary"]
check(len(summary) == 1 and summary[0]["stalls"] == len(stalls), "summary object")
check(summary and summary[0]["total"] == sum(s["duration"] for s in stalls), "summary total")
doc = json.loads(render("json", "--min-percent", "0"))
check(doc["schema"] == 1 and doc["type"] == "report", "json document header")
for o, s, nd in zip(doc["stalls"], stalls, stall_objs):
    check_stall(o, s)
    nd = dict(nd)
    del nd["schema"], nd["type"]
    check(o == nd, "json and ndjson stalls agree")
# the default --min-percent hides small nodes but keeps the sums honest upward
small = json.loads(render("ndjson", "--min-percent", "50").splitlines()[0])
check(all(n["total"] * 2 >= main_total(stalls[0]) for n in small["tree"]), "min-percent prunes")
check(len(small["tree"]) < len(stall_objs[0]["tree"]), "min-percent leaves nodes out")

# ---- speedscope ----
doc = json.loads(render("speedscope"))
check(doc.get("$schema") == "https://www.speedscope.app/file-format-schema.json", "speedscope $schema")
frames = doc["shared"]["frames"]
for f in frames:
    check(isinstance(f["name"], str), "speedscope frame name")
    check(set(f) <= {"name", "file", "line", "col"}, "speedscope frame keys")
    check(not ("line" in f) or isinstance(f["line"], int), "speedscope frame line")
check(len(doc["profiles"]) == len(stalls), "one speedscope profile per stall")
for p, s in zip(doc["profiles"], stalls):
    check(p["type"] == "sampled", "sampled profile")
    check(p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"), "unit")
    check(isinstance(p["name"], str) and p["name"].startswith(s["label"] + " "), "profile name")
    check(len(p["samples"]) == len(p["weights"]), "samples and weights")
    check(all(0 <= i < len(frames) for st in p["samples"] for i in st), "frame indices")
    check(sum(p["weights"]) == p["endValue"] - p["startValue"] == main_total(s), "speedscope weights")
    got = collections.defaultdict(int)
    for st, w in zip(p["samples"], p["weights"]):
        got[tuple(frames[i]["name"] for i in st)] += w
    want = {k: v[0] for k, v in expected(s).items()}
    check(dict(got) == want, "speedscope stacks %s" % s["label"])
# samples in time order, as the fixture lists them; consecutive samples of
# one stack are one sample weighing their sum (the fixture has such a run)
merged_any = False
for p, s in zip(doc["profiles"], stalls):
    order = [(tuple(frames[i]["name"] for i in st), w) for st, w in zip(p["samples"], p["weights"])]
    want = []
    for tid, w, fr in s["samples"]:
        names = tuple(f.shown() for f in fr)
        if tid != s["tid"]:
            continue
        if want and want[-1][0] == names:
            want[-1] = (names, want[-1][1] + w)
            merged_any = True
        else:
            want.append((names, w))
    check(order == want, "speedscope time order %s" % s["label"])
check(merged_any, "the fixture has consecutive samples of one stack")
for opts, kw in [(("--invert",), dict(invert=True)), (("--hide-system",), dict(hide_system=True))]:
    d2 = json.loads(render("speedscope", *opts))
    for p, s in zip(d2["profiles"], stalls):
        got = collections.defaultdict(int)
        for st, w in zip(p["samples"], p["weights"]):
            got[tuple(d2["shared"]["frames"][i]["name"] for i in st)] += w
        check(dict(got) == {k: v[0] for k, v in expected(s, **kw).items()},
              "speedscope %s %s" % (opts, s["label"]))
check(isinstance(doc.get("activeProfileIndex"), int) and isinstance(doc.get("exporter"), str), "speedscope extras")

# ---- pprof ----
try:
    blob = render("pprof", binary=True)
except subprocess.CalledProcessError as e:
    if e.returncode == 77:
        print("SKIP: pprof: built without zlib")
        sys.exit(77 if not failures else 1)
    raise
raw = gzip.decompress(blob)
protoc = shutil.which("protoc")
if protoc:
    out = subprocess.run([protoc, "--decode_raw"], input=raw, stdout=subprocess.PIPE, check=True).stdout.decode()
    check(re.search(r'^6: "wall"$', out, re.M) is not None, "protoc: string table has wall")
    check(re.search(r'^6: "0badc0ffee0ddf00d0badc0ffee0ddf00d123456"$', out, re.M) is not None, "protoc: build id")
else:
    print("note: protoc not found; --decode_raw check skipped")
gobin = shutil.which("go")
if gobin:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.pb.gz")
        open(path, "wb").write(blob)
        env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"), GOFLAGS="", GOTOOLCHAIN="local")
        out = subprocess.run([gobin, "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, check=True).stdout.decode()
    section = None
    samples, locations = [], {}
    known = sorted({f.shown() for s in stalls for _, _, fr in s["samples"] for f in fr}, key=len, reverse=True)
    cur_loc = None
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = re.match(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", line)
            if m:
                samples.append([int(m.group(1)), int(m.group(2)), [int(x) for x in m.group(3).split()], None])
            m = re.match(r"^\s+stall:\[(\S+)\]", line)
            if m and samples:
                samples[-1][3] = m.group(1)
        elif section == "Locations":
            # names and files may hold spaces: take the longest known name
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*)$", line)
            rest = m.group(2) if m else line.strip()
            name = next((n for n in known if rest.startswith(n + " ")), None)
            check(name is not None, "pprof location line: %r" % line)
            if m:
                cur_loc = int(m.group(1))
                locations[cur_loc] = [name]
            elif cur_loc:
                locations[cur_loc].append(name)
        elif section == "Mappings":
            check("[IN]" in line or not line.strip(), "pprof mapping flags: %s" % line)
    check(any("89abcdef0123456789abcdef0123456789abcdef" in l for l in out.splitlines()), "pprof build id")
    for s in stalls:
        got = collections.defaultdict(lambda: [0, 0])
        for count, wall, locs, label in samples:
            if label != s["label"]:
                continue
            names = []
            for lid in locs:  # leaf first; a location's lines innermost first
                names.extend(locations[lid])
            key = tuple(reversed(names))
            got[key][0] += wall
            got[key][1] += count
        want = {k: list(v) for k, v in expected(s).items()}
        check(dict(got) == want, "pprof stacks %s: %s != %s" % (s["label"], dict(got), want))
    # the samples of one stack follow one another, stall by stall (the
    # compressor then finds each one's location ids in the one before)
    runs = [tuple(locs) for _, _, locs, _ in samples]
    split = [k for k in set(runs) if len({i for i, r in enumerate(runs) if r == k}) !=
             max(i for i, r in enumerate(runs) if r == k) - runs.index(k) + 1]
    check(len(set(runs)) < len(runs) and not split,
          "pprof: the samples of %d stacks (of %d) are apart" % (len(split), len(set(runs))))
    for k in set(runs):
        order = [label for _, _, locs, label in samples if tuple(locs) == k]
        check(order == sorted(order, key=[s["label"] for s in stalls].index),
              "pprof: a stack's samples out of stall order: %s" % order)
    # an inlined frame shares its caller's location
    check(any(len(v) == 2 and v[0] == "square(int)" and v[1] == "compute(int)" for v in locations.values()),
          "pprof inline frames as lines of one location")
    # --invert: an inlined leaf becomes a root, a location of its own; every
    # sample names locations the profile has, and each stall keeps its time
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inverted.pb.gz")
        open(path, "wb").write(render("pprof", "--invert", binary=True))
        env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"), GOFLAGS="", GOTOOLCHAIN="local")
        inv = subprocess.run([gobin, "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
    check(inv.returncode == 0, "pprof --invert: go tool pprof -raw: %s" % inv.stderr.decode()[-300:])
    section, walls, used, listed = None, collections.defaultdict(int), set(), set()
    for line in inv.stdout.decode().splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
        elif section == "Samples:":
            m = re.match(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", line)
            if m:
                wall, locs = int(m.group(2)), [int(x) for x in m.group(3).split()]
                used.update(locs)
            m = re.match(r"^\s+stall:\[(\S+)\]", line)
            if m:
                walls[m.group(1)] += wall
        elif section == "Locations":
            m = re.match(r"^\s+(\d+): 0x", line)
            if m:
                listed.add(int(m.group(1)))
    check(used and used <= listed, "pprof --invert: samples name unlisted locations %s" % sorted(used - listed)[:5])
    for s in stalls:
        check(walls.get(s["label"]) == main_total(s),
              "pprof --invert %s: %s ns, sampled %s" % (s["label"], walls.get(s["label"]), main_total(s)))
else:
    print("note: go not found; go tool pprof check skipped")

# ---- deep stacks: indentation stops growing, lines name their depth ----
# A recursion 150 frames deep with a second leaf branching off at depth 100.
# Past the documented indentation cap (64 levels, stallwatch-output(7)) every
# line keeps the cap's indentation and starts with "[depth N] ", N counted
# here from the stack; above it nothing changes.
CAP = 64
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as deep:
    deep.write("image 1 /opt/demo/bin/demo 0x555500000000 0x20000 -\n"
               "stall 9 deep 100 300000000 0 busy poll\nthread 100 main\n")
    chain = ["1|f%d|f%d|-|0|0x%x|0" % (k, k, 0x555500001000 + 16 * k) for k in range(150)]
    deep.write("sample 100 200000000 %s\n" % ";".join(chain))
    deep.write("sample 100 100000000 %s;1|g|g|-|0|0x555500009000|0\n" % ";".join(chain[:100]))
try:
    out = subprocess.run([helper, deep.name, "tree", "--min-percent", "0"], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    DEEP = re.compile(r"^\S*#9  +[\d.]+ ms +[\d.]+%  +[\d.]+ ms  (?P<indent> *)(\[depth (?P<depth>\d+)\] )?(?P<name>\S+)  \(demo\)$")
    seen = {}
    for line in out.splitlines()[1:]:
        m = DEEP.match(line)
        check(m is not None, "deep tree line: %r" % line[:160])
        if not m:
            continue
        level = len(m.group("indent")) // 2
        depth = int(m.group("depth")) if m.group("depth") else level
        check(level == min(depth, CAP), "deep tree indent %d at depth %d" % (level, depth))
        check((m.group("depth") is not None) == (depth > CAP), "deep tree depth marker: %r" % line[:160])
        seen[m.group("name")] = depth
    want = {"f%d" % k: k for k in range(150)}
    want["g"] = 100
    check(seen == want, "deep tree nodes and depths: %d of %d right" %
          (sum(seen.get(k) == v for k, v in want.items()), len(want)))
    out = subprocess.run([helper, deep.name, "sample", "--min-percent", "0"], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    cells = {}
    for line in out.splitlines():
        m = re.match(r"^    (?P<gutter>[+!:| ]*?)(\[depth (?P<depth>\d+)\] )?\d+ (?P<name>[fg]\d*)  \(in demo\)", line)
        if m:
            cells[m.group("name")] = (len(m.group("gutter")) // 2, m.group("depth"))
    check(all(cells.get("f%d" % k) == (min(k, CAP) + 1, str(k) if k > CAP else None) for k in range(150))
          and cells.get("g") == (CAP + 1, "100"),
          "deep sample gutter: f3 %s, f64 %s, f65 %s, f149 %s, g %s" %
          (cells.get("f3"), cells.get("f64"), cells.get("f65"), cells.get("f149"), cells.get("g")))
finally:
    os.unlink(deep.name)

# a profile of megabytes: compressed as it is written, in many pieces, still one gzip stream
gobin = shutil.which("go")
with tempfile.TemporaryDirectory() as tmp:
    big = os.path.join(tmp, "big-stacks.txt")
    import random
    rnd = random.Random(17)
    want_w, want_n, want = 0, 0, collections.Counter()
    with open(big, "w") as f:
        f.write("image 1 /opt/demo/bin/demo 0x555500000000 0x200000 0badc0ffee0ddf00d0badc0ffee0ddf00d123456\n")
        for sid in (1, 2):
            f.write("stall %d big 100 1000000000 0 busy -\nthread 100 main\n" % sid)
            for k in range(15000):
                fns = [rnd.randrange(3000) for _ in range(40)]
                w = 1000 * (1 + rnd.randrange(50))
                f.write("sample 100 %d %s\n" % (w, ";".join(
                    "1|fn%d|fn%d|big.c|%d|0x%x|0" % (n, n, n, 0x555500001000 + 16 * n) for n in fns)))
                want_w += w
                want_n += 1
                want[("big#%d" % sid, fns[-1])] += w
    r = subprocess.run([helper, big, "pprof"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True)
    blob = r.stdout
    raw = gzip.decompress(blob)
    check(len(raw) > 5 << 19, "big pprof: only %d bytes uncompressed" % len(raw))
    # handed to the output a megabyte at a time, not held whole
    print("big pprof: %d bytes, %d uncompressed; %s"
          % (len(blob), len(raw), r.stderr.decode().strip()))
    drains = re.search(r"(\d+) drains", r.stderr.decode())
    check(drains and int(drains.group(1)) >= len(blob) >> 20,
          "big pprof of %d bytes: drained %s" % (len(blob), drains and drains.group(0)))
    if gobin:
        path = os.path.join(tmp, "big.pb.gz")
        open(path, "wb").write(blob)
        env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"), GOFLAGS="", GOTOOLCHAIN="local")
        out = subprocess.run([gobin, "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, check=True).stdout.decode()
        got_w = got_n = 0
        for line in out.splitlines():
            m = re.match(r"^\s+(\d+)\s+(\d+): [\d ]+$", line)
            if m:
                got_n += int(m.group(1))
                got_w += int(m.group(2))
        check((got_w, got_n) == (want_w, want_n),
              "big pprof: %d ns in %d samples, want %d in %d" % (got_w, got_n, want_w, want_n))

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
