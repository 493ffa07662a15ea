#!/bin/sh
# make demo: the trust gate on a built-in example project (examples/demo/),
# in a throwaway HOME and AGENTSTACK_HOME — never your real configuration.
set -eu
bin=$1
command -v python3 >/dev/null 2>&1 || { echo "demo: python3 is needed to drive the MCP client" >&2; exit 1; }
"$bin" --version
exec python3 "$(dirname "$0")/../examples/demo/drive.py" "$bin"
