"""Packs (docs/library.md), and the closed
loop: `add from git:…@v1.0.0 --write` installs a pack (secrets stay
${REF}s, pins written at once), its delete_* tool is refused by
[policy.tools] at the gateway, `audit --calls` shows the denial, the vendor
tags v1.1.0, `upgrade acme --yes --write` previews and re-pins.

Pack repositories are made by the test on disk (file:// URLs and paths);
nothing touches the network. Bad input leaves the project byte-identical.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, git, read, write  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, text  # noqa: E402

SERVER = r'''#!/usr/bin/env python3
import json, sys
TOOLS = [{"name": "search_docs", "description": "Search the docs.",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
         {"name": "delete_index", "description": "Delete the index.",
          "inputSchema": {"type": "object", "properties": {}}}]
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    rid, meth, p = m.get("id"), m.get("method"), m.get("params") or {}
    if rid is None:
        continue
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": p.get(
            "protocolVersion", "2025-11-25"), "capabilities": {"tools": {}},
            "serverInfo": {"name": "acme", "version": "1"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif meth == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text",
              "text": "did " + p.get("name", "")}], "isError": False}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
'''


def pack_toml(server_py, extra=""):
    return ('name = "acme"\ndescription = "Docs MCP + SQL review"\n'
            '[server]\ntype = "stdio"\ncommand = "python3"\n'
            f'args = ["{server_py}"]\nsecret_env = ["ACME_TOKEN"]\n'
            '[[skill]]\nname = "sql-review"\npath = "skills/sql-review"\n' + extra)


def make_pack(root, name="pack", tags=("v1.0.0",), toml=None, skill="v1\n"):
    d = os.path.join(root, name)
    server_py = os.path.join(root, "acme_server.py")
    write(server_py, SERVER)
    write(os.path.join(d, "pack.toml"), toml if toml is not None else pack_toml(server_py))
    write(os.path.join(d, "skills", "sql-review", "SKILL.md"),
          "---\ndescription: Review SQL\n---\n" + skill)
    git("init", "-q", cwd=d)
    git("add", "-A", cwd=d)
    git("commit", "-qm", "release", cwd=d)
    for t in tags:
        git("tag", t, cwd=d)
    return d


def manifest(sb):
    return os.path.join(sb.project, ".agentstack", "agentstack.toml")


BASE = 'version = 1\n# the project\n\n[policy.tools]\nacme = ["!delete_*"]\n'


def grant(sb):
    r = sb.run("trust", ".", "--preview")
    digest = json.loads(r.stdout)["surface_digest"]
    r = sb.run("trust", ".", "--yes", "--consented", digest)
    check(r.returncode == 0, "trust the project", r.stdout + r.stderr)


def scenario_closed_loop():
    with Sandbox() as sb:
        d = make_pack(sb.root)
        url = "file://" + d
        sb.write(".agentstack/agentstack.toml", BASE)
        r = sb.run("add", "from", f"git:{url}@v1.0.0")
        check(r.returncode == 0 and "Dry run." in r.stdout and read(manifest(sb)) == BASE,
              "add from previews, manifest untouched", r.stdout + r.stderr)
        r = sb.run("add", "from", f"git:{url}@v1.0.0", "--write")
        check(r.returncode == 0 and
              "✓ installed pack 'acme' — servers + skills, secrets stay ${REF}s" in r.stdout,
              "the documented install line", r.stdout + r.stderr)
        m = read(manifest(sb))
        check(m.startswith(BASE), "existing bytes and comments kept", m)
        check('[servers.acme]' in m and 'ACME_TOKEN = "${ACME_TOKEN}"' in m,
              "[servers.acme] with the secret as a ${REF}", m)
        check('[packs.acme]\nversion = "v1.0.0"' in m and 'rev = "' in m and
              f'source = "git:{url}@v1.0.0"' in m, "ledger: version + rev + source", m)
        check('[skills.sql-review]\npath = "./skills/sql-review"' in m and
              os.path.isfile(os.path.join(sb.project, ".agentstack", "skills", "sql-review",
                                          "SKILL.md")), "skill copied and declared", m)
        lock = read(os.path.join(sb.project, ".agentstack", "agentstack.lock"))
        check('name = "acme"' in lock and 'name = "sql-review"' in lock,
              "pins written at once", lock)
        check("next: agentstack secret set ACME_TOKEN" in r.stdout, "names the secret to set",
              r.stdout)
        r = sb.run("add", "from", f"git:{url}@v1.0.0", "--write")
        check(r.returncode == 1 and "already installed" in r.stderr, "a second install refused",
              r.stderr)

        grant(sb)
        with Gateway(sb, "--auto-project", env=sb.env(ACME_TOKEN="t0k")) as g:
            g.initialize()
            c = g.call("acme__search_docs", {"q": "joins"})
            check(not is_error(c) and text(c) == "did search_docs", "acme__search_docs ✓ ok",
                  c)
            c = g.call("acme__delete_index", {})
            check(is_error(c) and 'rule "!delete_*"' in text(c),
                  "acme__delete_index ✗ refused by [policy.tools]", text(c))
            g.close()
        rows = [x for x in audit_rows(sb) if x.get("server") == "acme"]
        check(len(rows) == 2, "both calls are in the call log", rows)
        r = sb.run("audit", "--calls")
        check("2 calls · 2 tools · 1 denied by policy — digests, never values" in r.stdout,
              "audit --calls shows the denial", r.stdout + r.stderr)

        # the vendor ships v1.1.0
        r = sb.run("upgrade", "acme")
        check(r.returncode == 0 and "already current" in r.stdout, "nothing newer yet",
              r.stdout)
        write(os.path.join(d, "skills", "sql-review", "SKILL.md"),
              "---\ndescription: Review SQL\n---\nv1.1 body\n")
        git("commit", "-qam", "v1.1", cwd=d)
        git("tag", "v1.1.0", cwd=d)
        before = read(manifest(sb))
        r = sb.run("upgrade", "acme")
        check(r.returncode == 0 and "newer tag 'acme': v1.0.0 -> v1.1.0" in r.stdout and
              "~ skill 'sql-review'" in r.stdout and "Dry run." in r.stdout and
              read(manifest(sb)) == before, "upgrade previews the change", r.stdout)
        lock_before = read(os.path.join(sb.project, ".agentstack", "agentstack.lock"))
        r = sb.run("upgrade", "acme", "--yes", "--write")
        check(r.returncode == 0 and
              "✓ upgraded pack 'acme' — previewed, re-pinned @v1.1.0" in r.stdout,
              "the documented upgrade line", r.stdout + r.stderr)
        m = read(manifest(sb))
        lock = read(os.path.join(sb.project, ".agentstack", "agentstack.lock"))
        check('version = "v1.1.0"' in m and lock != lock_before, "ledger and pins moved", m)
        check("v1.1 body" in read(os.path.join(sb.project, ".agentstack", "skills",
                                               "sql-review", "SKILL.md")),
              "the new skill body is installed")
        check(not [f for f in os.listdir(os.path.join(sb.project, ".agentstack", "skills"))
                   if "agentstack-old" in f], "no leftovers from the swap")
        r = sb.run("upgrade", "ghost", "--write")
        check(r.returncode == 1 and "[packs.ghost]" in r.stderr, "unknown pack", r.stderr)


def unchanged(sb, before, what):
    check(read(manifest(sb)) == before and
          not os.path.exists(os.path.join(sb.project, ".agentstack", "skills")) and
          not os.path.exists(os.path.join(sb.project, ".agentstack", "agentstack.lock")),
          f"{what}: nothing half-installed")


def scenario_bad_input():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", BASE)
        before = BASE
        d = make_pack(sb.root)
        r = sb.run("add", "from", f"git:{d}@v9.9.9", "--write")
        check(r.returncode == 1 and "tag 'v9.9.9' does not exist" in r.stderr and
              "v1.0.0" in r.stderr, "missing tag: clear error naming the tags", r.stderr)
        unchanged(sb, before, "missing tag")

        u = make_pack(sb.root, "untagged", tags=())
        r = sb.run("add", "from", f"git:{u}", "--write")
        check(r.returncode == 1 and "no version tags" in r.stderr, "untagged repo", r.stderr)
        unchanged(sb, before, "untagged")

        r = sb.run("add", "from", f"git:{d}", "--write")
        check(r.returncode == 0 and 'version = "v1.0.0"' in read(manifest(sb)),
              "no tag: the newest version tag", r.stdout + r.stderr)
        sb.write(".agentstack/agentstack.toml", BASE)
        import shutil
        shutil.rmtree(os.path.join(sb.project, ".agentstack", "skills"))
        os.remove(os.path.join(sb.project, ".agentstack", "agentstack.lock"))

        r = sb.run("add", "from", f"git:{sb.root}/does-not-exist@v1.0.0", "--write", timeout=120)
        check(r.returncode == 1 and "git clone failed" in r.stderr, "nonexistent repo, no prompt",
              r.stderr)
        unchanged(sb, before, "nonexistent repo")

        cases = [
            ("malformed", 'name = "acme"\n[[skill]\n', "malformed pack.toml"),
            ("unknown", 'name = "acme"\nhomepage = "x"\n', "unknown key 'homepage'"),
            ("hook", 'name = "acme"\n[[hook]]\nname = "h"\n', "may not install hooks"),
            ("query", 'name = "acme"\n[server]\ntype = "http"\n'
                      'url = "https://h/mcp?token=abc"\n', "literal secret"),
            ("arg", 'name = "acme"\n[server]\ntype = "stdio"\ncommand = "x"\n'
                    'args = ["--api-key", "abc"]\n', "literal secret"),
        ]
        for name, toml, want in cases:
            p = make_pack(sb.root, name, toml=toml)
            r = sb.run("add", "from", f"git:{p}@v1.0.0", "--write")
            check(r.returncode == 1 and want in r.stderr, f"{name}: refused", r.stderr)
            unchanged(sb, before, name)

        # hidden unicode in a member (scenario 11)
        p = make_pack(sb.root, "hidden", skill="hi\u200bthere\n")
        r = sb.run("add", "from", f"git:{p}@v1.0.0", "--write")
        check(r.returncode == 1 and "failed the content scan" in r.stderr and
              "nothing installed" in r.stderr, "hidden unicode: nothing installed", r.stderr)
        unchanged(sb, before, "hidden unicode")

        # ordinary paths in a pack's args are no secrets (issue 17: these were refused)
        p = make_pack(sb.root, "paths", toml=(
            'name = "acme"\n[server]\ntype = "stdio"\ncommand = "python3"\n'
            'args = ["/home/dev/MyProjects2024/McpServers/run.py", "/tmp/tmp.Xa81bQ/state",'
            ' "--data=/tmp/tmp.Xa81bQ9zK2/McpServers2024"]\n'))
        r = sb.run("add", "from", f"git:{p}@v1.0.0")
        check(r.returncode == 0 and "Dry run." in r.stdout,
              "a pack whose args are ordinary paths is accepted", r.stdout + r.stderr)
        unchanged(sb, before, "paths preview")

        # a literal secret in a member's files (issue 17: the one detector)
        p = make_pack(sb.root, "skillsecret",
                      skill="Run:\n    export OPENAI_API_KEY=abc123def456ghi789jkl012\n")
        r = sb.run("add", "from", f"git:{p}@v1.0.0", "--write")
        check(r.returncode == 1 and "holds a literal secret" in r.stderr and
              "OPENAI_API_KEY" in r.stderr and "abc123" not in r.stderr and
              "nothing installed" in r.stderr, "a member's literal secret: nothing installed",
              r.stderr)
        unchanged(sb, before, "member secret")

        # a symlinked skills/ in the project could point anywhere: refused
        outside = os.path.join(sb.root, "outside")
        os.makedirs(outside)
        link = os.path.join(sb.project, ".agentstack", "skills")
        os.symlink(outside, link)
        r = sb.run("add", "from", f"git:{d}@v1.0.0", "--write")
        check(r.returncode == 1 and "symlink" in r.stderr and not os.listdir(outside) and
              read(manifest(sb)) == before, "symlinked destination refused, nothing written",
              r.stderr)
        os.remove(link)

        # the pin fails after the files were placed: everything is rolled back
        bad = BASE + '\n[toolsets.t]\nservers = ["ghost"]\n'
        sb.write(".agentstack/agentstack.toml", bad)
        r = sb.run("add", "from", f"git:{d}@v1.0.0", "--write")
        check(r.returncode == 1 and "nothing was installed" in r.stderr, "pin failure refused",
              r.stderr)
        unchanged(sb, bad, "pin failure")

    # scenario 11: allowed_sources mismatch → nothing fetched, store empty
    with Sandbox() as sb:
        d = make_pack(sb.root)
        sb.write(".agentstack/agentstack.toml",
                 BASE.replace("[policy.tools]",
                              '[policy]\nallowed_sources = ["git:github.com/acme/*"]\n\n'
                              '[policy.tools]'))
        r = sb.run("add", "from", f"git:{d}@v1.0.0", "--write")
        check(r.returncode == 1 and "allowed_sources" in r.stderr and
              "nothing fetched" in r.stderr, "allowed_sources refuses", r.stderr)
        store = os.path.join(sb.ah, "store", "git")
        check(not os.path.exists(store) or not os.listdir(store), "the store stays empty")
        # the machine's list counts too
        sb.write(".agentstack/agentstack.toml", BASE)
        write(os.path.join(sb.ah, "agentstack.toml"),
              'version = 1\n[policy]\nallowed_sources = ["git:gitlab.com/*"]\n')
        r = sb.run("add", "from", f"git:{d}@v1.0.0", "--write")
        check(r.returncode == 1 and "the machine's [policy] allowed_sources" in r.stderr,
              "machine allowed_sources refuses", r.stderr)
        # Git:owner/repo means GitHub (refused before any network here)
        r = sb.run("add", "from", "git:acme/pack@v1.0.0", "--write")
        check(r.returncode == 1 and "git:https://github.com/acme/pack" in r.stderr,
              "git:owner/repo is https://github.com/owner/repo", r.stderr)
        r = sb.run("add", "from", "git:http://example.invalid/x.git@v1", "--write")
        check(r.returncode == 1 and "http://" in r.stderr, "plain http refused", r.stderr)


scenario_closed_loop()
scenario_bad_input()
done()
