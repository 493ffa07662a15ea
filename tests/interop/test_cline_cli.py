"""Interop: the real Cline CLI (npm package `cline`, tests/interop/pins.txt)
loads what agentstack writes into ~/.cline/data/settings/cline_mcp_settings.json
(the `cline-cli` adapter, docs/adapters.md), and a connect leaves it one way
to each server.

The CLI has no headless server list (its config view needs a terminal), but
every task it runs sends the model the tools it loaded, each MCP server's
named `<server>__<tool>`. So the CLI runs one task against a stand-in
OpenAI-compatible endpoint on loopback (fake_openai.py) and the test reads the
tool names from the request: a server's tool is there only when Cline parsed
its entry, started or reached it and listed its tools. Everything runs in a
loopback-only network namespace with its own PID namespace, so the
background hub the CLI starts ends with it.

In a temporary HOME whose settings file `cline mcp add` wrote (one hand-added
server, in the CLI's own nested form) and a trusted project:

1. `apply --scope global --target cline-cli --write`: Cline loads a stdio
   server whose `env` it must pass (probe_mcp.py refuses to serve without
   it), one whose `cwd` it must honour, a remote one over Streamable HTTP
   whose header it must send (http_server.py answers 401 without it), and
   skips the one an `extra.cline-cli` marks `disabled`; the hand-added server
   still loads.
2. `connect cline-cli --write`: Cline loads the gateway (`agentstack mcp
   --auto-project`) and its tools, no direct copy of a server we rendered,
   and the hand-added one.
3. `undo --to 1 --write` returns the file byte for byte.
4. With CLINE_MCP_SETTINGS_PATH set, apply writes the file it names and the
   CLI loads our servers from there.

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_cline_cli.py
Needs AS_BIN (default build/agentstack), root and unshare. Skips loudly
(exit 77; a failure under CI=true) when the CLI could not be installed.
"""
import json
import os
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import BIN, NM, SRC, check, done, fenced_env, run, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLINE = os.path.join(NM, ".bin", "cline")
PROBE = os.path.join(HERE, "probe_mcp.py")
FAKE_AI = os.path.join(HERE, "fake_openai.py")
HTTP_MCP = os.path.join(SRC, "tests", "fixtures", "mcp", "http_server.py")
REL = os.path.join(".cline", "data", "settings", "cline_mcp_settings.json")

# Inside the namespaces: the model stand-in, the remote MCP server, then the
# CLI (configured for the stand-in, then one task in the project).
NS_SCRIPT = r"""
ip link set lo up
AIPORT=$1 MCPPORT=$2 LOG=$3 PROJ=$4 CLINE=$5 FAKE=$6 HTTPMCP=$7
python3 "$FAKE" "$AIPORT" "$LOG" &
python3 "$HTTPMCP" --port "$MCPPORT" --require X-Api-Key:k1 >/dev/null &
for p in "$AIPORT" "$MCPPORT"; do
  i=0
  while ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; do
    i=$((i+1)); [ $i -gt 400 ] && break; sleep 0.05
  done
done
"$CLINE" auth -p openai -k sk-test -m fake-model -b "http://127.0.0.1:$AIPORT/v1" || exit 9
cd "$PROJ" && "$CLINE" --json -c "$PROJ" "say hi"
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manifest(work, port):
    # Cline gives a server 3 s to answer initialize unless its entry says
    # otherwise; a shared CI machine may be slower, so every entry carries a
    # generous `timeout` (seconds) through extra.cline-cli.
    t = "[servers.%s.extra.cline-cli]\ntimeout = 120\n"
    return f"""version = 1
