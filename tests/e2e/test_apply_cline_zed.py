"""Cline (the VS Code extension), the Cline CLI and Zed, the way a user meets
them (docs/adapters.md): `apply --scope global --write`, `connect --write`,
then `undo --to 1 --write`.

1. Cline and Cline CLI: one rendering, the flat entry both programs read —
   "type" "stdio" | "streamableHttp" (never "http", which Cline refuses),
   resolved env, and a server's working directory as Cline's own "cwd" key
   (not the sh -c wrap). The CLI's file is the one it reads,
   ~/.cline/data/settings/cline_mcp_settings.json, and a server `cline mcp
   add` wrote there (its nested "transport" form) stays. Both files stay
   strict JSON (Cline parses them with JSON.parse).
2. Zed: every entry written into settings.json validates against the
   custom-server shapes of Zed's settings (tests/data/zed-settings): flat
   command/args/env or url/headers, no "source" and no nested command object
   (Zed's own migrations rewrite both), a cwd as the sh -c wrap (Zed has no
   working-directory key); the user's JSONC — comments, trailing comma, other
   settings, an extension server — keeps its bytes.
3. `connect` leaves each file the gateway and the user's own servers only,
   and `undo --to 1 --write` gives every file back byte for byte.
4. CLINE_DATA_DIR or CLINE_MCP_SETTINGS_PATH (absolute) move the file the
   CLI reads, and apply writes there instead.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SCHEMA = json.load(open(os.path.join(SRC, "tests", "data", "zed-settings",
                                     "context_servers.schema.json")))
# The fixture's servers without its [delivery] render_locally: connect may
# then take out what apply rendered (docs/adapters.md, "Where servers go").
MANIFEST = H.SPEC_MANIFEST.replace("[delivery]\nrender_locally = true\n", "") + """[servers.rooted]
type = "stdio"
command = "rooted-mcp"
args = ["--deep"]
cwd = "work"
"""
OURS = ["docs", "notes", "rooted"]


def problems(value, schema, where="$"):
    """The ways value breaks schema (the draft-07 subset the Zed file uses)."""
    if "$ref" in schema:
        schema = SCHEMA["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:
        tries = [problems(value, s, where) for s in schema["anyOf"]]
        return [] if any(not t for t in tries) else [f"{where}: matches no shape {tries}"]
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return [f"{where}: not a non-negative integer"]
        return []
    if kind and not isinstance(value, types[kind]):
        return [f"{where}: not {kind}"]
    out = []
    if kind == "object":
        for k in schema.get("required", []):
            if k not in value:
                out.append(f"{where}: missing {k}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                out += problems(v, props[k], f"{where}.{k}")
            elif extra is False:
                out.append(f"{where}: unknown key {k}")
            elif isinstance(extra, dict):
                out += problems(v, extra, f"{where}.{k}")
    if kind == "array":
        for i, v in enumerate(value):
            out += problems(v, schema["items"], f"{where}[{i}]")
    return out


def jsonc(text):
    """JSONC → a value: comments and trailing commas dropped outside strings."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        else:
            out.append(c)
            i += 1
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", "".join(out)))


CLI_SEED = """{
  "mcpServers": {
    "mine": {
      "transport": {
        "type": "stdio",
        "command": "my-mcp",
        "args": [
          "--x"
        ]
      }
    }
  }
}
"""

