"""What is reviewed is what runs: hidden characters are shown, and refused.

The attack: a server argument `./server<U+200B>.py` (zero-width space)
printed as `./server.py` by `lock --write` and on the trust card, while the
file that runs is the other one, next to an innocent `server.py`. Every
repository-derived string a person reviews shows invisible, bidi and tag
characters as escapes (`\\u200b`, `\\u202e`, `\\U000e0041`), never drops
them, and a manifest value holding one is a blocking content-scan finding
with file:line:col: trust refuses, doctor --ci fails.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

ZW = "\u200b"
MANIFEST = """version = 1
[servers.s]
type = "stdio"
command = "python3"
args = ["./server\\u200b.py"]

[servers."ops\\u202eevil"]
type = "stdio"
command = "python3"
args = ["./server.py", "--mode=\\U000E0041\\U000E0042"]
"""


def hidden_raw(text):
    """The hidden characters that reached the output as themselves."""
    return sorted({hex(ord(c)) for c in text
                   if ord(c) in (0x200B, 0x202E) or 0xE0000 <= ord(c) <= 0xE007F})


with Sandbox() as sb:
    sb.write("agentstack.toml", MANIFEST)
    sb.write("server.py", "print('innocent')\n")
    sb.write("server" + ZW + ".py", "print('what runs')\n")

    r = sb.run("lock", "--write")
    out = r.stdout + r.stderr
    check(r.returncode == 0, "lock --write pins (the scan blocks trust, not lock)", out)
    check("executable server\\u200b.py" in out and not hidden_raw(out),
          "lock --write shows the zero-width space as \\u200b", repr(out))
    check("ops\\u202eevil" in out, "a bidi override in a name is shown as \\u202e", repr(out))

    r = sb.run("trust")
    out = r.stdout + r.stderr
    check("python3 ./server\\u200b.py" in out and "· server\\u200b.py" in out and
          "ops\\u202eevil" in out and "\\U000e0041\\U000e0042" in out and not hidden_raw(out),
          "the trust card shows every hidden character as an escape", repr(out))

    p = sb.run("trust", "--preview")
    pj = json.loads(p.stdout)
    check(pj["scan"]["blocking"] and pj["scan"]["high"] == 3 and
          any(f["code_point"] == "U+200B" and f["line"] == 5 and f["col"] == 9
              for f in pj["scan"]["findings"]),
          "trust --preview reports the findings, blocking", p.stdout[:3000])
    check(not hidden_raw(p.stdout) and "./server\\u200b.py" in p.stdout and
          "./server\u200b.py" in json.dumps(pj, ensure_ascii=False),
          "trust --preview: the same value, escaped (\\u200b), never raw", p.stdout[:3000])
    r = sb.run("trust", ".", "--yes", "--consented", pj["surface_digest"])
    out = r.stdout + r.stderr
    check(r.returncode == 1 and "refusing to trust" in out and
          "agentstack.toml:5:9 hidden unicode U+200B (zero-width space) in manifest value "
          "`servers.s.args[0]`" in out and
          "U+202E (bidi control)" in out and "U+E0041 (unicode tag character)" in out and
          not hidden_raw(out),
          "trust refuses: each hidden character is a high finding at file:line:col",
          repr(out))
    t = sb.run("trust", "--list")
    check(os.path.realpath(sb.project) not in t.stdout, "nothing was trusted", t.stdout)

    r = sb.run("doctor", "--ci")
    out = r.stdout + r.stderr
    check(r.returncode == 1 and "agentstack.toml:5:9 hidden unicode U+200B" in out and
          not hidden_raw(out), "doctor --ci fails on the hidden character", repr(out))

    for args in (("status",), ("diff",), ("doctor",)):
        r = sb.run(*args)
        out = r.stdout + r.stderr
        check(not hidden_raw(out), " ".join(args) + ": no hidden character reaches the output",
              repr(out))

    # Without the hidden characters the same project is an ordinary one.
    sb.write("agentstack.toml", MANIFEST.replace("\\u200b", "").split("[servers.\"ops")[0])
    sb.run("lock", "--write")
    p = sb.run("trust", "--preview")
    r = sb.run("trust", ".", "--yes", "--consented", json.loads(p.stdout)["surface_digest"])
    check(r.returncode == 0, "the clean manifest is trusted", r.stdout + r.stderr)


# A URL read two ways (the userinfo ends at the first '@' or the last): the
# card shows the URL itself and that the gateway will not serve it.
with Sandbox() as sb:
    sb.write("agentstack.toml", 'version = 1\n[servers.web]\ntype = "http"\n'
             'url = "https://x@allowed.example@127.0.0.1:9/mcp"\n')
    sb.run("lock", "--write")
    r = sb.run("trust")
    out = r.stdout + r.stderr
    check("https://x@allowed.example@127.0.0.1:9/mcp (not served: two '@' in the URL's "
          "authority)" in out, "the card names an ambiguous URL whole, and why it is not served",
          out)

done()
