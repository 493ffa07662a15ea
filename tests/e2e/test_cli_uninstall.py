"""`uninstall` (docs/adapters.md, "Uninstall and unrender"): a preview that
changes nothing; --write reverts every region the ledger lists (project and
global servers, the instruction region, skill links, the gateway entry, the
.gitignore block), prunes what that empties, keeps every entry and byte we did
not write and every manifest, works with no manifest in sight, is undoable
with --keep-home, and deletes $AGENTSTACK_HOME otherwise — never $HOME, never
through a symlink."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

# One server, skill and instruction rendered by the project, one server by the
# machine manifest (apply_helpers.py).
# Both render locally, so the CLIs hold the rendered servers and the gateway
# at once (without it, connect takes the rendered entries out: one delivery
# per server, test_connect_oneway.py) and uninstall has both to take back.
LOCAL = "\n[delivery]\nrender_locally = true\n"
MANIFEST = H.ONE_OF_EACH_MANIFEST + LOCAL
MACHINE = H.ONE_SERVER_MACHINE + LOCAL


def snapshot(*roots):
    """Every path under roots with its bytes (or link target)."""
    out = {}
    for root in roots:
        for d, dirs, files in os.walk(root):
            for n in dirs + files:
                p = os.path.join(d, n)
                if os.path.islink(p):
                    out[p] = "-> " + os.readlink(p)
                elif os.path.isfile(p):
                    with open(p, "rb") as f:
                        out[p] = f.read()
                else:
                    out[p] = "dir"
    return out


with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "codex")
    P = sb.project
    os.makedirs(os.path.join(P, ".git"))
    sb.write(".agentstack/skills/notes/SKILL.md", "---\ndescription: notes\n---\n")
    sb.write(".agentstack/instr/style.md", "Use tabs.\n")
    manifest = H.write_manifest(sb, MANIFEST)
    sb.write(".mcp.json", '{"mcpServers": {"mine": {"command": "mine"}}}\n')
    sb.write("CLAUDE.md", "My own notes.\n")
    sb.write(".claude/skills/own/SKILL.md", "mine\n")
    sb.write("agentstack.toml", MACHINE, base=sb.ah)
    sb.write(".claude.json", '{"mcpServers": {"theirs": {"command": "t"}}, "other": 1}\n',
             base=sb.home)
    check(H.run(sb, "lock", "--write").returncode == 0, "lock")
    H.trust(sb)
    w = H.run(sb, "use", "--write")
    check(w.returncode == 0, "use --write", w.stdout + w.stderr)
    g = H.run(sb, "apply", "--write", cwd=sb.home)
    check(g.returncode == 0 and "Scope: global" in g.stdout, "global apply", g.stdout + g.stderr)
    c = H.run(sb, "connect", "--write", cwd=sb.home)
    check(c.returncode == 0, "connect --write", c.stdout + c.stderr)
    user = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
    check(set(user["mcpServers"]) == {"theirs", "g", "agentstack"}, "set up globally", user)
    check(os.path.islink(os.path.join(P, ".claude", "skills", "notes")), "skill linked")
    check("agentstack:start" in H.read(os.path.join(P, "CLAUDE.md")), "region written")
    manifest_bytes = H.read(manifest)

    # Help and inventory list it.
    hp = H.run(sb, "help", "--all")
    check("uninstall" in hp.stdout, "help --all lists uninstall", hp.stdout)

    # Preview: nothing changes, from a directory with no manifest at all.
    before = snapshot(sb.home, P)
    pv = H.run(sb, "uninstall", cwd=sb.root)
    out = pv.stdout
    check(pv.returncode == 0, "preview exits 0", out + pv.stderr)
    check("would REMOVE 'a'" in out and "would REMOVE 'g'" in out and
          "would remove the gateway" in out and "unlinking skill 'notes'" in out and
          "would remove the agentstack block from .gitignore" in out and
          "removal of the managed region" in out,
          "preview names every removal", out)
    check("would delete " + sb.ah in out, "preview names the home it would delete", out)
    check(out.rstrip().splitlines()[-1].startswith("Dry run."), "preview footer", out)
    check(snapshot(sb.home, P) == before, "preview writes nothing")
    check("mine" not in out and "theirs" not in out, "foreign entries are not planned", out)

    # --write --keep-home, still without a manifest in sight.
    un = H.run(sb, "uninstall", "--write", "--keep-home", cwd=sb.root)
    out = un.stdout
    check(un.returncode == 0, "uninstall --write --keep-home", out + un.stderr)
    mcp = json.loads(H.read(os.path.join(P, ".mcp.json")))
    check(mcp == {"mcpServers": {"mine": {"command": "mine"}}}, "only our server left .mcp.json",
          mcp)
    user = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
    check(user == {"mcpServers": {"theirs": {"command": "t"}}, "other": 1},
          "global file: ours and the gateway gone, theirs kept byte-equal in meaning", user)
    check(H.read(os.path.join(P, "CLAUDE.md")) == "My own notes.\n",
          "the user's text around our region is back as it was")
    for gone in ("AGENTS.md", ".codex", ".agents", ".gitignore", ".claude/skills/notes"):
        check(not os.path.lexists(os.path.join(P, gone)), f"{gone} pruned (it held only ours)")
    check(H.read(os.path.join(P, ".claude", "skills", "own", "SKILL.md")) == "mine\n",
          "a user's own skill directory stays")
    check(H.read(manifest) == manifest_bytes, "the project manifest is untouched")
    check(os.path.isdir(sb.ah) and os.path.exists(os.path.join(sb.ah, "agentstack.toml")),
          "--keep-home keeps the home and the machine manifest")
    check("undo: agentstack undo" in out, "names the undo", out)

    again = H.run(sb, "uninstall", "--write", "--keep-home", cwd=sb.root)
    check(again.returncode == 0 and "✓ nothing to uninstall" in again.stdout,
          "a second run has nothing left", again.stdout + again.stderr)

    # Undoable: the timeline lists the uninstall writes; going back restores them.
    tl = H.run(sb, "undo", "--json")
    rows = json.loads(tl.stdout)
    rows = rows.get("entries", rows) if isinstance(rows, dict) else rows
    ops = [r.get("operation") for r in rows]
    check(ops.count("uninstall") >= 2, "the uninstall writes are in the undo timeline", ops)
    first = min(i + 1 for i, r in enumerate(rows) if r.get("operation") == "uninstall")
    ur = H.run(sb, "undo", "--to", str(first), "--write")
    check(ur.returncode == 0, "undo --to the uninstall", ur.stdout + ur.stderr)
    check("a" in json.loads(H.read(os.path.join(P, ".mcp.json")))["mcpServers"] and
          "agentstack:start" in H.read(os.path.join(P, "CLAUDE.md")) and
          os.path.exists(os.path.join(P, ".gitignore")),
          "undo puts the uninstalled files back")

    # Full uninstall: the home goes; a symlink inside it is removed, not followed.
    outside = os.path.join(sb.root, "outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "keep.txt"), "w") as f:
        f.write("keep\n")
    os.symlink(outside, os.path.join(sb.ah, "link-out"))
    full = H.run(sb, "uninstall", "--write", cwd=sb.root)
    check(full.returncode == 0, "uninstall --write", full.stdout + full.stderr)
    check(not os.path.exists(sb.ah), "$AGENTSTACK_HOME deleted")
    check(H.read(os.path.join(outside, "keep.txt")) == "keep\n",
          "a symlink inside the home is not followed")
    check("− deleted " + sb.ah in full.stdout, "says it deleted the home", full.stdout)
    check(H.read(manifest) == manifest_bytes and
          json.loads(H.read(os.path.join(P, ".mcp.json"))) ==
          {"mcpServers": {"mine": {"command": "mine"}}},
          "project manifest kept, project files reverted")

    nothing = H.run(sb, "uninstall", cwd=sb.root)
    check(nothing.returncode == 0 and not os.path.exists(sb.ah),
          "with no home: exit 0, nothing created", nothing.stdout + nothing.stderr)

    # Attack: AGENTSTACK_HOME pointed at $HOME must never delete it.
    e = H.env(sb, AGENTSTACK_HOME=sb.home)
    bad = H.run(sb, "uninstall", "--write", e=e, cwd=sb.root)
    check(bad.returncode == 1 and "holds your home directory" in bad.stderr,
          "refuses to delete $HOME", bad.stdout + bad.stderr)
    check(os.path.exists(os.path.join(sb.home, ".claude.json")), "$HOME intact")

    u = H.run(sb, "uninstall", "--scope", "everything")
    check(u.returncode == 2, "a bad --scope is a usage error", u.stderr)

# A project deleted since it was rendered: reported, nothing recreated.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, 'version = 1\n[servers.a]\ntype = "stdio"\ncommand = "a-mcp"\n')
    check(H.run(sb, "lock", "--write").returncode == 0, "lock (gone project)")
    H.trust(sb)
    check(H.run(sb, "apply", "--write").returncode == 0, "apply (gone project)")
    import shutil
    shutil.rmtree(sb.project)
    g = H.run(sb, "uninstall", "--write", cwd=sb.root)
    check(g.returncode == 0 and "no longer on disk" in g.stdout,
          "a vanished project is reported", g.stdout + g.stderr)
    check(not os.path.exists(sb.project), "and not recreated")

# Fail closed: an unreadable ledger stops the run before anything is
# removed, and the home (with whatever could still undo) stays.
with Sandbox() as sb:
    sb.write("state.json", "{not json", base=sb.ah)
    sb.write(".claude.json", '{"mcpServers": {"x": {"command": "x"}}}\n', base=sb.home)
    bad = H.run(sb, "uninstall", "--write", cwd=sb.root)
    check(bad.returncode == 1 and bad.stderr.startswith("error: "),
          "a corrupt ledger: exit 1 with one error", bad.stdout + bad.stderr)
    check(os.path.exists(os.path.join(sb.ah, "state.json")), "the home is not deleted")
    check(H.read(os.path.join(sb.home, ".claude.json")) ==
          '{"mcpServers": {"x": {"command": "x"}}}\n', "no file touched")

done()
