"""Interop: every kind of message `agentstack mcp` sends, in front of the real
server-everything, validates against the official JSON schema of the
revision in force (tests/data/mcp-schema, checked with ajv by
validate_frames.mjs).

The SDK and Inspector tests validate what those clients happen to ask for;
this one provokes the rest with a raw client (tests/e2e/mcpclient.py), one
session per revision: `initialize` at 2024-11-05, 2025-03-26, 2025-06-18 and
2025-11-25, and a stateless 2026-07-28 session (server/discover and requests
carrying the `_meta` keys). Each session sends ping, tools/list (transparent),
tools/call of upstream tools returning text, structured, image, resource-link,
embedded-resource and annotated content, a policy denial, an unknown tool,
the control-plane tools, upstream resources/prompts, a tools/call with no
name, a request line over 4 MiB (-32600 with its id), and in the stateless
era a missing clientCapabilities (-32602), an unsupported version (-32022)
and the legacy-only lease tools. A trusted `--auto-project` session adds the
gateway's own requests and notifications: `roots/list`, and
`notifications/tools/list_changed` after the default toolset opens.

An unreadable request gets `"id": null` (JSON-RPC 2.0's rule), which no MCP schema
admits (RequestId is a string or an integer; 2025-11-25 and later let the id
be omitted instead). That reply is checked for that form and kept out of
the schema check; a note says so.

Runs inside a loopback-only network namespace with a temporary HOME and
AGENTSTACK_HOME; needs root, AS_BIN and the interop cache
(tests/interop/setup_clis.sh); exits 77 loudly without them.
"""
import json
import os

from test_gateway_sdk import (AJV, EVERYTHING, NODE22, PROJECT_DENY, VALIDATE, Sandbox, check,
                              check_schema, done, enter_lonet, need, peer_env, text_of,
                              validate, write_project)
from mcpclient import Gateway, modern_meta  # noqa: E402  (tests/e2e is on sys.path)

LEGACY = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
BIG = 4 * 1024 * 1024 + 16


class Recorder(Gateway):
    """mcpclient's Gateway, also keeping every line it sent, so the log can
    pair each reply with its request (and its revision)."""

    def __init__(self, *a, **kw):
        self.sent = []
        super().__init__(*a, **kw)

    def send_raw(self, text):
        self.sent.append(text if len(text) < 65536 else text[:200] + "…")
        super().send_raw(text)

    def save(self, path, skip_null_ids=True):
        """Writes the c2s lines, then the s2c lines, in tee_shim's format.
        Returns the s2c replies with `"id": null` that were left out."""
        left = []
        with open(path, "w") as f:
            for line in self.sent:
                f.write(json.dumps({"dir": "c2s", "line": line}) + "\n")
            for line in self.raw:
                try:
                    msg = json.loads(line)
                except ValueError:
                    msg = {}
                if skip_null_ids and isinstance(msg, dict) and "id" in msg \
                        and msg["id"] is None:
                    left.append(msg)
                    continue
                f.write(json.dumps({"dir": "s2c", "line": line}) + "\n")
        return left


