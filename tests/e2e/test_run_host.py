"""The protected host run (docs/sandbox.md): `run <cli>` gates
trust, pins and policy; freezes the toolset into runs/<id>/grant.json with
its digest recorded as grant_frozen; launches the harness with its native
config injected so the only added MCP entry is `agentstack mcp --grant
<file>`; and reverts that config byte for byte after the harness exits,
after a signal, and — when the launcher itself was SIGKILLed — at the next
run. Exit codes propagate (128+n for a signal); a refusal exits 1 and
injects nothing. --plan names trust, mode, mounts and the exact command.

The harness is a drop-in adapter whose detect.bin is a python script that
prints its argv, AGENTSTACK_RUN_ID, cwd and the injected config.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402

from runlib import ADAPTER, FAKE, HAND, MANIFEST, env, fake_json, run, setup  # noqa: E402,F401


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[p] = ("file", f.read())
            else:
                out[p] = ("dir", None)
    return out


def field(out, name):
    m = re.search(r"^%s (.*)$" % name, out, re.M)
    return m.group(1) if m else None


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def events(s, rid):
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        return [json.loads(x) for x in f]


def sessions(s):
    p = os.path.join(s.ah, "sessions.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f).get("sessions", {})


def trust(s):
    p = run(s, "trust", "--preview")
    d = json.loads(p.stdout)["surface_digest"]
    t = run(s, "trust", "--yes", "--consented", d)
    assert t.returncode == 0, t.stdout + t.stderr


def runs_count(s):
    d = os.path.join(s.ah, "runs")
    return len(os.listdir(d)) if os.path.isdir(d) else 0


def untrusted(s):
    before = tree(s.project)
    r = run(s, "run", "fakecli")
    check(r.returncode == 1, "untrusted: refused with exit 1", r.stdout + r.stderr)
    check("[trust]" in r.stderr and "is not trusted" in r.stderr and
          "nothing was launched" in r.stderr, "untrusted: the trust gate names the reason",
          r.stderr)
    check("ARGV" not in r.stdout, "untrusted: the harness did not run", r.stdout)
    check("posture: HOST / PROTECTED" in r.stdout, "the banner carries the posture label",
          r.stdout)
    check(tree(s.project) == before, "untrusted: nothing injected, the project is unchanged")
    check(sessions(s) == {}, "untrusted: no session recorded")
    rid = run_id(r.stdout)
    ev = events(s, rid) if rid else []
    names = [e["event"] for e in ev]
    check(names[:1] == ["attempt_started"] and names[-1] == "locked_outcome" and
          ev[-1].get("outcome") == "refused" and "grant_frozen" not in names,
          "untrusted: the refused attempt is recorded, no grant", names)
    check(not os.path.exists(os.path.join(s.ah, "runs", rid or "x", "grant.json")),
          "untrusted: no grant file")
    p = run(s, "run", "fakecli", "--plan")
    check(p.returncode == 1 and "would be REFUSED — " in p.stdout and "[trust]" in p.stdout,
          "untrusted --plan: the blockers, exit 1", p.stdout + p.stderr)


def plan(s):
    n = runs_count(s)
    before = tree(s.project)
    p = run(s, "run", "fakecli", "--plan", "--profile", "backend", "--", "one", "two words")
    out = p.stdout
    check(p.returncode == 0 and "live launch would proceed" in out, "--plan: would proceed",
          out + p.stderr)
    for want in ("posture: HOST / PROTECTED", "trust: bundle trusted", "mode: host",
                 "mounts: none", "toolset: backend", "✓ policy-admission", "✓ locked-verify",
                 "proposed grant:", "'two words'", "cwd: " + os.path.realpath(s.project)):
        check(want in out, "--plan names: " + want, out)
    cmd = field(out, "  command:")
    check(cmd and cmd.endswith("fakecli one 'two words'"), "--plan: the exact command", cmd)
    check("sekrit-value" not in out, "--plan: no secret value in the proposed grant")
    check(runs_count(s) == n and tree(s.project) == before, "--plan creates nothing")
    q = run(s, "run", "--sandbox", "fakecli", "--plan", "--profile", "backend")
    if q.returncode == 0:
        check("toolset: backend" in q.stdout and "mounts:" in q.stdout and
              "command:" in q.stdout, "--sandbox --plan with --profile names the toolset",
              q.stdout)
    else:
        check("nothing was launched" in q.stderr, "--sandbox --plan refuses cleanly where "
              "namespaces are unavailable", q.stderr)


def trusted_run(s):
    s.write(".fake.json", '{"mcpServers": {"glob": {"command": "g"}}}\n', base=s.home)
    before = tree(s.project)
    r = run(s, "run", "fakecli", "--profile", "backend", "--", "one", "two words",
            cwd=os.path.join(s.project, "sub"))
    out = r.stdout
    check(r.returncode == 0, "trusted: launched, exit 0", out + r.stderr)
    rid = run_id(out)
    check(json.loads(field(out, "ARGV") or "null") == ["one", "two words"],
          "argv after -- verbatim, no shell", out)
    check(field(out, "RUNID") == rid, "AGENTSTACK_RUN_ID is the run id", out)
    check(field(out, "CWD") == os.path.realpath(s.project), "the harness starts at the root",
          out)
    cfg = json.loads(field(out, "CONFIG") or "{}")
    entry = cfg.get("mcpServers", {}).get("agentstack-gateway", {})
    grant = os.path.join(s.ah, "runs", rid or "x", "grant.json")
    check(entry.get("args") == ["mcp", "--grant", grant], "the injected entry is agentstack "
          "mcp --grant <the run's grant>", cfg)
    cmd = entry.get("command", "")
    check(os.path.realpath(cmd) == os.path.realpath(BIN), "the entry runs this binary", cmd)
    check(sorted(cfg.get("mcpServers", {})) == ["agentstack-gateway", "mine"],
          "the toolset's own servers are not rendered: only the gateway was added", cfg)
    check("authority grant frozen: sha256:" in out, "the banner prints the grant digest", out)
    ev = events(s, rid)
    frozen = [e for e in ev if e["event"] == "grant_frozen"]
    with open(grant, "rb") as f:
        gb = f.read()
    check(frozen and frozen[0]["grant_digest"] == "sha256:" + hashlib.sha256(gb).hexdigest(),
          "grant_frozen records the SHA-256 of the grant file's bytes", frozen)
    check(oct(os.stat(grant).st_mode & 0o777) == "0o600", "the grant file is 0600")
    g = json.loads(gb)
    check(g["fence"] == {"servers": ["a"], "skills": ["s1"]} and g["toolset"] == "backend" and
          g["run_id"] == rid, "the grant freezes the toolset's fence", g.get("fence"))
    check(g["servers"]["a"]["env"] == {"TOKEN": "${API_TOKEN}"} and b"sekrit-value" not in gb,
          "the grant holds ${REF}s, never a secret value", g["servers"])
    check(g["argv"][1:] == ["one", "two words"] and "ruleset" in g and
          g["consent_digest"].startswith("sha256:"), "the grant has argv, ruleset, consent")
    gates = [e["gate"] for e in ev if e["event"] == "gate_decision"]
    check(gates == ["trust", "locked-verify", "rendered-verify", "policy-admission",
                    "model-effort", "mcp-injection", "grant-freeze", "grant-handoff",
                    "launch-scope"], "every gate is recorded in order", gates)
    last = ev[-1]
    check(last["event"] == "locked_outcome" and last["outcome"] == "completed" and
          last["exit_code"] == 0 and last["grant_digest"] == frozen[0]["grant_digest"],
          "locked_outcome completed", last)
    check("also lists 1 MCP server(s) agentstack does not gate" in r.stderr and
          "this run: mine" in r.stderr, "hand-written entries beside the gateway are named",
          r.stderr)
    check("its user config ~/.fake.json also lists 1 MCP server(s)" in r.stderr and
          "this run: glob" in r.stderr, "the CLI's user-scope entries are named", r.stderr)
    check(fake_json(s) == HAND, "after exit the config is byte-identical")
    check(tree(s.project) == before, "after exit the project tree is exactly as before")
    check(sessions(s) == {}, "after exit no session is left")
    rep = run(s, "report", rid)
    check(rep.returncode == 0 and "Locked run fakecli · HOST / PROTECTED" in rep.stdout and
          "Grant     sha256:" in rep.stdout and re.search(r"Exit\s+0", rep.stdout) and
          "Posture   HOST / PROTECTED" in rep.stdout, "report shows the locked run",
          rep.stdout)
    lst = run(s, "runs", "--json")
    rows = {x["id"]: x for x in json.loads(lst.stdout)}
    check(rows.get(rid, {}).get("exit") == 0 and rows[rid]["posture"] == "host-protected",
          "runs lists it", rows.get(rid))
    # Default toolset: none is default and there are two, so the whole bundle.
    w = run(s, "run", "fakecli")
    g2 = json.load(open(os.path.join(s.ah, "runs", run_id(w.stdout), "grant.json")))
    check(w.returncode == 0 and g2["toolset"] is None and
          sorted(g2["fence"]["servers"]) == ["a", "web"], "no toolset named: the whole bundle",
          g2.get("fence"))


def gateway_handoff(s):
    # The closed loop: the harness starts the entry it was given; the gateway
    # accepts the run's grant and serves exactly its fence.
    r = run(s, "run", "fakecli", "--profile", "backend", FAKE_MCP="1")
    out = r.stdout
    rid = run_id(out)
    st = field(out, "MCP agentstack_lease_status")
    check(r.returncode == 0 and st and rid in st and "--grant refused" not in out,
          "the injected gateway serves this run's grant", out + r.stderr)
    ld = json.loads(field(out, "MCP agentstack_list_loadable") or "{}")
    names = sorted(x["name"] for x in ld.get("loadable", []) if x.get("origin") != "builtin")
    check(names == ["s1"], "the gateway serves the frozen fence only (skill s1, not s2)", ld)
    check(field(out, "MCPRC") == "0", "the gateway exits 0 at EOF", out)
    grant = os.path.join(s.ah, "runs", rid or "x", "grant.json")
    after = subprocess.run([BIN, "mcp", "--grant", grant], input="", capture_output=True,
                           text=True, env=env(s), cwd=s.project, timeout=60)
    check("--grant refused" in after.stderr, "the grant is refused once its run has ended",
          after.stderr)


def exit_codes(s):
    r = run(s, "run", "fakecli", FAKE_EXIT="7")
    check(r.returncode == 7, "exit code 7 propagates", r.returncode)
    rid = run_id(r.stdout)
    check(events(s, rid)[-1].get("exit_code") == 7, "locked_outcome records it")
    r = run(s, "run", "fakecli", FAKE_SIGNAL=str(int(signal.SIGUSR1)))
    check(r.returncode == 128 + int(signal.SIGUSR1), "a signalled harness exits 128+n",
          r.returncode)
    check(fake_json(s) == HAND, "reverted after a signalled harness")


def sigterm(s):
    p = subprocess.Popen([BIN, "run", "fakecli"], cwd=s.project, env=env(s, FAKE_BLOCK="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.startswith("READY"):
            break
    check("agentstack-gateway" in fake_json(s), "while running the entry is injected")
    p.send_signal(signal.SIGTERM)
    rest, err = p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGTERM), "SIGTERM: the harness's status (143)",
          (p.returncode, err))
    check(fake_json(s) == HAND, "SIGTERM: the config is reverted byte for byte")
    check("reverted" in err, "SIGTERM: says it reverted", err)
    rid = run_id("".join(seen))
    last = events(s, rid)[-1]
    check(last.get("outcome") == "completed" and last.get("signal") == int(signal.SIGTERM),
          "SIGTERM: recorded", last)


def sigterm_ignored(s):
    p = subprocess.Popen([BIN, "run", "fakecli"], cwd=s.project,
                         env=env(s, FAKE_BLOCK="1", FAKE_IGNORE_TERM="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("READY"):
            break
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGKILL), "a harness ignoring SIGTERM is SIGKILLed "
          "(137)", (p.returncode, err))
    check(fake_json(s) == HAND, "and the config is reverted")


def group_ends(s):
    # A process the harness left behind in its group holds stdout open; the
    # run returning at all (s.run waits for EOF) shows the group was ended.
    try:
        r = run(s, "run", "fakecli", FAKE_BG="1")
        ok = r.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    check(ok, "the run's process group ends with the run")


def sigkill(s):
    p = subprocess.Popen([BIN, "run", "fakecli"], cwd=s.project, env=env(s, FAKE_BLOCK="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if line.startswith("READY"):
            break
    p.kill()
    p.wait()
    # The harness holds the pipe: EOF means it ended with its launcher
    # (parent-death signal). The select bound only guards against a hang.
    import select
    r, _, _ = select.select([p.stdout], [], [], 60)
    check(bool(r) and p.stdout.read() == "", "the harness does not outlive a killed launcher")
    p.stdout.close()
    check("agentstack-gateway" in fake_json(s), "launcher SIGKILLed: the entry is still there")
    check(len(sessions(s)) == 1, "launcher SIGKILLed: its session is recorded")
    pl = run(s, "run", "fakecli", "--plan")
    check("agentstack-gateway" in fake_json(s), "--plan does not write (no recovery)",
          pl.stderr)
    r = run(s, "run", "fakecli")
    check("finishing the revert of a run whose launcher is gone" in r.stderr,
          "the next run recovers", r.stderr)
    cfg = json.loads(field(r.stdout, "CONFIG") or "{}")
    check(sorted(cfg.get("mcpServers", {})) == ["agentstack-gateway", "mine"],
          "the next run injects afresh", cfg)
    check(fake_json(s) == HAND, "after recovery and the next run: byte-identical")
    check(sessions(s) == {}, "no session left")


def refusals(s):
    r = run(s, "run", "fakecli", "--locked", "--unprotected")
    check(r.returncode == 1 and "contradict each other" in r.stderr, "--locked --unprotected")
    r = run(s, "run", "fakecli", "--unprotected", "--plan")
    check(r.returncode == 1 and "--plan needs a gated run mode" in r.stderr,
          "--unprotected --plan refused")
    r = run(s, "run", "fakecli", "--profile", "nope")
    check(r.returncode == 1 and "no toolset 'nope'" in r.stderr and "backend" in r.stderr,
          "an unknown toolset is refused with the names", r.stderr)
    r = run(s, "run", "fakecli", "--keep")
    check(r.returncode == 1 and "--keep applies only" in r.stderr, "--keep needs --unprotected")
    r = run(s, "run", "fakecli", "--locked", "--sandbox")
    check(r.returncode == 1 and "not wired" in r.stderr, "--locked --sandbox refused")
    check(fake_json(s) == HAND, "refusals changed nothing")


def locked_verify(s):
    skill = os.path.join(s.project, ".agentstack", "skills", "s2", "SKILL.md")
    with open(skill, "a") as f:
        f.write("drifted\n")
    r = run(s, "run", "fakecli", "--profile", "webby")
    check(r.returncode == 1 and "[locked-verify]" in r.stderr, "a drifted pin in the fence "
          "refuses", r.stderr)
    check(fake_json(s) == HAND, "locked-verify refusal injects nothing")
    r = run(s, "run", "fakecli", "--profile", "backend")
    check(r.returncode == 0, "the same drift outside the fence does not block", r.stderr)
    with open(skill) as f:
        body = f.read().replace("drifted\n", "")
    with open(skill, "w") as f:
        f.write(body)


def policy(s):
    machine = os.path.join(s.ah, "agentstack.toml")
    s.write("agentstack.toml", 'version = 1\n\n[policy.egress]\n"*" = ["!mcp.example.com"]\n',
            base=s.ah)
    r = run(s, "run", "fakecli", "--profile", "webby")
    check(r.returncode == 1 and "[policy-admission]" in r.stderr and "mcp.example.com" in
          r.stderr, "an HTTP server the machine egress policy denies refuses", r.stderr)
    s.write("agentstack.toml", 'version = 1\n\n[policy.secrets]\n"*" = ["!API_TOKEN"]\n',
            base=s.ah)
    r = run(s, "run", "fakecli", "--profile", "backend")
    check(r.returncode == 1 and "[policy-admission]" in r.stderr and "API_TOKEN" in r.stderr,
          "a secret reference the machine policy denies refuses", r.stderr)
    s.write("agentstack.toml", "version = 1\n[policy.egress\n", base=s.ah)
    r = run(s, "run", "fakecli")
    check(r.returncode == 1 and "nothing was launched" in r.stderr,
          "a broken machine policy refuses", r.stderr)
    os.unlink(machine)
    check(fake_json(s) == HAND, "policy refusals injected nothing")


def changed(s):
    path = os.path.join(s.project, ".agentstack", "agentstack.toml")
    with open(path) as f:
        text = f.read()
    with open(path, "a") as f:
        f.write('\n[servers.new]\ntype = "stdio"\ncommand = "new-mcp"\n')
    r = run(s, "run", "fakecli")
    check(r.returncode == 1 and "changed since it was trusted" in r.stderr and
          "agentstack lock --write" in r.stderr, "a changed bundle refuses with the lock hint",
          r.stderr)
    with open(path, "w") as f:
        f.write(text)


def unprotected(s):
    r = run(s, "run", "fakecli", "--unprotected", FAKE_EXIT="4")
    check(r.returncode == 4 and "posture: HOST / ADVISORY" in r.stdout and
          "skips every gate" in r.stderr, "--unprotected: advisory posture, skipped checks "
          "named, status propagated", r.stdout + r.stderr)
    cfg = json.loads(field(r.stdout, "CONFIG") or "{}")
    check(sorted(cfg.get("mcpServers", {})) == ["mine"], "--unprotected injects nothing", cfg)
    ev = events(s, run_id(r.stdout))
    check(ev[0]["event"] == "host_started" and ev[0]["posture"] == "host" and
          ev[-1]["event"] == "host_exited" and ev[-1]["outcome"] == "exited" and
          ev[-1]["code"] == 4, "host_started/host_exited recorded", ev)
    r = run(s, "run", "fakecli", "--unprotected", "--toolset", "backend")
    cfg = json.loads(field(r.stdout, "CONFIG") or "{}")
    check(r.returncode == 0 and sorted(cfg.get("mcpServers", {})) == ["a", "mine"],
          "--unprotected --toolset applies the toolset itself for the run", cfg)
    check(fake_json(s) == HAND and sessions(s) == {}, "--unprotected --toolset reverted")
    r = run(s, "run", "fakecli", "--unprotected", "--toolset", "backend", "--keep")
    check(r.returncode == 0 and '"a"' in fake_json(s), "--keep leaves the toolset applied",
          r.stderr)
    e = run(s, "session", "end")
    check(e.returncode == 0 and fake_json(s) == HAND, "session end reverts a kept run",
          e.stdout + e.stderr)


def pty(s):
    import pty as ptymod
    import select
    master, slave = ptymod.openpty()
    ours = os.ttyname(slave)
    p = subprocess.Popen([BIN, "run", "fakecli"], cwd=s.project, env=env(s, FAKE_READ="1"),
                         stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    buf = b""
    sent = False
    while True:
        if not sent and b"READY" in buf:
            os.write(master, b"typed-line\n")  # keyboard input, relayed into the harness's pty
            sent = True
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    p.wait(timeout=60)
    os.close(master)
    out = buf.decode(errors="replace").replace("\r\n", "\n")
    check(p.returncode == 0 and "TTY True True" in out, "on a terminal the harness gets a "
          "terminal", out)
    check("GOT typed-line" in out, "keyboard input reaches the harness through the relay", out)
    name = field(out, "TTYNAME")
    check(name and name.startswith("/dev/pts/") and name != ours,
          "it is a pseudo-terminal of its own, not the caller's", (name, ours))
    check(fake_json(s) == HAND, "reverted after a terminal run")


def tty_stdin_only(s):
    # stdin a terminal (the launcher's controlling one), stdout a pipe: the
    # harness's group is the terminal's foreground group for the run.
    import fcntl
    import pty as ptymod
    import termios
    master, slave = ptymod.openpty()

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen([BIN, "run", "fakecli"], cwd=s.project, env=env(s), stdin=slave,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=ctty)
    os.close(slave)
    out, err = p.communicate(timeout=60)
    os.close(master)
    check(p.returncode == 0 and "TTY True False" in out and "FG True" in out,
          "stdin-only terminal: the harness's group is in the foreground", out + err)


def main():
    with Sandbox() as s:
        setup(s)
        untrusted(s)
        run(s, "lock", "--write")
        trust(s)
        plan(s)
        trusted_run(s)
        gateway_handoff(s)
        exit_codes(s)
        sigterm(s)
        sigterm_ignored(s)
        group_ends(s)
        sigkill(s)
        refusals(s)
        locked_verify(s)
        policy(s)
        changed(s)
        unprotected(s)
        pty(s)
        tty_stdin_only(s)
    done()


main()