with Sandbox() as sb:
    H.write_manifest(sb, MANIFEST)
    sb.write("work/.keep", "")
    H.fake_bin(sb, "cline")
    e = H.env(sb)
    H.relock(sb, e=e)
    work = os.path.realpath(os.path.join(sb.project, "work"))
    ext = os.path.join(sb.home, H.USER_FILES["cline"])
    cli = os.path.join(sb.home, H.USER_FILES["cline-cli"])
    os.makedirs(os.path.dirname(cli))
    with open(cli, "w") as f:
        f.write(CLI_SEED)
    lst = json.loads(H.run(sb, "adapters", "list", "--json", e=e).stdout)
    check({a["id"]: a["installed"] for a in lst}.get("cline-cli") is True,
          "the Cline CLI is detected by its binary", lst)

    w = H.run(sb, "apply", "--scope", "global", "--target", "cline", "--target", "cline-cli",
              "--write", e=e)
    check(w.returncode == 0, "apply --scope global --write (cline, cline-cli)", w.stdout + w.stderr)
    for name, path in (("cline", ext), ("cline-cli", cli)):
        doc = json.loads(H.read(path))  # strict JSON: Cline uses JSON.parse
        s = doc["mcpServers"]
        check(s["notes"] == {"type": "stdio", "command": "uvx", "args": ["notes-mcp", "--ro"],
                             "env": {"NOTES_TOKEN": "t1"}},
              f"{name}: a stdio entry with its resolved env", s)
        check(s["docs"] == {"type": "streamableHttp", "url": "https://docs.example.test/mcp",
                            "headers": {"X-Api-Key": "k1"}},
              f"{name}: a remote entry is streamableHttp (Cline refuses 'http')", s)
        check(s["rooted"] == {"type": "stdio", "command": "rooted-mcp", "args": ["--deep"],
                              "cwd": work},
              f"{name}: the working directory is Cline's own cwd key, not an sh -c wrap", s)
    check(json.loads(H.read(cli))["mcpServers"]["mine"] ==
          {"transport": {"type": "stdio", "command": "my-mcp", "args": ["--x"]}},
          "cline-cli: the server `cline mcp add` wrote stays as it was", H.read(cli))

    c = H.run(sb, "connect", "cline", "cline-cli", "--write", e=e)
    check(c.returncode == 0 and c.stdout.count("✓ gateway registered") == 2,
          "connect cline cline-cli --write", c.stdout + c.stderr)
    for name, path, keep in (("cline", ext, ["agentstack"]),
                             ("cline-cli", cli, ["agentstack", "mine"])):
        s = json.loads(H.read(path))["mcpServers"]
        gw = s.get("agentstack", {})
        check(sorted(s) == keep and gw.get("type") == "stdio" and
              gw.get("args") == ["mcp", "--auto-project"],
              f"{name}: after connect the gateway (and the user's server) only", s)

    u = H.run(sb, "undo", "--to", "1", "--write", e=e)
    check(u.returncode == 0 and H.read(cli) == CLI_SEED and not os.path.exists(ext),
          "undo --to 1: the CLI's file byte for byte, the extension's file gone",
          u.stdout + u.stderr)

# The CLI's own overrides move its file, and apply follows (config.path_env).
with Sandbox() as sb:
    H.write_manifest(sb, H.SPEC_MANIFEST)
    e = H.env(sb, CLINE_DATA_DIR=os.path.join(sb.root, "cline-data"))
    H.trust(sb, e=e)
    w = H.run(sb, "apply", "--scope", "global", "--target", "cline-cli", "--write", e=e)
    moved = os.path.join(sb.root, "cline-data", "settings", "cline_mcp_settings.json")
    check(w.returncode == 0 and os.path.exists(moved) and
          not os.path.exists(os.path.join(sb.home, H.USER_FILES["cline-cli"])),
          "CLINE_DATA_DIR: the CLI's file is written where the CLI reads it", w.stdout + w.stderr)
    e["CLINE_MCP_SETTINGS_PATH"] = os.path.join(sb.root, "mcp.json")
    w = H.run(sb, "apply", "--scope", "global", "--target", "cline-cli", "--write", e=e)
    check(w.returncode == 0 and H.read(os.path.join(sb.root, "mcp.json")) ==
          H.golden("cline-cli"), "CLINE_MCP_SETTINGS_PATH wins over CLINE_DATA_DIR",
          w.stdout + w.stderr)

ZED_SEED = """{
  // my editor
  "theme": "One Dark",
  /* servers I added by hand */
  "context_servers": {
    "mcp-server-github": {
      "settings": { "github_personal_access_token": "x" },
    },
  },
  "vim_mode": true,
}
"""

