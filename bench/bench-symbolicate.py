#!/usr/bin/env python3
"""Symbolication benchmark: `stallwatch symbolicate` against llvm-symbolizer.

Builds a binary of 20,000 functions in 40 units (gen-symbolicate-fixture.py,
clang -g -O1), asks both tools the same 100,000 random .text addresses on
standard input, both with --no-demangle, in the same run, and prints:
throughput of each and the ratio (best of --runs, by wall time and by CPU
time), whether the answers are identical (wherever llvm-symbolizer has debug
information: our symbol-table-only frames add "+ offset"), and the peak
resident memory of each (in one more run of each under /usr/bin/time, whose
own start would add a millisecond to a timed run).  Each binary is measured
twice: a first run with no DWARF index (its cache folder emptied before
each run; goal >= 10x), then a second run on another 100,000 addresses
with the index, symbol cache and range table the first run left (goal >=
50x; their sizes are printed).  The ELF binary is measured again built
with -gsplit-dwarf, against llvm-symbolizer-19 (14 misses inlined calls
in clang's split units).  Last, one address in a
new process with the index in place, against llvm-symbolizer and `true`
(goal < 5 ms).

usage: bench-symbolicate.py STALLWATCH [--addresses N] [--functions N]
                            [--runs N] [--keep DIR] [--binary FILE] [--no-split]
                            [--no-macho]
Exit status 77 when llvm-symbolizer-14 or clang is missing.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYMBOLIZER = "llvm-symbolizer-14"


def arg(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def compile_all(workdir, nfunc, cflags, suffix):
    src = os.path.join(workdir, "src")
    if not os.path.exists(os.path.join(src, "main.c")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-symbolicate-fixture.py"), src,
                        str(nfunc), "40"], check=True)
    sources = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".c"))
    procs, objs = [], []
    for s in sources:
        o = s + suffix
        objs.append(o)
        procs.append(subprocess.Popen([*cflags, "-g", "-O1", "-c", s, "-o", o]))
        if len(procs) >= (os.cpu_count() or 2):
            if procs.pop(0).wait():
                raise RuntimeError("compile failed")
    for p in procs:
        if p.wait():
            raise RuntimeError("compile failed")
    return objs


def build(workdir, nfunc, cc, split=False):
    objs = compile_all(workdir, nfunc, [cc, "-gsplit-dwarf"] if split else [cc],
                       ".split.o" if split else ".o")
    out = os.path.join(workdir, "big-split" if split else "big")
    subprocess.run([cc, *objs, "-o", out], check=True)
    return out


def build_macho(workdir, nfunc):
    """arm64-apple-ios binary linked by ld64.lld-19 with a dSYM by dsymutil-19."""
    objs = compile_all(workdir, nfunc,
                       ["clang-19", "-target", "arm64-apple-ios14.0", "-nostdlibinc"], ".arm64.o")
    out = os.path.join(workdir, "big-macho")
    tbd = os.path.join(HERE, "..", "tests", "data", "macho", "libSystem.tbd")
    subprocess.run(["ld64.lld-19", "-arch", "arm64", "-platform_version", "ios", "14.0", "14.0",
                    "-o", out, *objs, tbd, "-e", "_main"], check=True)
    subprocess.run(["dsymutil-19", out, "-o", out + ".dSYM"], check=True)
    return out


def text_range(binary):
    out = subprocess.run(["llvm-objdump-14", "-h", binary], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 5 and p[1] in (".text", "__text"):
            return int(p[3], 16), int(p[2], 16)
    raise RuntimeError("no .text")


READ = ("info", "abbrev", "line", "str", "line_str", "str_offs", "str_offsets", "addr",
        "ranges", "rnglists", "aranges")


def debug_size(binary):
    """(all DWARF, the part a symbolizer reads: no location lists, frames or name indexes)."""
    out = subprocess.run(["llvm-objdump-14", "-h", binary], check=True, capture_output=True,
                         text=True).stdout
    total = read = 0
    for p in (l.split() for l in out.splitlines()):
        if len(p) >= 5 and (p[1].startswith(".debug_") or p[1].startswith("__debug_")):
            size = int(p[2], 16)
            total += size
            if p[1].split("debug_", 1)[1] in READ:
                read += size
    return total, read


def timed(cmd, input_path, output_path, env=None, peak=False):
    """Runs cmd; returns (wall seconds, cpu seconds, peak RSS in KiB).

    With peak, the peak comes from /usr/bin/time when there is one (the
    rusage of a child forked from this Python process would count Python's
    own pages from before the exec), and the times are not to be used: the
    wrapper's own start costs a millisecond, 5% of a second run.  Without
    it, the peak is 0.
    """
    rss_file = output_path + ".rss"
    wrap = (["/usr/bin/time", "-f", "%M", "-o", rss_file]
            if peak and os.path.exists("/usr/bin/time") else [])
    with open(input_path, "rb") as fin, open(output_path, "wb") as fout:
        start = time.perf_counter()
        p = subprocess.Popen(wrap + cmd, stdin=fin, stdout=fout, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError("%s failed with %d" % (cmd[0], p.returncode))
    rss = ru.ru_maxrss if peak else 0
    if wrap:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1])
    return wall, ru.ru_utime + ru.ru_stime, rss


def blocks(path):
    with open(path) as f:
        return [b.strip("\n").split("\n") for b in f.read().split("\n\n") if b.strip("\n")]


def compare(workdir, ours, naddr, symbolizer=SYMBOLIZER):
    """How many answers with debug info are identical: (same, compared, total ok)."""
    oracle = blocks(os.path.join(workdir, symbolizer + ".out"))
    mine = blocks(os.path.join(workdir, ours))
    debug = [(o, m) for o, m in zip(oracle, mine)
             if any(loc != "??:0:0" and not loc.startswith("crtstuff.c:") for loc in o[1::2])]
    same = sum(1 for o, m in debug if o == m)
    return same, len(debug), len(oracle) - len(debug), len(oracle) == len(mine) == naddr


def write_addresses(path, lo, size, naddr, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("".join("0x%x\n" % (lo + rng.randrange(size)) for _ in range(naddr)))


def best_of(best, name, r, peak_only=False):
    """The fastest times and the highest peak so far; a peak-only run gives its peak alone."""
    b = best.get(name)
    if peak_only:
        best[name] = (b[0], b[1], max(b[2], r[2]))
    else:
        best[name] = r if not b else (min(b[0], r[0]), min(b[1], r[1]), max(b[2], r[2]))


def wait_for_cache(cache, seconds=30):
    """The first run's detached child writes the index, the symbol cache and
    the range table after it has answered: a second run measured before they
    are there would measure a first run."""
    root = os.path.join(cache, "stallwatch")
    deadline = time.time() + seconds
    while time.time() < deadline:
        if all(os.path.isdir(os.path.join(root, d)) and os.listdir(os.path.join(root, d))
               for d in ("dwarf", "symbols", "ranges")):
            break
        time.sleep(0.05)
    sizes = {d: sum(os.path.getsize(os.path.join(root, d, f))
                    for f in os.listdir(os.path.join(root, d)))
             for d in ("dwarf", "symbols", "ranges") if os.path.isdir(os.path.join(root, d))}
    print("cache folder: %s" % ", ".join("%s %.1f MB" % (d, n / 1e6) for d, n in sizes.items()))


def run_case(label, workdir, binary, dwarf_file, oracle_args, our_args, nfunc, naddr, runs, sw,
             symbolizer=SYMBOLIZER):
    """The first run (no index: a cache folder emptied before each run) on
    one set of addresses, then a second run on another set of the same
    binary, with the index the first run left, each against llvm-symbolizer
    on the same set."""
    lo, size = text_range(binary)
    first, second = os.path.join(workdir, "addresses"), os.path.join(workdir, "addresses2")
    write_addresses(first, lo, size, naddr, 4)
    write_addresses(second, lo, size, naddr, 5)
    total, read = debug_size(dwarf_file)
    print("\n%s: %d functions, %.1f MB of DWARF (%.1f MB without location lists), "
          "%.1f MB of text; %d random addresses" %
          (label, nfunc, total / 1e6, read / 1e6, size / 1e6, naddr))
    theirs_cmd = [symbolizer, "--no-demangle", *oracle_args, "--obj=" + binary]
    ours_cmd = [sw, "symbolicate", "--no-demangle", "-e", binary, *our_args]
    cache = os.path.join(workdir, "cache")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    env.pop("STALLWATCH_NO_INDEX", None)
    ok = True
    for what, addrs, goal in (("first run", first, 10), ("second run", second, 50)):
        if what == "second run":
            wait_for_cache(cache)
        best = {}
        # the last round measures the peaks only (its times are the wrapper's too)
        for i in range(runs + 1):
            peak = i == runs
            r = timed(theirs_cmd, addrs, os.path.join(workdir, symbolizer + ".out"), None, peak)
            best_of(best, symbolizer, r, peak)
            if what == "first run":
                shutil.rmtree(cache, ignore_errors=True)
            r = timed(ours_cmd, addrs, os.path.join(workdir, "stallwatch.out"), env, peak)
            best_of(best, "stallwatch", r, peak)
        print("%s (%s):" % (what, "no index" if what == "first run" else
                            "the first run's index, other addresses"))
        for name, (wall, cpu, rss) in best.items():
            print("  %-20s %7.3f s wall %7.3f s cpu %9.0f addresses/s %7.1f MB peak RSS" %
                  (name, wall, cpu, naddr / wall, rss / 1024))
        theirs, ours = best[symbolizer], best["stallwatch"]
        same, compared, skipped, whole = compare(workdir, "stallwatch.out", naddr, symbolizer)
        print("  answers: %d of %d addresses with debug info identical (%d without, not compared)"
              % (same, compared, skipped))
        print("  %s throughput ratio (wall): %.2fx   (cpu): %.2fx   goal >= %dx" %
              (what, theirs[0] / ours[0], theirs[1] / ours[1], goal))
        print("  peak memory ratio (ours / llvm-symbolizer): %.2f   goal <= 1" %
              (ours[2] / theirs[2]))
        ok &= same == compared and whole
    return ok


def median_ms(cmd, n, env=None):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       check=True)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1000


def one_address(workdir, binary, sw, n=41):
    """One address in a new process, files in the page cache, the index in
    place: stallwatch against llvm-symbolizer and against `true`."""
    lo, _ = text_range(binary)
    addr = "0x%x" % (lo + 0x40)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(workdir, "cache"))
    env.pop("STALLWATCH_NO_INDEX", None)
    ours = [sw, "symbolicate", "--no-demangle", "-e", binary, addr]
    subprocess.run(ours, stdout=subprocess.DEVNULL, env=env, check=True)  # index, page cache
    rows = [("stallwatch", median_ms(ours, n, env)),
            ("llvm-symbolizer-14", median_ms([SYMBOLIZER, "--no-demangle", "--obj=" + binary,
                                              addr], n)),
            ("true", median_ms(["true"], n))]
    print("\none address, new process (median of %d):" % n)
    for name, ms in rows:
        print("  %-20s %7.2f ms" % (name, ms))
    print("  one-address ratio (llvm-symbolizer / stallwatch): %.2fx   stallwatch %.2f ms, "
          "goal < 5 ms" % (rows[1][1] / rows[0][1], rows[0][1]))
    print("  start-up over `true`: %.2f ms" % (rows[0][1] - rows[2][1]))


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    sw = os.path.abspath(args[0])
    naddr = int(arg(args, "--addresses", 100000))
    nfunc = int(arg(args, "--functions", 20000))
    runs = int(arg(args, "--runs", 3))
    keep = arg(args, "--keep", None)
    cc = "clang-14" if shutil.which("clang-14") else "clang-19"
    if not shutil.which(SYMBOLIZER) or not shutil.which(cc):
        print("SKIP: %s or clang missing" % SYMBOLIZER)
        return 77
    workdir = keep or tempfile.mkdtemp(prefix="sw-bench-")
    os.makedirs(workdir, exist_ok=True)
    try:
        binary = arg(args, "--binary", None)
        if not binary:
            binary = os.path.join(workdir, "big")
            if not os.path.exists(binary):
                t = time.perf_counter()
                binary = build(workdir, nfunc, cc)
                print("built %s in %.0f s" % (binary, time.perf_counter() - t))
        ok = run_case("ELF x86-64, clang -g -O1", workdir, binary, binary, [], [], nfunc,
                      naddr, runs, sw)
        one_address(workdir, binary, sw)
        # split DWARF: the same sources with -gsplit-dwarf, 40 .dwo files read beside the
        # skeletons; llvm-symbolizer 19 is the baseline, as 14 drops inlined calls there
        split_symbolizer = "llvm-symbolizer-19"
        if "--no-split" not in args and shutil.which(split_symbolizer) and not arg(
                args, "--binary", None):
            split = os.path.join(workdir, "big-split")
            if not os.path.exists(split):
                t = time.perf_counter()
                build(workdir, nfunc, cc, split=True)
                print("built %s and its .dwo files in %.0f s" % (split, time.perf_counter() - t))
            ok &= run_case("ELF x86-64, clang -g -O1 -gsplit-dwarf (.dwo files)", workdir, split,
                           split, [], [], nfunc, naddr, runs, sw, split_symbolizer)
        if "--no-macho" not in args and all(shutil.which(t) for t in
                                            ("clang-19", "ld64.lld-19", "dsymutil-19")):
            macho = os.path.join(workdir, "big-macho")
            if not os.path.exists(macho + ".dSYM"):
                t = time.perf_counter()
                build_macho(workdir, nfunc)
                print("built %s and its dSYM in %.0f s" % (macho, time.perf_counter() - t))
            dwarf = os.path.join(macho + ".dSYM", "Contents", "Resources", "DWARF",
                                 os.path.basename(macho))
            ok &= run_case("Mach-O arm64-apple-ios, dSYM by dsymutil-19", workdir, macho, dwarf,
                           ["--dsym-hint=" + macho + ".dSYM"], ["--dsym", macho + ".dSYM"],
                           nfunc, naddr, runs, sw)
        return 0 if ok else 1
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
