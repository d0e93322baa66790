#!/usr/bin/env python3
"""Runs bench-loop with and without the agent preloaded and prints the cost
per loop iteration (target: at most 60 ns) and the resident memory the agent
adds with its defaults (target: at most 4 MiB); baseline: the same loop
without the agent."""
import os
import subprocess
import sys
import tempfile

loop, agent = sys.argv[1], sys.argv[2]


def run(env):
    out = subprocess.run([loop], stdout=subprocess.PIPE, text=True, env=env, check=True).stdout
    return dict((l.rsplit(" ", 1)[0], float(l.rsplit(" ", 1)[1])) for l in out.splitlines())


base_env = dict(os.environ)
base_env.pop("LD_PRELOAD", None)
d = tempfile.mkdtemp()
agent_env = dict(base_env, LD_PRELOAD=agent, STALLWATCH_LISTEN="unix:%s/s" % d)
base = min((run(base_env) for _ in range(3)), key=lambda r: r["poll-loop ns/iteration"])
with_agent = min((run(agent_env) for _ in range(3)), key=lambda r: r["poll-loop ns/iteration"])
added = with_agent["poll-loop ns/iteration"] - base["poll-loop ns/iteration"]
print("empty poll loop: %.1f ns/iteration without the agent, %.1f with: +%.1f ns (target <= 60; ratio %.2f)"
      % (base["poll-loop ns/iteration"], with_agent["poll-loop ns/iteration"], added, added / 60))
if "ready-poll-loop ns/iteration" in with_agent:
    b, w = base["ready-poll-loop ns/iteration"], with_agent["ready-poll-loop ns/iteration"]
    print("ready poll loop (every poll through the hooks): %.1f ns/iteration without the agent, "
          "%.1f with: +%.1f ns (target <= 60; ratio %.2f)" % (b, w, w - b, (w - b) / 60))
if "hook-pair ns/iteration" in with_agent:
    print("explicit hook pair alone: %.1f ns/iteration" % with_agent["hook-pair ns/iteration"])
rss = with_agent["rss-kib"] - base["rss-kib"]
print("resident memory: %d KiB without, %d KiB with: +%d KiB (target <= 4096; ratio %.2f)"
      % (base["rss-kib"], with_agent["rss-kib"], rss, rss / 4096))
