"""Upstream stdio clients, secrets
at build, failures the agent sees, concurrency, hostile upstreams, the result
cap, transparent mode. Fake upstreams come from mcpclient.FAKE; no assertion
depends on timing (ordering is asserted through replies, never clocks)."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done, files_holding  # noqa: E402
from mcpclient import FAKE, Gateway, audit_rows, grant, is_error, text  # noqa: E402


def project(sb, servers, machine="version = 1\n"):
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(machine)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml", "version = 1\n\n" + servers)
    grant(sb)


def stdio(name, *args, extra=""):
    a = ", ".join(json.dumps(x) for x in ("./fake.py",) + args)
    return f'[servers.{name}]\ntype = "stdio"\ncommand = "python3"\nargs = [{a}]\n{extra}\n'


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def read_pids(marker):
    """The pids the fake appended to its --marker file, one per start."""
    try:
        with open(marker) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def failures():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "hang.pids")
        project(sb, stdio("sec", "--tools", "use", extra='env = { K = "${UNSET_REF_X}" }') +
                '[servers.nobin]\ntype = "stdio"\ncommand = "/nonexistent/bin/nope"\n\n' +
                stdio("quiet", "--silent") +
                stdio("hang", "--tools", "forever", "--hang", "forever", "--marker", marker))
        env = sb.env()
        env.pop("UNSET_REF_X", None)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            c = g.call("sec__use", {})
            t = text(c)
            check(is_error(c) and "sec: cannot call 'use' — 1 secret(s) did not resolve on this "
                  "machine: ${UNSET_REF_X}." in t and "agentstack secret set" in t,
                  "12: the call names the ref", t)
            c = g.call("nobin__x", {})
            check(is_error(c) and text(c).startswith("Error: contacting nobin"),
                  "12: missing binary → Error: contacting nobin", text(c))
            # A search answers within discovery's 4 s deadline, and a server
            # that missed it is in the next search once it has listed
            # (docs/gateway.md): on a loaded machine this python upstream
            # may start later than that, so ask again, boundedly.
            for _ in range(60):
                s = text(g.call("tools_search", {"query": "use"}))
                if "sec__use" in s:
                    break
                time.sleep(1)
            check("sec__use" in s, "12: a server with an unresolved ref still lists", s)
            g.close()
        # A 500 ms call budget, so the never-answering call ends soon. The
        # other call may need more than that on a loaded machine: it is
        # asked until answered, and the marker (one pid per start) proves
        # the same child answered — a timeout keeps the child.
        env = sb.env(AGENTSTACK_CALL_TIMEOUT_MS="500")
        before = read_pids(marker)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            c = g.call("hang__forever", {})
            check(is_error(c) and "timeout" in text(c), "14: never-answering call → timeout",
                  text(c))
            for _ in range(20):
                c = g.call("hang__echo", {})
                if text(c) == "echo: ok":
                    break
            starts = read_pids(marker)[len(before):]
            check(text(c) == "echo: ok" and len(starts) == 1,
                  "14: the same server (one start) still answers other calls", (c, starts))
            g.close()
        # a start budget of 300 ms for a server that never answers its handshake
        env = sb.env(AGENTSTACK_STDIO_START_MS="300")
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            c = g.call("quiet__x", {})
            check(is_error(c) and "timeout" in text(c), "12: silent server, 300 ms → timeout",
                  text(c))
            g.close()
        rows = {(r["server"], r["tool"]): r for r in audit_rows(sb)}
        check(rows.get(("sec", "use"), {}).get("detail") == "unresolved-secret",
              "12: unresolved-secret row", rows.get(("sec", "use")))
        check(rows.get(("nobin", "x"), {}).get("detail") == "spawn-failed",
              "12: spawn-failed row", rows.get(("nobin", "x")))
        check(rows.get(("quiet", "x"), {}).get("detail") == "timeout", "12: timeout row")
        check(rows.get(("hang", "forever"), {}).get("detail") == "timeout", "14: timeout row")

    # a secret in the command, args or cwd never reaches stderr, the log or the agent
    with Sandbox() as sb:
        secret = "SUPERSECRETVALUE123"
        project(sb, '[servers.c]\ntype = "stdio"\ncommand = "${SECRETKEY}"\n'
                'args = ["--token=${SECRETKEY}"]\n\n'
                '[servers.d]\ntype = "stdio"\ncommand = "python3"\nargs = ["./fake.py"]\n'
                'cwd = "nonexistent/${SECRETKEY}-dir"\n')
        env = sb.env(SECRETKEY=secret)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            for name in ("c__t", "d__t"):
                c = g.call(name, {})
                check(is_error(c) and secret not in json.dumps(c),
                      "secret in %s's spawn: the agent sees no value" % name[0], c)
            g.close()
            err = g.stderr()
        check("did not start" in err and "${SECRETKEY}" in err and secret not in err,
              "secret in the command or cwd: stderr names ${SECRETKEY}, never the value", err)
        check(files_holding(sb.ah, secret) == [], "…and no file under AGENTSTACK_HOME holds it",
              files_holding(sb.ah, secret))


def concurrency():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "a.pid")
        project(sb, stdio("a", "--tools", "x", "--marker", marker) + stdio("b", "--tools", "y") +
                stdio("hung", "--silent"))
        with Gateway(sb, "--auto-project", env=sb.env(AGENTSTACK_STDIO_START_MS="20000")) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": ""}))
            check("a__x" in s and "b__y" in s, "12: a hung server does not hide healthy tools",
                  s)
            slow = g.start("tools/call", {"name": "a__sleep", "arguments": {"ms": 1500}})
            fast = g.start("tools/call", {"name": "b__y", "arguments": {}})
            r = g.wait(fast)
            check(r and text(r["result"]) == "y: ok" and json.dumps(slow) not in g.replies,
                  "13: a slow call on one server does not delay another", r)
            r = g.wait(slow)
            check(r and text(r["result"]) == "slept", "13: the slow call completes")
            # pipelined: the second (instant) answers before the first (slow)
            g.wait_for(lambda: True)
            order_before = len(g.raw)
            i1 = g.start("tools/call", {"name": "a__sleep", "arguments": {"ms": 800}})
            i2 = g.start("ping")
            g.wait(i1)
            got = [json.loads(x).get("id") for x in g.raw[order_before:] if x.startswith("{")]
            check(got.index(i2) < got.index(i1), "13: pipelined requests answer out of order",
                  got)
            # cancelled: no reply, still audited
            c = g.start("tools/call", {"name": "a__sleep", "arguments": {"ms": 300}})
            g.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": c}})
            g.request("tools/call", {"name": "a__sleep", "arguments": {"ms": 500}})
            check(json.dumps(c) not in g.replies, "13: a cancelled request gets no reply")
            # EOF with a call in flight: the reply is written, exit 0
            last = g.start("tools/call", {"name": "a__sleep", "arguments": {"ms": 1000}})
            rc = g.close()
            check(rc == 0, "13: EOF with a call in flight → exit 0", rc)
            check(any(json.loads(x).get("id") == last for x in g.raw if x.startswith("{")),
                  "13: …and its reply was written")
        sleeps = [r for r in audit_rows(sb) if r["tool"] == "sleep"]
        check(len(sleeps) == 5, "13: the cancelled call was still audited", len(sleeps))
        pids = [int(x) for x in open(marker).read().split()]
        check(pids and not any(alive(p) for p in pids), "12: exit killed the group", pids)


def hostile():
    with Sandbox() as sb:
        project(sb, stdio("w", "--weird", "--page", "3", "--stderr", "4321"),
                machine="version = 1\n\n[gateway]\nmax_result_bytes = 2000\n")
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "", "limit": 100}))
            check("w__ansi" in s and "w__cwd" in s and "w__dup" in s,
                  "14: paginated list complete, siblings kept", s)
            check(s.count("`w__dup`") == 1, "14: duplicate names deduped")
            for bad in ("bad", "bidi", "new", "sp ace", "x" * 129):
                check(f"w__{bad}" not in s, f"14: hostile name {bad[:8]!r} hidden")
            check("w__agentstack_load" in s, "14: upstream agentstack_load → w__agentstack_load")
            names = g.tools()
            check("agentstack_load" in names and not any(n.startswith("w__") for n in names),
                  "14: the control plane is intact")
            e = text(g.call("tools_search", {"entity": "w__ansi:tool"}))
            check("\x1b" not in e and "\u202e" not in e, "14: ANSI/bidi description sanitized")
            line = [x for x in s.splitlines() if x.startswith("- `w__ansi`")][0]
            check(line.endswith("…") and len(line) < 700, "14: description capped (600 + …)",
                  len(line))
            check('"description": "line1 line2"' in e and "codemode.w.ansi(input)" in e,
                  "15: entity → sanitized schema + codemode.S.T", e[-400:])
            c = g.call("w__junk", {})
            check(text(c) == "after junk", "14: non-JSON stdout skipped")
            c = g.call("w__big", {"bytes": 5000})
            t = text(c)
            check(t.endswith("[agentstack: result truncated at %s of %s bytes]" %
                             (t.split("truncated at ")[1].split(" ")[0],
                              t.split(" of ")[-1].split(" ")[0])) and len(t) < 2200,
                  "result over the cap is cut with the marker", t[-80:])
            c = g.call("w__big", {"bytes": 20 * 1024 * 1024})
            check(is_error(c) and "contacting w" in text(c),
                  "14: a 20 MB frame → bounded error, no crash", text(c))
            c = g.call("w__crash", {})
            check(is_error(c), "14: a server dying mid-call → error", text(c))
            c = g.call("w__echo", {})
            check(text(c) == "echo: ok", "14: the crashed server respawns", c)
            check(g.close() == 0, "14: EOF → exit 0")
            check("hidden (its name is not" in g.stderr(), "14: hidden names are named on stderr")
        import hashlib
        sha12 = hashlib.sha256(os.path.realpath(sb.project).encode()).hexdigest()[:12]
        log = os.path.join(sb.ah, "logs", sha12, "w.log")
        st = os.stat(log) if os.path.exists(log) else None
        check(st is not None and st.st_mode & 0o777 == 0o600 and st.st_size >= 4321,
              "upstream stderr → logs/<root-sha12>/<server>.log, 0600", log)
        logs = [os.path.join(sb.ah, "logs"), os.path.dirname(log)]
        for d in logs:
            os.chmod(d, 0o755)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.call("w__echo", {})
            g.close()
        modes = [oct(os.stat(d).st_mode & 0o777) for d in logs]
        check(modes == ["0o700"] * 2, "logs/ and logs/<sha12>/ are re-tightened to 0700", modes)
        elsewhere = os.path.join(sb.root, "elsewhere")
        os.mkdir(elsewhere)
        os.rename(logs[0], logs[0] + ".real")
        os.symlink(elsewhere, logs[0])
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            c = g.call("w__echo", {})
            g.close()
        check(text(c) == "echo: ok" and f"{logs[0]}: is a symlink" in g.stderr()
              and os.listdir(elsewhere) == [],
              "logs/ as a symlink: refused (named on stderr), nothing written through it",
              (g.stderr(), os.listdir(elsewhere)))


def transparent():
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a,delete_b"),
                machine='version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n')
        with Gateway(sb, "--auto-project", "--transparent") as g:
            g.initialize()
            r = g.request("tools/list")
            tools = r["result"]["tools"]
            names = [t["name"] for t in tools]
            check("tools_search" in names and "t__get_a" in names and "t__delete_b" not in names,
                  "15: transparent list = control plane + allowed S__T", names)
            ga = [t for t in tools if t["name"] == "t__get_a"][0]
            check(ga["description"].startswith("[via t] ") and
                  ga["inputSchema"] == {"type": "object"}, "15: descriptor shape", ga)
            c = g.call("t__get_a", {})
            check(text(c) == "get_a: ok", "15: same dispatch")
            g.close()


def search_rank():
    with Sandbox() as sb:
        project(sb, stdio("alpha", "--tools", "issue,issues_list,get_issue,other") +
                stdio("issue", "--tools", "zzz"))
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "issue"}))
            hits = [x.split("`")[1] for x in s.splitlines() if x.startswith("- `")]
            check(s.startswith("%d proxied tool(s) for 'issue':" % len(hits)), "15: header", s)
            check(hits[0] == "alpha__issue", "15: exact name ranks first", hits)
            check(hits[1:3] == ["alpha__get_issue", "alpha__issues_list"],
                  "15: ties by full name", hits)
            check("alpha__other" not in hits, "15: score 0 dropped")
            lim = text(g.call("tools_search", {"query": "issue", "limit": 1}))
            check(lim.count("- `") == 1, "15: limit")
            small = text(g.call("tools_search", {"query": "", "maxResponseSize": 10}))
            check(small.count("- `") == 1 and "more not shown" in small,
                  "15: maxResponseSize trims after one card", small)
            miss = text(g.call("tools_search", {"query": "nothing-like-it"}))
            check(miss.startswith("No proxied tools match 'nothing-like-it'."), "15: no match")
            ent = text(g.call("tools_search", {"entity": "nope__x:tool"}))
            check(ent.startswith("No proxied tool matches entity 'nope__x:tool'"),
                  "15: unknown entity (not an error)")
            g.close()


def signals():
    with Sandbox() as sb:
        marker = os.path.join(sb.root, "s.pid")
        project(sb, stdio("s", "--tools", "x", "--marker", marker))
        g = Gateway(sb, "--auto-project")
        g.initialize()
        check(text(g.call("s__x", {})) == "x: ok", "signal: a live upstream")
        g.proc.send_signal(signal.SIGTERM)
        rc = g.proc.wait(30)
        check(rc == 0, "signal: SIGTERM → orderly exit 0", rc)
        pids = [int(x) for x in open(marker).read().split()]
        check(pids and not any(alive(p) for p in pids), "signal: the upstream group is gone")


def by_address(port):
    """The gateway's egress check by address, written as the attacks: a
    machine rule !127.0.0.1 must stop 0.0.0.0, [::ffff:0.0.0.0] and a name
    that resolves to 127.0.0.1; a local address no rule names is refused;
    each refusal says why and writes an egress row, and nothing is sent."""
    machine = 'version = 1\n\n[policy.egress]\n"*" = ["!127.0.0.1", "!::1"]\n'

    def server(url, allow):
        return ('[servers.web]\ntype = "http"\nurl = "%s"\n'
                'headers = { Authorization = "Bearer ${WEB_TOKEN}" }\n'
                '[policy.egress]\nweb = [%s]\n' % (url, allow))

    for host in ("0.0.0.0", "[::ffff:0.0.0.0]", "2130706433", "[::ffff:7f00:1]"):
        with Sandbox() as sb:
            project(sb, server(f"http://{host}:{port}/mcp", '"*"'), machine=machine)
            with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
                g.initialize()
                c = g.call("web__echo", {"message": "x"})
                check(is_error(c) and "not served" in text(c) and "!127.0.0.1" in text(c),
                      f"http: {host} does not pass the machine rule !127.0.0.1", text(c))
                g.close()
            fam = [r for r in audit_rows(sb) if r["tool"] == "egress"]
            check(fam and fam[0]["outcome"] == "denied" and fam[0].get("layer") == "machine",
                  f"http: {host}: an egress row from the machine layer", audit_rows(sb))
    # A name resolving to 127.0.0.1: judged at the dial, by the address.
    with Sandbox() as sb:
        project(sb, server(f"http://localhost:{port}/mcp", '"localhost"'), machine=machine)
        with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "x"})
            t = text(c)
            check(is_error(c) and "not connecting" in t and "localhost resolves to" in t
                  and ("!127.0.0.1" in t or "!::1" in t) and "Echo" not in t,
                  "http: a name resolving to 127.0.0.1 does not pass !127.0.0.1", t)
            g.close()
        fam = [r for r in audit_rows(sb) if r["tool"] == "egress"]
        check(fam and fam[-1]["outcome"] == "denied" and fam[-1]["server"] == "web",
              "http: the refused dial writes an egress row", audit_rows(sb))
    # No rule names the local address: refused, with the fix.
    for url in (f"http://localhost:{port}/mcp", f"http://0.0.0.0:{port}/mcp"):
        with Sandbox() as sb:
            project(sb, server(url, '"*"'))
            with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
                g.initialize()
                c = g.call("web__echo", {"message": "x"})
                t = text(c)
                check(is_error(c) and "a local address is reached only when [policy.egress] "
                      "names it" in t and "Echo" not in t,
                      f"http: {url} with no rule naming its address is refused", t)
                g.close()
    # A URL that URL readers take to different hosts (userinfo ending at the
    # first '@' or the last, a backslash read as a slash, a %-encoded host):
    # the egress rule allows only allowed.example, and the bytes reach for
    # 127.0.0.1. Never contacted (a listener there accepts nothing), with
    # the reason; the header's secret unsent.
    import socket
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    lst.setblocking(False)
    lport = lst.getsockname()[1]
    for url in (f"http://x@allowed.example@127.0.0.1:{lport}/mcp",
                f"http://allowed.example\\\\@127.0.0.1:{lport}/mcp",
                f"http://allowed.example%40@127.0.0.1:{lport}/mcp"):
        for allow in ('"allowed.example"', '"*"'):
            with Sandbox() as sb:
                project(sb, server(url, allow))
                with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
                    g.initialize()
                    c = g.call("web__echo", {"message": "x"})
                    t = text(c)
                    check(is_error(c) and "not served" in t and "Echo" not in t and
                          "its URL is refused" in t,
                          f"http: {url} (egress {allow}) is never contacted", t)
                    g.close()
                    check("tok-551" not in "\n".join(g.raw) + g.stderr(),
                          f"http: {url}: the refusal never shows the secret")
                try:
                    lst.accept()[0].close()
                    contacted = True
                except BlockingIOError:
                    contacted = False
                check(not contacted, f"http: {url} (egress {allow}): no connection was made")
    lst.close()
    # The rule that names it lets it through.
    with Sandbox() as sb:
        project(sb, server(f"http://localhost:{port}/mcp", '"localhost"'))
        with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "named"})
            check(text(c) == "Echo: named", "http: a local upstream named by a rule is served",
                  text(c))
            g.close()


def http():
    """Streamable HTTP upstream: headers carry resolved secrets; egress policy
    can refuse the host at build (the server is then never contacted)."""
    import subprocess
    fixture = os.path.join(SRC, "tests", "fixtures", "mcp", "http_server.py")
    srv = subprocess.Popen([sys.executable, fixture, "--require", "Authorization:Bearer tok-551"],
                           stdout=subprocess.PIPE, text=True)
    try:
        port = srv.stdout.readline().split()[1]
        # A loopback upstream is reached only where a rule names it.
        entry = ('[servers.web]\ntype = "http"\nurl = "http://127.0.0.1:%s/mcp"\n'
                 'headers = { Authorization = "Bearer ${WEB_TOKEN}" }\n'
                 '[policy.egress]\nweb = ["127.0.0.1"]\n' % port)
        with Sandbox() as sb:
            project(sb, entry)
            with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
                g.initialize()
                s = text(g.call("tools_search", {"query": "echo"}))
                check("web__echo" in s, "http: tools listed through the authorized session", s)
                c = g.call("web__echo", {"message": "over http"})
                check(text(c) == "Echo: over http", "http: a call with the resolved header", c)
                g.close()
                check("tok-551" not in "\n".join(g.raw) + g.stderr(),
                      "http: the secret never reaches the agent or stderr")
        with Sandbox() as sb:
            project(sb, entry, machine='version = 1\n\n[policy.egress]\n"*" = ["!127.0.0.1"]\n')
            with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN="tok-551")) as g:
                g.initialize()
                c = g.call("web__echo", {"message": "x"})
                check(is_error(c) and "not served" in text(c) and "!127.0.0.1" in text(c),
                      "http: an egress-denied host is skipped and the call says why", text(c))
                g.close()
            fam = [r for r in audit_rows(sb) if r["tool"] == "egress"]
            check(fam and fam[0]["server"] == "web" and fam[0]["outcome"] == "denied",
                  "http: an egress row", audit_rows(sb))
        by_address(port)
        # A resolved secret holding CR/LF would add header lines (libcurl sends
        # each as written): the server is refused, the secret never shown.
        with Sandbox() as sb:
            project(sb, entry)
            evil = "tok-551\r\nInjected: 1"
            with Gateway(sb, "--auto-project", env=sb.env(WEB_TOKEN=evil)) as g:
                g.initialize()
                c = g.call("web__echo", {"message": "x"})
                t = text(c)
                check(is_error(c) and "not served" in t and "control character" in t,
                      "http: a header with a resolved CR/LF is refused", t)
                g.close()
                seen = "\n".join(g.raw) + g.stderr()
                check("tok-551" not in seen and "Injected" not in seen,
                      "http: the refusal never shows the secret", seen)
            fam = [r for r in audit_rows(sb) if r["tool"] == "secret"]
            check(fam and fam[0]["server"] == "web" and fam[0]["outcome"] == "denied",
                  "http: a secret row for the refused header", audit_rows(sb))
    finally:
        srv.kill()
        srv.wait()


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signals()
    http()
    failures()
    concurrency()
    hostile()
    transparent()
    search_rank()
    done()


main()
