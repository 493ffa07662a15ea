"""Native sessions over MCP: agentstack_session_start, _end, _freeze and
_list.

- Untrusted: start, end and freeze are refused with the trust refusal
  ("blocked: … — this project is not trusted on this machine") and one
  `trust` audit row each; no file is written or changed. session_list
  answers (read-only).
- A session started in a terminal shows up in session_list (this project's
  only); a native session refuses a lease, and an open lease refuses
  session_start.
- Trusted, over MCP: session_start writes the CLI's native files exactly as
  `agentstack session start` does and records the session; session_freeze
  proposes its toolset as a new toolset in the manifest (the manifest only)
  and re-gates the connection; session_end puts .mcp.json back byte for
  byte.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, payload, text  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.a]
type = "stdio"
command = "a-mcp"

[skills.sql-review]
path = "skills/sql-review"

[toolsets.backend]
servers = ["a"]
skills = ["sql-review"]
"""

WRITERS = ["agentstack_session_start", "agentstack_session_end", "agentstack_session_freeze"]
OTHER = "/elsewhere/other-project"


def sessions_path(sb):
    return os.path.join(sb.ah, "sessions.json")


def untrusted_refused(g, sb, label):
    """The session writers refuse an untrusted project: one trust row each,
    no file changed."""
    before = H.tree(sb.project)
    rows = len(audit_rows(sb))
    for name, args in (("agentstack_session_start", {"profile": "backend"}),
                       ("agentstack_session_end", {}),
                       ("agentstack_session_freeze", {"name": "backend-frozen"})):
        r = g.call(name, args)
        check(is_error(r) and text(r).startswith(f"Error: blocked: {name} tried to") and
              "this project is not trusted on this machine" in text(r) and
              "nothing ran" in text(r), f"{label}: {name} → the trust refusal", r)
    new = audit_rows(sb)[rows:]
    check(len(new) == 3 and all(x.get("tool") == "trust" and x.get("outcome") == "denied"
                                for x in new), f"{label}: one trust row per refusal", new)
    check(H.tree(sb.project) == before, f"{label}: no project file written or changed")


