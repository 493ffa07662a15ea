"""Trust inside the gateway and discovery by roots: the trust gate, the
policy intersection, the toolset fence and the live re-gate, through the
real binary with fake upstreams (mcpclient.FAKE)."""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import (FAKE, Gateway, audit_rows, grant, is_error, modern_meta,  # noqa: E402
                       payload, text)

MACHINE = """version = 1

[policy.tools]
"*" = ["!delete_*", "!*_admin", "!admin_*"]
"""


def opsbox_manifest(marker):
    return f"""version = 1

[servers.opsbox]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "get_status,list_items,delete_everything,admin_reset",
        "--marker", "{marker}"]

[policy.tools]
opsbox = ["get_*", "list_*", "delete_everything"]

[toolsets.default]
servers = ["opsbox"]
"""


def machine(sb, text_=MACHINE):
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(text_)


def intersection():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "opsbox.started")
        machine(sb)
        sb.write("agentstack.toml", opsbox_manifest(marker))
        sb.write("fake.py", FAKE)
        # 6. untrusted
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = g.call("tools_search", {"query": ""})
            check("not trusted" in text(s) and "opsbox__" not in text(s),
                  "6: search says not trusted, no opsbox__", text(s))
            c = g.call("opsbox__get_status", {})
            check(is_error(c) and "unknown tool" in text(c), "6: opsbox__get_status → unknown tool")
            lst = g.call("agentstack_list_loadable", {})
            check(not is_error(lst) and "not trusted" in payload(lst)["note"],
                  "6: list_loadable answers with the trust note", text(lst))
            g.close()
        check(audit_rows(sb) == [], "6: no audit rows")
        check(not os.path.exists(marker), "6: the server never started")
        # 7. trusted
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("opsbox__get_status" in s and "opsbox__list_items" in s and
                  "delete_everything" not in s and "admin_reset" not in s,
                  "7: first search lists only get_status, list_items", s)
            c = g.call("opsbox__get_status", {"token": "value-never-logged-91"})
            check(not is_error(c) and text(c) == "get_status: ok", "7: get_status → ok", c)
            o = g.call("agentstack_lease_open", {"profile": "default"})
            check('"opened": "default"' in text(o) and '"native_files_written": false' in text(o),
                  "7: lease_open default", text(o))
            s2 = text(g.call("tools_search", {"query": ""}))
            check(s2 == s, "7: same search result under the lease", s2)
            for t, rule in (("delete_everything", "!delete_*"), ("admin_reset", "!admin_*")):
                c = g.call("opsbox__" + t, {"token": "value-never-logged-91"})
                check(is_error(c) and rule in text(c) and "machine policy" in text(c),
                      f"7: {t} → denied by machine policy {rule}", text(c))
            check(g.close() == 0, "7: EOF exits 0")
        rows = audit_rows(sb)
        ok = [r for r in rows if r["tool"] == "get_status" and r["outcome"] == "ok"]
        den = [r for r in rows if r["tool"] == "delete_everything"]
        check(len(ok) == 1, "7: an ok row for get_status", rows)
        check(den and den[0]["outcome"] == "denied" and den[0]["rule"] == "!delete_*" and
              den[0]["layer"] == "machine" and "machine policy" in den[0]["detail"],
              "7: a denied row with rule and machine layer", den)
        with open(os.path.join(sb.ah, "audit", "calls.jsonl")) as f:
            check("value-never-logged-91" not in f.read(), "7: no argument values logged")
        # stdio details: [via S], cwd = project root, scrubbed env
        with Gateway(sb, "--auto-project", env=sb.env(SECRET_IN_PARENT="nope-1")) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "get_status"}))
            check("[via opsbox] a fake tool" in s, "descriptions carry [via S]", s)
            g.call("agentstack_lease_open", {"profile": "default"})
            g.close()


FENCE = """version = 1

[servers.demo]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "exfiltrate,read", "--marker", "{marker}"]

[servers.beta]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "bravo"]

[toolsets.safe]
servers = ["beta"]

[toolsets.full]
servers = ["demo"]
"""


