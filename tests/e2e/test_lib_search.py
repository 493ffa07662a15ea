"""`search [query] [--all] [--json]`: the central library
(every linked source, plain folders without an index too) and the project's
installed packs, matched by name or description; badges, the holding
source, `(in manifest)`; shadowed holders only with --all; descriptions
from repositories reach the terminal sanitized (no ESC, no zero-width).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402


def skill(sb, rel, desc, base):
    sb.write(rel + "/SKILL.md", f"---\ndescription: {desc}\n---\nbody\n", base=base)


def scenario():
    with Sandbox() as sb:
        a = os.path.join(sb.root, "a")
        b = os.path.join(sb.root, "b")
        skill(sb, "skills/sql-review", "Review SQL\x1b[2J queries\u200b", a)
        skill(sb, "skills/sql-review", "B's SQL review", b)
        skill(sb, "skills/pdf", "Read PDFs", b)
        sb.write("servers/kibana.toml", 'type = "http"\nurl = "https://kibana.example/mcp"\n',
                 base=b)
        for d in (a, b):
            r = sb.run("lib", "link", d, "--write")
            check(r.returncode == 0, "link " + os.path.basename(d), r.stdout + r.stderr)
        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n[toolsets.default]\nskills = ["sql-review"]\n'
                 '[packs.acme]\nversion = "v1.0.0"\ndescription = "Docs MCP + SQL helpers"\n'
                 'source = "git:file:///srv/acme@v1.0.0"\n')

        r = sb.run("search", "sql")
        out = r.stdout
        check(r.returncode == 0, "search exits 0", r.stdout + r.stderr)
        check("[skill]" in out and "sql-review" in out and "Review SQL queries" in out,
              "the library skill, its description", out)
        check("\x1b" not in out and "\u200b" not in out, "sanitized", repr(out))
        check("B's SQL review" not in out, "the shadowed holder is hidden", out)
        check("[pack]" in out and "acme" in out and "git:file:///srv/acme@v1.0.0" in out and
              out.count("(in manifest)") == 2, "the installed pack, in manifest marks", out)
        check("kibana" not in out and "pdf" not in out, "non-matches left out", out)
        check("2 results." in out, "count", out)

        r = sb.run("search", "SQL", "--all")
        check("B's SQL review" in r.stdout and "(shadowed)" in r.stdout,
              "--all shows the shadowed holder", r.stdout)

        r = sb.run("search", "kibana.example", "--json")
        j = json.loads(r.stdout)
        check(j["schema_version"] == 1 and j["command"] == "search" and
              [(x["name"], x["kind"], x["source"]) for x in j["results"]] ==
              [("kibana", "server", "b")], "--json: matched by description", r.stdout)

        r = sb.run("search")
        check(r.returncode == 0 and "pdf" in r.stdout and "kibana" in r.stdout and
              "4 results." in r.stdout, "no query lists everything", r.stdout)
        r = sb.run("search", "zzz-nothing")
        check(r.returncode == 0 and "no match" in r.stdout, "no match is not an error",
              r.stdout)
        r = sb.run("search", "a", "b")
        check(r.returncode == 2, "two queries is a usage error", r.stderr)
        r = sb.run("search", "pdf", cwd=sb.root)
        check(r.returncode == 0 and "pdf" in r.stdout and "installed packs" not in r.stdout,
              "outside a project: the library only", r.stdout + r.stderr)


scenario()
done()
