"""`session freeze [--name NAME]` (docs/adapters.md, sessions): the open
session's toolset is written into the manifest under a new name (default
<toolset>-frozen), comments and layout kept; nothing is applied; refused
with no open session, an existing name, a bad name, or an empty toolset."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1
# the team's servers
[servers.a]
type = "stdio"
command = "a-mcp"

[skills.notes]
path = "skills/notes"

[toolsets.main]
servers = ["a"]
skills = ["notes"]

[toolsets.empty]
servers = []
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    os.makedirs(os.path.join(sb.project, ".git"))
    sb.write(".agentstack/skills/notes/SKILL.md", "---\ndescription: notes\n---\n")
    manifest = H.write_manifest(sb, MANIFEST)
    check(H.run(sb, "lock", "--write").returncode == 0, "lock")
    H.trust(sb)

    hp = H.run(sb, "session", "--help")
    check("freeze" in hp.stdout, "session --help lists freeze", hp.stdout)

    none = H.run(sb, "session", "freeze")
    check(none.returncode == 1 and "no session is active for this project" in none.stderr,
          "no open session: refused", none.stdout + none.stderr)
    check(H.read(manifest) == MANIFEST, "refusal writes nothing")

    st = H.run(sb, "session", "start", "main")
    check(st.returncode == 0, "session start main", st.stdout + st.stderr)
    mcp_before = H.read(os.path.join(sb.project, ".mcp.json"))

    fr = H.run(sb, "session", "freeze")
    check(fr.returncode == 0, "session freeze", fr.stdout + fr.stderr)
    text = H.read(manifest)
    check(text.startswith(MANIFEST), "the manifest's bytes before are kept (comment too)", text)
    check('[toolsets.main-frozen]\nservers = ["a"]\nskills = ["notes"]\n' in text,
          "default name <toolset>-frozen with the session's servers and skills", text)
    check("nothing was applied" in fr.stdout and "agentstack lock --write" in fr.stdout,
          "says nothing was applied and names lock --write", fr.stdout)
    check(H.read(os.path.join(sb.project, ".mcp.json")) == mcp_before, "no CLI file changed")

    dup = H.run(sb, "session", "freeze")
    check(dup.returncode == 1 and "already exists" in dup.stderr, "an existing name: refused",
          dup.stderr)
    bad = H.run(sb, "session", "freeze", "--name", "no spaces")
    check(bad.returncode == 2, "a bad name is a usage error", bad.stderr)
    named = H.run(sb, "session", "freeze", "--name", "snap")
    check(named.returncode == 0 and "[toolsets.snap]" in H.read(manifest),
          "--name NAME", named.stdout + named.stderr)
    check(H.run(sb, "session", "end").returncode == 0, "session end")

    # A session of a toolset naming nothing has nothing to freeze.
    H.relock(sb)
    st = H.run(sb, "session", "start", "empty")
    check(st.returncode == 0, "session start empty", st.stdout + st.stderr)
    before = H.read(manifest)
    em = H.run(sb, "session", "freeze")
    check(em.returncode == 1 and "nothing to freeze" in em.stderr, "an empty toolset: refused",
          em.stderr)
    check(H.read(manifest) == before, "nothing written")
    H.run(sb, "session", "end")

done()
