"""Interop: the official TypeScript SDK client drives `agentstack mcp` in front
of the real @modelcontextprotocol/server-everything, over stdio and over
Streamable HTTP, in transparent and compact mode.

Each session runs the SDK's Client + StdioClientTransport (sdk_session.mjs)
against `agentstack mcp --manifest-dir <proj> [--transparent]`, wrapped in
tee_shim.mjs so every frame the gateway writes is recorded; afterwards every
recorded message is validated against the official JSON schema of the
negotiated revision (validate_frames.mjs, ajv). Four sessions cover both
transports × both modes × revisions 2025-11-25 and 2025-06-18:
initialize, tools/list (transparent: exactly the policy-allowed upstream
tools, schemas as the upstream gave them; compact: the control plane only),
tools_search (query and entity), tools/call of `everything__echo`,
`everything__get-sum`, structured/image/resource content, 16 concurrent
calls, a project-policy and a machine-policy denial with the exact
text, an unknown tool, ping; the audit rows; and every upstream process
group gone after the client closes.

Everything runs inside a loopback-only network namespace (`unshare -n`, lo
up) with a temporary HOME and AGENTSTACK_HOME. Needs root, AS_BIN, and the
interop cache (tests/interop/setup_clis.sh); exits 77 loudly without them.
The helpers here are shared with the other test_gateway_*.py files.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import CACHE, EVERYTHING, HERE, NM, NODE22  # noqa: E402
from aslib import BIN, DATA, Sandbox, check, done, skip  # noqa: E402  (on sys.path via clislib)
INSPECTOR = os.path.join(NM, "@modelcontextprotocol", "inspector", "clients", "launcher",
                         "build", "index.js")
SDK = os.path.join(NM, "@modelcontextprotocol", "sdk", "dist", "esm", "client", "index.js")
AJV = os.path.join(NM, "ajv-formats", "package.json")
SDK_SESSION = os.path.join(HERE, "sdk_session.mjs")
TEE = os.path.join(HERE, "tee_shim.mjs")
VALIDATE = os.path.join(HERE, "validate_frames.mjs")
SCHEMAS = os.path.join(DATA, "mcp-schema")
QUIET = {
    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "NO_UPDATE_NOTIFIER": "1",
    "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
LONET = "AS_INTEROP_LONET"
WAIT = 180  # seconds before a hung peer stops the test (never an assertion on speed)
HTTP_PORT = 38411  # the namespace is private to this test: nothing else listens in it
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
CONTROL = ["agentstack_search", "tools_search", "tools_bindings", "agentstack_list",
           "agentstack_doctor", "agentstack_list_loadable", "agentstack_load",
           "agentstack_lease_open", "agentstack_lease_status", "agentstack_lease_close",
           "agentstack_lease_freeze", "agentstack_explain", "agentstack_diff",
           "agentstack_add_skill", "agentstack_create_toolset", "agentstack_session_start",
           "agentstack_session_end", "agentstack_session_list", "agentstack_session_freeze",
           "agentstack_add_server"]
PROJECT_DENY = "get-env"
MACHINE_DENY = "trigger-*"
DENY_PROJECT = ('Error: blocked: everything tried to call get-env — denied by '
                '[policy.tools] rule "!get-env"')
DENY_MACHINE = ('Error: blocked: everything tried to call trigger-long-running-operation — '
                'denied by [policy.tools] rule "!trigger-*" '
                '(machine policy — ~/.agentstack/agentstack.toml)')
ECHO_MSG = "héllo ✓ 🚀 \"quoted\" \\ back"


def need(*paths):
    """Exits 77, loudly, when the interop cache or the namespace is missing
    (a failure under CI=true: aslib.skip). The schemas are in the repository:
    their absence is a failure."""
    missing = [p for p in (NODE22, EVERYTHING, TEE, *paths) if not os.path.exists(p)]
    if missing:
        skip(f"the interop peers are not installed in {CACHE} (missing {missing[0]}) — "
             "run tests/interop/setup_clis.sh (needs the npm registry)")
    if not os.path.isdir(os.path.join(SCHEMAS, "2025-11-25")):
        print(f"FAIL no MCP schemas in {SCHEMAS} (tests/data/README.md)")
        sys.exit(1)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        skip("needs root and unshare for a loopback-only network namespace")


def enter_lonet():
    """Re-runs this script inside a fresh loopback-only network namespace, so
    every peer, server and the gateway share it and nothing reaches out."""
    if os.environ.get(LONET) == "1":
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
        names = [ln.split(":")[1].strip() for ln in links.stdout.splitlines() if ":" in ln]
        if names != ["lo"]:
            print(f"error: expected a loopback-only namespace, found {names}", file=sys.stderr)
            sys.exit(1)
        return
    env = dict(os.environ, **{LONET: "1"})
    rc = subprocess.call(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"',
                          "lonet", sys.executable, os.path.abspath(sys.argv[0]),
                          *sys.argv[1:]], env=env)
    sys.exit(rc)


def peer_env(sb, **extra):
    env = sb.env(**QUIET)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[k]
    env["AS_INTEROP_NM"] = NM
    env["PATH"] = os.path.dirname(NODE22) + ":/usr/bin:/bin"
    env.update(extra)
    return env


def write_project(sb, upstream, port=HTTP_PORT):
    """A project declaring server-everything (stdio or Streamable HTTP) with
    one project-layer denial, and a machine policy with one more."""
    if upstream == "stdio":
        server = (f'type = "stdio"\ncommand = "{NODE22}"\n'
                  f'args = ["{EVERYTHING}", "stdio"]\n')
    else:
        server = f'type = "http"\nurl = "http://127.0.0.1:{port}/mcp"\n'
    # A loopback HTTP upstream is reached only where an egress rule names it.
    egress = "" if upstream == "stdio" else '\n[policy.egress]\neverything = ["127.0.0.1"]\n'
    sb.write("agentstack.toml", "version = 1\n\n[servers.everything]\n" + server +
             f'\n[policy.tools]\neverything = ["!{PROJECT_DENY}"]\n' + egress)
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(f'version = 1\n\n[policy.tools]\n"*" = ["!{MACHINE_DENY}"]\n')


class HttpEverything:
    """server-everything's Streamable HTTP transport on 127.0.0.1:port."""

    def __init__(self, env, port=HTTP_PORT):
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log = open(os.path.join(env["HOME"], "everything-http.log"), "w+")
        self.proc = subprocess.Popen([NODE22, EVERYTHING, "streamableHttp"],
                                     env=dict(env, PORT=str(port)), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        end = time.monotonic() + WAIT
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("server-everything (streamableHttp) did not start: " +
                           self.output())

    def output(self):
        self.log.seek(0)
        return self.log.read()[-2000:]

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()


def gateway_argv(sb, log, transparent):
    return [TEE, log, os.path.realpath(BIN), "mcp", "--manifest-dir", sb.project,
            *(["--transparent"] if transparent else [])]


def sdk_session(env, spec, cwd):
    """Runs one SDK client session; returns its report (or a connectError)."""
    r = subprocess.run([NODE22, SDK_SESSION, json.dumps(spec)], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=WAIT)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"connectError": f"sdk_session exit {r.returncode}: {r.stdout[-1500:]}"
                                f"{r.stderr[-1500:]}", "steps": []}


