"""run --sandbox / --lockdown: what a previous run or the workspace's layout
leaves behind cannot expose a secret or steer the next run.

Nested .env files: every `.env*` entry anywhere in the workspace (services/,
web/, deep trees, node_modules, .git, a `.envs/` directory, a `.env` symlink
to a file elsewhere in the project) reads empty inside both modes, while the
ordinary files next to them read; a workspace the walk cannot finish (nested
deeper than its bound, more .env entries than it can mount) is refused with
nothing launched — hidden must mean hidden.

The sandbox home: an earlier run leaves symlinks in
$AGENTSTACK_HOME/sandbox-home/<adapter>/ where the next run mounts the
gateway's config — the config file itself, or the directory that holds it,
pointing at a host file. The next run still gets its config at the right
place, the host file is untouched (never created, written or removed), and
the mount point made for the run is removed afterwards."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402
from mcpclient import grant  # noqa: E402

SECRETS = {
    ".env": "ROOT=s3cr3t-root\n",
    "services/api/.env": "API=s3cr3t-api\n",
    "web/.env.production": "WEB=s3cr3t-web\n",
    "a/b/c/d/e/f/.env.local": "DEEP=s3cr3t-deep\n",
    "node_modules/pkg/.env": "NM=s3cr3t-nm\n",
    ".git/.env": "GIT=s3cr3t-git\n",
    "conf/.envs/prod": "DIR=s3cr3t-dir\n",
    "config/real-secrets": "LINKED=s3cr3t-linked\n",
}
VISIBLE = {"services/api/app.py": "print('app')\n", "web/index.html": "<p>hi</p>\n"}

# A harness that prints the gateway config it finds at ~/.fk/cfg.json.
HARNESS = r'''#!/usr/bin/python3
import json, os
p = os.path.expanduser("~/.fk/cfg.json")
try:
    cfg = json.load(open(p))
    print("CFG " + cfg["mcpServers"]["agentstack-gateway"]["url"], flush=True)
except (OSError, ValueError, KeyError) as e:
    print("NOCFG " + type(e).__name__, flush=True)
print("LINK " + str(os.path.islink(os.path.expanduser("~/.fk"))), flush=True)
'''

ADAPTER = """id: fakecli
display: Fake CLI
detect:
  bin: fakecli
config:
  path: ~/.fk/cfg.json
  format: json
mcp:
  location: mcpServers
  fields:
    url: url
    headers: headers
    command: command
    args: args
  transport:
    key: type
    http_value: http
    stdio_value: stdio
  secret_mode: literal
"""


def shadows(s):
    for rel, text in {**SECRETS, **VISIBLE}.items():
        s.write(rel, text)
    os.symlink("../config/real-secrets", os.path.join(s.project, "web", ".env.link"))
    cat = " ".join(f"/workspace/{rel}" for rel in
                   [*SECRETS, "web/.env.link", *VISIBLE] if rel != "config/real-secrets")
    for mode in ("--sandbox", "--lockdown"):
        r = s.run("run", mode, "shtest", "--", "-c", f"cat {cat} 2>&1; echo END")
        out = r.stdout
        check(r.returncode == 0 and "END" in out, f"{mode}: the run works", out + r.stderr)
        leaked = [rel for rel, text in SECRETS.items() if text.split("=")[1].strip() in out]
        check(not leaked, f"{mode}: every nested .env* entry reads empty inside", leaked)
        check("print('app')" in out and "<p>hi</p>" in out,
              f"{mode}: the files next to them still read", out)
    r = s.run("run", "--sandbox", "shtest", "--", "-c",
              "cat /workspace/config/real-secrets; echo END")
    check("s3cr3t-linked" not in r.stdout,
          "a .env symlink's in-project target is hidden at its own path too", r.stdout)
    with open(os.path.join(s.project, ".env")) as f:
        check(f.read() == SECRETS[".env"], "the host's files are untouched")


def bounds(s):
    deep = os.path.join(s.project, *(["d"] * 130))
    os.makedirs(deep)
    r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo RAN")
    check(r.returncode != 0 and "RAN" not in r.stdout and "nested deeper than" in r.stderr
          and "nothing was launched" in r.stderr,
          "a workspace nested past the walk's bound is refused, nothing launched", r.stderr)
    import shutil
    shutil.rmtree(os.path.join(s.project, "d"))
    many = os.path.join(s.project, "many")
    os.makedirs(many)
    for i in range(4097):
        open(os.path.join(many, f".env.{i}"), "w").close()
    r = s.run("run", "--lockdown", "shtest", "--", "-c", "echo RAN")
    check(r.returncode != 0 and "RAN" not in r.stdout and "more than 4096 .env" in r.stderr,
          "more .env entries than the sandbox can mount is a refusal", r.stderr)
    shutil.rmtree(many)


def home_links(s):
    bindir = os.path.join(s.root, "bin")
    os.makedirs(bindir, exist_ok=True)
    fake = os.path.join(bindir, "fakecli")
    with open(fake, "w") as f:
        f.write(HARNESS)
    os.chmod(fake, 0o755)
    s.write("adapters/fakecli.yaml", ADAPTER, base=s.ah)
    s.write("agentstack.toml", f"""version = 1

