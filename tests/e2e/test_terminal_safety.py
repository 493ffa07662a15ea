"""Untrusted text never reaches the terminal raw (red-team audit).

A repository chooses its directory name, its manifest's server names and the
server names in its native config files (.mcp.json, .codex/config.toml). Any
of them may hold ESC/OSC/CSI sequences, BEL or a newline: printed raw they
retitle the terminal, recolour or rewrite earlier lines, or forge a line of
output ("✓ trusted"). Every human-readable line of lock, trust, diff, apply,
status and doctor goes through the one sanitizer (src/base/term.c), so:
no C0 control other than the line ends (and tab) and no DEL or C1 control
appears in stdout or stderr, and no hostile newline starts a line of its own:
each shows as an escape (\\n, \\u001b), never as itself and never dropped.
--json output is left to jansson's escaping and not checked here.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

# The project directory: OSC (set title, BEL-ended), CSI (red), a newline
# followed by text that would start a forged line.
DIRNAME = "proj\x1b]0;PWNED\x07\x1b[31mred\nFORGEDDIR"
# A manifest server name: the codex adapter skips it (not [A-Za-z0-9_-]),
# so apply prints "skipping '<name>'".
SERVER = "evil\nFORGEDSRV\x1b[2J\x07"
# Server names in the repository's own native files.
NATIVE = "esc\x1b]0;TITLE\x07\x1b[31mred"
NATIVE_NL = "nl\nFORGEDNATIVE"

MANIFEST = """version = 1
[targets]
default = ["codex", "claude-code"]
[servers.ok]
type = "stdio"
command = "ok-mcp"
[servers."evil\\nFORGEDSRV\\u001b[2J\\u0007"]
type = "stdio"
command = "evil-mcp"
"""


def bad_bytes(text):
    """The control characters in text other than the line end and tab."""
    return sorted({hex(ord(c)) for c in text
                   if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0})


def forged(text):
    """Lines that a hostile newline started."""
    return [ln for ln in text.split("\n")
            if ln.startswith(("FORGEDDIR", "FORGEDSRV", "FORGEDNATIVE"))]


def safe(r, what):
    out = r.stdout + r.stderr
    bad = bad_bytes(out)
    check(not bad, f"{what}: no control bytes reach the terminal", f"{bad}\n{out!r}"[:3000])
    f = forged(out)
    check(not f, f"{what}: no injected newline starts a line", f"{f}\n{out!r}"[:3000])
    return out


def main():
    with Sandbox() as sb:
        sb.project = os.path.join(sb.root, "work", DIRNAME)
        os.makedirs(sb.project)
        e = H.env(sb)
        H.write_manifest(sb, MANIFEST)
        sb.write(".mcp.json", json.dumps(
            {"mcpServers": {NATIVE: {"command": "z"}, NATIVE_NL: {"command": "q"}}}))
        sb.write(".codex/config.toml",
                 '[mcp_servers."%s"]\ncommand = "z"\n' % NATIVE.replace("\x1b", "\\u001b")
                 .replace("\x07", "\\u0007"))

        r = H.run(sb, "lock", e=e)
        safe(r, "lock (preview)")
        r = H.run(sb, "lock", "--write", e=e)
        out = safe(r, "lock --write")
        check(r.returncode == 0 and "pinned" in out, "lock --write pins", out)

        for args in (("diff",), ("apply",), ("status",), ("status", "--short"), ("doctor",),
                     ("trust", "--revoke")):
            safe(H.run(sb, *args, e=e), " ".join(args) + " (untrusted)")

        r = H.run(sb, "trust", e=e)
        out = safe(r, "trust (card, no terminal)")
        check("evil\\nFORGEDSRV\\u001b[2J\\u0007" in out,
              "the card shows the hostile name's controls as escapes", out)
        # A control in a manifest key is a blocking content-scan finding.
        p = H.run(sb, "trust", "--preview", e=e)
        d = json.loads(p.stdout)["surface_digest"]
        r = H.run(sb, "trust", "--yes", "--consented", d, e=e)
        out = safe(r, "trust refused by the content scan")
        check(r.returncode == 1 and "agentstack.toml:7:10 control character U+001B" in out and
              "--allow-flagged" in out, "a control in a server name refuses trust", out)
        H.trust(sb, e=e, extra=("--allow-flagged",))
        r = H.run(sb, "trust", "--list", e=e)
        safe(r, "trust --list")

        r = H.run(sb, "apply", e=e)
        out = safe(r, "apply (trusted preview)")
        check("skipping" in out, "apply names the server codex skips", out)
        r = H.run(sb, "apply", "--write", e=e)
        out = safe(r, "apply --write")
        check(r.returncode == 0, "apply --write succeeds", out)

        # The native entries are now beside ours; the ledger names ours.
        r = H.run(sb, "diff", e=e)
        safe(r, "diff (after apply)")
        r = H.run(sb, "diff", "-v", e=e)
        safe(r, "diff -v")
        # The hostile server leaves the manifest: diff and apply name it as
        # written in the native file ("− <name> (no longer in manifest)").
        H.write_manifest(sb, MANIFEST.split("[servers.\"evil")[0])
        H.run(sb, "lock", "--write", e=e)
        H.trust(sb, e=e)
        out = safe(H.run(sb, "diff", e=e), "diff (server dropped)")
        check("− evil\\nFORGEDSRV" in out, "diff names the dropped server, sanitized", out)
        out = safe(H.run(sb, "apply", e=e), "apply (server dropped)")
        check("REMOVE 'evil\\nFORGEDSRV" in out, "apply names the server it would remove", out)
        # A malformed native file: the error names its hostile path.
        sb.write(".mcp.json", "{ broken " + NATIVE)
        safe(H.run(sb, "diff", e=e), "diff (malformed native file)")
        safe(H.run(sb, "apply", "--write", e=e), "apply --write (malformed native file)")

        for args in (("status",), ("doctor",), ("restore", "--list"), ("undo", "--list")):
            safe(H.run(sb, *args, e=e), " ".join(args) + " (trusted)")

        r = H.run(sb, "trust", "--revoke", e=e)
        out = safe(r, "trust --revoke")
        check(r.returncode == 0 and "revoked" in out, "trust --revoke revokes", out)

    # An unpinned inline skill blocks trust: the refusal names the hostile
    # directory sanitized and still lists one blocker a line.
    with Sandbox() as sb:
        sb.project = os.path.join(sb.root, "work", DIRNAME)
        os.makedirs(sb.project)
        e = H.env(sb)
        H.write_manifest(sb, 'version = 1\n[skills.notes]\npath = "../skills/notes"\n')
        sb.write("skills/notes/SKILL.md", "---\ndescription: demo\n---\n")
        p = H.run(sb, "trust", "--preview", e=e)
        d = json.loads(p.stdout)["surface_digest"]
        r = H.run(sb, "trust", "--yes", "--consented", d, e=e)
        out = safe(r, "trust refused by blockers")
        lines = r.stderr.split("\n")
        at = [i for i, ln in enumerate(lines) if ln.startswith("error: cannot trust ")]
        check(r.returncode == 1 and len(at) == 1 and at[0] + 2 < len(lines) and
              lines[at[0] + 1].startswith("  - skill 'notes'") and
              lines[at[0] + 2].startswith("pin with "),
              "the refusal lists its blockers one a line", out)

    # init reads the repository's .mcp.json: hostile names and the hostile
    # directory reach its plan, prompt-free (--dry-run and --yes) output.
    with Sandbox() as sb:
        sb.project = os.path.join(sb.root, "work", DIRNAME)
        os.makedirs(sb.project)
        e = H.env(sb)
        sb.write(".mcp.json", json.dumps({"mcpServers": {
            NATIVE: {"command": "x-mcp", "env": {"API_TOKEN": "tok-123456789"}},
            NATIVE_NL: {"command": "y-mcp"}}}))
        for args in (("init", "--dry-run", "--secrets", "file"),
                     ("init", "--yes", "--secrets", "file")):
            safe(H.run(sb, *args, e=e), " ".join(args))
    done()


if __name__ == "__main__":
    main()
