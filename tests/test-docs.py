#!/usr/bin/env python3
"""Keeps --help, the man pages and the exit-status table in agreement.

Usage: test-docs.py STALLWATCH SOURCE_ROOT

- EXIT STATUS in stallwatch(1) lists exactly the statuses of cli/status.h,
  with the same meanings.
- The commands that `stallwatch --help` lists are the ones under COMMANDS in
  stallwatch(1), and each but `help` has a page stallwatch-VERB(1) that is
  installed.
- The long options of `stallwatch VERB --help` are exactly those under OPTIONS
  in stallwatch-VERB(1).
- Every page's EXIT STATUS names only statuses of cli/status.h (or run's
  125-127 and 128 + N), and each command's page names 0, 2 (usage), 7
  (output) and 8 (out of memory), which every command can return.
"""
import os
import re
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def roff_text(s):
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace("\\-", "-").replace("\\(mu", "x").replace("\\e", "\\")
    return s


def sections(page):
    """Maps each .SH name to its lines."""
    out, cur = {}, None
    for line in page.splitlines():
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def tp_entries(lines):
    """The first line after each .TP, as plain text."""
    items = []
    for i, line in enumerate(lines):
        if line.startswith(".TP") and i + 1 < len(lines):
            items.append((roff_text(re.sub(r"^\.(B|BR|I|IR) ", "", lines[i + 1])),
                          roff_text(lines[i + 2]) if i + 2 < len(lines) else ""))
    return items


def long_options(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


def main():
    exe, root = sys.argv[1], sys.argv[2]
    man = os.path.join(root, "man")
    main_page = open(os.path.join(man, "stallwatch.1")).read()
    secs = sections(main_page)

    # exit statuses
    status_h = open(os.path.join(root, "cli", "status.h")).read().replace("\\\n", " ")
    want = {}
    for value, text in re.findall(r'X\(SW_EXIT_\w+,\s*(\d+),\s*((?:"[^"]*"\s*)+)\)', status_h):
        want[value] = "".join(re.findall(r'"([^"]*)"', text))
    got = {}
    for name, text in tp_entries(secs.get("EXIT STATUS", [])):
        got[name.replace(".B ", "").strip()] = text.strip()
    if not want:
        fail("no statuses found in cli/status.h")
    for value, text in want.items():
        if got.get(value) != text:
            fail(f"exit status {value}: status.h says {text!r}, stallwatch(1) says {got.get(value)!r}")
    for value in got:
        if value not in want:
            fail(f"stallwatch(1) documents exit status {value}, status.h has none")

    # the signature version the pages state, against the one the code writes
    tree_h = open(os.path.join(root, "lib", "tree", "tree.h")).read()
    version = re.search(r"#define SW_SIGNATURE_VERSION (\d+)", tree_h).group(1)
    output_page = roff_text(open(os.path.join(man, "stallwatch-output.7")).read())
    statements = re.findall(r"rules of signature version (\d+)|signature's recipe \((\d+)\)",
                            output_page)
    if len(statements) != 2:
        fail(f"stallwatch-output(7): {len(statements)} statements of the signature version, not 2")
    for stated in statements:
        n = stated[0] or stated[1]
        if n != version:
            fail(f"stallwatch-output(7) states signature version {n}, tree.h writes {version}")

    # commands
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    verbs = re.findall(r"^  (\S+)\s{2,}", out.split("commands:")[1], re.M)
    documented = [e[0].split()[0] for e in tp_entries(secs.get("COMMANDS", []))]
    if sorted(verbs) != sorted(documented):
        fail(f"--help lists {sorted(verbs)}, stallwatch(1) COMMANDS lists {sorted(documented)}")
    installed = open(os.path.join(man, "meson.build")).read()
    for verb in verbs:
        if verb == "help":
            continue
        page_name = f"stallwatch-{verb}.1"
        path = os.path.join(man, page_name)
        if not os.path.exists(path):
            fail(f"no man page {page_name}")
            continue
        if f"'{page_name}'" not in installed:
            fail(f"{page_name} is not installed by man/meson.build")
        page = sections(open(path).read())
        help_text = subprocess.run([exe, verb, "--help"], capture_output=True, text=True,
                                   check=True).stdout
        help_opts = long_options(help_text) - {"--help"}
        man_opts = long_options(roff_text("\n".join(page.get("OPTIONS", [])))) - {"--help"}
        if help_opts != man_opts:
            fail(f"{verb}: only in --help: {sorted(help_opts - man_opts)}, "
                 f"only in {page_name}: {sorted(man_opts - help_opts)}")

    # every page's EXIT STATUS, against the table
    run_statuses = {int(v) for v in re.findall(r"SW_EXIT_RUN_\w+ = (\d+)", status_h)}
    known = {int(v) for v in want} | run_statuses | {128}
    for page_name in sorted(os.listdir(man)):
        if not re.match(r"stallwatch.*\.\d$", page_name):
            continue
        text = roff_text("\n".join(sections(open(os.path.join(man, page_name)).read())
                                   .get("EXIT STATUS", [])))
        if not text:
            continue
        # statuses, not iOS versions, ports or seconds
        text = re.sub(r"iOS \d+|\d{4,}(-\d+)?|\d+ s\b", "", text)
        named = {int(n) for n in re.findall(r"(?<![\w.-])(\d{1,3})(?![\w.%])", text)}
        for n in sorted(named - known):
            fail(f"{page_name}: EXIT STATUS names {n}, which cli/status.h does not define")
        verb = page_name[len("stallwatch-"):-2] if page_name.endswith(".1") else None
        if verb in verbs:
            for n in sorted({0, 2, 7, 8} - named):
                fail(f"{page_name}: EXIT STATUS does not name status {n}")

    # usage errors: one line plus a hint, status 2
    r = subprocess.run([exe, "no-such-verb"], capture_output=True, text=True)
    if r.returncode != 2 or "try 'stallwatch --help'" not in r.stderr or r.stdout:
        fail(f"unknown verb: status {r.returncode}, stderr {r.stderr!r}")
    for verb in verbs:
        r = subprocess.run([exe, verb, "--no-such-option"], capture_output=True, text=True)
        if r.returncode != 2 or f"try 'stallwatch {verb} --help'" not in r.stderr or r.stdout:
            fail(f"{verb} --no-such-option: status {r.returncode}, stderr {r.stderr!r}")

    # an output that cannot be written is status 7, not "bad input"
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            r = subprocess.run([exe, "demangle", "_Z1fv"], stdout=full, stderr=subprocess.PIPE,
                               text=True)
        if r.returncode != 7 or len(r.stderr.splitlines()) != 1:
            fail(f"demangle > /dev/full: status {r.returncode}, stderr {r.stderr!r}")

    print(f"{len(verbs)} commands checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
