"""apply → the 17 golden files (docs/adapters.md), idempotency,
dry-run masking and byte-for-byte restore."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

with Sandbox() as sb:
    H.write_manifest(sb, H.SPEC_MANIFEST)
    e = H.env(sb)
    before_home = H.tree(sb.home)

    # Untrusted: the preview shows what would change, --write refuses.
    p = H.run(sb, "apply", "--scope", "global", "--write")
    check(p.returncode == 1, "untrusted project: apply --write exits 1", p.stdout + p.stderr)
    check("refusing to render MCP servers: project at" in p.stdout + p.stderr
          and "is not trusted" in p.stdout + p.stderr, "untrusted: the refusal is spoken",
          p.stdout + p.stderr)
    check(not os.path.exists(os.path.join(sb.home, ".claude.json")),
          "untrusted: no server bytes written")

    H.trust(sb)
    dry = H.run(sb, "apply", "--scope", "global", "-v")
    check(dry.returncode == 0, "dry run exits 0", dry.stderr)
    check("k1" not in dry.stdout and "t1\"" not in dry.stdout,
          "dry run never shows a resolved secret value", dry.stdout)
    check("${DOCS_KEY}" in dry.stdout and "${NOTES_TOKEN}" in dry.stdout,
          "dry run shows the ${REF} instead", dry.stdout)
    check("17 targets would change. Re-run with --write to write." in dry.stdout,
          "dry run closing line", dry.stdout[-400:])
    check(not os.path.exists(os.path.join(sb.home, ".claude.json")), "dry run writes nothing")

    w = H.run(sb, "apply", "--scope", "global", "--write")
    check(w.returncode == 0, "apply --scope global --write exits 0", w.stdout + w.stderr)
    for adapter, rel in H.USER_FILES.items():
        path = os.path.join(sb.home, rel)
        got = H.read(path) if os.path.exists(path) else None
        check(got == H.golden(adapter), f"{adapter}: file equals the golden rendering",
              f"--- got\n{got}\n--- want\n{H.golden(adapter)}")
        if got is not None:
            mode = os.stat(path).st_mode & 0o777
            check(mode == 0o600, f"{adapter}: new secret-bearing config created 0600",
                  oct(mode))
    check("↳ skipping 'docs' — Claude Desktop can't represent this server's transport (add it "
          "via the harness's own UI/connector)" in w.stdout, "claude-desktop skip line",
          w.stdout)
    check("✓ wrote 2 servers" in w.stdout and "✓ wrote 1 server\n" in w.stdout,
          "per-target write lines", w.stdout)
    check("undo: agentstack restore --last --write" in w.stdout, "undo hint", w.stdout)
    check("k1" not in w.stdout, "write output masks secrets too", w.stdout)

    # A second write is a no-op everywhere, down to backups and history.
    snap = H.tree(sb.home)
    w2 = H.run(sb, "apply", "--scope", "global", "--write")
    check(w2.returncode == 0, "second apply --write exits 0", w2.stdout + w2.stderr)
    check(w2.stdout.count("✓ up to date") == 17, "every target up to date", w2.stdout)
    check("17 targets already in sync — nothing to change." in w2.stdout,
          "idempotency closing line", w2.stdout)
    check(H.tree(sb.home) == snap, "no file, backup, ledger or history change on a no-op")
    d2 = H.run(sb, "apply", "--scope", "global")
    check("✓ nothing to write — every target in sync" in d2.stdout,
          "no-op preview prints the documented line", d2.stdout)

    # `restore --last --write` removes what we created, dirs included.
    lst = H.run(sb, "restore")
    check("apply" in lst.stdout and "wrote 17 targets" in lst.stdout, "restore lists the write",
          lst.stdout)
    prev = H.run(sb, "restore", "--last")
    check(prev.stdout.count("✗ ") == 17 and "delete ~/.claude.json" in prev.stdout,
          "restore preview names each file", prev.stdout)
    check(os.path.exists(os.path.join(sb.home, ".claude.json")), "restore preview writes nothing")
    r = H.run(sb, "restore", "--last", "--write")
    check(r.returncode == 0 and "✓ undone" in r.stdout, "restore --last --write", r.stdout + r.stderr)
    after = {k: v for k, v in H.tree(sb.home).items() if not k.startswith(".agentstack")}
    check(after == {k: v for k, v in before_home.items() if not k.startswith(".agentstack")},
          "HOME is back to exactly what it was (files and created dirs)",
          sorted(set(after) ^ set(before_home)))
    again = H.run(sb, "restore", "--last", "--write")
    check("nothing to undo — no recorded write that isn't already undone" in again.stdout,
          "nothing left to undo", again.stdout)

# Restore returns pre-existing user files byte for byte.
with Sandbox() as sb:
    H.write_manifest(sb, H.SPEC_MANIFEST)
    H.trust(sb)
    original = ('{"numStartups": 7, "tipsHistory": {"a": 0.9402052562189797},\n'
                ' "mcpServers": {"mine": {"command": "my-mcp"}}}')
    cpath = os.path.join(sb.home, ".claude.json")
    with open(cpath, "w") as f:
        f.write(original)
    os.chmod(cpath, 0o640)
    w = H.run(sb, "apply", "--scope", "global", "--target", "claude-code", "--write")
    check(w.returncode == 0, "apply onto an existing ~/.claude.json", w.stdout + w.stderr)
    check(os.stat(cpath).st_mode & 0o777 == 0o640, "existing mode kept")
    r = H.run(sb, "restore", "--last", "--write")
    check(H.read(cpath) == original, "restore puts the original bytes back", H.read(cpath))
    bk = H.run(sb, "restore")
    check("claude-code" in bk.stdout, "the adapter's rolling backup is listed", bk.stdout)

done()
