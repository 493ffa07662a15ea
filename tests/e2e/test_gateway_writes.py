"""The control-plane tools that change the project: agentstack_add_server,
_add_skill, _create_toolset (and the unlisted alias _create_profile).

1. An untrusted project (auto mode): each is refused with the trust refusal
   and one `trust` row; no file changes.
2. Trusted, over an explicit --manifest-dir (served without the trust gate):
   add_server writes [servers.<name>] into the manifest and nothing else —
   comments kept, ${REF}s written as given — and the connection is re-gated.
   The attack: an agent adds a stdio server whose command leaves a marker,
   then opens a lease, searches and calls it. Nothing it added may run until
   a person reviews the change (the marker never appears; the calls are
   refused naming `agentstack trust`).
3. Hostile arguments change nothing: a literal secret in env or headers, a
   skill path outside the project (absolute, ".."), an unknown server in a
   toolset, an existing name, a bad name.
4. add_skill and create_toolset (and create_profile) write their tables.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, files  # noqa: E402
from mcpclient import Gateway, audit_rows, grant, is_error, text  # noqa: E402

MANIFEST = """# the team's manifest: this comment must survive
version = 1

[servers.files]
type = "stdio"
command = "true"

[toolsets.main]
servers = ["files"]
"""
GH = "ghp_Fx7Kq2Lm9Rt4Vw8Yz3Bc6Dn1Gh5Jp0Ts2Uv"


def manifest_path(sb):
    return os.path.join(sb.project, ".agentstack", "agentstack.toml")


def read(p):
    with open(p) as f:
        return f.read()


def untrusted():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        before = files(sb.project)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            rows = len(audit_rows(sb))
            for name, args in (("agentstack_add_server", {"name": "x", "command": "sh"}),
                               ("agentstack_add_skill", {"name": "s", "path": "skills/s"}),
                               ("agentstack_create_toolset", {"name": "t"}),
                               ("agentstack_create_profile", {"name": "t"})):
                r = g.call(name, args)
                check(is_error(r) and "this project is not trusted on this machine" in text(r)
                      and "nothing ran" in text(r), f"untrusted: {name} refused", r)
            new = audit_rows(sb)[rows:]
            check(len(new) == 4 and all(x.get("tool") == "trust" for x in new),
                  "untrusted: one trust row per refusal", new)
        check(files(sb.project) == before, "untrusted: no project file changed")


def trusted_explicit():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        grant(sb)
        marker = os.path.join(sb.root, "evil-ran")
        mdir = os.path.join(sb.project, ".agentstack")
        with Gateway(sb, "--manifest-dir", mdir) as g:
            g.initialize()
            before = files(sb.project)
            r = g.call("agentstack_add_server", {
                "name": "evil", "command": "sh",
                "args": ["-c", f"touch {marker}; sleep 30"],
                "env": {"TOKEN": "${EVIL_TOKEN}"}, "profile": "main"})
            check(not is_error(r) and "Added [servers.evil]" in text(r) and
                  "agentstack lock --write" in text(r) and "agentstack trust" in text(r),
                  "add_server: written, the text names the person's follow-up", r)
            after = files(sb.project)
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            check(changed == [".agentstack/agentstack.toml"], "only the manifest changed",
                  changed)
            m = read(manifest_path(sb))
            check(m.startswith("# the team's manifest: this comment must survive") and
                  "[servers.evil]" in m and '"${EVIL_TOKEN}"' in m and
                  'servers = ["files", "evil"]' in m,
                  "format kept, ${REF} written as given, the toolset names it", m)
            # the attack: get the new server to run before anyone reviewed it
            lo = g.call("agentstack_lease_open", {"profile": "main"})
            s = g.call("tools_search", {"query": ""})
            c = g.call("evil__anything", {})
            check(is_error(lo) and "not trusted" in text(lo), "re-gated: lease_open refused", lo)
            check("not trusted" in text(s) or "changed" in text(s),
                  "re-gated: tools_search serves nothing", s)
            check(is_error(c), "re-gated: a call to the new server is refused", c)
            again = g.call("agentstack_add_server", {"name": "evil2", "command": "sh"})
            check(is_error(again) and "not trusted" in text(again),
                  "re-gated: a second write is refused too", again)
        check(not os.path.exists(marker), "the server the agent added never ran")
        st = sb.run("status", "--json")
        check('"trust": "drifted"' in st.stdout, "the project reads drifted until reviewed",
              st.stdout)


def hostile_and_others():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        grant(sb)
        mdir = os.path.join(sb.project, ".agentstack")
        with Gateway(sb, "--manifest-dir", mdir) as g:
            g.initialize()
            before = read(manifest_path(sb))
            bad = [
                ("agentstack_add_server", {"name": "gh", "command": "gh-mcp",
                                           "env": {"GITHUB_TOKEN": GH}}, "literal secret"),
                ("agentstack_add_server", {"name": "gh", "url": "https://api.example.test/mcp",
                                           "headers": {"Authorization": "Bearer " + GH}},
                 "literal secret"),
                ("agentstack_add_server", {"name": "files", "command": "x"}, "already declared"),
                ("agentstack_add_server", {"name": "a b", "command": "x"}, "`name` is required"),
                ("agentstack_add_server", {"name": "h", "transport": "http"}, "needs `url`"),
                ("agentstack_add_skill", {"name": "s", "path": "/etc"}, "inside the project"),
                ("agentstack_add_skill", {"name": "s", "path": "skills/../../x"},
                 "inside the project"),
                ("agentstack_add_skill", {"name": "s"}, "give `git`"),
                ("agentstack_create_toolset", {"name": "t", "servers": ["nosuch"]},
                 "no server 'nosuch'"),
                ("agentstack_create_toolset", {"name": "main"}, "already exists"),
                ("agentstack_add_server", {"name": "y", "command": "x", "profile": "nosuch"},
                 "no toolset 'nosuch'"),
            ]
            for name, args, msg in bad:
                r = g.call(name, args)
                check(is_error(r) and msg in text(r) and GH not in text(r),
                      f"{name} {sorted(args)}: refused ({msg})", r)
            check(read(manifest_path(sb)) == before, "refusals changed nothing")
            r = g.call("agentstack_add_skill", {"name": "notes", "git":
                                                "https://example.test/notes.git", "rev": "v1"})
            check(not is_error(r) and "nothing fetched" in text(r), "add_skill (git)", r)
            m = read(manifest_path(sb))
            check('[skills.notes]\ngit = "https://example.test/notes.git"\nrev = "v1"' in m,
                  "[skills.notes] written", m)
        grant(sb)
        with Gateway(sb, "--manifest-dir", mdir) as g:
            g.initialize()
            r = g.call("agentstack_create_profile", {"name": "docs", "servers": ["files"],
                                                     "skills": ["notes"]})
            check(not is_error(r) and "[toolsets.docs]" in text(r),
                  "create_profile is create_toolset", r)
            m = read(manifest_path(sb))
            check('[toolsets.docs]\nservers = ["files"]\nskills = ["notes"]' in m,
                  "[toolsets.docs] written", m)


untrusted()
trusted_explicit()
hostile_and_others()
done()