def fence():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "demo.started")
        sb.write("agentstack.toml", FENCE.replace("{marker}", marker))
        sb.write("fake.py", FAKE)
        machine(sb, 'version = 1\n\n[policy.tools]\n"*" = ["!exfiltrate"]\n')
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("__" not in s.replace("server__tool", ""), "8: nothing __ listed", s)
            c = g.call("demo__exfiltrate", {})
            t = text(c)
            check(is_error(c) and t.startswith("Error: blocked: demo tried to call exfiltrate")
                  and "nothing ran" in t and "profile=full" in t, "8: fence refusal", t)
            rows = audit_rows(sb)
            check(rows and rows[-1]["tool"] == "fence" and rows[-1]["outcome"] == "denied" and
                  rows[-1]["server"] == "demo" and rows[-1]["args_digest"] == "",
                  "8: last row is a fence denial", rows[-1:])
            check(not os.path.exists(marker), "8: nothing spawned")
            c = g.call("nosuch__x", {})
            check("unknown tool" in text(c), "8: undeclared server → unknown tool")
            check(len(audit_rows(sb)) == len(rows), "8: no row for an unknown tool")
            o = g.call("agentstack_lease_open", {"profile": "full"})
            check(payload(o)["opened"] == "full", "8: lease full")
            c = g.call("demo__exfiltrate", {})
            check(is_error(c) and "!exfiltrate" in text(c) and "machine policy" in text(c),
                  "8: under the lease: policy denial", text(c))
            rows = audit_rows(sb)
            check(rows[-1]["tool"] == "exfiltrate" and rows[-1]["layer"] == "machine",
                  "8: that row is a policy row, not fence", rows[-1])
            c = g.call("demo__read", {})
            check(text(c) == "read: ok", "8: an allowed tool answers", c)
            s = text(g.call("tools_search", {"query": ""}))
            check("demo__read" in s and "beta__" not in s, "8: lease full exposes only demo", s)
            c = g.call("beta__bravo", {})
            check(is_error(c) and "profile=safe" in text(c), "8: beta is fenced under full", c)
            cl = g.call("agentstack_lease_close", {})
            check(payload(cl)["closed"] == "full" and
                  payload(cl)["native_restore_needed"] is False, "8: close")
            s = text(g.call("tools_search", {"query": ""}))
            check("demo__" not in s and "beta__" not in s, "8: after close neither", s)
            g.close()


def regate():
    with Sandbox() as sb:
        machine(sb, "version = 1\n")
        sb.write("agentstack.toml", """version = 1

[servers.ops]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "ping_me"]

[toolsets.work]
servers = ["ops"]
skills = []
""")
        sb.write("fake.py", FAKE)
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            c = g.call("ops__ping_me", {})
            check(text(c) == "ping_me: ok", "10: live call ok", c)
            g.request("ping")  # one loop thread: once this answers, the ok row is written
            before = len(audit_rows(sb))
            r = sb.run("trust", ".", "--revoke")
            check(r.returncode == 0, "10: revoke out of band", r.stderr)
            c = g.call("ops__ping_me", {})
            t = text(c)
            check(is_error(c) and t.startswith("Error: blocked: ops tried to call ping_me on an "
                                               "already-open connection") and
                  "agentstack trust" in t, "10: next call blocked, names agentstack trust", t)
            rows = audit_rows(sb)[before:]
            check(len(rows) == 1 and rows[0]["tool"] == "trust" and
                  rows[0]["detail"] == "revoked", "10: one trust row (revoked)", rows)
            for tool in ("agentstack_doctor", "agentstack_list_loadable",
                         "agentstack_lease_status"):
                r = g.call(tool, {})
                check(r is not None and not is_error(r), f"10: {tool} still answers", r)
            grant(sb)
            c = g.call("ops__ping_me", {})
            check(text(c) == "ping_me: ok", "10: re-trust → new surface, no reconnect", c)
            with open(os.path.join(sb.project, "agentstack.toml"), "a") as f:
                f.write("# an edit\n")
            c = g.call("ops__ping_me", {})
            check(is_error(c) and "changed since it was trusted" in text(c),
                  "10: manifest edit → changed", text(c))
            check(audit_rows(sb)[-1]["detail"] == "changed", "10: trust row (changed)")
            grant(sb)
            c = g.call("ops__ping_me", {})
            check(text(c) == "ping_me: ok", "10: re-trust after the edit", c)
            lock = os.path.join(sb.project, "agentstack.lock")
            with open(lock) as f:
                data = f.read()
            tmp = lock + ".new"
            with open(tmp, "w") as f:
                f.write(data + "\n")
            os.rename(tmp, lock)  # a swap by rename: the directory watch sees it
            c = g.call("ops__ping_me", {})
            check(is_error(c) and "changed since it was trusted" in text(c),
                  "10: lock swap → changed", text(c))
            o = g.call("agentstack_lease_status", {})
            check(not is_error(o), "10: lease_status answers while re-gated")
            fr = g.call("agentstack_lease_freeze", {"name": "observed"})
            check(not is_error(fr) and "observed" in text(fr) and "agentstack lock" in text(fr),
                  "10: lease_freeze still works while re-gated", text(fr))
            with open(os.path.join(sb.project, "agentstack.toml")) as f:
                check("[toolsets.observed]" in f.read(), "10: the manifest got the toolset")
            check(g.close() == 0, "10: EOF exits 0")


