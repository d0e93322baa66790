#!/usr/bin/env python3
"""The shell completions list exactly what --help lists.

Usage: test-completion.py STALLWATCH BASH_FILE ZSH_FILE FISH_FILE

The three scripts are the ones meson generated and installs.  For every verb
of `stallwatch --help`, each script offers exactly the short and long options
of `stallwatch VERB --help` (which tests/test-docs.py holds to the man
pages).  The bash script is also run: it completes verbs, options and the
values of --format and --color, and every value it offers is one the command
accepts.  zsh and fish, when installed, parse their scripts.
"""
import re
import shutil
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def help_options(exe, verb):
    text = subprocess.run([exe, verb, "--help"], capture_output=True, text=True,
                          check=True).stdout
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^  (?:-(\w), )?\s*--([a-z][a-z0-9-]*)", line)
        if m:
            if m.group(1):
                opts.add("-" + m.group(1))
            opts.add("--" + m.group(2))
    return opts


def verbs_of(exe):
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    return re.findall(r"^  (\S+)\s{2,}", out.split("commands:")[1], re.M)


def bash_sections(text):
    return {v: set(o.split()) for v, o in re.findall(r"^\t([a-z]+)\)\n\t\topts='([^']*)'", text,
                                                     re.M)}


def zsh_sections(text):
    out = {}
    for verb, body in re.findall(r"^\t([a-z]+)\)\n\t\t_arguments -s(.*?);;", text, re.M | re.S):
        out[verb] = set(re.findall(r"'(--?[a-zA-Z][a-z0-9-]*)\[", body))
    return out


def fish_sections(text):
    out = {}
    for verb, rest in re.findall(r"__fish_seen_subcommand_from (\S+)'(.*)", text):
        opts = out.setdefault(verb, set())
        for kind, name in re.findall(r" -([sl]) (\S+)", rest):
            opts.add(("-" if kind == "s" else "--") + name)
    return out


def bash_complete(script, words):
    """COMPREPLY for the command line `words`, the last being completed."""
    line = " ".join("'%s'" % w for w in words)
    prog = (f"source '{script}'; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
            "_stallwatch; printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True)
    if r.returncode:
        fail(f"bash completion of {words}: {r.stderr.strip()}")
    return [w for w in r.stdout.splitlines() if w]


def check_bash(exe, script, verbs):
    got = bash_complete(script, ["stallwatch", "re"])
    if got != ["report"]:
        fail(f"bash: 'stallwatch re' completes to {got}, want ['report']")
    got = bash_complete(script, ["stallwatch", "help", "sym"])
    if got != ["symbolicate"]:
        fail(f"bash: 'stallwatch help sym' completes to {got}")
    got = bash_complete(script, ["stallwatch", "run", "--max-"])
    if sorted(got) != ["--max-depth", "--max-stalls"]:
        fail(f"bash: 'stallwatch run --max-' completes to {got}")
    for option in ("--format", "--color"):
        values = bash_complete(script, ["stallwatch", "report", option, ""])
        if len(values) < 3:
            fail(f"bash: {option} offers {values}")
        for v in values + ["no-such-value"]:
            r = subprocess.run([exe, "report", option, v, "/nonexistent.swtrace"],
                               capture_output=True)
            if (r.returncode == 2) != (v == "no-such-value"):
                fail(f"report {option} {v}: status {r.returncode} ({r.stderr.decode()})")
    for verb in verbs:
        got = set(bash_complete(script, ["stallwatch", verb, "-"]))
        want = help_options(exe, verb)
        if got != want:
            fail(f"bash: 'stallwatch {verb} -' offers {sorted(got ^ want)} unlike --help")


def main():
    exe, scripts = sys.argv[1], dict(zip(("bash", "zsh", "fish"), sys.argv[2:5]))
    verbs = verbs_of(exe)
    parsers = {"bash": bash_sections, "zsh": zsh_sections, "fish": fish_sections}
    for shell, path in scripts.items():
        text = open(path).read()
        sections = parsers[shell](text)
        if sorted(sections) != sorted(verbs):
            fail(f"{shell}: verbs {sorted(sections)}, --help lists {sorted(verbs)}")
        for verb in verbs:
            want = help_options(exe, verb)
            got = sections.get(verb, set())
            if got != want:
                fail(f"{shell} {verb}: only in the script {sorted(got - want)}, "
                     f"only in --help {sorted(want - got)}")
            if shell != "bash" and verb not in text:
                fail(f"{shell}: verb {verb} is never offered")
        syntax = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "-n"]}[shell]
        if shutil.which(syntax[0]):
            r = subprocess.run(syntax + [path], capture_output=True, text=True)
            if r.returncode:
                fail(f"{shell} -n {path}: {r.stderr.strip()}")
        else:
            print(f"note: {syntax[0]} is not installed; its script was only read")
    check_bash(exe, scripts["bash"], verbs)
    print(f"{len(verbs)} verbs in 3 shells checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
