#!/bin/sh
# Instruction counts under callgrind: repeatable where wall times on a shared
# machine are not. Start-up (--version vs /bin/true), one trust check
# (trust --preview on the small project vs --version: the difference is the
# check), and one brokered gateway call in steady state (tools/call to the
# project's echo tool: a session of 110 calls minus one of 10, per call, vs
# `cat` echoing the same lines). Only our process
# is counted (children, like the python upstream, are not traced).
# Usage: bench/callgrind_bench.sh <builddir>
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
if ! command -v valgrind >/dev/null 2>&1; then
    printf '%-34s skipped: %s\n' "callgrind (all rows)" "valgrind not installed"
    exit 0
fi
if [ ! -x "$bin" ]; then
    printf '%-34s skipped: %s\n' "callgrind (all rows)" "$bin not built"
    exit 0
fi
tmp=$(mktemp -d /tmp/as-bench-cg-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
PYTHONPATH=$here python3 -B - "$bin" "$tmp" <<'PY'
import os, shutil, sys
from benchlib import callgrind_ir, env_for, fmt_ir, make_project, mcp_session, row, skip

binpath, root = sys.argv[1], sys.argv[2]
env = env_for(root)
proj, why_proj = make_project(root, binpath, env)
out = os.path.join(root, "cg.out")
true = [shutil.which("true") or "/bin/true"]
K0, K1 = 10, 110


def ir(cmd):
    return callgrind_ir(cmd, proj, env, out)


try:
    i_true, i_ver = ir(true), ir([binpath, "--version"])
    row("Ir: --version vs /bin/true", fmt_ir(i_ver), fmt_ir(i_true), "+" + fmt_ir(i_ver - i_true))
except Exception as e:
    i_ver = None
    skip("Ir: --version vs /bin/true", str(e))

name = "Ir: trust check vs --version"
if why_proj or i_ver is None:
    skip(name, why_proj or "no --version count")
else:
    try:
        i_tr = ir([binpath, "trust", ".", "--preview"])
        row(name, fmt_ir(i_tr), fmt_ir(i_ver), "+" + fmt_ir(i_tr - i_ver))
    except Exception as e:
        skip(name, str(e))


def per_call(cmd, check):
    """Ir per round trip in steady state: the first calls (upstream spawn,
    tool listing) are in both sessions and cancel out."""
    counts = []
    for k in (K0, K1):
        last = []
        counts.append(callgrind_ir(cmd, proj, env, out, stdin_fn=lambda vg, k=k: last.append(
            mcp_session(vg, proj, env, k))))
        if check and b"echo: hi" not in last[-1]:
            raise RuntimeError("the call was not brokered: %r" % last[-1][:160])
    return (counts[1] - counts[0]) / (K1 - K0)


name = "Ir: gateway tools/call vs cat"
if why_proj:
    skip(name, why_proj)
else:
    try:
        gw = per_call([binpath, "mcp", "--auto-project"], True)
        relay = per_call([shutil.which("cat") or "/bin/cat"], False)
        row(name, fmt_ir(gw), fmt_ir(relay), "+" + fmt_ir(gw - relay))
    except Exception as e:
        skip(name, str(e))
PY
