#!/bin/sh
# Installs the pinned coding CLIs and MCP peers (the "interop" lines of
# tests/interop/pins.txt) into a cache directory outside the repository, once
# per machine.
#
#   sh tests/interop/setup_clis.sh            # installs into $AS_INTEROP_CACHE
#   AS_INTEROP_CACHE=/some/dir sh tests/interop/setup_clis.sh
#
# Exit 0 when everything is installed; 77 ("skip") when npm is missing or the
# npm registry is unreachable, saying so loudly; 1 on any other failure. With
# CI=true a missing prerequisite is a failure (exit 1): CI installs node and
# npm (.ci/run), so a skip there would hide that interop never ran.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${AS_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentstack-interop}
PINS=$here/pins.txt
PKGS=$(awk '!/^#/ && NF && $3 == "interop" { print $1 "@" $2 }' "$PINS")
if [ -z "$PKGS" ]; then
    echo "error: no interop pins in $PINS" >&2
    exit 1
fi
first=$(echo "$PKGS" | head -n 1)

cannot() { # $1 = why
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $1 (CI=true: interop must run, not skip)" >&2
        exit 1
    fi
    echo "SKIP: $1" >&2
    exit 77
}

command -v npm >/dev/null 2>&1 || cannot "npm is not installed — interop tests need node and npm"
timeout 60 npm view "$first" version >/dev/null 2>&1 ||
    cannot "the npm registry is unreachable — interop tests cannot install the CLIs"
mkdir -p "$CACHE" || exit 1
cd "$CACHE" || exit 1
[ -f package.json ] || echo '{"name":"agentstack-interop","private":true}' > package.json
stamp=$(echo "$PKGS" | tr '\n' ' ')
if [ -f .installed ] && [ "$(cat .installed)" = "$stamp" ]; then
    echo "interop CLIs already installed in $CACHE"
    exit 0
fi
# shellcheck disable=SC2086
if ! npm install --prefer-online --no-audit --no-fund $PKGS; then
    echo "error: npm install failed in $CACHE" >&2
    exit 1
fi
echo "$stamp" > .installed
echo "interop CLIs installed in $CACHE"
