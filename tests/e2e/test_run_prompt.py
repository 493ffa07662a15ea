"""`agentstack run <cli> --prompt TEXT` (docs/sandbox.md): the headless
protected run.

The launch argv is the adapter's `headless.args` with `{prompt}` replaced by
the prompt as one whole element (no shell; a leading '-' stays an argument);
the banner goes to stderr so stdout is the harness's answer only; stdin is
closed (/dev/null) and there is no terminal; stdout is relayed and recorded
as `headless_output {bytes, sha256, truncated}` (hash over the first 1 MiB);
the frozen grant's argv holds the prompt, the live-run registry does not; a
non-zero exit propagates with no `error:` line. Refusals: trailing args, an
adapter without a headless spec, and --prompt with --sandbox/--lockdown/
--unprotected. The harness is the fake drop-in adapter of test_run_host.py
(copied: that file runs its tests on import) with a `headless:` section.
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


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def events(s, rid):
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        return [json.loads(x) for x in f]


def trust(s):
    p = run(s, "trust", "--preview")
    d = json.loads(p.stdout)["surface_digest"]
    t = run(s, "trust", "--yes", "--consented", d)
    assert t.returncode == 0, t.stdout + t.stderr


def field(out, name):
    m = re.search(r"^%s (.*)$" % name, out, re.M)
    return m.group(1) if m else None


HEADLESS = ADAPTER.replace("id: fakecli", "id: fakeh").replace("bin: fakecli", "bin: fakeh") + \
    'headless:\n  args: ["-p", "--", "{prompt}"]\n'
PROMPT = "-rf $(echo expanded) ; two  words\nand a second line"


def setup_headless(s):
    setup(s)
    os.symlink("fakecli", os.path.join(s.root, "bin", "fakeh"))
    s.write("adapters/fakeh.yaml", HEADLESS, base=s.ah)


def headless(s):
    r = subprocess.run([BIN, "run", "fakeh", "--prompt", PROMPT], cwd=s.project,
                       env=env(s, FAKE_STDIN="1"), input=b"typed-by-the-caller",
                       capture_output=True, timeout=60)
    out, err = r.stdout.decode(), r.stderr.decode()
    check(r.returncode == 0, "--prompt: a completed run exits 0", err)
    check(field(out, "ARGV") == json.dumps(["-p", "--", PROMPT]),
          "the headless argv, the prompt one whole element, unexpanded", field(out, "ARGV"))
    check(out.startswith("ARGV "), "stdout is the harness's output only", out[:200])
    check("launching fakeh" in err and "HOST / PROTECTED" in err
          and "authority grant frozen" in err, "the banner goes to stderr", err)
    check("STDIN ''" in out, "stdin is closed: the caller's input never reaches it", out)
    check("TTY False False" in out, "no terminal", field(out, "TTY"))
    rid = field(out, "RUNID")
    ev = events(s, rid)
    ho = [e for e in ev if e["event"] == "headless_output"]
    check(len(ho) == 1 and ho[0]["bytes"] == len(r.stdout)
          and ho[0]["sha256"] == "sha256:" + hashlib.sha256(r.stdout).hexdigest()
          and ho[0]["truncated"] is False, "headless_output: bytes, sha256, not truncated", ho)
    check(ev[-1]["event"] == "locked_outcome" and ev[-1]["outcome"] == "completed",
          "then locked_outcome completed", ev[-1])
    with open(os.path.join(s.ah, "runs", rid, "grant.json")) as f:
        g = json.load(f)
    check(json.dumps(g).find(json.dumps(PROMPT)[1:-1]) >= 0,
          "the frozen grant holds the exact argv, prompt included")
    check("agentstack-gateway" in field(out, "CONFIG"), "the gateway entry is injected as usual")
    check(fake_json(s) == HAND, "and reverted")


def exit_code(s):
    r = run(s, "run", "fakeh", "--prompt", "hi", FAKE_EXIT="3")
    check(r.returncode == 3, "--prompt: child exit N propagates", r.returncode)
    check("error:" not in r.stderr, "with no error: line", r.stderr)


def big(s):
    n = (1 << 20) + 4096
    r = subprocess.run([BIN, "run", "fakeh", "--prompt", "big"], cwd=s.project,
                       env=env(s, FAKE_BIG=str(n)), capture_output=True, timeout=60)
    check(r.returncode == 0 and b"READY\n" + b"x" * n in r.stdout,
          "all of a large output is relayed", (r.returncode, len(r.stdout), r.stderr[-300:]))
    rid = re.search(rb"RUNID (r-[0-9a-f]{10})", r.stdout).group(1).decode()
    ho = [e for e in events(s, rid) if e["event"] == "headless_output"]
    check(ho and ho[0]["bytes"] == len(r.stdout) and ho[0]["truncated"] is True
          and ho[0]["sha256"] == "sha256:" + hashlib.sha256(r.stdout[:1 << 20]).hexdigest(),
          "over 1 MiB: truncated, hash of the first 1 MiB, bytes in all", ho)


def registry_has_no_prompt(s):
    p = subprocess.Popen([BIN, "run", "fakeh", "--prompt", "the-secret-prompt"], cwd=s.project,
                         env=env(s, FAKE_BLOCK="1"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    head = ""
    for line in p.stdout:
        head += line
        if line.startswith("READY"):
            break
    rid = field(head, "RUNID")
    with open(os.path.join(s.ah, "runs.json")) as f:
        raw = f.read()
    e = json.loads(raw).get(rid, {})
    check(e.get("args") == ["-p", "--"], "the registry lists the args without the prompt", e)
    check("the-secret-prompt" not in raw, "no prompt in runs.json")
    k = s.run("kill", rid, env=env(s))
    check(k.returncode == 0, "a headless run can be killed", k.stderr)
    p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGTERM), "its status comes back", p.returncode)


def plan(s):
    r = run(s, "run", "fakeh", "--prompt", "say hi", "--plan")
    check(r.returncode == 0 and "-p -- 'say hi'" in r.stdout,
          "--plan shows the exact headless command", r.stdout)


def refusals(s):
    before = sorted(os.listdir(os.path.join(s.ah, "runs")))
    r = run(s, "run", "fakeh", "--prompt", "x", "--", "extra")
    check(r.returncode == 1 and "--prompt takes no arguments after --" in r.stderr
          and "nothing was launched" in r.stderr, "trailing args are refused", r.stderr)
    r = run(s, "run", "fakecli", "--prompt", "x")
    check(r.returncode == 1 and "fakecli has no headless mode" in r.stderr
          and "nothing was launched" in r.stderr and "READY" not in r.stdout,
          "an adapter without headless.args is refused", r.stderr)
    r = run(s, "run", "shtest", "--prompt", "x")
    check(r.returncode == 1 and "no headless mode" in r.stderr, "a plain command is refused")
    for mode in ("--sandbox", "--lockdown", "--unprotected"):
        r = run(s, "run", "fakeh", mode, "--prompt", "x")
        check(r.returncode == 1 and "--prompt needs the protected run" in r.stderr
              and "why:" in r.stderr, "--prompt with %s is refused" % mode, r.stderr)
    check(sorted(os.listdir(os.path.join(s.ah, "runs"))) == before, "refusals record no run")
    check(fake_json(s) == HAND, "refusals inject nothing")


def main():
    with Sandbox() as s:
        setup_headless(s)
        r = run(s, "lock", "--write")
        assert r.returncode == 0, r.stderr
        trust(s)
        headless(s)
        exit_code(s)
        big(s)
        registry_has_no_prompt(s)
        plan(s)
        refusals(s)
    done()


if __name__ == "__main__":
    main()
