"""agentstack run --lockdown: the proxy is the only route out.

The lockdown transcript (BLOCKED without the proxy, the denied host refused
and shown by `report`), host-loopback services unreachable from inside while
the proxy works, domain fronting (SNI mismatch) with openssl s_client, the
token (407), literal IPs and the metadata address (mapped and 6to4 forms
too), non-TLS tunnels, plain HTTP forwarding, SIGINT (recorded, nothing
left behind), `runs`, and the evidence chain. Upstreams are local HTTP
and TLS servers on 127.0.0.1; nothing leaves the machine.
"""
import http.server
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, pids_with  # noqa: E402

LABEL = "LOCKDOWN / ENFORCED · NO DIRECT ROUTE"
hits = []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        hits.append((self.server.server_address[1], self.path, dict(self.headers)))
        body = b"hello-from-" + (b"tls" if isinstance(self.connection, ssl.SSLSocket) else b"http")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def serve(tls_ctx=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls_ctx:
        srv.socket = tls_ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def events(s, rid, kind=None):
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        ev = [json.loads(line) for line in f if line.strip()]
    return [e for e in ev if kind is None or e["event"] == kind]


def lockdown(s, script, **env):
    r = s.run("run", "--lockdown", "shtest", "--", "-c", script, env=s.env(**env))
    return r, run_id(r.stdout)


def main():
    have_curl = shutil.which("curl") is not None
    with Sandbox() as s:
        s.write("agentstack.toml", 'version = 1\n[policy.egress]\n"*" = ["!blocked.invalid"]\n',
                base=s.ah)
        cert, key = os.path.join(s.project, "cert.pem"), os.path.join(s.root, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                        "-days", "2"], check=True, capture_output=True)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        plain, tls = serve(), serve(ctx)
        P, T = plain.server_address[1], tls.server_address[1]

        if not have_curl:
            check(False, "curl is needed for the lockdown scenarios")
            done()

        # Ignoring the proxy reaches nothing. The public name is
        # resolved (curl --resolve) to this test's own server on host
        # loopback, so the check fails whenever a direct route exists — an
        # offline machine without the network namespace would reach it too.
        seed = ("unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy; "
                f"curl -sS -m 5 --resolve example.com:{P}:127.0.0.1 "
                f"http://example.com:{P}/seed || echo BLOCKED; ")
        n = len(hits)
        r = s.run("run", "--sandbox", "shtest", "--", "-c", seed)
        check("hello-from-http" in r.stdout and len(hits) == n + 1,
              "control: under --sandbox (direct route open) the same command reaches the "
              "test's server, so the lockdown check below can fail", r.stdout + r.stderr)
        n = len(hits)
        r, rid = lockdown(s, seed + "echo =DEV=; cat /proc/net/dev; "
                                    "echo =ROUTE=; cat /proc/net/route")
        check(r.returncode == 0, "the documented lockdown run exits 0", r.stderr)
        check(f"posture: {LABEL}" in r.stdout, "banner: the lockdown posture label", r.stdout)
        check("🔒 no host route, no internet — the only peer is the egress proxy" in r.stdout,
              "banner: the lockdown line")
        check("BLOCKED" in r.stdout and "hello-from" not in r.stdout and len(hits) == n,
              "a process ignoring the proxy reaches nothing (not even this test's server)",
              r.stdout)
        dev = r.stdout.split("=DEV=\n", 1)[-1].split("=ROUTE=\n", 1)[0]
        ifaces = sorted(line.split(":", 1)[0].strip() for line in dev.splitlines()[2:]
                        if ":" in line)
        routes = r.stdout.split("=ROUTE=\n", 1)[-1].splitlines()[1:]
        check(ifaces == ["lo"] and [x for x in routes if x.strip()] == [],
              "inside: loopback is the only interface and there is no IPv4 route",
              (ifaces, routes))

        # Host loopback services are unreachable directly, reachable from the host.
        n = len(hits)
        r, rid = lockdown(s, f"curl --noproxy '*' -sS -m 5 http://127.0.0.1:{P}/direct "
                             f"|| echo BLOCKED")
        check("BLOCKED" in r.stdout and "hello-from" not in r.stdout and len(hits) == n,
              "a host-loopback server is unreachable from inside", r.stdout)
        r2 = subprocess.run(["curl", "-sS", "--noproxy", "*", f"http://127.0.0.1:{P}/control"],
                            capture_output=True, text=True, timeout=30)
        check(r2.stdout == "hello-from-http", "control: the same server answers on the host")

        # ...while the proxy is the route: TLS through a tunnel (local targets
        # allowed for this test only), and plain HTTP in absolute form.
        r, rid = lockdown(s, f"curl -sS -m 10 --cacert /workspace/cert.pem "
                             f"https://localhost:{T}/via-proxy; echo; "
                             f"curl -sS -m 10 http://localhost:{P}/plain?x=1",
                          AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        check("hello-from-tls" in r.stdout, "a TLS tunnel through the proxy works", r.stdout + r.stderr)
        check("hello-from-http" in r.stdout, "plain HTTP (absolute-form) is forwarded", r.stdout)
        fwd = [h for h in hits if h[1] == "/plain?x=1"]
        check(fwd and "Proxy-Authorization" not in fwd[-1][2]
              and fwd[-1][2].get("Host") == f"localhost:{P}",
              "the forwarded request has no proxy credentials and the URL's Host", fwd)
        eg = events(s, rid, "egress")
        check(len(eg) == 2 and all(e["allowed"] for e in eg)
              and {e["port"] for e in eg} == {P, T}, "both allows are recorded with ports", eg)
        st = events(s, rid, "sandbox_started")[0]
        check(st.get("allow_local_targets") is True, "the test allowance is recorded")
        rep = s.run("report", rid)
        check("LOCAL TARGETS ALLOWED" in rep.stdout, "report's posture names the allowance",
              rep.stdout)
        check(f"✓ shtest → localhost:{T}" in rep.stdout, "report lists the allowed tunnel",
              rep.stdout)

        # A denied host is refused at the proxy and recorded.
        r, rid = lockdown(s, "curl -sS -m 5 https://blocked.invalid/steal; echo curl=$?")
        check("curl=56" in r.stdout or "403" in r.stderr, "the denied host is refused (403)",
              r.stdout + r.stderr)
        eg = events(s, rid, "egress")
        check(len(eg) == 1 and eg[0]["host"] == "blocked.invalid" and not eg[0]["allowed"]
              and eg[0]["port"] == 443 and eg[0]["layer"] == "machine",
              "the deny is recorded with host, port and layer", eg)
        rep = s.run("report", rid)
        check(rep.returncode == 0 and re.search(r"✗ .*blocked\.invalid", rep.stdout),
              "report matches ✗ .*blocked.invalid", rep.stdout)
        check('✗ shtest → blocked.invalid  1 denied  denied by rule "!blocked.invalid" (machine policy)'
              in rep.stdout, "report prints the documented line", rep.stdout)
        check(f"Posture   {LABEL}" in rep.stdout, "report prints the posture line")
        js = json.loads(s.run("report", rid, "--json").stdout)
        check(js["run"] == rid and js["posture"] == "lockdown" and js["events"],
              "report --json", js)

        # Domain fronting: CONNECT to an allowed host, ClientHello naming another.
        tok = 'T=${HTTPS_PROXY#http://agentstack:}; T=${T%@*}; '
        # (openssl made the test's certificate above: it is there)
        n = len(hits)
        r, rid = lockdown(s, tok + f"echo | openssl s_client -proxy egress-proxy:18080 "
                                   f"-proxy_user agentstack -proxy_pass pass:$T "
                                   f"-connect localhost:{T} -servername evil.example "
                                   f">/dev/null 2>&1; echo done",
                          AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        eg = events(s, rid, "egress")
        check(eg and not eg[-1]["allowed"] and "does not match CONNECT host" in eg[-1]["rule"],
              "SNI fronting is refused and recorded", eg)
        check(len(hits) == n, "nothing reached the upstream")

        # The token: without it, 407 and a recorded deny.
        r, rid = lockdown(s, f"curl -sS -m 5 -x http://egress-proxy:18080 "
                             f"https://localhost:{T}/ ; echo curl=$?",
                          AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        eg = events(s, rid, "egress")
        check("407" in r.stderr and eg and "credentials" in eg[-1]["rule"],
              "no token: 407 and a recorded deny", (r.stderr, eg))

        # Literal IPs (incl. the metadata address) under lockdown.
        r, rid = lockdown(s, "curl -sS -m 5 https://1.1.1.1/; "
                             "curl -sS -m 5 http://169.254.169.254/latest/meta-data/; "
                             "curl -sS -m 5 'https://[::ffff:169.254.169.254]/'; "
                             "curl -sS -m 5 'https://[2002:a9fe:a9fe::]/'; "
                             "curl -sS -m 5 'https://[::1]/'; "
                             "curl -sS -m 5 https://2130706433/; true",
                          AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        eg = events(s, rid, "egress")
        check(len(eg) == 6 and all("literal-IP" in e["rule"] and not e["allowed"] for e in eg),
              "literal IPs (metadata, mapped, 6to4, ::1, 2130706433) are refused under lockdown "
              "— even with the test allowance", eg)

        # Non-TLS through a tunnel under lockdown.
        r, rid = lockdown(s, f"curl -sS -m 5 -p http://localhost:{P}/tunnelled; true",
                          AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        eg = events(s, rid, "egress")
        check(eg and "non-TLS" in eg[-1]["rule"] and "hello-from" not in r.stdout,
              "a plaintext tunnel is refused under lockdown", eg)

        # SIGINT during a lockdown run: the harness ends, the exit is
        # recorded, no process of the run is left, nothing is staged.
        marker = "31337.25"
        pr = subprocess.Popen([BIN, "run", "--lockdown", "shtest", "--", "-c",
                               f"sleep {marker} & echo ready; wait"],
                              cwd=s.project, env=s.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        head = ""
        for line in pr.stdout:
            head += line
            if line.strip() == "ready":
                break
        pr.send_signal(signal.SIGINT)
        out, err = pr.communicate(timeout=60)
        rid = run_id(head)
        ex = events(s, rid, "sandbox_exited") if rid else []
        check(pr.returncode != 0 and len(ex) == 1
              and (ex[0].get("signal") == signal.SIGINT or ex[0].get("code") == 130
                   or ("code" not in ex[0] and "signal" not in ex[0])),
              "SIGINT ends a lockdown run and sandbox_exited is recorded", (pr.returncode, ex))
        left = pids_with(marker)
        check(left == [], "no process of the interrupted run is left", left)
        check(rid and sorted(os.listdir(os.path.join(s.ah, "runs", rid)))
              == ["events.jsonl", "events.jsonl.head", "posture"],
              "nothing is staged or left beside the record (and its anchor)")

        # runs, unknown ids, the chain.
        r = s.run("runs")
        check(r.returncode == 0 and rid in r.stdout and "lockdown" in r.stdout,
              "runs lists the runs", r.stdout)
        r = s.run("report", "r-0000000000")
        check(r.returncode == 1 and "No record for run 'r-0000000000'." in r.stderr,
              "report of an unknown id exits 1", (r.returncode, r.stderr))
        r = s.run("report", "../../etc")
        check(r.returncode == 1, "a path-like id is refused", r.returncode)
        r = s.run("audit", "--verify")
        if "unknown command" not in r.stderr:
            check(r.returncode == 0 and "intact" in r.stdout, "the run logs verify intact",
                  r.stdout + r.stderr)
        plain.shutdown()
        tls.shutdown()
    done()


if __name__ == "__main__":
    main()
