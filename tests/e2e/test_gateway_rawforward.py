"""Issue 5: a brokered tools/call result is forwarded from the upstream's
bytes when the raw reader vouches for them, and parsed otherwise. Either
way the client must see exactly what the parsed path gives: the kept members
(content, structuredContent, isError, _meta), "content": [] when absent,
blocks the client's revision lacks rewritten, resultType in the stateless
era, its own id (number or string), one audit row per call; and an answer
with duplicate keys is never forwarded. The upstream here writes fixed
result bytes per tool name; no assertion depends on timing."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, modern_meta, text  # noqa: E402

# Each tool answers with these exact result bytes (spliced into the line).
RESULTS = {
    "plain": '{ "content" : [ {"type":"text","text":"h\\u00e9 \\"q\\" {x} [y] \\ud83d\\ude00"} ],'
             '"extra":{"dropped":true},"_meta":{"k":"v"},"isError":false,'
             '"structuredContent":{"n":5,"s":"}{"}}',
    "real": '{"content":[{"type":"text","text":"t"}],"structuredContent":{"t":21.5}}',
    "nocontent": '{"isError":true}',
    "empty": '{}',
    "audio": '{"content":[{"type":"text","text":"a"},'
             '{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}',
    "bigint": '{"content":[],"structuredContent":{"i":1234567890123456789}}',
    "dup": '{"content":[{"type":"text","text":"one"}],"content":[]}',
    "nested_dup": '{"content":[{"type":"text","text":"one","text":"two"}]}',
}

UPSTREAM = r'''
import json, sys
RESULTS = json.loads(sys.argv[1])
for line in sys.stdin:
    m = json.loads(line)
    i = m.get("id")
    if i is None:
        continue
    meth = m.get("method")
    if meth == "initialize":
        out = json.dumps({"jsonrpc": "2.0", "id": i, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"}}})
    elif meth == "tools/list":
        out = json.dumps({"jsonrpc": "2.0", "id": i, "result": {"tools": [
            {"name": n, "inputSchema": {"type": "object"}} for n in RESULTS]}})
    elif meth == "tools/call":
        out = '{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(i),
                                                         RESULTS[m["params"]["name"]])
    else:
        out = json.dumps({"jsonrpc": "2.0", "id": i,
                          "error": {"code": -32601, "message": "nope"}})
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
'''


def setup(sb):
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("up.py", UPSTREAM)
    sb.write("agentstack.toml", 'version = 1\n\n[servers.raw]\ntype = "stdio"\n'
             'command = "python3"\nargs = ["./up.py", %s]\n' % json.dumps(json.dumps(RESULTS)))


def expect(name, version):
    """What the parsed path gives for RESULTS[name]."""
    r = json.loads(RESULTS[name])
    out = {k: r[k] for k in ("content", "structuredContent", "isError", "_meta") if k in r}
    out.setdefault("content", [])
    return out


def main():
    with Sandbox() as sb:
        setup(sb)
        env = sb.env(AGENTSTACK_CALL_TIMEOUT_MS="3000")
        with Gateway(sb, "--manifest-dir", sb.project, env=env) as g:
            g.initialize()
            for name in ("plain", "real", "nocontent", "empty", "bigint"):
                c = g.call("raw__" + name, {"k": "v"})
                check(c == expect(name, "2025-11-25"),
                      f"{name}: the same result as the parsed path", c)
            c = g.call("raw__plain", {})
            check(text(c) == 'h\u00e9 "q" {x} [y] \U0001F600' and "extra" not in c,
                  "escapes decoded, unkept members dropped", c)
            c = g.call("raw__audio", {})
            check(c == expect("audio", "2025-11-25"), "audio passes at 2025-11-25", c)
            rid = g.start("tools/call", {"name": "raw__plain", "arguments": {}}, rid="s-1")
            r = g.wait(rid)
            check(r and r["id"] == "s-1" and r["result"] == expect("plain", "2025-11-25"),
                  "a string id is answered with itself", r)
            rid = g.start("tools/call", {"name": "raw__plain", "arguments": {}},
                          rid=9007199254740993)
            r = g.wait(rid)
            check(r and r["id"] == 9007199254740993, "a large integer id is kept", r)
            c = g.call("raw__plain", {}, meta=modern_meta())
            want = dict(expect("plain", None), resultType="complete")
            check(c == want, "stateless era: resultType added", c)
            for name in ("dup", "nested_dup"):
                c = g.call("raw__" + name, {})
                check(is_error(c) and "timeout" in text(c),
                      f"{name}: an answer with duplicate keys is never forwarded", c)
            check(g.close() == 0, "EOF → exit 0")
        rows = [r for r in audit_rows(sb) if r.get("server") == "raw"]
        check(len(rows) == 12 and sum(r["outcome"] == "ok" for r in rows) == 10,
              "one audit row per call", [(r.get("tool"), r.get("outcome")) for r in rows])

        with Gateway(sb, "--manifest-dir", sb.project, env=env) as g:
            g.initialize("2024-11-05")
            c = g.call("raw__audio", {})
            blocks = c["content"] if c else []
            check(len(blocks) == 2 and blocks[0] == {"type": "text", "text": "a"} and
                  blocks[1]["type"] == "text" and "audio" in blocks[1]["text"],
                  "2024-11-05: the audio block is rewritten to text", c)
            c = g.call("raw__plain", {})
            check(c == expect("plain", "2024-11-05"), "2024-11-05: plain text passes", c)
            check(g.close() == 0, "EOF → exit 0 (old revision)")
    return done()


if __name__ == "__main__":
    sys.exit(main())
