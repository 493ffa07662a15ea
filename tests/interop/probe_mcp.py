"""A minimal MCP server on stdio for test_cline_cli.py (python3 stdlib only;
not a test itself).

    python3 probe_mcp.py TOOL [--want-env NAME=VALUE] [--want-cwd DIR]

Offers one tool named TOOL. It refuses to serve (exit 3 before reading a
byte) unless the environment holds NAME=VALUE and the working directory is
DIR, so a client lists TOOL only when it started the server as configured.
"""
import json
import os
import sys

args = sys.argv[1:]
TOOL = args[0]
if "--want-env" in args:
    name, _, value = args[args.index("--want-env") + 1].partition("=")
    if os.environ.get(name) != value:
        sys.exit(3)
if "--want-cwd" in args:
    if os.path.realpath(os.getcwd()) != os.path.realpath(args[args.index("--want-cwd") + 1]):
        sys.exit(3)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": (msg.get("params") or {}).get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": TOOL, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
            {"name": TOOL, "description": "probe", "inputSchema": {"type": "object"}}]}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
