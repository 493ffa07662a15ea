#!/bin/sh
# The trust gate, reproduced: an untrusted repo is inert (its server never
# starts), `trust` approves its exact bytes, then one call is brokered, one is
# denied by the repo's [policy.tools] and one by your machine policy, and
# every call lands in the call log.
#
#   sh docs/trust-gate-demo.sh [path/to/agentstack]
#
# Fenced in a temporary HOME and AGENTSTACK_HOME; the upstream is the
# binary's own `agentstack demo-server` over stdio, so nothing touches the
# network. The project is examples/demo/; examples/demo/drive.py plays the
# agent and checks every line it shows. Exits 1 if any claim fails.
set -eu
. "$(dirname "$0")/demo-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "demo: python3 is needed to play the MCP client" >&2; exit 2; }

set +e
python3 "$DEMO_DOCS/../examples/demo/drive.py" "$AS"
rc=$?
set -e
echo
proves "untrusted = inert; trusted calls are brokered, the repo and the machine policy each deny one, all logged" \
    [ "$rc" -eq 0 ]
finish