with Sandbox() as sb:
    H.write_manifest(sb, MANIFEST)
    sb.write("work/.keep", "")
    H.fake_bin(sb, "zed")
    e = H.env(sb)
    H.relock(sb, e=e)
    work = os.path.realpath(os.path.join(sb.project, "work"))
    zed = os.path.join(sb.home, H.USER_FILES["zed"])
    os.makedirs(os.path.dirname(zed))
    with open(zed, "w") as f:
        f.write(ZED_SEED)

    w = H.run(sb, "apply", "--scope", "global", "--target", "zed", "--write", e=e)
    check(w.returncode == 0, "apply --scope global --target zed --write", w.stdout + w.stderr)
    z = H.read(zed)
    doc = jsonc(z)
    cs = doc["context_servers"]
    check(sorted(cs) == ["docs", "mcp-server-github", "notes", "rooted"],
          "zed: our servers beside the extension server", cs)
    bad = problems({k: cs[k] for k in OURS}, SCHEMA)
    check(not bad, "zed: every rendered entry is one of Zed's custom-server shapes", bad)
    check(cs["notes"] == {"command": "uvx", "args": ["notes-mcp", "--ro"],
                          "env": {"NOTES_TOKEN": "t1"}} and
          cs["docs"] == {"url": "https://docs.example.test/mcp", "headers": {"X-Api-Key": "k1"}},
          "zed: flat command/args/env and url/headers, no source, no transport tag", cs)
    check(cs["rooted"]["command"] == "sh" and cs["rooted"]["args"][0] == "-c" and
          f"cd '{work}' && exec 'rooted-mcp' '--deep'" in cs["rooted"]["args"][1],
          "zed: a cwd becomes the sh -c wrap (Zed has no working-directory key)", cs["rooted"])
    check(doc["theme"] == "One Dark" and doc["vim_mode"] is True and
          z.startswith('{\n  // my editor\n  "theme": "One Dark",\n  /* servers I added by hand */\n'
                       '  "context_servers": {\n    "mcp-server-github": {\n'
                       '      "settings": { "github_personal_access_token": "x" },\n    },\n') and
          z.endswith('  "vim_mode": true,\n}\n'),
          "zed: comments, trailing commas, other settings and the extension server keep their "
          "bytes", z)

    c = H.run(sb, "connect", "zed", "--write", e=e)
    check(c.returncode == 0 and "✓ gateway registered" in c.stdout, "connect zed --write",
          c.stdout + c.stderr)
    z = H.read(zed)
    cs = jsonc(z)["context_servers"]
    check(sorted(cs) == ["agentstack", "mcp-server-github"] and
          cs["agentstack"]["args"] == ["mcp", "--auto-project"],
          "zed: after connect the gateway and the extension server only", cs)
    bad = problems({"agentstack": cs["agentstack"]}, SCHEMA)
    check(not bad, "zed: the gateway entry is a custom-server shape", bad)
    check("// my editor" in z and "/* servers I added by hand */" in z,
          "zed: the comments survive connect", z)

    u = H.run(sb, "undo", "--to", "1", "--write", e=e)
    check(u.returncode == 0 and H.read(zed) == ZED_SEED,
          "undo --to 1: Zed's settings.json byte for byte", u.stdout + u.stderr + H.read(zed))

    # A project's .zed/settings.json, created from nothing, validates too.
    w = H.run(sb, "apply", "--scope", "project", "--target", "zed", "--write", e=e)
    pz = os.path.join(sb.project, ".zed", "settings.json")
    check(w.returncode == 0 and os.path.exists(pz), "apply --scope project --target zed --write",
          w.stdout + w.stderr)
    if os.path.exists(pz):
        cs = jsonc(H.read(pz))["context_servers"]
        bad = problems(cs, SCHEMA)
        check(sorted(cs) == OURS and not bad, "zed project file: every entry validates", bad)

done()
