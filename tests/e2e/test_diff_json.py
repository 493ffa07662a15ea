"""agentstack diff --json (issue 6; docs/adapters.md): the stable form of what `diff`
prints — one JSON document on stdout with, per target, its path, state
(differs | in_sync | hand-edited | failed | skipped), hand_edited, and the
entries it holds as managed or foreign — in every state a project goes
through: before the first apply, in sync, hand-edited, a server dropped from
the manifest, a malformed file. It writes nothing, exits 0, never prints a
resolved secret value, and the text form is unchanged.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SECRET = "sk-difftest-Zq9Lw8Kx7Vb6"
MANIFEST = """version = 1
[targets]
default = ["codex", "cursor"]
[servers.alpha]
type = "stdio"
command = "alpha-mcp"
env = { ALPHA_TOKEN = "${ALPHA_TOKEN}" }
[servers.beta]
type = "http"
url = "https://beta.example.com/mcp"
"""
CURSOR = '{\n  "mcpServers": {\n    "mine": {"command": "my-own-server"}\n  }\n}\n'


def diff_json(sb, e, *extra):
    r = H.run(sb, "diff", "--json", *extra, e=e)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    return r, doc


def target(doc, tid):
    for t in (doc or {}).get("targets", []):
        if t.get("id") == tid and t.get("kind") == "servers":
            return t
    return {}


def entries(t):
    return sorted((x["name"], x["state"]) for x in t.get("entries", []))


def main():
    with Sandbox() as sb:
        e = H.env(sb, ALPHA_TOKEN=SECRET)
        H.write_manifest(sb, MANIFEST)
        cursor_path = sb.write(".cursor/mcp.json", CURSOR)
        H.relock(sb, e)
        codex_path = os.path.join(sb.project, ".codex", "config.toml")
        before = H.tree(sb.project)

        # 1. before the first apply: both differ; Cursor keeps a foreign entry
        r, doc = diff_json(sb, e)
        check(r.returncode == 0 and doc is not None, "diff --json: exit 0, one JSON document",
              r.stdout + r.stderr)
        doc = doc or {}
        check(doc.get("schema_version") == 1 and doc.get("command") == "diff" and
              doc.get("scope") == "project", "schema_version 1, command, scope", r.stdout)
        cx, cu = target(doc, "codex"), target(doc, "cursor")
        check(cx.get("path") == codex_path and cu.get("path") == cursor_path,
              "each target names its absolute path", r.stdout)
        check(cx.get("state") == "differs" and cx.get("added_lines", 0) > 0 and
              entries(cx) == [("alpha", "managed"), ("beta", "managed")],
              "codex: differs, alpha and beta managed", json.dumps(cx))
        # a user's own entry is neither ours nor another manifest's: not listed
        check(cu.get("state") == "differs" and
              entries(cu) == [("alpha", "managed"), ("beta", "managed")],
              "cursor: differs, alpha and beta managed, the user's 'mine' not claimed",
              json.dumps(cu))
        check(doc.get("drifted") == 2 and doc.get("in_sync") is False, "drifted 2, not in sync",
              r.stdout)
        check(SECRET not in r.stdout + r.stderr, "no resolved secret value in the output")
        check(H.tree(sb.project) == before, "diff --json writes nothing")

        # 2. in sync after apply --write
        w = H.run(sb, "apply", "--write", e=e)
        check(w.returncode == 0, "apply --write", w.stdout + w.stderr)
        r, doc = diff_json(sb, e)
        states = sorted(t.get("state") for t in (doc or {}).get("targets", []))
        check(doc is not None and states == ["in_sync", "in_sync"] and
              doc.get("drifted") == 0 and doc.get("in_sync") is True and
              not any(t.get("hand_edited") for t in doc["targets"]),
              "after apply: every target in_sync", r.stdout)
        with open(cursor_path) as f:
            check('"mine"' in f.read(), "the user's own entry survived apply")

        # 2b. foreign: an entry another manifest (the machine's) wrote into
        # the same user file is kept and reported as foreign
        sb.write("agentstack.toml", 'version = 1\n[servers.gamma]\ntype = "stdio"\n'
                 'command = "gamma-mcp"\n', base=sb.ah)
        g = H.run(sb, "apply", "--scope", "global", "--target", "codex", "--write", e=e,
                  cwd=sb.home)
        check(g.returncode == 0, "machine manifest: apply --scope global --write",
              g.stdout + g.stderr)
        r, doc = diff_json(sb, e, "--scope", "global", "--target", "codex")
        cx = target(doc, "codex")
        check(doc is not None and doc.get("scope") == "global" and
              cx.get("path") == os.path.join(sb.home, ".codex", "config.toml") and
              entries(cx) == [("alpha", "managed"), ("beta", "managed"), ("gamma", "foreign")]
              and cx.get("removed") == [],
              "global scope: gamma (the machine manifest's) reported foreign, not removed",
              r.stdout + r.stderr)

        # 3. a hand edit: hand-edited, the other target untouched
        with open(codex_path, "a") as f:
            f.write("# touched by hand\n")
        r, doc = diff_json(sb, e)
        cx = target(doc, "codex")
        check(cx.get("state") == "hand-edited" and cx.get("hand_edited") is True and
              target(doc, "cursor").get("state") == "in_sync" and doc.get("drifted") == 1,
              "hand edit: codex hand-edited, cursor in_sync, drifted 1", r.stdout)
        t = H.run(sb, "diff", e=e)
        check(t.returncode == 0 and "⚠ hand-edited" in t.stdout and t.stdout.startswith(
            "Scope: project\n"), "the text form is unchanged", t.stdout)
        with open(codex_path) as f:
            text = f.read()
        with open(codex_path, "w") as f:
            f.write(text.replace("# touched by hand\n", ""))

        # 4. a server dropped from the manifest: listed under removed
        H.write_manifest(sb, MANIFEST.split("[servers.beta]")[0])
        H.relock(sb, e)
        r, doc = diff_json(sb, e)
        cx = target(doc, "codex")
        check(cx.get("state") == "differs" and cx.get("removed") == ["beta"] and
              entries(cx) == [("alpha", "managed")],
              "beta dropped: reported under removed, alpha still managed", json.dumps(cx))

        # 5. --target narrows; a value that reads like a flag stays a value
        r, doc = diff_json(sb, e, "--target", "codex")
        check(r.returncode == 0 and [t["id"] for t in doc["targets"]] == ["codex"],
              "--target codex: only codex", r.stdout + r.stderr)
        r = H.run(sb, "diff", "--target", "--json", e=e)
        check(r.returncode == 2 and not r.stdout.lstrip().startswith("{"),
              "--target --json: '--json' is the (unknown) target, exit 2", r.stdout + r.stderr)

        # 6. a malformed file: that target failed, the other reported, exit 0
        with open(cursor_path, "w") as f:
            f.write('{"mcpServers": {"mine": \n')
        r, doc = diff_json(sb, e)
        cu = target(doc, "cursor")
        check(r.returncode == 0 and cu.get("state") == "failed" and cu.get("error") and
              target(doc, "codex").get("state") in ("differs", "in_sync"),
              "malformed cursor file: failed with its error, codex still reported",
              r.stdout + r.stderr)

        # 7. usage: diff never writes
        r = H.run(sb, "diff", "--json", "--write", e=e)
        check(r.returncode == 2, "diff --json --write is a usage error", r.stdout + r.stderr)
    done()


main()
