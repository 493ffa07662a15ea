"""run --sandbox and --lockdown: the seccomp filter is deny-by-default on the
socket family, tried from inside each mode as an attacker would.

A network namespace confines AF_INET/AF_INET6 only: a vsock reaches the
hypervisor, a packet socket the wire, AF_ALG/AF_KEY/AF_XDP/Bluetooth kernel
surfaces, and netlink's sock_diag lists the host's sockets under --sandbox.
Proven in both modes: IPv4 and IPv6 sockets and AF_UNIX pairs work; AF_UNIX
sockets are refused with EPERM; every other family (vsock, packet, alg, key,
xdp, bluetooth, tipc, can, rds, an unassigned number) and every netlink
protocol but NETLINK_ROUTE are refused; a socketpair of another family is
refused; the route socket that getifaddrs/if_nameindex/`ip` need still works
(read-only: changing a link is refused)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

PROBE = r'''
import errno, socket, subprocess
def t(name, fam, typ=socket.SOCK_STREAM, proto=0):
    try:
        socket.socket(fam, typ, proto).close(); print(name, "ALLOWED")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno, e.errno))
t("inet", socket.AF_INET)
t("inet6", socket.AF_INET6, socket.SOCK_DGRAM)
t("unix", socket.AF_UNIX)
for name, fam, typ, proto in (("vsock", 40, socket.SOCK_STREAM, 0),
                              ("packet", 17, socket.SOCK_RAW, 0),
                              ("alg", 38, socket.SOCK_SEQPACKET, 0),
                              ("key", 15, socket.SOCK_RAW, 2),
                              ("xdp", 44, socket.SOCK_RAW, 0),
                              ("bluetooth", 31, socket.SOCK_STREAM, 3),
                              ("tipc", 30, socket.SOCK_RDM, 0),
                              ("can", 29, socket.SOCK_RAW, 1),
                              ("rds", 21, socket.SOCK_SEQPACKET, 0),
                              ("unassigned", 0x10000 + 40, socket.SOCK_STREAM, 0),
                              ("netlink_sock_diag", 16, socket.SOCK_RAW, 4),
                              ("netlink_audit", 16, socket.SOCK_RAW, 9),
                              ("netlink_uevent", 16, socket.SOCK_DGRAM, 15),
                              ("netlink_generic", 16, socket.SOCK_RAW, 16),
                              ("netlink_route", 16, socket.SOCK_RAW, 0)):
    t(name, fam, typ, proto)
try:
    a, b = socket.socketpair(); a.close(); b.close(); print("pair_unix ALLOWED")
except OSError as e:
    print("pair_unix refused", errno.errorcode.get(e.errno, e.errno))
try:
    socket.socketpair(30, socket.SOCK_STREAM); print("pair_tipc ALLOWED")
except OSError as e:
    print("pair_tipc refused", errno.errorcode.get(e.errno, e.errno))
print("ifnames", ",".join(n for _, n in socket.if_nameindex()))
r = subprocess.run(["ip", "link", "set", "lo", "down"], capture_output=True)
print("ip_link_down", r.returncode)
'''

REFUSED = ("vsock", "packet", "alg", "key", "xdp", "bluetooth", "tipc", "can", "rds",
           "unassigned")
NETLINK_REFUSED = ("netlink_sock_diag", "netlink_audit", "netlink_uevent", "netlink_generic")


def main():
    if not os.path.exists("/usr/bin/python3"):
        print("SKIP: /usr/bin/python3 is needed inside the sandbox")
        return
    with Sandbox() as s:
        s.write("probe.py", PROBE)
        for mode in ("--sandbox", "--lockdown"):
            r = s.run("run", mode, "/usr/bin/python3", "--", "probe.py")
            out = r.stdout
            check(r.returncode == 0, f"{mode}: the probe ran", r.stdout + r.stderr)
            check("inet ALLOWED" in out and "inet6 ALLOWED" in out,
                  f"{mode}: AF_INET and AF_INET6 sockets work", out)
            check("unix refused EPERM" in out, f"{mode}: socket(AF_UNIX) is refused", out)
            check("pair_unix ALLOWED" in out, f"{mode}: socketpair(AF_UNIX) works", out)
            check("pair_tipc refused EAFNOSUPPORT" in out,
                  f"{mode}: socketpair of another family is refused", out)
            for name in REFUSED:
                check(f"{name} refused EAFNOSUPPORT" in out,
                      f"{mode}: socket({name}) is refused", out)
            for name in NETLINK_REFUSED:
                check(f"{name} refused EPROTONOSUPPORT" in out,
                      f"{mode}: {name} is refused (only NETLINK_ROUTE is open)", out)
            check("netlink_route ALLOWED" in out and "ifnames lo" in out,
                  f"{mode}: the netlink route socket if_nameindex needs still works", out)
            check("ip_link_down 0" not in out and "ip_link_down" in out,
                  f"{mode}: the route socket cannot change a link", out)
            if mode == "--lockdown":
                check("ifnames lo\n" in out, "--lockdown: only loopback is visible", out)
    done()


if __name__ == "__main__":
    main()
