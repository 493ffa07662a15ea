"""`apply` on an untrusted project refuses before it looks up any secret,
written as the attack with spies: the file store and the project's .env are
watched with inotify (an open is a lookup), and the session bus address
points at a socket this test listens on (the keychain probe connects to it).
Untrusted: the refusal is printed, nothing is written, and no spy fires.
Trusted (the control that proves the spies see a lookup): the same apply
opens the store and resolves the secret."""
import ctypes
import os
import select
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SECRET = "spy-secret-value-7a1c"
IN_OPEN, IN_ACCESS = 0x20, 0x01

MANIFEST = """version = 1

[servers.notes]
type = "stdio"
command = "notes-mcp"
env = { NOTES_KEY = "${NOTES_KEY}" }
"""


class Watch:
    """inotify on a few files: any open or read of them is recorded."""

    def __init__(self, paths):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0
        self.wd = {}
        for p in paths:
            w = self.libc.inotify_add_watch(self.fd, p.encode(), IN_OPEN | IN_ACCESS)
            assert w >= 0, p
            self.wd[w] = p

    def seen(self):
        hits = set()
        while True:
            r, _, _ = select.select([self.fd], [], [], 0)
            if not r:
                return hits
            buf = os.read(self.fd, 65536)
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _, ln = struct.unpack_from("iIII", buf, off)
                hits.add(self.wd.get(wd, "?"))
                off += 16 + ln

    def close(self):
        os.close(self.fd)


def bus_spy(sb):
    path = os.path.join(sb.root, "bus")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(8)
    s.setblocking(False)
    return s, "unix:path=" + path


def connected(s):
    try:
        c, _ = s.accept()
        c.close()
        return True
    except BlockingIOError:
        return False


with Sandbox() as sb:
    H.fake_bin(sb, "codex")
    os.makedirs(os.path.join(sb.project, ".git"))
    H.write_manifest(sb, MANIFEST)
    os.makedirs(sb.ah, exist_ok=True)
    store = os.path.join(sb.ah, "secrets.env")
    with open(store, "w") as f:
        f.write(f"NOTES_KEY={SECRET}\n")
    os.chmod(store, 0o600)
    dotenv = os.path.join(sb.project, ".env")
    with open(dotenv, "w") as f:
        f.write(f"NOTES_KEY={SECRET}\n")
    spy, bus = bus_spy(sb)
    e = H.env(sb, DBUS_SESSION_BUS_ADDRESS=bus)
    e.pop("NOTES_KEY", None)
    r = H.run(sb, "lock", "--write", e=e)
    check(r.returncode == 0, "lock --write", r.stderr)

    w = Watch([store, dotenv])
    r = H.run(sb, "apply", "--write", "--target", "codex", e=e)
    out = r.stdout + r.stderr
    hits = w.seen()
    check("refusing to render MCP servers" in out and "not trusted" in out.lower(),
          "untrusted: apply refuses with the trust refusal", out)
    check(not hits, "untrusted: neither the file store nor the project .env is opened", hits)
    check(not connected(spy), "untrusted: the keychain's session bus is never contacted")
    cfg = os.path.join(sb.home, ".codex", "config.toml")
    pcfg = os.path.join(sb.project, ".codex", "config.toml")
    leaked = [p for p in (cfg, pcfg) if os.path.exists(p) and SECRET in open(p).read()]
    check(not leaked, "untrusted: no secret in any native file", leaked)
    r = H.run(sb, "apply", "--target", "codex", e=e)  # the dry run, too
    check(not w.seen() and not connected(spy), "untrusted: a dry run looks nothing up either")

    # The control: trusted, the same apply resolves — and the spies see it.
    # (No bus here: a keychain probe against the spy socket would wait for a
    # D-Bus handshake that never comes.)
    e2 = dict(e, DBUS_SESSION_BUS_ADDRESS="", XDG_RUNTIME_DIR=sb.root)
    H.trust(sb, e=e2)
    r = H.run(sb, "apply", "--write", "--target", "codex", e=e2)
    hits = w.seen()
    check(r.returncode == 0 and hits, "trusted: the spies see the lookup (they work)",
          (r.stdout + r.stderr, hits))
    w.close()
    spy.close()
done()
