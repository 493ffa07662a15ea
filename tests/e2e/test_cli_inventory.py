"""The command inventory: `agentstack help --all --json` (generated from the
command tables) against the table in docs/commands.md. Every command and
subcommand is a row there with the same options, hidden ones marked, and
nothing else is — so a command cannot silently go missing from either. The
inventory is also checked for what help and completions will rely on: every
(sub)command has a summary and usage lines, every visible option a help
line, every option a usage line names exists, every related command exists.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, SRC, Sandbox, check, done  # noqa: E402


def doc_rows(path):
    """{command: (hidden, {options})} from the table under '## Commands'."""
    rows, inside = {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## Commands"
            continue
        if not inside or not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        m = re.match(r"`([a-z][a-z0-9 -]*)`( \(hidden\))?$", cells[0])
        check(m is not None, f"docs/commands.md row names a command: {cells[0]}")
        if not m:
            continue
        opts = set(re.findall(r"--[a-z][a-z0-9-]*", cells[2])) if len(cells) > 2 else set()
        subs = set()
        if len(cells) > 2 and cells[2].startswith("subcommands:"):
            subs = set(re.findall(r"`([a-z][a-z0-9-]*)`", cells[2]))
            opts = set()
        check(m.group(1) not in rows, f"docs/commands.md lists {m.group(1)} once")
        rows[m.group(1)] = (bool(m.group(2)), opts, subs)
        WHAT[m.group(1)] = cells[1] if len(cells) > 1 else ""
    return rows


WHAT = {}  # command: its "What it does" cell


def inventory_rows(inv):
    rows = {}

    def add(spec, parent_hidden):
        hidden = spec["hidden"] or parent_hidden
        opts = {o["long"] for o in spec["options"]
                if o["long"] and not o["hidden"] and o["available"]}
        subs = {s["name"].split(" ")[-1] for s in spec["subcommands"]}
        rows[spec["name"]] = (hidden, set() if subs else opts, subs)
        for s in spec["subcommands"]:
            add(s, hidden)

    for c in inv["commands"]:
        add(c, False)
    return rows


with Sandbox() as sb:
    r = subprocess.run([BIN, "help", "--all", "--json"], env=sb.env(), capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and not r.stderr, "help --all --json: exit 0", r.stderr)
    inv = json.loads(r.stdout)
    check(inv.get("schema_version") == 1 and inv.get("program") == "agentstack",
          "the inventory names its schema and program")

    have = inventory_rows(inv)
    want = doc_rows(os.path.join(SRC, "docs", "commands.md"))
    check(len(have) > 50, f"{len(have)} commands and subcommands in the inventory")
    missing = sorted(set(have) - set(want))
    extra = sorted(set(want) - set(have))
    check(not missing, "every command of the binary is in docs/commands.md", missing)
    check(not extra, "docs/commands.md lists no command the binary lacks", extra)
    for name in sorted(set(have) & set(want)):
        h, d = have[name], want[name]
        check(h[0] == d[0], f"{name}: hidden {h[0]} in both", d[0])
        check(h[1] == d[1], f"{name}: the same options",
              f"binary only: {sorted(h[1] - d[1])}, doc only: {sorted(d[1] - h[1])}")
        check(h[2] == d[2], f"{name}: the same subcommands", (sorted(h[2]), sorted(d[2])))

    # `help` lists exactly the visible commands
    r = subprocess.run([BIN, "help"], env=sb.env(), capture_output=True, text=True, timeout=60)
    listed = re.findall(r"^  ([a-z][a-z0-9-]*)  ", r.stdout, re.M)
    visible = [c["name"] for c in inv["commands"] if not c["hidden"]]
    check(listed == visible, "help lists the visible commands in table order", listed)

    # what help, man pages and completions will rely on
    names = {c["name"] for c in inv["commands"]}

    def walk(spec, parent_opts):
        name = spec["name"]
        check(bool(spec["summary"]), f"{name}: a summary")
        if not spec["subcommands"]:
            check(len(spec["usage"]) > 0, f"{name}: usage lines")
        known = {o["long"] for o in spec["options"] + inv["global_options"] + inv["top_options"]
                 if o["long"]}
        known |= {a for o in spec["options"] for a in o["aliases"]}
        for line in spec["usage"]:
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line):
                check(flag in known, f"{name}: usage names {flag}, an option it has", line)
        for o in spec["options"]:
            if not o["hidden"]:
                check(bool(o["help"]), f"{name} {o['long']}: a help line")
        for see in spec["see_also"]:
            check(see in names, f"{name}: related command '{see}' exists")
        for s in spec["subcommands"]:
            check(s["name"].startswith(name + " "), f"{s['name']}: named under {name}")
            walk(s, spec["options"])

    for c in inv["commands"]:
        walk(c, [])
        if c["alias_of"]:
            check(c["alias_of"] in names, f"{c['name']}: another spelling of an existing command")

    # both spellings: each command's other spellings run (their first word is
    # a command) and docs/commands.md names them on the command's row; each
    # spelling's own row says which command it spells
    def specs(spec):
        yield spec
        for s in spec["subcommands"]:
            yield from specs(s)

    spelled = 0
    for c in inv["commands"]:
        for spec in specs(c):
            for alias in spec.get("aliases", []):
                spelled += 1
                check(alias.split(" ")[0] in names, f"{spec['name']}: its spelling '{alias}' "
                      "starts with a command")
                check(f"`{alias}`" in WHAT.get(spec["name"], ""),
                      f"docs/commands.md: the {spec['name']} row names `{alias}`",
                      WHAT.get(spec["name"]))
            if spec["alias_of"]:
                check(f"`{spec['alias_of']}" in WHAT.get(spec["name"], ""),
                      f"docs/commands.md: the {spec['name']} row names `{spec['alias_of']}`",
                      WHAT.get(spec["name"]))
    check(spelled >= 6, f"{spelled} second spellings listed in the inventory")

done()
