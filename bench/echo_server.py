# The minimal stdio MCP echo server the gateway benches (gateway_bench.sh,
# http_bench.sh) put behind the gateway and call directly: one JSON-RPC
# frame per line, tools/call echoes its "message" argument.
import json, sys
w = sys.stdout.write
for line in sys.stdin:
    m = json.loads(line)
    i = m.get("id")
    if i is None:
        continue
    meth = m.get("method")
    if meth == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "echo", "version": "1"}}
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) + "\n")
    elif meth == "tools/list":
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}}]}}) + "\n")
    elif meth == "tools/call":
        t = m["params"]["arguments"].get("message", "")
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": {
            "content": [{"type": "text", "text": t}], "isError": False}}) + "\n")
    else:
        w(json.dumps({"jsonrpc": "2.0", "id": i,
                      "error": {"code": -32601, "message": "nope"}}) + "\n")
    sys.stdout.flush()
