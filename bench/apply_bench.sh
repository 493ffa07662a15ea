#!/bin/sh
# apply over a large machine manifest (200 stdio/http servers, a secret
# reference in each) into every detected target: a temporary HOME holds the
# config file of each of the 16 built-in CLIs, so all 16 are detected.
# Rows, each beside a baseline measured in the same run, interleaved:
#   - `apply --write` rendering all 200 servers into 16 fresh files (a fresh
#     copy of the home per run: backup, ledger and undo history included)
#     vs `agentstack --version` (the process floor);
#   - `apply --write` on an in-sync machine (nothing to write) vs --version;
#   - a no-op `apply` (preview) on an in-sync machine vs `cat` of the same
#     files it reads (manifest, 16 configs, ledger) — goal: <= 20 ms.
# Usage: bench/apply_bench.sh <builddir>   (rows: median of APPLY_RUNS, 15)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
if [ ! -x "$bin" ]; then
    printf '%-34s skipped: %s\n' "apply (all rows)" "$bin not built"
    exit 0
fi
tmp=$(mktemp -d /tmp/as-bench-apply-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
PYTHONPATH=$here python3 -B - "$bin" "$tmp" "${APPLY_RUNS:-15}" <<'PY'
import os, shutil, subprocess, sys, time
from benchlib import env_for, fmt_ms, interleaved, row, run_ok, skip, timed_run

binpath, root, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
N = 200
env = env_for(root)
env["PATH"] = "/usr/bin:/bin"  # no real CLI binary decides detection
home, ah = env["HOME"], env["AGENTSTACK_HOME"]
cfg = os.path.join(home, ".config")
# config.path of each built-in descriptor (adapters/*.yaml); {config} = ~/.config
CONFIGS = {
    "claude-code": "~/.claude.json",
    "claude-desktop": "{config}/Claude/claude_desktop_config.json",
    "codex": "~/.codex/config.toml",
    "copilot-cli": "~/.copilot/mcp-config.json",
    "cursor": "~/.cursor/mcp.json",
    "gemini": "~/.gemini/settings.json",
    "opencode": "{config}/opencode/opencode.json",
    "pi": "~/.pi/agent/mcp.json",
    "vscode": "{config}/Code/User/mcp.json",
    "windsurf": "~/.codeium/windsurf/mcp_config.json",
    "kiro": "~/.kiro/settings/mcp.json",
    "junie": "~/.junie/mcp/mcp.json",
    "antigravity": "~/.gemini/antigravity/mcp_config.json",
    "cline": "{config}/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "zed": "{config}/zed/settings.json",
    "amp": "{config}/amp/settings.json",
}
T = len(CONFIGS)
files = []
for cli, p in CONFIGS.items():
    p = p.replace("~", home, 1).replace("{config}", cfg, 1)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write("" if p.endswith(".toml") else "{}\n")
    files.append(p)
os.makedirs(ah, exist_ok=True)
manifest = os.path.join(ah, "agentstack.toml")
with open(manifest, "w") as f:
    f.write("version = 1\n")
    for i in range(N):
        if i % 4 == 3:
            f.write(f'\n[servers.web{i}]\ntype = "http"\nurl = "https://mcp{i}.example.com/mcp"\n'
                    f'headers = {{ Authorization = "Bearer ${{TOKEN_{i}}}" }}\n')
        else:
            f.write(f'\n[servers.srv{i}]\ntype = "stdio"\ncommand = "npx"\n'
                    f'args = ["-y", "@example/server-{i}", "--flag"]\n'
                    f'env = {{ TOKEN = "${{TOKEN_{i}}}" }}\n')
for i in range(N):
    env[f"TOKEN_{i}"] = f"value-{i}"
work = os.path.join(root, "work")  # no project manifest at or above it
os.makedirs(work)

# the pristine home, copied fresh for each first render
pristine = os.path.join(root, "pristine")
shutil.copytree(home, pristine, symlinks=True)

why = run_ok([binpath, "apply", "--write"], work, env)
detected = 0
if not why:
    for p in files:
        with open(p) as f:
            detected += "srv0" in f.read()
if why or detected != len(CONFIGS):
    skip("apply (all rows)", why or "only %d of %d targets rendered" % (detected, len(CONFIGS)))
    sys.exit(0)
print("  (apply rows: %d servers into %d targets; median of %d runs, interleaved)"
      % (N, detected, runs), flush=True)


def first_write():
    shutil.rmtree(home)
    shutil.copytree(pristine, home, symlinks=True)
    t = time.perf_counter()
    r = subprocess.run([binpath, "apply", "--write"], cwd=work, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit("apply --write failed (exit %d)" % r.returncode)
    return d


version = timed_run([binpath, "--version"], work, env)
ours, base = interleaved([first_write, version], runs)
row(f"apply --write 200 srv x {T} (fresh)", fmt_ms(ours), fmt_ms(base),
    "+" + fmt_ms(ours - base))

# now in sync: --write writes nothing, the preview says so
r = subprocess.run([binpath, "apply"], cwd=work, env=env, capture_output=True, text=True)
if r.returncode != 0 or "nothing to write" not in r.stdout:
    skip("apply no-op (in sync)", "the machine is not in sync after --write: "
         + (r.stdout + r.stderr).strip().splitlines()[-1])
    sys.exit(0)
ours, base = interleaved([timed_run([binpath, "apply", "--write"], work, env), version], runs)
row(f"apply --write in sync (200 x {T})", fmt_ms(ours), fmt_ms(base), "+" + fmt_ms(ours - base))

ledger = os.path.join(ah, "state.json")
cat = ["cat", manifest, ledger] + files
ours, base = interleaved([timed_run([binpath, "apply"], work, env),
                          timed_run(cat, work, env)], runs)
row(f"apply no-op preview (200 x {T})", fmt_ms(ours), fmt_ms(base), "+" + fmt_ms(ours - base))
print("  (no-op apply goal <= 20 ms: %s at %s; baseline = cat of the %d files it reads)"
      % ("met" if ours <= 0.020 else "NOT met", fmt_ms(ours), len(cat) - 1), file=sys.stderr,
      flush=True)
PY
