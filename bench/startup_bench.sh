#!/bin/sh
# Command start-up: the median wall time of several commands beside
# /bin/true measured in the same run (goal: about 1 ms over /bin/true), and
# `agentstack mcp` from spawn to its reply to initialize beside `cat`
# echoing the same line. Runs in a temporary HOME/AGENTSTACK_HOME with a
# small locked and trusted project (one server, one skill, a repo policy).
# Then the CPU time (perf stat task-clock, mean of 50) of each command vs
# /bin/true, which other jobs on the machine move far less than wall time.
# Uses hyperfine when it is installed (as root it is installed with apt-get
# unless BENCH_NO_INSTALL=1); otherwise an interleaved python loop.
# Usage: bench/startup_bench.sh <builddir>
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
if [ ! -x "$bin" ]; then
    printf '%-34s skipped: %s\n' "startup (all rows)" "$bin not built"
    exit 0
fi
if ! command -v hyperfine >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
    [ -z "${BENCH_NO_INSTALL:-}" ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 120 apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
        { timeout 120 apt-get update -qq >/dev/null 2>&1 &&
            timeout 120 apt-get install -y -qq hyperfine >/dev/null 2>&1; } || true
fi
tmp=$(mktemp -d /tmp/as-bench-startup-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
PYTHONPATH=$here python3 -B - "$bin" "$tmp" "${STARTUP_RUNS:-100}" <<'PY'
import os, shutil, sys
from benchlib import (env_for, first_reply, fmt_ms, hyperfine_pair, interleaved, make_project,
                      perf_cpu, row, run_ok, skip, timed_run)

binpath, root, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = env_for(root)
proj, why_proj = make_project(root, binpath, env)
hf = shutil.which("hyperfine")
true = [shutil.which("true") or "/bin/true"]
print("  (start-up rows: median of %d runs, %s; ours vs /bin/true)"
      % (runs, "hyperfine -N" if hf else "interleaved python loop"), flush=True)

rows = [
    ("--version", [binpath, "--version"], False),
    ("help", [binpath, "help"], False),
    ("trust --preview (small)", [binpath, "trust", ".", "--preview"], True),
    ("lock preview (small)", [binpath, "lock"], True),
    ("doctor --ci (small)", [binpath, "doctor", "--ci"], True),
]
cpu = []
for name, cmd, needs_proj in rows:
    if needs_proj and why_proj:
        skip(name, "project setup failed: " + why_proj)
        continue
    why = run_ok(cmd, proj, env)
    if why:
        skip(name, why)
        continue
    res = None
    if hf:
        res = hyperfine_pair(hf, true, cmd, proj, env, runs, os.path.join(root, "hf.json"))
    if res is None:
        res = interleaved([timed_run(true, proj, env), timed_run(cmd, proj, env)], runs)
    base, ours = res
    row(name, fmt_ms(ours), fmt_ms(base), "+" + fmt_ms(ours - base))
    cpu.append((name, cmd))

# CPU time of the same commands: steadier than wall time on a busy machine
for name, cmd in cpu:
    c_true, c_ours = perf_cpu(true, proj, env), perf_cpu(cmd, proj, env)
    if c_true is None or c_ours is None:
        skip("cpu: " + name, "perf stat task-clock unavailable")
        break
    row("cpu: " + name, fmt_ms(c_ours), fmt_ms(c_true), "+" + fmt_ms(c_ours - c_true))

name = "mcp initialize -> reply vs cat"
if why_proj:
    skip(name, "project setup failed: " + why_proj)
else:
    try:
        mcp = [binpath, "mcp", "--auto-project"]
        cat = [shutil.which("cat") or "/bin/cat"]
        first_reply(mcp, proj, env)  # warm
        base, ours = interleaved([lambda: first_reply(cat, proj, env),
                                  lambda: first_reply(mcp, proj, env)], runs)
        row(name, fmt_ms(ours), fmt_ms(base), "+" + fmt_ms(ours - base))
    except Exception as e:  # a broken gateway is a skipped row, not a broken table
        skip(name, str(e))
PY
