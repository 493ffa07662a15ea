"""toolset create|default|rename|delete|list, settings set|unset and delivery
render-locally: manifest edits through one path.

1. Without --write nothing changes anywhere (every file under the project
   and the home byte-identical) and the preview ends "Dry run.".
2. With --write only the manifest changes (every other file identical), the
   edit is format-preserving (a comment survives), and the result loads.
3. Refusals change nothing: an existing name, an unknown server, the last
   toolset, a rename onto an existing name, a bad name (usage error), an
   unknown CLI for settings (did you mean), a value the adapter's catalog
   refuses.
4. Trust re-gates: a trusted project is no longer trusted after any toolset
   or settings write — except a [delivery]-only change, which carries the
   trust (the attack: a toolset change in the same breath must not ride
   along — delivery never writes anything but [delivery], and a toolset
   write right after re-gates).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, files  # noqa: E402

MANIFEST = ('version = 1\n# keep this comment\n\n[servers.files]\ntype = "stdio"\n'
            'command = "true"\n\n[servers.web]\ntype = "http"\nurl = "https://example.test/mcp"\n\n'
            '[toolsets.main]\nservers = ["files"]\n')


def snapshot(sb):
    """Every file but the writer lock's own (empty) lock file."""
    return {**{"p/" + k: v for k, v in files(sb.project).items()},
            **{"h/" + k: v for k, v in files(sb.home).items() if k != ".agentstack/.lock"}}


def manifest(sb):
    with open(os.path.join(sb.project, ".agentstack", "agentstack.toml")) as f:
        return f.read()


def trust_state(sb):
    r = sb.run("status", "--json")
    return json.loads(r.stdout)["manifest"]["trust"]


def grant(sb):
    check(sb.run("lock", "--write").returncode == 0, "lock --write")
    d = json.loads(sb.run("trust", ".", "--preview").stdout)["surface_digest"]
    r = sb.run("trust", ".", "--yes", "--consented", d)
    check(r.returncode == 0, "trusted", r.stdout + r.stderr)
    check(trust_state(sb) == "trusted", "status says trusted")


def only_manifest_changed(before, after, what):
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    check(changed == ["p/.agentstack/agentstack.toml"], f"{what}: only the manifest changed",
          changed)


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", MANIFEST)
    sb.run("status")  # lets the home settle (directories it creates on first use)

    previews = [
        ["toolset", "create", "backend", "--server", "files", "--server", "web"],
        ["toolset", "default", "main"],
        ["toolset", "rename", "main", "--to", "core"],
        ["settings", "set", "claude-code", "model", "opus"],
        ["delivery", "render-locally"],
    ]
    for cmd in previews:
        before = snapshot(sb)
        r = sb.run(*cmd)
        check(r.returncode == 0 and "Dry run. Nothing written" in r.stdout and
              ("+ " in r.stdout or "- " in r.stdout), f"{' '.join(cmd)}: a preview",
              r.stdout + r.stderr)
        check(snapshot(sb) == before, f"{' '.join(cmd)}: nothing written without --write")

    # 2. writes
    before = snapshot(sb)
    r = sb.run("toolset", "create", "backend", "--server", "files", "--server", "web", "--write")
    check(r.returncode == 0 and "✓ wrote" in r.stdout, "toolset create --write", r.stdout + r.stderr)
    only_manifest_changed(before, snapshot(sb), "toolset create")
    text = manifest(sb)
    check("# keep this comment" in text and '[toolsets.backend]\nservers = ["files", "web"]'
          in text, "format kept, the table added", text)
    lst = json.loads(sb.run("toolset", "list", "--json").stdout)
    check([t["name"] for t in lst] == ["main", "backend"], "toolset list sees it", lst)

    for cmd, want in ((["toolset", "default", "backend", "--write"], 'default_toolset = "backend"'),
                      (["toolset", "rename", "backend", "--to", "api", "--write"],
                       'default_toolset = "api"'),
                      (["settings", "set", "claude-code", "permissions.defaultMode", "plan",
                        "--write"], '[settings.claude-code.permissions]\ndefaultMode = "plan"'),
                      (["settings", "unset", "claude-code", "permissions.defaultMode", "--write"],
                       None)):
        before = snapshot(sb)
        r = sb.run(*cmd)
        check(r.returncode == 0, " ".join(cmd), r.stdout + r.stderr)
        only_manifest_changed(before, snapshot(sb), " ".join(cmd))
        if want:
            check(want in manifest(sb), f"{' '.join(cmd)}: {want!r}", manifest(sb))
    check("defaultMode" not in manifest(sb) and "[toolsets.api]" in manifest(sb) and
          "[toolsets.backend]" not in manifest(sb), "unset and rename landed", manifest(sb))
    r = sb.run("toolset", "delete", "api", "--write")
    check(r.returncode == 0 and "[toolsets.api]" not in manifest(sb) and
          "default_toolset" not in manifest(sb) and "[servers.web]" in manifest(sb),
          "delete drops the toolset and the default naming it; the servers stay", manifest(sb))

    # 3. refusals change nothing
    refusals = [
        (["toolset", "create", "main", "--write"], 1, "already exists"),
        (["toolset", "create", "x", "--server", "nosuch", "--write"], 1, "no server 'nosuch'"),
        (["toolset", "delete", "main", "--write"], 1, "last toolset"),
        (["toolset", "rename", "main", "--to", "main", "--write"], 1, "already exists"),
        (["toolset", "create", "bad/name", "--write"], 2, "not a usable toolset name"),
        (["toolset", "default", "nosuch", "--write"], 1, "no toolset 'nosuch'"),
        (["settings", "set", "claude-cod", "model", "x", "--write"], 1, "did you mean 'claude-code'"),
        (["delivery", "render-locally", "--harness", "codx", "--write"], 1, "did you mean 'codex'"),
    ]
    for cmd, rc, msg in refusals:
        before = snapshot(sb)
        r = sb.run(*cmd)
        check(r.returncode == rc and msg in r.stderr, f"{' '.join(cmd)}: refused ({msg})",
              r.stdout + r.stderr)
        check(snapshot(sb) == before, f"{' '.join(cmd)}: nothing changed")

    # 4. trust: re-gated by an edit, carried across a delivery preference
    grant(sb)
    r = sb.run("delivery", "render-locally", "--write")
    check(r.returncode == 0 and "trust carried" in r.stdout, "render-locally --write",
          r.stdout + r.stderr)
    check(trust_state(sb) == "trusted" and "render_locally = true" in manifest(sb),
          "a [delivery]-only change keeps the project trusted")
    r = sb.run("delivery", "render-locally", "--off", "--write")
    check(r.returncode == 0 and trust_state(sb) == "trusted", "…and so does --off", r.stdout)
    for cmd in (["toolset", "create", "more", "--server", "web", "--write"],
                ["settings", "set", "codex", "model", "gpt-5", "--write"]):
        grant(sb)
        r = sb.run(*cmd)
        check(r.returncode == 0 and "needs a new review" in r.stdout, " ".join(cmd), r.stdout)
        check(trust_state(sb) == "drifted", f"{' '.join(cmd)}: the project is re-gated",
              trust_state(sb))
    # an untrusted project stays untrusted across a delivery write
    sb.run("trust", ".", "--revoke")
    check(trust_state(sb) == "untrusted", "revoked")
    r = sb.run("delivery", "render-locally", "--write")
    check(r.returncode == 0 and "trust carried" not in r.stdout and
          trust_state(sb) == "untrusted", "delivery never grants trust", r.stdout)

done()
