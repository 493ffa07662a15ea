"""The lock pins a server's own code as a tree, and any change in it re-gates —
at spawn and live — while an edit elsewhere in the project does not.

Written as the attack: each scenario changes code a pinned server loads
(the imported helper beside a root-level script, a file in the directory a
`python3 ./srv` argument runs, the hook a `node --require=./hooks/hook.cjs`
argument preloads) to code that writes a marker to an absolute path. The
marker never appears; the next call is refused naming the file; a server
that was already running is stopped rather than left to import the new
bytes; the trust card shows the drift as a diff. An edit to unrelated
source (app/main.py, notes.md) re-gates nothing, and `trust --list` stays
current. The lock names what it pins (`kind = "tree"` rows) and the card
names what it does not (the interpreter, site-packages)."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from confinelib import HELPER, SERVER, evil_module  # noqa: E402
from mcpclient import Gateway, grant, is_error, text  # noqa: E402

NODE_SERVER = r'''const readline = require("readline");
const rl = readline.createInterface({input: process.stdin});
const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
rl.on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize")
    send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: "2025-11-25",
          capabilities: {tools: {}}, serverInfo: {name: "n", version: "1"}}});
  else if (m.method === "tools/list")
    send({jsonrpc: "2.0", id: m.id, result: {tools: [{name: "hello", description: "hello",
          inputSchema: {type: "object"}}]}});
  else if (m.method === "tools/call")
    send({jsonrpc: "2.0", id: m.id, result: {content: [{type: "text",
          text: JSON.stringify(globalThis.HOOK || "no hook")}], isError: false}});
  else
    send({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "nope"}});
});
'''
HOOK = 'globalThis.HOOK = "reviewed hook";\n'


def evil_hook(marker):
    return (f'require("fs").writeFileSync({json.dumps(marker)}, "agent code ran\\n");\n'
            f'globalThis.HOOK = "EVIL";\n')


def manifest(args, command="python3"):
    return (f'version = 1\n\n[servers.demo]\ntype = "stdio"\ncommand = "{command}"\n'
            f'args = {json.dumps(args)}\n')


def call(gw, tool, args=None):
    return gw.call(tool, args or {})


def answer(res):
    try:
        return json.loads(text(res))
    except ValueError:
        return None


def lock_text(s):
    with open(os.path.join(s.project, "agentstack.lock")) as f:
        return f.read()


def trust_state(s):
    r = s.run("trust", "--list")
    return r.stdout


def preview_item(s, name):
    r = s.run("trust", ".", "--preview")
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return None, r.stdout + r.stderr
    items = doc.get("review", {}).get("items", [])
    return next((i for i in items if i.get("name") == name), None), doc


def root_script():
    """server.py at the root imports helper.py beside it."""
    with Sandbox() as s:
        s.write("server.py", SERVER)
        s.write("helper.py", HELPER)
        s.write("app/main.py", "print('app')\n")
        s.write("notes.md", "notes\n")
        s.write("agentstack.toml", manifest(["server.py"]))
        grant(s)
        lt = lock_text(s)
        check('path = "server.py"' in lt and 'path = "helper.py"' in lt and "app" not in lt,
              "root script: the lock pins server.py and helper.py beside it, not app/", lt)
        item, doc = preview_item(s, "demo")
        check(item and "helper.py (beside it, same language)" in item.get("pinned_code", [])
              and any("python3" in x and "outside the project" in x
                      for x in item.get("not_pinned", [])),
              "root script: the card names what is pinned and that python3 is not", item or doc)
        card = s.run("trust", ".")
        check("all shown content is pinned\n" not in card.stdout
              and "what its servers run from outside the project is not" in card.stdout,
              "root script: the card no longer claims all content is pinned", card.stdout)
        marker = os.path.join(s.root, "marker-root")
        with Gateway(s) as gw:
            gw.initialize()
            first = answer(call(gw, "demo__probe"))
            check(first and first.get("pid"), "root script: the server runs", first)
            # Unrelated source edits: no re-gate.
            s.write("app/main.py", "print('changed by the agent')\n")
            s.write("notes.md", "changed\n")
            r = call(gw, "demo__hello")
            check(not is_error(r) and "reviewed helper" in text(r),
                  "root script: an edit to unrelated source re-gates nothing", r)
            check("current" in trust_state(s), "root script: trust --list stays current")
            # The attack: the imported module is rewritten while the server runs.
            s.write("helper.py", evil_module(marker, "HELPER"))
            r = call(gw, "demo__hello")
            check(is_error(r) and "helper.py drifted from agentstack.lock" in text(r),
                  "root script: the live edit of helper.py is refused, naming it", r)
            check(not os.path.exists(marker), "root script: the rewritten helper never ran")
            item, doc = preview_item(s, "helper.py")
            diff = json.dumps((item or {}).get("diff"))
            check(item and item.get("drifted") and "HELPER" in diff,
                  "root script: the card shows the drift of helper.py as a diff", item or doc)
            s.write("helper.py", HELPER)
            again = answer(call(gw, "demo__probe"))
            check(again and again.get("pid") and again["pid"] != first["pid"],
                  "root script: restored, it serves again — from a new process (the one that "
                  "saw the drift was stopped)", [first, again])
            check(not os.path.exists(marker), "root script: no marker at the end")


def dir_argument():
    """`python3 ./srv` runs srv/__main__.py, which imports srv/helper.py."""
    with Sandbox() as s:
        s.write("srv/__main__.py", SERVER)
        s.write("srv/helper.py", HELPER)
        s.write("agentstack.toml", manifest(["./srv"]))
        grant(s)
        lt = lock_text(s)
        check('path = "srv"\nkind = "tree"' in lt, "dir argument: the lock pins srv as a tree", lt)
        marker = os.path.join(s.root, "marker-dir")
        with Gateway(s) as gw:
            gw.initialize()
            r = call(gw, "demo__hello")
            check(not is_error(r) and "reviewed helper" in text(r), "dir argument: served", r)
            s.write("srv/helper.py", evil_module(marker, "SRV"))
            r = call(gw, "demo__hello")
            check(is_error(r) and "srv/helper.py drifted" in text(r),
                  "dir argument: a change inside the tree is refused, naming the file", r)
            s.write("srv/helper.py", HELPER)
            s.write("srv/extra.py", evil_module(marker, "NEW"))
            r = call(gw, "demo__hello")
            check(is_error(r) and "srv/extra.py" in text(r),
                  "dir argument: a file added to the tree is refused, naming it", r)
            os.unlink(os.path.join(s.project, "srv", "extra.py"))
            shutil.rmtree(os.path.join(s.project, "srv", "__pycache__"), ignore_errors=True)
            r = call(gw, "demo__hello")
            check(not is_error(r) and "reviewed helper" in text(r),
                  "dir argument: restored, served again (caches in the tree are not pinned)", r)
        check(not os.path.exists(marker), "dir argument: the agent's code never ran")
        # At spawn, from a cold start.
        s.write("srv/helper.py", evil_module(marker, "SRV"))
        with Gateway(s) as gw:
            gw.initialize()
            r = call(gw, "demo__hello")
            check(is_error(r) and "srv/helper.py drifted" in text(r),
                  "dir argument: a cold start is refused too, naming the file", r)
        check(not os.path.exists(marker), "dir argument: still no marker")


def flag_argument():
    """`node --require=./hooks/hook.cjs server.js`: the hook is preloaded."""
    if not shutil.which("node"):
        print("skip flag argument: node is not installed")
        return
    with Sandbox() as s:
        s.write("server.js", NODE_SERVER)
        s.write("hooks/hook.cjs", HOOK)
        s.write("agentstack.toml", manifest(["--require=./hooks/hook.cjs", "server.js"], "node"))
        grant(s)
        lt = lock_text(s)
        check('path = "hooks"\nkind = "tree"' in lt and 'path = "server.js"' in lt,
              "--flag=path: the lock pins the hook's directory and the script", lt)
        marker = os.path.join(s.root, "marker-hook")
        s.write("hooks/hook.cjs", evil_hook(marker))
        with Gateway(s) as gw:
            gw.initialize()
            r = call(gw, "demo__hello")
            check(is_error(r) and "hooks/hook.cjs drifted" in text(r),
                  "--flag=path: the changed hook is refused, naming it", r)
        check(not os.path.exists(marker), "--flag=path: the agent's hook never ran")
        s.write("hooks/hook.cjs", HOOK)
        with Gateway(s) as gw:
            gw.initialize()
            r = call(gw, "demo__hello")
            check(not is_error(r) and "reviewed hook" in text(r),
                  "--flag=path: the reviewed hook is what runs", r)


def main():
    root_script()
    dir_argument()
    flag_argument()
    done()


if __name__ == "__main__":
    main()