def inert():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "inert.started")
        machine(sb, "version = 1\n")
        sb.write("agentstack.toml", f"""version = 1

[servers.box]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "work", "--marker", "{marker}"]
env = {{ TOKEN = "${{INERT_SECRET}}" }}

[skills.notes]
path = "skills/notes"
""")
        sb.write("fake.py", FAKE)
        sb.write("skills/notes/SKILL.md",
                 "---\ndescription: sentinel-description-5521\n---\nBODY-SENTINEL-8813\n")
        env = sb.env(INERT_SECRET="secret-value-3309")
        trust_json = os.path.join(sb.ah, "trust.json")
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            g.tools()
            g.call("tools_search", {"query": ""})
            g.call("box__work", {})
            lst = g.call("agentstack_list_loadable", {})
            entries = payload(lst)["loadable"]
            check([e["name"] for e in entries] == ["using-agentstack", "notes"] and
                  set(entries[1]) == {"name", "kind", "origin"},
                  "11: list_loadable shows names only", entries)
            ld = g.call("agentstack_load", {"name": "notes", "reason": "test"})
            check(is_error(ld) and "not trusted" in text(ld), "11: load refused", text(ld))
            man = g.call("agentstack_load", {"name": "using-agentstack", "reason": "read it"})
            check(not is_error(man) and "tools_search" in payload(man)["instructions"],
                  "11: the manual still loads")
            before = open(trust_json, "rb").read() if os.path.exists(trust_json) else None
            f = g.call("agentstack_trust", {"path": "."})
            check(is_error(f), "11: a forged agentstack_trust is refused")
            after = open(trust_json, "rb").read() if os.path.exists(trust_json) else None
            check(before == after, "11: trust store unchanged")
            g.close()
            traffic = "\n".join(g.raw) + g.stderr()
        check(not os.path.exists(marker), "11: no spawn")
        for s in ("sentinel-description-5521", "BODY-SENTINEL-8813", "secret-value-3309"):
            check(s not in traffic, f"11: {s} never in traffic")
        rows = audit_rows(sb)
        check([r["tool"] for r in rows] == ["trust"], "11: only the load's trust row", rows)
        grant(sb)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            c = g.call("box__env", {})
            child_env = json.loads(text(c))
            check(child_env.get("TOKEN") == "secret-value-3309",
                  "12: the secret reaches the child env (after the grant)")
            check("INERT_SECRET" not in child_env and "AGENTSTACK_HOME" not in child_env,
                  "12: the child env is scrubbed", sorted(child_env))
            cw = text(g.call("box__cwd", {}))
            check(os.path.realpath(cw) == os.path.realpath(sb.project), "12: cwd = project root")
            ld = g.call("agentstack_load", {"name": "notes", "reason": "need notes"})
            check(not is_error(ld) and "BODY-SENTINEL-8813" in payload(ld)["instructions"],
                  "after the grant the skill loads", text(ld))
            g.close()
        check(os.path.exists(marker), "after the grant the server started")


def roots():
    with Sandbox() as sb:
        machine(sb, "version = 1\n")
        other = os.path.join(sb.root, "work", "other")
        os.makedirs(other)
        sb.write("agentstack.toml", "version = 1\n\n[servers.r]\ntype = \"stdio\"\n"
                 "command = \"python3\"\nargs = [\"./fake.py\", \"--tools\", \"rooted\"]\n",
                 base=other)
        sb.write("fake.py", FAKE, base=other)
        grant(sb, base=other)
        # started in an unrelated cwd; the client's root names the project
        uri = "file://" + other.replace(" ", "%20")
        with Gateway(sb, "--auto-project", cwd=sb.root) as g:
            g.initialize(capabilities={"roots": {}})
            ok = g.wait_for(lambda: g.requests)
            req = g.requests[0] if ok else {}
            check(req.get("method") == "roots/list", "roots: the gateway asks roots/list", req)
            early = g.start("tools/call", {"name": "tools_search", "arguments": {}})
            g.send({"jsonrpc": "2.0", "id": req.get("id"),
                    "result": {"roots": [{"uri": uri, "name": "other"}]}})
            r = g.wait(early)
            check(r and "r__rooted" in text(r["result"]),
                  "roots: an early request waits for the answer and binds that root", r)
            g.close()


DEFAULTS = """version = 1
default_toolset = "{d}"

[servers.sp]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "pt"]

[servers.sq]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "qt"]

[toolsets.p]
servers = ["sp"]

[toolsets.q]
servers = ["sq"]
"""


