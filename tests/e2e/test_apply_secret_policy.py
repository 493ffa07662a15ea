"""[policy.secrets] at render: a ref the machine policy refuses is never
resolved into a native config. apply names the refusal and the rule, the
target is not written (even with --allow-unresolved: a refusal is not a
missing value), and the value appears in no file; an allowed ref renders (the machine floor no repo can
loosen; docs/policy.md enforcement matrix, secrets row)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SECRET = "ghp_policyDeniedValue0123456789abcdef"
ALLOWED = "allowed-value-42"

MANIFEST = """version = 1

[servers.github]
type = "stdio"
command = "gh-mcp"
env = { GH_TOKEN = "${GH_TOKEN}" }

[servers.notes]
type = "stdio"
command = "notes-mcp"
env = { NOTES_KEY = "${NOTES_KEY}" }

[policy.secrets]
"*" = ["GH_TOKEN", "NOTES_KEY"]
"""

MACHINE = """version = 1

[policy.secrets]
"*" = ["!GH_*"]
"""


def files_under(root):
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


with Sandbox() as sb:
    H.fake_bin(sb, "codex")
    os.makedirs(os.path.join(sb.project, ".git"))
    H.write_manifest(sb, MANIFEST)
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    e = H.env(sb, GH_TOKEN=SECRET, NOTES_KEY=ALLOWED)
    H.trust(sb, e=e)

    w = H.run(sb, "apply", "--write", "--target", "codex", e=e)
    out = w.stdout + w.stderr
    check(w.returncode != 0, "apply --write refuses the target holding a denied ref", out)
    check("GH_TOKEN" in out and '"!GH_*"' in out and "machine policy" in out,
          "the refusal names the ref, the rule and the machine layer", out)
    check(SECRET not in out, "the denied value is not printed", out)
    check("agentstack secret set" not in out,
          "a policy refusal's closing hint does not say `secret set` (no value can fix it)", out)
    check("agentstack.toml" in out and "[policy.secrets]" in out,
          "the closing hint points at the manifest and the policy instead", out)

    d = H.run(sb, "apply", "--target", "codex", e=e)
    out = d.stdout + d.stderr
    check("would refuse" in out and "agentstack secret set" not in out
          and "agentstack.toml" in out,
          "the dry run's closing line gives the same manifest/policy fix", out)

    leaked = [p for root in (sb.project, sb.home) for p in files_under(root)
              if SECRET.encode() in open(p, "rb").read()]
    check(not leaked, "the denied value is in no file under the project or HOME", leaked)

    a = H.run(sb, "apply", "--write", "--target", "codex", "--allow-unresolved", e=e)
    out = a.stdout + a.stderr
    cfg = os.path.join(sb.project, ".codex", "config.toml")
    text = open(cfg).read() if os.path.exists(cfg) else ""
    check(a.returncode != 0 and SECRET not in text,
          "--allow-unresolved does not turn a policy refusal into a skip: still blocked",
          out + text)

    # the control: without the refused server the same apply renders the allowed value
    H.write_manifest(sb, MANIFEST.replace(
        '[servers.github]\ntype = "stdio"\ncommand = "gh-mcp"\n'
        'env = { GH_TOKEN = "${GH_TOKEN}" }\n\n', ""))
    H.trust(sb, e=e)
    c = H.run(sb, "apply", "--write", "--target", "codex", e=e)
    text = open(cfg).read() if os.path.exists(cfg) else ""
    check(c.returncode == 0 and ALLOWED in text and "notes" in text,
          "an allowed ref renders its value", c.stdout + c.stderr + text)
    leaked = [p for root in (sb.project, sb.home) for p in files_under(root)
              if SECRET.encode() in open(p, "rb").read()]
    check(not leaked, "still no file holds the denied value", leaked)

    # the control for the hint: a ref that is merely unset keeps the `secret set` fix
    os.remove(cfg)
    u = H.run(sb, "apply", "--write", "--target", "codex", e=H.env(sb))
    uout = u.stdout + u.stderr
    check(u.returncode != 0 and "NOTES_KEY" in uout and "agentstack secret set" in uout
          and "[policy.secrets]" not in uout,
          "an unset (not refused) ref keeps the `agentstack secret set` hint", uout)

done()
