"""Header injection from the manifest: a header name that is not an RFC 9110
token, or a value with CR/LF/controls, is a validation error at
file:line:col, and lock refuses to write (no lock file appears)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

MANIFEST = (
    'version = 1\n'
    '\n'
    '[servers.web]\n'
    'type = "http"\n'
    'url = "https://h.test/mcp"\n'
    'headers = { "X-A" = "v\\r\\nInjected: 1", "X-B\\r\\nEvil" = "z" }\n'
)


def main():
    with Sandbox() as sb:
        path = sb.write("agentstack.toml", MANIFEST)
        r = sb.run("lock", "--write")
        out = r.stdout + r.stderr
        check(r.returncode == 1, "lock --write refuses", out)
        check("%s:6:13: server 'web': the value of header 'X-A' contains a carriage return"
              % path in out, "the bad value is reported at file:line:col", out)
        check("%s:6:41: server 'web': header name 'X-B\\r\\nEvil' is not an HTTP token" % path
              in out, "the bad name is reported at file:line:col, escaped", out)
        check("Injected" not in out, "the value is never echoed", out)
        check("\r" not in out, "no raw CR reaches the terminal", repr(out))
        check(not os.path.exists(os.path.join(sb.project, "agentstack.lock")),
              "no lock was written")
        sb.write("agentstack.toml", MANIFEST.replace('\\r\\nInjected: 1', '\\tok')
                 .replace('"X-B\\r\\nEvil"', 'X-B'))
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "the corrected manifest locks", r.stdout + r.stderr)
    done()


main()
