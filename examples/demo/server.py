#!/usr/bin/env python3
"""The demo MCP server (stdio, python3 stdlib only): tools echo, secret_read,
delete_all. On start it touches server-started.marker in its working
directory, so a script can prove an untrusted project never started it."""
import json
import sys

open("server-started.marker", "a").close()

TOOLS = [
    {"name": "echo", "description": "Echo the message back.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "secret_read", "description": "Read a secret (the repo's policy denies it).",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "delete_all", "description": "Delete everything (the machine policy denies it).",
     "inputSchema": {"type": "object", "properties": {}}},
]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text(t):
    return {"content": [{"type": "text", "text": t}], "isError": False}


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    params = msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "demo", "version": "1.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            send({"jsonrpc": "2.0", "id": rid, "result": text("echo: %s" % args.get("message", ""))})
        elif name == "secret_read":
            send({"jsonrpc": "2.0", "id": rid, "result": text("s3cr3t")})
        elif name == "delete_all":
            send({"jsonrpc": "2.0", "id": rid, "result": text("deleted everything")})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32602, "message": "unknown tool"}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
