"""`agentstack verify` with no arguments, as a user meets it after `sign`:
it checks agentstack.lock.sig against this machine's own key and names
that key; a changed lock fails; no key yet is a clear error, never a key
created by verify.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

MANIFEST = """version = 1

[servers.api]
type = "http"
url = "https://api.example.com/mcp"
"""


def main():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "lock --write", r.stdout + r.stderr)

        r = sb.run("verify")
        check(r.returncode == 1 and "no signing key" in r.stderr
              and "agentstack sign" in r.stderr,
              "verify before any key says there is none and how to sign", r.stderr)
        check(not os.path.exists(os.path.join(sb.ah, "keys", "ed25519.key")),
              "verify never creates a signing key")

        r = sb.run("sign", "--print-key-only")
        check(r.returncode == 0, "sign", r.stderr)
        pub = r.stdout.strip()
        check(len(pub) == 64, "sign prints the public key", r.stdout)

        r = sb.run("verify")
        check(r.returncode == 0, "verify with no arguments exits 0 after sign",
              r.stdout + r.stderr)
        check("this machine's key " + pub in r.stdout,
              "verify names the key it checked", r.stdout)

        lock = os.path.join(sb.project, ".agentstack", "agentstack.lock")
        with open(lock, "a") as f:
            f.write("\n")
        r = sb.run("verify")
        check(r.returncode == 1 and "does NOT match" in r.stderr and pub in r.stderr,
              "a changed lock fails against the machine's key", r.stdout + r.stderr)
    done()


if __name__ == "__main__":
    main()