def validate(env, logs):
    """Validates every recorded gateway message; returns the report (logs
    keyed by path) or {"error": …}."""
    r = subprocess.run([NODE22, VALIDATE, SCHEMAS, *logs], env=env, capture_output=True,
                       text=True, timeout=WAIT)
    try:
        rep = json.loads(r.stdout)
        return {e["log"]: e for e in rep["logs"]}
    except (ValueError, KeyError):
        return {"error": r.stdout[-2000:] + r.stderr[-2000:]}


def check_schema(env, logs, label, want_versions, known=None):
    """Validates the logs; `known(error)` may name a known gateway bug, whose
    errors are printed as xfail lines instead of failing the check."""
    rep = validate(env, logs)
    if "error" in rep:
        check(False, f"{label}: the schema validator ran", rep["error"])
        return
    for log in logs:
        e = rep.get(log, {})
        seen = set(e.get("versions", {}))
        errors = []
        for err in e.get("errors", []):
            why = known(err) if known else None
            if why:
                print(f"xfail {label}: {why}: {err['def']} {err['problems'][:2]}")
            else:
                errors.append(err)
        e["errors"] = errors
        check(e.get("checked", 0) > 0 and not e.get("errors") and seen <= set(want_versions)
              and seen,
              f"{label}: {e.get('checked', 0)} gateway messages in {os.path.basename(log)} "
              f"validate against the {'/'.join(sorted(seen)) or '?'} schema",
              json.dumps(e.get("errors", e), indent=1, ensure_ascii=False)[:3000])


