#!/bin/sh
# The first run, reproduced: `init` turns the agent config already on this
# machine into a manifest, `bootstrap` preflights it, `apply --write` renders
# the same server into every other CLI in its own syntax, and a second
# `apply` has nothing left to write.
#
#   sh docs/first-run-demo.sh [path/to/agentstack]
#
# Fenced in a temporary HOME and AGENTSTACK_HOME: the six "installed" CLIs
# are stand-in programs on a private PATH, and Claude Code's ~/.claude.json
# (one filesystem server) is written by this script. No CLI or server is
# started and nothing touches the network. Needs git and python3. Exits 1 if
# any claim fails.
set -eu
. "$(dirname "$0")/demo-lib.sh"
for t in git python3; do
    command -v "$t" >/dev/null 2>&1 || { echo "demo: $t is needed" >&2; exit 2; }
done

mkdir -p "$DEMO/bin" "$DEMO/proj"
for b in claude codex copilot gemini opencode pi; do
    printf '#!/bin/sh\nexit 0\n' > "$DEMO/bin/$b"
    chmod +x "$DEMO/bin/$b"
done
export PATH="$DEMO/bin:/usr/bin:/bin"
cat > "$HOME/.claude.json" <<'JSON'
{
  "numStartups": 12,
  "mcpServers": {
    "filesystem": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
    }
  }
}
JSON
CLAUDE_BEFORE=$(cat "$HOME/.claude.json")
cd "$DEMO/proj"
git init -q

step init --yes
proves "init detects the six CLIs on this machine" has "🔍 Detected 6 CLIs:"
proves "…and imports the server Claude Code already had" has "📥 Imported 1 MCP server from existing configs"
proves "…into a manifest you can review" \
    sh -c 'has() { grep -qF -- "$1" .agentstack/agentstack.toml; }; has "[servers.filesystem]" && has "server-filesystem"'

step bootstrap
proves "bootstrap: the manifest validates, 6 adapters installed, no missing secrets" \
    has "✓ manifest validates · 6 adapters installed · no missing secrets"

step lock --write
# `agentstack trust .` asks on a terminal; the demo records the same consent
# headlessly, for the digest of exactly what `trust --preview` showed.
DIGEST=$("$AS" trust --preview | python3 -c 'import json,sys; print(json.load(sys.stdin)["surface_digest"])')
step trust --yes --consented "$DIGEST"
proves "you review and trust it (pinned to its consent digest)" [ "$RC" -eq 0 ]

step apply --write
proves "apply --write exits 0" [ "$RC" -eq 0 ]
proves "Claude Code's project file gets the server" grep -q '"filesystem"' .mcp.json
proves "Codex gets it in TOML" grep -q '^\[mcp_servers.filesystem\]' .codex/config.toml
proves "Gemini CLI gets it in its settings" grep -q '"filesystem"' .gemini/settings.json
proves "Copilot CLI gets it in .github/mcp.json, with its tools list" \
    sh -c 'grep -q "\"filesystem\"" .github/mcp.json && grep -q "\"tools\"" .github/mcp.json'
proves "OpenCode gets it as one command array" \
    sh -c 'grep -q "\"filesystem\"" opencode.json && grep -q "\"type\": \"local\"" opencode.json'
proves "your own ~/.claude.json is untouched (project scope writes project files)" \
    sh -c '[ "$(cat "$HOME/.claude.json")" = "$1" ]' _ "$CLAUDE_BEFORE"
printf '\n$ cat .gitignore\n'
sed 's/^/    /' .gitignore
proves "the rendered files are kept out of git: git status shows only the intent (.agentstack/) and .gitignore" \
    sh -c 'grep -q "^# >>> agentstack" .gitignore && grep -q "mcp\.json\$" .gitignore &&
           [ -z "$(git status --porcelain --untracked-files=all |
                  grep -v -e "^?? \.agentstack/" -e "^?? \.gitignore\$")" ]'

step apply
proves "a second apply has nothing to write" has "✓ nothing to write — every target in sync"

finish
