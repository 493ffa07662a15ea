"""Library servers through the gateway (docs/gateway.md): a toolset may take a server
from the central library ($AGENTSTACK_HOME/lib/servers/<name>.toml). It is
served only when the definition's bytes match its agentstack.lock pin; a
drifted or unpinned definition is skipped with a `pin` audit row, its calls are
refused before anything is spawned, and the other servers keep working."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import FAKE, Gateway, audit_rows, grant, is_error, text  # noqa: E402


def lib_def(sb, marker):
    return (f'type = "stdio"\ncommand = "python3"\n'
            f'args = ["{sb.root}/fake.py", "--tools", "lib_status", "--marker", "{marker}"]\n')


MANIFEST = """version = 1

[servers.inl]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "inl_status"]

[toolsets.default]
servers = ["libops", "inl"]
"""


def setup(sb):
    marker = os.path.join(sb.root, "lib.started")
    with open(os.path.join(sb.root, "fake.py"), "w") as f:
        f.write(FAKE)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml", MANIFEST)
    lib = sb.write("libops.toml", lib_def(sb, marker), base=os.path.join(sb.ah, "lib", "servers"))
    return marker, lib


def pinned_and_drifted():
    with Sandbox() as sb:
        marker, lib = setup(sb)
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("libops__lib_status" in s and "inl__inl_status" in s,
                  "pinned library server: listed beside the inline one", s)
            c = g.call("libops__lib_status", {})
            check(not is_error(c) and text(c) == "lib_status: ok",
                  "pinned library server: a call is brokered", c)
            g.close()
        rows = audit_rows(sb)
        check(any(r["server"] == "libops" and r["tool"] == "lib_status" and r["outcome"] == "ok"
                  for r in rows), "pinned library server: an ok audit row", rows)

        # The library definition changes after lock + trust (the consent digest
        # does not cover it): the pin catches it.
        with open(lib, "a") as f:
            f.write('env = { EXTRA = "1" }\n')
        os.unlink(marker)
        n = len(audit_rows(sb))
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("libops__" not in s and "inl__inl_status" in s,
                  "drifted library server: not listed, the inline one still is", s)
            c = g.call("libops__lib_status", {})
            t = text(c)
            check(is_error(c) and "blocked:" in t and "drifted from agentstack.lock" in t and
                  "lock --write" in t, "drifted library server: the call is refused", t)
            i = g.call("inl__inl_status", {})
            check(not is_error(i), "drifted library server: the inline server still answers", i)
            g.close()
            err = g.stderr()
        check("libops" in err and "drifted" in err, "drifted library server: stderr note", err)
        new = audit_rows(sb)[n:]
        pins = [r for r in new if r["server"] == "libops" and r["tool"] == "pin"]
        check(pins and pins[0]["outcome"] == "denied" and "drifted" in pins[0]["detail"],
              "drifted library server: a pin row", new)
        check(not os.path.exists(marker), "drifted library server: never spawned")


def unpinned_and_missing():
    with Sandbox() as sb:
        marker, lib = setup(sb)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "lock --write", r.stderr)
        lock = os.path.join(sb.project, "agentstack.lock")
        with open(lock) as f:
            text_ = f.read()
        # Drop the library server's pin: a named project (--manifest-dir, no
        # trust gate) still never serves an unpinned library definition.
        cut = re.sub(r'\[\[server\]\]\nname = "libops"\n(?:[^\[\n][^\n]*\n)*\n?', "", text_)
        check(cut != text_ and "libops" not in cut, "the libops pin was removed from the lock")
        with open(lock, "w") as f:
            f.write(cut)
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "default"})  # toolsets name library servers
            c = g.call("libops__lib_status", {})
            check(is_error(c) and "not pinned in agentstack.lock" in text(c),
                  "unpinned library server: refused, even without a trust gate", text(c))
            i = g.call("inl__inl_status", {})
            check(not is_error(i), "unpinned library server: the inline server answers", i)
            g.close()
        rows = audit_rows(sb)
        check(any(r["server"] == "libops" and r["tool"] == "pin" and "not pinned" in r["detail"]
                  for r in rows), "unpinned library server: a pin row", rows)
        check(not os.path.exists(marker), "unpinned library server: never spawned")
        # The definition disappears from the library.
        os.unlink(lib)
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "default"})  # toolsets name library servers
            c = g.call("libops__lib_status", {})
            check(is_error(c) and "nor in the central library" in text(c),
                  "missing library server: refused with the reason", text(c))
            g.close()


def lock_unreadable():
    with Sandbox() as sb:
        marker, lib = setup(sb)
        sb.run("lock", "--write")
        with open(os.path.join(sb.project, "agentstack.lock"), "w") as f:
            f.write("this is = = not toml\n")
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "default"})  # toolsets name library servers
            c = g.call("libops__lib_status", {})
            check(is_error(c) and "cannot be read" in text(c),
                  "unreadable lock: library server refused", text(c))
            g.close()
        check(not os.path.exists(marker), "unreadable lock: library server never spawned")


pinned_and_drifted()
unpinned_and_missing()
lock_unreadable()
done()
