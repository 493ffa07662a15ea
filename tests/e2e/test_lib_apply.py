"""The central library wired into apply (issue 9): a project whose toolset names
central-library items validates, previews and renders them.

- $AGENTSTACK_HOME/lib: a library server and skill named by a toolset are
  accepted by `apply`, pinned by `lock --write`, gated by trust, and
  `apply --write` renders the server into the CLI's config from the pinned
  definition; a library edit re-gates; the content scan (doctor --deep)
  flags hidden Unicode inside a library skill.
- A linked source: qualified `team:name` refs validate, preview, pin, pass
  trust and render under the bare name; an edit there re-gates; the trust
  card's scan reads its skill; a linked source moved ahead of the pinned copy
  is never rendered.
- Bad input: a library definition with an unknown key, two servers a CLI
  would hold under one name, an unknown source — each a clear error, nothing
  written.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

KIBANA = ('type = "http"\nurl = "https://kibana.example/mcp"\n'
          '[headers]\nAuthorization = "Bearer ${KIBANA_TOKEN}"\n')


def mcp(sb):
    p = os.path.join(sb.project, ".mcp.json")
    return json.loads(H.read(p)) if os.path.exists(p) else None


def out(p):
    return p.stdout + p.stderr


def setup(sb):
    H.fake_bin(sb, "claude")
    os.makedirs(os.path.join(sb.project, ".git"))
    return H.env(sb, KIBANA_TOKEN="kt-1")


def scenario_local_library():
    with Sandbox() as sb:
        e = setup(sb)
        skill = sb.write("sql-review/SKILL.md", "---\ndescription: Review SQL\n---\nbody\n",
                         base=sb.root)
        r = H.run(sb, "lib", "add", os.path.dirname(skill), "--write", e=e)
        check(r.returncode == 0, "lib add the skill", out(r))
        k = sb.write("k.toml", KIBANA, base=sb.root)
        r = H.run(sb, "lib", "add-server", "kibana", "--file", k, "--write", e=e)
        check(r.returncode == 0, "lib add-server kibana", out(r))
        H.write_manifest(sb, 'version = 1\ndefault_toolset = "backend"\n\n'
                             '[toolsets.backend]\nservers = ["kibana"]\n'
                             'skills = ["sql-review"]\n')

        r = H.run(sb, "apply", e=e)
        check("unknown server" not in r.stderr and "unknown skill" not in r.stderr and
              "validation error" not in r.stderr,
              "apply accepts toolset names that resolve from the library", out(r))
        check("refusing to render MCP servers" in r.stdout and "kibana" in r.stdout,
              "untrusted: the preview shows the library server and the refusal", out(r))
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "not trusted" in out(r) and mcp(sb) is None,
              "untrusted: apply --write renders nothing", out(r))

        r = H.run(sb, "lock", "--write", e=e)
        check(r.returncode == 0, "lock --write", out(r))
        H.trust(sb, e=e)
        r = H.run(sb, "apply", "--write", e=e)
        doc = mcp(sb)
        srv = (doc or {}).get("mcpServers", {}).get("kibana", {})
        check(r.returncode == 0 and srv.get("url") == "https://kibana.example/mcp",
              "trusted: apply --write renders the library server into .mcp.json", out(r))
        check("Authorization" in json.dumps(srv.get("headers", {})),
              "the definition's header is rendered", doc)
        check("skills are not rendered by apply" in r.stdout,
              "apply says library skills are placed by use, not apply", r.stdout)
        r = H.run(sb, "use", "backend", e=e)
        libskill = os.path.realpath(os.path.join(sb.ah, "lib", "skills", "sql-review"))
        check(f"+ linking skill 'sql-review' → {libskill}" in r.stdout,
              "use previews linking the library skill from the library", out(r))
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 0 and "already in sync" in r.stdout, "idempotent", out(r))
        r = H.run(sb, "apply", "--toolset", "backend", "--write", e=e)
        check(r.returncode == 0 and "already in sync" in r.stdout,
              "--toolset renders the same library server", out(r))

        # an edit in the library drifts the pin: re-gated, nothing rendered
        before = H.read(os.path.join(sb.project, ".mcp.json"))
        srvfile = os.path.join(sb.ah, "lib", "servers", "kibana.toml")
        with open(srvfile, "a") as f:
            f.write("# moved\n")
        srvtext = H.read(srvfile).replace("kibana.example", "evil.example")
        with open(srvfile, "w") as f:
            f.write(srvtext)
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "drifted" in out(r) and
              H.read(os.path.join(sb.project, ".mcp.json")) == before,
              "library drift: apply --write refuses and leaves the config alone", out(r))
        check("evil.example" not in H.read(os.path.join(sb.project, ".mcp.json")),
              "the edited definition never reaches the CLI")

        # content scan: hidden Unicode inside a library skill is flagged
        sk = os.path.join(sb.ah, "lib", "skills", "sql-review", "SKILL.md")
        with open(sk, "w") as f:
            f.write("---\ndescription: Review SQL\n---\nbe\u200b careful\n")
        r = H.run(sb, "doctor", "--deep", e=e)
        check("U+200B" in out(r) and "sql-review" in out(r),
              "doctor --deep flags a zero-width space inside the library skill", out(r))


def scenario_linked_source():
    with Sandbox() as sb:
        e = setup(sb)
        team = os.path.join(sb.root, "team")
        sb.write("skills/review/SKILL.md", "---\ndescription: Team review\n---\nbody\n",
                 base=team)
        sb.write("servers/search.toml", 'type = "stdio"\ncommand = "search-mcp"\n', base=team)
        r = H.run(sb, "lib", "link", team, "--write", e=e)
        check(r.returncode == 0, "lib link team", out(r))
        H.write_manifest(sb, 'version = 1\n\n[toolsets.t]\nservers = ["team:search"]\n'
                             'skills = ["team:review"]\n')
        r = H.run(sb, "apply", e=e)
        check(r.returncode == 0 and "validation error" not in r.stderr and
              "error:" not in r.stderr,
              "qualified team:search / team:review validate", out(r))
        check('"search"' in r.stdout and "search-mcp" in r.stdout,
              "the linked source's server is previewed under its bare name", r.stdout)
        r = H.run(sb, "apply", "--toolset", "t", e=e)
        check(r.returncode == 0 and "search-mcp" in r.stdout, "--toolset previews it too",
              out(r))
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "refusing to render" in out(r) and mcp(sb) is None,
              "untrusted: nothing written", out(r))

        r = H.run(sb, "lock", "--write", e=e)
        check(r.returncode == 0, "lock --write pins the linked source's items", out(r))
        H.trust(sb, e=e)
        r = H.run(sb, "apply", "--write", e=e)
        srv = ((mcp(sb) or {}).get("mcpServers") or {}).get("search", {})
        check(r.returncode == 0 and srv.get("command") == "search-mcp",
              "trusted: apply --write renders team:search as 'search'", out(r))
        with open(os.path.join(team, "servers", "search.toml"), "a") as f:
            f.write('args = ["--exfil"]\n')
        before = H.read(os.path.join(sb.project, ".mcp.json"))
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "drifted" in out(r) and
              H.read(os.path.join(sb.project, ".mcp.json")) == before,
              "an edit in the linked source re-gates: nothing rendered", out(r))

        # the content scan reads the linked source's skill where lock pins it
        with open(os.path.join(team, "skills", "review", "SKILL.md"), "w") as f:
            f.write("---\ndescription: Team review\n---\nbe\u200b careful\n")
        r = H.run(sb, "trust", "--preview", e=e)
        scan = json.loads(r.stdout).get("scan") or {}
        hits = [x for x in scan.get("findings", []) if x.get("code_point") == "U+200B"]
        check(scan.get("blocking") and hits and
              hits[0]["file"].endswith("team/skills/review/SKILL.md"),
              "the trust card's scan flags a zero-width space in the linked source's skill",
              r.stdout)

        # an unknown source is a validation error naming it
        H.write_manifest(sb, 'version = 1\n\n[toolsets.t]\nservers = ["ghost:search"]\n')
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "ghost:search" in r.stderr and
              "source 'ghost'" in r.stderr and
              H.read(os.path.join(sb.project, ".mcp.json")) == before,
              "an unlinked source is refused with its name", out(r))
        H.write_manifest(sb, 'version = 1\n\n[toolsets.t]\nskills = ["ghost:review"]\n')
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "ghost:review" in r.stderr and
              "does not resolve" in r.stderr, "an unknown qualified skill is refused", out(r))


def scenario_shadowing_source():
    """A pinned local server, then a linked source put first that holds a
    different one under the same name: the render must not switch to the
    unpinned bytes."""
    with Sandbox() as sb:
        e = setup(sb)
        k = sb.write("k.toml", KIBANA, base=sb.root)
        r = H.run(sb, "lib", "add-server", "kibana", "--file", k, "--write", e=e)
        check(r.returncode == 0, "local kibana", out(r))
        H.write_manifest(sb, 'version = 1\n\n[toolsets.t]\nservers = ["kibana"]\n')
        check(H.run(sb, "lock", "--write", e=e).returncode == 0, "lock")
        H.trust(sb, e=e)
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 0 and "kibana.example" in H.read(
            os.path.join(sb.project, ".mcp.json")), "the pinned local kibana is rendered",
            out(r))
        before = H.read(os.path.join(sb.project, ".mcp.json"))
        team = os.path.join(sb.root, "team")
        sb.write("servers/kibana.toml", 'type = "http"\nurl = "https://other.example/mcp"\n',
                 base=team)
        r = H.run(sb, "lib", "link", team, "--first", "--write", e=e)
        check(r.returncode == 0, "link team first (shadows local kibana)", out(r))
        r = H.run(sb, "apply", "--write", e=e)
        after = H.read(os.path.join(sb.project, ".mcp.json"))
        check(r.returncode == 1 and after == before and "other.example" not in after,
              "the shadowing definition is refused (it is not what lock pinned)", out(r))
        check("agentstack lock --write" in out(r), "the refusal says how to re-pin", out(r))


def scenario_bad_definitions():
    with Sandbox() as sb:
        e = setup(sb)
        sb.write("lib/servers/bad.toml", 'type = "stdio"\ncomand = "x"\n', base=sb.ah)
        H.write_manifest(sb, 'version = 1\n\n[toolsets.t]\nservers = ["bad"]\n')
        check(H.run(sb, "lock", "--write", e=e).returncode == 0, "a bad definition still pins")
        H.trust(sb, e=e)
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "library server 'bad'" in r.stderr and
              "comand" in r.stderr and "bad.toml" in r.stderr and mcp(sb) is None,
              "an unknown key in a library definition: clear error, nothing written",
              out(r))

        sb.write("lib/servers/kibana.toml", KIBANA, base=sb.ah)
        team = os.path.join(sb.root, "team")
        sb.write("servers/kibana.toml", 'type = "http"\nurl = "https://t.example/mcp"\n',
                 base=team)
        check(H.run(sb, "lib", "link", team, "--write", e=e).returncode == 0, "link team")
        H.write_manifest(sb, 'version = 1\n\n[toolsets.a]\nservers = ["kibana"]\n\n'
                             '[toolsets.b]\nservers = ["team:kibana"]\n')
        r = H.run(sb, "apply", e=e)
        check(r.returncode == 1 and "would both be written as 'kibana'" in r.stderr,
              "two toolsets naming two different 'kibana's: refused, not one hiding the other",
              out(r))
        H.write_manifest(sb, 'version = 1\n\n[toolsets.a]\n'
                             'servers = ["kibana", "team:kibana"]\n')
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 1 and "names server 'kibana' twice" in r.stderr and
              mcp(sb) is None, "one toolset naming both: a validation error", out(r))


scenario_local_library()
scenario_linked_source()
scenario_shadowing_source()
scenario_bad_definitions()
done()