with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    sb.write(".agentstack/skills/sql-review/SKILL.md", "---\ndescription: sql\n---\n")
    H.write_manifest(sb, MANIFEST)
    hand = '{"mcpServers": {"mine": {"command": "m"}}, "x": 1.50}\n'
    mcp = sb.write(".mcp.json", hand)
    H.run(sb, "lock", "--write")
    e = H.env(sb)

    # ---- untrusted: list answers (read-only), the writers refuse
    with Gateway(sb, "--auto-project", env=e) as g:
        g.initialize()
        names = g.tools()
        check("agentstack_session_list" in names and all(n in names for n in WRITERS),
              "tools/list: session_list, start, end and freeze listed", names)
        tools = {t["name"]: t for t in g.request("tools/list", {})["result"]["tools"]}
        check(tools["agentstack_session_list"]["inputSchema"] ==
              {"type": "object", "properties": {}}, "session_list takes no arguments")
        r = g.call("agentstack_session_list", {})
        p = payload(r)
        check(not is_error(r) and p["active"] is False and "agentstack session start" in p["note"],
              "untrusted, no session: active false, the note names the terminal command", p)
        untrusted_refused(g, sb, "untrusted")
    check(H.read(mcp) == hand and not os.path.exists(sessions_path(sb)),
          "untrusted: .mcp.json untouched, no sessions.json written by the gateway")

    # ---- a session started in a terminal shows up; another project's does not
    H.trust(sb)
    st = H.run(sb, "session", "start", "backend")
    check(st.returncode == 0, "CLI session start", st.stdout + st.stderr)
    with open(sessions_path(sb)) as f:
        doc = json.load(f)
    doc["sessions"][OTHER] = {"toolset": "secret-plans", "started_unix": 1}
    with open(sessions_path(sb), "w") as f:
        json.dump(doc, f)
    sessions_bytes = open(sessions_path(sb), "rb").read()
    started = H.read(mcp)
    with Gateway(sb, "--auto-project", env=e) as g:
        g.initialize()
        r = g.call("agentstack_session_list", {})
        p = payload(r)
        check(not is_error(r) and p["active"] is True and p["toolset"] == "backend" and
              p["abandoned"] is False and p["native_files_written"] is True and
              isinstance(p["started_unix"], int) and p["started_unix"] > 1,
              "trusted, session active: toolset, start time, native files", p)
        check(p["project"] == os.path.realpath(sb.project) or p["project"] == sb.project,
              "the answer names this project", p)
        check(OTHER not in text(r) and "secret-plans" not in text(r),
              "another project's session (path, toolset) is never shown", text(r))
        check("agentstack session end" in p["note"], "the note says how to end it", p)

        # A native session refuses a lease, the default's too
        st = payload(g.call("agentstack_lease_status", {}))
        check(st["active"] is False, "session active: the default toolset was not auto-opened",
              st)
        r = g.call("agentstack_lease_open", {"profile": "backend"})
        check(is_error(r) and "native session" in text(r) and
              "agentstack session end" in text(r),
              "session active: lease_open refused, naming `agentstack session end`", r)
        r = g.call("agentstack_lease_open", {"profile": "nope"})
        check(is_error(r) and "native session" in text(r),
              "session active: refused before the unknown-toolset check", r)
        st = payload(g.call("agentstack_lease_status", {}))
        check(st["active"] is False, "session active: the refusal opened nothing", st)
    check(open(sessions_path(sb), "rb").read() == sessions_bytes and H.read(mcp) == started,
          "session_list wrote nothing: sessions.json and .mcp.json unchanged")

    # the record stays the CLI's: ending it there restores byte for byte, list follows
    with open(sessions_path(sb)) as f:
        doc = json.load(f)
    del doc["sessions"][OTHER]
    with open(sessions_path(sb), "w") as f:
        json.dump(doc, f)
    end = H.run(sb, "session", "end")
    check(end.returncode == 0 and H.read(mcp) == hand,
          "CLI session end restores .mcp.json byte for byte", end.stdout + end.stderr)
    with Gateway(sb, "--auto-project", env=e) as g:
        g.initialize()
        p = payload(g.call("agentstack_session_list", {}))
        check(p["active"] is False, "after the end: active false", p)
        st = payload(g.call("agentstack_lease_status", {}))
        check(st["active"] is True and st["profile"] == "backend",
              "after the end: the default toolset auto-opens", st)
        r = g.call("agentstack_lease_open", {"profile": "backend"})
        check(not is_error(r) and payload(r)["opened"] == "backend",
              "after the end: lease_open opens", r)
        lease_id = payload(r)["instance"]

        # a broken record: a clear error, no crash, nothing written
        with open(sessions_path(sb), "w") as f:
            f.write("{not json")
        r = g.call("agentstack_session_list", {})
        check(is_error(r) and "cannot read the native sessions" in text(r),
              "unreadable sessions.json: isError naming the problem", r)
        r = g.call("agentstack_session_list", {})
        check(is_error(r), "the gateway still answers after the error", r)
        r = g.call("agentstack_lease_open", {"profile": "backend"})
        st = payload(g.call("agentstack_lease_status", {}))
        check(is_error(r) and "cannot tell whether a native session is active" in text(r) and
              st["active"] is True and st["instance"] == lease_id,
              "unreadable sessions.json: lease_open refused, the open lease kept", [r, st])
    check(open(sessions_path(sb)).read() == "{not json",
          "the broken record is left for the user, not rewritten")
    check(not any(row.get("tool", "").startswith("agentstack_session") for row in
                  audit_rows(sb)), "no session tool wrote a call row", audit_rows(sb))

    # ---- trusted, over MCP: start, freeze, end
    os.remove(sessions_path(sb))
    H.trust(sb)
    manifest_path = os.path.join(sb.project, ".agentstack", "agentstack.toml")
    with Gateway(sb, "--auto-project", env=e) as g:
        g.initialize()
        r = g.call("agentstack_lease_open", {"profile": "backend"})
        check(not is_error(r), "a lease opens", r)
        r = g.call("agentstack_session_start", {"profile": "backend"})
        check(is_error(r) and "agentstack_lease_close" in text(r),
              "an open lease refuses session_start", r)
        g.call("agentstack_lease_close", {})
        r = g.call("agentstack_session_start", {"profile": "backend"})
        check(not is_error(r), "session_start over MCP", r)
        check(H.read(mcp) != hand and '"a"' in H.read(mcp) and '"mine"' in H.read(mcp),
              "the CLI's .mcp.json now holds the toolset's server, the hand entry kept",
              H.read(mcp))
        p = payload(g.call("agentstack_session_list", {}))
        check(p["active"] is True and p["toolset"] == "backend", "session_list sees it", p)
        before = H.tree(sb.project)
        r = g.call("agentstack_session_freeze", {"name": "backend-2"})
        check(not is_error(r) and "[toolsets.backend-2]" in text(r) and
              "agentstack trust" in text(r), "session_freeze proposes the toolset", r)
        changed = [k for k in set(before) | set(H.tree(sb.project))
                   if before.get(k) != H.tree(sb.project).get(k)]
        check(changed == [os.path.relpath(manifest_path, sb.project)],
              "freeze changed the manifest only", changed)
        check('[toolsets.backend-2]\nservers = ["a"]\nskills = ["sql-review"]' in
              H.read(manifest_path), "the frozen toolset is in the manifest",
              H.read(manifest_path))
        r = g.call("agentstack_session_end", {})
        check(is_error(r) and "not trusted" in text(r),
              "after the manifest changed the connection is re-gated: end refused", r)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    with Gateway(sb, "--auto-project", env=e) as g:
        g.initialize()
        r = g.call("agentstack_session_end", {})
        check(not is_error(r), "session_end over MCP once trusted again", r)
    check(H.read(mcp) == hand, "session_end puts .mcp.json back byte for byte", H.read(mcp))

done()
