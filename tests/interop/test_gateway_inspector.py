"""Interop: the MCP Inspector v2 CLI (@modelcontextprotocol/inspector, node 22)
drives `agentstack mcp` in front of the real server-everything.

`inspector --cli -q <agentstack mcp …> --method tools/list` and
`--method tools/call --tool-name … --tool-arg k=v` with stdio and Streamable
HTTP upstreams, transparent and compact mode, in the legacy era (initialize)
and in the modern stateless era (`--protocol-era modern`: server/discover,
then requests carrying the 2026-07-28 `_meta`). JSON on stdout is checked;
the Inspector's documented exit codes too: 5 with `tool_not_found` for a tool
the gateway does not list (unknown, policy-filtered, or an upstream tool in
compact mode, since the Inspector calls only listed tools), 5 with
`tool_is_error` for a result with isError. Its built-in load test sends 500
calls, ten at a time, through the gateway. Every frame the gateway writes is
recorded (tee_shim.mjs) and validated against the negotiated revision's
schema (2025-11-25 and 2026-07-28).

Runs inside a loopback-only network namespace with a temporary HOME and
AGENTSTACK_HOME; needs root, AS_BIN and the interop cache
(tests/interop/setup_clis.sh); exits 77 loudly without them.
"""
import json
import os
import subprocess

from test_gateway_sdk import (AJV, EVERYTHING, INSPECTOR, NODE22, PROJECT_DENY, VALIDATE, WAIT,
                              HttpEverything, Sandbox, audit_rows, check, check_schema, done,
                              enter_lonet, gateway_argv, need, peer_env, text_of,
                              write_project)


def inspector(env, cwd, target, *args, era=None):
    """One Inspector CLI run; returns (exit code, parsed stdout or None, stdout, stderr)."""
    argv = [NODE22, INSPECTOR, "--cli", "-q"]
    if era:
        argv += ["--protocol-era", era]
    r = subprocess.run([*argv, NODE22, *target, *args], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=WAIT)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        out = None
    return r.returncode, out, r.stdout, r.stderr


def envelope(stderr):
    for line in reversed(stderr.strip().splitlines()):
        try:
            return json.loads(line).get("error", {})
        except (ValueError, AttributeError):
            continue
    return {}


def names_of(out):
    return [t.get("name") for t in (out or {}).get("tools", [])]