[servers.demo]
type = "stdio"
command = {json.dumps(BIN)}
args = ["demo-server"]
""")
    grant(s)
    env = s.env(PATH=bindir + ":/usr/bin:/bin")
    home = os.path.join(s.ah, "sandbox-home", "fakecli")
    victim_dir = os.path.join(s.root, "victim")
    os.makedirs(victim_dir)
    victim = os.path.join(victim_dir, "cfg.json")
    with open(victim, "w"):
        pass  # an empty host file: the old cleanup would have removed it
    # Run 1 leaves ~/.fk pointing at a host directory (absolute link).
    os.makedirs(home, exist_ok=True)
    os.symlink(victim_dir, os.path.join(home, ".fk"))
    for mode in ("--sandbox", "--lockdown"):
        r = s.run("run", mode, "fakecli", env=env)
        check(r.returncode == 0 and "CFG http" in r.stdout,
              f"{mode}: a symlinked config directory in the sandbox home does not break the "
              "run: the config is mounted where the harness reads it", r.stdout + r.stderr)
        check("LINK False" in r.stdout, f"{mode}: the link was replaced by a directory",
              r.stdout)
        check(os.path.exists(victim) and os.path.getsize(victim) == 0
              and os.listdir(victim_dir) == ["cfg.json"],
              f"{mode}: the host directory the link named is untouched", os.listdir(victim_dir))
        check(not os.path.islink(os.path.join(home, ".fk"))
              and not os.path.exists(os.path.join(home, ".fk", "cfg.json")),
              f"{mode}: the mount point is removed after the run", os.listdir(home))
        # Run 2 leaves the config file itself as a link to the host file.
        os.symlink(victim, os.path.join(home, ".fk", "cfg.json"))
    r = s.run("run", "--sandbox", "fakecli", env=env)
    check(r.returncode == 0 and "CFG http" in r.stdout,
          "a symlinked config file in the sandbox home does not break the run",
          r.stdout + r.stderr)
    check(os.path.exists(victim) and os.path.getsize(victim) == 0,
          "the host file the link named is neither written nor removed")
    # A relative link aimed through the sandbox build's view of the host.
    link = os.path.join(home, ".fk", "cfg.json")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("../../../oldroot" + victim, link)
    r = s.run("run", "--lockdown", "fakecli", env=env)
    check(r.returncode == 0 and "CFG http" in r.stdout,
          "a relative link aimed at the host's tree does not redirect the mount",
          r.stdout + r.stderr)
    check(os.path.getsize(victim) == 0, "the host file stays empty")
    rid = re.search(r"\(run (r-[0-9a-f]{10})\)", r.stdout)
    check(rid is not None, "the run is recorded")


def main():
    with Sandbox() as s:
        shadows(s)
        bounds(s)
    with Sandbox() as s:
        home_links(s)
    done()


if __name__ == "__main__":
    main()