[servers.notes]
type = "stdio"
command = "python3"
args = ["{PROBE}", "notes_ok", "--want-env", "NOTES_TOKEN=t1"]
env = {{ NOTES_TOKEN = "${{NOTES_TOKEN}}" }}
{t % "notes"}
[servers.rooted]
type = "stdio"
command = "python3"
args = ["{PROBE}", "rooted_ok", "--want-cwd", "{work}"]
cwd = "work"
{t % "rooted"}
[servers.docs]
type = "http"
url = "http://127.0.0.1:{port}/mcp"
headers = {{ "X-Api-Key" = "${{DOCS_KEY}}" }}
{t % "docs"}
[servers.off]
type = "stdio"
command = "python3"
args = ["{PROBE}", "off_ok"]
[servers.off.extra.cline-cli]
timeout = 120
disabled = true
"""


def cline_tools(env, proj, root, mcp_port):
    """The tool names the CLI sent the model in its one task."""
    log = os.path.join(root, "requests.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    p = run(["unshare", "-n", "-p", "-f", "--mount-proc", "bash", "-c", NS_SCRIPT, "ns",
             str(free_port()), str(mcp_port), log, proj, CLINE, FAKE_AI, HTTP_MCP],
            env, proj, timeout=300)
    names = set()
    if os.path.exists(log):
        with open(log) as f:
            for ln in f:
                body = json.loads(ln)["body"]
                names |= {t.get("function", {}).get("name") for t in body.get("tools", [])}
    return p, names


def main():
    if not os.path.exists(CLINE):
        skip(f"the pinned Cline CLI is not installed in {NM} — run tests/interop/setup_clis.sh "
             "(needs the npm registry)")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        skip("needs root and unshare for loopback-only network and PID namespaces")
    root = tempfile.mkdtemp(prefix="as-interop-cline-")
    try:
        home, proj = os.path.join(root, "home"), os.path.join(root, "proj")
        work = os.path.join(proj, "work")  # a project's cwd stays inside it
        os.makedirs(os.path.join(proj, ".agentstack"))
        os.makedirs(home)
        os.makedirs(work)
        with open(os.path.join(work, ".keep"), "w"):
            pass
        env = fenced_env(home)
        env.update(NOTES_TOKEN="t1", DOCS_KEY="k1")
        # The CLI's own writer makes the file we merge into.
        a = run(["unshare", "-n", "-p", "-f", "--mount-proc", CLINE, "mcp", "add", "mine",
                 "--yes", "--json", "--", "python3", PROBE, "mine_ok"], env, proj)
        cfg = os.path.join(home, REL)
        check(a.returncode == 0 and os.path.exists(cfg), "cline mcp add writes its settings file",
              a.stdout + a.stderr)
        with open(cfg) as f:
            seed = f.read()
        check('"transport"' in seed, "the CLI writes its nested transport form", seed)
        # The same generous initialize timeout as ours (see manifest()), written
        # the way the CLI writes the file (two-space JSON and a newline).
        doc = json.loads(seed)
        doc["mcpServers"]["mine"]["timeout"] = 120
        seed = json.dumps(doc, indent=2) + "\n"
        with open(cfg, "w") as f:
            f.write(seed)

        mcp_port = free_port()
        with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
            f.write(manifest(work, mcp_port))
        run([BIN, "lock", "--write"], env, proj)
        digest = json.loads(run([BIN, "trust", "--preview"], env, proj).stdout)["surface_digest"]
        run([BIN, "trust", "--yes", "--consented", digest], env, proj)

        det = run([BIN, "adapters", "list", "--json"], env, proj)
        inst = {x["id"]: x["installed"] for x in json.loads(det.stdout or "[]")}
        check(inst.get("cline-cli") is True, "cline-cli is detected (its binary, ~/.cline)",
              det.stdout + det.stderr)

        g = run([BIN, "apply", "--scope", "global", "--target", "cline-cli", "--write"], env, proj)
        check(g.returncode == 0, "apply --scope global --target cline-cli --write",
              g.stdout + g.stderr)
        with open(cfg) as f:
            servers = json.load(f)["mcpServers"]
        check(servers.get("notes", {}).get("env") == {"NOTES_TOKEN": "t1"} and
              servers.get("rooted", {}).get("cwd") == work and
              servers.get("docs", {}).get("type") == "streamableHttp" and
              servers.get("off", {}).get("disabled") is True and "mine" in servers,
              "the file holds our entries (env resolved, cwd, streamableHttp, disabled) "
              "beside the hand-added one", json.dumps(servers, indent=1))

        p, tools = cline_tools(env, proj, root, mcp_port)
        check(p.returncode == 0, "cline runs a task with the file", p.stdout[-2000:] + p.stderr)
        check("notes__notes_ok" in tools, "stdio server with env: loaded and started", tools)
        check("rooted__rooted_ok" in tools, "stdio server with cwd: started in its directory",
              tools)
        check("docs__echo" in tools, "remote server: reached over Streamable HTTP with its header",
              tools)
        check(not any(t.startswith("off__") for t in tools), "the disabled server is skipped",
              tools)
        check("mine__mine_ok" in tools, "the hand-added server still loads", tools)

        c = run([BIN, "connect", "cline-cli", "--write"], env, proj)
        check(c.returncode == 0 and "✓ gateway registered" in c.stdout, "connect cline-cli --write",
              c.stdout + c.stderr)
        with open(cfg) as f:
            servers = json.load(f)["mcpServers"]
        gw = servers.get("agentstack", {})
        check(gw.get("type") == "stdio" and gw.get("args") == ["mcp", "--auto-project"] and
              sorted(servers) == ["agentstack", "mine"],
              "after connect: the gateway and the hand-added server, no direct copy",
              json.dumps(servers, indent=1))
        p, tools = cline_tools(env, proj, root, mcp_port)
        check(p.returncode == 0 and any(t.startswith("agentstack__") for t in tools),
              "cline loads the gateway and its tools", sorted(tools))
        check(not any(t.startswith(("notes__", "rooted__", "docs__")) for t in tools) and
              "mine__mine_ok" in tools, "one way to each server: none direct, the hand one kept",
              sorted(tools))

        u = run([BIN, "undo", "--to", "1", "--write"], env, proj)
        with open(cfg) as f:
            back = f.read()
        check(u.returncode == 0 and back == seed, "undo --to 1 returns the file byte for byte",
              u.stdout + u.stderr + back)

        # CLINE_MCP_SETTINGS_PATH moves the file for the CLI and for apply alike.
        env["CLINE_MCP_SETTINGS_PATH"] = os.path.join(root, "moved.json")
        g = run([BIN, "apply", "--scope", "global", "--target", "cline-cli", "--write"], env, proj)
        check(g.returncode == 0 and os.path.exists(env["CLINE_MCP_SETTINGS_PATH"]),
              "apply follows CLINE_MCP_SETTINGS_PATH", g.stdout + g.stderr)
        p, tools = cline_tools(env, proj, root, mcp_port)
        check(p.returncode == 0 and "notes__notes_ok" in tools and "mine__mine_ok" not in tools,
              "cline loads the moved file (and not the default one)", sorted(tools))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    done()


main()
