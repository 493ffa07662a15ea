"""The user's steps: `apply --write` renders every declared server, then
`session start backend` narrows to the toolset. A server the manifest still
declares but the toolset leaves out is reported as exactly that, never as
"no longer in manifest"; a server really gone from the manifest still is.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.api]
type = "stdio"
command = "api-mcp"

[servers.ops]
type = "stdio"
command = "ops-mcp"
%s
[toolsets.backend]
servers = ["api"]
"""
OLD = """
[servers.legacy]
type = "stdio"
command = "legacy-mcp"
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST % OLD)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    p = H.run(sb, "apply", "--write")
    check(p.returncode == 0, "apply --write", p.stdout + p.stderr)
    mcp = os.path.join(sb.project, ".mcp.json")
    check(sorted(json.loads(H.read(mcp))["mcpServers"]) == ["api", "legacy", "ops"],
          "apply renders every declared server", H.read(mcp))

    # legacy leaves the manifest; ops stays declared, outside the toolset
    H.write_manifest(sb, MANIFEST % "")
    H.run(sb, "lock", "--write")
    H.trust(sb)
    p = H.run(sb, "session", "start", "backend")
    out = p.stdout + p.stderr
    check(p.returncode == 0, "session start backend", out)
    check("'ops' (declared, but not in toolset 'backend')" in out,
          "ops is named as outside the toolset", out)
    check("'ops' (no longer in manifest)" not in out,
          "ops is not called gone from the manifest", out)
    check("'legacy' (no longer in manifest)" in out,
          "a server really removed is still called that", out)
    check(sorted(json.loads(H.read(mcp))["mcpServers"]) == ["api"],
          "the session holds only the toolset's server", H.read(mcp))
done()