UPSTREAM_CALLS = [
    ("everything__echo", {"message": "schema ✓"}),
    ("everything__get-sum", {"a": 1.5, "b": -3}),
    ("everything__get-structured-content", {"location": "Los Angeles"}),
    ("everything__get-tiny-image", {}),
    ("everything__get-resource-links", {"count": 3}),
    ("everything__get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
    ("everything__get-annotated-message", {"messageType": "error", "includeImage": True}),
    (f"everything__{PROJECT_DENY}", {}),
    ("everything__trigger-long-running-operation", {}),
    ("nosuch__tool", {}),
]
CONTROL_CALLS = [
    ("tools_search", {}),
    ("tools_search", {"entity": "everything__echo:tool"}),
    ("agentstack_list", {}),
    ("agentstack_doctor", {}),
    ("agentstack_list_loadable", {}),
    ("agentstack_load", {"name": "using-agentstack", "reason": "schema check"}),
    ("agentstack_lease_status", {}),
]


def exercise(g, meta=None):
    """Sends the common set of requests; returns {label: reply}."""
    out = {}

    def req(label, method, params=None):
        p = dict(params or {})
        if meta is not None:
            p["_meta"] = meta
        out[label] = g.request(method, p if (params is not None or meta) else None)

    req("ping", "ping")
    req("tools/list", "tools/list", {})
    for name, args in UPSTREAM_CALLS + CONTROL_CALLS:
        req(f"call {name} {json.dumps(args)}", "tools/call", {"name": name, "arguments": args})
    req("call without a name", "tools/call", {"arguments": {}})
    for m in ("resources/list", "prompts/list", "completion/complete", "logging/setLevel"):
        req(m, m, {})
    rid = g.new_id()
    params = {"name": "everything__echo", "arguments": {"message": "x" * BIG}}
    if meta is not None:
        params["_meta"] = meta
    g.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    out["a line over 4 MiB"] = g.wait(rid)
    req("ping after the big line", "ping")
    return out


def answered(label, replies):
    missing = [k for k, v in replies.items() if v is None]
    check(not missing, f"{label}: every request was answered", missing)


def legacy_session(version):
    label = f"schema {version}"
    with Sandbox() as sb:
        write_project(sb, "stdio")
        env = peer_env(sb)
        log = os.path.join(sb.root, "frames.jsonl")
        with Recorder(sb, "--manifest-dir", sb.project, "--transparent", cwd=sb.root,
                      env=env) as g:
            init = g.initialize(version)
            check(init and init.get("result", {}).get("protocolVersion") == version,
                  f"{label}: initialize echoes {version}", init)
            replies = exercise(g)
            g.send_raw('{"jsonrpc": "2.0", "method": 7}')
            g.send_raw('{"not": "a message"}')
            g.wait_for(lambda: "null" in g.replies)
            rc = g.close()
            nulls = g.save(log)
        answered(label, replies)
        big = replies.get("a line over 4 MiB") or {}
        check(big.get("error", {}).get("code") == -32600 and big.get("id") is not None,
              f"{label}: a line over 4 MiB gets -32600 with its id", big)
        check(isinstance((replies.get("resources/list") or {}).get("result", {}).get("resources"),
                         list),
              f"{label}: resources/list is served from the upstream",
              replies.get("resources/list"))
        ok = [k for k in replies if k.startswith("call everything__echo")]
        check(ok and text_of((replies[ok[0]] or {}).get("result")) == "Echo: schema ✓",
              f"{label}: the upstream answers through the gateway", replies.get(ok[0]))
        check(rc == 0, f"{label}: the gateway exits 0 on stdin EOF", g.stderr()[-800:])
        check(nulls and all(m.get("error", {}).get("code") == -32600 for m in nulls),
              f"{label}: an unreadable request gets -32600 with \"id\": null", nulls)
        check_schema(env, [log], label, [version])
        down_level(label, version, replies)


def down_level(label, version, replies):
    """What an upstream sends that the client's revision lacks is mapped down
    (issue 5): a `resource_link` block (2025-06-18+) becomes a text block
    naming it, and tools/list carries `annotations` from 2025-03-26 on and
    `title`/`outputSchema` from 2025-06-18 on, never earlier."""
    key = 'call everything__get-resource-links {"count": 3}'
    content = ((replies.get(key) or {}).get("result") or {}).get("content") or []
    types = [c.get("type") for c in content if isinstance(c, dict)]
    placeholders = [c for c in content if isinstance(c, dict) and c.get("type") == "text"
                    and c.get("text", "").startswith("[resource_link content dropped")]
    if version < "2025-06-18":
        check("resource_link" not in types and len(placeholders) == 3
              and "; uri: " in placeholders[0].get("text", ""),
              f"{label}: resource_link blocks reach a {version} client as text naming them",
              content)
    else:
        check(types.count("resource_link") == 3 and not placeholders,
              f"{label}: resource_link blocks reach a {version} client as they are", content)
    tools = [t for t in ((replies.get("tools/list") or {}).get("result") or {}).get("tools", [])
             if t.get("name", "").startswith("everything__")]
    for field, since in (("annotations", "2025-03-26"), ("title", "2025-06-18"),
                         ("outputSchema", "2025-06-18")):
        n = sum(1 for t in tools if field in t)
        if version < since:
            check(tools and n == 0, f"{label}: tools/list carries no {field} (MCP {since}+)",
                  [t["name"] for t in tools if field in t])
        else:
            check(n > 0, f"{label}: tools/list carries the upstream tools' {field}",
                  tools[:2])


def modern_session():
    label = f"schema {MODERN} (stateless)"
    with Sandbox() as sb:
        write_project(sb, "stdio")
        env = peer_env(sb)
        log = os.path.join(sb.root, "frames.jsonl")
        meta = dict(modern_meta(), **{"io.modelcontextprotocol/clientInfo":
                                      {"name": "interop", "version": "1"}})
        with Recorder(sb, "--manifest-dir", sb.project, "--transparent", cwd=sb.root,
                      env=env) as g:
            disc = g.request("server/discover", {"_meta": meta})
            replies = exercise(g, meta)
            lease = g.request("tools/call", {"name": "agentstack_lease_open",
                                             "arguments": {"profile": "x"}, "_meta": meta})
            nocaps = g.request("tools/list", {"_meta": modern_meta(caps=False)})
            badver = g.request("tools/list", {"_meta": modern_meta("2099-01-01")})
            rc = g.close()
            g.save(log)
        sv = ((disc or {}).get("result") or {}).get("supportedVersions", [])
        check(MODERN in sv and (disc or {}).get("result", {}).get("resultType") == "complete",
              f"{label}: server/discover names {MODERN}", disc)
        answered(label, replies)
        check((replies.get("ping") or {}).get("error", {}).get("code") == -32601,
              f"{label}: ping in the stateless era gets -32601", replies.get("ping"))
        tl = (replies.get("tools/list") or {}).get("result") or {}
        check(tl.get("resultType") == "complete" and tl.get("ttlMs") == 0
              and tl.get("cacheScope") == "private",
              f"{label}: tools/list carries resultType, ttlMs 0, cacheScope private",
              {k: tl.get(k) for k in ("resultType", "ttlMs", "cacheScope")})
        check(lease and (lease.get("result") or {}).get("isError") is True
              and "legacy-only" in text_of(lease.get("result")),
              f"{label}: agentstack_lease_open is legacy-only", lease)
        check((nocaps or {}).get("error", {}).get("code") == -32602,
              f"{label}: missing clientCapabilities gets -32602", nocaps)
        err = (badver or {}).get("error", {})
        check(err.get("code") == -32022 and err.get("data", {}).get("requested") == "2099-01-01"
              and MODERN in err.get("data", {}).get("supported", []),
              f"{label}: an unsupported version gets -32022 with requested/supported", badver)
        check(rc == 0, f"{label}: the gateway exits 0 on stdin EOF", g.stderr()[-800:])
        check_schema(env, [log], label, [MODERN])


def gateway_initiated():
    """The gateway's own requests and notifications: roots/list, then
    tools/list_changed when the trusted project's default toolset opens."""
    label = "schema 2025-11-25 (auto-project)"
    with Sandbox() as sb:
        write_project(sb, "stdio")
        sb.write("agentstack.toml",
                 f'version = 1\ndefault_toolset = "main"\n\n[servers.everything]\n'
                 f'type = "stdio"\ncommand = "{NODE22}"\nargs = ["{EVERYTHING}", "stdio"]\n\n'
                 '[toolsets.main]\nservers = ["everything"]\n')
        env = peer_env(sb)
        r = sb.run("lock", "--write", env=env)
        check(r.returncode == 0, f"{label}: lock --write", r.stdout + r.stderr)
        prev = sb.run("trust", "--preview", env=env)
        try:
            digest = json.loads(prev.stdout)["surface_digest"]
        except (ValueError, KeyError):
            digest = ""
        r = sb.run("trust", "--yes", "--consented", digest, env=env)
        check(r.returncode == 0, f"{label}: trust the project", r.stdout + r.stderr)
        log = os.path.join(sb.root, "frames.jsonl")
        uri = "file://" + sb.project
        with Recorder(sb, "--auto-project", "--transparent", cwd=sb.root, env=env) as g:
            g.initialize("2025-11-25", capabilities={"roots": {"listChanged": True}})
            asked = g.wait_for(lambda: g.requests)
            req = g.requests[0] if asked else {}
            check(req.get("method") == "roots/list", f"{label}: the gateway asks roots/list",
                  req)
            g.send({"jsonrpc": "2.0", "id": req.get("id"),
                    "result": {"roots": [{"uri": uri, "name": "proj"}]}})
            names = g.tools() or []
            check("everything__echo" in names,
                  f"{label}: the root's default toolset serves everything__echo", names)
            c = g.call("everything__echo", {"message": "rooted"})
            check(text_of(c) == "Echo: rooted", f"{label}: a call through the rooted surface", c)
            changed = g.wait_for(lambda: any(n.get("method") == "notifications/tools/list_changed"
                                             for n in g.notes))
            check(changed, f"{label}: notifications/tools/list_changed after the toolset opens",
                  g.notes)
            g.close()
            g.save(log)
        check_schema(env, [log], label, ["2025-11-25"])


def validator_rejects():
    """The validator itself must fail broken messages, or a pass means nothing."""
    with Sandbox() as sb:
        env = peer_env(sb)
        frames = [
            ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            ("s2c", {"jsonrpc": "2.0", "id": 1,
                     "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
            ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}),
            ("s2c", {"jsonrpc": "2.0", "id": 2,
                     "result": {"content": [{"type": "bogus"}]}}),
            ("s2c", {"jsonrpc": "1.0", "method": "notifications/tools/list_changed"}),
        ]
        log = os.path.join(sb.root, "broken.jsonl")
        with open(log, "w") as f:
            for d, m in frames:
                f.write(json.dumps({"dir": d, "line": json.dumps(m)}) + "\n")
        rep = validate(env, [log])
        defs = sorted({e["def"] for e in rep.get(log, {}).get("errors", [])})
        check({"InitializeResult", "CallToolResult", "JSONRPCMessage"} <= set(defs),
              "the schema validator rejects a broken initialize result, content block and "
              "envelope", rep)


def main():
    need(AJV, VALIDATE, EVERYTHING, NODE22)
    enter_lonet()
    validator_rejects()
    for v in LEGACY:
        legacy_session(v)
    modern_session()
    gateway_initiated()
    print("note: \"id\": null replies are checked for their form, not against the "
          "schemas (no MCP revision's RequestId admits null)")
    done()


if __name__ == "__main__":
    main()
