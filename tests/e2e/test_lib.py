"""The central library (docs/library.md).

Skills and server definitions added to the library, named by a project's
toolset and pinned by `lock --write`; linked sources read first to last
(collisions shown, never silent); remove + trash restore; strict indexes.
Every case runs the real binary with a temporary HOME/AGENTSTACK_HOME.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402


def read(p):
    with open(p) as f:
        return f.read()


def skill(sb, rel, desc, base):
    sb.write(os.path.join(rel, "SKILL.md"), f"---\ndescription: {desc}\n---\nbody\n", base=base)


def scenario_add_and_pin():
    with Sandbox() as sb:
        r = sb.run("lib", "list")
        check(r.returncode == 0 and "library is empty" in r.stdout, "empty library says so",
              r.stdout + r.stderr)
        skill(sb, "sql-review", "Review SQL for safety", sb.root)
        src = os.path.join(sb.root, "sql-review")
        r = sb.run("lib", "add", src)
        check(r.returncode == 0 and "Dry run." in r.stdout, "lib add previews", r.stdout)
        check(not os.path.exists(os.path.join(sb.ah, "lib")), "preview writes nothing")
        r = sb.run("lib", "add", src, "--write")
        check(r.returncode == 0 and
              "✓ added 'sql-review' (path) in the central library" in r.stdout,
              "lib add --write", r.stdout + r.stderr)
        idx = os.path.join(sb.ah, "lib", "library.toml")
        check(os.path.isfile(idx) and 'name = "sql-review"' in read(idx), "indexed")
        r = sb.run("lib", "add", src, "--write")
        check(r.returncode == 1 and "--replace" in r.stderr, "same name needs --replace",
              r.stderr)
        r = sb.run("lib", "add", src, "--replace", "--write")
        check(r.returncode == 0 and "trash" in r.stdout, "--replace trashes the old copy",
              r.stdout + r.stderr)

        # a server definition with a ${REF} header (scenario 1)
        k = sb.write("k.toml", 'type = "http"\nurl = "https://kibana.example/mcp"\n'
                     '[headers]\nAuthorization = "Bearer ${KIBANA_TOKEN}"\n', base=sb.root)
        r = sb.run("lib", "add-server", "kibana", "--file", k, "--write")
        check(r.returncode == 0 and "✓ added server 'kibana'" in r.stdout, "add-server",
              r.stdout + r.stderr)
        check("literal" not in r.stderr, "a ${REF} header raises no warning", r.stderr)
        bad = sb.write("b.toml", 'type = "http"\n', base=sb.root)
        r = sb.run("lib", "add-server", "broken", "--file", bad, "--write")
        check(r.returncode == 1 and "url" in r.stderr, "an invalid definition is refused",
              r.stderr)
        leak = sb.write("l.toml", 'type = "http"\nurl = "https://h/mcp"\n'
                        '[headers]\nAuthorization = "Bearer sk-1"\n', base=sb.root)
        r = sb.run("lib", "add-server", "leaky", "--file", leak, "--write")
        check(r.returncode == 0 and "lib sync will refuse it" in r.stderr,
              "a literal secret only warns at add-server", r.stderr)

        r = sb.run("lib", "list")
        check("Skills" in r.stdout and "sql-review" in r.stdout and
              "Review SQL for safety" in r.stdout and "Servers" in r.stdout and
              "http: https://kibana.example/mcp" in r.stdout, "lib list tables", r.stdout)

        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n\n[toolsets.backend]\nservers = ["kibana"]\n'
                 'skills = ["sql-review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "lock --write pins library items", r.stdout + r.stderr)
        lock = read(os.path.join(sb.project, ".agentstack", "agentstack.lock"))
        check('name = "kibana"\nsource = "library"' in lock and
              'name = "sql-review"' in lock, "library server and skill pinned", lock)
        check("KIBANA_TOKEN" not in lock and "Bearer" not in lock,
              "the lock holds the definition digest only", lock)
        # library drift is caught
        skill(sb, "lib/skills/sql-review", "changed", sb.ah)
        r = sb.run("lock")
        check("skill sql-review" in r.stdout and "→" in r.stdout,
              "an edited library skill moves its pin", r.stdout)


def scenario_sources():
    with Sandbox() as sb:
        a = os.path.join(sb.root, "a")
        b = os.path.join(sb.root, "b")
        skill(sb, "skills/review", "A review", a)
        skill(sb, "skills/review", "B review", b)
        r = sb.run("lib", "link", a)
        check(r.returncode == 0 and "Dry run." in r.stdout and
              not os.path.exists(os.path.join(sb.ah, "sources.toml")),
              "lib link previews", r.stdout + r.stderr)
        r = sb.run("lib", "link", a, "--write")
        check(r.returncode == 0 and "✓ linked 'a'" in r.stdout, "link a", r.stdout + r.stderr)
        r = sb.run("lib", "link", b, "--note", "team library", "--write")
        check(r.returncode == 0, "link b", r.stderr)
        r = sb.run("lib", "link", a, "--name", "again", "--write")
        check(r.returncode == 1 and "is already linked as 'a'" in r.stderr,
              "a folder links once", r.stderr)
        r = sb.run("lib", "sources")
        out = r.stdout
        check("Library sources (first match wins)" in out and "1. local" in out and
              "2. a" in out and "3. b" in out and "note: team library" in out,
              "lib sources lists in order", out)
        check("review skill  a used · b shadowed ↳ b:review" in out,
              "the collision is shown with the pin to use", out)
        r = sb.run("lib", "list")
        check("Shadowed names" in r.stdout and "b:review" in r.stdout and
              "A review" in r.stdout and "B review" not in r.stdout,
              "lib list shows the winner and the shadowed name", r.stdout)
        r = sb.run("lib", "sources", "--json")
        check('"shadowed"' in r.stdout and '"used": "a"' in r.stdout, "sources --json",
              r.stdout)
        r = sb.run("lib", "reorder", "b", "a", "local", "--write")
        check(r.returncode == 0, "reorder", r.stderr)
        r = sb.run("lib", "sources")
        check("review skill  b used · a shadowed ↳ a:review" in r.stdout,
              "the order decides the winner", r.stdout)
        r = sb.run("lib", "reorder", "b", "a", "--write")
        check(r.returncode == 1 and "exactly once" in r.stderr, "reorder needs every name",
              r.stderr)
        # two rows of one name in one index: a clear load error naming file and name
        sb.write("library.toml", 'version = 1\n[[skill]]\nname = "review"\n'
                 '[[skill]]\nname = "review"\n', base=b)
        r = sb.run("lib", "sources")
        check("library.toml" in r.stderr and "two [[skill]] rows named 'review'" in r.stderr,
              "duplicate rows are refused with file and name", r.stderr)
        check("(index unusable — skipped)" in r.stdout, "that source is skipped", r.stdout)
        for n in ("b", "a"):
            r = sb.run("lib", "unlink", n, "--write")
            check(r.returncode == 0, f"unlink {n}", r.stderr)
        r = sb.run("lib", "unlink", "local", "--write")
        check(r.returncode == 1 and "last library source" in r.stderr, "the last stays",
              r.stderr)
        check(os.path.isdir(a), "unlink leaves the folder")
        r = sb.run("lib", "link", os.path.join(sb.root, "Missing"), "--write")
        check(r.returncode == 0 and "folder not found" in r.stdout,
              "a missing folder may be linked", r.stdout + r.stderr)


def scenario_trash():
    with Sandbox() as sb:
        skill(sb, "pdf", "PDF tools", sb.root)
        sb.run("lib", "add", os.path.join(sb.root, "pdf"), "--write")
        r = sb.run("lib", "remove", "pdf")
        check(r.returncode == 0 and "Dry run." in r.stdout and
              os.path.isdir(os.path.join(sb.ah, "lib", "skills", "pdf")),
              "remove previews", r.stdout)
        r = sb.run("lib", "remove", "pdf", "--write")
        undo = [ln for ln in r.stdout.splitlines() if ln.startswith("undo: ")]
        check(r.returncode == 0 and undo and "lib trash --restore" in undo[0],
              "remove prints the undo command", r.stdout + r.stderr)
        check(not os.path.exists(os.path.join(sb.ah, "lib", "skills", "pdf")) and
              'name = "pdf"' not in read(os.path.join(sb.ah, "lib", "library.toml")),
              "body and row are gone")
        r = sb.run("lib", "trash")
        check("skill 'pdf'" in r.stdout, "trash lists it", r.stdout)
        tid = undo[0].split("--restore ")[1].split()[0] if undo else "x"
        r = sb.run("lib", "trash", "--restore", tid, "--write")
        check(r.returncode == 0 and
              os.path.isfile(os.path.join(sb.ah, "lib", "skills", "pdf", "SKILL.md")) and
              'name = "pdf"' in read(os.path.join(sb.ah, "lib", "library.toml")),
              "restore brings row and body back", r.stdout + r.stderr)
        r = sb.run("lib", "trash")
        check("trash is empty" in r.stdout, "the trash is empty again", r.stdout)
        r = sb.run("lib", "remove", "ghost", "--write")
        check(r.returncode == 1 and "no skill 'ghost'" in r.stderr, "unknown name", r.stderr)


def scenario_misc():
    with Sandbox() as sb:
        d = os.path.join(sb.root, "packsrc")
        os.makedirs(d)
        r = sb.run("lib", "pack-init", "acme", cwd=d)
        check(r.returncode == 0 and os.path.isfile(os.path.join(d, "pack.toml")) and
              os.path.isfile(os.path.join(d, "skills", "starter", "SKILL.md")),
              "pack-init scaffolds", r.stdout + r.stderr)
        r = sb.run("lib", "pack-init", "acme", cwd=d)
        check(r.returncode == 1 and "already exists" in r.stderr, "pack-init refuses twice",
              r.stderr)
        r = sb.run("lib", "new", "Bad Name", cwd=d)
        check(r.returncode == 1, "lib new checks the name", r.stderr)
        r = sb.run("lib", "nope")
        check(r.returncode == 2, "unknown lib subcommand is a usage error", r.stderr)
        # a symlink in a skill is refused before anything is copied
        skill(sb, "linky", "x", sb.root)
        os.symlink("/etc/passwd", os.path.join(sb.root, "linky", "pw"))
        r = sb.run("lib", "add", os.path.join(sb.root, "linky"), "--write")
        check(r.returncode == 1 and "symlink" in r.stderr and
              not os.path.exists(os.path.join(sb.ah, "lib", "skills", "linky")),
              "symlinked skill refused", r.stderr)
        # hidden unicode blocks without --allow-flagged
        sb.write("hidden/SKILL.md", "---\ndescription: x\n---\nhi\u200bthere\n", base=sb.root)
        r = sb.run("lib", "add", os.path.join(sb.root, "hidden"), "--write")
        check(r.returncode == 1 and "content scan" in r.stderr, "hidden unicode blocks",
              r.stderr)
        # scenario 13: [skills.x] with no source is a validation error, not a fallback
        skill(sb, "lib/skills/review", "r", sb.ah)
        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n[skills.review]\n[toolsets.t]\nskills = ["review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 1, "an empty [skills.review] is refused", r.stderr)


scenario_add_and_pin()
scenario_sources()
scenario_trash()
scenario_misc()
done()