def case(upstream, transparent, era):
    mode = "transparent" if transparent else "compact"
    label = f"inspector {upstream}/{mode}/{era or 'legacy'}"
    want = "2026-07-28" if era == "modern" else "2025-11-25"
    with Sandbox() as sb:
        write_project(sb, upstream)
        env = peer_env(sb)
        logs = []

        def run(*args):
            log = os.path.join(sb.root, f"frames-{len(logs)}.jsonl")
            logs.append(log)
            return inspector(env, sb.root, gateway_argv(sb, log, transparent), *args, era=era)

        http = HttpEverything(env) if upstream == "http" else None
        try:
            rc, out, raw, err = run("--method", "tools/list")
            names = names_of(out)
            check(rc == 0 and "tools_search" in names,
                  f"{label}: tools/list prints the gateway's tools as JSON (exit 0)",
                  f"rc={rc} {raw[-800:]} {err[-800:]}")
            proxied = [n for n in names if n.startswith("everything__")]
            if transparent:
                check("everything__echo" in proxied and "everything__get-sum" in proxied
                      and f"everything__{PROJECT_DENY}" not in proxied
                      and not any(n.startswith("everything__trigger-") for n in proxied),
                      f"{label}: the allowed upstream tools are listed, the denied ones not",
                      names)
            else:
                check(not proxied, f"{label}: compact mode lists the control plane only", names)

            rc, out, raw, err = run("--method", "tools/call", "--tool-name", "tools_search",
                                    "--tool-arg", "query=sum")
            check(rc == 0 and "`everything__get-sum`" in text_of(out),
                  f"{label}: tools_search via --tool-arg finds everything__get-sum",
                  f"rc={rc} {raw[-800:]} {err[-800:]}")

            if transparent:
                rc, out, raw, err = run("--method", "tools/call", "--tool-name",
                                        "everything__echo", "--tool-arg", "message=hi there")
                check(rc == 0 and text_of(out) == "Echo: hi there",
                      f"{label}: tools/call everything__echo message='hi there'",
                      f"rc={rc} {raw[-800:]} {err[-800:]}")
                rc, out, raw, err = run("--method", "tools/call", "--tool-name",
                                        "everything__get-sum", "--tool-arg", "a=2", "b=40")
                check(rc == 0 and text_of(out) == "The sum of 2 and 40 is 42.",
                      f"{label}: tools/call everything__get-sum a=2 b=40 (numbers coerced)",
                      f"rc={rc} {raw[-800:]} {err[-800:]}")
            else:
                rc, out, raw, err = run("--method", "tools/call", "--tool-name",
                                        "everything__echo", "--tool-arg", "message=hi")
                check(rc == 5 and envelope(err).get("code") == "tool_not_found",
                      f"{label}: an unlisted upstream tool is not called (exit 5 "
                      "tool_not_found)", f"rc={rc} {raw[-800:]} {err[-800:]}")

            for name in ("everything__no-such-tool", f"everything__{PROJECT_DENY}"):
                rc, out, raw, err = run("--method", "tools/call", "--tool-name", name)
                check(rc == 5 and envelope(err).get("code") == "tool_not_found"
                      and raw.strip() == "",
                      f"{label}: {name} → exit 5, tool_not_found, nothing on stdout",
                      f"rc={rc} {raw[-800:]} {err[-800:]}")

            rc, out, raw, err = run("--method", "tools/call", "--tool-name", "agentstack_load",
                                    "--tool-arg", "name=no-such-skill", "reason=interop")
            check(rc == 5 and (out or {}).get("isError") is True
                  and text_of(out).startswith("Error: ")
                  and envelope(err).get("code") == "tool_is_error",
                  f"{label}: a control-plane isError result → JSON on stdout, exit 5 "
                  "tool_is_error", f"rc={rc} {raw[-800:]} {err[-800:]}")

            if transparent and upstream == "stdio":
                before = len(audit_rows(sb))
                rc, out, raw, err = run("--method", "tools/call", "--tool-name",
                                        "everything__echo", "--tool-arg", "message=load",
                                        "--load", "--load-requests", "500")
                check(rc == 0 and (out or {}).get("ok") == 500
                      and (out or {}).get("errors") == 0
                      and (out or {}).get("toolErrors") == 0,
                      f"{label}: --load sends 500 calls, 10 in flight, all answered",
                      f"rc={rc} {raw[-800:]} {err[-800:]}")
                rows = audit_rows(sb)[before:]
                check(len(rows) == 500 and all(r.get("outcome") == "ok" for r in rows),
                      f"{label}: the load test left 500 ok audit rows", len(rows))
                if out:
                    print(f"note {label}: --load through the gateway: "
                          f"{out.get('throughput')} calls/s, p50 "
                          f"{out.get('latencyMs', {}).get('p50')} ms, p99 "
                          f"{out.get('latencyMs', {}).get('p99')} ms")
        finally:
            if http:
                http.stop()
        check_schema(env, logs, label, [want])
        if era == "modern":
            firsts = []
            for log in logs:
                with open(log) as f:
                    first = json.loads(json.loads(f.readline())["line"])
                firsts.append(first.get("method"))
            check(set(firsts) == {"server/discover"},
                  f"{label}: the Inspector opened every modern session with server/discover",
                  firsts)


def main():
    need(INSPECTOR, AJV, VALIDATE, EVERYTHING)
    enter_lonet()
    case("stdio", True, None)
    case("stdio", False, None)
    case("http", True, None)
    case("stdio", True, "modern")
    case("http", True, "modern")
    done()


if __name__ == "__main__":
    main()
