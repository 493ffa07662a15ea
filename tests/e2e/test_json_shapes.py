"""`--json` on apply, lock, install, init, connect, `trust --list` and
`audit --calls`: each
command's real output validated against the JSON Schema docs/json.md gives
for it (a small validator for the subset the page uses: type, required,
properties, items, enum). Also: one document on stdout and nothing else,
no colour even when colour is forced, no secret value (only its ${REF}
name), and a failure under --json is still a document, with the exit code
the command has without --json."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SECRET = "ghp_json_shape_secret_0123456789abcdef"


def schemas():
    """name -> schema, from the <!-- schema: NAME --> blocks of docs/json.md."""
    with open(os.path.join(SRC, "docs", "json.md")) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"<!-- schema: (\w+) -->\n```json\n(.*?)\n```", text, re.S):
        out[m.group(1)] = json.loads(m.group(2))
    return out


TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def type_ok(value, t):
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, TYPES[t])


def validate(value, schema, path="$"):
    """The list of violations of schema by value (empty: valid)."""
    errs = []
    if "type" in schema:
        ts = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_ok(value, t) for t in ts):
            return ["%s: %r is not of type %s" % (path, value, ts)]
    if "enum" in schema and value not in schema["enum"]:
        errs.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errs.append("%s: required field '%s' missing" % (path, k))
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                errs += validate(value[k], sub, path + "." + k)
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errs += validate(v, schema["items"], "%s[%d]" % (path, i))
    return errs


S = schemas()
check(set(S) >= {"error", "apply", "lock", "install", "init", "connect", "trust", "audit"},
      "docs/json.md has a schema for every command", sorted(S))

# the validator itself catches what it claims to (a test that cannot fail
# proves nothing)
check(validate({"schema_version": 1}, S["lock"]) != [], "validator: missing fields caught")
check(validate({"op": "grow", "kind": "x", "name": "n", "old": None, "new": 3},
               S["lock"]["properties"]["changes"]["items"]) != [],
      "validator: bad enum and bad type caught")
check(validate(True, {"type": "integer"}) != [], "validator: a boolean is no integer")


def doc(p, schema, what):
    """stdout as exactly one JSON document, valid against schema."""
    check("\x1b" not in p.stdout, what + ": no terminal escape on stdout", p.stdout)
    check(SECRET not in p.stdout and SECRET not in p.stderr,
          what + ": the secret value is never printed", p.stdout)
    try:
        d = json.loads(p.stdout)
    except ValueError as e:
        check(False, what + ": stdout is one JSON document", "%s\n%s\n%s" % (e, p.stdout, p.stderr))
        return {}
    errs = validate(d, S[schema])
    check(errs == [], what + ": valid against docs/json.md '%s'" % schema,
          "\n".join(errs) + "\n" + p.stdout)
    return d


def fail_doc(p, rc, what):
    check(p.returncode == rc, what + ": exit %d" % rc, "%d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    d = doc(p, "error", what)
    check(d.get("ok") is False and d.get("exit_code") == rc, what + ": ok false, exit_code", d)
    return d


MANIFEST_EXTRA = """
[servers.filesystem]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
"""

with Sandbox() as sb:
    for b in ("claude", "codex"):
        H.fake_bin(sb, b)
    sb.write(".claude.json", json.dumps({"mcpServers": {"gh": {
        "command": "gh-mcp", "env": {"GITHUB_TOKEN": SECRET}}}}), base=sb.home)
    # colour forced on: a document still carries none
    e = H.env(sb, CLICOLOR_FORCE="1", TERM="xterm-256color")
    e.pop("NO_COLOR", None)

    def run(*args):
        return H.run(sb, *args, e=e)

    # ---- errors before anything exists: same exit code, still a document
    plain = run("lock")
    p = run("lock", "--json")
    fail_doc(p, plain.returncode, "lock --json without a project")
    check(plain.returncode == 1, "lock without a project exits 1", plain.stderr)
    d = fail_doc(run("apply", "--json", "--wirte"), 2, "apply --json --wirte")
    check(any("did you mean '--write'" in x["message"] for x in d.get("errors", [])),
          "the usage error in the document names the closest flag", d)
    fail_doc(run("install", "--json", "extra"), 2, "install --json with an argument")
    d = fail_doc(run("trust", "--preview", "--json"), 2, "trust --preview --json")

    # ---- init
    p = run("init", "--json", "--dry-run")
    check(p.returncode == 0, "init --json --dry-run exits 0", p.stderr)
    d = doc(p, "init", "init --json --dry-run")
    check(d.get("dry_run") is True and d.get("written") is False, "dry run writes nothing", d)
    check([s["name"] for s in d.get("servers", [])] == ["gh"], "the server imported", d)
    check([s["name"] for s in d.get("secrets", [])] == ["GITHUB_TOKEN"],
          "the secret by its ${REF} name", d)
    check({c["id"] for c in d.get("clis", [])} >= {"claude-code", "codex"}, "CLIs detected", d)
    check(not os.path.exists(os.path.join(sb.project, ".agentstack")), "nothing written")

    p = run("init", "--json", "--secrets", "file")
    check(p.returncode == 0, "init --json exits 0", p.stderr)
    d = doc(p, "init", "init --json --secrets file")
    check(d.get("written") is True and d.get("secrets_to") == "file" and
          d.get("manifest", "").endswith("/.agentstack/agentstack.toml"),
          "written, secrets to the file store", d)
    plain = run("init", "--yes")
    fail_doc(run("init", "--json"), plain.returncode, "init --json over an existing manifest")

    mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
    with open(mpath) as f:
        mtext = f.read()
    check('servers = ["gh"]' in mtext, "init wrote the default toolset", mtext)
    with open(mpath, "w") as f:
        f.write(mtext.replace('servers = ["gh"]', 'servers = ["gh", "filesystem"]') +
                MANIFEST_EXTRA)

    # ---- lock
    p = run("lock", "--json")
    d = doc(p, "lock", "lock --json (preview)")
    check(p.returncode == 0 and d.get("write") is False and d.get("written") is False and
          d.get("changed") is True, "preview: would change, nothing written", d)
    check({c["name"] for c in d.get("changes", []) if c["kind"] == "server"} ==
          {"gh", "filesystem"} and d.get("pinned", {}).get("servers") == 2,
          "preview lists the server pins", d)
    check(not os.path.exists(os.path.join(sb.project, ".agentstack", "agentstack.lock")),
          "preview writes no lock")
    p = run("lock", "--json", "--write")
    d = doc(p, "lock", "lock --json --write")
    check(d.get("written") is True and d.get("next") == "agentstack trust .",
          "written; next: trust", d)
    d = doc(run("lock", "--write", "--json"), "lock", "lock --json --write again")
    check(d.get("written") is False and d.get("changes") == [], "again: nothing to change", d)

    # ---- install
    p = run("install", "--json")
    d = doc(p, "install", "install --json")
    check(p.returncode == 0 and d.get("skills") == [] and d.get("locked") is False,
          "install: no skills, ok", d)
    d = doc(run("install", "--locked", "--json"), "install", "install --locked --json")
    check(d.get("locked") is True and d.get("ok") is True, "--locked: matches", d)

    # ---- apply: untrusted, then trusted
    p = run("apply", "--json")
    d = doc(p, "apply", "apply --json (preview)")
    states = {t["id"]: t["state"] for t in d.get("targets", [])}
    check(p.returncode == 0 and states.get("claude-code") == "would_change" and
          d.get("history_id") is None, "preview: would change", d)
    plain = run("apply", "--write")
    p = run("apply", "--json", "--write")
    check(plain.returncode == 1, "apply --write on an untrusted project exits 1", plain.stderr)
    d = fail_doc(p, 1, "apply --json --write, untrusted")
    d = doc(p, "apply", "apply --json --write, untrusted (own fields kept)")
    check(any(t["state"] == "refused" for t in d.get("targets", [])), "state refused", d)

    H.trust(sb, e=e)
    p = run("trust", "--list", "--json")
    d = doc(p, "trust", "trust --list --json")
    check([(t["path"], t["state"]) for t in d.get("trusted", [])] ==
          [(os.path.realpath(sb.project), "current")], "the project, trusted and current", d)

    p = run("apply", "--json", "--write")
    d = doc(p, "apply", "apply --json --write")
    rows = {t["id"]: t for t in d.get("targets", [])}
    check(p.returncode == 0 and rows.get("claude-code", {}).get("state") == "written" and
          set(rows["claude-code"]["servers"]) == {"gh", "filesystem"} and
          isinstance(d.get("history_id"), str), "written, with an undo entry", d)
    d = doc(run("apply", "--json"), "apply", "apply --json after the write")
    check(all(t["state"] in ("in_sync", "skipped") for t in d.get("targets", [])),
          "everything in sync", d)

    # ---- connect
    p = run("connect", "--json")
    d = doc(p, "connect", "connect --json (preview)")
    # The project's rendered entries leave with the connect (one delivery per
    # server): their files get rows of their own.
    check(p.returncode == 0 and d.get("write") is False and
          {c["state"] for c in d.get("clis", [])} == {"would_connect", "would_prune"} and
          all(c["pruned"] for c in d["clis"] if c["state"] == "would_prune"), "preview", d)
    d = doc(run("connect", "--all", "--write", "--json"), "connect", "connect --write --json")
    check({c["state"] for c in d.get("clis", [])} == {"connected", "pruned"}, "connected", d)
    d = doc(run("connect", "--json"), "connect", "connect --json again")
    check({c["state"] for c in d.get("clis", [])} == {"already"}, "already connected", d)
    plain = run("connect", "nosuchcli")
    fail_doc(run("connect", "nosuchcli", "--json"), plain.returncode, "connect unknown --json")
    check(plain.returncode == 2, "an unknown CLI is a usage error", plain.stderr)

    # ---- audit --calls: one documented call row, then the table
    calls = os.path.join(sb.ah, "audit", "calls.jsonl")
    os.makedirs(os.path.dirname(calls), exist_ok=True)
    with open(calls, "a") as f:
        f.write(json.dumps({"ts": 1767225600, "pid": 1, "project": os.path.realpath(sb.project),
                            "server": "gh", "tool": "search", "args_digest": "a41c09e7b2d3",
                            "outcome": "ok", "ms": 12}, separators=(",", ":")) + "\n")
    d = doc(run("audit", "--calls", "--json"), "audit", "audit --calls --json")
    check([(t["server"], t["tool"], t["calls"], t["p50_ms"]) for t in d.get("table", [])] ==
          [("gh", "search", 1, 12)], "audit --calls --json: the row in the table", d)
    d = doc(run("audit", "--calls", "--json", "--tool", "none"), "audit",
            "audit --calls --json --tool none")
    check(d.get("table") == [] and d.get("calls") == 0, "a filter that keeps nothing", d)
    plain = run("audit", "--calls", "--since", "later")
    fail_doc(run("audit", "--calls", "--since", "later", "--json"), plain.returncode,
             "audit --calls --since later --json")
    check(plain.returncode == 2, "a bad --since is a usage error", plain.stderr)

done()
