"""`agentstack mcp --grant PATH` (docs/gateway.md): the gateway entry a protected
run hands its harness. The test freezes a run the way sandbox/sbx_host.c does
(grant.json = canonical JSON + newline under $AGENTSTACK_HOME/runs/<id>/, its
SHA-256 recorded as `grant_frozen` in the run's hash-chained events.jsonl), then
drives the gateway: the frozen fence and ruleset are served; leases and manifest
edits are refused; every way of forging, moving, editing or outliving a grant
serves nothing (control plane only, a stderr note, no upstream spawned)."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, write_anchor  # noqa: E402
from mcpclient import (FAKE, Gateway, audit_rows, grant, is_error, payload,  # noqa: E402
                       run_process, text)

RUN = "r-grant-test-1"
MACHINE = """version = 1

[policy.tools]
"*" = ["!delete_*"]
"""
SKILL = """---
name: review-checklist
description: Review steps for this repo.
---
Check the tests.
"""


def manifest(marker):
    return f"""version = 1

[servers.ops]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "get_status,delete_everything", "--marker", "{marker}"]

[servers.other]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "exfiltrate", "--marker", "{marker}"]

[skills.review-checklist]
path = "skills/review-checklist"

[skills.outside]
path = "skills/outside"

[toolsets.ops]
servers = ["ops"]
skills = ["review-checklist"]
"""


def chain(rows):
    """Hash-chained JSONL: each line ends with the SHA-256 of the
    previous line's bytes; the first links to 64 zeros."""
    out, prev = [], "0" * 64
    for r in rows:
        r = dict(r)
        r["prev"] = prev
        line = json.dumps(r, separators=(",", ":"), ensure_ascii=False)
        out.append(line)
        prev = hashlib.sha256(line.encode()).hexdigest()
    return "".join(line + "\n" for line in out)


