"""`agentstack yes` (docs/commands.md, "yes"): dropped skills and
instructions declared, pinned, reviewed once and rendered — and no way
around the trust gate.

1. Without a terminal it refuses before writing anything (the manifest's
   bytes, no lock, no grant) and names the explicit commands.
2. The attack: an agent at a terminal of its own (a coding-agent marker in
   the environment, no person's override) runs `yes`: refused, nothing
   written. `yes --yes` / `--consented` do not exist (exit 2).
3. At a terminal, answering no: the card was shown (it names the dropped
   skill and instruction), nothing is trusted, and the manifest and lock are
   back byte for byte; the dropped files stay where they were.
4. Answering yes: the skill and instruction are declared (the skill in the
   default toolset), pinned, trusted, and rendered — the skill linked into
   Claude Code's skills folder, the instruction in CLAUDE.md.
5. Run again with nothing waiting: no question, nothing changes, exit 0.
"""
import json
import os
import select
import subprocess

from aslib import BIN, Sandbox, check, done

MANIFEST = 'version = 1\n\n[toolsets.main]\nservers = []\nskills = []\n'
SKILL = "---\ndescription: review pdf files\n---\nRead every page.\n"


def on_terminal(sb, answer, env=None):
    """Runs `yes` on a pseudo-terminal, answering the first [y/N] question."""
    m, s = os.openpty()
    p = subprocess.Popen([BIN, "yes"], stdin=s, stdout=s, stderr=s, cwd=sb.project,
                         env=env or sb.env())
    os.close(s)
    out, asked = b"", False
    while True:
        r, _, _ = select.select([m], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(m, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not asked and b"[y/N]" in out:
            os.write(m, answer + b"\n")
            asked = True
    p.wait(timeout=60)
    os.close(m)
    return p.returncode, out.decode(errors="replace"), asked


def read(path):
    with open(path, "rb") as f:
        return f.read()


def trusted(sb):
    p = os.path.join(sb.ah, "trust.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f).get("trusted", {})


with Sandbox() as sb:
    os.makedirs(os.path.join(sb.home, ".claude"))
    mf = sb.write(".agentstack/agentstack.toml", MANIFEST)
    skill = sb.write(".agentstack/skills/pdf-review/SKILL.md", SKILL)
    rule = sb.write(".agentstack/instructions/house.md", "Indent with tabs.\n")
    lock = os.path.join(sb.project, ".agentstack", "agentstack.lock")
    before = read(mf)

    # 1. no terminal
    r = subprocess.run([BIN, "yes"], cwd=sb.project, env=sb.env(), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "stdin is not a terminal" in r.stderr and
          "agentstack trust . --yes --consented <surface_digest>" in r.stderr and
          "agentstack lock --write" in r.stderr, "no terminal: refused, the explicit path named",
          r.stdout + r.stderr)
    check(read(mf) == before and not os.path.exists(lock) and not trusted(sb),
          "no terminal: nothing written (manifest bytes, no lock, no grant)")

    # 2. an agent at a terminal of its own; no non-interactive form
    agent = sb.env(CLAUDECODE="1")
    agent.pop("AGENTSTACK_CONSENT_BY_PERSON")
    rc, out, asked = on_terminal(sb, b"y", env=agent)
    check(rc == 1 and "refusing to say yes" in out and "agent" in out and not asked,
          "an agent's yes at a terminal: refused before any question", out)
    check(read(mf) == before and not os.path.exists(lock) and not trusted(sb),
          "an agent's yes: nothing written")
    for flag in ("--yes", "-y", "--consented=sha256:00"):
        r = subprocess.run([BIN, "yes", flag], cwd=sb.project, env=sb.env(),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "unknown option" in r.stderr,
              f"yes {flag}: no such option (exit 2)", r.stderr)

    # 3. declining
    rc, out, asked = on_terminal(sb, b"n")
    card = out.split("[y/N]")[0]
    check(asked and "pdf-review" in card and "house" in card,
          "the card before the question names the dropped skill and instruction", out)
    check(rc == 1 and "dropped files stay on disk" in out, "declined: exit 1, said so", out)
    check(read(mf) == before, "declined: the manifest is back byte for byte",
          read(mf).decode())
    check(not os.path.exists(lock) and not trusted(sb), "declined: no lock, no grant")
    check(read(skill).decode() == SKILL and os.path.exists(rule),
          "declined: the dropped files are where they were")

    # 4. saying yes
    rc, out, asked = on_terminal(sb, b"y")
    check(asked and rc == 0, "yes: exit 0 after the one question", out)
    check(out.count("[y/N]") == 1, "one question, not one per step", out)
    text = read(mf).decode()
    check('[skills.pdf-review]\npath = "./skills/pdf-review"' in text and
          '[instructions.house]\npath = "./instructions/house.md"' in text and
          'skills = ["pdf-review"]' in text,
          "declared: the skill (in toolset main) and the instruction", text)
    check(text.startswith(MANIFEST.split("skills = []")[0]),
          "the rest of the manifest kept as written", text)
    check(os.path.exists(lock) and "pdf-review" in read(lock).decode() and
          "house" in read(lock).decode(), "pinned in agentstack.lock")
    check(len(trusted(sb)) == 1, "trusted on this machine", trusted(sb))
    link = os.path.join(sb.project, ".claude", "skills", "pdf-review")
    check(os.path.islink(link) and os.path.realpath(link) ==
          os.path.realpath(os.path.dirname(skill)), "the skill is linked for Claude Code",
          os.listdir(sb.project))
    claude_md = os.path.join(sb.project, "CLAUDE.md")
    check(os.path.exists(claude_md) and "Indent with tabs." in read(claude_md).decode(),
          "the instruction is in CLAUDE.md")
    r = sb.run("status")
    check("trusted" in r.stdout and "untrusted" not in r.stdout, "status: trusted", r.stdout)

    # 5. nothing waiting
    snap = (read(mf), read(lock), read(claude_md))
    rc, out, asked = on_terminal(sb, b"y")
    check(rc == 0 and not asked and "Nothing waiting" in out,
          "again: nothing waiting, no question", out)
    check((read(mf), read(lock), read(claude_md)) == snap, "again: nothing changed")

done()