def modern_default():
    with Sandbox() as sb:
        machine(sb, "version = 1\n")
        sb.write("fake.py", FAKE)
        sb.write("agentstack.toml", DEFAULTS.format(d="p"))
        with Gateway(sb, "--auto-project", "--manifest-dir", sb.project) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("sp__pt" in s and "sq__" not in s, "9: legacy: the default toolset p opens", s)
            m = text(g.call("tools_search", {"query": ""}, meta=modern_meta()))
            check("sp__pt" in m and "sq__" not in m, "9: modern: serves the default p", m)
            sb.write("agentstack.toml", DEFAULTS.format(d="q"))
            m = text(g.call("tools_search", {"query": ""}, meta=modern_meta()))
            check("sq__qt" in m and "sp__" not in m, "9: disk default p→q: modern serves q", m)
            s = text(g.call("tools_search", {"query": ""}))
            check("sp__pt" in s and "sq__" not in s, "9: legacy keeps p", s)
            c = g.call("sq__qt", {}, meta=modern_meta())
            check(text(c) == "qt: ok", "9: a modern call reaches q's server", c)
            c = g.call("sq__qt", {})
            check(is_error(c) and "profile=q" in text(c), "9: the legacy lease still fences q")
            g.close()
        sb.write("agentstack.toml", DEFAULTS.format(d="missing"))
        with Gateway(sb, "--auto-project", "--manifest-dir", sb.project) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("__" not in s.replace("server__tool", ""),
                  "9: unopenable default → empty surface", s)
            st = payload(g.call("agentstack_lease_status", {}))
            check(st["active"] is False, "9: …and no lease", st)
            g.close()


def pins():
    """Executables are checked against the lock when the surface is built and
    hashed again right before each spawn: edited bytes are refused, not run."""
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "p.started")
        machine(sb, "version = 1\n")
        sb.write("fake.py", FAKE)
        sb.write("agentstack.toml", 'version = 1\n\n[servers.p]\ntype = "stdio"\n'
                 'command = "python3"\nargs = ["./fake.py", "--tools", "t", "--marker", "%s"]\n'
                 % marker)
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.tools()  # builds the surface; compact mode spawns nothing
            with open(os.path.join(sb.project, "fake.py"), "a") as f:
                f.write("# tampered after the check\n")
            c = g.call("p__t", {})
            check(is_error(c) and "drifted from agentstack.lock" in text(c) and
                  not os.path.exists(marker), "pins: an edit before the spawn is refused",
                  text(c))
            check(audit_rows(sb)[-1]["tool"] == "pin", "pins: a pin row")
            g.close()
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            c = g.call("p__t", {})
            check(is_error(c) and "not served" in text(c) and not os.path.exists(marker),
                  "pins: a drifted executable is skipped at build", text(c))
            g.close()
        rows = [r for r in audit_rows(sb) if r["tool"] == "pin"]
        check(len(rows) >= 2 and all(r["args_digest"] == "" for r in rows),
              "pins: pin rows are family rows", rows)


def cwd_symlink():
    """A server's project-relative cwd swapped for a symlink after trust is
    refused — both when the gateway starts after the swap (the cwd's pin
    failure is that server's) and when the swap happens after the surface
    was built (re-checked right before the spawn). The trust digest covers
    manifest, overlay and lock bytes, not a directory turned into a link,
    so this is the pins' job."""
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "evil.started")
        machine(sb, "version = 1\n")
        for d, extra in (("sub", ""), ("evil", " --marker " + marker)):
            sb.write(d + "/fake.py", FAKE)
            sb.write(d + "/run.sh", "#!/bin/sh\nexec python3 fake.py --tools t%s\n" % extra)
            os.chmod(os.path.join(sb.project, d, "run.sh"), 0o755)
        sb.write("agentstack.toml", 'version = 1\n\n[servers.m]\ntype = "stdio"\n'
                 'command = "./run.sh"\ncwd = "sub"\n')
        grant(sb)
        sub = os.path.join(sb.project, "sub")
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.tools()  # surface built with the real directory; nothing spawned yet
            os.rename(sub, sub + ".orig")
            os.symlink("evil", sub)
            c = g.call("m__t", {})
            # the live re-gate sees the pinned run.sh change (the link's
            # target differs) or the cwd check sees the link: either refuses
            check(is_error(c) and ("symlink" in text(c) or "drifted from agentstack.lock"
                                   in text(c)) and not os.path.exists(marker),
                  "cwd swapped for a symlink after the surface was built: refused, nothing ran",
                  text(c))
            g.close()
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            c = g.call("m__t", {})
            check(is_error(c) and "not served" in text(c) and "symlink" in text(c) and
                  not os.path.exists(marker),
                  "cwd already a symlink when the gateway starts: the server is not served",
                  text(c))
            g.close()
        os.remove(sub)
        os.rename(sub + ".orig", sub)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            c = g.call("m__t", {})
            check(not is_error(c), "the real directory back: the server runs", text(c))
            g.close()


def main():
    intersection()
    pins()
    cwd_symlink()
    modern_default()
    fence()
    regate()
    inert()
    roots()
    done()


main()