def text_of(result):
    if not isinstance(result, dict):
        return ""
    return "\n".join(c.get("text", "") for c in result.get("content", [])
                     if isinstance(c, dict) and c.get("type") == "text")


def audit_rows(sb):
    try:
        with open(os.path.join(sb.ah, "audit", "calls.jsonl")) as f:
            return [json.loads(ln) for ln in f if ln.strip()]
    except OSError:
        return []


def leftover_upstreams(proj):
    """Live processes started in the project dir (the gateway spawns stdio
    upstreams there); waits for them to go, up to WAIT, and lists any left."""
    real = os.path.realpath(proj)
    end = time.monotonic() + 30
    while True:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink(f"/proc/{pid}/cwd") == real:
                    with open(f"/proc/{pid}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                            with open(f"/proc/{pid}/cmdline", "rb") as c:
                                left.append(c.read().replace(b"\0", b" ").decode()[:200])
            except OSError:
                continue
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def direct_tools(env, cwd, url=None):
    """server-everything's own tools/list, for comparison."""
    spec = ({"url": url} if url else {"command": NODE22, "args": [EVERYTHING, "stdio"]})
    spec["steps"] = [{"op": "list"}]
    rep = sdk_session(env, spec, cwd)
    try:
        return {t["name"]: t for t in rep["steps"][0]["result"]["tools"]}
    except (KeyError, IndexError, TypeError):
        return {}


def allowed(name):
    return name != PROJECT_DENY and not name.startswith("trigger-")


def session_case(upstream, transparent, version):
    label = f"{upstream}/{'transparent' if transparent else 'compact'}/{version}"
    with Sandbox() as sb:
        write_project(sb, upstream)
        env = peer_env(sb)
        http = None
        try:
            if upstream == "http":
                http = HttpEverything(env)
            direct = direct_tools(env, sb.root, http.url if http else None)
            check(PROJECT_DENY in direct and "echo" in direct and "get-sum" in direct,
                  f"{label}: server-everything lists echo, get-sum and get-env directly",
                  sorted(direct))
            log = os.path.join(sb.root, "frames.jsonl")
            many = [{"message": f"m{i}"} for i in range(16)]
            steps = [
                {"op": "list"},
                {"op": "call", "name": "tools_search", "arguments": {"query": "sum"}},
                {"op": "call", "name": "tools_search", "arguments": {"query": "env"}},
                {"op": "call", "name": "tools_search",
                 "arguments": {"entity": "everything__get-sum:tool"}},
                {"op": "call", "name": "everything__echo", "arguments": {"message": ECHO_MSG}},
                {"op": "call", "name": "everything__get-sum", "arguments": {"a": 2, "b": 40}},
                {"op": "call", "name": "everything__get-structured-content",
                 "arguments": {"location": "Chicago"}},
                {"op": "call", "name": "everything__get-tiny-image"},
                {"op": "call", "name": "everything__get-resource-reference"},
                {"op": "callMany", "name": "everything__echo", "arguments": many},
                {"op": "call", "name": "everything__get-env"},
                {"op": "call", "name": "everything__trigger-long-running-operation",
                 "arguments": {"duration": 1, "steps": 1}},
                {"op": "call", "name": "everything__no-such-tool"},
                {"op": "call", "name": "nosuch__echo", "arguments": {"message": "x"}},
                {"op": "call", "name": "agentstack_trust"},
                {"op": "ping"},
            ]
            rep = sdk_session(env, {"command": NODE22,
                                    "args": gateway_argv(sb, log, transparent),
                                    "version": version, "steps": steps}, sb.root)
        finally:
            if http:
                http.stop()
        ok = "connectError" not in rep
        check(ok and rep.get("protocolVersion") == version
              and rep.get("serverInfo", {}).get("name") == "agentstack",
              f"{label}: the SDK client initializes with the gateway at {version}",
              rep.get("connectError", "") + rep.get("stderr", ""))
        if not ok:
            return
        check((rep.get("capabilities") or {}).get("tools") is not None,
              f"{label}: the gateway declares the tools capability", rep.get("capabilities"))
        st = {i: s for i, s in enumerate(rep["steps"])}
        errs = [s for s in rep["steps"] if "error" in s]
        check(not errs, f"{label}: no SDK call failed at the protocol level",
              json.dumps(errs, ensure_ascii=False)[:2000] + rep.get("stderr", ""))

        listed = {t["name"]: t for t in (st[0].get("result") or {}).get("tools", [])}
        names = list(listed)
        check(names[:len(CONTROL)] == CONTROL,
              f"{label}: tools/list starts with the control plane in its documented order", names)
        check(all(TOOL_NAME.match(n) for n in names),
              f"{label}: every listed tool name is a valid MCP tool name", names)
        upstream_listed = {n[len("everything__"):] for n in names if n.startswith("everything__")}
        if transparent:
            want = {n for n in direct if allowed(n)}
            check(upstream_listed == want,
                  f"{label}: transparent tools/list = every policy-allowed upstream tool",
                  f"missing {sorted(want - upstream_listed)} extra "
                  f"{sorted(upstream_listed - want)}")
            same = [n for n in want & upstream_listed
                    if listed["everything__" + n].get("inputSchema") ==
                    direct[n].get("inputSchema")
                    and direct[n].get("description", "") in
                    listed["everything__" + n].get("description", "")]
            check(len(same) == len(want),
                  f"{label}: each proxied tool keeps the upstream's input schema and description",
                  sorted(want - set(same)))
            dropped = sorted({k for n in want & upstream_listed for k in direct[n]
                              if k not in listed["everything__" + n]})
            if dropped:
                print(f"note {label}: upstream tool fields not forwarded in tools/list: "
                      f"{dropped}")
            meta = ("title", "annotations", "outputSchema")  # all known at 2025-06-18+
            had = {(n, k) for n in want & upstream_listed for k in meta if k in direct[n]}
            lost = sorted((n, k) for n, k in had if k not in listed["everything__" + n])
            check(had and not lost,
                  f"{label}: each proxied tool keeps the upstream's title, annotations and "
                  f"outputSchema ({len(had)} fields)", lost)
        else:
            check(not upstream_listed,
                  f"{label}: compact tools/list keeps upstream tools out", names)

        found = text_of(st[1].get("result"))
        check("`everything__get-sum`" in found and "everything__echo" not in found,
              f"{label}: tools_search 'sum' ranks everything__get-sum", found)
        check("everything__get-env" not in text_of(st[2].get("result")),
              f"{label}: tools_search never offers the policy-denied get-env",
              text_of(st[2].get("result")))
        ent = text_of(st[3].get("result"))
        check('"a"' in ent and '"b"' in ent and "get-sum" in ent,
              f"{label}: tools_search entity returns get-sum's input schema", ent)
        echo = st[4].get("result") or {}
        check(text_of(echo) == "Echo: " + ECHO_MSG and not echo.get("isError"),
              f"{label}: everything__echo returns the message byte for byte (UTF-8)", echo)
        sm = st[5].get("result") or {}
        check(text_of(sm) == "The sum of 2 and 40 is 42." and not sm.get("isError"),
              f"{label}: everything__get-sum adds 2 and 40", sm)
        sc = st[6].get("result") or {}
        check(isinstance(sc.get("structuredContent"), dict)
              and "temperature" in sc["structuredContent"],
              f"{label}: structuredContent is forwarded", sc)
        img = st[7].get("result") or {}
        check(any(c.get("type") == "image" and c.get("mimeType") == "image/png" and c.get("data")
                  for c in img.get("content", [])),
              f"{label}: image content is forwarded", json.dumps(img)[:500])
        res = st[8].get("result") or {}
        check(any(c.get("type") == "resource" and c.get("resource", {}).get("uri")
                  for c in res.get("content", [])),
              f"{label}: embedded resource content is forwarded", json.dumps(res)[:500])
        got = [text_of(r) for r in (st[9].get("result") or [])]
        check(got == ["Echo: " + m["message"] for m in many],
              f"{label}: 16 concurrent calls each get their own answer", got)
        d1 = st[10].get("result") or {}
        check(d1.get("isError") is True and text_of(d1).split("\n")[0] == DENY_PROJECT,
              f"{label}: a project-policy denial reads the documented refusal text", text_of(d1))
        d2 = st[11].get("result") or {}
        check(d2.get("isError") is True and text_of(d2).split("\n")[0] == DENY_MACHINE,
              f"{label}: a machine-policy denial reads the documented refusal text with the machine suffix",
              text_of(d2))
        # a served server's unknown tool goes upstream: its isError
        # answer comes back as a result, audited as an ok call
        un = st[12].get("result") or {}
        check(un.get("isError") is True and "no-such-tool" in text_of(un),
              f"{label}: the upstream's answer for its unknown tool is a tool error", un)
        for i, name in ((13, "nosuch__echo"), (14, "agentstack_trust")):
            r = st[i].get("result") or {}
            check(r.get("isError") is True and text_of(r) == f"Error: unknown tool '{name}'",
                  f"{label}: {name} is an unknown tool (the exact text)", r)
        check(st[15].get("result") == {}, f"{label}: ping answers {{}}", st[15])

        rows = audit_rows(sb)
        by = {}
        for r in rows:
            by.setdefault((r.get("tool"), r.get("outcome")), []).append(r)
        check(len(by.get(("echo", "ok"), [])) == 17 and len(by.get(("get-sum", "ok"), [])) == 1,
              f"{label}: the call audit has one ok row per upstream call", rows[-5:])
        dp = by.get(("get-env", "denied"), [{}])[0]
        dm = by.get(("trigger-long-running-operation", "denied"), [{}])[0]
        check(dp.get("rule") == "!get-env" and dp.get("layer") == "project"
              and dm.get("rule") == "!trigger-*" and dm.get("layer") == "machine",
              f"{label}: both denials are audited with their rule and layer", [dp, dm])
        check(len(by.get(("no-such-tool", "ok"), [])) == 1,
              f"{label}: the upstream's unknown tool is one ok row (isError is still ok)",
              rows[-4:])
        check(not any(r.get("server") == "nosuch" or r.get("tool") == "agentstack_trust"
                      for r in rows),
              f"{label}: no audit row for an unknown tool", rows[-4:])
        check(not any(ECHO_MSG in json.dumps(r, ensure_ascii=False) for r in rows),
              f"{label}: argument values never reach the audit")
        if upstream == "stdio":
            left = leftover_upstreams(sb.project)
            check(not left, f"{label}: no upstream process outlives the session", left)
        check_schema(env, [log], label, [version])


def http_restart():
    """A real HTTP upstream restarted under an open gateway connection: the
    call while it is down fails cleanly, and a later call should reach the new
    server (the old session died with the old process)."""
    from mcpclient import Gateway  # tests/e2e is on sys.path
    label = "http restart"
    with Sandbox() as sb:
        write_project(sb, "http")
        env = peer_env(sb)
        http = HttpEverything(env)
        g = Gateway(sb, "--manifest-dir", sb.project, "--transparent", cwd=sb.root, env=env)
        try:
            g.initialize("2025-11-25")
            listed = g.tools() or []
            check("everything__echo" in listed, f"{label}: tools/list before the restart",
                  listed)
            first = g.call("everything__echo", {"message": "before"})
            check(text_of(first) == "Echo: before", f"{label}: a call before the restart", first)
            http.stop()
            down = g.call("everything__echo", {"message": "down"})
            check((down or {}).get("isError") is True and text_of(down) ==
                  "Error: contacting everything failed (http-error)",
                  f"{label}: a call while the server is down is a clean http-error", down)
            http = HttpEverything(env)
            after = [g.call("everything__echo", {"message": f"after {i}"}) for i in range(2)]
            # the failed call marked the upstream dead (issue 5): the next one
            # starts a new session with initialize instead of reusing the old id
            check([text_of(a) for a in after] == ["Echo: after 0", "Echo: after 1"],
                  f"{label}: calls after the server restarted reach the new server", after)
            ts = g.call("tools_search", {"query": "echo"})
            check("everything__echo" in text_of(ts),
                  f"{label}: the control plane keeps answering from the cached listing", ts)
            check(g.close() == 0, f"{label}: the gateway exits 0 on stdin EOF",
                  g.stderr()[-800:])
        finally:
            if g.proc.poll() is None:
                g.close()
            http.stop()


def main():
    need(SDK, AJV, SDK_SESSION, VALIDATE)
    enter_lonet()
    session_case("stdio", True, "2025-11-25")
    session_case("stdio", False, "2025-06-18")
    session_case("http", True, "2025-06-18")
    session_case("http", False, "2025-11-25")
    http_restart()
    done()


if __name__ == "__main__":
    main()
