#!/usr/bin/env python3
"""Emacs's native-code names against Emacs itself.

Emacs 28 and later compile Lisp to native code in .eln files, whose C
functions comp.el names from the Lisp names.  tests/apps/stallapp.el
(names with characters that the C name leaves out) is natively compiled
by the emacs found, loaded beside the preloaded .eln files, and Emacs is
asked, for every natively compiled function it knows, its Lisp name and
C name (comp-c-func-name) and its .eln file.  Then:

- every such C name is a symbol of its .eln file (nm), so the oracle is
  the toolchain's own naming;
- `stallwatch demangle` turns each into its Lisp name, on standard input
  and with Mach-O's extra underscore;
- the anonymous lambdas of the .eln files read "anonymous-lambda #N"
  (N being the C name's number) or "anonymous-lambda" for number 0;
- the other symbols of the .eln files, and names whose readable part
  disagrees with their hexadecimal part, stay as they are.

    test-demangle-elisp.py

with STALLWATCH and SW_SOURCE_ROOT in the environment.  Exit 77 without an
emacs that compiles natively.
"""
import os
import subprocess
import sys

from swtest import check, emacs_native, failures, scratch_dir

STALLWATCH = os.environ.get("STALLWATCH", "")
SOURCE = os.path.join(os.environ.get("SW_SOURCE_ROOT", ""), "tests", "apps", "stallapp.el")
LAMBDA = "F" + b"anonymous-lambda".hex() + "_anonymous_lambda_"

# Every natively compiled function Emacs knows: Lisp name, C name, .eln file.
QUERY = r"""
(require 'comp)
(native-elisp-load (native-compile (nth 0 command-line-args-left) (nth 1 command-line-args-left)))
(let ((seen (make-hash-table :test 'equal)))
  (mapatoms
   (lambda (sym)
     (let ((f (and (fboundp sym) (symbol-function sym))))
       (when (and f (subr-native-elisp-p f) (not (gethash (subr-name f) seen)))
         (puthash (subr-name f) t seen)
         (princ (format "%s\t%s\t%s\n" (subr-name f) (comp-c-func-name (subr-name f) "F" t)
                        (native-comp-unit-file (subr-native-comp-unit f)))))))))
"""


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def demangle(names):
    out = subprocess.run([STALLWATCH, "demangle"], input="\n".join(names) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(names)]


def symbols(path):
    r = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                       check=True)
    return [line.split()[-1] for line in r.stdout.splitlines() if len(line.split()) == 3]


def main():
    emacs, why = emacs_native()
    if not emacs:
        skip(why)
    tmp = scratch_dir("sw-elisp-")
    eln = os.path.join(tmp, "stallapp.eln")
    query = os.path.join(tmp, "query.el")
    with open(query, "w") as f:
        f.write(QUERY)
    r = subprocess.run([emacs, "-Q", "--batch", "-l", query, SOURCE, eln],
                       capture_output=True, text=True, env=dict(os.environ, HOME=tmp))
    check(r.returncode == 0, "emacs: %s" % r.stderr[-2000:])
    rows = [line.split("\t") for line in r.stdout.splitlines() if line.count("\t") == 2]
    print("%d natively compiled functions" % len(rows))
    check(len(rows) >= 1000, "fewer than 1000 natively compiled functions: %d" % len(rows))
    ours = {lisp for lisp, _, path in rows if os.path.realpath(path) == os.path.realpath(eln)}
    want = {"stallapp-count", "stallapp-stall", "stallapp--list->vector*", "stallapp/Upper<=2",
            "stallapp-apply", "stallapp-lambda"}
    check(ours == want, "stallapp.eln's functions: %s" % sorted(ours))

    # the oracle is the compiler's own naming: each C name is in its file
    files = {}
    for lisp, cname, path in rows:
        files.setdefault(path, set())
    for path in files:
        files[path] = set(symbols(path))
    absent = [(lisp, cname) for lisp, cname, path in rows if cname not in files[path]]
    check(not absent, "%d C names not in their .eln files, e.g. %s" % (len(absent), absent[:3]))

    cnames = [cname for _, cname, _ in rows]
    got = demangle(cnames)
    differ = [(c, lisp, g) for (lisp, c, _), g in zip(rows, got) if g != lisp]
    for c, lisp, g in differ[:10]:
        print("%s\n  emacs:      %s\n  stallwatch: %s" % (c, lisp, g))
    check(not differ, "%d of %d names differ from Emacs's" % (len(differ), len(rows)))
    check(demangle(["_" + c for c in cnames]) == got, "_F names differ from their F names")

    # the anonymous lambdas, told apart by their number
    lambdas = sorted({s for syms in files.values() for s in syms if s.startswith(LAMBDA)})
    check(len(lambdas) >= 10, "fewer than 10 anonymous lambdas: %d" % len(lambdas))
    want = ["anonymous-lambda" + ("" if s.endswith("_0") else " #" + s[len(LAMBDA):])
            for s in lambdas]
    check(demangle(lambdas) == want, "lambdas: %s" % demangle(lambdas)[:5])

    # the files' other symbols (the unit's data, top_level_run) and names whose
    # readable part disagrees with their hexadecimal part stay as they are
    others = sorted({s for syms in files.values() for s in syms if not s.startswith("F")})
    check(others and demangle(others) == others,
          "other .eln symbols changed: %s" % [(a, b) for a, b in zip(others, demangle(others))
                                              if a != b][:5])
    forged = [c.replace("_count_", "_cuont_") for c in cnames if "_count_" in c]
    forged += [c[:-1] + "01" for c in cnames[:50]]  # "01" is not how Lisp prints 1
    forged += ["F" + c[2:] for c in cnames[:50]]  # an odd number of digits
    check(len(forged) > 100 and demangle(forged) == forged,
          "forged names demangled: %s" % [(a, b) for a, b in zip(forged, demangle(forged))
                                          if a != b][:5])

    # in running text, as in a backtrace
    count = [c for lisp, c, _ in rows if lisp == "stallapp-count"][0]
    line = "in %s+0x2c (stallapp.eln)" % count
    check(demangle([line])[0] == "in stallapp-count+0x2c (stallapp.eln)",
          "filtered text: %s" % demangle([line])[0])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
