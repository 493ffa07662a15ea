#!/bin/sh
# make demo: the product's main job on a built-in example, in a throwaway
# HOME so it never touches your real configuration.
set -eu
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d /tmp/agentstack-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" NO_COLOR=1
mkdir -p "$HOME"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say agentstack --version
"$BIN" --version
say agentstack help
"$BIN" help