def freeze(sb, consent, ruleset, run=RUN, toolset="ops", servers=("ops",),
           skills=("review-checklist",), extra_events=(), run_pid=None):
    d = os.path.join(sb.ah, "runs", run)
    os.makedirs(d, mode=0o700, exist_ok=True)
    g = {"version": 1, "kind": "agentstack-run-grant", "run_id": run, "harness": "claude",
         "project_root": os.path.realpath(sb.project), "manifest_dir": sb.project,
         "manifest": os.path.join(sb.project, "agentstack.toml"), "consent_digest": consent,
         "toolset": toolset, "fence": {"servers": list(servers), "skills": list(skills)},
         "servers": {}, "ruleset": ruleset, "argv": ["claude"], "binary": "/usr/bin/claude"}
    data = (json.dumps(g, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            + "\n").encode()
    path = os.path.join(d, "grant.json")
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.close(fd)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    rows = [{"event": "attempt_started", "ts": 1, "harness": "claude",
             "posture": "host-protected"},
            {"event": "gate_decision", "ts": 1, "gate": "grant-freeze", "passed": True,
             "detail": "frozen"},
            {"event": "grant_frozen", "ts": 1, "grant_digest": digest,
             **run_process(run_pid)}]
    rows += list(extra_events)
    ev = os.path.join(d, "events.jsonl")
    with open(ev, "w") as f:
        f.write(chain(rows))
    os.chmod(ev, 0o600)
    write_anchor(sb.ah, ev)
    return path


def setup(sb):
    marker = os.path.join(sb.root, "spawned")
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    sb.write("agentstack.toml", manifest(marker))
    sb.write("fake.py", FAKE)
    sb.write("skills/review-checklist/SKILL.md", SKILL)
    sb.write("skills/outside/SKILL.md", SKILL.replace("review-checklist", "outside"))
    grant(sb)
    consent = json.loads(sb.run("trust", ".", "--preview").stdout)["surface_digest"]
    ruleset = json.loads(sb.run("policy", "ruleset").stdout)
    return marker, consent, ruleset


def good():
    with Sandbox() as sb:
        marker, consent, ruleset = setup(sb)
        path = freeze(sb, consent, ruleset)
        # Tighten the machine policy after the freeze: the run keeps what it was admitted with.
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write('version = 1\n\n[policy.tools]\n"*" = ["!delete_*", "!get_*"]\n')
        before = open(os.path.join(sb.project, "agentstack.toml")).read()
        with Gateway(sb, "--grant", path) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("ops__get_status" in s and "delete_everything" not in s and "other__" not in s,
                  "grant: search lists the fence's allowed tools only", s)
            c = g.call("ops__get_status", {"token": "never-logged-5521"})
            check(not is_error(c) and text(c) == "get_status: ok",
                  "grant: a fenced tool is brokered under the frozen ruleset", c)
            c = g.call("ops__delete_everything", {})
            check(is_error(c) and "!delete_*" in text(c) and "machine policy" in text(c),
                  "grant: the frozen machine rule denies", text(c))
            c = g.call("other__exfiltrate", {})
            check(is_error(c) and "does not admit" in text(c) and RUN in text(c),
                  "grant: a server outside the fence is refused", text(c))
            lo = g.call("agentstack_lease_open", {"profile": "ops"})
            check(is_error(lo) and "frozen grant" in text(lo), "grant: lease_open refused",
                  text(lo))
            lf = g.call("agentstack_lease_freeze", {"name": "x"})
            check(is_error(lf) and "frozen grant" in text(lf), "grant: lease_freeze refused",
                  text(lf))
            lc = g.call("agentstack_lease_close", {})
            check(is_error(lc) and "frozen grant" in text(lc), "grant: lease_close refused")
            # the tools that change the project: a frozen grant is fixed
            for name, args in (("agentstack_add_server", {"name": "evil", "command": "sh"}),
                               ("agentstack_add_skill", {"name": "s", "path": "skills/x"}),
                               ("agentstack_create_toolset", {"name": "t", "servers": ["ops"]}),
                               ("agentstack_create_profile", {"name": "t"}),
                               ("agentstack_session_start", {"profile": "ops"}),
                               ("agentstack_session_end", {}),
                               ("agentstack_session_freeze", {})):
                w = g.call(name, args)
                check(is_error(w) and "frozen grant" in text(w) and RUN in text(w),
                      f"grant: {name} refused", text(w))
            check(open(os.path.join(sb.project, "agentstack.toml")).read() == before,
                  "grant: the manifest is untouched by the refused writers")
            st = payload(g.call("agentstack_lease_status", {}))
            check(st.get("active") is False and RUN in st.get("note", ""),
                  "grant: lease_status names the grant", st)
            ll = payload(g.call("agentstack_list_loadable", {}))
            names = [e["name"] for e in ll.get("loadable", [])]
            check("review-checklist" in names and "outside" not in names and ll["fenced"],
                  "grant: skills are fenced to the grant's", ll)
            ld = g.call("agentstack_load", {"name": "outside", "reason": "r"})
            check(is_error(ld) and "not loadable" in text(ld), "grant: a skill outside is refused",
                  text(ld))
            ld = payload(g.call("agentstack_load", {"name": "review-checklist", "reason": "r"}))
            check(ld.get("loaded") == "review-checklist", "grant: a fenced skill loads", ld)
            check(g.close() == 0, "grant: EOF exits 0")
        rows = audit_rows(sb)
        ok = [r for r in rows if r.get("tool") == "get_status" and r["outcome"] == "ok"]
        check(ok and ok[0].get("run") == RUN, "grant: audit rows carry the run id", rows)
        check(any(r.get("tool") == "fence" and r.get("server") == "other" for r in rows),
              "grant: the fence refusal has a fence row", rows)
        check("never-logged-5521" not in json.dumps(rows), "grant: no argument values logged")
        after = open(os.path.join(sb.project, "agentstack.toml")).read()
        check(before == after, "grant: the manifest was not edited")

        # The project changes after the freeze: nothing is served, the call says why.
        with open(os.path.join(sb.project, "agentstack.toml"), "a") as f:
            f.write("\n# edited after the run froze its grant\n")
        n_before = len(audit_rows(sb))
        os.unlink(marker)
        with Gateway(sb, "--grant", path) as g:
            g.initialize()
            c = g.call("ops__get_status", {})
            check(is_error(c) and "blocked:" in text(c) and "agentstack trust" in text(c),
                  "grant, project changed: the call is blocked", text(c))
            g.close()
        new = audit_rows(sb)[n_before:]
        check(any(r.get("tool") == "trust" and r["outcome"] == "denied" for r in new),
              "grant, project changed: one trust row", new)
        check(not os.path.exists(marker), "grant, project changed: nothing spawned")


def refused(sb, marker, path, what, env=None, why=""):
    if os.path.exists(marker):
        os.unlink(marker)
    with Gateway(sb, "--grant", path, env=env) as g:
        g.initialize()
        names = g.tools()
        s = text(g.call("tools_search", {"query": ""}))
        c = g.call("ops__get_status", {})
        lo = g.call("agentstack_lease_open", {"profile": "ops"})
        rc = g.close()
        err = g.stderr()
    check(names is not None and len(names) > 0 and not any("__" in n for n in names),
          what + ": tools/list is the control plane only", names)
    check("No proxied tools available" in s and "--grant refused" in s,
          what + ": search says the grant was refused", s)
    check(is_error(c) and "unknown tool" in text(c), what + ": ops__get_status is unknown",
          text(c))
    check(is_error(lo), what + ": lease_open refused", text(lo))
    check(rc == 0 and "--grant refused" in err and why in err,
          what + ": stderr explains (%s)" % why, err)
    check(not os.path.exists(marker), what + ": nothing spawned")


def bad():
    with Sandbox() as sb:
        marker, consent, ruleset = setup(sb)
        path = freeze(sb, consent, ruleset)
        # A copy outside runs/<id>/ (a repository shipping its own grant).
        copy = os.path.join(sb.project, "grant.json")
        shutil.copy(path, copy)
        refused(sb, marker, copy, "outside runs/", why="is not inside")
        # A symlink inside runs/<id>/ pointing at the repository's copy.
        link_dir = os.path.join(sb.ah, "runs", "r-link")
        os.makedirs(link_dir)
        os.symlink(copy, os.path.join(link_dir, "grant.json"))
        refused(sb, marker, os.path.join(link_dir, "grant.json"), "symlinked",
                why="is not inside")
        # Nested deeper than runs/<id>/<file>.
        deep = os.path.join(sb.ah, "runs", RUN, "sub")
        os.makedirs(deep)
        shutil.copy(path, os.path.join(deep, "grant.json"))
        refused(sb, marker, os.path.join(deep, "grant.json"), "nested", why="directly inside")
        # Edited after the freeze: the digest no longer matches.
        with open(path) as f:
            g = json.load(f)
        g["fence"]["servers"] = ["ops", "other"]
        os.chmod(path, 0o600)
        with open(path, "w") as f:
            f.write(json.dumps(g, sort_keys=True, separators=(",", ":")) + "\n")
        refused(sb, marker, path, "edited", why="does not match")
        # No grant_frozen event at all.
        path = freeze(sb, consent, ruleset)
        ev = os.path.join(sb.ah, "runs", RUN, "events.jsonl")
        lines = open(ev).read().splitlines()
        with open(ev, "w") as f:
            f.write(chain([{k: v for k, v in json.loads(x).items() if k != "prev"}
                           for x in lines[:2]]))
        write_anchor(sb.ah, ev)  # a consistent log that never froze a grant
        refused(sb, marker, path, "never frozen", why="records no frozen grant")
        # The run log's chain broken (the digest line rewritten to match an edit).
        path = freeze(sb, consent, ruleset)
        lines = open(ev).read().splitlines()
        first = json.loads(lines[0])
        first["harness"] = "other"
        lines[0] = json.dumps(first, separators=(",", ":"))
        with open(ev, "w") as f:
            f.write("\n".join(lines) + "\n")
        refused(sb, marker, path, "broken chain", why="is broken at")
        # The run has ended: a grant never outlives its run.
        path = freeze(sb, consent, ruleset, extra_events=[
            {"event": "locked_outcome", "ts": 2, "outcome": "completed", "usage": "unavailable"}])
        refused(sb, marker, path, "ended run", why="has ended")
        # Another run's process.
        path = freeze(sb, consent, ruleset)
        refused(sb, marker, path, "other run id", env=sb.env(AGENTSTACK_RUN_ID="r-other"),
                why="belongs to run")
        # Writable by others.
        os.chmod(path, 0o666)
        refused(sb, marker, path, "group/world-writable", why="writable by other users")
        os.chmod(path, 0o600)
        # Missing.
        refused(sb, marker, os.path.join(sb.ah, "runs", RUN, "nope.json"), "missing",
                why="nope.json")
        # The same good grant still serves (the checks above were the only difference).
        with Gateway(sb, "--grant", path) as g:
            g.initialize()
            c = g.call("ops__get_status", {})
            check(not is_error(c), "the untouched grant serves", text(c))
            g.close()


def killed():
    """A run killed with SIGKILL records no end: its grant must die with its
    process (pid and start time in grant_frozen), both for a gateway started
    afterwards and for one that was serving when the run died."""
    with Sandbox() as sb:
        marker, consent, ruleset = setup(sb)
        run = subprocess.Popen(["sleep", "600"])  # stands in for `agentstack run`
        try:
            path = freeze(sb, consent, ruleset, run_pid=run.pid)
            with Gateway(sb, "--grant", path) as g:
                g.initialize()
                c = g.call("ops__get_status", {})
                check(not is_error(c), "killed: the grant serves while its run lives", text(c))
                run.send_signal(signal.SIGKILL)
                run.wait()
                c = g.call("ops__get_status", {})
                t = text(c)
                check(is_error(c) and "has ended (its process is gone)" in t
                      and "does not outlive its run" in t,
                      "killed: the serving gateway refuses once the run is SIGKILLed", t)
                s = text(g.call("tools_search", {"query": "status"}))
                check("ops__get_status" not in s, "killed: nothing is listed any more", s)
                g.close()
            rows = [r for r in audit_rows(sb) if r.get("detail") == "run-ended"]
            check(rows and rows[-1]["outcome"] == "denied",
                  "killed: the refusal has its audit row", audit_rows(sb))
            # A gateway started after the kill: refused outright.
            r = subprocess.run([BIN, "mcp", "--grant", path], input="", capture_output=True,
                               text=True, env=sb.env(), cwd=sb.project, timeout=60)
            check("--grant refused" in r.stderr and "its process is gone" in r.stderr,
                  "killed: a gateway started afterwards refuses the grant", r.stderr)
            # The same pid reused by another process is not the run.
            other = run_process()
            other["pid_start"] += 1
            path = freeze(sb, consent, ruleset, run="r-grant-test-2")
            ev = os.path.join(sb.ah, "runs", "r-grant-test-2", "events.jsonl")
            rows = [json.loads(line) for line in open(ev)]
            for row in rows:
                row.pop("prev", None)
                if row["event"] == "grant_frozen":
                    row.update(other)
            with open(ev, "w") as f:
                f.write(chain(rows))
            write_anchor(sb.ah, ev)
            r = subprocess.run([BIN, "mcp", "--grant", path], input="", capture_output=True,
                               text=True, env=sb.env(), cwd=sb.project, timeout=60)
            check("--grant refused" in r.stderr and "its process is gone" in r.stderr,
                  "killed: a pid whose start time differs is not the run", r.stderr)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()


def usage():
    with Sandbox() as sb:
        r = sb.run("mcp", "--grant", "/x", "--auto-project")
        check(r.returncode == 2 and "--auto-project" in r.stderr,
              "--grant with --auto-project is a usage error", r.stderr)
        r = sb.run("mcp", "--grant", "/x", "--manifest-dir", sb.project)
        check(r.returncode == 2, "--grant with --manifest-dir is a usage error", r.stderr)


good()
bad()
killed()
usage()
done()
